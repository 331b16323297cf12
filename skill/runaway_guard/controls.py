"""The person's controls: status calls always pass; loosening a limit is the person's decision.

An agent may run `status.py` to answer "what has this cost?", and nothing the guard has refused
stands in its way. Raising a cap, clearing a stop or turning the guard off must come from the
person: where the host can ask, the guard asks them; where it cannot, it refuses and gives the
agent the exact command for the person to run in their own terminal.
"""

from . import config, fs, ledger
from .money import MAX_USD, money, raised_cap, suggest_cap, usd

STATUS_SCRIPT = "status.py"
LOOSENING_FLAGS = ("--raise-cap", "--clear", "--off")
PLAIN_FLAGS = ("--json", "--today", "--session", "--help", "-h")
_CHAINING = (";", "&", "|", "`", "$(", ">", "<", "\n")

STATUS, LOOSEN = "status", "loosen"


def sh_quote(text):
    """As shlex.quote (which would import re): quoted for a POSIX shell when it must be."""
    if text and all(char.isalnum() or char in "@%+=:,./-_" for char in text):
        return text
    return "'" + text.replace("'", "'\"'\"'") + "'"


def status_command():
    """The status script as a shell command for a person to run."""
    here = fs.dirname(fs.dirname(fs.abspath(__file__)))
    return f"python3 {sh_quote(fs.join(here, STATUS_SCRIPT))}"


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
        guarded = (state_dir, fs.dirname(config_path))
        if isinstance(target, str) and fs.abspath(target).startswith(guarded):
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


def apply(state_dir, status_state, action, value=None):
    """Apply one control to a session under its lock; (exit code, message)."""
    host, session_id = status_state.get("host"), status_state["session_id"]
    command = f"{status_command()} --session {sh_quote(session_id)}"
    with ledger.Ledger(state_dir, host, session_id) as book:
        # Nothing in here may raise: the Ledger drops a state whose update failed.
        state = book.state
        spent = usd(state["spend"]["total"])
        if action == "raise-cap":
            if not value <= MAX_USD:  # NaN and infinity too: every cap's sums stay finite
                return 2, (
                    f"Not changed: a cap can be at most {money(MAX_USD)}. Give a lower one, "
                    f"for example:\n  {command} --raise-cap {suggest_cap(0, spent)}"
                )
            if value <= spent:
                return 2, (
                    f"Not changed: a cap of {money(value)} is not above what this session has "
                    f"already spent ({money(spent)}). Give a higher cap, for example:\n"
                    f"  {command} --raise-cap {suggest_cap(value, spent)}"
                )
            old = raised_cap(state.get("cap_usd"))
            state["cap_usd"] = float(value)
            blocked = state.get("blocked")
            if isinstance(blocked, dict) and blocked.get("wire") == "session":
                state["blocked"] = None
            before = f" (was {money(old)})" if old is not None else ""
            return 0, (
                f"This session's cap is now {money(value)}{before}; {money(spent)} is spent, "
                f"{money(value - spent)} left. The agent can go on: send it a new prompt."
            )
        if action == "clear":
            agents = state["agents"]
            for record in agents.values():
                ledger.reset_agent(record)
            state["blocked"] = None
            message = (
                f"Cleared: the failure runs and loop counts of {len(agents)} "
                f"agent{'s' if len(agents) != 1 else ''} start again from zero. "
                "The agent can go on: send it a new prompt."
            )
            cap = raised_cap(state.get("cap_usd"))
            if cap is None:
                cap = config.load(state.get("cwd") or None).max_usd
            if cap and spent >= cap:
                message += (
                    f"\nThe spend cap still holds ({money(spent)} of {money(cap)}); "
                    f"to go past it: {command} --raise-cap {suggest_cap(cap, spent)}"
                )
            return 0, message
        if action in ("off", "on"):
            state["off"] = action == "off"
            if action == "off":
                state["blocked"] = None
                return 0, (
                    "The guard is off for this session: it keeps counting spend but refuses "
                    f"nothing. Turn it back on with: {command} --on"
                )
            return 0, "The guard is on again for this session."
    return 2, f"unknown control {action!r}"
