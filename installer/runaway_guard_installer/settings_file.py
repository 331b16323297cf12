"""Settings files someone else owns: read strictly, write atomically with a backup.

What is refused and why: installer/README.md ("Refused").
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BACKUP_SUFFIX = ".runaway-guard-backup-"
BOM = b"\xef\xbb\xbf"


class Refused(Exception):
    """A settings file (or the command line) that the installer will not touch: exit 2."""


class InstallError(Exception):
    """Anything else that stops the installer: exit 1."""


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


def load_settings(path: Path, events: Sequence[str] = ()) -> Loaded:
    """Read and validate a settings file; raise Refused (file left alone) when it is unusable.

    events: the hook lists (`hooks.<event>`) the installer will edit; each must be a list.
    """
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
    for event in events:
        if not isinstance(hooks.get(event, []), list):
            raise Refused(
                f'{path}: "hooks.{event}" is a JSON {json_type(hooks[event])}, not a list of '
                f"hook entries. {fix}"
            )
    return Loaded(path, True, raw, bom, obj)


def json_type(value: Any) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(value), "number")


def dump_settings(obj: dict[str, Any], bom: bool) -> bytes:
    data = (json.dumps(obj, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    return BOM + data if bom else data


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
