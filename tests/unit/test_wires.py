"""The failure and loop wires, end to end through the guard, on Claude Code and Codex."""

import json

from claude_records import assistant, pre_tool_use, result
from guard_env import jsonl
from hypothesis import given
from hypothesis import strategies as st
from runaway_guard import state_file
from runaway_guard.calls import fingerprint
from runaway_guard.wires import loop_repeats


def decision(answer):
    if answer is None:
        return None
    specific = answer.get("hookSpecificOutput", {})
    if answer.get("continue") is False:
        return "stop"
    return specific.get("permissionDecision") or (
        "tell" if "additionalContext" in specific else None
    )


def claude_calls(guard_env, transcript, calls, prefix="t"):
    """Run calls [(tool, input, result_text, is_error)] one after another; the answers."""
    answers = []
    for index, (tool, tool_input, text, error) in enumerate(calls):
        tool_use_id = f"{prefix}{index}"
        jsonl(transcript, [assistant(f"m{prefix}{index}", tool=(tool_use_id, tool, tool_input))])
        answer = guard_env.answer(pre_tool_use(transcript, tool_use_id, tool, tool_input))
        answers.append(decision(answer))
        if answer and decision(answer) in ("deny", "ask", "stop"):
            # print mode turns ask into a denial; the model sees the reason
            text, error = answer["hookSpecificOutput"]["permissionDecisionReason"], True
        jsonl(transcript, [result(tool_use_id, text, error)])
    return answers


def test_failure_wire_fires_at_threshold_then_climbs_the_ladder(guard_env, tmp_path):
    transcript = tmp_path / "p" / "s1.jsonl"
    calls = [
        ("Bash", {"command": f"make target{i}"}, f"Exit code 2\nno rule {i}", True)
        for i in range(9)
    ]
    answers = claude_calls(guard_env, transcript, calls)
    # 4 failures: told; 5: refused; refused again: asked; then the turn is ended.
    assert answers == [None, None, None, None, "tell", "deny", "ask", "stop", "stop"]


def test_failure_run_is_broken_by_a_success(guard_env, tmp_path):
    transcript = tmp_path / "p" / "s1.jsonl"
    calls = []
    for i in range(12):
        ok = i % 4 == 3
        calls.append(("Bash", {"command": f"step {i}"}, "fine" if ok else "Exit code 1", not ok))
    assert set(claude_calls(guard_env, transcript, calls)) == {None}


def test_user_rejection_ends_the_run(guard_env, tmp_path):
    transcript = tmp_path / "p" / "s1.jsonl"
    calls = [("Bash", {"command": f"c{i}"}, "Exit code 1", True) for i in range(4)]
    calls.append(
        (
            "Bash",
            {"command": "rm -rf build"},
            "The user doesn't want to proceed with this tool use.",
            True,
        )
    )
    calls += [("Bash", {"command": f"d{i}"}, "Exit code 1", True) for i in range(3)]
    answers = claude_calls(guard_env, transcript, calls)
    assert answers == [None, None, None, None, "tell", None, None, None]


def test_loop_wire_same_call_same_result(guard_env, tmp_path):
    transcript = tmp_path / "p" / "s1.jsonl"
    calls = [("Read", {"file_path": "/x/a.py"}, "same content", False)] * 8
    answers = claude_calls(guard_env, transcript, calls)
    assert answers == [None, None, None, None, "tell", "deny", "ask", "stop"]


def test_loop_wire_cycle_of_two(guard_env, tmp_path):
    transcript = tmp_path / "p" / "s1.jsonl"
    a = ("Bash", {"command": "git stash"}, "Saved", False)
    b = ("Bash", {"command": "git stash pop"}, "Restored", False)
    answers = claude_calls(guard_env, transcript, [a, b] * 6)
    assert "deny" in answers
    assert answers.index("deny") == 10  # five full cycles ran first


def test_polling_with_changing_output_is_progress(guard_env, tmp_path):
    transcript = tmp_path / "p" / "s1.jsonl"
    calls = [("Bash", {"command": "gh run view 42"}, f"in progress {i}%", False) for i in range(20)]
    assert set(claude_calls(guard_env, transcript, calls)) == {None}


