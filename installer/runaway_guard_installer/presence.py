"""Is the guard installed for the host a skill folder belongs to? status.py asks (through
skill/runaway_guard/setup_hint.py) when it finds no session: a skill copied into a host's
skills folder, by a person, an agent or the `skills` CLI, guards nothing until its hook is in
the host's settings, and then the person must still trust or restart the host.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType

from .check import hook_present
from .settings_file import InstallError
from .skill_folder import SKILL_NAME
from .targets import find_project_root, host_home, locate, plugged


def _under(folder: Path, base: Path) -> bool:
    try:
        folder.relative_to(base)
    except ValueError:
        return False
    return True


def host_of_folder(
    root: Path, modules: list[ModuleType], env: Mapping[str, str]
) -> ModuleType | None:
    """The host whose skills folder (user or project scope) or plugin copy holds `root`."""
    root = Path(os.path.realpath(root))
    for host in modules:
        spec = host.INSTALL
        home = host_home(spec, env)
        places = [home / spec["user"]["skills"] / SKILL_NAME]
        folder = (spec.get("plugin") or {}).get("folder")
        if folder:
            places.append(home / folder.format(name=SKILL_NAME))
        if any(_under(root, Path(os.path.realpath(place))) for place in places):
            return host
        project_skills = Path(spec["project"]["skills"]) / SKILL_NAME
        if root.parts[-len(project_skills.parts) :] == project_skills.parts:
            return host
    return None


def installed_for(host: ModuleType, env: Mapping[str, str], cwd: Path) -> list[str]:
    """Where the guard runs for `host` here: the installer's hook (user or project scope) or
    the host's plugin; empty when nowhere."""
    project = find_project_root(cwd)
    places = []
    for scope in ("user", "project"):
        target = locate(host, scope, project, env)
        try:
            if hook_present(target):
                places.append(str(target.settings))
        except (InstallError, OSError, ValueError):
            continue  # a file the host cannot read either runs no hook
    return places + plugged(locate(host, "project", project, env), env)


def missing(root: Path, modules: list[ModuleType], env: Mapping[str, str], cwd: Path) -> str:
    """advice() when the folder's host is known and has no hook; else '' (a report of another
    host's session would otherwise look like this host's)."""
    host = host_of_folder(root, modules, env)
    if host is None or installed_for(host, env, cwd):
        return ""
    return advice(root, modules, env, cwd)


def advice(root: Path, modules: list[ModuleType], env: Mapping[str, str], cwd: Path) -> str:
    """What status.py says when it finds no session: is the hook installed for this host, and
    if not, the command that installs it and what the person does after."""
    host = host_of_folder(root, modules, env)
    installer = f"python3 {root / 'installer' / 'install.py'}"
    if host is None:
        names = "|".join(sorted(h.NAME for h in modules))
        return (
            f"If its hook is not installed for the coding agent you run in, no tool call is "
            f"guarded. With the person's consent, install it: {installer} --host <{names}>"
        )
    where = installed_for(host, env, cwd)
    settings = locate(host, "user", None, env).settings
    values = {"changed": "", "project": cwd, "settings": settings, "settings_name": settings.name}
    after = " ".join(note.format(**values) for note in host.INSTALL["after_install"])
    if where:
        return (
            f"The hook is installed for {host.LABEL} ({'; '.join(where)}) but has not run yet. "
            f"{after}"
        )
    return (
        f"runaway-guard's hook is NOT installed for {host.LABEL} (the host whose skills folder "
        f"holds {root}), so no tool call is guarded. With the person's consent (it changes "
        f"{host.LABEL}'s settings), run: {installer} --host {host.NAME}\nThen: {after}"
    )
