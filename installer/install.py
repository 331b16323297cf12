#!/usr/bin/env python3
"""Install runaway-guard into Claude Code and/or Codex: copy the skill, merge the hook entry.

Usage::

    python3 installer/install.py --host claude|codex|all [--scope user|project] [--project DIR]
                                 [--dry-run] [--uninstall] [--check] [--python PATH]

What it writes (honours ``HOME``, ``CLAUDE_CONFIG_DIR``, ``CODEX_HOME``):

- Claude Code, user: ``$CLAUDE_CONFIG_DIR/settings.json``, skill in
  ``$CLAUDE_CONFIG_DIR/skills/runaway-guard``
- Claude Code, project: ``<project>/.claude/settings.local.json``, skill in
  ``<project>/.claude/skills/runaway-guard``
- Codex, user: ``$CODEX_HOME/hooks.json``, skill in ``$CODEX_HOME/skills/runaway-guard``
- Codex, project: ``<project>/.codex/hooks.json``, skill in
  ``<project>/.agents/skills/runaway-guard``

``CLAUDE_CONFIG_DIR`` defaults to ``~/.claude``, ``CODEX_HOME`` to ``~/.codex``; ``<project>`` is
``--project DIR``, else the git repository root of the current folder, else the current folder.
Codex skill roots: 0.169/0.171 list ``$CODEX_HOME/skills``, ``$HOME/.agents/skills`` and
``<repo>/.agents/skills`` (and ``<repo>/.codex/skills``). User scope uses ``$CODEX_HOME/skills``
because it follows ``CODEX_HOME`` like ``hooks.json`` does (a fresh ``CODEX_HOME`` is then
self-contained, and it is where Codex's own skill-installer puts skills); project scope uses
``<repo>/.agents/skills``, the location the current Codex documentation names for repositories.

The hook entry, in ``hooks.PreToolUse`` with no matcher (every tool)::

    {"hooks": [{"type": "command",
                "command": "'<python>' -I -S '<skill folder>/skill/guard.py' || true",
                "timeout": 30}]}

The guard's own entry is recognised by a command containing ``runaway-guard/skill/guard.py``
(any interpreter, any prefix), so re-install, upgrade, ``--uninstall`` and ``--check`` find it.

Choices
-------
Interpreter. The command names the absolute path of the interpreter that runs the installer
(``sys.executable``), not ``python3``. Measured on the development machine (Linux, 2 CPUs,
CPython 3.11.7 under pyenv 2.6.30, 30 interleaved runs each of ``<python> -c pass``):

=====================================================  ========  ========
command                                                median    p90
=====================================================  ========  ========
``/root/.pyenv/shims/python3 -c pass`` (the shim)      131.5 ms  203.5 ms
``/root/.pyenv/versions/3.11.7/bin/python3 -c pass``    51.5 ms   60.7 ms
shim with ``-I -S``                                      87.7 ms  108.0 ms
absolute path with ``-I -S``                             11.8 ms   13.4 ms
=====================================================  ========  ========

The pyenv shim is a bash script that runs ``pyenv exec``: about 80 ms on *every* tool call, for
nothing. The cost of the absolute path: it breaks when that interpreter goes away (a pyenv
version uninstalled, a deleted virtualenv, a Homebrew upgrade that removes a versioned path), and
under ``|| true`` a missing interpreter silently disables the guard. Hence ``--check``: it parses
the settings, finds the guard's entry, verifies that the interpreter and ``guard.py`` exist, runs
the guard once with an empty payload, and exits 1 with a message saying what to do when the hook
can no longer run. Re-running the installer (with another ``--python`` if need be) repairs it.
``--python python3`` writes a bare name that is looked up on ``PATH`` at hook time instead (robust
to interpreter upgrades, slower behind a shim).

Flags ``-I -S``. Most of the remaining 40 ms on this machine is ``site`` importing a ``.pth`` hook
from site-packages; the guard is standard library only, so it runs isolated (``-I``: no
``PYTHON*`` variables such as ``PYTHONPATH`` or ``PYTHONDONTWRITEBYTECODE``, no user site, no
script folder on ``sys.path``; guard.py adds its own package folder) and without ``site``
(``-S``): 11.8 ms instead of 51.5 ms per start above. ``-I`` also keeps a repository's
``PYTHONPATH`` from shadowing a module the guard imports, and lets the interpreter cache the
guard's bytecode even where ``PYTHONDONTWRITEBYTECODE`` is set.

Timeout: 30 s. Both hosts default to 600 s and both fail open on timeout (the tool call runs), so
a hung guard would otherwise stall every tool call for ten minutes. 30 s bounds that while leaving
ample room for the slowest legitimate call: the cold first read of a very large transcript (on
a 500 MB session that may take several seconds; not measured here); later calls read only the
appended bytes.

Merge rules. Every other key, event, group and handler is kept, in order. A new guard group is
appended at the END of ``hooks.PreToolUse`` (Codex keys trust on the group's position). An
existing guard handler is updated in place (same position; keys the person added to it, such as
``statusMessage``, are kept) or, when its type, command and timeout already match, left alone,
and then the file is not written at all. Further guard handlers (duplicates added by hand) are
reported, not removed (removing would shift Codex positions). Every write makes a timestamped
backup next to the settings file (``<name>.runaway-guard-backup-YYYYmmddTHHMMSS``), writes a temp
file in the target's folder and ``os.replace``-s it, keeps the file's mode (and owner when run as
root), and writes through a symlinked settings file (the link's target is replaced, the link
stays). If another program (the host itself, saving a permission rule) changed the file between
our read and our rename, nothing is written and the run fails with exit 1: run it again.

Refused (exit 2, the file untouched): unreadable, a directory, not UTF-8, not JSON, JSON whose top
level is not an object, ``hooks`` not an object, ``hooks.PreToolUse`` not a list, duplicate keys
(the hosts read only the last one and a rewrite would silently drop the others), ``NaN`` /
``Infinity`` (not JSON for the hosts), a read-only file (no write bit for its owner, or not
writable by us: make it writable or add the entry by hand; the installer never chmods it). An
empty or blank file counts as ``{}``; a missing file is created with its parent folders.
A UTF-8 byte-order mark is accepted and kept: the file is not ours to re-encode, and the mark
is invisible to a person reading it; ``--check`` warns about it because a strict JSON reader in
the host may reject such a file.

Uninstall removes every guard handler from ``hooks.PreToolUse``, then any group, the
``PreToolUse`` list and the ``hooks`` object that this left empty, and the copied skill folder
(never a folder that is a symlink, a git checkout, or the source tree itself). Install followed by
uninstall therefore gives back an equal object, with one exception no installer can avoid: an
originally empty ``"hooks": {}`` or ``"PreToolUse": []`` cannot be told apart from one the
installer created, and is removed too (it meant "no hooks" and still does).

Exit codes: 0 done, 2 a settings file was refused or the command line is wrong, 1 any other error
(also ``--check`` finding a hook that cannot run).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import datetime
import difflib
import hashlib
import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SKILL_NAME = "runaway-guard"
GUARD_MARK = "runaway-guard/skill/guard.py"
# The guard needs nothing from site-packages or PYTHON* variables: -I -S start the interpreter
# without them (see "Interpreter" above).
INTERPRETER_FLAGS = "-I -S"
EVENT = "PreToolUse"
TIMEOUT_S = 30
BACKUP_SUFFIX = ".runaway-guard-backup-"
BOM = b"\xef\xbb\xbf"
SOURCE_ROOT = Path(__file__).resolve().parent.parent
# What is copied from the source tree into the installed folder.
SKILL_ITEMS = ("SKILL.md", "skill", "references")
SKIP_NAMES = {"__pycache__", ".DS_Store"}
SKIP_SUFFIXES = (".pyc", ".pyo")

EXIT_OK, EXIT_ERROR, EXIT_REFUSED = 0, 1, 2


class Refused(Exception):
    """A settings file (or the command line) that the installer will not touch: exit 2."""


class InstallError(Exception):
    """Anything else that stops the installer: exit 1."""


# --------------------------------------------------------------------------- locate targets


@dataclass
class Host:
    key: str
    label: str
    user_dir_var: str
    user_dir_default: str
    user_settings: str
    project_settings: str
    project_skills: str


HOSTS = {
    "claude": Host(
        "claude",
        "Claude Code",
        "CLAUDE_CONFIG_DIR",
        ".claude",
        "settings.json",
        ".claude/settings.local.json",
        ".claude/skills",
    ),
    "codex": Host(
        "codex",
        "Codex",
        "CODEX_HOME",
        ".codex",
        "hooks.json",
        ".codex/hooks.json",
        ".agents/skills",
    ),
}


@dataclass
class Target:
    host: Host
    scope: str
    settings: Path
    skill_dir: Path
    project: Path | None = None


def home_dir(env: Mapping[str, str]) -> Path:
    home = env.get("HOME")
    return Path(home) if home else Path(os.path.expanduser("~"))


def find_project_root(start: Path) -> Path:
    """The git repository root containing `start` (a `.git` folder or file), else `start`."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return start


