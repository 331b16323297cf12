"""What the guard says about itself: `guard.py --self-check`, and the `dead` line in hook.log of
a guard that cannot load.

A guard whose own modules fail to load still exits 0 and prints nothing (a broken guard must not
block the person's calls), so without this nobody would know it is off. This module sits beside
guard.py, outside the package, so that it runs when the package itself cannot be imported;
guard.py and the package's main() call failed() from their except branches. Its top needs only
what the interpreter has loaded before any code runs (sys, time, posix); the self-check imports
the package inside its functions.
"""

import sys
import time

SKILL = __file__[: max(__file__.rfind("/"), __file__.rfind("\\")) + 1]  # guard.py's folder
LOG_NAME = "hook.log"
MAX_LOG_BYTES = 1 << 20  # then hook.log becomes hook.log.1, as log.py does
# Where each host keeps the skill (INSTALL's home folders and project folders), to name the
# host in the line that says how to reinstall.
HOST_FOLDERS = {
    ".claude": "claude",
    ".codex": "codex",
    ".agents": "codex",
    ".gemini": "gemini",
    "opencode": "opencode",
    ".opencode": "opencode",
    ".copilot": "copilot",
    ".github": "copilot",
    ".qwen": "qwen",
    ".cursor": "cursor",
}
# The self-check: identical calls until the loop wire refuses (5 repeats by default).
CALLS = 10
SESSION = "runaway-guard-self-check"
COMMAND = {"command": "echo runaway-guard self-check"}


def failed():
    """The guard cannot load (called while the error is handled). With --self-check: say what is
    broken, exit 1. A hook call fails open: nothing printed, exit 0, one `dead` line in
    hook.log. Never raises."""
    error = sys.exc_info()[1]
    if sys.argv[1:2] == ["--self-check"]:
        _broken(f"the runaway_guard package cannot be imported: {_where(error)}")
    if not isinstance(error, Exception):  # interrupted (KeyboardInterrupt), not dead
        sys.exit(0)
    try:
        _append(_state_dir(_environ()), _dead_line(error, time.strftime("%Y-%m-%dT%H:%M:%S")))
    except BaseException:
        pass
    sys.exit(0)


def _dead_line(error, now):
    text = f"{type(error).__name__}: {error}{_place(error)}. {_reinstall()}"
    return f"{now} dead {' '.join(text.split())[:2000]}\n"


def _reinstall():
    return (
        f"The guard at {SKILL}guard.py lets every call through; reinstall with: "
        f"python3 installer/install.py --host {guess_host(SKILL)}"
    )


def guess_host(folder):
    """The host whose folder holds the skill (the nearest one up the path), or 'all'."""
    names = folder.replace("\\", "/").split("/")
    return next((HOST_FOLDERS[name] for name in reversed(names) if name in HOST_FOLDERS), "all")


def _place(error):
    """' (in <file>, line N)': where in the skill the error was raised (a SyntaxError's
    message already names its file)."""
    if isinstance(error, SyntaxError):
        return ""
    trace, found = getattr(error, "__traceback__", None), ""
    while trace is not None:
        name = trace.tb_frame.f_code.co_filename
        if name.startswith(SKILL):
            found = f" (in {name[len(SKILL) :]}, line {trace.tb_lineno})"
        trace = trace.tb_next
    return found


def _where(error):
    """The traceback's last line, and where in the skill."""
    return f"{type(error).__name__}: {error}{_place(error)}"


def _environ():
    """The environment as text, from posix (os is not loaded, and need not be)."""
    try:
        from posix import environ
    except ImportError:  # Windows: text already
        from nt import environ

        return environ
    encoding = sys.getfilesystemencoding()
    return {
        key.decode(encoding, "surrogateescape"): value.decode(encoding, "surrogateescape")
        for key, value in environ.items()
    }


