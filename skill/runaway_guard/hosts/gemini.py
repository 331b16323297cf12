"""Gemini CLI: BeforeTool, BeforeModel and BeforeAgent payloads, its answers, and the session
files in `~/.gemini/tmp/<project>/chats/`.

Seen on 0.61.0 (tests/fixtures/gemini/README.md):

- A session is `session-<time>-<id8>.jsonl`, appended to: a message is re-appended whole when it
  changes (its tool calls are added after they ran), `{"$set": {...}}` changes metadata and may
  replace the whole message list, `{"$rewindTo": id}` drops messages. Money spent stays spent:
  every response is priced once by message id, whatever a later line says of it. A subagent
  writes `chats/<session id>/<its own id>.jsonl`. Versions before about 0.35 wrote one whole
  `session-*.json` object instead, rewritten on every change.
- The hooks carry no tool-call id, and a subagent's calls reach them with the parent's session
  id: every outcome is read from the session files (the tool calls a message records, with
  their status and result) and booked to the agent the hooks see, "main". That also counts the
  calls that fail validation (unknown tool, missing parameter), which never reach a hook.
- A shell command that exits non-zero is a success for the CLI: the code is only in the result
  text (`Exit Code: N`).
- Answers: `decision: deny` refuses the call and the turn goes on; `continue: false` ends the
  run (in a subagent it ends only that call or that subagent: the parent's next model request
  is stopped then); BeforeModel `continue: false` ends the run before the request is sent.
  BeforeTool has no channel to the model but a refusal: a warning reaches the person only
  (`systemMessage`). `ask` hangs a headless run: never used.
"""

from .. import agent_book, fs, jsonio, pricing, tail
from ..calls import (
    MODEL,
    NOT_JSON,
    PROMPT,
    RESULT,
    Call,
    canonical,
    count,
    fingerprint,
    ignore,
    tool_name,
)
from ..decisions import DENY, REFUSAL_PREFIX, STOP, TELL
from ..jsonio import head_types
from ._files import LONG, each_line, followed, listing, local_day, read_all

NAME = "gemini"
LABEL = "Gemini CLI"
RUNGS = frozenset({TELL, DENY, STOP})
TOOLS = {
    "run_shell_command": "Bash",
    "replace": "Edit",
    "write_file": "Write",
    "read_file": "Read",
    "invoke_agent": "Agent",
}
EVENTS = ("BeforeTool", "BeforeModel", "BeforeAgent")
# The hooks carry no call id: a tool call's key is the guard's own (call()), which no file
# holds. Nothing waits for it (sync books every outcome), and looking for it in every line read
# cost a cold read a tenth of its time.
OWN_CALL_KEYS = True

INSTALL = {
    # GEMINI_CLI_HOME replaces the home folder: settings in $GEMINI_CLI_HOME/.gemini/.
    "home": ("GEMINI_CLI_HOME", "", ".gemini"),
    "user": {"settings": "settings.json", "skills": "skills"},
    "project": {"settings": ".gemini/settings.json", "skills": ".gemini/skills"},
    "binaries": ("gemini",),
    "entry": {
        "kind": "json-list",
        "events": EVENTS,
        "grouped": True,
        # A group without a matcher runs for every tool; the timeout is in milliseconds.
        "handler": {
            "name": "runaway-guard",
            "type": "command",
            "command": "{command}",
            "timeout": 30000,
        },
    },
    "after_install": (
        "Gemini CLI: restart it so it loads the hooks (/hooks lists them). Hooks run only in "
        "trusted folders: trust the folder when asked, or a headless `gemini -p` outside one "
        "exits at once.",
    ),
    "after_install_project": (
        "Project hooks run only once the folder is trusted; the first run in {project} prints "
        "a warning that names the runaway-guard hook.",
    ),
    "after_uninstall": "Restart Gemini CLI so it drops the hooks.",
    # The repository is a Gemini CLI extension too (installer/manifests.py writes these files):
    # its hooks are hooks/hooks.json, at that fixed path (Claude Code reads the file as well and
    # ignores these events); ${extensionPath} is replaced by the installed folder (0.61.0). No
    # skill: an extension's skills are only read from skills/<name>/SKILL.md.
    "plugin": {
        "called": "extension",
        "manifests": {
            "gemini-extension.json": {
                "name": "{name}",
                "version": "{version}",
                "description": "{description}",
            },
            "hooks/hooks.json": {"hooks": "{hooks}"},
        },
        "root": "${extensionPath}",
        "folder": "extensions/{name}",
        "id": "{name}",
        "install": ("gemini extensions install {source}",),
        "uninstall": ("gemini extensions uninstall {id}",),
    },
}

