"""The files that make this repository, unchanged, a plugin or an extension of the hosts that
install things with a command of their own (Claude Code and Copilot CLI: a marketplace of one
plugin; Gemini CLI: an extension).

Every fact comes from one place: the name, version, description, author and license from
SKILL.md's frontmatter; the file layout, the hook events, the handler's shape and the variable
naming the plugin's folder from the host module's INSTALL["plugin"] and INSTALL["entry"]. The
files are committed (a host reads them straight from a clone); `installer/manifests.py` writes
them and `--check` (and tests/unit/test_manifests.py) fails when they disagree with this.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .hook_list import fill, guard_command, new_item

# Not the installer's absolute interpreter: a plugin's command is the same on every machine, so
# it names `python3` and lets PATH find it (README, "Speed": what that costs behind a shim).
PLUGIN_PYTHON = "python3"


def plugin_command(root: str, entry: dict[str, Any] | None = None) -> str:
    """The hook command of a plugin whose folder the host names with `root` (a variable)."""
    return guard_command(PLUGIN_PYTHON, f'"{root}/skill/guard.py"', entry)


def frontmatter(skill_md: str) -> dict[str, str]:
    """SKILL.md's `key: value` lines, nested ones (`metadata:` block) as `metadata.key`."""
    lines = skill_md.splitlines()
    if not lines or lines[0].strip() != "---":
        raise ValueError("SKILL.md has no frontmatter")
    values: dict[str, str] = {}
    parent = ""
    for line in lines[1:]:
        if line.strip() == "---":
            return values
        if not line.strip() or ":" not in line:
            continue
        key, _, value = line.partition(":")
        nested = line[:1] in (" ", "\t")
        key, value = key.strip(), value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        if not nested:
            parent = key if not value else ""
            if value:
                values[key] = value
        elif parent:
            values[f"{parent}.{key}"] = value
    raise ValueError("SKILL.md's frontmatter is not closed")


def skill_facts(source: Path) -> dict[str, str]:
    meta = frontmatter((source / "SKILL.md").read_text(encoding="utf-8"))
    return {
        "name": meta["name"],
        "version": meta["metadata.version"],
        # what it does, for a listing; the rest ("Use when ...") tells a model when to load it
        "description": meta["description"].split(" Use when ")[0],
        "author": meta["metadata.author"],
        "license": meta["license"],
    }


def hook_map(entry: dict[str, Any], command: str) -> dict[str, Any]:
    """The host's `{event: [...]}` map holding the guard's handler, as its settings hold it."""
    handler = fill(entry["handler"], command)
    return {event: [new_item(entry, event, handler)] for event in entry["events"]}


def _render(template: Any, values: dict[str, Any]) -> Any:
    if isinstance(template, dict):
        return {key: _render(value, values) for key, value in template.items()}
    if isinstance(template, (list, tuple)):
        return [_render(value, values) for value in template]
    if isinstance(template, str):
        if template.startswith("{") and template.endswith("}") and template[1:-1] in values:
            return values[template[1:-1]]  # a whole value: may be an object (the hooks)
        return template.format(**values)
    return template


def plugin_hosts(modules) -> list:
    """The hosts whose module says which manifests make the repository its plugin."""
    return [h for h in modules if h.INSTALL and (h.INSTALL.get("plugin") or {}).get("manifests")]


def build(source: Path, modules) -> dict[str, bytes]:
    """Relative path -> the bytes each host's manifests must have."""
    facts = skill_facts(source)
    files: dict[str, bytes] = {}
    for host in plugin_hosts(modules):
        spec = host.INSTALL["plugin"]
        entry = host.INSTALL["entry"]
        values = dict(facts, hooks=hook_map(entry, plugin_command(spec["root"], entry)))
        for path, template in spec.get("manifests", {}).items():
            if path in files:
                raise ValueError(f"{path}: written by two hosts ({host.NAME} and another)")
            text = json.dumps(_render(template, values), indent=2, ensure_ascii=False) + "\n"
            files[path] = text.encode("utf-8")
    return files


def stale(source: Path, modules) -> list[str]:
    """The manifests that are missing or differ from what build() gives."""
    out = []
    for path, wanted in build(source, modules).items():
        target = source / path
        if not target.is_file() or target.read_bytes() != wanted:
            out.append(path)
    return out


def write(source: Path, modules) -> list[str]:
    written = []
    for path, data in build(source, modules).items():
        target = source / path
        if target.is_file() and target.read_bytes() == data:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        written.append(path)
    return written
