"""The guard's entry in a host's lists of hooks: found, added, updated and removed in place.

A host module's INSTALL["entry"] of kind "json-list" says which lists (`hooks.<event>`), whether
each handler sits in a group (`{"hooks": [handler]}`, Claude Code, Codex, Gemini CLI) or alone
(Cursor), and the handler's shape with a `{command}` placeholder. Merge rules:
installer/README.md ("Merge rules").
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The guard's own entry is recognised by its path, whatever interpreter or prefix runs it.
GUARD_MARKS = ("runaway-guard/skill/guard.py",)
# The guard needs nothing from site-packages or PYTHON* variables (installer/README.md).
INTERPRETER_FLAGS = "-I -S"


def sh_quote(text: str) -> str:
    """Single-quote `text` for `sh -c`, whatever it holds (spaces, quotes, $, backticks)."""
    return "'" + text.replace("'", "'\"'\"'") + "'"


def hook_command(python: str, skill_dir: Path, entry: dict[str, Any] | None = None) -> str:
    guard = skill_dir.as_posix() + "/skill/guard.py"
    return guard_command(sh_quote(python), sh_quote(guard), entry)


def guard_command(python: str, guard: str, entry: dict[str, Any] | None = None) -> str:
    """`<python> -I -S <guard.py>` (both already quoted for sh); when the guard cannot run at all
    (its interpreter gone), the call goes ahead: `|| true`, or the host's own allow where an
    empty answer blocks (entry["fallback"])."""
    fallback = (entry or {}).get("fallback")
    otherwise = f"printf '%s\\n' {sh_quote(fallback)}" if fallback else "true"
    return f"{python} {INTERPRETER_FLAGS} {guard} || {otherwise}"


def fill(template: Any, command: str) -> Any:
    """The template with every "{command}" string replaced by the command."""
    if isinstance(template, dict):
        return {key: fill(value, command) for key, value in template.items()}
    if isinstance(template, (list, tuple)):
        return [fill(value, command) for value in template]
    return command if template == "{command}" else template


def is_guard_handler(handler: Any) -> bool:
    if not isinstance(handler, dict):
        return False
    return any(
        isinstance(value, str) and any(mark in value.replace("\\", "/") for mark in GUARD_MARKS)
        for value in handler.values()
    )


def _event_list(obj: dict[str, Any], event: str) -> list:
    hooks = obj.get("hooks")
    found = hooks.get(event) if isinstance(hooks, dict) else None
    return found if isinstance(found, list) else []


def guard_positions(obj: dict[str, Any], event: str, grouped: bool) -> list[tuple[int, int]]:
    """(group index, handler index) of every guard handler in hooks.<event>; (index, -1) for
    a list of bare handlers."""
    found = []
    for gi, item in enumerate(_event_list(obj, event)):
        if not grouped:
            if is_guard_handler(item):
                found.append((gi, -1))
            continue
        handlers = item.get("hooks") if isinstance(item, dict) else None
        for hi, handler in enumerate(handlers if isinstance(handlers, list) else []):
            if is_guard_handler(handler):
                found.append((gi, hi))
    return found


def handler_at(obj: dict[str, Any], event: str, position: tuple[int, int]) -> dict[str, Any]:
    item = obj["hooks"][event][position[0]]
    return item if position[1] < 0 else item["hooks"][position[1]]


def new_item(entry: dict[str, Any], event: str, handler: dict[str, Any]) -> dict[str, Any]:
    """What an event's list gains to hold the guard's handler: its group (with the matcher the
    host module names for that event, if any), or the bare handler."""
    if not entry["grouped"]:
        return copy.deepcopy(handler)
    matcher = entry.get("matchers", {}).get(event)
    item = {"matcher": matcher} if matcher else {}
    item["hooks"] = [copy.deepcopy(handler)]
    return item


@dataclass
class Merge:
    obj: dict[str, Any]
    action: str  # added | updated | unchanged | removed | absent
    notes: list[str] = field(default_factory=list)


def merge_install(settings: dict[str, Any], entry: dict[str, Any], command: str) -> Merge:
    """Add or update the guard's handler in every list the host needs; never reorder anything."""
    obj = copy.deepcopy(settings) if settings else copy.deepcopy(entry.get("new_file", {}))
    wanted = fill(entry["handler"], command)
    grouped = entry["grouped"]
    actions, notes = set(), []
    for event in entry["events"]:
        positions = guard_positions(obj, event, grouped)
        if len(positions) > 1:
            extra = ", ".join(f"entry {gi}" for gi, _ in positions[1:])
            notes.append(
                f"more than one runaway-guard entry in {event}; the first was used, the others "
                f"({extra}) were left as they are: remove them by hand so the guard runs once."
            )
        if not positions:
            obj.setdefault("hooks", {}).setdefault(event, []).append(new_item(entry, event, wanted))
            actions.add("added")
            continue
        handler = handler_at(obj, event, positions[0])
        if all(handler.get(key) == value for key, value in wanted.items()):
            continue
        handler.update(wanted)  # same position; keys the person added stay
        actions.add("updated")
    action = "added" if "added" in actions else "updated" if actions else "unchanged"
    return Merge(obj, action, notes)


def merge_uninstall(settings: dict[str, Any], entry: dict[str, Any]) -> Merge:
    """Remove every guard handler, and what that left empty (group, list, `hooks`)."""
    obj = copy.deepcopy(settings)
    grouped, notes, removed = entry["grouped"], [], False
    for event in entry["events"]:
        positions = guard_positions(obj, event, grouped)
        if not positions:
            continue
        removed = True
        items = obj["hooks"][event]
        emptied = set()
        for gi, hi in reversed(positions):
            if hi < 0:
                emptied.add(gi)
                continue
            handlers = items[gi]["hooks"]
            del handlers[hi]
            if not handlers:
                emptied.add(gi)
        if emptied and max(emptied) < len(items) - 1:
            notes.append(
                f"entries after the removed one in {event} moved up by one position: a host "
                "that trusts hooks by position (Codex) shows them as changed; trust them again."
            )
        obj["hooks"][event] = [item for i, item in enumerate(items) if i not in emptied]
        if not obj["hooks"][event]:
            del obj["hooks"][event]
    if not removed:
        return Merge(obj, "absent")
    if not obj["hooks"]:
        del obj["hooks"]
    if obj == entry.get("new_file"):
        obj = {}  # only what a new file gets was left: the file said nothing before either
    return Merge(obj, "removed", notes)