_SHELL = "run_shell_command"
_SECTIONS = ("Output: ", "Error: ", "Exit Code: ", "Signal: ", "Background PIDs: ")
_VOLATILE = ("Process Group PGID: ", "Background PIDs: ")
_GUARD = ("Tool execution blocked: ", "Agent execution stopped by hook: ", "")
_CANCELLED = "Command was cancelled by user"
_FINISHED = ("success", "error", "cancelled")
# Most of a session's bytes are tool results, written twice a call (text and display) with the
# tool's description: a string of these keys longer than _LONG_TEXT in a tool call is not
# decoded but at its ends, _END bytes each (_decoded, _Long).
_LONG_TEXT, _END = 1024, 384
# The calls booked whose outcomes wait for the wires at most (_work_out): the results they hold
# stay in memory until then.
_BATCH = 256
# How a result that may be the guard's refusal or a cancel starts (_Long.plain_outcome).
_LEAD = 12
_LEADS = (*((head + REFUSAL_PREFIX)[:_LEAD].encode() for head in _GUARD), b"Command was ")
# Placeholders of the strings cut out, as written and as decoded: a line's first 16.
_HOLES = tuple((f"\\u0000{n}".encode(), f"\0{n}") for n in range(16))
_CUT = (b'"output":"', b'"error":"', b'"resultDisplay":"', b'"description":"', b'"content":"')
# Lines that change the message list or metadata, never a response or a call's outcome.
_CHANGES = (b'{"$set":', b'{"$rewindTo":')


def call(payload):
    event = payload.get("hook_event_name")
    common = {"transcript_path": payload.get("transcript_path"), "cwd": payload.get("cwd")}
    session = payload.get("session_id")
    if event == "BeforeTool":
        tool = tool_name(payload.get("tool_name"), TOOLS)
        tool_input = payload.get("tool_input")
        # No call id: every hook of one event gets the same payload, timestamp included, so a
        # guard installed in two scopes answers the second time as it did the first.
        stamp = payload.get("timestamp")
        key = "g" + fingerprint([stamp, tool, tool_input]) if isinstance(stamp, str) else None
        return Call(NAME, session, tool=tool, tool_input=tool_input, tool_use_id=key, **common)
    if event == "BeforeModel":
        request = payload.get("llm_request")
        model = request.get("model") if isinstance(request, dict) else None
        return Call(NAME, session, event=MODEL, model=model, **common)
    if event == "BeforeAgent":
        # Once per prompt of the person (subagents fire none): a new prompt resets the wires.
        prompt_id = fingerprint([payload.get("timestamp"), payload.get("prompt")])
        return Call(NAME, session, event=PROMPT, prompt_id=prompt_id, **common)
    if event == "AfterTool" and not common["transcript_path"]:
        # Not installed: the session file tells each outcome. Kept for a payload without one.
        response = payload.get("tool_response")
        response = response if isinstance(response, dict) else {}
        content = response.get("llmContent")
        text = content if isinstance(content, str) else canonical(content)
        status = "fail" if response.get("error") else _text_status(payload.get("tool_name"), text)
        return Call(
            NAME,
            session,
            event=RESULT,
            tool=tool_name(payload.get("tool_name"), TOOLS),
            failed=status == "fail",
            outcome=fingerprint(_stable(text)),
            **common,
        )
    return None