def test_edit_and_retest_cycles_are_progress(guard_env, tmp_path):
    transcript = tmp_path / "p" / "s1.jsonl"
    calls = []
    for i in range(10):
        calls.append(
            (
                "Edit",
                {"file_path": "/x/a.py", "old_string": f"v{i}", "new_string": f"v{i + 1}"},
                "ok",
                False,
            )
        )
        calls.append(("Bash", {"command": "pytest -x"}, f"Exit code 1\n{10 - i} failed", True))
    assert set(claude_calls(guard_env, transcript, calls)) == {None}


def test_parallel_identical_reads_count_once(guard_env, tmp_path):
    transcript = tmp_path / "p" / "s1.jsonl"
    answers = []
    for turn in range(4):
        ids = [f"p{turn}_{k}" for k in range(3)]
        jsonl(
            transcript,
            [assistant(f"mp{turn}", tool=(i, "Read", {"file_path": "/x/a.py"})) for i in ids],
        )
        for tool_use_id in ids:  # three hooks fire before any result is written
            answers.append(
                decision(
                    guard_env.answer(
                        pre_tool_use(transcript, tool_use_id, "Read", {"file_path": "/x/a.py"})
                    )
                )
            )
        jsonl(transcript, [result(i, "same content") for i in ids])
    # four turns of three parallel reads = four repeats, not twelve
    assert "deny" not in answers


def test_codex_refusals_are_plain_denies(guard_env, tmp_path):
    rollout = tmp_path / "sessions" / "rollout-1.jsonl"
    jsonl(
        rollout,
        [
            {
                "timestamp": "2026-11-30T10:00:00Z",
                "type": "session_meta",
                "payload": {"id": "root", "session_id": "root"},
            },
            {
                "timestamp": "2026-11-30T10:00:00Z",
                "type": "turn_context",
                "payload": {"model": "gpt-5.5"},
            },
        ],
    )
    answers = []
    for i in range(8):
        call_id = f"call_{i}"
        jsonl(
            rollout,
            [
                {
                    "type": "response_item",
                    "payload": {
                        "type": "function_call",
                        "name": "exec_command",
                        "call_id": call_id,
                    },
                }
            ],
        )
        line = guard_env.run(
            {
                "session_id": "root",
                "turn_id": "turn1",
                "transcript_path": str(rollout),
                "cwd": "/tmp",
                "hook_event_name": "PreToolUse",
                "model": "gpt-5.5",
                "tool_name": "Bash",
                "tool_input": {"command": f"cargo build -p crate{i}"},
                "tool_use_id": call_id,
            }
        )
        answers.append(json.loads(line) if line else None)
        blocked = (
            answers[-1] and answers[-1]["hookSpecificOutput"].get("permissionDecision") == "deny"
        )
        output = (
            "Command blocked by PreToolUse hook: x"
            if blocked
            else f"Chunk ID: {i}\nWall time: 0.{i} seconds\n"
            f"Process exited with code 101\nOutput:\nerror {i}"
        )
        jsonl(
            rollout,
            [
                {
                    "type": "response_item",
                    "payload": {
                        "type": "function_call_output",
                        "call_id": call_id,
                        "output": output,
                    },
                }
            ],
        )
    refusals = [a for a in answers if a and a["hookSpecificOutput"].get("permissionDecision")]
    assert len(refusals) == 3
    for refusal in refusals:
        assert set(refusal) == {"hookSpecificOutput"}
        assert set(refusal["hookSpecificOutput"]) == {
            "hookEventName",
            "permissionDecision",
            "permissionDecisionReason",
        }
        assert refusal["hookSpecificOutput"]["permissionDecision"] == "deny"
        assert refusal["hookSpecificOutput"]["permissionDecisionReason"]


def test_loop_repeats_counts_runs_and_cycles():
    a, b, c = ["a", "1"], ["b", "2"], ["c", "3"]
    assert loop_repeats([a, a, a], "a") == 3
    assert loop_repeats([b, a, a], "a") == 2
    assert loop_repeats([a, ["a", "other"], a], "a") == 1
    assert loop_repeats([a, b, a, b, a, b], "a") == 3
    assert loop_repeats([a, b, c, a, b, c], "a") == 2
    assert loop_repeats([a, b, a, b], "c") == 0
    assert loop_repeats([], "a") == 0


