"""Loops without tool calls (text_loops.py) and Copilot's autopilot turns, from the recorded
autopilot session (tests/fixtures/copilot/autopilot): the same answer five times."""

import json
import shutil
from pathlib import Path

import pytest
from runaway_guard import text_loops

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "copilot" / "autopilot"


def test_same_text_counts_and_a_tool_call_or_a_prompt_ends_the_run():
    state = {}
    for text in ("Still  working.", "still working.", "STILL WORKING."):
        text_loops.note(state, "main", text)
    assert text_loops.wires(state, 3)[0]["wire"] == "loop"
    assert text_loops.wires(state, 4) == []
    text_loops.note(state, "main", None)  # a response with a tool call
    text_loops.note(state, "main", "still working.")
    assert state["text_loops"]["main"][1] == 1
    text_loops.note(state, "main", "Another answer.")
    assert state["text_loops"]["main"][1] == 1
    assert "Another" not in json.dumps(state)  # a hash, never the text
    text_loops.reset(state)
    assert text_loops.wires(state, 1) == []


@pytest.fixture
def autopilot(guard_env, monkeypatch):
    """The recorded session in a COPILOT_HOME (the hook's own environment names it), and its
    last agentStop payload."""
    home = guard_env.root / "copilot"
    monkeypatch.setenv("COPILOT_HOME", str(home))
    shutil.copytree(FIXTURE / "session-state", home / "session-state")
    payloads = [
        json.loads(line) for line in (FIXTURE / "hook_inputs.jsonl").read_text().splitlines()
    ]
    stops = [p for p in payloads if "stopReason" in p]
    assert len(stops) == 5
    return {"COPILOT_HOME": str(home)}, stops[-1]


@pytest.mark.parametrize("limit, stopped", [(5, True), (6, False)])
def test_copilot_turn_end_stops_the_fifth_same_answer(guard_env, autopilot, limit, stopped):
    env, stop = autopilot
    answer = guard_env.answer(stop, RUNAWAY_GUARD_MAX_REPEATS=str(limit), **env)
    assert (answer is not None) == stopped
    if stopped:
        assert answer["permissionDecision"] == "ask"
        assert "same text 5 times" in answer["permissionDecisionReason"]


def test_a_person_prompt_after_the_answers_starts_the_count_again(guard_env, autopilot):
    env, stop = autopilot
    (events,) = Path(env["COPILOT_HOME"]).glob("session-state/*/events.jsonl")
    prompt = {"type": "user.message", "data": {"content": "Try again.", "interactionId": "new"}}
    with events.open("a") as handle:
        handle.write(json.dumps(prompt) + "\n")
    assert guard_env.answer(stop, RUNAWAY_GUARD_MAX_REPEATS="2", **env) is None
