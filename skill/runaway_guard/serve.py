"""The guard as one process that answers its host's calls in turn (`guard.py --serve`).

A plugin that lives inside its host (OpenCode's) keeps one guard running instead of starting an
interpreter for every call: a steady call then costs its own work, not the interpreter's start
and the imports (bench/README.md). Each line in is one hook payload, each line out its answer
(an empty line for none), in order: the answer the hook process (hook.main) would print for it.
The process ends at the end of its input, and before answering a call when the skill's files
changed since it started (an upgrade): the caller starts the new version and asks it again.
A served host's answers end its run by themselves (the plugin throws): no out-of-band end_run.
"""

import sys
import time

from . import fs, hook

# How often the skill's files are looked at for an upgrade: a stat of each costs 0.1 ms, and
# a model that answers at once calls every few ms.
STAMP_EVERY_S = 1.0
_PACKAGE = __file__[: max(__file__.rfind("/"), __file__.rfind("\\")) + 1]


def main():
    try:
        import _signal  # not `signal`, which imports enum

        _signal.signal(_signal.SIGINT, _signal.SIG_IGN)  # Ctrl-C is the host's; EOF ends this
    except BaseException:
        pass
    started, stamped = _stamp(), time.monotonic()
    read, out = sys.stdin.buffer.readline, sys.stdout.buffer
    while True:
        try:
            data = read(hook.MAX_INPUT + 1)
        except BaseException:
            break
        if not data:
            break
        _reap()
        if not data.endswith(b"\n") and len(data) > hook.MAX_INPUT:
            _skip_line(read)  # hook.run refuses it as too large, and fails open
        if not 0 <= time.monotonic() - stamped < STAMP_EVERY_S:
            if _stamp() != started:
                break  # a new version installed: this call goes to it
            stamped = time.monotonic()
        answer, answered = hook.respond(lambda line=data: line)
        try:
            out.write(answer.encode("utf-8", "replace") + b"\n")
            out.flush()
        except BaseException:
            break
        if answered:  # what the call starts once its answer is out (a notification's sender)
            hook.finish()
    fs._exit(0)


def _reap():
    """Collect the processes a call started and never waits for (the team's refresh) once they
    ended: a hook process leaves them to init by exiting, this one does not exit."""
    try:
        from posix import WNOHANG, waitpid
    except ImportError:  # Windows keeps no zombies
        return
    try:
        while waitpid(-1, WNOHANG)[0]:
            pass
    except OSError:  # no child left
        pass


def _skip_line(read):
    while True:
        rest = read(1 << 20)
        if not rest or rest.endswith(b"\n"):
            return


def _stamp():
    """Each file of the skill's package, as (name, inode, mtime, size): any change is a new
    install."""
    found = []
    for folder in (_PACKAGE, _PACKAGE + "hosts" + _PACKAGE[-1]):
        try:
            with fs.scandir(folder) as entries:
                for entry in entries:
                    if entry.name.endswith((".py", ".json", ".js")):
                        info = entry.stat()
                        found.append((entry.name, info.st_ino, info.st_mtime_ns, info.st_size))
        except OSError:
            pass
    found.sort()
    return found
