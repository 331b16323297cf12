"""A tool call's result in Gemini CLI's chat files: what it says (ok, fail, a cancel, or the
guard's own refusal), from its text or, where it is long, from its ends; and the long strings of
a line (results, displays, descriptions: most of a session's bytes) cut out before the rest is
decoded, left undecoded (_Long) where the reader looks for them."""

from ... import jsonio
from ...calls import canonical
from ...decisions import REFUSAL_PREFIX
from .._files import LONG

TOOLS = {
    "run_shell_command": "Bash",
    "replace": "Edit",
    "write_file": "Write",
    "read_file": "Read",
    "invoke_agent": "Agent",
}

_SHELL = "run_shell_command"
_SECTIONS = ("Output: ", "Error: ", "Exit Code: ", "Signal: ", "Background PIDs: ")
_VOLATILE = ("Process Group PGID: ", "Background PIDs: ")
_GUARD = ("Tool execution blocked: ", "Agent execution stopped by hook: ", "")
_CANCELLED = "Command was cancelled by user"
# Most of a session's bytes are tool results, written twice a call (text and display) with the
# tool's description: a string of these keys longer than _LONG_TEXT in a tool call is not
# decoded but at its ends, _END bytes each (_decoded, _Long).
_LONG_TEXT, _END = 1024, 384
# How a result that may be the guard's refusal or a cancel starts (_Long.plain_outcome).
_LEAD = 12
_LEADS = (*((head + REFUSAL_PREFIX)[:_LEAD].encode() for head in _GUARD), b"Command was ")
# Placeholders of the strings cut out, as written and as decoded: a line's first 16.
_HOLES = tuple((f"\\u0000{n}".encode(), f"\0{n}") for n in range(16))
_CUT = (b'"output":"', b'"error":"', b'"resultDisplay":"', b'"description":"', b'"content":"')


def _text_status(name, text, tail=None):
    """'ok', 'fail' or 'reset' (the person cancelled) of a tool's result text. With tail, text is
    only the result's first characters and tail its last (see _Long): None when those do not
    tell."""
    if name != _SHELL:
        return "ok"
    if tail is None:
        lead = body = _untagged(text).strip()
    else:
        # a tag cut at either end changes at most the cut line: a tail's first line is never
        # looked at, and a start shorter than this may be such a line
        lead, body = _untagged(text).lstrip(), _untagged(tail).rstrip()
        if len(lead) < 100:
            return None
    if lead.startswith(_CANCELLED):
        return "reset"
    if lead.startswith("Command was automatically cancelled"):
        return "fail"
    return _sections_status(body, tail is not None)


def _sections_status(body, cut):
    """'ok' or 'fail' of a shell result's text (body, stripped) by its sections after the output,
    last line first: Error, Exit Code (only when not 0), Signal, Background PIDs, Process Group
    PGID. Only those lines are looked at: an output can be hundreds of KB. With cut, body's
    first line may be cut: None when it would be looked at."""
    end = len(body)
    while end >= 0:
        start = body.rfind("\n", 0, end) + 1
        if start == 0 and cut:
            return None
        line = body[start:end]
        end = start - 1
        if line.startswith(_VOLATILE):
            continue
        if line.startswith(("Exit Code: ", "Signal: ", "Error: ")) and line != "Exit Code: 0":
            return "fail"
        if not line.startswith(_SECTIONS):
            break
        if line.startswith("Output: "):
            break
    return "ok"


def _untagged(text):
    return text.replace("<untrusted_context>", "").replace("</untrusted_context>", "")


def _stable(text):
    """A result without what changes on every run (the process group id)."""
    return "\n".join(line for line in text.split("\n") if not line.startswith(_VOLATILE))


def _own_refusal(text, display):
    """The guard's refusal as the CLI records it: `Tool execution blocked: <reason>`,
    `Agent execution stopped by hook: <reason>`, or (AfterTool) the reason alone."""
    for head in _GUARD:
        if text.startswith(head + REFUSAL_PREFIX):
            if isinstance(display, _Long):
                display = display.whole()
            display = display if isinstance(display, str) else ""
            return bool(head) or display.startswith(_GUARD[1] + REFUSAL_PREFIX)
    return False


def _result_outcome(name, text, failed, display):
    """'ok', 'fail' or 'reset' of a finished call by its result text (failed: the CLI says so),
    or None for the guard's own refusal."""
    if isinstance(text, _Long):
        outcome = text.plain_outcome(name, failed)
        if outcome is not None:
            return outcome
        head, tail = text.ends() or (text.whole(), None)
    else:
        head, tail = text, None
    if _own_refusal(head, display):
        return None
    if failed:
        return "fail"
    return _text_status(name, head, tail) or _text_status(name, text.whole())


def _call_outcome(tool_call):
    """_result_outcome of a finished call; 'reset' for one the person cancelled."""
    status = tool_call.get("status")
    if status == "cancelled":
        return "reset"
    text, is_error = _result_text(tool_call.get("result"))
    failed = status == "error" or is_error
    return _result_outcome(tool_call.get("name"), text, failed, tool_call.get("resultDisplay"))


