"""The person's controls applied (status.py --raise-cap, --clear, --off, --on): one session's
state changed under its lock. Apart from controls.py, which every hook call loads: only the
status command applies them."""

from . import agent_book, config, ledger
from .controls import sh_quote, status_command
from .money import MAX_USD, money, raised_cap, suggest_cap, usd


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
                agent_book.reset_agent(record)
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