def locate(host: Host, scope: str, project: Path | None, env: Mapping[str, str]) -> Target:
    if scope == "user":
        base = env.get(host.user_dir_var) or str(home_dir(env) / host.user_dir_default)
        base_path = Path(os.path.abspath(os.path.expanduser(base)))
        skill_dir = base_path / "skills" / SKILL_NAME
        return Target(host, scope, base_path / host.user_settings, skill_dir)
    root = Path(os.path.abspath(project)) if project else find_project_root(Path.cwd())
    return Target(
        host,
        scope,
        root / host.project_settings,
        root / host.project_skills / SKILL_NAME,
        root,
    )


# --------------------------------------------------------------------------- the command


def sh_quote(text: str) -> str:
    """Single-quote `text` for `sh -c`, whatever it holds (spaces, quotes, $, backticks)."""
    return "'" + text.replace("'", "'\"'\"'") + "'"


def hook_command(python: str, skill_dir: Path) -> str:
    guard = skill_dir.as_posix() + "/skill/guard.py"
    return f"{sh_quote(python)} {INTERPRETER_FLAGS} {sh_quote(guard)} || true"


def guard_handler(command: str) -> dict[str, Any]:
    return {"type": "command", "command": command, "timeout": TIMEOUT_S}


def is_guard_handler(handler: Any) -> bool:
    if not isinstance(handler, dict):
        return False
    command = handler.get("command")
    return isinstance(command, str) and GUARD_MARK in command.replace("\\", "/")


