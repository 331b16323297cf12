"""A file the guard owns whole (Copilot CLI's hook file, OpenCode's plugin): written from a
template, recognised as ours by the guard's path inside it, removed on uninstall."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .hook_list import GUARD_MARKS, fill


def render(entry: dict[str, Any], command: str, python: str, guard: str, skill: Path) -> bytes:
    """The file's bytes: a JSON template with {command}, or a text template shipped in the skill
    folder with "@PYTHON@" and "@GUARD@" (quoted placeholders, replaced by JSON strings)."""
    if "template" in entry:
        return (json.dumps(fill(entry["template"], command), indent=2) + "\n").encode("utf-8")
    text = (skill / "skill" / "runaway_guard" / entry["template_file"]).read_text("utf-8")
    text = text.replace('"@PYTHON@"', json.dumps(python)).replace('"@GUARD@"', json.dumps(guard))
    return text.encode("utf-8")


def filled_values(entry: dict[str, Any], data: bytes, skill_dir: Path) -> dict[str, str] | None:
    """The interpreter and guard path the installer wrote into a text template (read back from
    the lines that held "@PYTHON@" and "@GUARD@"), or None when they cannot be found."""
    try:
        template = (skill_dir / "skill" / "runaway_guard" / entry["template_file"]).read_text(
            "utf-8"
        )
    except (KeyError, OSError):
        return None
    lines = data.decode("utf-8", "replace").splitlines()
    values = {}
    for name in ("python", "guard"):
        mark = f'"@{name.upper()}@"'
        head = next((line.split(mark)[0] for line in template.splitlines() if mark in line), None)
        filled = next((line for line in lines if head and line.startswith(head)), None)
        if filled is None:
            return None
        try:
            value, _ = json.JSONDecoder().raw_decode(filled[len(head) :])
        except ValueError:
            return None
        if not isinstance(value, str):
            return None
        values[name] = value
    return values


def is_ours(data: bytes) -> bool:
    text = data.decode("utf-8", "replace").replace("\\\\", "/").replace("\\", "/")
    return any(mark in text for mark in GUARD_MARKS)
