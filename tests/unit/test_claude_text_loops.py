"""Claude Code's turns without tool calls (text_loops.py from its transcript), its subagent's end
(PostToolUse of the Agent tool), and the Stop event that books a run's last answer."""

import itertools
import json
import sys
import threading
import time

import pytest
from claude_records import assistant, result, usage
from guard_env import ROOT, jsonl
from runaway_guard import text_loops
from runaway_guard.hosts import claude

LIMIT = {"RUNAWAY_GUARD_MAX_REPEATS": "3"}
_ids = itertools.count(1)


def answer_of(msg_id, text, **rest):
    """A text-only response (end_turn) saying text."""
    record = assistant(msg_id, stop="end_turn", **rest)
    record["message"]["content"] = [{"type": "text", "text": text}]
    return record


def event(transcript, name, prompt_id="p1", **extra):
    return {
        "session_id": "s1",
        "transcript_path": str(transcript),
        "cwd": "/tmp",
        "hook_event_name": name,
        "prompt_id": prompt_id,
        **extra,
    }


@pytest.fixture
def transcript(tmp_path):
    return tmp_path / "p" / "s1.jsonl"


def kept_going(guard_env, transcript, texts, prompt_id="p1"):
    """Each text answered, then the turn's end (Stop), as a "keep going" Stop hook makes it;
    the guard's answer at each Stop."""
    ends = []
    for text in texts:
        jsonl(transcript, [answer_of(f"msg_{next(_ids)}", text)])
        ends.append(guard_env.answer(event(transcript, "Stop", prompt_id), **LIMIT))
    return ends


def test_the_same_answer_turn_after_turn_ends_the_run_at_the_limit(guard_env, transcript):
    assert guard_env.run(event(transcript, "UserPromptSubmit"), **LIMIT) == ""
    same = ["Still working.", "still  WORKING.", "Still working."]
    ends = kept_going(guard_env, transcript, same)
    assert ends[:2] == [None, None]
    assert ends[2]["continue"] is False
    assert "answered the same text 3 times in a row" in ends[2]["stopReason"]
    state = json.dumps(guard_env.state_dir.rglob("*.state").__next__().read_bytes().hex())
    assert "Still working" not in state


def test_a_tool_call_or_other_text_starts_the_count_again(guard_env, transcript):
    kept_going(guard_env, transcript, ["Same.", "Same."])
    jsonl(transcript, [assistant("t1", tool=("toolu_1", "Bash", {"command": "ls"}))])
    jsonl(transcript, [result("toolu_1")])
    assert kept_going(guard_env, transcript, ["Same.", "Other.", "Same.", "Same."]) == [None] * 4
    assert kept_going(guard_env, transcript, ["Same."])[0]["continue"] is False


def test_a_new_prompt_of_the_person_starts_the_count_again(guard_env, transcript):
    """A Stop hook's continuation keeps the prompt's id; the person's next prompt has a new one,
    and clears the stop."""
    assert kept_going(guard_env, transcript, ["Same."] * 3)[2]["continue"] is False
    assert guard_env.run(event(transcript, "UserPromptSubmit", "p2"), **LIMIT) == ""
    assert kept_going(guard_env, transcript, ["Same.", "Same."], "p2") == [None, None]


def test_an_answer_read_in_two_parts_counts_once(guard_env, transcript):
    """Claude Code writes a response's blocks as rows one after another: a hook reading between
    two rows counts the answer once it is whole, once."""
    first = answer_of("m1", "Thinking first.")
    first["message"]["content"] = [{"type": "thinking", "thinking": "hm", "signature": "s"}]
    jsonl(transcript, [first])
    assert guard_env.run(event(transcript, "Stop"), **LIMIT) == ""
    jsonl(transcript, [answer_of("m1", "Same.")])
    assert kept_going(guard_env, transcript, ["Same."]) == [None]  # two answers, not three
    assert kept_going(guard_env, transcript, ["Same."])[0]["continue"] is False


def test_a_transcript_read_again_from_its_start_counts_nothing_twice(guard_env, transcript):
    """Claude Code rewrites a long transcript (compaction): the guard reads it again from the
    start, and the answers it counted before are not counted again."""
    kept_going(guard_env, transcript, ["Same.", "Same."])
    records = transcript.read_text()
    transcript.unlink()
    transcript.write_text(records)  # a new inode: read again from the start
    assert guard_env.run(event(transcript, "Stop"), **LIMIT) == ""
    assert kept_going(guard_env, transcript, ["Same."])[0]["continue"] is False


def test_text_loops_counts_a_response_seen_again_in_its_place():
    state = {}
    text_loops.note(state, "main", "A", "k1")
    text_loops.note(state, "main", "A", "k2")
    text_loops.note(state, "main", "A", "k2")  # k2 read again
    assert state["text_loops"]["main"][:2] == [text_loops.fingerprint("a"), 2]
    assert text_loops.answered(state, "main")
    text_loops.note(state, "main", None, "k2")  # k2 called a tool after all
    assert text_loops.wires(state, 1) == [] and not text_loops.answered(state, "main")
    text_loops.note(state, "main", "B", "k3")
    text_loops.note(state, "main", "C", "k3")
    assert state["text_loops"]["main"][:2] == [text_loops.fingerprint("c"), 1]


# -- a subagent's end: PostToolUse of the Agent tool -----------------------------------------------

SPAWN = {"description": "Check", "prompt": "check", "subagent_type": "general-purpose"}
DEAR = usage(inp=20000, out=1)  # $0.060015 on claude-sonnet-4-6


