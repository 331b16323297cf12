"""The status object (status.py --json, the contract) and today's sessions.

The forecast uses the spend samples the guard keeps in the state (`burn`: [time, picodollars],
at most one a minute): the rate over the last 15 minutes of activity, else the session's average
since its first call. The ledger file itself has no timestamps.
"""

import json
import os
import time

from . import (
    config,
    controls,
    day_totals,
    log,
    project_report,
    projects,
    sessions,
    state_file,
    time_limits,
)
from .decisions import STOP
from .money import money, raised_cap, suggest_cap, usd

RECENT_WINDOW = 900.0  # seconds of activity the "recent" burn rate looks back on
MIN_SPAN = 60.0  # less history than this gives no rate
# The team's fields (team.report), all None when no team is configured.
TEAM_KEYS = (
    "team_spend_usd",
    "team_cap_usd",
    "person_spend_usd",
    "person_cap_usd",
    "team_refreshed_at",
    "team_stale_since",
    "team",
)

# -- the status object


def _agent_loop(hist):
    """How many times the agent's latest pattern of calls ran with the same result."""
    from .wires import LOOP_PERIODS, loop_repeats

    hist = [item for item in hist if isinstance(item, list) and len(item) == 2]
    best = 0
    for period in LOOP_PERIODS:
        if len(hist) >= period:
            best = max(best, loop_repeats(hist, hist[-period][0]))
    return best if best > 1 else 0  # one run of a call is no loop


def _money_map(totals):
    if not isinstance(totals, dict):
        return {}
    pairs = [(name, value) for name, value in totals.items() if isinstance(value, int)]
    pairs.sort(key=lambda pair: -pair[1])
    return {name: usd(value) for name, value in pairs}


def forecast(state, cap, daily, daily_cap, now=None):
    """The burn rate and when the nearer cap is reached at it (see the module's docstring)."""
    seen = sessions.last_seen(state)
    spend = state["spend"]["total"]
    samples = [
        (item[0], item[1])
        for item in state.get("burn") or []
        if isinstance(item, list)
        and len(item) == 2
        and isinstance(item[0], (int, float))
        and isinstance(item[1], int)
        and item[0] <= seen + 1  # samples are rounded to 0.1 s
    ]
    result = {
        "basis": None,
        "usd_per_hour": None,
        "cap": None,
        "reached_in_s": None,
        "reached_at": None,
        "note": "",
    }
    anchor = next((item for item in samples if item[0] >= seen - RECENT_WINDOW), None)
    if anchor is not None and seen - anchor[0] >= MIN_SPAN:
        result["basis"] = "last 15 min"
    else:
        started = state.get("started")
        anchor = samples[0] if samples else (started, 0) if isinstance(started, float) else None
        if anchor is not None and seen - anchor[0] >= MIN_SPAN:
            result["basis"] = "session average"
    if result["basis"] is None:
        result["note"] = "not enough history yet for a burn rate"
        return result
    rate = usd(max(spend - anchor[1], 0)) / (seen - anchor[0])  # USD per second
    result["usd_per_hour"] = rate * 3600
    if rate <= 0:
        result["note"] = "nothing spent in that time"
        return result
    options = []
    if cap:
        options.append(("session", cap - usd(spend)))
    if daily_cap:
        options.append(("daily", daily_cap - daily))
    if not options:
        result["note"] = "no cap to reach"
        return result
    kind, left = min(options, key=lambda option: option[1])
    result["cap"] = kind
    if left <= 0:
        result["reached_in_s"] = 0
        result["reached_at"] = seen
        return result
    result["reached_in_s"] = left / rate
    result["reached_at"] = (now or time.time()) + left / rate
    return result


