"""The host process a hook runs under, for ending a run out of band (a host's end_run).

Imported only when a stop is made: nothing here is on the path of an ordinary call.
"""

from .. import fs


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
    fields = output(["ps", "-ww", "-o", "ppid=", "-o", "args=", "-p", str(pid)]).split()
    if len(fields) < 2 or not fields[0].isdigit():
        return None
    return int(fields[0]), fields[1:]


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
