"""Incremental reading of append-only JSONL files: only the bytes added since the last call.

Every tool call pays for the guard, so a session's transcript is read once, a little at a time.
A cursor remembers the offset of the first byte not yet consumed, the file's inode and size.
A partial last line is left for the next call; a file that shrank or was replaced (Claude Code
rewrites large transcripts after compaction) is read again from the start, and the ledger's
message keys keep that from counting anything twice.
"""

import os
import stat

BLOCK = 1 << 22  # 4 MiB a read keeps memory flat whatever the file's size.
MAX_LINE = 1 << 23  # A longer line cannot be a record worth the memory; it is skipped.


def read_new(path, cursor, on_line, on_restart):
    """Feed each new complete line of path to on_line, updating cursor.

    cursor is a dict with keys off, ino, skip (a line longer than MAX_LINE is being skipped).
    on_restart() runs before the first line when the file is read again from the start.
    Raises OSError when the path cannot be read or is not a regular file.
    """
    info = os.stat(path)
    if not stat.S_ISREG(info.st_mode):
        raise OSError(f"not a regular file: {path}")
    offset = cursor.get("off", 0)
    if cursor.get("ino") != info.st_ino or info.st_size < offset:
        if offset > 0:
            on_restart()
        offset = 0
        cursor["skip"] = False
    cursor["ino"] = info.st_ino
    if info.st_size == offset:
        cursor["off"] = offset
        return
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        os.lseek(fd, offset, os.SEEK_SET)
        pending = b""
        skipping = cursor.get("skip", False)
        while True:
            block = os.read(fd, BLOCK)
            if not block:
                break
            if skipping:
                newline = block.find(b"\n")
                if newline < 0:
                    offset += len(block)
                    continue
                offset += newline + 1
                block = block[newline + 1 :]
                skipping = False
            data = pending + block if pending else block
            end = data.rfind(b"\n")
            if end < 0:
                pending = data
            else:
                for line in data[:end].split(b"\n"):
                    if line:
                        on_line(line)
                offset += end + 1
                pending = data[end + 1 :]
            if len(pending) > MAX_LINE:
                offset += len(pending)
                pending = b""
                skipping = True
        cursor["off"] = offset
        cursor["skip"] = skipping
    finally:
        os.close(fd)