def render(decision):
    """A deny with its reason for the model, continue:false to end the run, systemMessage for
    the person. The same answer serves BeforeTool, BeforeModel and BeforeAgent."""
    if not decision:
        return ""
    person = decision.get("person") or ""
    reason = decision.get("model") or person
    if decision["kind"] == TELL:
        return jsonio.dumps({"systemMessage": person or reason}) if reason else ""
    answer = {"decision": "deny", "reason": reason or REFUSAL_PREFIX}
    if decision["kind"] == STOP:
        answer.update({"continue": False, "stopReason": answer["reason"]})
    if person:
        answer["systemMessage"] = person
    return jsonio.dumps(answer)


def sync(book, call):
    """Bring the book up to date with the session's files; False when there is none."""
    path = call.transcript_path
    if not path or not call.session_id:
        return False
    files = book.state["files"]
    # the calls every file read books, in order: their outcomes are worked out together (_work_out)
    finished = []
    if path.endswith(".json"):
        _read_whole(book, path, finished)  # a version that rewrote one whole session-*.json
    else:
        _follow(book, files, path, "main")
    folder = fs.join(fs.dirname(path), call.session_id)
    for name in sorted(listing(book.state.setdefault("folders", {}), folder) or ()):
        if name.endswith(".jsonl"):
            _follow(book, files, fs.join(folder, name), name[: -len(".jsonl")])
    read_all(book, path, lambda entry: _Reader(book, entry, finished), _agent)
    _work_out(book, finished)
    _settle(book)
    return True


def _follow(book, files, path, agent):
    if not followed(book, path):
        if book.state["spend"]["total"]:
            # A new file may repeat responses counted from another one (a resumed legacy
            # session copies every message): the whole ledger decides what is new.
            book.load_known()
        files[path] = {"agent": agent}


def _agent(path):
    """The agent a subagent's file is named for (_follow)."""
    return fs.basename(path)[: -len(".jsonl")]


# A legacy session file larger than this is not read (decoding it whole would outlast the
# hook's timeout): its spend is not counted, and the other wires still work.
LEGACY_MAX = 64 << 20


def _read_whole(book, path, finished):
    """A legacy session-*.json: read again whole whenever it changed (it is rewritten whole)."""
    legacy = book.state.setdefault("legacy", {})
    try:
        info = fs.stat(path)
    except OSError:
        return
    if not tail.regular(info.st_mode) or info.st_size > LEGACY_MAX:
        # a folder, a FIFO (reading it would block until the host's timeout), too large
        ignore("a session file that is not a regular file, or is past 64 MiB")
        return
    stamp = [info.st_ino, info.st_size, info.st_mtime_ns]
    entry = legacy.setdefault(path, {"agent": "main"})
    if entry.get("stamp") == stamp:
        return
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return
    try:
        record = jsonio.loads(data)
    except ValueError:
        return  # caught mid-write: read next call
    entry["stamp"] = stamp
    messages = record.get("messages") if isinstance(record, dict) else None
    if isinstance(messages, list):
        book.load_known()
        reader = _Reader(book, entry, finished)
        for message in messages:
            if isinstance(message, dict):
                reader.message(message)


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


def _keep(entry):
    """Keep the ids of the calls booked that may still come again, no others, so the state does
    not grow with the session: those of the message being written ("own": the CLI writes only its
    last message again, its calls possibly stamped anew) and those stamped with the last one
    booked ("tied": a file read again whole brings them back with that stamp); a call stamped
    earlier is skipped anyway. Both are the last ids booked (stamps never go back)."""
    booked = entry.get("calls", [])
    keep = min(max(entry.get("own", 0), entry.get("tied", len(booked))), 64)
    if len(booked) > keep:  # copied only when some go
        booked = booked[-keep:] if keep else []
    entry["calls"] = booked


def _settle(book):
    """Work out the hash and outcome of the calls the wires still keep (see _Later)."""
    record = book.state["agents"].get("main")
    for item in record["hist"] if record else ():
        if isinstance(item[0], _Later):
            item[:] = item[0].pair()


