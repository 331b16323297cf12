"""The installer's permission rules for the guard's folders (Claude Code, Qwen Code).

Where a host has rules of its own, its file tools ask before they change the guard's config,
state or skill folder, even where the hook cannot run; uninstall takes exactly those rules out
and leaves the person's own.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_installer import make_source, parse, run

RULES = [
    "Edit(~/.config/runaway-guard/**)",
    "Edit(~/.local/state/runaway-guard/**)",
]
SETTINGS = {"claude": ".claude/settings.json", "qwen": ".qwen/settings.json"}
SKILLS = {
    "claude": "Edit(~/.claude/skills/runaway-guard/**)",
    "qwen": "Edit(~/.qwen/skills/runaway-guard/**)",
}


@pytest.fixture
def source(tmp_path: Path) -> Path:
    return make_source(tmp_path / "src")


def home_with(tmp_path: Path, host: str, settings) -> tuple[Path, Path]:
    home = tmp_path / "home"
    path = home / SETTINGS[host]
    path.parent.mkdir(parents=True)
    if settings is not None:
        path.write_text(json.dumps(settings, indent=2))
    return home, path


@pytest.mark.parametrize("host", ["claude", "qwen"])
def test_install_adds_an_ask_rule_a_folder_and_uninstall_takes_them_out(tmp_path, source, host):
    mine = {"permissions": {"allow": ["Bash(ls:*)"], "ask": ["Bash(git push:*)"]}, "model": "x"}
    home, path = home_with(tmp_path, host, mine)
    env = {"HOME": str(home)}
    code, out = run(["--host", host], env, source)
    assert code == 0, out
    ask = parse(path)["permissions"]["ask"]
    assert ask == ["Bash(git push:*)", *RULES, SKILLS[host]]
    assert "asks before its file tools change the guard's folders" in out
    assert parse(path)["permissions"]["allow"] == ["Bash(ls:*)"]

    # again: nothing added twice, the file not written
    written = path.read_bytes()
    assert run(["--host", host], env, source)[0] == 0
    assert path.read_bytes() == written

    code, out = run(["--host", host, "--uninstall"], env, source)
    assert code == 0, out
    assert parse(path) == mine


def test_folders_outside_home_are_absolute_rules(tmp_path, source):
    home, path = home_with(tmp_path, "claude", None)
    state = tmp_path / "elsewhere" / "state"
    env = {"HOME": str(home), "RUNAWAY_GUARD_STATE_DIR": str(state)}
    assert run(["--host", "claude"], env, source)[0] == 0
    assert f"Edit(/{state}/**)" in parse(path)["permissions"]["ask"]
    assert run(["--host", "claude", "--uninstall"], env, source)[0] == 0
    assert "permissions" not in parse(path)


def test_uninstall_finds_rules_written_under_another_config_home(tmp_path, source):
    home, path = home_with(tmp_path, "claude", None)
    other = {"HOME": str(home), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    assert run(["--host", "claude"], other, source)[0] == 0
    assert f"Edit(/{tmp_path}/cfg/runaway-guard/**)" in parse(path)["permissions"]["ask"]
    assert run(["--host", "claude", "--uninstall"], {"HOME": str(home)}, source)[0] == 0
    assert "permissions" not in parse(path)


def test_an_existing_hook_gets_the_rules_on_upgrade(tmp_path, source):
    home, path = home_with(tmp_path, "claude", None)
    env = {"HOME": str(home)}
    assert run(["--host", "claude"], env, source)[0] == 0
    settings = parse(path)
    del settings["permissions"]  # as an older installer left it
    path.write_text(json.dumps(settings))
    code, out = run(["--host", "claude"], env, source)
    assert code == 0 and "hook updated in" in out
    assert parse(path)["permissions"]["ask"] == [*RULES, SKILLS["claude"]]


def test_rules_of_another_shape_are_left_alone_and_the_person_told(tmp_path, source):
    odd = {"permissions": {"ask": "Edit"}}
    home, path = home_with(tmp_path, "claude", odd)
    code, out = run(["--host", "claude"], {"HOME": str(home)}, source)
    assert code == 0
    assert "permissions.ask is not a list" in out
    assert parse(path)["permissions"] == {"ask": "Edit"}
    assert run(["--host", "claude", "--uninstall"], {"HOME": str(home)}, source)[0] == 0
    assert parse(path) == odd


def test_dry_run_shows_the_rules(tmp_path, source):
    home, path = home_with(tmp_path, "claude", None)
    code, out = run(["--host", "claude", "--dry-run"], {"HOME": str(home)}, source)
    assert code == 0
    assert '+      "Edit(~/.config/runaway-guard/**)",' in out
    assert not path.exists()
