"""JSON without `import json`: the hook runs before every tool call, and `json` imports `re`.

The standard library's C accelerator (`_json`) scans and encodes JSON by itself; `json` adds
regular expressions only for whitespace and its pure-Python fallback. Importing `re` costs more
than everything else the guard does on a quiet call, so the guard drives `_json` directly and
falls back to `json` where the accelerator is missing (other Python implementations) and for
invalid input, whose precise error only `json` reports.
"""

import sys

try:
    import _json
except ImportError:  # pragma: no cover - CPython always has it
    _json = None

_WHITESPACE = " \t\n\r"
HEAD = 1024  # how far head_types looks into a line


if _json is not None:
    # What the C scanner reads from a JSONDecoder, json.loads' defaults, on a SimpleNamespace
    # (sys.implementation's type): a class of the guard's own costs a call 67k instructions.
    _scan = _json.make_scanner(
        type(sys.implementation)(
            strict=True,
            object_hook=None,
            object_pairs_hook=None,
            parse_float=float,
            parse_int=int,
            parse_constant=float,  # NaN, Infinity, -Infinity, as json.loads accepts them
        )
    )

    def loads(text):
        """Parse one JSON document (str or UTF-8 bytes); ValueError when it is not one."""
        if isinstance(text, (bytes, bytearray)):
            text = text.decode("utf-8")
        text = text.strip(_WHITESPACE)
        try:
            value, end = _scan(text, 0)
        except Exception:  # the scanner reports errors through `json`'s classes
            end = -1
        if end != len(text):
            # Only invalid input pays for `json`: it gives the precise error, as a ValueError.
            return _precise(text)
        return value

    def _precise(text):
        """json.loads' verdict on text the scanner did not take whole: its value, or its error
        as a ValueError. Nesting deeper than the interpreter's recursion limit (a line anyone
        can write) is input too, not the guard's own error."""
        import json

        try:
            return json.loads(text)
        except RecursionError:
            raise ValueError("JSON nested too deep to read") from None

    def _default(value):
        raise TypeError(f"not JSON serialisable: {type(value).__name__}")

    def _encoder(sort_keys, default):
        # No markers for circular references (JSON data has none): a dict of them, kept by the
        # encoder made once, would keep the ids of what an encoding cut short by a RecursionError
        # had open, and call a later value that reuses one circular.
        return _json.make_encoder(
            None,
            default,
            _json.encode_basestring_ascii,
            None,
            ":",
            ",",
            sort_keys,
            False,
            True,
        )

    _plain = _encoder(False, _default)
    _sorted = _encoder(True, str)

    def dumps(value, sort_keys=False):
        """Compact JSON, ASCII only; sort_keys also turns unknown types into strings."""
        return "".join((_sorted if sort_keys else _plain)(value, 0))

    def value_at(text, pos):
        """(value, end) of the JSON value that starts at text[pos]; ValueError if none does."""
        try:
            return _scan(text, pos)
        except Exception:  # StopIteration where no value starts, json's errors in one
            raise ValueError(f"no JSON value at {pos}") from None

else:  # pragma: no cover
    import json as _std

    def value_at(text, pos):
        try:
            return _std.JSONDecoder().raw_decode(text, pos)
        except RecursionError:
            raise ValueError(f"no JSON value at {pos}: nested too deep") from None

    def loads(text):
        try:
            return _std.loads(text)
        except RecursionError:
            raise ValueError("JSON nested too deep to read") from None

    def dumps(value, sort_keys=False):
        return _std.dumps(
            value, sort_keys=sort_keys, separators=(",", ":"), default=str if sort_keys else None
        )


def string_end(text, pos, stop=None):
    """Where the JSON string whose opening quote is text[pos] ends (after its closing quote),
    found by its quotes alone: a `"` that follows an even run of backslashes ends it. Its
    content is not checked (as head_types trusts a line); ValueError when it does not end
    before stop. text is a str, or bytes (or a bytearray) of UTF-8."""
    quote, backslash = (b'"', 0x5C) if isinstance(text, (bytes, bytearray)) else ('"', "\\")
    end = text.find(quote, pos + 1, stop)
    while end > 0 and text[end - 1] == backslash:
        run = end - 1
        while text[run - 1] == backslash:
            run -= 1
        if (end - run) % 2 == 0:
            break  # the backslashes escape each other, not the quote
        end = text.find(quote, end + 1, stop)
    if end < 0:
        raise ValueError("unterminated string")
    return end + 1


def head_types(data, start, stop, inner=None):
    """(type, inner type) of the JSON object in data[start:stop], read from its head alone.

    type is the value of the object's "type" member when no `{` or `[` byte comes before it
    (so no member before it holds an object or an array: it belongs to the object itself);
    inner type, when inner is given, is the value of "type" as the first member of the object
    of the member named inner, when no `{` or `[` comes between the two. Either is None when the
    head (HEAD bytes) does not look like that, or a value holds an escape. A `"` that follows
    no backslash starts or ends a string, and where it ends one no key can follow: in valid JSON
    `"type":"` found that way is a key.

    The head is trusted: a line that is not valid JSON further on, or that names "type" twice
    (JSON.parse and json.loads keep the last), is judged by the first. Readers use this to pass
    over records that cannot matter without looking at the rest of their bytes.
    """
    stop = min(stop, start + HEAD)
    if data.startswith(b'{"type":"', start) and inner is None:  # the type first (Copilot's)
        end = data.find(b'"', start + 9, stop)
        value = data[start + 9 : end]
        if end > 0 and 0x5C not in value:
            return value.decode("ascii", "replace"), None
    if data[start : start + 1] != b"{":
        return None, None
    kind, after = _leading(data, start + 1, stop, b'"type":"')
    if kind is None or inner is None:
        return kind, None
    return kind, _leading(data, after, stop, b'"' + inner.encode() + b'":{"type":"')[0]


def type_at(data, start, stop):
    """Where the `"type":"` that head_types reads as the object's own type starts in
    data[start:stop], or -1 where it reads none: a reader that knows how its host spells a
    record's head compares the bytes there, in fewer steps than head_types takes."""
    if stop - start > HEAD:
        stop = start + HEAD
    key = data.find(b'"type":"', start + 1, stop)
    if key < 0:
        return -1
    before = data[start + 1 : key]  # `in` with a byte's number: a search without arguments
    if data[start] != 0x7B or data[key - 1] == 0x5C or 0x7B in before or 0x5B in before:
        return -1  # not an object; a backslash before the quote; a `{` or `[` before the key
    return key


def leading_string(data, start, stop, key):
    """The value of the string member spelled key (up to its value's opening quote, e.g.
    b'"data":{"id":"') in the head of the JSON object in data[start:stop], when no `{` or `[`
    comes before it; else None. As head_types, it trusts the head (see there)."""
    if data[start : start + 1] != b"{":
        return None
    return _leading(data, start + 1, min(stop, start + HEAD), key)[0]


def _leading(data, start, stop, key):
    """(value, end) of the string member spelled key (up to its value's opening quote) first
    found in data[start:stop], when no `{` or `[` comes before it; (None, start) otherwise."""
    found = data.find(key, start, stop)
    if found < 0 or data[found - 1 : found] == b"\\":
        return None, start
    if data.find(b"{", start, found) >= 0 or data.find(b"[", start, found) >= 0:
        return None, start
    begin = found + len(key)
    end = data.find(b'"', begin, stop)
    if end < 0:
        return None, start
    value = data[begin:end]
    if 0x5C in value:
        return None, start
    return value.decode("ascii", "replace"), end + 1
