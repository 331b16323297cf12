"""Project budgets and time limits inside the real Claude Code and Codex CLIs, offline.

A loop of `claude -p` runs (the published "keep going" loops) starts a fresh session each
time: only a cap on the project stops it. One person's HOME has the guard installed for both
hosts, so both share the guard's state, as on a real machine.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from claude_host import claude_bin, claude_env, claude_pin, prepare_home, run_claude
from codex_host import CodexHome, codex_bin, codex_pin, run_codex
from harness import Person, lines, require_cli, slow
from scripted_model import ScriptedModel, bash, is_side_request, text, usage

pytestmark = pytest.mark.e2e

SONNET = "claude-sonnet-4-6"
# 10000 input + 1 output tokens on claude-sonnet-4-6 ($3 / $15 per MTok): $0.030015 a response
DEAR = usage(10000, 1)
RUN_USD = 2 * 0.030015  # a run: its tool call and its final answer


def results_seen(body) -> int:
    """How many tool results the run's model has been given so far."""
    return sum(
        block.get("type") == "tool_result"
        for message in body.get("messages") or []
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict)
    )


def claude_turn(body):
    """Each run: three commands that leave a trace in ran.txt, then a final answer. (The guard
    sees a response at the run's next tool call: the last ones of a run are counted when a
    later call or status.py reads the transcript.)"""
    if results_seen(body) >= 3:
        return text("Done.", usage=DEAR)
    return bash("echo ran >> ran.txt", "Record the run", usage=DEAR)


def side(body):
    return text("Title", usage=usage(1, 1)) if is_side_request(body) else None


