"""Which host CLI versions the e2e suite runs: the pins in hosts_install.sh, or the versions
named by ``RUNAWAY_GUARD_<HOST>_VERSION`` (README, Development). Standard library only."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "hosts_install.sh"
PREFIX = HERE / ".hosts"


def wanted(variable: str) -> str:
    """The version asked for: ``$variable`` when set, else the pin hosts_install.sh gives it."""
    override = os.environ.get(variable)
    if override:
        return override
    found = re.search(r"\$\{" + re.escape(variable) + r":-([^}]+)\}", SCRIPT.read_text())
    if not found:
        raise LookupError(f"{SCRIPT.name} pins no version through {variable}")
    return found.group(1)


def cli(name: str):
    """Path of the pinned CLI ``name`` (``$RUNAWAY_GUARD_<NAME>_BIN`` names another binary), or
    None when it is not there."""
    path = os.environ.get(f"RUNAWAY_GUARD_{name.upper()}_BIN") or str(
        PREFIX / "node_modules" / ".bin" / name
    )
    return path if os.path.exists(path) else None


def installed(package: str):
    """The version of an npm package under tests/e2e/.hosts, or None."""
    manifest = PREFIX / "node_modules" / package / "package.json"
    try:
        return json.loads(manifest.read_text()).get("version")
    except (OSError, ValueError):
        return None


def mismatch(package: str, variable: str):
    """Why the installed CLI is not the one asked for, or None when it is (or a tag was asked
    for, such as ``latest``, which only the registry can resolve: hosts_install.sh did)."""
    want = wanted(variable)
    have = installed(package)
    if not want[:1].isdigit() or have == want:
        return None
    return f"{package} {have or 'missing'} is installed, {want} is asked for ({variable})"
