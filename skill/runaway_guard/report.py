"""What status.py shows and does: find a session, read its state, report it, apply the controls.

The guard writes one state file per session (`<state_dir>/sessions/<host>/<id>.json`, see
ledger.py) and one file per day mapping every session to its spend that day. This module only
reads those, except for the person's controls (raise the cap, clear a stop, guard off/on), which
change one session's state under its lock, the same lock the guard takes.

The forecast uses the spend samples the guard keeps in the state (`burn`: [time, picodollars],
at most one a minute): the rate over the last 15 minutes of activity, else the session's average
since its first call. The ledger file itself has no timestamps.
"""

import json
import math
import os
import shlex
import time

from . import config, ledger

PICO = 10**12
WIDTH = 80
RECENT_WINDOW = 900.0  # seconds of activity the "recent" burn rate looks back on
MIN_SPAN = 60.0  # less history than this gives no rate
HOSTS = {"claude": "Claude Code", "codex": "Codex"}


class StatusError(Exception):
    """Bad usage or an unknown session: status.py prints the message and exits 2."""


def usd(picodollars):
    return picodollars / PICO


def money(value):
    if value is None:
        return "none"
    return f"${value:,.2f}"


# -- finding sessions


def status_command():
    script = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "status.py")
    return f"python3 {shlex.quote(script)}"


def project_root(cwd):
    """The git root above cwd, else cwd itself."""
    directory = os.path.abspath(cwd)
    probe = directory
    for _ in range(64):
        if os.path.exists(os.path.join(probe, ".git")):
            return probe
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    return directory


def _inside(path, root):
    if not isinstance(path, str) or not path:
        return False
    for candidate, base in ((path, root), (os.path.realpath(path), os.path.realpath(root))):
        try:
            if os.path.commonpath([os.path.abspath(candidate), base]) == base:
                return True
        except ValueError:
            continue
    return False


def all_sessions(state_dir):
    """Every session state the guard has written: [(path, state)], any host."""
    found = []
    root = os.path.join(state_dir, "sessions")
    try:
        hosts = sorted(os.listdir(root))
    except OSError:
        return found
    for host in hosts:
        folder = os.path.join(root, host)
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            if not name.endswith(".json"):
                continue
            path = os.path.join(folder, name)
            state = ledger.read_json(path)
            if state and isinstance(state.get("session_id"), str):
                state.setdefault("host", host)
                found.append((path, state))
    return found


def _seen(state):
    value = state.get("seen")
    return value if isinstance(value, (int, float)) else 0.0


def find_session(state_dir, session=None, cwd=None):
    """(path, state) of the named session, or of the one the guard saw last in cwd's project.

    session may be an id, `host:id`, or the unique start of an id (as `--today` prints it).
    """
    sessions = all_sessions(state_dir)
    if session:
        host = None
        if ":" in session and session.split(":", 1)[0] in HOSTS:
            host, session = session.split(":", 1)
        pool = [item for item in sessions if host in (None, item[1].get("host"))]
        exact = [item for item in pool if item[1]["session_id"] == session]
        matches = exact or [item for item in pool if item[1]["session_id"].startswith(session)]
        if not matches:
            raise StatusError(
                f"runaway-guard has no session {session!r} in {state_dir}.\n"
                f"List today's sessions with: {status_command()} --today"
            )
        ids = {(item[1].get("host"), item[1]["session_id"]) for item in matches}
        if len(ids) > 1 and not exact:
            names = ", ".join(f"{h}:{i}" for h, i in sorted(ids))
            raise StatusError(f"{session!r} matches more than one session: {names}")
        return max(matches, key=lambda item: _seen(item[1]))
    if not sessions:
        raise StatusError(
            f"runaway-guard has not seen any session yet (state in {state_dir}).\n"
            "It records a session at its first tool call once the hook is installed: "
            "python3 installer/install.py --host claude|codex"
        )
    root = project_root(cwd or os.getcwd())
    here = [item for item in sessions if _inside(item[1].get("cwd"), root)]
    return max(here or sessions, key=lambda item: _seen(item[1]))


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
    seen = _seen(state)
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
    raised = state.get("cap_usd")
    raised = raised if isinstance(raised, (int, float)) and not isinstance(raised, bool) else None
    cap = raised if raised is not None else settings.max_usd
    today = time.strftime("%Y-%m-%d", time.localtime(now))
    daily = usd(ledger.daily_spend(state_dir, today))
    daily_shares = ledger.read_json(ledger.daily_path(state_dir, today)) or {}
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
        if isinstance(problem, str) and problem not in problems:
            problems.append(problem)

    refusing = []
    if not off:
        if cap and spent >= cap:
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

    command = status_command()
    session_arg = f"--session {shlex.quote(session_id)}"
    suggested = _suggest_cap(cap, spent)
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
        "config_problems": problems,
        "forecast": forecast(state, cap, daily, settings.daily_usd, now),
        "commands": {
            "status": f"{command} {session_arg}",
            "raise_cap": f"{command} {session_arg} --raise-cap {suggested}",
            "clear": f"{command} {session_arg} --clear",
            "off": f"{command} {session_arg} --off",
            "on": f"{command} {session_arg} --on",
        },
    }


