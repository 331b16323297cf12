"""GitHub Copilot CLI: preToolUse payloads (its own and the Claude-style ones it sends to the
hooks in a project's `.claude/settings*.json`), its answers, and
`$COPILOT_HOME/session-state/<session>/events.jsonl`.

Seen on 1.0.102 (tests/fixtures/copilot/README.md):

- Two payload dialects: a Copilot hook file (`preToolUse`) sends `sessionId`, `toolName`,
  `toolArgs`; the Claude settings (`PreToolUse`) send `session_id`, `tool_name` (Claude's names),
  `tool_input`, an ISO `timestamp` and no `transcript_path`. Neither carries a tool-call id. A
  subagent's calls carry its own id as the session and the session's as `parentAgentId`.
- One answer serves both: top-level `permissionDecision` deny / ask with
  `permissionDecisionReason`, or `additionalContext`. Copilot denies the call when a hook exits
  non-zero, so the guard's fail-open exit 0 matters doubly here. `ask` prompts the person in an
  interactive session and is a denial in `copilot -p` and autopilot.
- Nothing a hook prints ends a `copilot -p` run that calls read-only tools (`permissionRequest`
  `interrupt` fires for shell and file writes only), but SIGINT ends it as Ctrl-C does: a stop
  there is an `ask` (a denial, shown to the model) followed by SIGINT to the `copilot` process.
  In an interactive session the same `ask` hands the call to the person (SIGINT would close
  the whole session).
- `events.jsonl` has one `session.usage_record` per response (`inputTokens` includes
  `cacheReadTokens`, as OpenAI counts; a subagent's carry `parentToolCallId`), the
  `hook.start` of each preToolUse with the ids of its calls, and `tool.execution_complete` per
  call (a failing shell command is `success: true` with `shellExecution.exitCode` != 0; a call
  refused by a hook or left without approval is `error.code: "denied"`). A debounced writer
  flushes it ~0.1 s after the last event, so the hook waits (at most WAIT) until the file shows
  the call it runs for: then it also shows the usage of the response that made the call and the
  outcome of every call before it.
- Copilot runs every hook entry for a call, one after the other: installed for Copilot and for
  Claude Code, the guard runs twice per call. Each install claims the call's id from
  `hook.start` in its own slot; the second finds the id claimed by the first and answers as the
  first did without counting the call again.
"""

import time

from .. import fs, jsonio, pricing, text_loops
from ..calls import MODEL, NOT_JSON, TOOL, Call, count, fingerprint, ignore, ignored, tool_name
from ..decisions import ASK, DENY, STOP, TELL
from ..estimate import LAST_COST
from ._files import local_day, main_entry, read_file, say_ignored

NAME = "copilot"
LABEL = "Copilot CLI"
RUNGS = frozenset({TELL, DENY, ASK, STOP})
# Copilot's tool names; the Claude-style payloads already use Claude Code's (Bash, Read, ...).
TOOLS = {
    "bash": "Bash",
    "powershell": "Bash",
    "view": "Read",
    "create": "Write",
    "edit": "Edit",
    "task": "Agent",
}

