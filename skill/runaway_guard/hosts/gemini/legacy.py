"""The session file of Gemini CLI versions before about 0.35: one whole `session-*.json`,
rewritten on every change. Only such a session imports this module."""

from ... import fs, jsonio, tail
from ...calls import ignore
from .chats import _Reader

# A legacy session file larger than this is not read (decoding it whole would outlast the
# hook's timeout): its spend is not counted, and the other wires still work.
LEGACY_MAX = 64 << 20


def _read_whole(book, path, finished):
    """A legacy session-*.json: read again whole whenever it changed (it is rewritten whole)."""
    legacy = book.state.setdefault("legacy", {})
    try:
        info = fs.stat(path)
    except OSError:
        return
    if not tail.regular(info.st_mode) or info.st_size > LEGACY_MAX:
        # a folder, a FIFO (reading it would block until the host's timeout), too large
        ignore("a session file that is not a regular file, or is past 64 MiB")
        return
    stamp = [info.st_ino, info.st_size, info.st_mtime_ns]
    entry = legacy.setdefault(path, {"agent": "main"})
    if entry.get("stamp") == stamp:
        return
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return
    try:
        record = jsonio.loads(data)
    except ValueError:
        return  # caught mid-write: read next call
    entry["stamp"] = stamp
    messages = record.get("messages") if isinstance(record, dict) else None
    if isinstance(messages, list):
        book.load_known()
        reader = _Reader(book, entry, finished)
        for message in messages:
            if isinstance(message, dict):
                reader.message(message)