def _int(value):
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _suggest_cap(cap, spent):
    base = max(cap or 0, spent)
    return max(math.ceil(base * 1.5), math.floor(spent) + 5, 5)


# -- the report for people


def _bar(value, whole, width):
    share = 0.0 if not whole else min(max(value / whole, 0.0), 1.0)
    filled = round(share * width)
    return "[" + "#" * filled + "." * (width - filled) + "]"


def _short(text, width):
    text = str(text)
    return text if len(text) <= width else text[: width - 2] + ".."


def _ago(then, now):
    if not isinstance(then, (int, float)) or not then:
        return "never"
    seconds = max(now - then, 0)
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 86400:
        return f"{seconds / 3600:.1f} h ago"
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(then))


def _duration(seconds):
    if seconds < 60:
        return "under a minute"
    if seconds < 3600:
        return f"{round(seconds / 60)} min"
    if seconds < 86400 * 2:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def _pieces(word, room):
    """A word too long for a line, cut into pieces that fit: after a '/' where it can."""
    pieces = []
    while len(word) > room:
        cut = word.rfind("/", 0, room) + 1 or room
        pieces.append(word[:cut])
        word = word[cut:]
    return [*pieces, word]


def wrap(text, indent="", width=WIDTH):
    """Words to lines of at most width columns; a longer word (a path) is cut to fit."""
    lines, line = [], indent
    words = []
    for word in text.split():
        words.extend(_pieces(word, max(width - len(indent), 20)))
    for word in words:
        if line.strip() and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = indent + word
        else:
            line = f"{line} {word}" if line.strip() else indent + word
    if line.strip():
        lines.append(line)
    return lines


def command_lines(command, indent="    ", width=WIDTH):
    """A shell command broken with backslashes so it pastes as one command and fits."""
    words = command.split(" ")
    lines, line = [], indent
    for word in words:
        if line.strip() and len(line) + 1 + len(word) + 2 > width:
            lines.append(line + " \\")
            line = indent + "  " + word
        else:
            line = f"{line} {word}" if line.strip() else indent + word
    lines.append(line)
    return lines


def render(status, now=None):
    """The human report, for an 80-column terminal."""
    now = time.time() if now is None else now
    out = []
    host = HOSTS.get(status["host"], status["host"])
    out.append(f"runaway-guard: {host} session {status['session_id']}")
    where = status.get("cwd") or "?"
    out.append(_short(f"  project {where}", WIDTH))
    state = "OFF" if status["off"] else "STOPPED" if status["refusing"] else "running"
    out.append(
        f"  last call {_ago(status['last_seen'], now)}, started "
        f"{_ago(status['started'], now)}; guard: {state}"
    )
    out.append("")

    spent, cap = status["spend_usd"], status["cap_usd"]
    if cap:
        share = spent / cap
        label = f"Session spend {money(spent)} of {money(cap)} ({share:.0%})"
        out.append(f"{label}  {_bar(spent, cap, max(WIDTH - len(label) - 4, 10))}")
        source = "raised by you" if status["cap_source"] == "raised" else status["cap_source"]
        left = f"{money(cap - spent)} left" if spent < cap else "cap reached"
        out.append(
            f"  {left}; cap from {source}; warning at "
            f"{status['warn_at']:.0%} ({money(cap * status['warn_at'])})"
        )
    else:
        out.append(f"Session spend {money(spent)} (no session cap)")
    daily, daily_cap = status["daily_spend_usd"], status["daily_cap_usd"]
    count = status["daily_sessions"]
    sessions = f"{count} session{'s' if count != 1 else ''}"
    if daily_cap:
        label = f"Today {money(daily)} of {money(daily_cap)} daily cap, {sessions}"
        out.append(f"{label}  {_bar(daily, daily_cap, max(WIDTH - len(label) - 4, 10))}")
    else:
        out.append(f"Today {money(daily)} across {sessions} (no daily cap)")
    out.append("")

    out.extend(_table("By model", status["by_model"], spent))
    out.extend(_table("By agent", status["by_agent"], spent))
    if status["unpriced_models"]:
        out.extend(
            wrap(
                "Unknown to the price table, priced at their family's dearest model: "
                + ", ".join(status["unpriced_models"]),
                "  ",
            )
        )
    out.append("")

    limits = status["limits"]
    out.append(f"{'Agent':<24}{'failures in a row':<22}loop (same call, same result)")
    for name, info in status["agents"].items():
        fails = f"{info['failures_in_a_row']} of {limits['max_failures']}"
        loop = f"{info['loop_repeats']} of {limits['max_repeats']}" if info["loop_repeats"] else "-"
        out.append(f"  {_short(name, 20):<22}{fails:<22}{loop}")
    out.append("")

    out.extend(_stops(status, now))
    out.extend(_next_steps(status))
    out.extend(_forecast_lines(status))
    if status["config_problems"]:
        out.append("")
        out.append("Configuration problems (the guard uses the other settings):")
        for problem in status["config_problems"]:
            out.extend(_bullet(problem))
    return "\n".join(out) + "\n"