INSTALL = {
    "home": ("COPILOT_HOME", ".copilot"),
    # A hook file the guard owns (hooks/*.json are all loaded): written whole, deleted on
    # uninstall. Skills: Copilot lists ~/.copilot/skills and a project's .github/skills.
    "user": {"settings": "hooks/runaway-guard.json", "skills": "skills"},
    "project": {"settings": ".github/hooks/runaway-guard.json", "skills": ".github/skills"},
    "binaries": ("copilot",),
    "entry": {
        "kind": "owned-file",
        # camelCase event: camelCase payloads; `bash` runs the POSIX command; seconds
        "template": {
            "version": 1,
            "hooks": {
                "preToolUse": [{"type": "command", "bash": "{command}", "timeoutSec": 30}],
                # the end of each turn: an autopilot loop without tool calls (text_loops.py)
                "agentStop": [{"type": "command", "bash": "{command}", "timeoutSec": 30}],
            },
        },
    },
    "after_install": (
        "Copilot CLI loads {settings} in every folder, interactive or `copilot -p`, from its next "
        "session on. If the guard is also installed for Claude Code in a project, Copilot runs "
        "both there and each call is counted once.",
    ),
    "after_install_project": (
        "Copilot runs a project's hooks in `copilot -p` only in a trusted folder "
        "(--trust-folder, a saved trust, or COPILOT_ALLOW_ALL=true); an interactive session asks "
        "to trust the folder first.",
    ),
    "after_uninstall": "Copilot CLI no longer runs the hook from its next session on.",
    # Copilot installs this repository as a plugin too, reading Claude Code's manifests
    # (.claude-plugin/, hosts/claude.py): their PreToolUse entry reaches the guard as a
    # Claude-style payload; a folder-sourced plugin runs from that folder (seen on 1.0.102).
    "plugin": {
        "enabled_in": {"user": ("settings.json",)},
        "id": "{name}@{name}",
        "install": ("copilot plugin marketplace add {source}", "copilot plugin install {id}"),
        "uninstall": ("copilot plugin uninstall {id}", "copilot plugin marketplace remove {name}"),
    },
}

WAIT = 1.5  # seconds a call waits for events.jsonl to show it (seen: within ~0.1 s)
SHORT_WAIT = 0.2  # after two calls the file never showed
ANSWER_WAIT = 1.0  # a turn's end (agentStop) waits this long for the file to show its answer
POLL = 0.01
PENDING_KEEP = 128
_CREDIT_PICO = 10  # 1 AI credit = $0.01 = 10**10 picodollars = 10**9 nano-AI units

_REFUSED = ("denied",)  # refused before it ran: by a hook (the guard's) or with nobody to approve
_STOPPED = ("rejected", "aborted", "cancelled", "interrupted")  # a person said no or stopped it


class _Call(Call):
    """A call, with the hook entry it came through (one slot per install of the guard)."""

    __slots__ = ("slot",)


def call(payload, environ=None):
    """A preToolUse from a Copilot hook file, a project's Claude settings or a Claude-format
    plugin (this repository's, installed with `copilot plugin install`); else None.

    environ defaults to the hook's own environment (COPILOT_HOME, COPILOT_HOOK_DIR,
    CLAUDE_PLUGIN_ROOT)."""
    environ = fs.environ if environ is None else environ
    if "stopReason" in payload and "toolName" not in payload:  # agentStop: a turn ended
        session = payload.get("sessionId")
        if not isinstance(session, str):
            return None
        path = _events_path(session, environ)
        found = _Call(NAME, session, event=MODEL, transcript_path=path, cwd=payload.get("cwd"))
        found.slot = "stop"
        return found
    if "toolArgs" in payload and "toolName" in payload:
        if "toolResult" in payload or "error" in payload or "hookName" in payload:
            return None  # postToolUse, postToolUseFailure, permissionRequest: not installed
        session, agent = payload.get("sessionId"), payload.get("agentId")
        root = payload.get("parentAgentId")
        tool, args = payload.get("toolName"), payload.get("toolArgs")
        # A Copilot hook file's entry: COPILOT_HOOK_DIR tells a user install from a project one.
        slot = "hooks:" + str(environ.get("COPILOT_HOOK_DIR") or "")
    elif payload.get("hook_event_name") == "PreToolUse":
        session, agent = payload.get("session_id"), payload.get("agent_id")
        root = payload.get("parent_agent_id")
        tool, args = payload.get("tool_name"), payload.get("tool_input")
        # From a project's Claude settings, or from a Claude-format plugin (its folder is set)
        slot = "claude:" + str(environ.get("CLAUDE_PLUGIN_ROOT") or "")
    else:
        return None
    if isinstance(root, str) and root and isinstance(agent, str) and agent:
        session = root  # a subagent's call: the session is its parent's
    else:
        agent = None
    found = _Call(
        NAME,
        session,
        transcript_path=_events_path(session, environ),
        cwd=payload.get("cwd"),
        agent=agent,
        tool=tool_name(tool, TOOLS),
        tool_input=args,
    )
    found.slot = slot
    return found


