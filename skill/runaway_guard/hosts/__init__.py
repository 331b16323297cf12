"""Every host the guard knows, and how a payload tells who sent it.

A host is one module here (or one package, its __init__.py the interface: codex/, gemini/,
copilot/), holding everything about that host (CONTRIBUTING.md, "Adding a host"):

- NAME (as `--host` spells it), LABEL (for people), RUNGS (the decisions its answers can
  express), TOOLS (its tool names in the guard's vocabulary: Bash, Edit, Write, Agent);
- call(payload) -> calls.Call or None: the fields the guard uses, type-checked;
- render(decision) -> one line of JSON the host honours, or "" (decision may be None);
- sync(book, call) -> whether it has session files; reads what the host appended into the book;
- INSTALL: plain data the installer reads (files per scope, entry shape, notes);
- optionally end_run(call, environ, note): end the host's run after a STOP, out of band, where
  its answers cannot (hook.finish calls it once the session's state is saved and the answer
  printed, at most once per session in 10 s, unless the person switched it off with
  RUNAWAY_GUARD_INTERRUPT=0; note(text) goes to hook.log; what finds the host's process is in
  _procs.py);
- optionally WRITES_CALLS = True: the host writes each call to its session files before it
  runs the hook, so a call may wait, briefly, for the host to write what came before it
  (hook._catch_up);
- optionally OWN_CALL_KEYS = True: its payloads carry no call id, so call() makes the key a
  second install's call is recognised by (Call.tool_use_id), and no session file shows it:
  the hook neither watches for it nor keeps the call waiting for an outcome by it (sync books
  every outcome itself).

Shared helpers, never a host: _files.py (session files), _procs.py (the host's process),
_turns.py (Claude Code's and Codex's prompt and turn-end events).

This module imports no host module: a call imports only its own host's.
"""

from .. import load as load_bundled


def hook_entry(*events, timeout=30, grouped=True, matchers=None):
    """INSTALL["entry"] of a host that lists command hooks per event in a JSON settings file
    (timeout in the host's own unit); matchers: {event: the group's matcher} for an event the
    guard needs for some tools only."""
    handler = {"type": "command", "command": "{command}", "timeout": timeout}
    entry = {"kind": "json-list", "events": events, "grouped": grouped, "handler": handler}
    if matchers:
        entry["matchers"] = matchers
    return entry


def _has(*keys):
    return lambda payload, environ: any(key in payload for key in keys)


def _cursor(payload, environ):
    if "cursor_version" in payload or "conversation_id" in payload:
        return True
    return "CURSOR_VERSION" in environ


# Event names only Gemini CLI uses (SessionStart, SessionEnd and Notification are Claude's too).
_GEMINI_EVENTS = frozenset(
    (
        "BeforeTool",
        "AfterTool",
        "BeforeModel",
        "AfterModel",
        "BeforeAgent",
        "AfterAgent",
        "BeforeToolSelection",
        "PreCompress",
    )
)


def _gemini(payload, environ):
    event = payload.get("hook_event_name")
    return isinstance(event, str) and event in _GEMINI_EVENTS


def _qwen(payload, environ):
    """Qwen Code's payloads carry the model's call id as `tool_call_id` (Claude Code never does)
    and prompt ids `<session>########<n>` (Cursor's subagentStart has a tool_call_id too: Cursor
    is checked first)."""
    prompt_id = payload.get("prompt_id")
    return "tool_call_id" in payload or (isinstance(prompt_id, str) and "########" in prompt_id)


def _copilot(payload, environ):
    """Copilot's own payloads, and the Claude-style ones it sends to the hooks in a project's
    Claude settings: no transcript_path before a tool (Claude Code always sends one), an ISO
    timestamp, COPILOT_CLI=1 in the hook's environment; at Stop its events.jsonl."""
    if "sessionId" in payload or "toolName" in payload or "toolArgs" in payload:
        return True
    path = payload.get("transcript_path")
    if isinstance(path, str):
        path = path.replace("\\", "/")
        return "/session-state/" in path and path.endswith("/events.jsonl")
    return "timestamp" in payload or environ.get("COPILOT_CLI") == "1"


# Checked in order, the first match wins. The order is a property of the set of hosts (several
# payloads share fields), so it lives here and not in the host modules.
SIGNATURES = (
    ("opencode", _has("runaway_guard_plugin")),  # the guard's own plugin names itself
    ("cursor", _cursor),
    # before Copilot: a BeforeTool whose transcript_path is not a string looks like Copilot's
    ("gemini", _gemini),
    ("qwen", _qwen),
    ("copilot", _copilot),
    ("codex", _has("turn_id")),
    ("claude", lambda payload, environ: True),
)
NAMES = tuple(name for name, _ in SIGNATURES)


def detect(payload, environ):
    """The name of the host that sent this payload."""
    for name, matches in SIGNATURES:
        if matches(payload, environ):
            return name
    return NAMES[-1]


def load(name):
    """The host's module, imported on first use (from its bundle: runaway_guard/__init__.py)."""
    if name not in NAMES:
        raise ValueError(f"unknown host {name!r}: one of {', '.join(NAMES)}")
    return load_bundled(f"{__name__}.{name}")