def guard_positions(settings: dict[str, Any]) -> list[tuple[int, int]]:
    """(group index, handler index) of every guard handler in hooks.PreToolUse."""
    hooks = settings.get("hooks")
    groups = hooks.get(EVENT) if isinstance(hooks, dict) else None
    found = []
    for gi, group in enumerate(groups if isinstance(groups, list) else []):
        handlers = group.get("hooks") if isinstance(group, dict) else None
        for hi, handler in enumerate(handlers if isinstance(handlers, list) else []):
            if is_guard_handler(handler):
                found.append((gi, hi))
    return found


def resolve_python(python: str) -> str | None:
    """Where `python` is on this machine now (a path, or a name looked up on PATH), or None."""
    if os.sep in python or "/" in python:
        return python if os.path.isfile(python) and os.access(python, os.X_OK) else None
    return shutil.which(python)


def default_python() -> str:
    return sys.executable or "python3"


# --------------------------------------------------------------------------- load settings


@dataclass
class Loaded:
    path: Path
    exists: bool
    raw: bytes = b""
    bom: bool = False
    obj: dict[str, Any] = field(default_factory=dict)


def _no_duplicates(path: Path):
    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj: dict[str, Any] = {}
        for key, value in pairs:
            if key in obj:
                raise Refused(
                    f"{path}: the key {key!r} appears more than once. The host reads only the "
                    "last one, and rewriting the file would drop the others. Remove the "
                    "duplicates by hand, then run the installer again."
                )
            obj[key] = value
        return obj

    return hook


def _bad_constant(path: Path):
    def hook(name: str) -> Any:
        raise Refused(
            f"{path}: holds {name}, which is not valid JSON for the host. Fix the value by hand, "
            "then run the installer again."
        )

    return hook


