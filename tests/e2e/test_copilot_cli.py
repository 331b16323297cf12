"""The guard inside the real GitHub Copilot CLI (pinned 1.0.102), ``copilot -p``, offline.

Each test: a fresh HOME, ``installer/install.py --host copilot`` (and/or ``--host claude
--scope project``, whose ``.claude/settings.local.json`` Copilot also runs) as a person runs it,
the guard's limits in the environment, ``copilot -p --allow-all-tools --trust-folder`` against the
scripted Chat Completions API on 127.0.0.1, and the verdict from what really ran (each scripted
command appends to a marker file), Copilot's events.jsonl and the installed ``status.py --json``.

The scripted model never gives up: it keeps calling tools whatever the guard answers, so a run
ends only because the guard ended it. On Copilot the ladder is: refuse (deny), ask (a denial in
``-p``), stop (a denial, then SIGINT to ``copilot -p``: "Operation aborted by user").
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from copilot_host import copilot_bin, run_copilot
from harness import Person, lines, require_cli
from scripted_model import ScriptedModel

pytestmark = pytest.mark.e2e

REFUSED = "Denied by preToolUse hook"
# gpt-4.1: $2 input, $0.50 cached input, $8 output per MTok; gpt-5-mini: $0.25 / $0.025 / $2
RATES = {"gpt-4.1": (2, 0.5, 8), "gpt-5-mini": (0.25, 0.025, 2)}
SMALL = {"input_tokens": 300, "output_tokens": 10}


def sh(command: str, usage=None, **step) -> dict:
    return dict(step, tool_calls=[{"shell": command}], usage=dict(usage or SMALL))


def final(text: str = "Done.", usage=None) -> dict:
    return {"text": text, "usage": dict(usage or SMALL)}


def cost(model: str, usages) -> float:
    """Tokens x the table, written out here (OpenAI counting: input includes cached)."""
    fresh_rate, cached_rate, out_rate = RATES[model]
    total = 0.0
    for u in usages:
        cached = u.get("cached_tokens", 0)
        total += (u["input_tokens"] - cached) * fresh_rate + cached * cached_rate
        total += u.get("output_tokens", 0) * out_rate
    return total / 1e6


class Copilot:
    """A person's HOME with the guard installed for Copilot and/or for Claude Code."""

    def __init__(self, tmp_path: Path, installs=("copilot",), **limits):
        require_cli(copilot_bin(), "Copilot")
        self.person = Person(tmp_path, **limits)
        self.output = ""
        for host in installs:
            args = ("--scope", "project", "--project", str(self.person.project))
            self.output += self.person.install(host, *(args if host == "claude" else ()))

    @property
    def copilot_home(self) -> Path:
        return self.person.home / ".copilot"

    @property
    def skill(self) -> Path:
        return self.copilot_home / "skills" / "runaway-guard"

    def run(self, model: ScriptedModel, model_name: str = "gpt-4.1", **kwargs):
        run = run_copilot(
            "Do the task.",
            model.url,
            home=self.person.home,
            project=self.person.project,
            model=model_name,
            env=self.person.host_env(),
            **kwargs,
        )
        assert run.session_id, f"{run!r}\n{run.stdout[-2000:]}\n{run.stderr[-2000:]}"
        assert "fail-open" not in self.person.hook_log(), self.person.hook_log()
        return run

    def status(self, session_id: str, skill: Path | None = None) -> dict:
        return self.person.status(skill or self.skill, session_id)

    def marker(self, name: str = "ran.txt") -> list:
        return lines(self.person.project / name)


def refusals(model: ScriptedModel) -> list:
    """The guard's refusals the model was shown, in the last request (tool messages)."""
    last = model.api_requests("chat")[-1]["body"]
    texts = [m.get("content") for m in last.get("messages", []) if m.get("role") == "tool"]
    return [t for t in texts if isinstance(t, str) and REFUSED in t]


def context_notes(model: ScriptedModel) -> str:
    """Every additionalContext the model was given (Copilot adds it as a user message)."""
    last = model.api_requests("chat")[-1]["body"]
    return json.dumps([m for m in last.get("messages", []) if m.get("role") == "user"])


# ---------------------------------------------------------------------------------------------


def test_failure_run_is_stopped_by_the_sixth_failing_command(tmp_path):
    """The scripted model answers at once (no delay) and never stops by itself."""
    steps = [sh(f"echo {n} >> ran.txt; exit 1") for n in range(1, 16)]
    with ScriptedModel({"chat": steps}) as model:
        copilot = Copilot(tmp_path)
        run = copilot.run(model)
        served = len(model.api_requests("chat"))
    assert copilot.marker() == ["1", "2", "3", "4", "5"], run.stdout[-3000:]
    assert run.aborted and run.returncode == 0  # ended by the guard, as Ctrl-C ends it
    assert served == 8  # the 6th refused, the 7th asked (a denial here), the 8th ended the run
    codes = [(r.get("error") or {}).get("code") for r in run.tool_results]
    assert codes[:5] == [None] * 5 and codes[5:7] == ["denied", "denied"]
    status = copilot.status(run.session_id)
    assert status["host"] == "copilot"
    assert status["failures_in_a_row"] == 5  # the guard's refusals are no failures
    assert status["blocked"]["wire"] == "failure"


def test_identical_loop_is_stopped_by_the_sixth_call(tmp_path):
    same = "echo x >> ran.txt; echo same output"
    with ScriptedModel({"chat": [sh(same) for _ in range(15)]}) as model:
        copilot = Copilot(tmp_path)
        run = copilot.run(model)
        shown = refusals(model)
    assert copilot.marker() == ["x"] * 5, run.stdout[-3000:]
    assert run.aborted
    assert "already ran 5 times with the same result" in shown[0]
    assert copilot.status(run.session_id)["blocked"]["wire"] == "loop"


