"""The guard's own log: its errors go here, never into a blocked call."""

import time

from . import fs

LOG_NAME = "hook.log"
MAX_BYTES = 1 << 20


def append(state_dir, kind, text):
    """Append one line to hook.log; a log that cannot be written is silently skipped."""
    try:
        fs.makedirs(state_dir, 0o700)
        path = fs.join(state_dir, LOG_NAME)
        try:
            if fs.getsize(path) > MAX_BYTES:
                fs.replace(path, path + ".1")
        except OSError:
            pass
        line = f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {kind} {' '.join(str(text).split())[:2000]}\n"
        fd = fs.open(path, fs.O_WRONLY | fs.O_CREAT_NOFOLLOW | fs.O_APPEND, 0o600)
        try:
            fs.write(fd, line.encode("utf-8", "replace"))
        finally:
            fs.close(fd)
    except Exception:
        pass