class _Later:
    """A finished call as the wires keep it, [call hash, outcome hash], worked out only once the
    read ends and only if it is still among the last calls they keep: a long session's outcomes
    are mostly pushed out by later ones, and hashing each result cost more than reading it."""

    __slots__ = ("args", "name", "text")

    def __init__(self, name, args, text):
        self.name, self.args, self.text = name, args, text

    def pair(self):
        call_hash = fingerprint([tool_name(self.name, TOOLS), self.args])
        text = self.text.whole() if isinstance(self.text, _Long) else self.text
        return [call_hash, fingerprint(_stable(text))]


def _pricers(model):
    """(price, known, next_price): pricing.gemini_pricer's, and the same in OpenAI's shape for
    estimate.note (Gemini bills no cache writes: what is written is plain input)."""
    price, known = pricing.gemini_pricer(model)

    def next_price(inp, cached, written, out):
        return price({"input": inp, "cached": cached, "output": out})[0], known

    return price, known, next_price


class _Reader:
    """Turns one session file's new lines into ledger entries."""

    def __init__(self, book, entry, finished):
        self.ledger = book
        self.entry = entry
        # (id, model, tokens, timestamp) of the response last priced: a message appended again
        # whole (its tool calls added) is not priced again.
        self.priced = None
        # The line of the message last read, up to where its calls would be added
        # (b'...,"toolCalls":['): a line that starts with it is that message again, with calls.
        self.again = None
        self.finished = finished  # the calls booked whose outcomes the wires have not had
        self.prices = {}  # model: _pricers(model)

    def __call__(self, raw):
        self.line(raw)

    def lines(self, data, start, stop):
        """Each whole line of data[start:stop], as line() would take it, but a line whose head
        shows it cannot count is passed over unread, and a message written again has only its
        calls read, where they are in data. data is read into again next: the outcomes of the
        calls finished are worked out (the texts the wires keep are copied out of it)."""
        each_line(data, start, stop, self.line, self._read_in_place)
        _work_out(self.ledger, self.finished)

    def _read_in_place(self, data, start, end):
        """Whether the line data[start:end] needs no more: $set and $rewindTo lines, long lines
        of another type than "gemini" (user messages carry every tool result again), once the
        header is read; and the message last read written again with its calls added, whose
        calls are read here."""
        if "start" not in self.entry:
            return False
        again = self.again
        if again is not None and data.startswith(again, start):
            return self._calls_again(data, start + len(again) - 1, end)
        if data.startswith(_CHANGES, start):
            return True
        if end - start <= LONG:
            return False
        kind = head_types(data, start, end)[0]
        return kind is not None and kind != "gemini"

    def _calls_again(self, data, begin, end):
        """The calls of the message last read, written again with them (data[begin] opens their
        array): the same record but for its calls, when the array ends where the line's object
        does (the message is priced already, its model is the same; its head names one type,
        "gemini", as line() reads it). False when not: line() reads it."""
        if data[end - 1] != 0x7D:  # }
            return False
        try:
            cut = _cut_out(data, begin, begin, end - 1)
        except ValueError:
            return False
        if cut is None or not isinstance(cut[0], list):
            return False
        self._calls(*cut)
        return True

    def line(self, raw):
        if raw.find(b'"gemini"') < 0 and not ("start" not in self.entry and b'"startTime"' in raw):
            return  # user messages, $set and $rewindTo lines: nothing to count
        try:
            record = _decoded(raw)
        except ValueError:
            ignore(NOT_JSON)
            return
        if not isinstance(record, dict):
            return
        if "start" not in self.entry and isinstance(record.get("startTime"), str):
            self.entry["start"] = record["startTime"]  # the header: this file's first run
        elif "$set" not in record and "$rewindTo" not in record:
            self.message(record, raw)

    def message(self, record, raw=b""):
        """A record of the message list (raw: its line, when it was read from one)."""
        if record.get("type") != "gemini":
            return
        # its head names one type, "gemini": as this line, the same with calls is read, not
        # passed over (head_types), and line() reads it whether the header is read or not
        again = raw.count(b'"type"') == 1 and raw.find(b'"type":"gemini"') > 0
        again = again and raw.endswith(b"}")
        self.again = raw[:-1] + b',"toolCalls":[' if again else None
        entry = self.entry
        model = record.get("model")
        if isinstance(model, str) and model:
            entry["model"] = model
        tokens = record.get("tokens")
        key = record.get("id")
        if isinstance(tokens, dict) and isinstance(key, str) and key:
            model = entry.get("model") or "gemini"
            stamp = record.get("timestamp")
            priced = (key, model, tokens, stamp)
            if priced != self.priced:
                self.priced = priced
                pricer = self.prices.get(model)
                if pricer is None:
                    pricer = self.prices[model] = _pricers(model)
                pusd, out = pricer[0](tokens)
                day = local_day(stamp)
                context = count(tokens.get("input")) + count(tokens.get("tool"))
                ahead = (context, count(tokens.get("cached")), pricer[2])
                self.ledger.usage(key, entry["agent"], model, pusd, pricer[1], out, day, ahead)
        calls = record.get("toolCalls")
        if isinstance(calls, list):
            self._calls(calls)

    def _calls(self, calls, longs=None):
        """A message's calls (a list), each finished one once: its outcome goes to the wires of
        the agent the hooks see (see _work_out). longs: the long strings cut out of them
        (_cut_out), put back only for the calls whose outcomes are worked out (_resolved): a
        placeholder stands where a string was, never as a call's id, stamp or status (their keys'
        strings are not cut out), so which calls are booked is the same either way. Calls
        written before this file's run began (copied from a resumed session), calls stamped
        before the last one booked and calls already booked are skipped. The message is the one
        being written again when it holds a call booked from it, else a new one, which ends the
        last one's ("own": the calls booked from it)."""
        entry = self.entry
        booked = entry.get("calls", [])
        for tool_call in calls:
            if isinstance(tool_call, dict) and tool_call.get("id") in booked:
                break
        else:
            entry["own"] = 0
            _keep(entry)
        for tool_call in calls:
            if not isinstance(tool_call, dict):
                continue
            call_id = tool_call.get("id")
            stamp = tool_call.get("timestamp")
            if not isinstance(call_id, str) or not isinstance(stamp, str):
                continue
            if tool_call.get("status") not in _FINISHED:
                continue  # still running: its outcome comes with a later line
            last = entry.get("last", "")
            if stamp < last or stamp < entry.get("start", ""):
                continue
            booked = entry.setdefault("calls", [])
            if call_id in booked:
                continue
            entry["own"] = entry.get("own", len(booked)) + 1
            entry["tied"] = entry.get("tied", 0) + 1 if stamp == last else 1
            entry["last"] = stamp
            booked.append(call_id)
            _keep(entry)
            finished = self.finished
            finished.append((tool_call, longs))
            if len(finished) >= _BATCH:
                _work_out(self.ledger, finished)