def _cancelled(tool_call):
    """Whether _call_outcome is 'reset', worked out only when the status or the result's
    lead (_Long.lead) do not tell."""
    if tool_call.get("status") == "cancelled":
        return True
    if tool_call.get("name") != _SHELL or tool_call.get("status") == "error":
        return False
    text = _result_text(tool_call.get("result"))[0]
    if isinstance(text, _Long) and text.lead() is not None:
        return False
    return _call_outcome(tool_call) == "reset"


def _result_text(result):
    """(text, is_error) of a recorded tool call's result parts."""
    parts = result if isinstance(result, list) else []
    for part in parts:
        response = part.get("functionResponse") if isinstance(part, dict) else None
        body = response.get("response") if isinstance(response, dict) else None
        if isinstance(body, dict):
            if isinstance(body.get("error"), (str, _Long)):
                return body["error"], True
            if isinstance(body.get("output"), (str, _Long)):
                return body["output"], False
            return canonical(body), False
    return "", False


class _Long:
    """A long string of a line (bytes, line[start] its opening quote, line[end - 1] its closing
    one), not decoded (its bytes are not checked either): decoded whole only when its hash is
    needed, its ends tell a result's outcome."""

    __slots__ = ("end", "line", "start")

    def __init__(self, line, start, end):
        self.line, self.start, self.end = line, start, end

    def whole(self):
        return jsonio.value_at(_text(self.line[self.start : self.end]), 0)[0]

    def owned(self):
        """The same string in bytes of its own, kept when the line's (the reader's buffer,
        _Reader.lines) are read into again."""
        line, start, end = self.line, self.start, self.end
        return self if line.__class__ is bytes else _Long(bytes(line[start:end]), 0, end - start)

    def lead(self):
        """Its first characters when they tell that it is neither the guard's refusal nor a
        cancel: no escape or tag, a first character that is no space; else None."""
        lead = self.line[self.start + 1 : self.start + 1 + _LEAD]
        if not 0x20 < lead[0] < 0x80 or lead.find(b"\\") >= 0 or lead.find(b"<") >= 0:
            return None
        return None if lead in _LEADS else lead

    def plain_outcome(self, name, failed):
        """_result_outcome read from the raw string, not decoded, when its ends are plain: its
        lead() tells, and (a shell's) its last lines hold no escape but \\n nor tag. None
        otherwise."""
        if self.lead() is None:
            return None
        if failed or name != _SHELL:
            return "fail" if failed else "ok"
        line, last = self.line, self.end - 1
        # from a line's start: its \\n is kept, so the lines before it are known to be unknown
        begin = line.rfind(b"\\n", self.start + 1, last - _END)
        tail = line[begin:last]
        if begin < 0 or line[begin - 1] == 0x5C or tail.find(b"<") >= 0:
            return None
        if tail.count(b"\\") != tail.count(b"\\n"):
            return None
        return _sections_status(_text(tail.replace(b"\\n", b"\n")).rstrip(), True)

    def ends(self):
        """(its first characters, its last) decoded, each cut where no escape (at most six
        bytes, from a backslash) is; None when escapes leave no such place near an end. A
        character cut in two is one U+FFFD, never in what _text_status looks at."""
        line, first, last = self.line, self.start + 1, self.end - 1
        cut, begin = first + _END, last - _END
        while cut - first >= 128 and line.rfind(b"\\", cut - 6, cut) >= 0:
            cut = line.rfind(b"\\", cut - 6, cut)
        while last - begin >= 128 and line.rfind(b"\\", begin - 6, begin) >= 0:
            begin = line.rfind(b"\\", begin - 6, begin) + 7
        if cut - first < 128 or last - begin < 128:
            return None
        head = jsonio.value_at('"' + _text(line[first:cut]) + '"', 0)[0]
        return head, jsonio.value_at('"' + _text(line[begin:last]) + '"', 0)[0]


def _text(raw):
    """Bytes of a line as text (a character cut in two by a slice is one U+FFFD)."""
    return raw.decode("utf-8", "replace")


def _decoded(raw):
    """A line's record; a long line's long strings under _CUT keys (results, displays,
    descriptions: most of a session's bytes, and mostly not needed) are cut out before the rest
    is decoded, and left as _Long where the reader looks for them. ValueError as jsonio.loads."""
    if len(raw) <= LONG:
        return jsonio.loads(raw)
    search = max(raw.find(b'"toolCalls":['), 0)
    cut = _cut_out(raw, 0, search, len(raw))
    if cut is not None and (not cut[1] or _put_back(*cut) == len(cut[1])):
        return cut[0]
    return jsonio.loads(raw)


def _cut_out(line, start, search, stop):
    """(the JSON value line[start:stop] (bytes) decoded with its long strings from search on
    (_long_strings) cut out, {placeholder left in the value: the arguments of its _Long}); None
    when it cannot be decoded so. ValueError for a string not ended."""
    cut = _guessed(line, start, search, stop)
    if cut is None:
        cut = _cut(line, start, stop, _long_strings(line, search, stop))
    cut, longs = cut
    # each placeholder must stand where the reader looks (a value of its own: no other \u0000 in
    # what is decoded)
    if longs and cut.count(b"\\u0000") != len(longs):
        return None
    try:
        return jsonio.loads(cut), longs
    except ValueError:
        return None