def _events_path(session, environ):
    if not isinstance(session, str) or not session or "/" in session or session.startswith("."):
        return None
    home = environ.get("COPILOT_HOME") or fs.join(fs.expanduser("~"), ".copilot")
    return fs.join(home, "session-state", session, "events.jsonl")


def render(decision):
    """One answer for both dialects; a stop is an ask (the person decides, or in `copilot -p` a
    denial the model reads before end_run ends the run)."""
    if not decision:
        return ""
    kind = decision["kind"]
    model_text = decision.get("model") or ""
    person_text = decision.get("person") or ""
    if kind == TELL:
        return jsonio.dumps({"additionalContext": model_text}) if model_text else ""
    if kind == DENY:
        answer, reason = "deny", model_text or person_text
    else:
        answer, reason = "ask", person_text or model_text
    return jsonio.dumps({"permissionDecision": answer, "permissionDecisionReason": reason})


# ---------------------------------------------------------------------------------------------
# ending a `copilot -p` run


def end_run(call, environ, note):
    """SIGINT the `copilot -p` process this hook runs under: the run ends as after Ctrl-C
    ("Operation aborted by user", no further model request; seen on 1.0.102). An interactive
    session is never signalled (it would close): its stop is the ask render() gives."""
    from ._procs import nearest, unsupported

    if unsupported():
        note(f"deny only: {unsupported()}")
        return
    found = nearest(("copilot", "copilot.exe"))
    if not found or not _prompt_mode(found[1]):
        note("deny only: no `copilot -p` among the hook's ancestors (the person answers the ask)")
        return
    import signal

    note(f"interrupting copilot -p (pid {found[0]}) with SIGINT, as Ctrl-C")
    fs.kill(found[0], signal.SIGINT)


def _prompt_mode(argv):
    return any(a in ("-p", "--prompt") or a.startswith("--prompt=") for a in argv[1:])


# ---------------------------------------------------------------------------------------------
# events.jsonl


def sync(book, call):
    """Read what events.jsonl gained, waiting until it shows the call this hook runs for; True
    when the call was found there (its id, agent and outcome then come from the file)."""
    path = call.transcript_path
    if not path or not fs.isdir(fs.dirname(path)):
        return False  # Copilot makes the session's folder when the session starts
    entry = main_entry(book, path)
    mine = book.state.setdefault("copilot", {"pending": {}, "misses": 0})
    reader = _Reader(book, entry, mine)
    # a status refresh (a plain Call) only reads; a hook call waits to find itself
    waiting = call.event == TOOL and isinstance(call, _Call)
    turn_end = call.event == MODEL and isinstance(call, _Call)
    deadline = time.monotonic() + (
        ANSWER_WAIT if turn_end else WAIT if mine["misses"] < 2 else SHORT_WAIT
    )
    while True:
        try:
            read_file(book, path, entry, reader)
        except OSError:  # not written yet, or not a file the guard can read
            pass
        reader.flush()
        if turn_end and not reader.answers and time.monotonic() < deadline:
            time.sleep(POLL)  # the debounced writer has not written the turn's answer yet
            continue
        if not waiting or _claim(mine["pending"], call):
            break
        if time.monotonic() >= deadline:
            mine["misses"] += 1
            break
        time.sleep(POLL)
    call.prompt_id = entry.get("prompt") or call.prompt_id
    if ignored:
        say_ignored(book)
    if call.tool_use_id:
        mine["misses"] = 0
        return True
    return False