def _bullet(text):
    lines = wrap(text, "    ")
    if lines:
        lines[0] = "  - " + lines[0][4:]
    return lines


def _table(title, amounts, whole):
    lines = [title]
    if not amounts:
        lines.append("  (nothing spent yet)")
        return lines
    for name, amount in amounts.items():
        lines.append(f"  {_short(name, 34):<34}{money(amount):>12}  {_bar(amount, whole, 26)}")
    return lines


def _stops(status, now):
    lines = []
    if status["off"]:
        if status["off_by"] == "session":
            lines.append("The guard is OFF for this session: it counts spend but refuses nothing.")
        else:
            lines.append('The guard is OFF (RUNAWAY_GUARD_OFF=1 or "off" in the config file).')
        return lines
    for item in status["refusing"]:
        who = f" ({item['agent']})" if item["agent"] else ""
        lines.extend(wrap(f"Refusing{who}: {item['why']}.", "", WIDTH))
    blocked = status["blocked"]
    if blocked and blocked.get("wire") not in {item["wire"] for item in status["refusing"]}:
        agent = blocked.get("agent") or "main"
        lines.extend(
            wrap(
                f"Last refusal ({blocked.get('wire')} wire, {agent}, "
                f"{_ago(blocked.get('at'), now)}): {blocked.get('reason')}",
                "",
            )
        )
    if not lines:
        lines.append("Nothing is refused: the session runs normally.")
    lines.append("")
    return lines


def _next_steps(status):
    commands = status["commands"]
    wires_hit = {item["wire"] for item in status["refusing"]}
    if status["blocked"]:
        wires_hit.add(status["blocked"].get("wire"))
    lines = ["How to go on (you, in your own terminal):"]
    if status["off"]:
        if status["off_by"] == "session":
            lines.append("  Turn the guard back on for this session:")
            lines.extend(command_lines(commands["on"]))
        return [*lines, ""]
    if "session" in wires_hit or not status["refusing"]:
        lines.append("  Raise this session's cap:" if status["cap_usd"] else "  Set a cap:")
        lines.extend(command_lines(commands["raise_cap"]))
    if wires_hit & {"failure", "loop", "control"}:
        lines.append("  Clear a failure or loop stop (a new prompt clears it too):")
        lines.extend(command_lines(commands["clear"]))
    if "daily" in wires_hit:
        source = status["daily_cap_source"]
        where = {
            "environment": "raise RUNAWAY_GUARD_DAILY_USD where the host is started",
            "project": "the project's .runaway-guard.json sets it; raise it there",
        }.get(source, "raise daily_usd in " + config.user_config_path())
        lines.extend(wrap(f"The daily cap spans every session: {where}.", "  "))
    lines.append("  Turn the guard off for this session only:")
    lines.extend(command_lines(commands["off"]))
    if status["host"] == "claude":
        lines.extend(
            wrap("If you ask the agent to run one of these, Claude Code asks you first.", "  ")
        )
    else:
        lines.extend(
            wrap("Codex cannot ask: the guard refuses these when the agent runs them.", "  ")
        )
    lines.append("")
    return lines


def _forecast_lines(status):
    fc = status["forecast"]
    if fc["usd_per_hour"] is None:
        return [f"Forecast: {fc['note']}."]
    rate = f"{money(fc['usd_per_hour'])}/hour ({fc['basis']})"
    if fc["reached_in_s"] is None:
        return wrap(f"Forecast: {rate}; {fc['note']}.", "")
    if fc["reached_in_s"] == 0:
        return wrap(f"Forecast: {rate}; the {fc['cap']} cap is already reached.", "")
    at = time.strftime("%H:%M", time.localtime(fc["reached_at"]))
    return wrap(
        f"Forecast: {rate}; at that rate the {fc['cap']} cap is reached in about "
        f"{_duration(fc['reached_in_s'])} (around {at}).",
        "",
    )


