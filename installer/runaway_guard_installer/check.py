"""--check: can the installed hook still run, and does the guard in it work? (An interpreter that
went away silences the guard without a word, since the command ends in `|| true`; a guard whose
modules fail to load lets every call through: its own `guard.py --self-check` finds that.)"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from typing import Any

from . import owned_file
from .hook_list import guard_positions, handler_at, is_guard_handler, sh_quote
from .settings_file import load_settings
from .targets import Target, plugged

CHECK_TIMEOUT_S = 30
SELF_CHECK_OK = "runaway-guard works:"  # skill/self_check.py's line


def resolve_python(python: str) -> str | None:
    """Where `python` is on this machine now (a path, or a name looked up on PATH), or None."""
    if os.sep in python or "/" in python:
        return python if os.path.isfile(python) and os.access(python, os.X_OK) else None
    return shutil.which(python)


def default_python() -> str:
    return sys.executable or "python3"


def check_command(command: str, host: str, env: Mapping[str, str], out) -> bool:
    """Whether the hook command runs the guard now: its interpreter, guard.py, and the guard's
    own `--self-check` for this host (one whole decision in a temporary state dir), run with
    the interpreter and flags the command names."""
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
            [python, *argv[1:], "--self-check", "--host", host],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            env=dict(env),
        )
    except subprocess.TimeoutExpired:
        print(f"FAIL: the guard's self-check did not finish within {timeout} s.", file=out)
        return False
    except OSError as exc:
        print(f"FAIL: the guard could not be started ({exc}). {fix}", file=out)
        return False
    elapsed = (time.perf_counter() - started) * 1000
    said = proc.stdout.decode("utf-8", "replace").strip()
    if proc.returncode == 0 and said.startswith(SELF_CHECK_OK):
        print(f"ok: {python} runs the guard: {said} ({elapsed:.0f} ms).", file=out)
        return True
    if proc.returncode == 0:
        print(
            f"FAIL: {argv[-1]} did not answer --self-check (it printed {said[:200]!r}): the "
            f"installed copy is incomplete or older than this installer, and the guard may be "
            f"OFF. {fix}",
            file=out,
        )
        return False
    errors = proc.stderr.decode("utf-8", "replace").strip().splitlines() or [said]
    why = errors[-1] if "reinstall" in errors[-1] else f"{errors[-1]} {fix}"
    print(f"FAIL: the guard's self-check exited with {proc.returncode}: {why}", file=out)
    return False


def check_target(target: Target, env: Mapping[str, str], out) -> bool:
    print(f"== {target.host.LABEL} ({target.scope} scope): {target.settings}", file=out)
    entry = target.entry
    where = plugged(target, env)
    if where:
        called = target.host.INSTALL["plugin"].get("called", "plugin")
        for place in where:
            print(f"runaway-guard runs as {target.host.LABEL}'s {called}: {place}", file=out)
        trust = getattr(target.host, "plugin_check_note", None)
        if trust:
            print(trust(env), file=out)
        if not hook_present(target):
            print(f"ok: the {called} runs the guard (the installer hook is not there).", file=out)
            return True
        print(
            f"warning: the installer's hook and the {called} both run the guard on every call "
            "(each call is counted once, at twice the cost): uninstall one of them.",
            file=out,
        )
    if entry["kind"] == "owned-file":
        return _check_owned(target, env, out)
    loaded = load_settings(target.settings, entry["events"])
    if not loaded.exists:
        print(f"FAIL: {target.settings} does not exist: the guard is not installed.", file=out)
        return False
    if loaded.bom:
        print(
            "warning: the file starts with a UTF-8 byte-order mark; a strict JSON reader may "
            "reject it. Save it as UTF-8 without BOM.",
            file=out,
        )
    ok = True
    for event in entry["events"]:
        positions = guard_positions(loaded.obj, event, entry["grouped"])
        if not positions:
            print(f"FAIL: no runaway-guard hook in {event}: run the installer again.", file=out)
            ok = False
        for position in positions:
            handler = handler_at(loaded.obj, event, position)
            command = _guard_value(handler)
            print(f"hook in {event}: {command}", file=out)
            ok = check_command(command, target.host.NAME, env, out) and ok
            note = getattr(target.host, "check_note", None)
            if note:
                group = loaded.obj["hooks"][event][position[0]]
                print(note(target.settings, handler, position, group, env, event), file=out)
    return ok


def hook_present(target: Target) -> bool:
    """Whether the installer's hook is in the target's settings (or its own file exists)."""
    entry = target.entry
    if entry["kind"] == "owned-file":
        return target.settings.is_file() and owned_file.is_ours(target.settings.read_bytes())
    obj = load_settings(target.settings, entry["events"]).obj
    return any(guard_positions(obj, event, entry["grouped"]) for event in entry["events"])


def _check_owned(target: Target, env: Mapping[str, str], out) -> bool:
    path = target.settings
    raw = path.read_bytes() if path.is_file() else None
    if raw is None or not owned_file.is_ours(raw):
        print(f"FAIL: no runaway-guard file at {path}: run the installer again.", file=out)
        return False
    if "template" not in target.entry:
        values = owned_file.filled_values(target.entry, raw, target.skill_dir)
        if values is None:
            guard = target.skill_dir / "skill" / "guard.py"
            ok = guard.is_file()
            print(f"{'ok' if ok else 'FAIL'}: {guard} {'exists' if ok else 'is gone'}.", file=out)
            return ok
        command = f"{sh_quote(values['python'])} -I -S {sh_quote(values['guard'])}"
        print(f"runs: {command}", file=out)
        return check_command(command, target.host.NAME, env, out)
    handlers = []
    _collect_handlers(json.loads(raw), handlers)
    return all(
        check_command(_guard_value(handler), target.host.NAME, env, out) for handler in handlers
    )


def _collect_handlers(value: Any, found: list) -> None:
    if isinstance(value, dict):
        if is_guard_handler(value):
            found.append(value)
        for item in value.values():
            _collect_handlers(item, found)
    elif isinstance(value, list):
        for item in value:
            _collect_handlers(item, found)


def _guard_value(handler: dict[str, Any]) -> str:
    """The handler's value that runs the guard (its `command`, or Copilot's `bash`)."""
    return next(v for v in handler.values() if isinstance(v, str) and "guard.py" in v)
