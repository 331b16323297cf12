"""The host's own permission rules for the guard's folders, where the host has them.

The guard's hook asks before an agent's tool writes the guard's config, state or skill folder
(skill/runaway_guard/controls.py). A host that has rules of its own (Claude Code's
`permissions.ask`) can ask too, before its file tools change a path, even when the hook cannot
run: the installer adds one rule a folder there (INSTALL["guard_rules"]) and uninstall takes
them out again. Why and how to remove them by hand: installer/README.md ("Permission rules").
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from runaway_guard import config

FOLDER_NAME = "runaway-guard"


def guarded_folders(skill_dir: Path, env: Mapping[str, str]) -> list[Path]:
    """The user's config folder, the state folder and the installed skill folder, as the guard
    run from this environment would find them."""
    settings = config.load(None, env)
    config_dir = Path(settings.user_path).parent
    return [config_dir, Path(settings.state_dir), skill_dir]


def rules(spec: dict[str, Any], folders: list[Path], home: Path) -> list[str]:
    """One rule a folder, in the host's path syntax (Claude Code: `~/x` under HOME, `//x` for an
    absolute path)."""
    out = []
    for folder in folders:
        folder = Path(folder)
        try:
            path = "~/" + folder.relative_to(home).as_posix()
        except ValueError:
            path = "//" + folder.as_posix().lstrip("/")
        rule = spec["rule"].format(path=path)
        if rule not in out:
            out.append(rule)
    return out


def _rule_list(obj: dict[str, Any], spec: dict[str, Any], create: bool):
    """The list the rules go in (`permissions.ask`), or None where the file holds something
    else there (then the rules are left out and the person is told)."""
    outer, inner = spec["list"]
    section = obj.get(outer)
    if section is None and create:
        section = obj[outer] = {}
    if not isinstance(section, dict):
        return None
    found = section.get(inner)
    if found is None and create:
        found = section[inner] = []
    return found if isinstance(found, list) else None


def is_ours(rule: Any, spec: dict[str, Any], wanted: list[str]) -> bool:
    """A rule the installer wrote: one it would write now, or one of its form for a folder named
    runaway-guard (written from another environment: XDG_CONFIG_HOME set then)."""
    if rule in wanted:
        return True
    head, _, tail = spec["rule"].partition("{path}")
    return (
        isinstance(rule, str)
        and rule.startswith(head)
        and rule.endswith(tail)
        and rule[len(head) : len(rule) - len(tail)].endswith("/" + FOLDER_NAME)
    )


def add(obj: dict[str, Any], spec: dict[str, Any], wanted: list[str]):
    """(settings with the rules in, whether that changed it, notes for the person)."""
    obj = copy.deepcopy(obj)
    found = _rule_list(obj, spec, create=True)
    if found is None:
        where = ".".join(spec["list"])
        return (
            obj,
            False,
            [
                f"{where} is not a list, so no permission rules were added for the "
                "guard's folders: its hook still asks before they are changed."
            ],
        )
    missing = [rule for rule in wanted if rule not in found]
    found.extend(missing)
    return obj, bool(missing), []


def remove(obj: dict[str, Any], spec: dict[str, Any], wanted: list[str]):
    """(settings without the installer's rules, whether that changed it); a list, and a section,
    that this left empty go too."""
    obj = copy.deepcopy(obj)
    found = _rule_list(obj, spec, create=False)
    if not found:
        return obj, False
    kept = [rule for rule in found if not is_ours(rule, spec, wanted)]
    if len(kept) == len(found):
        return obj, False
    outer, inner = spec["list"]
    if kept:
        obj[outer][inner] = kept
    else:
        del obj[outer][inner]
        if not obj[outer]:
            del obj[outer]
    return obj, True
