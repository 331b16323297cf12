"""The guard's own log: its errors go here, never into a blocked call."""

import os
import time

LOG_NAME = "hook.log"
MAX_BYTES = 1 << 20


def append(state_dir, kind, text):
    """Append one line to hook.log; a log that cannot be written is silently skipped."""
    try:
        os.makedirs(state_dir, mode=0o700, exist_ok=True)
        path = os.path.join(state_dir, LOG_NAME)
        try:
            if os.path.getsize(path) > MAX_BYTES:
                os.replace(path, path + ".1")
        except OSError:
            pass
        line = f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {kind} {' '.join(str(text).split())[:2000]}\n"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(fd, line.encode("utf-8", "replace"))
        finally:
            os.close(fd)
    except Exception:
        pass
