"""Plans, not only prices: what the guard knows of the plan a person runs a host on.

Many people pay a subscription, not per token. They say so with `plan` (RUNAWAY_GUARD_PLAN):
the hosts whose sessions run on a plan (`codex,claude`, or `all`). For those, the dollar caps
(session and daily) do not apply, since no money is paid per token: the priced figure is
shown as what the same tokens would cost on the API. Default: no plan, dollar caps as before.
A project file may not set it (it lifts caps).

Where a host records the plan's usage windows, a cap on the share used applies to every
session of that host, plan or not (`max_window_share`, 0 to 1, 0 = none): Codex writes
`rate_limits` in its token_count events (the plan type and, per limit, the share used of its
primary and secondary windows, as the model server's `x-codex-*` headers gave them). Claude
Code, Gemini CLI and Copilot CLI write no usage window to the files the guard reads
(references/how-it-decides.md says what each records).

Imported on the hook path only when a plan or a window cap is set or a window was recorded.
"""

from . import jsonio
from .calls import SPAWN_TOOLS, ignore
from .decisions import DENY, STOP, TELL
from .hosts import NAMES

_MAX_PLAN_TEXT = 40
_WINDOWS = ("primary", "secondary")
_MAX_LIMITS = 8  # limit ids kept (Codex names one or two): a hostile file cannot grow the state


def setting(user, user_path, environ, problems):
    """The hosts the person says run on a plan: RUNAWAY_GUARD_PLAN, else the user file's
    `plan` (a host, a list of hosts, `all` or `none`). A value that names no host is a problem
    line, and no host is on a plan: the dollar caps hold."""
    raw = environ.get("RUNAWAY_GUARD_PLAN")
    where = "RUNAWAY_GUARD_PLAN"
    if raw is None or raw == "":
        raw, where = user.get("plan"), f"{user_path}: plan"
    if raw is None:
        return frozenset()
    names = raw.split(",") if isinstance(raw, str) else raw
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        problems.append(f"{where} is not a host name or a list of them; ignored")
        return frozenset()
    names = {name.strip().lower() for name in names} - {""}
    if names == {"none"}:
        return frozenset()
    if names == {"all"}:
        return frozenset(NAMES)
    unknown = sorted(names - set(NAMES))
    if unknown or not names:
        shown = ", ".join(repr(name[:20]) for name in unknown[:3]) or "nothing"
        problems.append(
            f"{where} names {shown}: give host names ({', '.join(NAMES)}), all or none; ignored"
        )
        return frozenset()
    return frozenset(names)


def on_plan(settings, state):
    """Whether the person said this session's host runs on a plan."""
    return state.get("host") in getattr(settings, "plan", ())


def record_codex(state, raw):
    """Keep the usage windows of a Codex token_count line (its `rate_limits`) in the state, one
    entry per limit and window, the newest line's; a value that is not what Codex writes is
    passed over (an ignored line)."""
    try:
        record = jsonio.loads(raw)
    except ValueError:
        return
    payload = record.get("payload") if isinstance(record, dict) else None
    limits = payload.get("rate_limits") if isinstance(payload, dict) else None
    if not isinstance(limits, dict):
        return
    kept = state.get("plan_windows")
    if not isinstance(kept, dict):
        kept = state["plan_windows"] = {}
    plan_type = limits.get("plan_type")
    if isinstance(plan_type, str) and 0 < len(plan_type) <= _MAX_PLAN_TEXT:
        kept["plan_type"] = plan_type
    limit = limits.get("limit_id")
    limit = limit if isinstance(limit, str) and 0 < len(limit) <= _MAX_PLAN_TEXT else "codex"
    windows = kept.get("windows")
    if not isinstance(windows, dict):
        windows = kept["windows"] = {}
    for name in _WINDOWS:
        window = _window(limits.get(name))
        key = f"{limit}:{name}"
        if window is not None and (key in windows or len(windows) < 2 * _MAX_LIMITS):
            windows[key] = window
    if isinstance(record.get("timestamp"), str):
        kept["seen_at"] = record["timestamp"][:40]


