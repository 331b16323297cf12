"""Spend parity: on sessions recorded from the real Claude Code 2.1.328 and 2.1.332
(tests/fixtures/claude), the guard's total equals the `total_cost_usd` Claude Code printed, to
1e-6 USD."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from claude_records import pre_tool_use
from guard_env import ROOT, SKILL
from runaway_guard import ledger
from test_ledger import FakeCall, sync_once

FIXTURES = ROOT / "tests" / "fixtures" / "claude"
EXACT = ["models", "long_prompt", "failures", "placeholders", "compaction", "failures-2.1.332"]


def recorded(name, tmp_path):
    shutil.copytree(FIXTURES / name, tmp_path / name)
    result = json.loads((FIXTURES / name / "result.json").read_text())
    main = tmp_path / name / f"{result['session_id']}.jsonl"
    return main, result


@pytest.mark.parametrize("name", EXACT)
def test_spend_equals_claude_codes_own_total(tmp_path, name):
    main, result = recorded(name, tmp_path)
    spend = sync_once(tmp_path / "state", "claude", FakeCall("claude", result["session_id"], main))
    assert abs(spend["total"] / 1e12 - result["total_cost_usd"]) < 1e-6


def test_parity_through_the_hook_with_subagents_fast_mode_us_and_web_search(guard_env, tmp_path):
    main, result = recorded("models", tmp_path)
    rows = [json.loads(line) for line in main.read_text().splitlines()]
    usages = [r["message"]["usage"] for r in rows if r.get("type") == "assistant"]
    assert any(u.get("speed") == "fast" for u in usages)
    assert any(u.get("inference_geo") == "us" for u in usages)
    assert any(u.get("server_tool_use", {}).get("web_search_requests") for u in usages)
    assert any(u.get("cache_creation", {}).get("ephemeral_1h_input_tokens") for u in usages)
    assert list(main.parent.glob(f"{result['session_id']}/subagents/agent-*.jsonl"))
    guard_env.run(pre_tool_use(main, "toolu_parity", session=result["session_id"]))
    with ledger.Ledger(str(guard_env.state_dir), "claude", result["session_id"]) as book:
        spend = book.state["spend"]
    assert abs(spend["total"] / 1e12 - result["total_cost_usd"]) < 1e-6
    assert len(spend["agent"]) == 2 and len(spend["model"]) == 2


def test_compaction_estimated_then_reconciled_run_by_run(tmp_path):
    """Each run of the recorded session ends with a cost-state record: Claude Code's own total,
    which includes the compaction requests that no assistant record shows."""
    main, result = recorded("compaction", tmp_path)
    lines = main.read_bytes().splitlines(keepends=True)
    cost_states = [i for i, line in enumerate(lines) if b'"type":"cost-state"' in line]
    boundaries = [i for i, line in enumerate(lines) if b'"compact_boundary"' in line]
    per_run = [
        json.loads((FIXTURES / "compaction" / f"result.{n}.json").read_text()) for n in (1, 2, 3)
    ]
    assert len(cost_states) == len(per_run) == 3 and len(boundaries) == 2
    call = FakeCall("claude", result["session_id"], main)
    state = tmp_path / "state"

    # Before the first cost-state: the transcript alone, plus an estimate for the compaction.
    main.write_bytes(b"".join(lines[: boundaries[0]]))
    plain = sync_once(state, "claude", call)["total"]
    main.write_bytes(b"".join(lines[: boundaries[0] + 1]))
    estimated = sync_once(state, "claude", call)["total"]
    assert estimated > plain
    for end, run in zip(cost_states, per_run):
        main.write_bytes(b"".join(lines[: end + 1]))
        spend = sync_once(state, "claude", call)
        assert abs(spend["total"] / 1e12 - run["total_cost_usd"]) < 1e-6
        assert sum(spend["model"].values()) == sum(spend["agent"].values()) == spend["total"]


def test_a_compaction_is_estimated_as_its_prompt_read_from_the_cache(tmp_path):
    """The summary request reads the thread's cached prompt (the e2e parity test checks the real
    request): preTokens at the cache-read rate, the summary (postTokens) at the output rate."""
    main, result = recorded("compaction", tmp_path)
    lines = main.read_bytes().splitlines(keepends=True)
    boundary = next(i for i, line in enumerate(lines) if b'"compact_boundary"' in line)
    meta = json.loads(lines[boundary])["compactMetadata"]
    call = FakeCall("claude", result["session_id"], main)
    main.write_bytes(b"".join(lines[:boundary]))
    plain = sync_once(tmp_path / "state", "claude", call)["total"]
    main.write_bytes(b"".join(lines[: boundary + 1]))
    estimated = sync_once(tmp_path / "state", "claude", call)["total"] - plain
    sonnet = json.loads((SKILL / "runaway_guard" / "prices.json").read_text())["claude"]["models"][
        "claude-sonnet-4-6"
    ]
    by_hand = meta["preTokens"] * sonnet["cache_read"] + meta["postTokens"] * sonnet["output"]
    assert estimated == round(by_hand * 1e6)


def test_unknown_model_is_priced_dearer_than_claude_code_and_reported(guard_env, tmp_path):
    main, result = recorded("unknown_model", tmp_path)
    session = result["session_id"]
    guard_env.run(pre_tool_use(main, "toolu_unknown", "Read", {"file_path": "/x"}, session))
    with ledger.Ledger(str(guard_env.state_dir), "claude", session) as book:
        state = book.state
    assert state["unpriced"] == ["claude-nova-9"]
    assert state["spend"]["total"] / 1e12 >= result["total_cost_usd"]
    assert Path(main).exists()


def test_status_after_the_run_reads_the_final_response_and_cost_state(guard_env, tmp_path):
    """The guard reads at tool calls; a run's last response and Claude Code's end-of-run
    cost-state come after the last call. status.py reads them before it reports."""
    main, result = recorded("compaction", tmp_path)
    data = main.read_bytes()
    main.write_bytes(data[: data.index(b'"compact_boundary"')])  # a call mid-run
    guard_env.run(pre_tool_use(main, "toolu_mid", session=result["session_id"]))
    main.write_bytes(data)  # the run goes on and ends without another tool call
    done = subprocess.run(
        [sys.executable, str(SKILL / "status.py"), "--json", "--session", result["session_id"]],
        capture_output=True,
        text=True,
        env=guard_env.env,
        check=True,
    )
    assert abs(json.loads(done.stdout)["spend_usd"] - result["total_cost_usd"]) < 1e-6


def test_compaction_reconciled_across_a_lost_state(tmp_path):
    main, result = recorded("compaction", tmp_path)
    lines = main.read_bytes().splitlines(keepends=True)
    cost_states = [i for i, line in enumerate(lines) if b'"type":"cost-state"' in line]
    call = FakeCall("claude", result["session_id"], main)
    state = tmp_path / "state"
    main.write_bytes(b"".join(lines[: cost_states[0] + 1]))
    sync_once(state, "claude", call)
    next((state / "sessions" / "claude").glob("*.state")).write_text("{damaged")
    main.write_bytes(b"".join(lines))
    spend = sync_once(state, "claude", call)
    assert abs(spend["total"] / 1e12 - result["total_cost_usd"]) < 1e-6
