"""Claude Code's turns without tool calls, its subagents' ends and a run's last answer, in the
real CLI (the pinned version), print mode, offline.

- A model that answers the same text turn after turn, kept going by a "keep going" Stop hook
  beside the guard's (as published "Ralph" plugins do): the guard counts the same answers
  (text_loops) and ends the turn at the loop limit.
- A subagent that spends past the session's cap: the guard's PostToolUse of the Agent tool
  ends the run before the main thread's next request (SubagentStop's `continue: false` would
  only end the subagent).
- `claude -p` in a loop under a daily cap: the Stop at a run's end books its last answer, so
  the next run is refused at its first prompt.
"""

from __future__ import annotations

import pytest
from harness import slow
from scripted_model import ScriptedModel, bash, text
from test_ceiling import keep_going_hook
from test_claude_code import Claude, agent_scenario
from test_project_budgets import results_seen

pytestmark = pytest.mark.e2e

SAME = "I am still working on it."
# 20000 input + 1 output tokens on claude-sonnet-4-6 ($3 / $15 per MTok): $0.060015
DEAR = {"input_tokens": 20000, "output_tokens": 1}
CHEAP = {"input_tokens": 100, "output_tokens": 10}  # $0.00045


def test_the_same_answer_kept_going_by_a_stop_hook_is_ended_at_the_loop_limit(tmp_path):
    claude = Claude(tmp_path, max_repeats=3)
    keep_going_hook(claude)
    with ScriptedModel({"anthropic_default": slow(text(SAME, usage=CHEAP))}) as model:
        run = claude.run(model, "Do the task.")
        answers = len(model.api_requests())
    # Claude Code alone would go on for 8 blocks of the other hook (9 answers); the guard's
    # continue:false at the third same answer's Stop outranks the other hook's block.
    assert answers == 3, run.result
    status = claude.status(run.session_id)
    assert status["blocked"]["wire"] == "loop", status["blocked"]
    assert "same text 3 times in a row" in status["blocked"]["reason"]


def test_a_subagent_that_spends_past_the_cap_ends_the_run_before_the_next_request(tmp_path):
    cap = 0.05
    claude = Claude(tmp_path, max_usd=cap)
    sub = "SUBAGENT-SPENDS"
    sub_steps = [
        bash("echo s1 >> sub.txt", "One", usage=dict(CHEAP)),
        text("Checked.", usage=dict(DEAR)),  # the subagent's last answer crosses the cap
    ]
    with ScriptedModel(agent_scenario(sub, sub_steps, CHEAP)) as model:
        run = claude.run(model)
        requests = len(model.api_requests())
    # the main thread's Agent call, the subagent's two answers; no request of the main thread
    # after the subagent's end (before: its next response was paid, and refused at its call)
    assert requests == 3, run.result
    assert claude.marker("sub.txt") == ["s1"] and claude.marker("main.txt") == []
    assert run.result["terminal_reason"] == "hook_stopped", run.result
    status = claude.status(run.session_id)
    assert status["blocked"]["wire"] == "session"
    assert status["spend_usd"] == pytest.approx(0.00045 * 2 + 0.060015, abs=1e-9)
    assert status["spend_usd"] == pytest.approx(run.result["total_cost_usd"], abs=1e-9)


def one_call_then_a_dear_answer(body):
    """Each run: a cheap tool call, then its last answer, dear, after its last tool call."""
    if results_seen(body):
        return text("Done.", usage=dict(DEAR))
    return bash("echo ran >> ran.txt", "Record the run", usage=dict(CHEAP))


def test_a_runs_last_answer_is_counted_before_the_next_run_of_a_loop(tmp_path):
    """Under a daily cap the first run's last answer ($0.06) crosses it ($0.05) after the run's
    last tool call: the Stop at its end books it, and the next run is refused at its prompt."""
    claude = Claude(tmp_path, daily_usd=0.05)
    with ScriptedModel({"anthropic_default": slow(one_call_then_a_dear_answer)}) as model:
        first = claude.run(model)
        second = claude.run(model)
        requests = len(model.api_requests())
    assert first.result["total_cost_usd"] == pytest.approx(0.00045 + 0.060015, abs=1e-9)
    assert claude.marker() == ["ran"]
    assert requests == 2, second.result  # the second run sent none
    assert second.result["num_turns"] == 0 and second.result["total_cost_usd"] == 0
    assert second.result["result"].startswith("UserPromptSubmit operation blocked by hook")
    assert "daily spend $0.06 reached its cap of $0.05" in second.result["result"]