def _window(value):
    """{used_share, window_minutes, resets_at} of one window Codex recorded, or None."""
    if value is None:
        return None
    used = value.get("used_percent") if isinstance(value, dict) else None
    if isinstance(used, bool) or not isinstance(used, (int, float)) or not 0 <= used <= 100:
        ignore("a usage window that is not a share from 0 to 100 %")
        return None
    window = {"used_share": round(used / 100, 6)}
    for key in ("window_minutes", "resets_at"):
        number = value.get(key)
        ok = isinstance(number, int) and not isinstance(number, bool) and 0 <= number < 1 << 40
        window[key] = number if ok else None
    return window


def current(state, now):
    """[(limit and window, its entry)] of the windows recorded that have not reset by now."""
    kept = state.get("plan_windows")
    windows = kept.get("windows") if isinstance(kept, dict) else None
    if not isinstance(windows, dict):
        return []
    return [
        (key, window)
        for key, window in sorted(windows.items())
        if isinstance(window, dict)
        and isinstance(window.get("used_share"), (int, float))
        and not (isinstance(window.get("resets_at"), int) and window["resets_at"] <= now)
    ]


def window_wire(state, settings, tool, warned, now):
    """The share used of a plan's window against max_window_share: told once past the warning
    share of it, no new subagents from there, stopped at it. None without a cap or a window."""
    cap = getattr(settings, "max_window_share", 0)
    if not cap:
        return None
    windows = current(state, now)
    if not windows:
        return None
    key, window = max(windows, key=lambda item: item[1]["used_share"])
    used = window["used_share"]
    shown = f"{used:.0%} of the plan's {_label(key, window)} is used"
    how = "raise RUNAWAY_GUARD_MAX_WINDOW_SHARE or max_window_share in the user config"
    if used >= cap:
        return {
            "kind": STOP,
            "wire": "window",
            "model_text": (
                f"runaway-guard: {shown}, the cap is {cap:.0%}. Stop now and tell the user; "
                "only they can raise the cap."
            ),
            "person_text": (
                f"runaway-guard stopped the agent: {shown} (cap {cap:.0%}). To go on, {how}"
                f"{_resets(window)}."
            ),
        }
    if used < settings.warn_at * cap:
        return None
    if tool in SPAWN_TOOLS:
        return {
            "kind": DENY,
            "wire": "window",
            "model_text": f"runaway-guard: {shown} (cap {cap:.0%}); no new subagents from here on.",
            "person_text": f"runaway-guard refused a new subagent: {shown} (cap {cap:.0%}).",
        }
    if warned.get("window") == cap:
        return None
    warned["window"] = cap
    return {
        "kind": TELL,
        "wire": "window",
        "model_text": (
            f"runaway-guard: {shown}; the cap is {cap:.0%}. Keep the rest of the work small."
        ),
        "person_text": f"runaway-guard: {shown}; the cap is {cap:.0%}.",
    }


def _label(key, window):
    limit, _, name = key.partition(":")
    minutes = window.get("window_minutes")
    span = f"{minutes // 60}-hour" if minutes and minutes % 60 == 0 else f"{minutes}-minute"
    span = f"{span} window" if minutes else f"{name} window"
    return span if limit == "codex" else f"{span} ({limit})"


def _resets(window):
    resets = window.get("resets_at")
    if not isinstance(resets, int):
        return ""
    import time

    return f", or wait until it resets ({time.strftime('%Y-%m-%d %H:%M', time.localtime(resets))})"


def status(state, settings, now):
    """The status --json fields of plans: `plan` (whether the person said this host runs on a
    plan) and `plan_windows` (what the host recorded of its windows, reset ones left out)."""
    kept = state.get("plan_windows")
    kept = kept if isinstance(kept, dict) else {}
    plan_type = kept.get("plan_type")
    return {
        "plan": on_plan(settings, state),
        "plan_windows": {
            "plan_type": plan_type if isinstance(plan_type, str) else None,
            "seen_at": kept.get("seen_at") if isinstance(kept.get("seen_at"), str) else None,
            "max_window_share": getattr(settings, "max_window_share", 0) or None,
            "windows": [
                {
                    "limit": key.partition(":")[0],
                    "window": key.partition(":")[2],
                    "used_share": window["used_share"],
                    "window_minutes": window.get("window_minutes"),
                    "resets_at": window.get("resets_at"),
                }
                for key, window in current(state, now)
            ],
        }
        if kept
        else None,
    }
