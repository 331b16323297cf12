"""The guard's line in the real Claude Code's status line: the interactive TUI in a private tmux
server, as a person runs it, offline against the scripted model. The line is captured from the
screen, and changes from ok to warned to stopped as the session crosses its cap."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import time

import pytest
from claude_host import claude_bin, claude_env, claude_pin, prepare_home
from harness import Person, require_cli, slow_all
from scripted_model import ScriptedModel, bash, text

STEP_USAGE = {"input_tokens": 2995, "output_tokens": 1}  # $0.009 a response on Sonnet 4.6
KEY = "sk-ant-test-0123456789abcdefghij"

pytestmark = pytest.mark.e2e


def trust(home, project):
    """What a person has clicked through once: onboarding, the folder's trust, the API key."""
    path = home / ".claude.json"
    state = json.loads(path.read_text()) if path.exists() else {}
    state.update(
        {
            "hasCompletedOnboarding": True,
            "theme": "dark",
            "customApiKeyResponses": {"approved": [KEY[-20:]], "rejected": []},
            "projects": {str(project): {"hasTrustDialogAccepted": True, "allowedTools": []}},
        }
    )
    path.write_text(json.dumps(state))


class Tmux:
    """A private tmux server with one pane running command; killed by close()."""

    def __init__(self, name, command, env, cwd):
        self.server = name
        self.run(
            "new-session",
            "-d",
            "-s",
            "s",
            "-x",
            "160",
            "-y",
            "40",
            "-c",
            str(cwd),
            command,
            env=env,
        )

    def run(self, *args, env=None):
        return subprocess.run(
            ["tmux", "-L", self.server, *args], capture_output=True, text=True, env=env, timeout=20
        )

    def screen(self):
        return self.run("capture-pane", "-p", "-t", "s").stdout

    def type(self, line):
        self.run("send-keys", "-t", "s", "-l", line)
        time.sleep(0.3)
        self.run("send-keys", "-t", "s", "Enter")

    def close(self):
        self.run("kill-server")


def guard_lines(screen):
    return [line.strip() for line in screen.splitlines() if line.strip().startswith("guard $")]


def test_the_status_line_shows_the_guard_and_follows_the_session(tmp_path):
    require_cli(claude_bin(), "Claude Code", *claude_pin())
    # The warning at half the cap: a stop comes before the response that would cross it (about
    # $0.011 next at $0.009 a response), so at 80 % the line would go from ok to stopped.
    person = Person(tmp_path, max_usd=0.05, warn_at=0.5)
    prepare_home(person.home)
    out = person.install("claude")
    assert "statusLine" in (person.home / ".claude" / "settings.json").read_text(), out
    trust(person.home, person.project)
    steps = [
        bash(f"echo {n} >> ran.txt", f"Step {n}", usage=dict(STEP_USAGE)) for n in range(1, 12)
    ]
    seen = []
    with ScriptedModel({"anthropic": slow_all([*steps, text("Done.")], 1.0)}) as model:
        env = claude_env(person.home, model.url, {**person.host_env(), "ANTHROPIC_API_KEY": KEY})
        env.pop("NO_COLOR", None)
        env["TERM"] = "xterm-256color"
        command = shlex.join([claude_bin(), "--model", "claude-sonnet-4-6"])
        tui = Tmux(f"rg-statusline-{os.getpid()}", command, env, person.project)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not guard_lines(tui.screen()):
                time.sleep(0.2)
            tui.type("Go.")
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:
                for line in guard_lines(tui.screen()):
                    if not seen or seen[-1] != line:
                        seen.append(line)
                if seen and "stopped" in seen[-1]:
                    break
                time.sleep(0.1)
        finally:
            tui.close()
    assert seen[0] == "guard $0.00 / $0.05 · ok"
    states = [line.rpartition(" · ")[2] for line in seen]
    assert "warned" in states and states[-1] == "stopped: session"
    assert states.index("warned") < states.index("stopped: session")