def test_no_transcript_loop_wire_from_hook_input_alone(guard_env):
    answers = []
    for i in range(7):
        line = guard_env.run(
            {
                "session_id": "eph",
                "turn_id": "t",
                "transcript_path": None,
                "cwd": "/tmp",
                "hook_event_name": "PreToolUse",
                "tool_name": "Bash",
                "tool_input": {"command": "curl localhost:1"},
                "tool_use_id": f"c{i}",
            }
        )
        answers.append(
            json.loads(line)["hookSpecificOutput"].get("permissionDecision") if line else None
        )
    assert answers[:5] == [None] * 5
    assert answers[5] == "deny"


def spend_calls(guard_env, host, tmp_path, responses, cost_usage, **env):
    """Each response costs the same; the guard's answers to the calls that follow them."""
    answers = []
    if host == "claude":
        transcript = tmp_path / "p" / "s1.jsonl"
        for i in range(responses):
            tool = "Agent" if i == responses - 1 else "Bash"
            tool_input = {"prompt": "go"} if tool == "Agent" else {"command": f"step {i}"}
            jsonl(
                transcript,
                [
                    assistant(
                        f"m{i}",
                        model="claude-opus-4-8",
                        use=cost_usage,
                        tool=(f"t{i}", tool, tool_input),
                    )
                ],
            )
            payload = pre_tool_use(transcript, f"t{i}", tool, tool_input)
            answers.append(guard_env.answer(payload, **env))
            jsonl(transcript, [result(f"t{i}", f"out {i}")])
        return answers
    rollout = tmp_path / "sessions" / "rollout-2026-11-30T10-00-00-root.jsonl"
    jsonl(
        rollout,
        [
            {"type": "session_meta", "payload": {"id": "root", "session_id": "root"}},
            {"type": "turn_context", "payload": {"model": "gpt-5.5"}},
        ],
    )
    for i in range(responses):
        jsonl(
            rollout,
            [
                {
                    "timestamp": "2026-11-30T10:00:00Z",
                    "type": "token_usage_record",
                    "payload": {"thread_id": "root", "response_id": f"r{i}", "usage": cost_usage},
                },
                {  # Codex writes the call before its hook runs
                    "type": "response_item",
                    "payload": {
                        "type": "function_call",
                        "name": "exec_command",
                        "call_id": f"c{i}",
                    },
                },
            ],
        )
        tool = "collaborationspawn_agent" if i == responses - 1 else "Bash"
        line = guard_env.run(
            {
                "session_id": "root",
                "turn_id": "t",
                "transcript_path": str(rollout),
                "cwd": "/tmp",
                "hook_event_name": "PreToolUse",
                "model": "gpt-5.5",
                "tool_name": tool,
                "tool_input": {"command": f"step {i}"},
                "tool_use_id": f"c{i}",
            },
            **env,
        )
        answers.append(json.loads(line) if line else None)
    return answers


import pytest  # noqa: E402

# Each response costs $0.01: 20,000 tokens read from the cache at $0.50 per million, and the
# next is estimated at as much (the same tokens read again, no output).
CACHED = {
    "claude": {"input_tokens": 0, "cache_read_input_tokens": 20000, "output_tokens": 0},
    "codex": {"input_tokens": 20000, "cached_input_tokens": 20000, "output_tokens": 0},
}


@pytest.mark.parametrize("host", ["claude", "codex"])
def test_spend_wire_warns_refuses_subagents_then_stops(guard_env, tmp_path, host):
    answers = spend_calls(guard_env, host, tmp_path, 8, CACHED[host], RUNAWAY_GUARD_MAX_USD="0.05")
    kinds = [decision(a) for a in answers]
    # $0.01 … $0.03: quiet; $0.04 = 80 %: told once (the next, $0.01, would land on the cap,
    # not cross it); $0.05: the cap; the last call is a spawn.
    assert kinds[:3] == [None, None, None]
    assert kinds[3] == "tell"
    if host == "claude":
        assert answers[3]["systemMessage"].startswith("runaway-guard: session spend $0.04")
        assert kinds[4:] == ["stop", "stop", "stop", "stop"]
        assert answers[4]["stopReason"].startswith("runaway-guard stopped the agent")
    else:
        assert kinds[4:] == ["deny"] * 4
        for answer in answers[4:]:
            assert set(answer["hookSpecificOutput"]) == {
                "hookEventName",
                "permissionDecision",
                "permissionDecisionReason",
            }


