"""The person's controls: status calls always pass; loosening a limit is the person's decision.

An agent may run `status.py` to answer "what has this cost?", and nothing the guard has refused
stands in its way. Raising a cap, clearing a stop or turning the guard off must come from the
person: on Claude Code the guard asks them; on Codex, which cannot ask, it refuses and gives the
agent the exact command for the person to run in their own terminal.
"""

import os

STATUS_SCRIPT = "status.py"
LOOSENING_FLAGS = ("--raise-cap", "--clear", "--off")
PLAIN_FLAGS = ("--json", "--today", "--session", "--help", "-h")
_CHAINING = (";", "&", "|", "`", "$(", ">", "<", "\n")

STATUS, LOOSEN = "status", "loosen"


def _mentions_guard(text):
    return "runaway-guard" in text or "runaway_guard" in text or "RUNAWAY_GUARD_" in text


def classify(call, state_dir, config_path):
    """STATUS for a plain status call, LOOSEN for anything that would loosen a limit, else None."""
    command = call.command
    if command is not None:
        if not _mentions_guard(command) and STATUS_SCRIPT not in command:
            return None
        if any(flag in command for flag in LOOSENING_FLAGS) and STATUS_SCRIPT in command:
            return LOOSEN
        if state_dir in command or config_path in command or "RUNAWAY_GUARD_" in command:
            return LOOSEN
        if STATUS_SCRIPT in command and _plain_status(command):
            return STATUS
        return None
    if call.tool in ("Edit", "Write") and isinstance(call.tool_input, dict):
        target = call.tool_input.get("file_path") or call.tool_input.get("path")
        patch = call.tool_input.get("command")
        guarded = (state_dir, os.path.dirname(config_path))
        if isinstance(target, str) and os.path.abspath(target).startswith(guarded):
            return LOOSEN
        if isinstance(patch, str) and any(place in patch for place in guarded):
            return LOOSEN
    return None


def _plain_status(command):
    if any(mark in command for mark in _CHAINING):
        return False
    words = command.split()
    script = [
        index for index, word in enumerate(words) if word.strip("'\"").endswith(STATUS_SCRIPT)
    ]
    if len(script) != 1:
        return False
    before, after = words[: script[0]], words[script[0] + 1 :]
    if len(before) > 1 or (before and "python" not in before[0]):
        return False
    expect_value = False
    for word in after:
        if expect_value:
            expect_value = False
        elif word == "--session":
            expect_value = True
        elif word not in PLAIN_FLAGS:
            return False
    return True
