"""--check: can the installed hook still run? (An interpreter that went away silences the guard
without a word, since the command ends in `|| true`.)"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping

CHECK_TIMEOUT_S = 30


def resolve_python(python: str) -> str | None:
    """Where `python` is on this machine now (a path, or a name looked up on PATH), or None."""
    if os.sep in python or "/" in python:
        return python if os.path.isfile(python) and os.access(python, os.X_OK) else None
    return shutil.which(python)


def default_python() -> str:
    return sys.executable or "python3"


def check_command(command: str, env: Mapping[str, str], out) -> bool:
    """Whether the hook command can run the guard now: interpreter, guard.py, one empty call."""
    fix = "Run the installer again (with --python PATH to choose another interpreter)."
    try:
        words = shlex.split(command)
    except ValueError as exc:
        print(f"FAIL: the command cannot be parsed by a shell ({exc}). {fix}", file=out)
        return False
    argv = words[: words.index("||")] if "||" in words else words
    if len(argv) < 2:
        print(f"FAIL: expected '<python> <guard.py>', got {argv}. {fix}", file=out)
        return False
    python = resolve_python(argv[0])
    if python is None:
        print(
            f"FAIL: the interpreter {argv[0]} is gone or not executable: the hook fails "
            f"silently (|| true) and the guard is OFF. {fix}",
            file=out,
        )
        return False
    if not os.path.isfile(argv[-1]):
        print(f"FAIL: {argv[-1]} does not exist: the guard is OFF. {fix}", file=out)
        return False
    timeout = CHECK_TIMEOUT_S
    started = time.perf_counter()
    try:
        proc = subprocess.run(
            [python, *argv[1:]],
            input=b"{}",
            capture_output=True,
            timeout=timeout,
            env=dict(env),
        )
    except subprocess.TimeoutExpired:
        print(f"FAIL: the guard did not answer within {timeout} s.", file=out)
        return False
    except OSError as exc:
        print(f"FAIL: the guard could not be started ({exc}). {fix}", file=out)
        return False
    elapsed = (time.perf_counter() - started) * 1000
    stdout = proc.stdout.decode("utf-8", "replace").strip()
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
        print(f"FAIL: the guard exited with {proc.returncode}: {err[0]}", file=out)
        return False
    if stdout:
        try:
            json.loads(stdout)
        except ValueError:
            print(f"FAIL: the guard printed something that is not JSON: {stdout[:200]}", file=out)
            return False
    print(f"ok: {python} runs the guard ({elapsed:.0f} ms with an empty payload).", file=out)
    return True