def _claim(pending, call):
    """Take the oldest call of the file that matches this payload and that this hook entry has
    not taken yet; a second install of the guard then finds the id its first install took."""
    digest = fingerprint(call.tool_input)
    slot = call.slot
    for call_id, item in pending.items():
        if item[1] == digest and slot not in item[2]:
            item[2].append(slot)
            call.tool_use_id = call_id
            if item[0] != "main":
                call.agent = item[0]
            return True
    return False


def shell_outcome(text):
    """A fingerprint of a tool result without Copilot's `<shellId: N …>` line (N grows every
    call, so two identical results would never look alike)."""
    if not isinstance(text, str):
        return fingerprint(text)
    lines = [line for line in text.split("\n") if not line.startswith("<shellId: ")]
    return fingerprint("\n".join(lines))


def _price(usage):
    """(model, picodollars, known) of one usage record.

    Billed by GitHub, the record's `copilotUsage.totalNanoAiu` is what Copilot charged (1 AI
    credit = $0.01, 10**9 nano units; not verified here: it needs a GitHub account). Under the
    person's own key (`isByok`, `cost` 0) the tokens are priced with the table.
    """
    model = usage.get("model")
    if not isinstance(model, str):
        model = "gpt-unknown"
    nano = _charged(usage)
    if nano:
        return model, round(nano * _CREDIT_PICO), True
    inp = count(usage.get("inputTokens"))
    cached = min(count(usage.get("cacheReadTokens")), inp)
    written = min(count(usage.get("cacheWriteTokens")), inp - cached)
    out = count(usage.get("outputTokens"))
    return (model, *pricing.token_pricer(model)(inp, cached, written, out))


def _charged(usage):
    """The nano AI units GitHub charged for a response (0 under the person's own key)."""
    if usage.get("isByok") is True:
        return 0
    charged = usage.get("copilotUsage")
    return count(charged.get("totalNanoAiu") if isinstance(charged, dict) else None)


def _ahead(usage, model):
    """What estimate.note needs of a response: its tokens and the table's pricer where the
    tokens are priced (the person's own key), else GitHub's charge again (LAST_COST)."""
    if _charged(usage):
        return LAST_COST
    inp = count(usage.get("inputTokens"))
    cached = count(usage.get("cacheReadTokens")) + count(usage.get("cacheWriteTokens"))
    return inp, min(cached, inp), pricing.token_pricer(model)


# Copilot writes each event's type first ({"type":"…","data":{…}…}): a line is judged by its
# head, and only the events below are decoded. A type is ASCII, so JSON never escapes it.
_TYPE_FIRST = b'{"type":"'
_USAGE = b'{"type":"session.usage_record"'
_HOOK_START = b'{"type":"hook.start"'
_COMPLETE = b'{"type":"tool.execution_complete"'
_PROMPT = b'{"type":"user.message"'
_ANSWER = b'{"type":"assistant.message"'
_READ = (_USAGE, _HOOK_START, _COMPLETE, _PROMPT, _ANSWER)  # their types' first letters differ
_NO_TOOLS = b'"toolRequests":[]'  # an answer without tool calls (decoded for its text)
_COMPLETE_ID = _COMPLETE + b',"data":{"toolCallId":"'


def _lists_only(hook_start, call_id):
    """Whether call_id (bytes) is the only call a hook.start line could list.

    In a line without escapes every `"` starts or ends a string, so each "id" key shows as
    `"id"`: there must be one with call_id's value and at most one more, the event's own id,
    which is a member of the outermost object when the first `}` after it ends the line. (A
    line that is not valid JSON lists no call at all.)"""
    if 0x5C in hook_start:  # a backslash (its number: a bytes operand is tried as one first)
        return False
    listed = hook_start.find(b'"id":"' + call_id + b'"')
    ids = hook_start.count(b'"id"')
    if listed < 0 or ids > 2:
        return False
    own = hook_start.rfind(b'"id"')
    return ids == 1 or (own != listed and hook_start.find(b"}", own) == len(hook_start) - 1)


