"""The host process a hook runs under, for ending a run out of band (a host's end_run).

Imported only when a stop is made: nothing here is on the path of an ordinary call. Linux reads
/proc; macOS and the BSDs ask `ps`; Windows is never signalled (unsupported() says why), so
there a stop is the refusal alone, with its `stop` line in hook.log.
"""

import sys

from .. import fs


def unsupported():
    """Why no run can be ended from outside on this system, or None where it can."""
    if sys.platform == "win32":
        return "Windows has no Ctrl-C for another process (os.kill would terminate it)"
    return None


def nearest(names, limit=16):
    """(pid, argv) of the nearest ancestor of this process whose program is one of names (the
    base name of argv[0]: a host's native binary, not the `node` shim around it), or None."""
    pid = fs.getppid()
    for _ in range(limit):
        if pid <= 1:
            return None
        found = process(pid)
        if found is None:
            return None
        parent, argv = found
        if argv and fs.basename(argv[0]) in names:
            return pid, argv
        pid = parent
    return None


def process(pid):
    """(parent pid, argv) of a process: /proc on Linux, `ps` elsewhere; None if unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            argv = handle.read().decode("utf-8", "replace").split("\0")
        return int(stat[stat.rindex(b")") + 2 :].split()[1]), [a for a in argv if a]
    except (OSError, ValueError, IndexError):
        if fs.isdir("/proc/self"):
            return None
    return from_ps(pid)


def from_ps(pid):
    """(parent pid, argv) as `ps` shows it (macOS, BSD): argv[0] is the program's path
    (`comm`, whole even with spaces in it), the rest the arguments `args` shows after it, split
    at spaces (ps cannot tell them apart: enough to name a subcommand)."""
    # one -o each: BSD's ps takes `=` (an empty header) only on a list's last keyword
    head = output(["ps", "-ww", "-o", "ppid=", "-o", "comm=", "-p", str(pid)]).strip()
    parent, _, program = head.partition(" ")
    program = program.strip()
    if not parent.isdigit() or not program:
        return None
    line = output(["ps", "-ww", "-o", "args=", "-p", str(pid)]).strip()
    # after the program's path, or after the first word when it was started under another name
    cut = len(program) if line.startswith(program) else len(line.split(" ", 1)[0])
    return int(parent), [program, *line[cut:].split()]


def holds(pid, path):
    """Whether the process has path open (Linux; False where that cannot be seen)."""
    folder = f"/proc/{pid}/fd"
    try:
        names = fs.listdir(folder)
    except OSError:
        return False
    for name in names:
        try:
            if fs.readlink(fs.join(folder, name)) == path:
                return True
        except OSError:
            continue
    return False


def terminal(pid):
    """The terminal device a process reads from ('/dev/pts/3'), or ''."""
    try:
        return fs.readlink(f"/proc/{pid}/fd/0")
    except OSError:
        name = output(["ps", "-o", "tty=", "-p", str(pid)]).strip()
        return f"/dev/{name}" if name and name not in ("?", "??") else ""


def output(argv, environ=None):
    """What a short command printed, or '' (it failed, is missing or took too long)."""
    import subprocess

    try:
        done = subprocess.run(
            argv,
            env=dict(environ) if environ is not None else None,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            timeout=3,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.decode("utf-8", "replace") if done.returncode == 0 else ""
