"""An agent asked to install runaway-guard copies the skill folder into its host's skills folder
(as a clone, the `skills` CLI or the installer itself leaves it), finds that nothing guards the
session, and finishes with the commands SKILL.md gives, run from that folder."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "installer"))
from runaway_guard_installer.skill_folder import SKILL_ITEMS, skill_files  # noqa: E402

HOSTS = {"codex": (".codex", "Codex"), "claude": (".claude", "Claude Code")}


def copy_skill(dest: Path, items=SKILL_ITEMS) -> Path:
    """The skill folder's files, without what a run leaves (__pycache__)."""
    for rel, src in skill_files(ROOT).items():
        if rel.split("/")[0] in items:
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


def skill_md_install_command() -> list:
    """The install command SKILL.md tells the agent to run from the skill's folder."""
    text = (ROOT / "SKILL.md").read_text(encoding="utf-8")
    section = text.split("## When the hook is not installed", 1)[1].split("\n## ", 1)[0]
    (line,) = re.findall(r"^\s*(python3 installer/install\.py --host \w+)\s*$", section, re.M)
    return line.split()


def run(folder: Path, args: list, home: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RUNAWAY_GUARD_", "CODEX"))}
    env.update(HOME=str(home), XDG_STATE_HOME=str(home / "state"), XDG_CONFIG_HOME=str(home))
    env.pop("CLAUDE_CONFIG_DIR", None)
    args = [sys.executable if args[0] == "python3" else args[0], *args[1:]]
    return subprocess.run(
        args, cwd=str(folder if cwd is None else cwd), env=env, capture_output=True, text=True
    )


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_a_copied_skill_says_no_hook_then_installs_it_from_its_own_folder(tmp_path, host):
    dot, label = HOSTS[host]
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    folder = copy_skill(home / dot / "skills" / "runaway-guard")
    status = [sys.executable, str(folder / "skill" / "status.py")]

    said = run(folder, status, home, project)
    assert said.returncode == 2, said
    assert f"hook is NOT installed for {label}" in said.stderr, said.stderr
    assert f"{folder / 'installer' / 'install.py'} --host {host}" in said.stderr

    command = skill_md_install_command()
    command[command.index("--host") + 1] = host  # the agent names the host it runs in
    done = run(folder, command, home, None)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Next steps" in done.stdout
    check = run(folder, [*command, "--check"], home, None)
    assert check.returncode == 0 and "runaway-guard works" in check.stdout, check.stdout

    said = run(folder, status, home, project)
    assert said.returncode == 2 and f"installed for {label}" in said.stderr, said.stderr
    assert "but has not run yet" in said.stderr and "NOT installed" not in said.stderr


def test_a_copy_without_the_installer_names_the_route_through_a_clone(tmp_path):
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    items = tuple(item for item in SKILL_ITEMS if item != "installer")
    folder = copy_skill(home / ".codex" / "skills" / "runaway-guard", items)
    said = run(folder, [sys.executable, str(folder / "skill" / "status.py")], home, project)
    assert said.returncode == 2
    assert "has no installer/ folder" in said.stderr and "clone" in said.stderr, said.stderr


def test_a_folder_of_no_host_asks_for_the_host_by_name(tmp_path):
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    folder = copy_skill(tmp_path / "somewhere" / "runaway-guard")
    said = run(folder, [sys.executable, str(folder / "skill" / "status.py")], home, project)
    assert said.returncode == 2
    assert "--host <claude|codex|copilot|cursor|gemini|opencode|qwen>" in said.stderr, said.stderr


def test_a_report_of_another_hosts_session_says_this_host_has_no_hook(tmp_path, guard_env):
    """The person's Claude Code is guarded; the agent now runs in Codex, whose copy of the skill
    has no hook: the report shown is Claude Code's session, and status.py says so."""
    home, project = guard_env.home, tmp_path / "project"
    project.mkdir()
    guard_env.run(
        {
            "session_id": "claude-1",
            "transcript_path": None,
            "cwd": str(project),
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "ls"},
            "tool_use_id": "t1",
        }
    )
    folder = copy_skill(home / ".codex" / "skills" / "runaway-guard")
    env = {**guard_env.env, "PATH": os.environ["PATH"]}
    said = subprocess.run(
        [sys.executable, str(folder / "skill" / "status.py")],
        cwd=str(project),
        env=env,
        capture_output=True,
        text=True,
    )
    assert said.returncode == 0 and "claude-1" in said.stdout, said
    assert "recorded by another install" in said.stderr
    assert "hook is NOT installed for Codex" in said.stderr, said.stderr
