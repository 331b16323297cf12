"""The guard inside the real Qwen Code CLI (pinned 0.24.4), ``qwen -p``, offline.

Each test: a fresh HOME whose ``.qwen/settings.json`` points Qwen Code at the scripted Chat
Completions model on 127.0.0.1, ``installer/install.py --host qwen`` as a person runs it (hooks
on PreToolUse and UserPromptSubmit), the guard's limits in the environment, and the verdict from
the printed events, the chat file, the commands that really ran (a marker file) and the
installed ``status.py --json``.

The scripted model ignores refusals: it keeps calling until its script runs out, so a run ends
early only when the guard ends it. It answers at once (no delay): Qwen Code writes a response's
record before the hooks of the calls it made. Qwen's own loop detector halts a run at the 5th
identical call in a row (same tool, same arguments); the loop tests change the shell call's
`description` each time, which Qwen compares and the guard does not.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from harness import Person, lines, require_cli
from qwen_host import QwenHome, qwen_bin, run_qwen
from scripted_model import ScriptedModel

pytestmark = pytest.mark.e2e

REFUSED = "runaway-guard:"
# gpt-4.1: $2 input / $0.50 cached / $8 output per MTok; gpt-5-mini: $0.25 / $0.025 / $2
PRICES = {"gpt-4.1": (2.0, 0.5, 8.0), "gpt-5-mini": (0.25, 0.025, 2.0)}
SMALL = {"input_tokens": 100, "output_tokens": 10}
# 2000 input + 250 output tokens on gpt-4.1 = $0.004 + $0.002 = $0.006000
STEP_USAGE = {"input_tokens": 2000, "output_tokens": 250}
STEP_USD = 0.006


def sh(command: str, label: str = "", usage=None, **step) -> dict:
    call = {"name": "run_shell_command", "arguments": {"command": command}}
    if label:
        call["arguments"]["description"] = label
    return dict(step, calls=[call], usage=dict(usage or SMALL))


def final(message: str = "Done.", usage=None) -> dict:
    return {"text": message, "usage": dict(usage or SMALL)}


def cost(model: str, usage: dict) -> float:
    p_in, p_cached, p_out = PRICES[model]
    cached = usage.get("cached_tokens", 0)
    return (
        (usage["input_tokens"] - cached) * p_in + cached * p_cached + usage["output_tokens"] * p_out
    ) / 1e6


class Qwen:
    """A person's HOME with Qwen Code pointed at the model and the guard installed."""

    def __init__(self, tmp_path: Path, model_url: str, **limits):
        require_cli(qwen_bin(), "Qwen Code")
        self.person = Person(tmp_path, **limits)
        self.home = QwenHome(self.person.home, model_url, models=("gpt-5-mini",))
        self.install_output = self.person.install("qwen")

    @property
    def skill(self) -> Path:
        return self.home.qwen_dir / "skills" / "runaway-guard"

    def run(self, prompt: str = "Go.", **kwargs):
        run = run_qwen(self.home, prompt, self.person.project, env=self.person.host_env(), **kwargs)
        assert run.session_id, run.describe()
        return run

    def status(self, session_id: str) -> dict:
        return self.person.status(self.skill, session_id)

    def ran(self, name: str = "ran.txt") -> list:
        """The commands that really ran: each appends a line to a marker file."""
        return lines(self.person.project / name)


def refusals(run) -> list:
    """The tool results that carry one of the guard's refusals, as the model saw them."""
    return [r["content"] for r in run.tool_results() if REFUSED in str(r.get("content"))]


def served(model) -> list:
    return [(r["body"]["model"], r["step"]) for r in model.api_requests("chat")]


# ---------------------------------------------------------------------------------------------


def test_a_failure_run_is_stopped_by_the_sixth_failing_command(tmp_path):
    steps = [sh(f"echo {n} >> ran.txt; exit {n % 3 + 1}", f"try {n}") for n in range(1, 13)]
    with ScriptedModel({"chat": steps, "chat_default": final()}) as model:
        qwen = Qwen(tmp_path, model.url)  # the default limit: 5 failures in a row
        run = qwen.run()
        requests = len(model.api_requests("chat"))
    assert run.returncode == 0, run.describe()
    assert qwen.ran() == ["1", "2", "3", "4", "5"], run.describe()
    refused = refusals(run)
    # the 6th is refused, the 7th asked (a refusal in -p), the 8th stopped, and the run ends:
    # the request after the 8th call is never sent
    assert len(refused) == 3, refused
    assert "5 tool calls in a row have failed" in refused[0]
    assert requests == 8
    status = qwen.status(run.session_id)
    assert status["host"] == "qwen"
    assert status["blocked"]["wire"] == "failure"
    assert status["failures_in_a_row"] == 5


def test_an_identical_loop_is_stopped_by_the_sixth_call(tmp_path):
    # the same command and the same output every time; only its label changes
    steps = [sh("echo x >> ran.txt; echo same output", f"check, attempt {n}") for n in range(1, 15)]
    with ScriptedModel({"chat": steps, "chat_default": final()}) as model:
        qwen = Qwen(tmp_path, model.url)  # the default limit: 5 repeats
        run = qwen.run()
        requests = len(model.api_requests("chat"))
    # Under load Qwen Code now and then loses a command's output ("Output: (empty)"): a
    # different result, which starts the count again. The guard must stop the call that follows
    # the fifth identical result in a row as Qwen reported them: the fifth run, or later.
    results = [r["content"] for r in run.tool_results() if REFUSED not in str(r["content"])]
    runs = next((n for n in range(5, len(results) + 1) if len(set(results[n - 5 : n])) == 1), 0)
    assert runs and qwen.ran() == ["x"] * runs, run.describe() + qwen.person.guard_trace()
    assert len(set(results)) <= 2, results  # the loop itself: one result, at most one lost
    refused = refusals(run)
    assert len(refused) == 3 and "already ran 5 times with the same result" in refused[0]
    assert requests == runs + 3
    assert qwen.status(run.session_id)["blocked"]["wire"] == "loop"