class _Unhashed:
    """A pending call's arguments until the read ends: on a long read most calls are done or
    pushed out of the pending calls before then, and their fingerprints are never needed."""

    __slots__ = ("args",)

    def __init__(self, args):
        self.args = args


class _Reader:
    """Turns events.jsonl lines into ledger entries, pending calls and the person's prompts.

    A preToolUse's hook.start is held undecoded until the next event that touches the pending
    calls: when that is the completion of the one call it can list, it is dropped (the call
    would be added and ended at once); otherwise it is read first. On a long read that spares
    decoding almost every hook.start."""

    def __init__(self, book, entry, mine):
        self.book = book
        self.entry = entry
        self.pending = mine["pending"]
        self.held = None  # a hook.start line (a copy) not read yet
        self.answers = 0  # the responses this read found

    def __call__(self, raw):
        self.line(raw)

    def lines(self, data, start, stop):
        """Each whole line of data[start:stop], as line() would take it, but judged by its head
        first: an event that is not read is passed over, one that is goes to its handler without
        the byte tests, and a call's completion while no call waits for its outcome is read from
        its head alone (it only ends the call). A line whose type does not come first is read
        whole (line())."""
        find = data.find
        starts = data.startswith
        expecting = self.book.expecting
        while start < stop:
            end = find(b"\n", start, stop)
            if end < 0:
                end = stop
            if starts(_READ, start):
                first = data[start + 9]  # the type's first letter tells the four apart
                if first == _USAGE[9]:
                    self._decoded(data[start:end], self._usage)
                elif first == _COMPLETE[9]:
                    if expecting() or not self._ended(data, start, end):
                        self._release()
                        self._decoded(data[start:end], self._complete)
                elif first == _HOOK_START[9]:
                    if find(b'"preToolUse"', start, end) >= 0:
                        self._release()
                        self._hold(data[start:end])
                elif first == _ANSWER[9]:
                    self._answer(data[start:end])
                else:
                    self._decoded(data[start:end], self._prompt)
            elif end > start and not starts(_TYPE_FIRST, start):
                self.line(data[start:end])
            start = end + 1

    def _ended(self, data, start, end):
        """Ends the call whose completion data[start:end] is, from the id its head names (the
        hook.start held back is dropped when that was its one call, read first otherwise);
        False when the head does not name it plainly (the line is then decoded)."""
        if not data.startswith(_COMPLETE_ID, start):
            return False
        begin = start + len(_COMPLETE_ID)
        close = data.find(b'"', begin, end)
        if close < 0:
            return False
        call_id = data[begin:close]
        if not call_id.isascii() or 0x5C in call_id:
            return False
        held = self.held
        if held is not None:
            self.held = None
            if not _lists_only(held, call_id):
                self._decoded(held, self._hook_start)
        self.pending.pop(call_id.decode("ascii"), None)
        return True

    def _hold(self, raw):
        """Hold a hook.start while a call it adds could push none out of the pending calls."""
        if len(self.pending) < PENDING_KEEP:
            self.held = raw
        else:
            self._decoded(raw, self._hook_start)

    def _release(self):
        """Read the hook.start held back, before anything else touches the pending calls."""
        held = self.held
        if held is not None:
            self.held = None
            self._decoded(held, self._hook_start)

    def line(self, raw):
        self._release()
        if b'"session.usage_record"' in raw:
            handler = self._usage
        elif b'"hook.start"' in raw and b'"preToolUse"' in raw:
            handler = self._hook_start
        elif b'"tool.execution_complete"' in raw:
            handler = self._complete
        elif b'"user.message"' in raw:
            handler = self._prompt
        elif b'"assistant.message"' in raw:
            self._answer(raw)
            return
        else:
            return
        self._decoded(raw, handler)

    @staticmethod
    def _decoded(raw, handler):
        try:
            record = jsonio.loads(raw)
        except ValueError:
            ignore(NOT_JSON)
            return
        if isinstance(record, dict) and isinstance(record.get("data"), dict):
            handler(record, record["data"])

    def flush(self):
        """Once the read ended: the hook.start held back read, and the arguments of the calls
        still pending fingerprinted."""
        self._release()
        for item in self.pending.values():
            if isinstance(item[1], _Unhashed):
                item[1] = fingerprint(item[1].args)

    def _usage(self, record, data):
        usage = data.get("usage")
        if record.get("type") != "session.usage_record" or not isinstance(usage, dict):
            return
        key = usage.get("apiCallId")
        if not key:
            accounting = usage.get("accounting")
            key = accounting.get("usageId") if isinstance(accounting, dict) else None
            key = key or record.get("id")
        if not isinstance(key, str) or not key:
            return
        parent = usage.get("parentToolCallId")
        agent = parent if isinstance(parent, str) and parent else "main"
        model, pusd, known = _price(usage)
        out = count(usage.get("outputTokens"))
        day = local_day(record.get("timestamp"))
        self.book.usage(key, agent, model, pusd, known, out, day, _ahead(usage, model))

    def _hook_start(self, record, data):
        hook_input = data.get("input")
        if record.get("type") != "hook.start" or data.get("hookType") != "preToolUse":
            return
        if not isinstance(hook_input, dict):
            return
        parent = data.get("parentToolCallId")
        agent = parent if isinstance(parent, str) and parent else "main"
        pending = self.pending
        made = hook_input.get("toolCalls")
        for item in made if isinstance(made, list) else ():
            if isinstance(item, dict) and isinstance(item.get("id"), str):
                pending.setdefault(item["id"], [agent, _Unhashed(item.get("args")), []])
        while len(pending) > PENDING_KEEP:
            del pending[next(iter(pending))]

    def _complete(self, record, data):
        call_id = data.get("toolCallId")
        if record.get("type") != "tool.execution_complete" or not isinstance(call_id, str):
            return
        self.pending.pop(call_id, None)
        if not self.book.expecting():
            return
        error = data.get("error") if isinstance(data.get("error"), dict) else None
        result = data.get("result") if isinstance(data.get("result"), dict) else {}
        shell = data.get("shellExecution")
        code = shell.get("exitCode") if isinstance(shell, dict) else None
        if error is not None:
            kind = error.get("code")
            status = "guard" if kind in _REFUSED else "reset" if kind in _STOPPED else "fail"
            digest = fingerprint(error.get("message"))
        else:
            failed = data.get("success") is False or (code is not None and code != 0)
            status = "fail" if failed else "ok"
            digest = shell_outcome(result.get("content"))
        self.book.result(call_id, status, digest)

    def _answer(self, raw):
        """A response: its text when it called no tool (text_loops), read only then."""
        self.answers += 1
        if _NO_TOOLS not in raw:
            return text_loops.note(self.book.state, self._agent_of(raw), None)
        self._decoded(raw, self._text_answer)

    @staticmethod
    def _agent_of(raw):
        at = raw.find(b'"parentToolCallId":"')
        return (
            "main" if at < 0 else raw[at + 20 : raw.find(b'"', at + 20)].decode("utf-8", "replace")
        )

    def _text_answer(self, record, data):
        if record.get("type") != "assistant.message":
            return
        parent = data.get("parentToolCallId")
        agent = parent if isinstance(parent, str) and parent else "main"
        content = data.get("content")
        text_loops.note(self.book.state, agent, content if isinstance(content, str) else "")

    def _prompt(self, record, data):
        """The person's prompt (not a subagent's task, not an autopilot continuation)."""
        if record.get("type") != "user.message" or "source" in data or "parentToolCallId" in data:
            return
        if data.get("isAutopilotContinuation"):
            return
        if isinstance(data.get("interactionId"), str):
            self.entry["prompt"] = data["interactionId"]
            text_loops.reset(self.book.state)