@pytest.mark.parametrize("host", ["claude", "codex"])
def test_spawning_is_refused_first(guard_env, tmp_path, host):
    answers = spend_calls(guard_env, host, tmp_path, 5, CACHED[host], RUNAWAY_GUARD_MAX_USD="0.06")
    kinds = [decision(a) for a in answers]
    # At $0.05 of $0.06 (over the 80 % warning) a new subagent is refused, the work goes on.
    assert kinds == [None, None, None, None, "deny"]
    assert "no new subagents" in answers[-1]["hookSpecificOutput"]["permissionDecisionReason"]


def test_installed_twice_every_call_counted_once(guard_env, tmp_path):
    """User and project settings (or a plugin and the installer's hook) both run the guard:
    two processes see every call; the second repeats a refusal, not a note, and says once to
    the person that two hooks run."""
    from runaway_guard.decisions import TWICE

    transcript = tmp_path / "p" / "s1.jsonl"
    answers = []
    for i in range(7):
        tool_input = {"command": f"make target{i}"}
        jsonl(transcript, [assistant(f"m{i}", tool=(f"t{i}", "Bash", tool_input))])
        payload = pre_tool_use(transcript, f"t{i}", "Bash", tool_input)
        first, second = guard_env.run(payload), guard_env.run(payload)
        if i == 0:
            assert first == "" and json.loads(second) == {"systemMessage": TWICE}
        elif decision(json.loads(first) if first else None) == "tell":
            assert second == ""  # the host shows both answers: a note once
        else:
            assert first == second
        answers.append(decision(json.loads(first)) if first else None)
        text, error = "Exit code 2", True
        if answers[-1] in ("deny", "ask"):
            text = json.loads(first)["hookSpecificOutput"]["permissionDecisionReason"]
        jsonl(transcript, [result(f"t{i}", text, error)])
    assert answers == [None, None, None, None, "tell", "deny", "ask"]
    sessions = guard_env.state_dir / "sessions" / "claude"
    assert state_file.read_state(str(next(sessions.glob("*.state"))))["twice"] is True
    assert "twice" in (guard_env.state_dir / "hook.log").read_text()


# -- the call fingerprint the loop wire compares


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=8,
)


@given(json_values, json_values)
def test_fingerprints_equal_exactly_when_the_values_do(first, second):
    same = json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)
    assert (fingerprint(first) == fingerprint(second)) == same
    assert len(fingerprint(first)) == 16 and int(fingerprint(first), 16) >= 0


@given(st.binary(max_size=64), st.integers(0, 63), st.integers(1, 255))
def test_a_changed_byte_or_a_trailing_zero_changes_the_fingerprint(data, where, delta):
    if data:
        changed = bytearray(data)
        changed[where % len(data)] = (changed[where % len(data)] + delta) % 256
        assert fingerprint(bytes(changed)) != fingerprint(data)
    assert fingerprint(data + b"\x00") != fingerprint(data)


def nested(depth, leaf):
    """leaf inside depth dicts and lists, deeper than jsonio.dumps writes."""
    value = leaf
    for level in range(depth):
        value = {"k": value} if level % 2 else [value]
    return value


@pytest.mark.parametrize("leaf", ["a", 1, None])
def test_a_value_too_deep_to_dump_has_a_fingerprint_of_its_own(leaf):
    assert fingerprint(nested(5000, leaf)) == fingerprint(nested(5000, leaf))
    assert fingerprint(nested(5000, leaf)) != fingerprint(nested(5000, "b"))
    assert fingerprint(nested(5000, leaf)) != fingerprint(nested(5001, leaf))
