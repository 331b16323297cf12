"""Transcript readers: each host's session files, read incrementally, fed into the ledger.

Both readers share one shape: find the session's files (main thread and subagents), read what
was appended since the last call, and report priced responses and tool outcomes to the ledger.
Only lines that can matter are parsed: a cheap byte test comes before any JSON decoding.
"""

import os
import stat
import time
import zlib

from .. import jsonio, tail

# Every reason the guard gives starts with this: its refusals are recognised in any transcript.
GUARD_MARK = "runaway-guard:"

_day_cache = {}


def local_day(timestamp):
    """The local calendar day of an ISO-8601 UTC timestamp ('' when unreadable)."""
    if not isinstance(timestamp, str) or len(timestamp) < 13:
        return time.strftime("%Y-%m-%d")
    hour = timestamp[:13]
    day = _day_cache.get(hour)
    if day is None:
        try:
            year, month, mday = int(hour[0:4]), int(hour[5:7]), int(hour[8:10])
            epoch = _days_from_civil(year, month, mday) * 86400 + int(hour[11:13]) * 3600
            day = time.strftime("%Y-%m-%d", time.localtime(epoch))
        except (ValueError, OverflowError, OSError):
            day = time.strftime("%Y-%m-%d")
        _day_cache[hour] = day
    return day


def _days_from_civil(year, month, day):
    """Days since 1970-01-01 of a proleptic Gregorian date (avoids importing datetime)."""
    year -= month <= 2
    era = year // 400
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def fingerprint(value):
    """A short stable hash of any JSON value: the guard keeps hashes, never transcript text."""
    if not isinstance(value, (bytes, str)):
        value = jsonio.dumps(value, sort_keys=True)
    if isinstance(value, str):
        value = value.encode("utf-8", "replace")
    return f"{zlib.crc32(value):08x}{zlib.adler32(value):08x}"


def read_file(ledger, path, entry, on_line):
    """Read what path gained since entry's cursor; a rewritten file is re-read whole."""
    tail.read_new(path, entry, on_line, ledger.load_known)


def first_line(path, limit=1 << 20):
    """The first line of a regular file, at most limit bytes; OSError for anything else.

    Opened non-blocking and checked before reading: a FIFO among the session's files would
    otherwise block the guard until the host's timeout kills it.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"not a regular file: {path}")
        data = b""
        while len(data) < limit and b"\n" not in data:
            block = os.read(fd, min(1 << 16, limit - len(data)))
            if not block:
                break
            data += block
    finally:
        os.close(fd)
    end = data.find(b"\n")
    return data if end < 0 else data[: end + 1]


def number(value):
    """A token count from outside data: a non-negative int, else 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return 0
    if value < 0 or value == float("inf"):
        return 0
    return int(value)
