"""The skill runs on Python 3.9 (macOS ships it): the guard, status.py and the installer, run by
a real 3.9 interpreter over a recorded session. vermin checks the syntax; this checks the run."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from claude_records import pre_tool_use
from guard_env import GUARD, ROOT, SKILL

FIXTURES = ROOT / "tests" / "fixtures" / "claude"


def python39():
    for candidate in ("/root/.pyenv/versions/3.9.18/bin/python3", shutil.which("python3.9")):
        if candidate and os.path.exists(candidate):
            version = subprocess.run(
                [candidate, "-c", "import sys; print(sys.version_info[:2])"],
                capture_output=True,
                text=True,
                check=False,
            ).stdout.strip()
            if version == "(3, 9)":
                return candidate
    pytest.skip("no Python 3.9 interpreter on this machine")


def test_guard_status_and_installer_on_python_39(tmp_path, guard_env):
    python = python39()
    shutil.copytree(FIXTURES / "models", tmp_path / "models")
    result = json.loads((FIXTURES / "models" / "result.json").read_text())
    main = tmp_path / "models" / f"{result['session_id']}.jsonl"
    payload = pre_tool_use(main, "toolu_py39", session=result["session_id"])
    env = guard_env.env
    done = subprocess.run(
        [python, "-I", "-S", str(GUARD)],
        input=json.dumps(payload).encode(),
        capture_output=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0 and done.stderr == b""
    assert not (guard_env.state_dir / "hook.log").exists()  # no fail-open
    status = subprocess.run(
        [python, str(SKILL / "status.py"), "--json", "--session", result["session_id"]],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert abs(json.loads(status.stdout)["spend_usd"] - result["total_cost_usd"]) < 1e-6
    home = tmp_path / "home39"
    for host_folder in (".claude", ".codex"):
        (home / host_folder).mkdir(parents=True)
    install = subprocess.run(
        [python, str(ROOT / "installer" / "install.py"), "--host", "all"],
        capture_output=True,
        text=True,
        env={"PATH": os.environ["PATH"], "HOME": str(home)},
        check=False,
    )
    assert install.returncode == 0, install.stderr
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    command = settings["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    assert command.startswith(f"'{python}' -I -S ")
    assert Path(home / ".codex" / "skills" / "runaway-guard" / "skill" / "guard.py").exists()


def test_the_served_guard_on_python_39(guard_env):
    """OpenCode's plugin keeps `guard.py --serve` running: a line in, a line out, on 3.9 too."""
    call = {
        "runaway_guard_plugin": "opencode",
        "hook_event_name": "tool.execute.before",
        "session_id": "ses_39",
        "tool_name": "bash",
        "tool_input": {"command": "ls"},
        "cwd": "/proj",
    }
    lines = [b"junk"] + [json.dumps(dict(call, call_id=f"c{n}")).encode() for n in range(5)]
    done = subprocess.run(
        [python39(), "-I", "-S", str(GUARD), "--serve"],
        input=b"\n".join(lines) + b"\n",
        capture_output=True,
        env=guard_env.env,
        check=False,
    )
    assert done.returncode == 0 and done.stderr == b""
    answers = done.stdout.split(b"\n")
    assert answers[:5] == [b""] * 5 and answers[6:] == [b""]
    assert json.loads(answers[5])["decision"] == "tell"  # the 5th identical call