def build(path, state, state_dir, environ=os.environ, now=None):
    """The status object (the `--json` contract) of one session."""
    now = time.time() if now is None else now
    settings = config.load(state.get("cwd") or None, environ)
    spend = state.get("spend") if isinstance(state.get("spend"), dict) else {}
    spend.setdefault("total", 0)
    state["spend"] = spend
    raised = raised_cap(state.get("cap_usd"))
    cap = raised if raised is not None else settings.max_usd
    today = time.strftime("%Y-%m-%d", time.localtime(now))
    daily_shares = day_totals.day_shares(state_dir, today)
    daily = usd(sum(value for value in daily_shares.values() if isinstance(value, int)))
    host, session_id = state.get("host"), state["session_id"]

    agents = {}
    names = list(_money_map(spend.get("agent")))
    raw_agents = state.get("agents") if isinstance(state.get("agents"), dict) else {}
    names += [name for name in raw_agents if name not in names]
    if "main" in names:
        names.remove("main")
    names.insert(0, "main")
    by_agent = _money_map(spend.get("agent"))
    for name in names:
        record = raw_agents.get(name) if isinstance(raw_agents.get(name), dict) else {}
        hist = record.get("hist") if isinstance(record.get("hist"), list) else []
        fails = record.get("fails") if isinstance(record.get("fails"), int) else 0
        agents[name] = {
            "spend_usd": by_agent.get(name, 0.0),
            "failures_in_a_row": fails,
            "loop_repeats": _agent_loop(hist),
            "refusals": dict(record.get("ref") or {}),
        }

    blocked = state.get("blocked") if isinstance(state.get("blocked"), dict) else None
    spent = usd(spend["total"])
    off = bool(state.get("off")) or settings.off
    problems = list(settings.problems)
    for problem in state.get("problems") or []:
        # A state saved by an older version may hold a URL whole: no password is shown.
        problem = log.redact(problem) if isinstance(problem, str) else None
        if problem and problem not in problems:
            problems.append(problem)

    refusing = []
    if not off:
        if cap and spent >= cap and state.get("host") not in settings.plan:
            refusing.append(
                {
                    "wire": "session",
                    "agent": None,
                    "why": f"session spend {money(spent)} reached its cap of {money(cap)}",
                }
            )
        if settings.daily_usd and daily >= settings.daily_usd:
            refusing.append(
                {
                    "wire": "daily",
                    "agent": None,
                    "why": f"today's spend {money(daily)} reached the daily cap of "
                    f"{money(settings.daily_usd)}",
                }
            )
        refusing.extend(_window_refusal(state, settings, now))
        for name, info in agents.items():
            if info["failures_in_a_row"] >= settings.max_failures:
                refusing.append(
                    {
                        "wire": "failure",
                        "agent": name,
                        "why": f"{info['failures_in_a_row']} failed calls in a row "
                        f"(limit {settings.max_failures})",
                    }
                )
            if info["loop_repeats"] >= settings.max_repeats:
                refusing.append(
                    {
                        "wire": "loop",
                        "agent": name,
                        "why": f"the same call ran {info['loop_repeats']} times with the same "
                        f"result (limit {settings.max_repeats}); repeating it is refused",
                    }
                )

    team_fields, team_refusing = _team(settings, state, now)
    project = project_report.status(state, settings, state_dir, now)
    if not off:
        refusing.extend(team_refusing)
        refusing.extend(_project_refusing(project))
    hours, minutes = time_limits.elapsed(state, now)

    command = controls.status_command()
    session_arg = f"--session {controls.sh_quote(session_id)}"
    suggested = suggest_cap(cap, spent)
    main = agents["main"]
    return {
        "host": host,
        "session_id": session_id,
        "cwd": state.get("cwd"),
        "state_file": path,
        "started": state.get("started"),
        "last_seen": state.get("seen"),
        "spend_usd": spent,
        "cap_usd": cap or None,
        "cap_source": "raised" if raised is not None else settings.sources["max_usd"],
        "warn_at": settings.warn_at,
        "today_usd": usd(_int((spend.get("day") or {}).get(today))),
        "daily_spend_usd": daily,
        "daily_sessions": len(daily_shares),
        "daily_cap_usd": settings.daily_usd or None,
        "daily_cap_source": settings.sources["daily_usd"],
        **team_fields,
        "project": project,
        "session_hours": round(hours, 4),
        "autonomous_minutes": round(minutes, 2),
        "max_session_hours": settings.max_session_hours or None,
        "max_autonomous_minutes": settings.max_autonomous_minutes or None,
        "by_model": _money_map(spend.get("model")),
        "by_agent": by_agent,
        "failures_in_a_row": main["failures_in_a_row"],
        "agents": agents,
        "limits": {
            "max_failures": settings.max_failures,
            "max_repeats": settings.max_repeats,
        },
        "blocked": blocked,
        "refusing": refusing,
        "off": off,
        "off_by": "session" if state.get("off") else "config" if settings.off else None,
        "unpriced_models": [m for m in state.get("unpriced") or [] if isinstance(m, str)],
        "priced_as": _priced_as(state),
        **_plan_fields(state, settings, spent=spent, now=now),
        "config_problems": problems,
        "runs_twice": bool(state.get("twice")),
        "forecast": forecast(state, cap, daily=daily, daily_cap=settings.daily_usd, now=now),
        "commands": {
            "status": f"{command} {session_arg}",
            "raise_cap": f"{command} {session_arg} --raise-cap {suggested}",
            "clear": f"{command} {session_arg} --clear",
            "off": f"{command} {session_arg} --off",
            "on": f"{command} {session_arg} --on",
        },
    }


