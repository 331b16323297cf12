"""The guard's line in the host's status line (`status.py --statusline`), where the host runs
a status line command (INSTALL["status_line"]: Claude Code's `statusLine`) and the person has
none of their own: theirs is never replaced, and uninstall removes only the guard's. How to
show both lines: README ("Status line")."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from .hook_list import INTERPRETER_FLAGS, sh_quote

MARKS = ("/skill/guard.py' --statusline", "/skill/status.py' --statusline")  # the guard's own


def command(python: str, skill_dir: Path) -> str:
    """guard.py --statusline: status.py --statusline's line, without compiling status.py."""
    guard = skill_dir.as_posix() + "/skill/guard.py"
    return f"{sh_quote(python)} {INTERPRETER_FLAGS} {sh_quote(guard)} --statusline"


def is_ours(value: Any) -> bool:
    return isinstance(value, dict) and str(value.get("command", "")).endswith(MARKS)


def add(obj: dict[str, Any], spec: dict[str, Any], wanted: str) -> tuple[dict, bool, list[str]]:
    """(settings, changed, notes) with the guard's status line where there is none."""
    key = spec["key"]
    found = obj.get(key)
    if found is not None and not is_ours(found):
        return (
            obj,
            False,
            [
                f"A status line of your own is set ({key}), so the guard's was not added; to show "
                f'both, see README\'s "Status line": {wanted}'
            ],
        )
    entry = {"type": "command", "command": wanted, "padding": 0}
    if found == entry:
        return obj, False, []
    obj = copy.deepcopy(obj)
    obj[key] = entry
    return obj, True, []


def remove(obj: dict[str, Any], spec: dict[str, Any]) -> tuple[dict, bool]:
    if not is_ours(obj.get(spec["key"])):
        return obj, False
    obj = copy.deepcopy(obj)
    del obj[spec["key"]]
    return obj, True