def _state_dir(environ):
    """config.py's state dir without its files: RUNAWAY_GUARD_STATE_DIR, else
    XDG_STATE_HOME/runaway-guard, else HOME/.local/state/runaway-guard (the user's config
    file's state_dir needs the JSON reader, which may be what is broken)."""
    if environ.get("RUNAWAY_GUARD_STATE_DIR"):
        return environ["RUNAWAY_GUARD_STATE_DIR"]
    if environ.get("XDG_STATE_HOME"):
        return environ["XDG_STATE_HOME"] + "/runaway-guard"
    return environ["HOME"] + "/.local/state/runaway-guard"


def _append(folder, line):
    """One line at the end of folder/hook.log: the folder made 0700, the file 0600, a link in
    the file's place not followed, a folder of another user's or writable by others left alone."""
    try:
        import posix as system
    except ImportError:  # Windows
        import nt as system
    _makedirs(system, folder)
    found = system.stat(folder)
    if hasattr(system, "getuid") and (found.st_uid != system.getuid() or found.st_mode & 0o022):
        return
    path = f"{folder}/{LOG_NAME}"
    try:
        if system.stat(path).st_size > MAX_LOG_BYTES:
            system.replace(path, path + ".1")
    except OSError:
        pass
    flags = system.O_WRONLY | system.O_CREAT | system.O_APPEND | getattr(system, "O_NOFOLLOW", 0)
    handle = system.open(path, flags, 0o600)
    try:
        system.write(handle, line.encode("utf-8", "replace"))
    finally:
        system.close(handle)


def _makedirs(system, folder):
    try:
        system.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    except FileNotFoundError:
        parent = folder.rstrip("/\\")
        parent = parent[: max(parent.rfind("/"), parent.rfind("\\"))]
        if not parent:
            raise
        _makedirs(system, parent)
        system.mkdir(folder, 0o700)


def _broken(what):
    print(f"runaway-guard is broken: {what}. {_reinstall()}", file=sys.stderr)
    sys.exit(1)


# --------------------------------------------------------------------------- --self-check


def main():
    """guard.py --self-check [--host NAME]: for the host named (else each host), identical tool
    calls through the real hook path (hook.run) in a temporary state dir, HOME and project,
    until the loop wire refuses; one line saying the guard works and exit 0, or what is broken
    and exit 1 (2: a wrong argument). The person's own state and settings are not read."""
    args = sys.argv[2:]
    if args and (len(args) != 2 or args[0] != "--host"):
        print("usage: guard.py --self-check [--host NAME]", file=sys.stderr)
        sys.exit(2)
    try:
        names = _refused(args[1:])
    except SelfCheckFailed as failure:
        _broken(str(failure))
    except Exception as error:  # a module loaded but is not what the hook needs
        _broken(f"the self-check failed: {_where(error)}")
    each = " each" if len(names) > 1 else ""
    limits = "".join(f"; on this system, {limit}" for limit in _system_limits())
    print(f"runaway-guard works: {', '.join(names)}{each} refused a repeated call{limits}")
    sys.stdout.flush()
    sys.exit(0)


def _system_limits():
    """What the guard does without here (references/operating-systems.md): it still refuses."""
    fs = _load("runaway_guard.fs")
    limits = []
    if fs.lockf is None:
        limits.append("no file locks: tool calls made at the same moment may lose an update")
    if sys.platform == "win32":
        limits.append("a stop is a refusal only: no host is interrupted on Windows")
    elif not fs.isdir("/proc/self"):
        limits.append("the host's process is found with ps (the rollout check needs /proc)")
    return limits


def _refused(wanted):
    """The hosts checked (those wanted, else all), each of which refused a repeated call."""
    _load("runaway_guard")
    hook, hosts = _load("runaway_guard.hook"), _load("runaway_guard.hosts")
    names = wanted or hosts.NAMES
    for name in names:
        if name not in hosts.NAMES:
            print(
                f"guard.py --self-check: no host {name!r} ({', '.join(hosts.NAMES)})",
                file=sys.stderr,
            )
            sys.exit(2)
        _load(f"runaway_guard.hosts.{name}")
    for name in names:
        try:
            _refusal(name, hook)
        except SelfCheckFailed:
            raise
        except Exception as error:
            raise SelfCheckFailed(f"a call through the hook raised {_where(error)}") from error
    return names


