"""Where a host keeps its settings and skills, per scope, and whether it is in use here."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from . import plugin_route
from .skill_folder import (
    SKILL_NAME,
)


@dataclass
class Target:
    host: ModuleType
    scope: str
    settings: Path
    skill_dir: Path
    project: Path | None = None

    @property
    def entry(self) -> dict[str, Any]:
        return self.host.INSTALL["entry"]


def home_dir(env: Mapping[str, str]) -> Path:
    home = env.get("HOME")
    return Path(home) if home else Path(os.path.expanduser("~"))


def host_home(spec: dict[str, Any], env: Mapping[str, str]) -> Path:
    """The host's user folder: its variable, else its default under HOME (then its subfolder,
    where the variable names a folder shared with others, as XDG_CONFIG_HOME)."""
    home = spec["home"]
    base = env.get(home["variable"]) or str(home_dir(env) / home["default"])
    return Path(os.path.abspath(os.path.expanduser(base)), home.get("subfolder", ""))


def find_project_root(start: Path) -> Path:
    """The git repository root containing `start` (a `.git` folder or file), else `start`."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return start


def locate(host: ModuleType, scope: str, project: Path | None, env: Mapping[str, str]) -> Target:
    spec = host.INSTALL
    if scope == "user":
        base = host_home(spec, env)
        user = spec["user"]
        return Target(host, scope, base / user["settings"], base / user["skills"] / SKILL_NAME)
    root = Path(os.path.abspath(project)) if project else find_project_root(Path.cwd())
    here = spec["project"]
    return Target(host, scope, root / here["settings"], root / here["skills"] / SKILL_NAME, root)


def plugged(target: Target, env: Mapping[str, str]) -> list[str]:
    """Where the host shows runaway-guard installed through its own command (its plugin or
    extension): for every project (user scope), or also for this project (project scope)."""
    spec = target.host.INSTALL
    return plugin_route.find(spec.get("plugin"), host_home(spec, env), target.project)


def plugin_note(target: Target, where: list[str], verb: str) -> str:
    spec = target.host.INSTALL["plugin"]
    label = f"{target.host.LABEL}'s {spec.get('called', 'plugin')}"
    undo = " then ".join(f"`{c}`" for c in plugin_route.commands(spec, "uninstall", ""))
    return (
        f"runaway-guard is installed as {label} ({'; '.join(where)}): {verb} The "
        f"installer's hook is the faster route (README, Speed); to switch, run {undo}, then "
        "this installer again."
    )


def found_on_machine(host: ModuleType, env: Mapping[str, str]) -> bool:
    """A host is in use here when its variable is set, its folder exists or its CLI is on PATH."""
    spec = host.INSTALL
    # A variable of the host's own (CODEX_HOME) says it is used; a shared one (XDG_CONFIG_HOME,
    # with the host's subfolder under it) does not.
    home = spec["home"]
    own_variable = "subfolder" not in home and env.get(home["variable"])
    if own_variable or host_home(spec, env).is_dir():
        return True
    return any(which(binary, env) for binary in spec.get("binaries", ()))


def which(name: str, env: Mapping[str, str]) -> str | None:
    return shutil.which(name, path=env.get("PATH", ""))
