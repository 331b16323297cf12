"""Loops without tool calls inside the real Copilot CLI (pinned 1.0.102), offline.

Copilot's autopilot (`--autopilot`) answers each turn that ends without a tool call with a
"keep working" continuation, up to `--max-autopilot-continues`. A model that answers the same
words every time never calls a tool: the guard counts the same answers at each turn's end
(agentStop) and ends the run at the loop limit.
"""

from __future__ import annotations

import pytest
from copilot_host import copilot_bin, run_copilot
from harness import Person, require_cli
from scripted_model import ScriptedModel

pytestmark = pytest.mark.e2e

SAME = {"text": "I am still working on it.", "usage": {"input_tokens": 300, "output_tokens": 10}}


def test_copilot_autopilot_loop_without_tool_calls_is_ended_at_the_loop_limit(tmp_path):
    require_cli(copilot_bin(), "Copilot")
    person = Person(tmp_path, max_repeats=3)
    person.install("copilot")
    with ScriptedModel({"chat_default": SAME}) as model:
        run = run_copilot(
            "Do the task.",
            model.url,
            home=person.home,
            project=person.project,
            env=person.host_env(),
            args=["--autopilot", "--max-autopilot-continues", "20"],
        )
        answers = len(model.api_requests("chat"))
    assert run.session_id, run.stdout[-2000:]
    # The third same answer reaches the limit: the run ends before a fourth is asked for.
    assert answers == 3, run.stdout[-2000:]
    status = person.status(person.home / ".copilot" / "skills" / "runaway-guard", run.session_id)
    assert status["blocked"]["wire"] == "loop"
    assert (
        "same answer" in status["blocked"]["reason"] or "same text" in status["blocked"]["reason"]
    )