# -- today


def today_rows(state_dir, environ=os.environ, now=None):
    """Every session with spend today, both hosts: the `--today` table's rows."""
    now = time.time() if now is None else now
    day = time.strftime("%Y-%m-%d", time.localtime(now))
    shares = ledger.read_json(ledger.daily_path(state_dir, day)) or {}
    rows = []
    for key, pusd in shares.items():
        if not isinstance(pusd, int) or ":" not in key:
            continue
        host, session_id = key.split(":", 1)
        _, base = ledger.session_paths(state_dir, host, session_id)
        state = ledger.read_json(base + ".json") or {}
        spend = state.get("spend") if isinstance(state.get("spend"), dict) else {}
        raised = state.get("cap_usd")
        cap = raised if isinstance(raised, (int, float)) else None
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
                "today_usd": usd(pusd),
                "spend_usd": total,
                "cap_usd": cap or None,
                "state": condition,
                "last_seen": state.get("seen"),
            }
        )
    rows.sort(key=lambda row: -(row["last_seen"] or 0))
    settings = config.load(os.getcwd(), environ)
    return {
        "day": day,
        "daily_spend_usd": usd(sum(v for v in shares.values() if isinstance(v, int))),
        "daily_cap_usd": settings.daily_usd or None,
        "sessions": rows,
    }


def render_today(today):
    cap = today["daily_cap_usd"]
    count = len(today["sessions"])
    head = f"Today ({today['day']}): {money(today['daily_spend_usd'])} across {count} session"
    head += "s" if count != 1 else ""
    head += f", daily cap {money(cap)}" if cap else ", no daily cap"
    out = [head, ""]
    if not today["sessions"]:
        out.append("No session has spent anything today.")
        return "\n".join(out) + "\n"
    out.append(
        f"{'host':<7}{'session':<10}{'project':<17}{'today':>10}{'total':>10}{'cap':>9}"
        f"  {'state':<10}{'last':>5}"
    )
    for row in today["sessions"]:
        project = os.path.basename((row["cwd"] or "").rstrip("/")) or "?"
        last = (
            time.strftime("%H:%M", time.localtime(row["last_seen"]))
            if isinstance(row["last_seen"], (int, float))
            else "-"
        )
        cap_text = money(row["cap_usd"]) if row["cap_usd"] else "none"
        out.append(
            f"{row['host']:<7}{_short(row['session_id'], 8):<10}{_short(project, 16):<17}"
            f"{money(row['today_usd']):>10}{money(row['spend_usd']):>10}{cap_text:>9}"
            f"  {_short(row['state'], 10):<10}{last:>5}"
        )
    out.append("")
    out.append(f"Details of one: {status_command()} --session <session>")
    return "\n".join(out) + "\n"


# -- the person's controls


def control(state_dir, status_state, action, value=None):
    """Apply one control to a session under its lock; (exit code, message)."""
    host, session_id = status_state.get("host"), status_state["session_id"]
    command = f"{status_command()} --session {shlex.quote(session_id)}"
    with ledger.Ledger(state_dir, host, session_id) as book:
        # Nothing in here may raise: the Ledger drops a state whose update failed.
        state = book.state
        spent = usd(state["spend"]["total"])
        if action == "raise-cap":
            if value <= spent:
                return 2, (
                    f"Not changed: a cap of {money(value)} is not above what this session has "
                    f"already spent ({money(spent)}). Give a higher cap, for example:\n"
                    f"  {command} --raise-cap {_suggest_cap(value, spent)}"
                )
            old = state.get("cap_usd")
            state["cap_usd"] = float(value)
            blocked = state.get("blocked")
            if isinstance(blocked, dict) and blocked.get("wire") == "session":
                state["blocked"] = None
            before = f" (was {money(old)})" if isinstance(old, (int, float)) else ""
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
            cap = state.get("cap_usd")
            if cap is None:
                cap = config.load(state.get("cwd") or None).max_usd
            if cap and spent >= cap:
                message += (
                    f"\nThe spend cap still holds ({money(spent)} of {money(cap)}); "
                    f"to go past it: {command} --raise-cap {_suggest_cap(cap, spent)}"
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


def to_json(value):
    return json.dumps(value, indent=2, sort_keys=False)
