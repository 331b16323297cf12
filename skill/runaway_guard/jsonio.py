"""JSON without `import json`: the hook runs before every tool call, and `json` imports `re`.

The standard library's C accelerator (`_json`) scans and encodes JSON by itself; `json` adds
regular expressions only for whitespace and its pure-Python fallback. Importing `re` costs more
than everything else the guard does on a quiet call, so the guard drives `_json` directly and
falls back to `json` where the accelerator is missing (other Python implementations) and for
invalid input, whose precise error only `json` reports.
"""

try:
    import _json
except ImportError:  # pragma: no cover - CPython always has it
    _json = None

_WHITESPACE = " \t\n\r"


class _Context:
    """What the C scanner reads from a JSONDecoder: json.loads' defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = float  # NaN, Infinity, -Infinity, as json.loads accepts them
    memo = None


if _json is not None:
    _scan = _json.make_scanner(_Context())

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
            import json

            return json.loads(text)
        return value

    def _default(value):
        raise TypeError(f"not JSON serialisable: {type(value).__name__}")

    def _encoder(sort_keys, default):
        return _json.make_encoder(
            {},
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

else:  # pragma: no cover
    import json as _std

    def loads(text):
        return _std.loads(text)

    def dumps(value, sort_keys=False):
        return _std.dumps(
            value, sort_keys=sort_keys, separators=(",", ":"), default=str if sort_keys else None
        )