def load_settings(path: Path) -> Loaded:
    """Read and validate a settings file; raise Refused (file left alone) when it is unusable."""
    fix = "Fix or move the file, then run the installer again; it was left untouched."
    if not os.path.lexists(path):
        return Loaded(path, exists=False)
    if not os.path.exists(path):  # a dangling symlink: create its target
        return Loaded(path, exists=False)
    if os.path.isdir(path):
        raise Refused(f"{path}: is a folder, not a settings file. {fix}")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise Refused(f"{path}: cannot be read ({exc.strerror or exc}). {fix}") from None
    bom = raw.startswith(BOM)
    try:
        text = raw[len(BOM) if bom else 0 :].decode("utf-8")
    except UnicodeDecodeError as exc:
        problem = f"{exc.reason} at byte {exc.start}"
        raise Refused(f"{path}: is not UTF-8 text ({problem}). {fix}") from None
    if not text.strip():
        return Loaded(path, True, raw, bom, {})
    try:
        obj = json.loads(
            text, object_pairs_hook=_no_duplicates(path), parse_constant=_bad_constant(path)
        )
    except json.JSONDecodeError as exc:
        raise Refused(
            f"{path}: is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}). {fix}"
        ) from None
    if not isinstance(obj, dict):
        raise Refused(
            f"{path}: the top level is a JSON {json_type(obj)}, not an object. "
            f"A settings file must look like {{...}}. {fix}"
        )
    hooks = obj.get("hooks", {})
    if not isinstance(hooks, dict):
        raise Refused(
            f'{path}: "hooks" is a JSON {json_type(hooks)}, not an object '
            f'({{"EventName": [...]}}). {fix}'
        )
    if not isinstance(hooks.get(EVENT, []), list):
        raise Refused(
            f'{path}: "hooks.{EVENT}" is a JSON {json_type(hooks[EVENT])}, not a list of '
            f"matcher groups. {fix}"
        )
    return Loaded(path, True, raw, bom, obj)


def json_type(value: Any) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(value), "number")


