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

events.jsonl's lines are read in events.py; this module is the host's interface
(hosts/__init__.py).
"""

import time

from ... import fs, jsonio
from ...calls import MODEL, TOOL, Call, fingerprint, ignored, tool_name
from ...decisions import ASK, DENY, STOP, TELL
from .._files import main_entry, read_file, say_ignored
from .events import _Reader

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
    "home": {"variable": "COPILOT_HOME", "default": ".copilot"},
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
    # (.claude-plugin/, hosts/claude/): their PreToolUse entry reaches the guard as a
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
    model_text = decision.get("model_text") or ""
    person_text = decision.get("person_text") or ""
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
    from .._procs import nearest, unsupported

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