def _project_refusing(project):
    """The project's caps it has reached (status.py's `refusing`)."""
    found = []
    for period, cap_key in (("day", "daily"), ("week", "weekly"), ("month", "monthly")):
        spent, cap = (project or {}).get(f"{period}_usd"), (project or {}).get(f"{cap_key}_cap_usd")
        if cap and spent >= cap:
            found.append(
                {
                    "wire": "project",
                    "agent": None,
                    "why": f"project {project['path']} spent {money(spent)} this {period}, "
                    f"its {cap_key} cap is {money(cap)}",
                }
            )
    return found


def _team(settings, state, now):
    """The team's fields and refusals (team/status.py), or empty fields when there is no team."""
    if not settings.team:
        return dict.fromkeys(TEAM_KEYS), []
    from .team import status

    return status.report(settings, state, now)


def _int(value):
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


# -- today


def today_rows(state_dir, environ=os.environ, now=None):
    """Every session with spend today, of every host: the `--today` table's rows."""
    now = time.time() if now is None else now
    day = time.strftime("%Y-%m-%d", time.localtime(now))
    shares = day_totals.day_shares(state_dir, day)
    rows = []
    for key, picodollars in shares.items():
        if not isinstance(picodollars, int) or ":" not in key:
            continue
        host, session_id = key.split(":", 1)
        _, base = state_file.session_paths(state_dir, host, session_id)
        state = state_file.read_state(base + state_file.STATE) or {}
        spend = state.get("spend") if isinstance(state.get("spend"), dict) else {}
        cap = raised_cap(state.get("cap_usd"))
        if cap is None:
            cap = config.load(state.get("cwd") or None, environ).max_usd
        total = usd(_int(spend.get("total")))
        blocked = state.get("blocked")
        if state.get("off"):
            condition = "off"
        elif cap and total >= cap:
            condition = "at cap"
        elif isinstance(blocked, dict):
            condition = f"refused:{blocked.get('wire')}"
        else:
            condition = "ok"
        rows.append(
            {
                "host": host,
                "session_id": session_id,
                "cwd": state.get("cwd"),
                "project": _project_path(state),
                "today_usd": usd(picodollars),
                "spend_usd": total,
                "cap_usd": cap or None,
                "state": condition,
                "last_seen": state.get("seen"),
            }
        )
    rows.sort(key=lambda row: -(row["last_seen"] or 0))
    by_project = {}
    for row in rows:
        by_project[row["project"]] = by_project.get(row["project"], 0) + row["today_usd"]
    rows.sort(key=lambda row: -by_project[row["project"]])  # stable: each project's newest first
    settings = config.load(os.getcwd(), environ)
    return {
        "day": day,
        "daily_spend_usd": usd(day_totals.day_total(shares)),
        "daily_cap_usd": settings.daily_usd or None,
        "by_project": by_project,
        "sessions": rows,
    }


def _project_path(state):
    """The session's project as its state names it (projects.track), else from its cwd."""
    record = state.get("project")
    if isinstance(record, dict) and isinstance(record.get("path"), str):
        return record["path"]
    cwd = state.get("cwd")
    return projects.locate(cwd)[0] if isinstance(cwd, str) and cwd else None


def to_json(value):
    return json.dumps(value, indent=2, sort_keys=False)


def _priced_as(state):
    """{unpriced model id: the listed model it was priced as, or "ceiling"}; a state from before
    this was recorded, or a hostile one, gives what it holds of it."""
    found = state.get("priced_as")
    if not isinstance(found, dict):
        return {}
    return {m: p for m, p in found.items() if isinstance(m, str) and isinstance(p, str)}


def _plan_fields(state, settings, spent, now):
    """plan, plan_windows (plans.status) and paid_usd: the money paid per token, spend_usd off a
    plan, 0 on one (spend_usd is then what the same tokens cost on the API)."""
    from . import plans

    fields = plans.status(state, settings, now)
    fields["paid_usd"] = 0.0 if fields["plan"] else spent
    return fields


def _window_refusal(state, settings, now):
    """The window cap's stop (plans.window_wire), as a refusing entry: [] when it does not hold."""
    if not settings.max_window_share:
        return []
    from . import plans

    stop = plans.window_wire(state, settings, tool="", warned={}, now=now)
    if not stop or stop["kind"] != STOP:
        return []
    why = stop["person_text"].replace("runaway-guard stopped the agent: ", "", 1).rstrip(".")
    return [{"wire": "window", "agent": None, "why": why}]
