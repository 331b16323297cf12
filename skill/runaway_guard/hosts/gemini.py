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

from .. import fs, jsonio, ledger, pricing
from ..calls import MODEL, PROMPT, RESULT, Call, fingerprint, tool_name
from ..decisions import DENY, REFUSAL_PREFIX, STOP, TELL
from ..jsonio import head_types
from ._files import LONG, each_line, local_day, number, read_all

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
# Most of a session's bytes are tool results, written twice a call (text and display) with the
# tool's description: a string of these keys longer than _LONG_TEXT in a tool call is not
# decoded but at its ends, _END characters each (_decoded, _Long).
_LONG_TEXT, _END = 1024, 384
_CUT = ('"output":"', '"error":"', '"resultDisplay":"', '"description":"', '"content":"')
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
        text = content if isinstance(content, str) else jsonio.dumps(content, sort_keys=True)
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
    if path.endswith(".json"):
        _read_whole(book, path)  # a version that rewrote one whole session-*.json
    else:
        _follow(book, files, path, "main")
    folder = fs.join(fs.dirname(path), call.session_id)
    for name in _listing(book, folder):
        if name.endswith(".jsonl"):
            _follow(book, files, fs.join(folder, name), name[: -len(".jsonl")])
    read_all(book, path, lambda entry: _Reader(book, entry))
    _settle(book)
    return True


def _follow(book, files, path, agent):
    if path not in files:
        if book.state["spend"]["total"]:
            # A new file may repeat responses counted from another one (a resumed legacy
            # session copies every message): the whole ledger decides what is new.
            book.load_known()
        files[path] = {"agent": agent}


def _listing(book, folder):
    """The subagent folder's names, or none when it has not changed since it was last listed:
    its files are followed already (a file added or removed changes the folder)."""
    seen = book.state.setdefault("folders", {})
    try:
        stamp = fs.stat(folder).st_mtime_ns
    except OSError:
        return []
    if seen.get(folder) == stamp:
        return []
    try:
        names = sorted(fs.listdir(folder))
    except OSError:
        return []
    seen[folder] = stamp
    return names


def _read_whole(book, path):
    """A legacy session-*.json: read again whole whenever it changed (it is rewritten whole)."""
    legacy = book.state.setdefault("legacy", {})
    try:
        info = fs.stat(path)
    except OSError:
        return
    stamp = [info.st_ino, info.st_size, info.st_mtime_ns]
    entry = legacy.setdefault(path, {"agent": "main"})
    if entry.get("stamp") == stamp:
        return
    with open(path, "rb") as handle:
        data = handle.read()
    try:
        record = jsonio.loads(data)
    except ValueError:
        return  # caught mid-write: read next call
    entry["stamp"] = stamp
    messages = record.get("messages") if isinstance(record, dict) else None
    if isinstance(messages, list):
        book.load_known()
        reader = _Reader(book, entry)
        for message in messages:
            if isinstance(message, dict):
                reader.message(message)
        _settle(book)


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
    # The shell tool's sections after the output, last line first: Error, Exit Code (only when
    # not 0), Signal, Background PIDs, Process Group PGID. Only those lines are looked at: an
    # output can be hundreds of KB.
    end = len(body)
    while end >= 0:
        start = body.rfind("\n", 0, end) + 1
        if start == 0 and tail is not None:
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
            return jsonio.dumps(body, sort_keys=True), False
    return "", False


class _Long:
    """A long string of a line (line[start] its opening quote, line[end - 1] its closing one):
    decoded whole only when its hash is needed, its ends tell a result's outcome."""

    __slots__ = ("end", "line", "start")

    def __init__(self, line, start, end):
        self.line, self.start, self.end = line, start, end

    def whole(self):
        return jsonio.value_at(self.line, self.start)[0]

    def ends(self):
        """(its first characters, its last) decoded, each cut where no escape (at most six
        characters, from a backslash) is; None when escapes leave no such place near an end."""
        line, first, last = self.line, self.start + 1, self.end - 1
        cut, begin = first + _END, last - _END
        while cut - first >= 128 and line.rfind("\\", cut - 6, cut) >= 0:
            cut = line.rfind("\\", cut - 6, cut)
        while last - begin >= 128 and line.rfind("\\", begin - 6, begin) >= 0:
            begin = line.rfind("\\", begin - 6, begin) + 7
        if cut - first < 128 or last - begin < 128:
            return None
        head = jsonio.value_at('"' + line[first:cut] + '"', 0)[0]
        return head, jsonio.value_at('"' + line[begin:last] + '"', 0)[0]


def _decoded(raw):
    """A line's record; a long line's long strings under _CUT keys (results, displays,
    descriptions: most of a session's bytes, and mostly not needed) are cut out before the rest
    is decoded, and left as _Long where the reader looks for them. ValueError as jsonio.loads."""
    line = raw.decode("utf-8")
    if len(line) <= LONG:
        return jsonio.loads(line)
    pieces, longs, pos = [], {}, 0
    for start, end in _long_strings(line):
        pieces += (line[pos : start + 1], "\\u0000", str(len(longs)))
        longs["\0" + str(len(longs))] = _Long(line, start, end)
        pos = end - 1  # the closing quote
    if not longs:
        return jsonio.loads(line)
    pieces.append(line[pos:])
    cut = "".join(pieces)
    # each placeholder must stand where the reader looks (a value of its own: no other \u0000 in
    # what is decoded), else one stood in a value that counts (a call's args): decode it whole
    record = jsonio.loads(cut) if cut.count("\\u0000") == len(longs) else None
    return record if _put_back(record, longs) == len(longs) else jsonio.loads(line)