def test_polls_and_edit_and_retest_are_never_refused(tmp_path):
    poll = "n=$(cat c 2>/dev/null || echo 0); echo $((n+1)) > c; echo $n"
    steps = [sh(poll, f"poll {n}") for n in range(8)]
    for v in range(1, 4):
        steps.append(sh(f"sed -i 's/^v = .*/v = {v}/' check.py", f"set v to {v}"))
        steps.append(sh("python3 check.py; echo v >> runs.txt", "run the check"))
        steps.append(sh("python3 check.py", "run the check again"))
    steps.append(final("All green."))
    with ScriptedModel({"chat": steps}) as model:
        qwen = Qwen(tmp_path, model.url, max_failures=3, max_repeats=3)
        (qwen.person.project / "check.py").write_text(
            "import sys\nv = 0\nsys.exit(0 if v >= 3 else 1)\n"
        )
        run = qwen.run()
    assert refusals(run) == [], refusals(run)
    assert (qwen.person.project / "c").read_text().strip() == "8"
    assert qwen.ran("runs.txt") == ["v", "v", "v"]
    assert run.result["result"] == "All green.", run.describe()
    assert qwen.status(run.session_id)["blocked"] is None


def test_a_spend_cap_ends_the_run_before_the_response_that_would_cross_it(tmp_path):
    cap = 0.03
    steps = [sh(f"echo {n} >> ran.txt", f"step {n}", STEP_USAGE) for n in range(1, 12)]
    with ScriptedModel({"chat": steps, "chat_default": final()}) as model:
        qwen = Qwen(tmp_path, model.url, max_usd=cap)
        run = qwen.run()
        requests = served(model)
    # after the 4th response ($0.024) the 5th (about $0.0065: its input, the last output
    # written back, the output) would cross $0.030. The 4th's record is usually on disk before
    # the hook of its call, which is then refused; under load it lands a moment later, the call
    # runs and the UserPromptSubmit before the 5th request ends the run. Either way no request
    # is sent that would cross the cap. On a busy machine a call whose response is not on disk
    # yet counts the next request twice (estimate.py), and the stop comes one response early.
    sent = len(requests)
    assert sent in (3, 4)
    refused = refusals(run)
    ran = [str(n) for n in range(1, sent + 1)]
    assert (qwen.ran(), len(refused)) in ((ran[:-1], 1), (ran, 0))
    assert all("would cross the session spend cap" in text for text in refused)
    status = qwen.status(run.session_id)
    assert status["blocked"]["wire"] == "session"
    assert status["spend_usd"] == pytest.approx(sent * STEP_USD, abs=1e-9)
    assert status["spend_usd"] <= cap
    assert status["spend_usd"] == pytest.approx(
        sum(cost("gpt-4.1", s["usage"]) for _, s in requests), abs=1e-6
    )


def test_spend_over_two_models_is_tokens_times_the_table(tmp_path):
    """One session, two runs: gpt-4.1 (served under its dated id), then `--continue -m
    gpt-5-mini`; cached input and reasoning tokens as OpenAI reports them."""
    first = [
        sh(
            "echo one > one.txt",
            "write",
            {"input_tokens": 12000, "output_tokens": 800},
            model="gpt-4.1-2025-04-14",
        ),
        sh(
            "cat one.txt",
            "read",
            {"input_tokens": 13500, "cached_tokens": 11776, "output_tokens": 450},
        ),
        final("Wrote it.", {"input_tokens": 15000, "cached_tokens": 13312, "output_tokens": 120}),
    ]
    second = [
        sh(
            "wc -c one.txt",
            "count",
            {
                "input_tokens": 17000,
                "cached_tokens": 15360,
                "output_tokens": 300,
                "reasoning_tokens": 128,
            },
        ),
        final("4 bytes.", {"input_tokens": 17400, "cached_tokens": 16896, "output_tokens": 60}),
    ]
    with ScriptedModel({"chat": first}) as model:
        qwen = Qwen(tmp_path, model.url)
        run1 = qwen.run("Write one.txt.")
        requests = served(model)
    with ScriptedModel({"chat": second}) as model:
        data = qwen.home.settings()
        for entry in data["modelProviders"]["openai"]:
            entry["baseUrl"] = model.url + "/v1"
        qwen.home.write_settings(data)
        run2 = qwen.run("Count its bytes.", args=("--continue", "-m", "gpt-5-mini"))
        requests += served(model)
    assert run1.session_id == run2.session_id
    expected = {"gpt-4.1": 0.0, "gpt-5-mini": 0.0}
    for requested, step in requests:
        expected[requested] += cost(requested, step["usage"])
    status = qwen.status(run2.session_id)
    assert status["unpriced_models"] == []
    assert status["spend_usd"] == pytest.approx(sum(expected.values()), abs=1e-6)
    by_model = {"gpt-4.1": 0.0, "gpt-5-mini": 0.0}
    for name, usd in status["by_model"].items():  # the served ids: dated for gpt-4.1's first
        by_model[name.replace("-2025-04-14", "")] += usd
    assert by_model == pytest.approx(expected, abs=1e-6)
    assert status["by_agent"] == pytest.approx({"main": sum(expected.values())}, abs=1e-6)