def _work_out(book, finished):
    """The outcomes of the calls finished (booked by every file read, in order) go to the wires,
    in order, and finished is emptied. The wires keep the last agent_book.HIST outcomes and count
    the failures in a row since the last success, and a cancel resets them: only the last calls
    can still show. Walking back from the last, each outcome is worked out until those are
    known; of the calls before them, only whether one was a cancel, and only when the wires
    count refusals (the outcomes after a cancel replace all it would reset but those)."""
    outcomes, kept, failing = [], 0, True
    first = len(finished)
    while first and (kept < agent_book.HIST or failing):
        first -= 1
        outcome = _call_outcome(_resolved(finished[first]))
        outcomes.append(outcome)
        if outcome == "reset":
            break
        if outcome:
            kept += 1
            failing = failing and outcome == "fail"
    record = book.state["agents"].get("main")
    cancels = first and "reset" not in outcomes[-1:] and record and record.get("ref")
    if cancels and any(map(_cancelled, map(_resolved, finished[:first]))):
        agent_book.reset_agent(record)
    for (tool_call, _), outcome in zip(finished[first:], reversed(outcomes)):
        if outcome == "reset":
            agent_book.reset_agent(book.agent("main"))
        elif outcome:
            text = _result_text(tool_call.get("result"))[0]
            text = text.owned() if isinstance(text, _Long) else text
            later = _Later(tool_call.get("name"), tool_call.get("args"), text)
            book.complete_unseen("main", later)
            book.outcome("main", None, outcome == "fail", later)
    del finished[:]