def dump_settings(obj: dict[str, Any], bom: bool) -> bytes:
    data = (json.dumps(obj, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    return BOM + data if bom else data


# --------------------------------------------------------------------------- merge


@dataclass
class Merge:
    obj: dict[str, Any]
    action: str  # added | updated | unchanged | removed | absent
    notes: list[str] = field(default_factory=list)


def merge_install(settings: dict[str, Any], command: str) -> Merge:
    """Add or update the guard's handler; never reorder anything."""
    obj = copy.deepcopy(settings)
    wanted = guard_handler(command)
    positions = guard_positions(obj)
    notes = []
    if len(positions) > 1:
        extra = ", ".join(f"group {gi} handler {hi}" for gi, hi in positions[1:])
        notes.append(
            f"more than one runaway-guard entry in {EVENT}; the first was used, the others "
            f"({extra}) were left as they are: remove them by hand so the guard runs once."
        )
    if not positions:
        obj.setdefault("hooks", {}).setdefault(EVENT, []).append({"hooks": [wanted]})
        return Merge(obj, "added", notes)
    gi, hi = positions[0]
    handler = obj["hooks"][EVENT][gi]["hooks"][hi]
    if all(handler.get(key) == value for key, value in wanted.items()):
        return Merge(obj, "unchanged", notes)
    handler.update(wanted)  # same position; keys the person added stay
    return Merge(obj, "updated", notes)


def merge_uninstall(settings: dict[str, Any]) -> Merge:
    """Remove every guard handler, and what that left empty (group, PreToolUse, hooks)."""
    obj = copy.deepcopy(settings)
    positions = guard_positions(obj)
    if not positions:
        return Merge(obj, "absent")
    groups = obj["hooks"][EVENT]
    emptied = set()
    for gi, hi in reversed(positions):
        handlers = groups[gi]["hooks"]
        del handlers[hi]
        if not handlers:
            emptied.add(gi)
    notes = []
    if emptied and max(emptied) < len(groups) - 1:
        notes.append(
            "hook groups after the removed one moved up by one position: Codex will show them "
            "as changed, so trust them again in /hooks."
        )
    obj["hooks"][EVENT] = [g for i, g in enumerate(groups) if i not in emptied]
    if not obj["hooks"][EVENT]:
        del obj["hooks"][EVENT]
    if not obj["hooks"]:
        del obj["hooks"]
    return Merge(obj, "removed", notes)


# --------------------------------------------------------------------------- write atomically


def check_writable(path: Path) -> None:
    real = Path(os.path.realpath(path))
    if real.exists():
        mode = real.stat().st_mode
        if not mode & stat.S_IWUSR or not os.access(real, os.W_OK):
            raise Refused(
                f"{path}: is read-only (mode {stat.filemode(mode)}), so it was left untouched. "
                "If you made it read-only on purpose, add the entry by hand (run with --dry-run "
                "to see it); otherwise make it writable (chmod u+w) and run the installer again."
            )
        folder = real.parent
    else:
        folder = real.parent
        while not folder.exists() and folder != folder.parent:
            folder = folder.parent
    if not os.access(folder, os.W_OK | os.X_OK):
        raise Refused(
            f"{path}: its folder {folder} is not writable, so the file cannot be replaced safely. "
            "Make the folder writable and run the installer again."
        )


def backup_path(path: Path) -> Path:
    stamp = datetime.datetime.now().strftime("%Y%m%dT%H%M%S")
    candidate = path.with_name(path.name + BACKUP_SUFFIX + stamp)
    n = 1
    while os.path.lexists(candidate):
        candidate = path.with_name(f"{path.name}{BACKUP_SUFFIX}{stamp}-{n}")
        n += 1
    return candidate


def current_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def write_atomic(path: Path, data: bytes, expected: bytes | None) -> Path | None:
    """Back up the old file, then replace it (through a symlink) in one rename. Returns backup.

    `expected` is what the file held when it was read (None: absent); if someone else (the host
    itself, saving a permission rule) changed it since, nothing is written.
    """
    real = Path(os.path.realpath(path))
    real.parent.mkdir(parents=True, exist_ok=True)
    old = real.stat() if real.exists() else None
    backup = None
    if old is not None:
        backup = backup_path(path)
        shutil.copy2(real, backup)
    fd, tmp = tempfile.mkstemp(prefix=f".{real.name}.", suffix=".tmp", dir=str(real.parent))
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if current_bytes(real) != expected:
            raise InstallError(
                f"{path}: changed while the installer was working (another program wrote it); "
                "nothing was written. Run the installer again."
            )
        if old is not None:
            os.chmod(tmp, stat.S_IMODE(old.st_mode))
            if hasattr(os, "geteuid") and os.geteuid() == 0:
                with contextlib.suppress(OSError):
                    os.chown(tmp, old.st_uid, old.st_gid)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, real)
    except BaseException:
        for leftover in (tmp, backup):
            if leftover is not None and os.path.exists(leftover):
                os.unlink(leftover)
        raise
    return backup


# --------------------------------------------------------------------------- copy the skill


def skill_files(source: Path) -> dict[str, Path]:
    """Relative path -> source file, for everything the installed folder holds."""
    files: dict[str, Path] = {}
    for item in SKILL_ITEMS:
        top = source / item
        if top.is_file():
            files[item] = top
        elif top.is_dir():
            for folder, dirs, names in os.walk(top):
                dirs[:] = sorted(d for d in dirs if d not in SKIP_NAMES)
                for name in sorted(names):
                    if name in SKIP_NAMES or name.endswith(SKIP_SUFFIXES):
                        continue
                    full = Path(folder) / name
                    files[full.relative_to(source).as_posix()] = full
    return files


def check_source(source: Path) -> None:
    for needed in ("SKILL.md", "skill/guard.py"):
        if not (source / needed).is_file():
            raise InstallError(
                f"{source}: has no {needed}, so it is not a runaway-guard source tree. Run the "
                "installer from a complete checkout (or pass --source DIR)."
            )


def same_folder(a: Path, b: Path) -> bool:
    return os.path.exists(a) and os.path.exists(b) and os.path.samefile(a, b)


def plan_copy(source: Path, dest: Path) -> list[str]:
    """Lines describing what copying would change in `dest` (empty: already up to date)."""
    if same_folder(source, dest) or dest.is_symlink():
        return []
    wanted = skill_files(source)
    present = skill_files(dest) if dest.is_dir() else {}
    plan = []
    for rel, src in wanted.items():
        if rel not in present:
            plan.append(f"+ {dest / rel}")
        elif present[rel].read_bytes() != src.read_bytes():
            plan.append(f"~ {dest / rel}")
    plan += [f"- {dest / rel}" for rel in present if rel not in wanted]
    return plan


def copy_skill(source: Path, dest: Path) -> str:
    """Put a fresh copy of the skill at `dest` (staged beside it, then swapped in)."""
    if same_folder(source, dest):
        return f"the skill is already in place at {dest} (the source tree itself)"
    if dest.is_symlink():
        return f"{dest} is a symlink; left as it is (remove it to get a copy)"
    if not plan_copy(source, dest):
        return f"skill folder up to date: {dest}"
    dest.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{SKILL_NAME}.new-", dir=str(dest.parent)))
    old = None
    try:
        for rel, src in skill_files(source).items():
            target = stage / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(stage, 0o777 & ~umask)
        if dest.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{SKILL_NAME}.old-", dir=str(dest.parent)))
            os.rmdir(old)
            os.rename(dest, old)
        os.rename(stage, dest)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        if old is not None and not dest.exists():
            os.rename(old, dest)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return f"skill copied to {dest}"


def keep_reason(source: Path, dest: Path) -> str | None:
    """Why `dest` must not be deleted on uninstall (None: it is our copy, or absent)."""
    if not os.path.lexists(dest):
        return None
    if dest.is_symlink():
        return f"{dest} is a symlink; left as it is (remove it by hand if you want)"
    if same_folder(source, dest) or (dest / ".git").exists():
        return f"{dest} is a source checkout, not a copy; left as it is"
    if not ((dest / "SKILL.md").exists() or (dest / "skill" / "guard.py").exists()):
        return f"{dest} does not look like runaway-guard (no SKILL.md); left as it is"
    return None


def remove_skill(source: Path, dest: Path) -> str:
    reason = keep_reason(source, dest)
    if reason:
        return reason
    if not os.path.lexists(dest):
        return f"no skill folder at {dest}"
    shutil.rmtree(dest)
    return f"skill folder removed: {dest}"


# --------------------------------------------------------------------------- plan and apply


@dataclass
class Plan:
    target: Target
    loaded: Loaded
    merge: Merge
    new_bytes: bytes | None  # None: the settings file is not written
    copy_lines: list[str]


def make_plan(target: Target, source: Path, python: str, uninstall: bool) -> Plan:
    loaded = load_settings(target.settings)
    if uninstall:
        merge = merge_uninstall(loaded.obj)
        removable = target.skill_dir.is_dir() and not keep_reason(source, target.skill_dir)
        copy_lines = [f"- {target.skill_dir} (the whole folder)"] if removable else []
    else:
        merge = merge_install(loaded.obj, hook_command(python, target.skill_dir))
        copy_lines = plan_copy(source, target.skill_dir)
    changed = merge.action in ("added", "updated", "removed")
    new_bytes = dump_settings(merge.obj, loaded.bom) if changed else None
    if new_bytes is not None:
        check_writable(target.settings)
    return Plan(target, loaded, merge, new_bytes, copy_lines)


def diff_text(plan: Plan) -> str:
    if plan.new_bytes is None:
        return ""
    old = plan.loaded.raw.decode("utf-8", "replace").lstrip("\ufeff")
    new = plan.new_bytes.decode("utf-8").lstrip("\ufeff")
    name = str(plan.target.settings)
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=name if plan.loaded.exists else "/dev/null",
        tofile=name,
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def apply_plan(plan: Plan, source: Path, uninstall: bool) -> list[str]:
    target, out = plan.target, []
    if not uninstall:  # the guard must exist before the hook points at it
        out.append(copy_skill(source, target.skill_dir))
    if plan.new_bytes is not None:
        expected = plan.loaded.raw if plan.loaded.exists else None
        backup = write_atomic(target.settings, plan.new_bytes, expected)
        verb = {"added": "added to", "updated": "updated in", "removed": "removed from"}
        out.append(f"hook {verb[plan.merge.action]} {target.settings}")
        if backup:
            out.append(f"previous file saved as {backup}")
    elif uninstall:
        out.append(f"no runaway-guard hook in {target.settings}")
    else:
        out.append(f"hook already in place in {target.settings} (file not touched)")
    if uninstall:
        out.append(remove_skill(source, target.skill_dir))
    return out


# --------------------------------------------------------------------------- report


def next_steps(plans: Sequence[Plan]) -> list[str]:
    lines = ["", "Next steps:"]
    for plan in plans:
        target = plan.target
        status = target.skill_dir / "skill" / "status.py"
        if target.host.key == "claude":
            lines.append(
                "- Claude Code: restart it (or open /hooks) so it loads the hook; in a folder "
                "you have not trusted yet, accept the trust prompt first."
            )
            if target.scope == "project":
                lines.append(
                    f"  {target.settings.name} was written by the installer, so git does not "
                    "ignore it automatically: add .claude/settings.local.json and "
                    ".claude/skills/runaway-guard/ to .gitignore (they hold paths of this machine)."
                )
        else:
            changed = plan.merge.action in ("added", "updated")
            lines.append(
                "- Codex: the hook does NOT run until you trust it. Start codex, open /hooks and "
                "trust the runaway-guard hook"
                + (" (it is new or changed, so Codex asks again)." if changed else ".")
                + " `codex exec` skips untrusted hooks silently, without any warning."
            )
            if target.scope == "project":
                lines.append(
                    f"  Project hooks load only in a trusted project: trust {target.project} "
                    "when Codex asks (or run `codex exec --trust` once there)."
                )
        lines.append(f"  Status: python3 {sh_quote(str(status))}")
    lines += [
        "- Spending cap (default $25 a session): set RUNAWAY_GUARD_MAX_USD, or write "
        '{"max_usd": 25} to ~/.config/runaway-guard/config.json.',
        "- Check later that the hook can still run: python3 installer/install.py --check "
        "--host ... (same --scope/--project).",
    ]
    return lines


def run_install(targets: Sequence[Target], args: argparse.Namespace, out) -> int:
    source = Path(args.source)
    if not args.uninstall:
        check_source(source)
    plans = [make_plan(t, source, args.python, args.uninstall) for t in targets]  # may refuse
    for plan in plans:
        header = f"== {plan.target.host.label} ({plan.target.scope} scope)"
        print(header, file=out)
        for note in plan.merge.notes:
            print(f"note: {note}", file=out)
        if args.dry_run:
            print(diff_text(plan) or f"{plan.target.settings}: no change\n", file=out, end="")
            if plan.copy_lines:
                print(f"skill folder {plan.target.skill_dir}:", file=out)
                for line in plan.copy_lines:
                    print(f"  {line}", file=out)
            else:
                print(f"skill folder {plan.target.skill_dir}: no change", file=out)
            continue
        for line in apply_plan(plan, source, args.uninstall):
            print(line, file=out)
    if args.dry_run:
        print("\nDry run: nothing was written.", file=out)
    elif not args.uninstall:
        for line in next_steps(plans):
            print(line, file=out)
    else:
        if any(p.target.host.key == "codex" and p.merge.action == "removed" for p in plans):
            print("Codex forgets the hook on its next start.", file=out)
        if any(p.target.host.key == "claude" and p.merge.action == "removed" for p in plans):
            print("Restart Claude Code (or open /hooks) so it drops the hook.", file=out)
    return EXIT_OK


# --------------------------------------------------------------------------- check


def codex_trust_note(target: Target, handler: dict[str, Any], gi: int, hi: int, group: Any, env):
    """Best effort: does $CODEX_HOME/config.toml hold a trusted hash for this hook?"""
    codex_home = env.get("CODEX_HOME") or str(home_dir(env) / ".codex")
    config = Path(codex_home) / "config.toml"
    definition: dict[str, Any] = {"event_name": "pre_tool_use"}
    if isinstance(group, dict) and group.get("matcher") is not None:
        definition["matcher"] = group["matcher"]
    normal = {
        "type": "command",
        "command": handler.get("command"),
        "timeout": handler.get("timeout", 600),
        "async": bool(handler.get("async", False)),
    }
    if handler.get("statusMessage") is not None:
        normal["statusMessage"] = handler["statusMessage"]
    definition["hooks"] = [normal]
    canonical = json.dumps(definition, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    digest = "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()
    try:
        text = config.read_text(encoding="utf-8")
    except OSError:
        text = ""
    paths = (target.settings, os.path.realpath(target.settings))
    keys = {f"{p}:pre_tool_use:{gi}:{hi}" for p in paths}
    if digest in text and any(k in text for k in keys):
        return "Codex trust: a trusted hash for this hook is recorded in config.toml."
    if any(k in text for k in keys):
        return (
            "Codex trust: config.toml records a different hash for this position: the hook "
            "looks MODIFIED and will not run. Open /hooks in codex and trust it."
        )
    return (
        f"Codex trust: no trust record found in {config}: if Codex has not been told to trust "
        "the hook, it does not run. Open /hooks in codex and trust it (this check is best "
        "effort: the format is internal to Codex)."
    )


def check_target(target: Target, env: Mapping[str, str], out) -> bool:
    print(f"== {target.host.label} ({target.scope} scope): {target.settings}", file=out)
    loaded = load_settings(target.settings)
    if not loaded.exists:
        print(f"FAIL: {target.settings} does not exist: the guard is not installed.", file=out)
        return False
    if loaded.bom:
        print(
            "warning: the file starts with a UTF-8 byte-order mark; a strict JSON reader may "
            "reject it. Save it as UTF-8 without BOM.",
            file=out,
        )
    positions = guard_positions(loaded.obj)
    if not positions:
        print(f"FAIL: no runaway-guard hook in {EVENT}: run the installer again.", file=out)
        return False
    ok = True
    for gi, hi in positions:
        group = loaded.obj["hooks"][EVENT][gi]
        handler = group["hooks"][hi]
        command = handler["command"]
        print(f"hook at {EVENT}[{gi}].hooks[{hi}]: {command}", file=out)
        ok = check_handler(handler, env, out) and ok
        if target.host.key == "codex":
            print(codex_trust_note(target, handler, gi, hi, group, env), file=out)
    return ok


def check_handler(handler: dict[str, Any], env: Mapping[str, str], out) -> bool:
    fix = "Run the installer again (with --python PATH to choose another interpreter)."
    try:
        words = shlex.split(handler["command"])
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
    timeout = handler.get("timeout") if isinstance(handler.get("timeout"), (int, float)) else 600
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
        print(f"FAIL: the guard did not answer within the hook's {timeout} s timeout.", file=out)
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


def run_check(targets: Sequence[Target], env: Mapping[str, str], out) -> int:
    results = [check_target(t, env, out) for t in targets]
    return EXIT_OK if all(results) else EXIT_ERROR


# --------------------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="install.py",
        description="Install runaway-guard's PreToolUse hook into Claude Code and/or Codex.",
    )
    parser.add_argument("--host", required=True, choices=("claude", "codex", "all"))
    parser.add_argument("--scope", default="user", choices=("user", "project"))
    parser.add_argument("--project", help="project folder (default: git root of the cwd)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--uninstall", action="store_true", help="remove the hook and the skill")
    mode.add_argument("--check", action="store_true", help="verify the installed hook can run")
    parser.add_argument("--dry-run", action="store_true", help="show what would change")
    parser.add_argument(
        "--python",
        default=default_python(),
        help="interpreter written into the hook command (default: this one, absolute path)",
    )
    parser.add_argument("--source", default=str(SOURCE_ROOT), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.project and args.scope != "project":
        parser.error("--project only applies with --scope project")
    if args.check and args.dry_run:
        parser.error("--check writes nothing anyway; drop --dry-run")
    return args


def python_ok(python: str) -> str | None:
    """An error message when `python` cannot run the guard (missing, or older than 3.9)."""
    found = resolve_python(python)
    if found is None:
        return f"--python {python}: not found or not executable."
    try:
        proc = subprocess.run(
            [found, "-c", "import sys; sys.exit(sys.version_info < (3, 9))"],
            capture_output=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"--python {python}: cannot be run ({exc})."
    if proc.returncode != 0:
        return f"--python {python}: the guard needs Python 3.9 or newer."
    return None


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None, out=None) -> int:
    out = out or sys.stdout
    env = os.environ if env is None else env
    try:
        args = parse_args(argv)
    except SystemExit as exc:  # argparse: 2 on bad usage, 0 on --help
        return int(exc.code or 0)
    hosts = ["claude", "codex"] if args.host == "all" else [args.host]
    project = Path(args.project) if args.project else None
    if project is not None and not project.is_dir():
        print(f"install.py: --project {project}: no such folder.", file=sys.stderr)
        return EXIT_REFUSED
    if "/" in args.python or os.sep in args.python:
        args.python = os.path.abspath(args.python)
    targets = [locate(HOSTS[h], args.scope, project, env) for h in hosts]
    try:
        if args.check:
            return run_check(targets, env, out)
        if not args.uninstall and args.python != default_python():
            problem = python_ok(args.python)
            if problem:
                print(f"install.py: {problem}", file=sys.stderr)
                return EXIT_REFUSED
        return run_install(targets, args, out)
    except Refused as exc:
        print(f"install.py: refused: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    except InstallError as exc:
        print(f"install.py: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except OSError as exc:
        print(f"install.py: {exc}. Nothing else was changed after this point.", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
