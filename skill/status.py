#!/usr/bin/env python3
"""Where a runaway-guard session stands, and the person's controls over it.

    python3 status.py [--session ID] [--json]      the session's spend, caps, wires, forecast
    python3 status.py --today [--json]             every session of today, by project
    python3 status.py --month [YYYY-MM] [--json]   a month's spend by project and branch
    python3 status.py [--session ID] --raise-cap USD | --clear | --off | --on
    python3 status.py --team-sync [--json]         publish this machine's spend to the team now
    python3 status.py --statusline                 one line for a host's status line (stdin JSON)

Without --session: the session the guard saw last in this project (else anywhere). The logic is
in runaway_guard/ (sessions, report, render, control_actions); this file parses arguments
and prints.
Exit 0, or 2 for bad usage or an unknown session; --team-sync exits 1 when a server failed.
"""

import os
import sys


def _parser():
    import argparse  # not for --statusline, which runs as often as the hook

    parser = argparse.ArgumentParser(
        prog="status.py",
        description="Where a runaway-guard session stands: spend, caps, failures, loops.",
    )
    parser.add_argument("--session", metavar="ID", help="a session id, host:id, or its start")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    actions = parser.add_mutually_exclusive_group()
    actions.add_argument("--today", action="store_true", help="today's sessions, by project")
    actions.add_argument(
        "--month",
        nargs="?",
        const="",
        metavar="YYYY-MM",
        help="a month's spend by project and branch (this month without YYYY-MM)",
    )
    actions.add_argument("--raise-cap", metavar="USD", help="set this session's cap (USD)")
    actions.add_argument("--clear", action="store_true", help="clear failure and loop stops")
    actions.add_argument("--off", action="store_true", help="turn the guard off for the session")
    actions.add_argument("--on", action="store_true", help="turn it back on")
    actions.add_argument(
        "--statusline",
        action="store_true",
        help="one short line for a host's status line, from its JSON on stdin",
    )
    actions.add_argument(
        "--team-sync",
        action="store_true",
        help="publish this machine's spend to the team's Pushgateway and read the team's now "
        "(waits for it: CI's last step)",
    )
    return parser


def _amount(text, highest):
    """The USD in text when above 0 and at most highest, else None (NaN compares false)."""
    try:
        value = float(text.strip().lstrip("$").replace(",", ""))
    except ValueError:
        return None
    return value if 0 < value <= highest else None


def main(argv=None):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    if (sys.argv[1:] if argv is None else argv) == ["--statusline"]:
        return _statusline()
    from runaway_guard import config, control_actions, render, report, sessions
    from runaway_guard.money import MAX_USD

    args = _parser().parse_args(argv)  # exits 2 on bad usage
    settings = config.load(os.getcwd())
    state_dir = settings.state_dir
    if args.statusline:
        return _statusline()
    if args.team_sync:
        return _team_sync(settings, args.json)
    try:
        if args.today:
            today = report.today_rows(state_dir)
            print(report.to_json(today) if args.json else render.render_today(today), end="")
            if args.json:
                print()
            return 0
        if args.month is not None:
            return _month(state_dir, args.month, args.json)
        path, state = sessions.find_session(state_dir, args.session, os.getcwd())
        action = None
        value = None
        if args.raise_cap is not None:
            value = _amount(args.raise_cap, MAX_USD)
            if value is None:
                raise sessions.StatusError(
                    f"--raise-cap needs an amount in USD above 0 and at most {MAX_USD:,}, "
                    f"like 40 (got {args.raise_cap[:40]!r})"
                )
            action = "raise-cap"
        elif args.clear:
            action = "clear"
        elif args.off:
            action = "off"
        elif args.on:
            action = "on"
        if action:
            code, message = control_actions.apply(state_dir, state, action=action, value=value)
            print(message, file=sys.stderr if code else sys.stdout)
            return code
        try:
            state = sessions.refresh(state_dir, state["host"], state["session_id"])
        except Exception as error:  # a status shows what the state holds, even unrefreshed
            print(
                f"status.py: could not read the newest transcript lines ({error})", file=sys.stderr
            )
        status = report.build(path, state, state_dir)
        if args.json:
            print(report.to_json(status))
        else:
            print(render.render(status), end="")
        _note_missing_hook()
        return 0
    except sessions.StatusError as error:
        print(f"status.py: {error}", file=sys.stderr)
        return 2


def _month(state_dir, month, as_json):
    import time

    from runaway_guard import project_report, render, report

    if not month:
        month = time.strftime("%Y-%m")
    elif not (len(month) == 7 and month[4] == "-" and month.replace("-", "", 1).isdigit()):
        print(
            f"status.py: --month needs a month like 2026-12 (got {month[:40]!r})", file=sys.stderr
        )
        return 2
    rows = project_report.month_rows(state_dir, month)
    print(
        report.to_json(rows) if as_json else render.render_month(rows), end="\n" if as_json else ""
    )
    return 0


def _statusline():
    from runaway_guard import load

    load("runaway_guard.statusline").main()  # from its bundle, as the hook's modules; exits 0


def _note_missing_hook():
    """The report is of a session another install recorded: say so when this skill's own host
    runs no hook (runaway_guard/setup_hint.py)."""
    from runaway_guard import setup_hint

    missing = setup_hint.advice(os.getcwd(), only_missing=True)
    if missing:
        print(
            f"status.py: the session above was recorded by another install. {missing}",
            file=sys.stderr,
        )


def _team_sync(settings, as_json):
    from runaway_guard import report
    from runaway_guard.money import money, usd
    from runaway_guard.team import refresher

    if not settings.team:
        problems = "; ".join(settings.problems) or "RUNAWAY_GUARD_TEAM is not set"
        print(f"status.py: no team is configured ({problems})", file=sys.stderr)
        return 2
    cache = refresher.sync(settings)
    if as_json:
        print(report.to_json(cache))
    else:
        known = cache.get("others_month") is not None
        team_usd = usd((cache["others_month"] or 0) + cache["mine_month"])
        person_usd = usd((cache["others_day"] or 0) + cache["mine_day"])
        print(
            f"team {settings.team} {cache['month']}: {money(team_usd) if known else 'unknown'}; "
            f"{settings.user} {cache['day']}: {money(person_usd) if known else 'unknown'}; "
            f"this machine ({cache['machine']}): {money(usd(cache['mine_month']))} this month"
        )
        if cache["error"]:
            print(f"status.py: {cache['error']}", file=sys.stderr)
    return 1 if cache["error"] else 0


if __name__ == "__main__":
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:  # `status.py --json | head`: the reader had enough
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 0
    sys.exit(code)
