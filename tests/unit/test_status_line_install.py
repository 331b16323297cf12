"""The installer's status line entry (Claude Code, Qwen Code): added where the person has none,
never over theirs, and removed with the hook."""

from __future__ import annotations

import json

import pytest
from test_guard_rules import home_with, source  # noqa: F401 (a fixture)
from test_installer import parse, run

SKILLS = {"claude": ".claude/skills", "qwen": ".qwen/skills"}


@pytest.mark.parametrize("host", ["claude", "qwen"])
def test_the_guard_line_is_added_and_removed_with_the_hook(tmp_path, source, host):  # noqa: F811
    home, path = home_with(tmp_path, host, {"model": "x"})
    env = {"HOME": str(home)}
    code, out = run(["--host", host], env, source)
    assert code == 0, out
    line = parse(path)["statusLine"]
    assert line["type"] == "command" and line["command"].endswith("/guard.py' --statusline")
    status = line["command"].split("'")[3]
    assert status == str(home / SKILLS[host] / "runaway-guard/skill/guard.py")
    code, out = run(["--host", host, "--uninstall"], env, source)
    assert code == 0, out
    assert parse(path) == {"model": "x"}


def test_a_persons_own_status_line_is_kept(tmp_path, source):  # noqa: F811
    mine = {"statusLine": {"type": "command", "command": "~/.claude/mine.sh"}}
    home, path = home_with(tmp_path, "claude", mine)
    env = {"HOME": str(home)}
    code, out = run(["--host", "claude"], env, source)
    assert code == 0, out
    assert parse(path)["statusLine"] == mine["statusLine"]
    assert "A status line of your own is set" in out and "--statusline" in out
    assert run(["--host", "claude", "--uninstall"], env, source)[0] == 0
    assert json.loads(path.read_text()) == mine
