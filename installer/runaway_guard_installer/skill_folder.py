"""The installed skill folder: SKILL.md, skill/, references/ and installer/, copied as one
folder. The installer goes with the skill so that any copy of it (one an agent copied into
another host's skills folder included) can install its own hook: SKILL.md, "Installing".

A fresh copy is staged beside the target and swapped in; uninstall never removes a folder that
is a symlink, a git checkout or the source tree itself.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from .settings_file import InstallError

SKILL_NAME = "runaway-guard"
# What is copied from the source tree into the installed folder.
SKILL_ITEMS = ("SKILL.md", "skill", "references", "installer")
SKIP_NAMES = {"__pycache__", ".DS_Store"}
SKIP_SUFFIXES = (".pyc", ".pyo")


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
