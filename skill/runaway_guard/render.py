"""The status report for people: 80 columns, bars, what stops the agent and how to go on."""

import os
import time

from . import config, controls, hosts
from .decisions import ASK, TWICE
from .money import money

WIDTH = 80


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
    host = hosts.load(status["host"]).LABEL if status["host"] in hosts.NAMES else status["host"]
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
    out.extend(_team_lines(status, now))
    out.extend(_project_lines(status))
    out.append("")

    out.extend(_table("By model", status["by_model"], spent))
    out.extend(_table("By agent", status["by_agent"], spent))
    if status["unpriced_models"]:
        out.extend(wrap("Not in the price table as written: " + _priced_as(status), "  "))
    out.extend(_plan_lines(status))
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
    if status.get("runs_twice"):
        out.append("")
        out.extend(wrap(TWICE, ""))
    if status["config_problems"]:
        out.append("")
        out.append("Configuration problems (the guard uses the other settings):")
        for problem in status["config_problems"]:
            out.extend(_bullet(problem))
    return "\n".join(out) + "\n"


def _team_lines(status, now):
    """The team's month and the person's day across machines, and how fresh they are."""
    team = status.get("team")
    if not team:
        return []
    lines = []
    for label, spent, cap, kind in (
        (f"Team {team['name']}, {team['month']}", "team_spend_usd", "team_cap_usd", "monthly"),
        (f"{team['user']} today, all machines", "person_spend_usd", "person_cap_usd", "daily"),
    ):
        spent, cap = status[spent], status[cap]
        if spent is None:
            lines.append(f"{label}: not known yet")
        elif cap:
            text = f"{label}: {money(spent)} of {money(cap)} {kind} cap"
            lines.append(f"{text}  {_bar(spent, cap, max(WIDTH - len(text) - 4, 10))}")
        else:
            lines.append(f"{label}: {money(spent)} (no {kind} cap)")
    refreshed = status["team_refreshed_at"]
    when = f"as of {_ago(refreshed, now)}" if refreshed else "never read yet"
    stale = status["team_stale_since"]
    if stale:
        clock = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stale))
        text = f"Team figures {when}, stale since {clock}: {team['error']}"
    else:
        text = f"Team figures {when} from {team['prometheus_url']}"
    lines.extend(wrap(text, "  "))
    if team["warning"]:
        lines.extend(wrap(team["warning"], "  "))
    return lines


def _project_lines(status):
    """The project's day, week and month against its caps, and the session's clocks."""
    out = []
    project = status.get("project")
    if project:
        where = project["path"] + (f" ({project['branch']})" if project["branch"] else "")
        out.append(_short(f"Project {where}", WIDTH))
        parts = []
        for period, cap_key in (("day", "daily"), ("week", "weekly"), ("month", "monthly")):
            cap = project[f"{cap_key}_cap_usd"]
            spent = money(project[f"{period}_usd"])
            parts.append(f"{period} {spent}" + (f" of {money(cap)}" if cap else ""))
        out.append("  " + ", ".join(parts))
    hours, minutes = status.get("session_hours"), status.get("autonomous_minutes")
    if hours is not None:
        limit_h, limit_m = status.get("max_session_hours"), status.get("max_autonomous_minutes")
        out.append(
            f"Session running {hours:.1f} h"
            + (f" of {limit_h:g} h" if limit_h else "")
            + f"; {minutes:.0f} min since your last prompt"
            + (f" of {limit_m:g} min" if limit_m else "")
        )
    return out


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
    team = status.get("team") or {}
    for wire, key in (("team", "raise_team_cap"), ("person", "raise_person_cap")):
        if wire in wires_hit and team:
            lines.extend(wrap(f"The {wire} cap spans every machine: {team[key]}.", "  "))
    lines.append("  Turn the guard off for this session only:")
    lines.extend(command_lines(commands["off"]))
    if status["host"] in hosts.NAMES:
        host = hosts.load(status["host"])
        if ASK in host.RUNGS:
            text = f"If you ask the agent to run one of these, {host.LABEL} asks you first."
        else:
            text = f"{host.LABEL} cannot ask: the guard refuses these when the agent runs them."
        lines.extend(wrap(text, "  "))
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


def render_month(month):
    """status.py --month: each project's spend in a month, by branch."""
    out = [
        f"{month['month']}: {money(month['spend_usd'])} across {len(month['projects'])} projects",
        "",
    ]
    if not month["projects"]:
        out.append("No project has spent anything this month.")
    for project in month["projects"]:
        out.append(_short(f"{project['path']}  {money(project['month_usd'])}", WIDTH))
        for name, amount in project["branches"].items():
            out.append(f"  {_short(name or '(no branch)', 60):<62}{money(amount):>12}")
    return "\n".join(out) + "\n"


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
        f"{'host':<9}{'session':<10}{'project':<15}{'today':>10}{'total':>10}{'cap':>9}"
        f"  {'state':<10}{'last':>5}"
    )
    shown = None
    for row in today["sessions"]:
        if row["project"] != shown:
            shown = row["project"]
            total = money(today["by_project"][shown])
            out.append(_short(f"{shown or 'no project'}: {total} today", WIDTH))
        project = os.path.basename((row["cwd"] or "").rstrip("/")) or "?"
        last = (
            time.strftime("%H:%M", time.localtime(row["last_seen"]))
            if isinstance(row["last_seen"], (int, float))
            else "-"
        )
        cap_text = money(row["cap_usd"]) if row["cap_usd"] else "none"
        out.append(
            f"{row['host']:<9}{_short(row['session_id'], 8):<10}{_short(project, 14):<15}"
            f"{money(row['today_usd']):>10}{money(row['spend_usd']):>10}{cap_text:>9}"
            f"  {_short(row['state'], 10):<10}{last:>5}"
        )
    out.append("")
    out.append(f"Details of one: {controls.status_command()} --session <session>")
    return "\n".join(out) + "\n"


def _priced_as(status):
    """Each unpriced model and what it was priced as: a listed model, or its family's ceiling."""
    said = []
    for model in status["unpriced_models"]:
        priced_as = status.get("priced_as", {}).get(model, "ceiling")
        if priced_as == "ceiling":
            said.append(f"{model} (priced at its family's dearest rates)")
        else:
            said.append(f"{model} (priced as {priced_as})")
    return ", ".join(said)


def _plan_lines(status):
    """On a plan: the dollar caps do not apply, the figure is the API's; and each usage window
    the host recorded, with the share used."""
    lines = []
    if status.get("plan"):
        lines.extend(
            wrap(
                "On a plan: no money is paid per token, the dollar caps do not apply; "
                f"{money(status['spend_usd'])} is what the same tokens cost on the API.",
                "  ",
            )
        )
    windows = status.get("plan_windows") or {}
    for window in windows.get("windows") or ():
        minutes = window["window_minutes"]
        span = f"{minutes // 60} h" if minutes and minutes % 60 == 0 else f"{minutes} min"
        plan = windows.get("plan_type") or "plan"
        line = f"  {plan} {window['window']} window ({span}): {window['used_share']:.0%} used"
        if windows.get("max_window_share"):
            line += f", cap {windows['max_window_share']:.0%}"
        lines.append(line)
    return lines
