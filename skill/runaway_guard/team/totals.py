"""This machine's figures: its id, and its month's and day's spend from the session states
and ledgers of its state dir."""

import time

from .. import fs, jsonio, state_file
from . import _int, _month_day, private_folder

ACTIVE_S = 86400.0  # sessions written this recently are listed in the cache (see figures())


def machine_id(state_dir):
    """This machine's id: random, made once in its state dir, never derived from the host."""
    path = fs.join(private_folder(state_dir), "machine")
    for _ in range(2):
        try:
            with open(path, encoding="ascii") as handle:
                value = handle.read().strip()
            if value and len(value) <= 32 and value.isascii() and value.isalnum():
                return value
            fs.remove(path)  # damaged: a new id (its old group is deleted at the next push)
        except (OSError, ValueError):
            pass
        try:
            fd = fs.open(path, fs.O_WRONLY | fs.O_CREAT | fs.O_EXCL, 0o600)
        except FileExistsError:
            continue  # another process made it first: read theirs
        try:
            state_file.write_all(fd, fs.urandom(6).hex().encode())
        finally:
            fs.close(fd)
    raise OSError(f"cannot make a machine id in {path}")


def machine_totals(state_dir, month, day, now):
    """(month, day, {host:session: [month, day]}) of every session in this state dir, in
    picodollars, from the session states (their ledger when a state is unreadable)."""
    local = time.localtime(now)
    month_start = time.mktime((local.tm_year, local.tm_mon, 1, 0, 0, 0, 0, 0, -1))
    month_total = day_total = 0
    sessions = {}
    root = fs.join(state_dir, "sessions")
    try:
        hosts = sorted(fs.listdir(root))
    except OSError:
        hosts = []
    for host in hosts:
        try:
            entries = list(fs.scandir(fs.join(root, host)))
        except OSError:
            continue
        stats = {}
        for entry in entries:
            try:
                stats[entry.name] = entry.stat().st_mtime
            except OSError:
                continue
        for name, mtime in stats.items():
            base, dot, kind = name.rpartition(".")
            if dot + kind not in (state_file.STATE, ".ledger") or mtime < month_start - 86400:
                continue  # written before the month began: none of its spend is this month's
            if kind == "ledger" and base + state_file.STATE in stats:
                continue
            path = fs.join(root, host, name)
            state = state_file.read_state(path) if kind != "ledger" else None
            spend = state.get("spend") if state else None
            if isinstance(spend, dict) and isinstance(spend.get("day"), dict):
                days = spend["day"]
                session_id = state.get("session_id")
            else:
                if kind != "ledger" and base + ".ledger" not in stats:
                    continue
                days, session_id = _ledger_days(fs.join(root, host, base + ".ledger")), None
            pair = _month_day(days, month, day)
            month_total += pair[0]
            day_total += pair[1]
            if isinstance(session_id, str) and mtime >= now - ACTIVE_S:
                sessions[f"{host}:{session_id}"] = list(pair)
    return month_total, day_total, sessions


def _ledger_days(path):
    """A session's spend per day from its append-only ledger: the last row of a key wins."""
    latest = {}
    try:
        with open(path, "rb") as handle:
            for line in handle:
                try:
                    entry = jsonio.loads(line)
                except ValueError:
                    continue
                if (
                    isinstance(entry, list)
                    and len(entry) == 6
                    and isinstance(entry[0], str)
                    and _int(entry[1]) is not None
                    and isinstance(entry[5], str)
                ):
                    latest[entry[0]] = (entry[5], entry[1])
    except OSError:
        return {}
    days = {}
    for name, picodollars in latest.values():
        days[name] = days.get(name, 0) + picodollars
    return days
