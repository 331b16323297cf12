"""Time limits: how long a session has run, and how long its agent has worked on its own.

`max_session_hours` counts wall-clock time from the session's first record the guard saw (its
state's `started`); `max_autonomous_minutes` counts from the person's last prompt (the state's
`prompt_at`, set by hook._new_prompt when the host's records show a new prompt; the session's
start until one is seen). Both are off at 0, the default: a cap on spend already bounds what a
night costs, and a long session or a long unattended run can be the person's intent. On the
ladder like spend: a note at `warn_at` of the limit, then the call refused and the run ended.
A new prompt starts the autonomy clock afresh; only the person's setting lifts the other.
"""

import time

from .decisions import STOP, TELL

SETTINGS = "~/.config/runaway-guard/config.json"


def wires(state, settings, tool, warned, now=None):
    """The decisions of the limits that are set (none is set: [])."""
    found = []
    if settings.max_session_hours <= 0 and settings.max_autonomous_minutes <= 0:
        return found
    now = time.time() if now is None else now
    started = _moment(state.get("started"), now)
    if settings.max_session_hours > 0:
        found.append(
            _limit(
                "time",
                now - started,
                limit_s=settings.max_session_hours * 3600,
                settings=settings,
                warned=warned,
            )
        )
    if settings.max_autonomous_minutes > 0:
        since = _moment(state.get("prompt_at"), started)
        limit = settings.max_autonomous_minutes * 60
        found.append(
            _limit("autonomy", now - since, limit_s=limit, settings=settings, warned=warned)
        )
    return found


def _moment(value, fallback):
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else fallback


def elapsed(state, now=None):
    """(session hours, autonomous minutes) for status.py."""
    now = time.time() if now is None else now
    started = _moment(state.get("started"), now)
    since = _moment(state.get("prompt_at"), started)
    return max(now - started, 0) / 3600, max(now - since, 0) / 60


def _limit(wire, seconds, limit_s, settings, warned):
    """A time against its limit: a note once at warn_at of it, a stop from the limit on."""
    if wire == "time":
        spent, limit = _hours(seconds), _hours(limit_s)
        what = f"this session has run {spent} of its {limit} limit"
        key, lift = "max_session_hours", "a new session starts its clock afresh"
    else:
        spent, limit = _minutes(seconds), _minutes(limit_s)
        what = (
            f"the agent has worked {spent} on its own since the user's last prompt (limit {limit})"
        )
        key, lift = "max_autonomous_minutes", "a new prompt from the user starts it afresh"
    how = f"set RUNAWAY_GUARD_{key.upper()} or {key} in {SETTINGS}"
    if seconds >= limit_s:
        return {
            "kind": STOP,
            "wire": wire,
            "model_text": (
                f"runaway-guard: {what}. Stop now and report to the user; only the user can "
                "raise the limit."
            ),
            "person_text": f"runaway-guard stopped the agent: {what}. To go on, {lift}, or {how}.",
        }
    if seconds < settings.warn_at * limit_s or warned.get(wire) == limit_s:
        return None
    warned[wire] = limit_s
    return {
        "kind": TELL,
        "wire": wire,
        "model_text": f"runaway-guard: {what}. Wrap up: finish the current step and report to the "
        "user before the limit stops you.",
        "person_text": f"runaway-guard: {what}.",
    }


def _hours(seconds):
    return f"{seconds / 3600:.1f} h" if seconds >= 360 else f"{seconds / 60:.1f} min"


def _minutes(seconds):
    return f"{seconds / 60:.0f} min" if seconds >= 120 else f"{seconds:.0f} s"