def _long_strings(line):
    """(start, end) of each string value longer than _LONG_TEXT of a _CUT key, in order: each
    `":"` (a key's end, but where its first quote is escaped) from the tool calls on is looked
    at, in one pass."""
    found = []
    at = line.find('":"', max(line.find('"toolCalls":['), 0))
    while at > 0:
        end = at + 3
        if line.endswith(_CUT, 0, end):
            start = at + 2
            if line[line.rfind('"', 0, at) - 1] != "\\":  # not an escaped quote in a string
                end = jsonio.string_end(line, start)
                if end - start > _LONG_TEXT:
                    found.append((start, end))
        at = line.find('":"', end)
    return found


def _put_back(record, longs):
    """Put each placeholder's _Long where the reader looks for a result's text or display;
    count those and the ones in a description or a message's content, which nothing reads."""
    if not isinstance(record, dict):
        return 0
    places = [(record, "content")]
    calls = record.get("toolCalls")
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
            holder[key] = longs[value]
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
    entry["calls"] = booked[-keep:] if keep else []


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


class _Reader:
    """Turns one session file's new lines into ledger entries."""

    def __init__(self, book, entry):
        self.ledger = book
        self.entry = entry
        # (id, model, tokens, timestamp) of the response last priced: a message appended again
        # whole (its tool calls added) is not priced again.
        self.priced = None

    def __call__(self, raw):
        self.line(raw)

    def lines(self, data, start, stop):
        """Each whole line of data[start:stop], as line() would take it, but a line whose head
        shows it cannot count is passed over unread."""
        each_line(data, start, stop, self.line, self._passed_over)

    def _passed_over(self, data, start, end):
        """$set and $rewindTo lines, and long lines of another type than "gemini" (user
        messages carry every tool result again), once the header is read."""
        if "start" not in self.entry:
            return False
        if data.startswith(_CHANGES, start):
            return True
        if end - start <= LONG:
            return False
        kind = head_types(data, start, end)[0]
        return kind is not None and kind != "gemini"

    def line(self, raw):
        if b'"gemini"' not in raw and not (b'"startTime"' in raw and "start" not in self.entry):
            return  # user messages, $set and $rewindTo lines: nothing to count
        try:
            record = _decoded(raw)
        except ValueError:
            return
        if not isinstance(record, dict):
            return
        if "start" not in self.entry and isinstance(record.get("startTime"), str):
            self.entry["start"] = record["startTime"]  # the header: this file's first run
        elif "$set" not in record and "$rewindTo" not in record:
            self.message(record)

    def message(self, record):
        if record.get("type") != "gemini":
            return
        model = record.get("model")
        if isinstance(model, str) and model:
            self.entry["model"] = model
        tokens = record.get("tokens")
        key = record.get("id")
        if isinstance(tokens, dict) and isinstance(key, str) and key:
            model = self.entry.get("model") or "gemini"
            priced = (key, model, tokens, record.get("timestamp"))
            if priced != self.priced:
                self.priced = priced
                pusd, known = pricing.gemini_cost(model, tokens)
                out = number(tokens.get("output")) + number(tokens.get("thoughts"))
                day = local_day(record.get("timestamp"))
                self.ledger.usage(key, self.entry["agent"], model, pusd, known, out, day)
        calls = record.get("toolCalls")
        if isinstance(calls, list):
            self._scope(calls)
            for tool_call in calls:
                if isinstance(tool_call, dict):
                    self._outcome(tool_call)

    def _scope(self, calls):
        """A message with calls: the one being written again when it holds a call booked from
        it, else a new one, which ends the last one's ("own": the calls booked from it)."""
        entry = self.entry
        booked = entry.get("calls", [])
        for tool_call in calls:
            if isinstance(tool_call, dict) and tool_call.get("id") in booked:
                return
        entry["own"] = 0
        _keep(entry)

    def _outcome(self, tool_call):
        """A finished call, once: its hash and outcome go to the wires of the agent the hooks
        see. Calls written before this file's run began (copied from a resumed session), calls
        stamped before the last one booked and calls already booked are skipped."""
        entry = self.entry
        call_id = tool_call.get("id")
        stamp = tool_call.get("timestamp")
        status = tool_call.get("status")
        if not isinstance(call_id, str) or not isinstance(stamp, str):
            return
        if status not in ("success", "error", "cancelled"):
            return  # still running: its outcome comes with a later line
        last = entry.get("last", "")
        if stamp < entry.get("start", "") or stamp < last:
            return
        booked = entry.setdefault("calls", [])
        if call_id in booked:
            return
        entry["own"] = entry.get("own", len(booked)) + 1
        entry["tied"] = entry.get("tied", 0) + 1 if stamp == last else 1
        entry["last"] = stamp
        booked.append(call_id)
        _keep(entry)
        name = tool_call.get("name")
        text, is_error = _result_text(tool_call.get("result"))
        head, tail = text, None
        if isinstance(text, _Long):
            head, tail = text.ends() or (text.whole(), None)
        if status == "cancelled":
            outcome = "reset"
        elif _own_refusal(head, tool_call.get("resultDisplay")):
            return  # the guard's own refusal: the call never ran
        elif status == "error" or is_error:
            outcome = "fail"
        else:
            outcome = _text_status(name, head, tail)
            if outcome is None:
                outcome = _text_status(name, text.whole())
        if outcome == "reset":
            ledger.reset_agent(self.ledger.agent("main"))
            return
        later = _Later(name, tool_call.get("args"), text)
        self.ledger.complete_unseen("main", later)
        self.ledger.outcome("main", None, outcome == "fail", later)
