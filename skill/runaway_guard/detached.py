"""Starting a process the hook never waits for: the team's refresh, a notification's sender.

It runs in a session of its own (no terminal's signal reaches it), with its output to
/dev/null, and outlives the hook on purpose: a hook process leaves it to init by exiting,
serve.py collects it (_reap). It gets the guard's settings and the few variables it needs from
the hook's environment, nothing else of the host's.
"""

import sys

from . import fs

# What a detached process needs from the hook's environment: the guard's settings, where HOME
# and the config are, the time zone, proxies.
PASS = (
    "HOME",
    "USER",
    "LOGNAME",
    "USERNAME",
    "USERPROFILE",
    "SYSTEMROOT",
    "XDG_CONFIG_HOME",
    "XDG_STATE_HOME",
    "TZ",
    "PATH",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
)


def start(module, args, environ, state_dir, pass_fd=None, data=None, more=()):
    """Run `module.child()` of this package in a new interpreter with args after the skill
    folder in sys.argv; data (bytes) on its stdin, and the variables named in more passed on
    too. Never waited for."""
    import subprocess

    env = {k: v for k, v in environ.items() if k.startswith("RUNAWAY_GUARD_") or k in PASS + more}
    env["RUNAWAY_GUARD_STATE_DIR"] = state_dir
    skill = fs.dirname(fs.dirname(fs.abspath(__file__)))
    boot = f"import sys;sys.path.insert(0,sys.argv[1]);import runaway_guard.{module} as module;"
    argv = [sys.executable, "-I", "-S", "-c", boot + "module.child()", skill, *args]
    options = {}
    if sys.platform == "win32":
        options["creationflags"] = 0x00000008 | 0x00000200 | 0x08000000  # detached, no window
    else:
        options["start_new_session"] = True
        options["pass_fds"] = (pass_fd,) if pass_fd is not None else ()
    child = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL if data is None else subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        close_fds=True,
        env=env,
        cwd=state_dir,
        **options,
    )
    if data is not None:
        try:  # a few KB: the pipe's buffer takes them at once
            child.stdin.write(data)
            child.stdin.close()
        except OSError:
            pass
    child.returncode = 0  # never waited for: it outlives this process on purpose
