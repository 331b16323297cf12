"""Is runaway-guard already installed in a host through the host's own command (its plugin or
extension)? Then the installer does not add a second hook for that host: both would run the
guard on every call (each call would still be counted once, at twice the cost).

Where each host records it is data in the host module's INSTALL["plugin"]:
- "enabled_in": settings files per scope whose `enabledPlugins` holds `<name>@<marketplace>:
  true` (Claude Code, Copilot CLI);
- "folder": the folder the extension is installed in, under the host's home (Gemini CLI).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .skill_folder import SKILL_NAME


def _enabled_ids(path: Path) -> list[str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, ValueError):
        return []
    enabled = data.get("enabledPlugins") if isinstance(data, dict) else None
    if not isinstance(enabled, dict):
        return []
    return [key for key, on in enabled.items() if on is True and key.startswith(SKILL_NAME + "@")]


def find(spec: dict[str, Any] | None, home: Path, project: Path | None) -> list[str]:
    """Where the host shows runaway-guard installed as its plugin ("<id> in <file>"), if it does."""
    if not spec:
        return []
    found = []
    places = [(home, rel) for rel in spec.get("enabled_in", {}).get("user", ())]
    if project is not None:
        places += [(project, rel) for rel in spec.get("enabled_in", {}).get("project", ())]
    for base, rel in places:
        found += [f"{plugin} in {base / rel}" for plugin in _enabled_ids(base / rel)]
    folder = spec.get("folder")
    if folder and (home / folder.format(name=SKILL_NAME)).is_dir():
        found.append(f"{SKILL_NAME} in {home / folder.format(name=SKILL_NAME)}")
    return found


def commands(spec: dict[str, Any], key: str, source: str) -> list[str]:
    """The host's own commands for this ("install" or "uninstall"), filled in."""
    ident = spec.get("id", "{name}").format(name=SKILL_NAME)
    return [c.format(name=SKILL_NAME, id=ident, source=source) for c in spec.get(key, ())]