def _cut(line, start, stop, spans):
    """(line[start:stop] with the string of each span, but those past the last of _HOLES,
    replaced by a placeholder, {placeholder: the arguments of its _Long})."""
    pieces, longs, pos = [], {}, start
    for (begin, end), (hole, key) in zip(spans, _HOLES):
        pieces += (line[pos : begin + 1], hole)
        longs[key] = (line, begin, end)
        pos = end - 1  # the closing quote
    pieces.append(line[pos:stop])
    return b"".join(pieces), longs


# The _CUT keys of the strings _long_strings found last, long or not, in order: a line's calls
# are written as the last line's were, so _guessed looks for those first.
_guess = []


def _long_strings(line, at, stop):
    """(start, end) of each string value longer than _LONG_TEXT of a _CUT key in line[at:stop],
    in order: each `":"` (a key's end, but where its first quote is escaped) is looked at, in
    one pass."""
    found, keys = [], []
    at = line.find(b'":"', at, stop)
    while at > 0:
        end = at + 3
        if line.endswith(_CUT, 0, end):
            key = line.rfind(b'"', 0, at)
            if line[key - 1] != 0x5C:  # not an escaped quote in a string
                end = jsonio.string_end(line, at + 2, stop)
                keys.append(bytes(line[key : at + 3]))
                if end - at - 2 > _LONG_TEXT:
                    found.append((at + 2, end))
        at = line.find(b'":"', end, stop)
    _guess[:] = keys
    return found


def _guessed(line, start, at, stop):
    """What _cut makes of what _long_strings finds, when the strings are under the keys it
    found last, in that order, those that are there (any other long string is left in: what was
    not looked at must be short); None without a guess, for an escaped quote, or when what was
    not looked at may hold a long string. A `"key":"` not escaped is a key wherever it is
    found."""
    if not _guess:
        return None
    pieces, longs, pos, seen = [], {}, start, 0
    for key in _guess:
        there = line.find(key, at, stop)
        if there < 0:
            continue
        if line[there - 1] == 0x5C:
            return None
        begin = there + len(key) - 1
        at = line.find(b'"', begin + 1, stop) + 1  # its end, but where that quote is escaped
        if at <= 0 or line[at - 2] == 0x5C:
            at = jsonio.string_end(line, begin, stop)
        if at - begin <= _LONG_TEXT:
            seen += at - begin
        elif len(longs) < len(_HOLES):
            hole, name = _HOLES[len(longs)]
            pieces += (line[pos : begin + 1], hole)
            longs[name] = (line, begin, at)
            pos = at - 1  # the closing quote
    pieces.append(line[pos:stop])
    cut = b"".join(pieces)
    return None if len(cut) - seen > _LONG_TEXT else (cut, longs)


def _resolved(finished):
    """A call booked (tool_call, longs) as _decoded gives it: the long strings cut out of it put
    back where the reader looks (_put_back_calls), any other one decoded (a call's args)."""
    tool_call, longs = finished
    if longs and _put_back_calls([tool_call], longs) < len(longs):
        _decode_left(tool_call, longs)
    return tool_call


def _decode_left(value, longs):
    """Each placeholder left in value (a dict or a list) replaced by its string decoded; walked
    without recursion (a call's args may nest nearly as deep as jsonio reads)."""
    todo = [value]
    while todo:
        value = todo.pop()
        for key, item in value.items() if isinstance(value, dict) else enumerate(value):
            if isinstance(item, str):
                if item in longs:
                    value[key] = _Long(*longs[item]).whole()
            elif isinstance(item, (dict, list)):
                todo.append(item)


def _put_back(record, longs):
    """Put each placeholder's _Long where the reader looks for a result's text or display;
    count those and the ones in a description or a message's content, which nothing reads."""
    if not isinstance(record, dict):
        return 0
    placed = _put_back_calls(record.get("toolCalls"), longs)
    content = record.get("content")
    if isinstance(content, str) and content in longs:
        record["content"] = _Long(*longs[content])
        placed += 1
    return placed


def _put_back_calls(calls, longs):
    """_put_back for a message's tool calls."""
    places = []
    for tool_call in calls if isinstance(calls, list) else ():
        if isinstance(tool_call, dict):
            places += ((tool_call, "description"), (tool_call, "resultDisplay"))
            parts = tool_call.get("result")
            for part in parts if isinstance(parts, list) else ():
                response = part.get("functionResponse") if isinstance(part, dict) else None
                body = response.get("response") if isinstance(response, dict) else None
                if isinstance(body, dict):
                    places += ((body, "output"), (body, "error"))
    placed = 0
    for holder, key in places:
        value = holder.get(key)
        if isinstance(value, str) and value in longs:
            holder[key] = _Long(*longs[value])
            placed += 1
    return placed
