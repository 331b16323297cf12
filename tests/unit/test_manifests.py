"""The plugin and extension manifests agree with the host modules and SKILL.md (one source for
each fact), and the hook command they carry runs the guard."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from guard_env import ROOT
from runaway_guard import hosts

sys.path.insert(0, str(ROOT / "installer"))
from runaway_guard_installer import manifests

MODULES = [hosts.load(name) for name in hosts.NAMES]
WITH_PLUGIN = manifests.plugin_hosts(MODULES)


def test_committed_manifests_are_what_the_host_modules_say():
    stale = manifests.stale(ROOT, MODULES)
    assert not stale, f"{stale}: run python3 installer/manifests.py"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "installer" / "manifests.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr


def test_a_changed_fact_makes_the_check_fail(tmp_path):
    copy = tmp_path / "src"
    for rel in ["SKILL.md", *manifests.build(ROOT, MODULES)]:
        (copy / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, copy / rel)
    assert not manifests.stale(copy, MODULES)
    skill_md = copy / "SKILL.md"
    skill_md.write_text(skill_md.read_text().replace('version: "', 'version: "9', 1))
    assert manifests.stale(copy, MODULES)  # the version is SKILL.md's
    assert manifests.write(copy, MODULES)
    assert not manifests.stale(copy, MODULES)
    claude = json.loads((copy / ".claude-plugin" / "plugin.json").read_text())
    assert claude["version"].startswith("9")


@pytest.mark.parametrize("host", WITH_PLUGIN, ids=lambda host: host.NAME)
def test_each_manifest_hook_is_the_host_entry_with_the_plugin_command(host):
    spec = host.INSTALL["plugin"]
    entry = host.INSTALL["entry"]
    command = manifests.plugin_command(spec["root"])
    found = []
    for path in spec["manifests"]:
        data = json.loads((ROOT / path).read_text())
        hooks = data.get("hooks")
        if isinstance(hooks, dict):
            found.append(hooks.get("hooks", hooks))
    assert found, f"{host.NAME}: no manifest carries the hook"
    (events,) = found
    assert set(events) == set(entry["events"])
    for items in events.values():
        (item,) = items
        (handler,) = item["hooks"] if entry["grouped"] else [item]
        assert handler["command"] == command
        assert {k: v for k, v in handler.items() if k != "command"} == {
            k: v for k, v in entry["handler"].items() if k != "command"
        }


def test_frontmatter_reads_nested_and_quoted_values():
    text = '---\nname: x\ndescription: "a: b"\nmetadata:\n  version: "1.2"\n  author: me\n---\n'
    assert manifests.frontmatter(text) == {
        "name": "x",
        "description": "a: b",
        "metadata.version": "1.2",
        "metadata.author": "me",
    }
    with pytest.raises(ValueError):
        manifests.frontmatter("name: x\n")
    with pytest.raises(ValueError):
        manifests.frontmatter("---\nname: x\n")


@pytest.mark.parametrize("host", WITH_PLUGIN, ids=lambda host: host.NAME)
def test_the_plugin_command_runs_the_guard_from_the_plugin_folder(host, tmp_path):
    """The command as the host runs it (sh -c, the folder in the host's variable or, for a host
    that writes the path in, already there): one call of garbage input is ignored, saying so."""
    command = manifests.plugin_command(host.INSTALL["plugin"]["root"])
    variable = host.INSTALL["plugin"]["root"][2:-1]
    env = dict(os.environ, RUNAWAY_GUARD_STATE_DIR=str(tmp_path / "state"))
    env[variable] = str(ROOT)
    command = command.replace(host.INSTALL["plugin"]["root"], f"${{{variable}}}")
    proc = subprocess.run(
        ["sh", "-c", command], input=b"{not json", env=env, capture_output=True, timeout=60
    )
    assert proc.returncode == 0 and proc.stdout == b""
    assert " ignored UnreadableInput" in (tmp_path / "state" / "hook.log").read_text()
