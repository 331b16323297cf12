"""The hosts: who called the guard, what call it is about, and how to answer that host.

Claude Code, Codex, Cursor and Copilot CLI all run the same hook command, each with its own
payload and its own idea of a valid answer. Everything host-specific lives here so the wires
see one vocabulary of calls and decisions.
"""

import os

from . import jsonio

CLAUDE = "claude"
CODEX = "codex"
CURSOR = "cursor"
COPILOT = "copilot"

# Tool names as each host spells them, mapped to one vocabulary.
_TOOL_ALIASES = {
    "bash": "Bash",
    "shell": "Bash",
    "Shell": "Bash",
    "powershell": "Bash",
    "PowerShell": "Bash",
    "exec_command": "Bash",
    "local_shell": "Bash",
    "container.exec": "Bash",
    "apply_patch": "Edit",
    "edit": "Edit",
    "str_replace_editor": "Edit",
    "MultiEdit": "Edit",
    "create": "Write",
    "write": "Write",
    "Task": "Agent",
    "spawn_agent": "Agent",
    "collaborationspawn_agent": "Agent",
}

SPAWN_TOOLS = frozenset({"Agent"})


def detect(payload, environ=os.environ):
    """Name the host that sent this payload (DESIGN.md, Hosts)."""
    if "cursor_version" in payload or "conversation_id" in payload or environ.get("CURSOR_VERSION"):
        return CURSOR
    if "sessionId" in payload or "toolName" in payload or "toolArgs" in payload:
        return COPILOT
    if "turn_id" in payload:
        return CODEX
    if "timestamp" in payload and "transcript_path" not in payload:
        return COPILOT
    return CLAUDE


def normalize_tool(name):
    """One name per kind of tool, whichever host called it."""
    if not isinstance(name, str):
        return ""
    return _TOOL_ALIASES.get(name, name)


def _text(value):
    return value if isinstance(value, str) and value else None


class Call:
    """One PreToolUse call, with only the fields the guard relies on, type-checked."""

    __slots__ = (
        "agent",
        "cwd",
        "host",
        "model",
        "prompt_id",
        "raw_tool",
        "session_id",
        "tool",
        "tool_input",
        "tool_use_id",
        "transcript_path",
    )

    def __init__(self, payload, host):
        self.host = host
        self.session_id = _text(payload.get("session_id"))
        self.transcript_path = _text(payload.get("transcript_path"))
        self.cwd = _text(payload.get("cwd"))
        self.agent = _text(payload.get("agent_id")) or "main"
        self.raw_tool = _text(payload.get("tool_name")) or ""
        self.tool = normalize_tool(self.raw_tool)
        self.tool_input = payload.get("tool_input")
        self.tool_use_id = _text(payload.get("tool_use_id"))
        self.model = _text(payload.get("model"))
        # Claude Code's prompt_id and the main thread's turn_id on Codex both change when the
        # person sends a new prompt: that is the person's decision to go on.
        if host == CODEX:
            self.prompt_id = _text(payload.get("turn_id")) if self.agent == "main" else None
        else:
            self.prompt_id = _text(payload.get("prompt_id"))

    @property
    def command(self):
        """The shell command of a shell call, else None."""
        if self.tool != "Bash" or not isinstance(self.tool_input, dict):
            return None
        command = self.tool_input.get("command", self.tool_input.get("cmd"))
        if isinstance(command, list):
            command = " ".join(part for part in command if isinstance(part, str))
        return command if isinstance(command, str) else None


# Decisions, weakest first: what the guard wants the host to do with this call.
TELL, DENY, ASK, STOP = "tell", "deny", "ask", "stop"
STRENGTH = {None: 0, TELL: 1, DENY: 2, ASK: 3, STOP: 4}


def render(host, decision):
    """The host's answer for a decision, as one line of JSON, or '' for no answer.

    decision: {"kind": TELL|DENY|ASK|STOP, "model": text for the model, "person": text for
    the person}. Codex honours a deny with a non-empty reason, and additionalContext alone (seen
    on 0.169.0); any other key, `ask` or `continue` marks the hook failed and the call runs, so
    every refusal there is a plain deny.
    """
    if host == CURSOR:
        return "{}"
    if host == COPILOT or not decision:
        return ""
    kind = decision["kind"]
    model_text = decision.get("model") or ""
    person_text = decision.get("person") or ""
    if host == CODEX:
        if kind == TELL:
            if not model_text:
                return ""
            out = {"hookEventName": "PreToolUse", "additionalContext": model_text}
        else:
            out = {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": model_text or person_text or "runaway-guard",
            }
        return jsonio.dumps({"hookSpecificOutput": out})
    specific = {"hookEventName": "PreToolUse"}
    answer = {"hookSpecificOutput": specific}
    if kind == TELL:
        specific["additionalContext"] = model_text
    elif kind == ASK:
        specific["permissionDecision"] = "ask"
        # An ask's reason is shown to the person, who decides.
        specific["permissionDecisionReason"] = person_text or model_text
    else:
        specific["permissionDecision"] = "deny"
        specific["permissionDecisionReason"] = model_text or person_text
        if kind == STOP:
            answer["continue"] = False
            answer["stopReason"] = person_text or model_text
    if person_text and kind != ASK:
        answer["systemMessage"] = person_text
    if kind == TELL and not model_text:
        del answer["hookSpecificOutput"]
    return jsonio.dumps(answer)