def test_polls_and_edit_and_retest_are_never_refused(tmp_path):
    (tmp_path / "proj").mkdir(parents=True)
    (tmp_path / "proj" / "count").write_text("0\n")
    (tmp_path / "proj" / "fix.txt").write_text("try 0\n")
    poll = "n=$(cat count); echo $((n+1)) > count; echo polled $n"
    retest = "cat fix.txt; grep -q 'try 6' fix.txt"  # fails until the 6th edit
    steps = [sh(poll) for _ in range(8)]
    for n in range(1, 7):
        edit = {"name": "edit", "arguments": {"path": "fix.txt"}}
        edit["arguments"].update(old_str=f"try {n - 1}", new_str=f"try {n}")
        steps += [{"tool_calls": [edit], "usage": dict(SMALL)}, sh(retest)]
    with ScriptedModel({"chat": [*steps, final()]}) as model:
        copilot = Copilot(tmp_path, max_repeats=3, max_failures=3)
        run = copilot.run(model)
        shown = refusals(model)
    assert shown == [], shown
    assert not run.aborted
    assert (tmp_path / "proj" / "count").read_text().strip() == "8"
    results = run.tool_results
    assert len(results) == 8 + 12 and all(not r.get("error") for r in results)
    exit_codes = [(r.get("shellExecution") or {}).get("exitCode") for r in results[8:]]
    assert exit_codes[1::2] == [1, 1, 1, 1, 1, 0]
    assert copilot.status(run.session_id)["blocked"] is None


def test_spend_cap_ends_the_run_at_the_cap_while_the_model_ignores_refusals(tmp_path):
    # 10,000 input + 500 output tokens on gpt-4.1 = $0.024 a response: at the 5th's call
    # ($0.12, 80 %) the warning; at the 6th's ($0.144) the next would cross $0.15: the run ends
    usage = {"input_tokens": 10000, "output_tokens": 500}
    steps = [sh(f"echo {n} >> ran.txt", usage, delay=0.2) for n in range(1, 16)]
    with ScriptedModel({"chat": steps}) as model:
        copilot = Copilot(tmp_path, max_usd=0.15)
        run = copilot.run(model)
        requests = model.api_requests("chat")
        notes = context_notes(model)
    # the 6th, or one more when its record lands after its call's hook (Copilot writes late)
    assert len(requests) in (6, 7), len(requests)
    assert run.aborted
    assert "cap is spent" in notes or "remaining" in notes, notes  # the warning came first
    status = copilot.status(run.session_id)
    assert status["blocked"]["wire"] == "session"
    served = [r["step"]["usage"] for r in requests]
    assert status["spend_usd"] == pytest.approx(cost("gpt-4.1", served), abs=1e-6)


@pytest.mark.parametrize("model_name", ["gpt-4.1", "gpt-5-mini"])
def test_total_is_tokens_times_the_table(tmp_path, model_name):
    usages = [
        {"input_tokens": 12000, "cached_tokens": 8000, "output_tokens": 700},
        {"input_tokens": 15000, "cached_tokens": 11904, "output_tokens": 123},
        {"input_tokens": 4321, "output_tokens": 99},
    ]
    steps = [sh("echo one", usages[0]), sh("echo two", usages[1]), final("ok", usages[2])]
    with ScriptedModel({"chat": steps}) as model:
        copilot = Copilot(tmp_path)
        run = copilot.run(model, model_name=model_name)
    records = run.usage_records
    assert [r["model"] for r in records] == [model_name] * 3
    assert [r["cacheReadTokens"] for r in records] == [8000, 11904, 0]
    status = copilot.status(run.session_id)
    expected = cost(model_name, usages)
    assert status["spend_usd"] == pytest.approx(expected, abs=1e-6)
    assert status["by_model"] == {model_name: pytest.approx(expected, abs=1e-6)}
    assert status["unpriced_models"] == []


def test_a_claude_scope_install_guards_copilot_and_counts_each_call_once(tmp_path):
    """Installed for Claude Code in the project and for Copilot: Copilot runs both entries for
    every call; a loop still needs 5 identical calls, not 3, and a failure run 5, not 3."""
    same = "echo x >> ran.txt; echo same output; exit 1"
    with ScriptedModel({"chat": [sh(same) for _ in range(15)]}) as model:
        copilot = Copilot(tmp_path, installs=("claude", "copilot"))
        settings = json.loads((copilot.person.project / ".claude/settings.local.json").read_text())
        run = copilot.run(model)
        served = len(model.api_requests("chat"))
    assert '"matcher": ""' not in json.dumps(settings)  # Copilot rejects the file over one
    assert copilot.marker() == ["x"] * 5, run.stdout[-3000:]
    assert run.aborted
    assert served == 8  # refuse, ask, stop: one rung per call, not one per install
    status = copilot.status(run.session_id)
    assert status["host"] == "copilot"
    assert status["failures_in_a_row"] == 5
    sessions = copilot.person.state_dir / "sessions"
    assert [p.name for p in sessions.iterdir()] == ["copilot"]  # never booked as Claude's


def test_a_claude_scope_install_alone_guards_copilot(tmp_path):
    steps = [sh(f"echo {n} >> ran.txt; exit 2") for n in range(1, 12)]
    with ScriptedModel({"chat": steps}) as model:
        copilot = Copilot(tmp_path, installs=("claude",), max_failures=3)
        run = copilot.run(model)
    assert copilot.marker() == ["1", "2", "3"], run.stdout[-3000:]
    assert run.aborted
    skill = copilot.person.project / ".claude" / "skills" / "runaway-guard"
    status = copilot.status(run.session_id, skill)
    assert status["host"] == "copilot" and status["blocked"]["wire"] == "failure"
