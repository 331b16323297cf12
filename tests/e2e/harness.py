"""Shared pieces of the end-to-end suite: a fresh HOME, the installer, the guard's status.

Every test installs the guard with ``installer/install.py`` into a throwaway HOME exactly as a
person would, runs the real host CLI against the scripted model on 127.0.0.1, and reads the
verdict from what the host printed and wrote and from the installed ``status.py --json``.

The pinned CLIs come from tests/e2e/hosts_install.sh. A missing CLI FAILS the test (the suite
must never be skipped in CI).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pins
import pytest
from runaway_guard import state_file

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
INSTALLER = ROOT / "installer" / "install.py"
INSTALL_HINT = "run `bash tests/e2e/hosts_install.sh` to install the pinned host CLIs"

# Claude Code drains its transcript write queue every 100 ms (FLUSH_INTERVAL_MS=100 in the
# 2.1.328 binary): a model that answers within a few milliseconds can call its next tool before
# the previous tool result is on disk. Real models take far longer than that to stream a tool
# call; every scripted response here waits this long first, like a (very fast) real model.
LATENCY = 0.3

_DROP = (
    "CLAUDE_",
    "CLAUDECODE",
    "CODEX_",
    "RUNAWAY_GUARD_",
    "ANTHROPIC_",
    "OPENAI_",
    "XDG_",
    "GEMINI_",  # GEMINI_CLI_HOME would move the installer's ~/.gemini
    "GOOGLE_",
)


def require_cli(path, name: str, package=None, variable=None) -> str:
    """The CLI's path, or a test FAILURE (never a skip) that says how to install it.

    With ``package`` (npm) and ``variable`` (``RUNAWAY_GUARD_<HOST>_VERSION``), the installed
    version must also be the one asked for, so a run never reports on another version than
    the one named.
    """
    if not path or not Path(path).exists():
        pytest.fail(f"{name} CLI not found at {path}: {INSTALL_HINT}", pytrace=False)
    wrong = package and variable and pins.mismatch(package, variable)
    if wrong:
        pytest.fail(f"{wrong}: {INSTALL_HINT}", pytrace=False)
    return str(path)


def slow(step, delay: float = LATENCY):
    """A step answered after ``delay`` seconds (see LATENCY); callables are called after it."""

    def delayed(body):
        time.sleep(delay)
        return step(body) if callable(step) else step

    return delayed


def slow_all(steps, delay: float = LATENCY) -> list:
    return [slow(step, delay) for step in steps]


class Person:
    """A fresh HOME and the environment a person's shell would have in it."""

    def __init__(self, root: Path, **limits):
        self.root = Path(root)
        self.home = self.root / "home"
        self.home.mkdir(parents=True, exist_ok=True)
        self.project = self.root / "proj"
        self.project.mkdir(parents=True, exist_ok=True)
        self.limits = {f"RUNAWAY_GUARD_{k.upper()}": str(v) for k, v in limits.items()}

    @property
    def state_dir(self) -> Path:
        return self.home / ".local" / "state" / "runaway-guard"

    def env(self, **extra) -> dict:
        """The shell environment: nothing of the developer's own config leaks in."""
        out = {k: v for k, v in os.environ.items() if not k.startswith(_DROP)}
        out.pop("HOME", None)
        out.update(
            {
                "HOME": str(self.home),
                "XDG_STATE_HOME": str(self.home / ".local" / "state"),
                "XDG_CONFIG_HOME": str(self.home / ".config"),
            }
        )
        out.update(self.limits)
        out.update({k: str(v) for k, v in extra.items()})
        return out

    def host_env(self, **extra) -> dict:
        """What the runners add on top of their own environment (the guard's limits, XDG)."""
        out = {
            "XDG_STATE_HOME": str(self.home / ".local" / "state"),
            "XDG_CONFIG_HOME": str(self.home / ".config"),
        }
        out.update(self.limits)
        out.update({k: str(v) for k, v in extra.items()})
        return out

    def installer(self, host: str, *args, **env) -> subprocess.CompletedProcess:
        """``python3 installer/install.py --host <host> …`` as the person runs it."""
        return subprocess.run(
            [sys.executable, str(INSTALLER), "--host", host, *args],
            env=self.env(**env),
            cwd=str(self.project),
            capture_output=True,
            text=True,
            timeout=120,
        )

    def install(self, host: str, *args, **env) -> str:
        proc = self.installer(host, *args, **env)
        assert proc.returncode == 0, f"install.py {host} {args}: {proc.stdout}\n{proc.stderr}"
        return proc.stdout

    def check(self, host: str, *args, **env) -> subprocess.CompletedProcess:
        return self.installer(host, "--check", *args, **env)

    def status(self, skill_dir: Path, session_id: str, **env) -> dict:
        """``python3 <installed>/skill/status.py --json --session <id>``, as the person runs it."""
        script = Path(skill_dir) / "skill" / "status.py"
        proc = subprocess.run(
            [sys.executable, str(script), "--json", "--session", session_id],
            env=self.env(**env),
            cwd=str(self.project),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 0, f"status.py: {proc.stdout}\n{proc.stderr}"
        return json.loads(proc.stdout)

    def run_hook(self, settings_path: Path, payload: dict, **env) -> str:
        """Run the installed hook command (from the settings file) through ``sh -c``."""
        settings = json.loads(Path(settings_path).read_text(encoding="utf-8"))
        commands = [
            handler["command"]
            for group in settings["hooks"]["PreToolUse"]
            for handler in group["hooks"]
            if "runaway-guard/skill/guard.py" in handler.get("command", "")
        ]
        assert len(commands) == 1, commands
        proc = subprocess.run(
            ["sh", "-c", commands[0]],
            input=json.dumps(payload),
            env=self.env(**env),
            cwd=str(self.project),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    def hook_log(self) -> str:
        path = self.state_dir / "hook.log"
        return path.read_text(encoding="utf-8") if path.exists() else ""

    def guard_trace(self) -> str:
        """What a failed e2e assertion needs to tell a race from a misjudged outcome: the log,
        each session's calls as the wires saw them ([call hash, outcome] per agent), its spend
        (picodollars) and what blocked it."""
        out = [f"--- hook.log ---\n{self.hook_log()[-3000:]}"]
        for path in sorted(self.state_dir.glob("sessions/*/*.state")):
            state = state_file.read_state(str(path))
            seen = {
                "hist": {name: agent.get("hist") for name, agent in state["agents"].items()},
                "spend": state["spend"]["total"],
                "blocked": state["blocked"],
            }
            out.append(f"--- {path.name} ---\n{json.dumps(seen)}")
        return "\n".join(out)


# Calls that repeat without looping, never to be refused: a poll whose output changes each time
# (6 times: file `c` ends at 6), then three rounds of edit-and-retest whose test (check.py, to be
# written as CHECK_PY) fails until the third edit (runs.txt gets one "v" a round).
POLL = "n=$(cat c 2>/dev/null || echo 0); echo $((n+1)) > c; echo $n"
CHECK_PY = "import sys\nv = 0\nsys.exit(0 if v >= 3 else 1)\n"


def benign_commands() -> list:
    commands = [POLL] * 6
    for v in range(1, 4):
        commands.append(f"sed -i 's/^v = .*/v = {v}/' check.py")
        commands.append("python3 check.py; echo v >> runs.txt")
        commands.append("python3 check.py")
    return commands


def lines(path) -> list:
    """The lines of a marker file (each command that really ran appends one)."""
    path = Path(path)
    return path.read_text().split() if path.exists() else []