def after_agent(transcript, tool="Agent"):
    return event(
        transcript,
        "PostToolUse",
        tool_name=tool,
        tool_input=SPAWN,
        tool_response={"status": "completed", "agentId": "a1"},
        tool_use_id="toolu_agent",
    )


def spawned(guard_env, transcript, env):
    """The main thread's Agent call (passed), then its subagent's file with a dear answer."""
    jsonl(transcript, [assistant("m0", tool=("toolu_agent", "Agent", SPAWN))])
    call = event(transcript, "PreToolUse", tool_name="Agent", tool_input=SPAWN)
    assert guard_env.run(dict(call, tool_use_id="toolu_agent"), **env) == ""
    sub = transcript.parent / "s1" / "subagents" / "agent-a1.jsonl"
    jsonl(sub, [answer_of("sub1", "Checked.", use=DEAR, isSidechain=True, agentId="a1")])


@pytest.mark.parametrize("tool", ["Agent", "Task"])
def test_a_subagent_that_spent_past_the_cap_ends_the_run_before_the_next_request(
    guard_env, transcript, tool
):
    env = {"RUNAWAY_GUARD_MAX_USD": "0.05"}
    spawned(guard_env, transcript, env)
    stop = guard_env.answer(after_agent(transcript, tool), **env)
    assert stop["continue"] is False and "decision" not in stop
    assert "session spend" in stop["stopReason"] and "--raise-cap" in stop["stopReason"]


def test_after_a_subagent_with_room_left_nothing_is_said(guard_env, transcript):
    env = {"RUNAWAY_GUARD_MAX_USD": "5"}
    spawned(guard_env, transcript, env)
    assert guard_env.run(after_agent(transcript), **env) == ""


def test_a_subagents_own_failure_stop_lets_the_main_thread_go_on(guard_env, transcript):
    """The failure wire ended the subagent; the main thread gets its result and goes on."""
    spawned(guard_env, transcript, {})
    from runaway_guard import ledger, state_file

    (path,) = guard_env.state_dir.rglob("*.state")
    state = state_file.read_state(str(path))
    state["blocked"] = {"wire": "failure", "kind": "stop", "agent": "a1", "reason": "x", "at": 1}
    ledger.write_state(str(path), state)
    assert guard_env.run(after_agent(transcript)) == ""


def test_a_subagents_same_answers_do_not_hold_the_main_thread_after_its_end(guard_env, transcript):
    spawned(guard_env, transcript, {})
    sub = transcript.parent / "s1" / "subagents" / "agent-a1.jsonl"
    jsonl(sub, [answer_of(f"sub{n}", "Checked.", isSidechain=True) for n in (2, 3)])
    assert guard_env.run(after_agent(transcript), **LIMIT) == ""
    jsonl(transcript, [assistant("m9", tool=("toolu_9", "Bash", {"command": "ls"}))])
    assert guard_env.run(event(transcript, "PreToolUse", tool_use_id="toolu_9"), **LIMIT) == ""


def test_the_installer_asks_for_post_tool_use_of_the_agent_tool_only():
    sys.path.insert(0, str(ROOT / "installer"))
    from runaway_guard_installer import hook_list, manifests

    entry = claude.INSTALL["entry"]
    merged = hook_list.merge_install({}, entry, "guard").obj["hooks"]
    assert merged["PostToolUse"] == [
        {"matcher": "Agent|Task", "hooks": [{"type": "command", "command": "guard", "timeout": 30}]}
    ]
    assert all("matcher" not in group for e in ("PreToolUse", "Stop") for group in merged[e])
    assert manifests.hook_map(entry, "guard") == merged


# -- the Stop event books a run's last answer ----------------------------------------------------


def test_a_runs_last_answer_is_booked_at_its_end_for_the_next_runs_first_prompt(
    guard_env, tmp_path
):
    """`claude -p` in a loop: each run's last answer comes after its last tool call. The Stop
    at its end books it in the day's file, so the next run is refused at its first prompt."""
    env = {"RUNAWAY_GUARD_DAILY_USD": "0.05"}
    now = {"timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())}
    first = tmp_path / "p" / "s1.jsonl"
    jsonl(first, [assistant("m1", tool=("toolu_1", "Bash", {"command": "ls"}), **now)])
    assert guard_env.run(event(first, "PreToolUse", tool_use_id="toolu_1"), **env) == ""
    jsonl(first, [result("toolu_1"), answer_of("m2", "Done.", use=DEAR, **now)])
    guard_env.run(event(first, "Stop"), **env)
    second = dict(event(tmp_path / "p" / "s2.jsonl", "UserPromptSubmit", "q1"), session_id="s2")
    refused = guard_env.answer(second, **env)
    assert refused["decision"] == "block" and "daily spend" in refused["reason"]


def test_after_a_subagent_its_last_answer_still_in_the_write_queue_is_waited_for(
    guard_env, transcript
):
    """Claude Code writes its files every 100 ms and runs PostToolUse at once: the subagent's
    last answer, the one that crossed the cap, reaches the disk while the hook waits."""
    env = {"RUNAWAY_GUARD_MAX_USD": "0.05"}
    spawned(guard_env, transcript, env)
    sub = transcript.parent / "s1" / "subagents" / "agent-a1.jsonl"
    written = sub.read_text()
    sub.write_text(json.dumps(assistant("sub0", use=usage(), isSidechain=True)) + "\n")
    late = threading.Timer(0.1, lambda: sub.open("a").write(written))
    late.start()
    try:
        stop = guard_env.answer(after_agent(transcript), **env)
    finally:
        late.join()
    assert stop["continue"] is False and "session spend" in stop["stopReason"]
