"""Incremental reading of append-only JSONL files: only the bytes added since the last call.

Every tool call pays for the guard, so a session's transcript is read once, a little at a time.
A cursor remembers the offset of the first byte not yet consumed, the file's inode and size.
A partial last line is left for the next call; a file that shrank or was replaced (Claude Code
rewrites large transcripts after compaction) is read again from the start, and the ledger's
message keys keep that from counting anything twice.

The bytes go into one buffer that is reused, sized to what there is to read (at most BLOCK):
a fresh 4 MiB object a read costs a page fault per 4 KiB, which made reading a large session
from the page cache 3-6 times slower than reading into memory already mapped, and a call that
reads a few appended lines must not pay for zeroing 4 MiB either.
"""

from . import fs

BLOCK = 1 << 22  # 4 MiB a read keeps memory flat whatever the file's size.
MAX_LINE = 1 << 23  # A longer line cannot be a record worth the memory; it is skipped.
_REGULAR, _FORMAT = 0o100000, 0o170000  # stat.S_IFREG and S_IFMT, without importing stat


def regular(mode):
    """stat.S_ISREG(mode), without importing stat."""
    return mode & _FORMAT == _REGULAR


_buffer = []  # the reused read buffer, made on first use and grown as needed


def _block(size):
    """A buffer of min(size, BLOCK) bytes or more (4 KiB at least), reused call to call."""
    size = min(max(size, 1 << 12), BLOCK)
    if not _buffer or len(_buffer[0]) < size:
        _buffer[:] = [bytearray(size)]
    return _buffer[0]


def _read_into(fd, buffer):
    if hasattr(fs, "readv"):
        return fs.readv(fd, [buffer])
    data = fs.read(fd, len(buffer))  # pragma: no cover - Windows
    buffer[: len(data)] = data
    return len(data)


def split_lines(on_line):
    """A block handler for a per-line handler: on_line(raw) for each non-empty line (bytes)."""

    def lines(data, start, stop):
        with memoryview(data) as view:
            chunk = bytes(view[start:stop])
        for line in chunk.split(b"\n"):
            if line:
                on_line(line)

    return lines


def read_new(path, cursor, on_line, on_restart):
    """Feed each new complete line of path to on_line, updating cursor.

    on_line is called with each non-empty line (bytes), or, when it has a `lines` attribute,
    that is called instead with (data, start, stop) for runs of complete lines: data[start:stop]
    is whole lines, each ending in a newline; data may be a reused buffer, so a handler copies
    what it keeps. cursor is a dict with keys off, ino, skip (a line longer than MAX_LINE is
    being skipped). on_restart() runs before the first line when the file is read again from the
    start. Raises OSError when the path cannot be read or is not a regular file.
    """
    info = fs.stat(path)
    if not regular(info.st_mode):
        raise OSError(f"not a regular file: {path}")
    offset = cursor.get("off", 0)
    if cursor.get("ino") != info.st_ino or info.st_size < offset:
        if offset > 0:
            on_restart()
        offset = 0
        cursor.pop("skip", None)
    cursor["ino"] = info.st_ino
    if info.st_size == offset:
        cursor["off"] = offset
        return
    lines = getattr(on_line, "lines", None) or split_lines(on_line)
    fd = fs.open(path, fs.O_RDONLY | fs.O_NONBLOCK)
    try:
        fs.lseek(fd, offset, fs.SEEK_SET)
        buffer = _block(info.st_size - offset + 1)
        view = memoryview(buffer)
        position = offset  # the file offset of buffer[0] on the next read
        pending = b""  # the start of a line whose end is not read yet (offset is its start)
        skipping = cursor.get("skip", False)
        try:
            while True:
                size = _read_into(fd, buffer)
                if size <= 0:
                    break
                start = 0
                if skipping:
                    newline = buffer.find(b"\n", 0, size)
                    if newline < 0:
                        position += size
                        offset = position
                        continue
                    start = newline + 1
                    offset = position + start
                    skipping = False
                last = buffer.rfind(b"\n", start, size)
                if last < 0:
                    pending += view[start:size]
                else:
                    if pending:
                        first = buffer.find(b"\n", start, size) + 1
                        pending += view[start:first]
                        lines(pending, 0, len(pending))
                        start = first
                        pending = b""
                    if start <= last:
                        lines(buffer, start, last + 1)
                    offset = position + last + 1
                    pending = bytes(view[last + 1 : size])
                position += size
                if len(pending) > MAX_LINE:
                    offset = position
                    pending = b""
                    skipping = True
        finally:
            view.release()
        cursor["off"] = offset
        if skipping:
            cursor["skip"] = True
        else:
            cursor.pop("skip", None)
    finally:
        fs.close(fd)