class Machine:
    """One person with the guard installed for Claude Code and Codex."""

    def __init__(self, tmp_path, model, **limits):
        require_cli(claude_bin(), "Claude Code", *claude_pin())
        require_cli(codex_bin(), "Codex", *codex_pin())
        self.person = Person(tmp_path, **limits)
        prepare_home(self.person.home)
        self.person.install("claude", "--scope", "user")
        self.codex_home = CodexHome(self.person.root / "codex-home", model.url, "gpt-5.5")
        self.person.install("codex", "--scope", "user", CODEX_HOME=self.codex_home.path)
        self.model = model

    def claude(self, cwd):
        return run_claude(
            "Go.", self.model.url, home=self.person.home, cwd=cwd, env=self.person.host_env()
        )

    def codex(self, cwd):
        env = self.person.host_env(HOME=self.person.home)
        return run_codex(self.codex_home, "Go.", cwd, env=env)

    def status(self, *args):
        script = self.person.home / ".claude" / "skills" / "runaway-guard" / "skill" / "status.py"
        done = subprocess.run(
            [sys.executable, str(script), "--json", *args],
            env=self.person.env(),
            cwd=str(self.person.project),
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        return json.loads(done.stdout)


def test_a_loop_of_claude_runs_is_stopped_by_the_project_cap_and_codex_too(tmp_path):
    scenario = {
        "anthropic_default": slow(claude_turn),
        "anthropic_route": side,
        "openai": [{"tool_calls": [{"shell": "echo codex >> ran.txt"}], "usage": {}}],
    }
    with ScriptedModel(scenario) as model:
        # $0.03 a response, about $0.0376 next (its input written to the cache again): a run
        # ($0.12) fits under $0.175 with its next request, the next run's first does not.
        machine = Machine(tmp_path, model, project_daily_usd=0.175)
        project = machine.person.project
        (project / ".git").mkdir()
        (project / ".git" / "HEAD").write_text("ref: refs/heads/loop\n")

        # The loop, as people write it: each run a new session of the same project.
        def loop(runs):
            done = subprocess.run(
                [
                    "sh",
                    "-c",
                    f'for i in $(seq {runs}); do "$CLAUDE" -p Go. '
                    f"--output-format json --model {SONNET}; echo; done",
                ],
                cwd=str(project),
                env={
                    **claude_env(machine.person.home, model.url, machine.person.host_env()),
                    "CLAUDE": claude_bin(),
                },
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
            found = [json.loads(line) for line in done.stdout.splitlines() if line[:1] == "{"]
            assert len(found) == runs, done.stdout[-3000:] + done.stderr[-3000:]
            return found

        # $0.03 a response, $0.12 a run: the second run first reads what the first one wrote
        # after its last call (its last answer), and its first call is refused.
        first = loop(2)
        assert first[0]["terminal_reason"] == "completed", first
        assert first[1]["terminal_reason"] == "hook_stopped", first
        ran = lines(project / "ran.txt")
        # the second run: refused at its first call, or at its second when the first run's last
        # answer or its own first response was not on disk yet (each then costs an estimate)
        assert len(ran) in (3, 4)
        later = loop(2)  # refused at their first prompt (issue 26's prompt hook): nothing runs
        for result in later:
            assert result["num_turns"] == 0 and result["total_cost_usd"] == 0, result
            assert result["result"].startswith("UserPromptSubmit operation blocked by hook")
            assert "runaway-guard stopped the agent: project " in result["result"], result
        assert lines(project / "ran.txt") == ran
        machine.codex(project / "sub")  # the same project, another host and folder: its
        # first call is refused and its run interrupted
        codex = [row for row in machine.status("--today")["sessions"] if row["host"] == "codex"]
        assert [(row["project"], row["state"]) for row in codex] == [
            (str(project), "refused:project")
        ]
        assert lines(project / "ran.txt") == ran
        other = machine.person.root / "other"
        run = machine.claude(other)  # another project is not held back
        assert run.result["terminal_reason"] == "completed", run.result
        assert lines(other / "ran.txt") == ["ran"] * 3

        status = machine.status("--session", later[1]["session_id"])
        assert status["blocked"]["wire"] == "project"
        assert status["project"]["path"] == str(project)
        assert status["project"]["branch"] == "loop"
        assert status["project"]["day_usd"] >= 0.12
        assert status["project"]["daily_cap_usd"] == 0.175
        month = machine.status("--month")
        assert [row["path"] for row in month["projects"]] == [str(project), str(other)]
        assert list(month["projects"][0]["branches"]) == ["loop"]


LIMITS = {  # both about 1.8 s
    "autonomy": ("RUNAWAY_GUARD_MAX_AUTONOMOUS_MINUTES", "0.03", "max_autonomous_minutes"),
    "time": ("RUNAWAY_GUARD_MAX_SESSION_HOURS", "0.0005", "max_session_hours"),
}


@pytest.mark.parametrize("claude_wire, codex_wire", [("autonomy", "time"), ("time", "autonomy")])
def test_wall_clock_and_autonomy_limits_end_a_session(tmp_path, claude_wire, codex_wire):
    """The first command takes 3 s; the limit is under that: the next call ends the run."""
    steps = [
        slow(bash("sleep 3; echo one >> ran.txt", "Wait", usage=usage(10, 1))),
        slow(bash("echo two >> ran.txt", "Again", usage=usage(10, 1))),
    ]
    shell = {"usage": {"input_tokens": 10, "output_tokens": 1}}
    codex_steps = [
        {"tool_calls": [{"shell": "sleep 3; echo one >> ran.txt"}], **shell},
        {"tool_calls": [{"shell": "echo two >> ran.txt"}], **shell},
    ]
    with ScriptedModel(
        {"anthropic": steps, "anthropic_route": side, "openai": codex_steps}
    ) as model:
        machine = Machine(tmp_path, model)
        variable, value, key = LIMITS[claude_wire]
        machine.person.limits = {variable: value}
        run = machine.claude(machine.person.project)
        assert run.result["terminal_reason"] == "hook_stopped", run.result
        assert lines(machine.person.project / "ran.txt") == ["one"]
        status = machine.status("--session", run.session_id)
        assert status["blocked"]["wire"] == claude_wire
        assert status[key] == float(value)

        variable, value, _ = LIMITS[codex_wire]
        machine.person.limits = {variable: value}
        other = machine.person.root / "codex-proj"
        machine.codex(other)
        assert lines(other / "ran.txt") == ["one"]
        sessions = machine.status("--today")["sessions"]
        codex = next(row for row in sessions if row["host"] == "codex")
        assert codex["state"] == f"refused:{codex_wire}"
