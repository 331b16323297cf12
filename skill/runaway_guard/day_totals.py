"""The day totals: each session's spend on a day in one small file per day, so that a daily
cap spans every session of every host without reading anyone else's transcripts."""

from . import fs, jsonio
from .state_file import STATE, Lock, private_dir, read_json, read_state, session_paths, write_atomic


def daily_path(state_dir, day):
    return fs.join(state_dir, "daily", f"{day}.json")


def day_shares(state_dir, day):
    """Each session's spend on day, for status: the day file lists the day's sessions, and a
    session's own state has its current figure (without a daily cap the hook updates its share
    in the day file only every so often: hook._daily_spend)."""
    shares = read_json(daily_path(state_dir, day)) or {}
    for key, picodollars in shares.items():
        if not isinstance(picodollars, int) or ":" not in key:
            continue
        state = read_state(session_paths(state_dir, *key.split(":", 1))[1] + STATE) or {}
        spend = state.get("spend")
        days = spend.get("day") if isinstance(spend, dict) else None
        current = days.get(day) if isinstance(days, dict) else None
        if isinstance(current, int) and current > picodollars:
            shares[key] = current
    return shares


def daily_spend(state_dir, day, session_key=None, session_picodollars=None, write=True):
    """All sessions' spend on day, in picodollars; first records this session's share if given
    (write=False: counts it without writing, for when the file cannot be written).

    One small file per day maps each session to its spend that day, so a daily cap spans every
    session of every host without reading anyone else's transcripts.
    """
    path = daily_path(state_dir, day)
    if session_key is None or not write:
        shares = read_json(path) or {}
        if session_key is not None:
            shares[session_key] = session_picodollars
    else:
        private_dir(fs.dirname(path))
        with Lock(path + ".lock"):
            shares = read_json(path) or {}
            if shares.get(session_key) != session_picodollars:
                shares[session_key] = session_picodollars
                write_atomic(path, jsonio.dumps(shares).encode())
    return day_total(shares)


def day_total(shares):
    """The sum of a day file's shares: whole picodollars above zero only (a share of another
    kind, or below zero, cannot lower the day's total)."""
    return sum(value for value in shares.values() if type(value) is int and value > 0)
