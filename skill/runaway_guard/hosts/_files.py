"""What every host's session-file reader shares.

A reader finds the session's files (main thread and subagents), reads what was appended since
the last call, and reports priced responses and tool outcomes to the book. Only lines that can
matter are parsed: a cheap byte test comes before any JSON decoding.
"""

import os
import stat
import time

from .. import tail

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


def read_file(book, path, entry, on_line):
    """Read what path gained since entry's cursor; a rewritten file is re-read whole. Notes on
    the book when a line holds the call being judged (book.watch)."""
    watch = book.watch
    if watch and not book.watched:
        handle = on_line

        def on_line(raw):
            if watch in raw:
                book.watched = True
            handle(raw)

    tail.read_new(path, entry, on_line, book.load_known)


def read_all(book, main, reader):
    """Read every file the book follows for this session, the main file last (its records may
    total the others); reader(entry) gives the line handler for one file.

    A main file not written yet is read next call. A subagent file that vanished is dropped
    (what it held stays counted); one that cannot be read (not a regular file, no permission)
    is tried again next call while the others still count. Any other error of the main file
    propagates: the caller fails open.
    """
    files = book.state["files"]
    paths = [path for path, entry in files.items() if path != main and not entry.get("foreign")]
    if main in files:
        paths.append(main)
    for path in paths:
        entry = files[path]
        try:
            read_file(book, path, entry, reader(entry))
        except FileNotFoundError:
            if path != main:
                del files[path]
        except OSError:
            if path == main:
                raise


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