class SelfCheckFailed(Exception):
    """The hook ran but did not refuse as it should."""


def _load(name):
    """The package's module, as a hook call loads it (from its bundle); exit 1 if it cannot."""
    try:
        if name == "runaway_guard":
            import runaway_guard

            return runaway_guard
        return sys.modules["runaway_guard"].load(name)
    except Exception as error:
        _broken(f"{name} cannot be loaded: {_where(error)}")


def _refusal(name, hook):
    """Run identical calls of host `name`: the first must pass, a later one be refused."""
    import json
    import tempfile

    from runaway_guard import fs, hosts
    from runaway_guard.decisions import ASK, DENY, STOP

    host = hosts.load(name)
    render = host.render
    given = []
    saved = dict(fs.environ)  # a host reads some variables from fs.environ itself
    with tempfile.TemporaryDirectory(prefix="runaway-guard-self-check-") as root:
        environ = {
            "HOME": f"{root}/home",
            "XDG_CONFIG_HOME": f"{root}/config",
            "RUNAWAY_GUARD_STATE_DIR": f"{root}/state",
            "RUNAWAY_GUARD_INTERRUPT": "0",
        }
        project = f"{root}/project"
        fs.makedirs(project, 0o700)
        fs.environ.clear()
        fs.environ.update(environ)
        host.render = lambda decision: given.append(decision) or render(decision)
        try:
            for number in range(1, CALLS + 1):
                data = json.dumps(_payload(name, number, project)).encode()
                given.clear()
                answer = hook.run(data, environ)
                decision = given[-1] if given else None
                if decision and decision["kind"] in (DENY, ASK, STOP):
                    if number == 1:  # a guard that refuses everything blocks the person
                        raise SelfCheckFailed(f"{name}: the first call was refused: {answer}")
                    _check_answer(name, answer, render(decision), render(None))
                    return
        finally:
            host.render = render
            fs.environ.clear()
            fs.environ.update(saved)
    raise SelfCheckFailed(f"{name}: {CALLS} identical calls and none was refused")


def _check_answer(name, answer, expected, neutral):
    import json

    try:
        valid = isinstance(json.loads(answer), dict) and "\n" not in answer
    except ValueError:
        valid = False
    if not valid or answer != expected or answer == neutral:
        raise SelfCheckFailed(f"{name}: the refusal came out as {answer[:200]!r}")


def _payload(name, number, project):
    """A PreToolUse of host `name`'s shape: the same command each time, a new call id."""
    call = f"self-check-{number}"
    common = {"session_id": SESSION, "cwd": project, "tool_input": COMMAND}
    shapes = {
        "claude": {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": call},
        "codex": {
            "hook_event_name": "PreToolUse",
            "turn_id": SESSION,
            "tool_name": "Bash",
            "tool_use_id": call,
        },
        "gemini": {"hook_event_name": "BeforeTool", "tool_name": "run_shell_command"},
        "opencode": {
            "runaway_guard_plugin": "opencode",
            "hook_event_name": "tool.execute.before",
            "agent_session_id": SESSION,
            "call_id": call,
            "tool_name": "bash",
        },
        "copilot": {"sessionId": SESSION, "timestamp": number, "toolName": "bash"},
        "qwen": {
            "hook_event_name": "PreToolUse",
            "tool_name": "run_shell_command",
            "tool_use_id": call,
            "tool_call_id": call,
        },
        "cursor": {
            "hook_event_name": "preToolUse",
            "conversation_id": SESSION,
            "cursor_version": "self-check",
            "tool_name": "Shell",
            "tool_use_id": call,
        },
    }
    if name == "copilot":  # its own field names
        return {"cwd": project, "toolArgs": COMMAND, **shapes[name]}
    return {**common, **shapes[name]}
