"""The cap as a ceiling (issue 26): the next request's estimate, the stop before the response
that would cross a cap, and the prompt and turn-end events of Claude Code and Codex."""

from claude_records import assistant, pre_tool_use, result, usage
from guard_env import fuzz, jsonl
from hypothesis import given
from hypothesis import strategies as st
from runaway_guard import estimate

# A Sonnet 4.6 response in a long session: 100k tokens read from the cache ($0.03), 2k written
# ($0.0075), 1k output ($0.015): $0.0525 each. The next one reads the 102,000 cached ($0.0306),
# writes the 3 uncached and the 1k output ($0.00376) and outputs about 1k ($0.015): $0.0494.
STEP = usage(inp=3, out=1000, cw5=2000, read=100_000)
STEP_USD, NEXT_USD = 0.0525045, 0.04936125


def claude_steps(guard_env, tmp_path, count, **env):
    """count responses, each calling a tool; the guard's answer before each call."""
    transcript = tmp_path / "p" / "s1.jsonl"
    answers = []
    for i in range(count):
        tool_input = {"command": f"step {i}"}
        jsonl(transcript, [assistant(f"m{i}", use=STEP, tool=(f"t{i}", "Bash", tool_input))])
        answers.append(
            guard_env.answer(pre_tool_use(transcript, f"t{i}", "Bash", tool_input), **env)
        )
        jsonl(transcript, [result(f"t{i}", f"out {i}")])
    return transcript, answers


def test_the_next_request_is_priced_from_the_last_ones_input_side():
    from runaway_guard import claude_prices

    state = {}
    price = claude_prices.token_pricer("claude-sonnet-4-6", True)
    context = 3 + 2000 + 100_000
    estimate.note(state, "main", "m1", 0, 1000, (context, context - 3, price))
    assert abs(estimate.next_cost(state, "main") / 1e12 - NEXT_USD) < 1e-6
    assert estimate.next_cost(state, "sub") == estimate.next_cost(state, "main")
    # a later row of the same response with more output replaces its count, not adds one
    estimate.note(state, "main", "m1", 0, 3000, (context, context - 3, price))
    assert state["ahead"]["main"][2] == [3000]


def test_the_output_is_the_recent_median_and_a_host_without_tokens_repeats_the_last_cost():
    state = {}
    for key, out in enumerate((100, 9000, 200, 300, 250, 220)):
        estimate.note(state, "main", key, 7, out, estimate.LAST_COST)
    assert state["ahead"]["main"][2] == [9000, 200, 300, 250, 220]  # the last five
    assert estimate.median(state["ahead"]["main"][2]) == 250
    assert estimate.next_cost(state, "main") == 7


def test_what_requests_grew_by_beyond_the_output_is_added_as_written_input():
    """A tool's result is not known before it runs: the agent's recent growth stands in."""
    priced = []

    def price(inp, cached, written, out):
        priced.append((inp, cached, written, out))
        return inp, True

    state = {}
    context = 10_000
    for key in range(4):  # each request saw the last one's 200 output and 5,000 more
        estimate.note(state, "main", key, 0, 200, (context, context, price))
        context += 200 + 5000
    assert state["ahead"]["main"][4] == [5000, 5000, 5000]
    last = context - 5200
    assert priced[-1] == (last + 5200, last, 5200, 200)


@fuzz(200)
@given(
    st.recursive(
        st.none() | st.integers() | st.text(), lambda c: st.lists(c) | st.dictionaries(st.text(), c)
    )
)
def test_a_damaged_estimate_in_the_state_is_read_as_none(value):
    state = {"ahead": value}
    cost = estimate.next_cost(state, "main")
    assert isinstance(cost, int) and cost >= 0
    estimate.note(state, "main", "k", 5, 10, estimate.LAST_COST)
    assert estimate.next_cost(state, "main") == 5


def test_claude_stops_before_the_response_that_would_cross_the_cap(guard_env, tmp_path):
    # $0.1575 spent after three responses: below the cap and its 80 % warning ($0.16), but
    # the fourth would bring it to about $0.207.
    _, answers = claude_steps(guard_env, tmp_path, 3, RUNAWAY_GUARD_MAX_USD="0.20")
    assert answers[:2] == [None, None]
    stop = answers[2]
    assert stop["continue"] is False
    assert stop["stopReason"] == (
        "runaway-guard stopped the agent: the next response would cross the session spend cap: "
        "$0.16 spent, about $0.05 next, cap $0.20. To go on, raise it: "
        f"{stop['stopReason'].rpartition('raise it: ')[2]}"
    )
    assert "--raise-cap" in stop["stopReason"]
    reason = stop["hookSpecificOutput"]["permissionDecisionReason"]
    assert reason.startswith("runaway-guard: the next response would cross the session spend cap")


def test_the_warning_still_comes_at_80_percent(guard_env, tmp_path):
    # $0.21 of $0.26 is 81 %: warned; $0.21 + about $0.049 stays below the cap: no stop.
    _, answers = claude_steps(guard_env, tmp_path, 4, RUNAWAY_GUARD_MAX_USD="0.26")
    assert answers[:3] == [None, None, None]
    assert answers[3]["systemMessage"].startswith("runaway-guard: session spend $0.21 of $0.26")


def prompt(transcript, event, prompt_id="p2"):
    return {
        "session_id": "s1",
        "transcript_path": str(transcript),
        "cwd": "/tmp",
        "hook_event_name": event,
        "prompt": "go on",
        "prompt_id": prompt_id,
    }


def test_claude_refuses_a_new_prompt_past_the_cap_and_ends_a_kept_turn(guard_env, tmp_path):
    transcript, answers = claude_steps(guard_env, tmp_path, 3, RUNAWAY_GUARD_MAX_USD="0.20")
    env = {"RUNAWAY_GUARD_MAX_USD": "0.20"}
    assert answers[2]["continue"] is False
    # the person prompts again: a new prompt is no permission to cross the cap
    refused = guard_env.answer(prompt(transcript, "UserPromptSubmit"), **env)
    assert refused["decision"] == "block"
    assert "would cross the session spend cap" in refused["reason"]
    assert "--raise-cap" in refused["reason"]
    ended = guard_env.answer(prompt(transcript, "Stop"), **env)
    assert ended["continue"] is False and "--raise-cap" in ended["stopReason"]
    # with room left, both events pass without a word
    assert (
        guard_env.run(
            prompt(transcript, "UserPromptSubmit", "p3"), **{"RUNAWAY_GUARD_MAX_USD": "5"}
        )
        == ""
    )
    assert guard_env.run(prompt(transcript, "Stop"), **{"RUNAWAY_GUARD_MAX_USD": "5"}) == ""


def test_text_only_answers_past_the_cap_are_refused_at_the_next_prompt(guard_env, tmp_path):
    """A session that calls no tool is checked only at its prompts and turn ends: re-prompted
    again and again, it is refused at the prompt whose answer would cross the cap."""
    transcript = tmp_path / "p" / "s1.jsonl"
    env = {"RUNAWAY_GUARD_MAX_USD": "0.30"}
    ends = []
    for i in range(10):
        answer = guard_env.answer(prompt(transcript, "UserPromptSubmit", f"p{i}"), **env)
        if answer:
            break
        jsonl(transcript, [assistant(f"m{i}", use=STEP, stop="end_turn")])
        ends.append(guard_env.answer(prompt(transcript, "Stop", f"p{i}"), **env))
    # five answers ($0.2625): a sixth would bring the session to about $0.31; the fifth
    # turn's end says so already (a Stop hook asking to go on would be outranked)
    assert ends[:4] == [None] * 4 and ends[4]["continue"] is False
    assert i == 5 and answer["decision"] == "block"
    assert "$0.26 spent, about $0.05 next, cap $0.30" in answer["reason"]


def codex_payload(rollout, event, turn="t2"):
    return {
        "session_id": "root",
        "turn_id": turn,
        "transcript_path": str(rollout),
        "cwd": "/tmp",
        "hook_event_name": event,
        "model": "gpt-5.5",
        "prompt": "go on",
    }


def test_codex_refuses_a_new_prompt_past_the_cap_and_ends_a_kept_turn(guard_env, tmp_path):
    rollout = tmp_path / "sessions" / "rollout-2026-11-30T10-00-00-root.jsonl"
    records = [
        {"type": "session_meta", "payload": {"id": "root", "session_id": "root"}},
        {"type": "turn_context", "payload": {"model": "gpt-5.5"}},
    ]
    # each response: 40k input of which 38k cached ($0.029), 500 out ($0.015): $0.044
    step = {"input_tokens": 40_000, "cached_input_tokens": 38_000, "output_tokens": 500}
    records += [
        {
            "timestamp": "2026-11-30T10:00:00Z",
            "type": "token_usage_record",
            "payload": {"thread_id": "root", "response_id": f"r{i}", "usage": step},
        }
        for i in range(2)
    ]
    jsonl(rollout, records)
    env = {"RUNAWAY_GUARD_MAX_USD": "0.10"}
    # $0.088 spent, about $0.0465 next (38k cached, 2.5k not, 500 out): the next would cross
    refused = guard_env.answer(codex_payload(rollout, "UserPromptSubmit"), **env)
    assert set(refused) == {"decision", "reason"} and refused["decision"] == "block"
    assert "$0.09 spent, about $0.05 next, cap $0.10" in refused["reason"]
    ended = guard_env.answer(codex_payload(rollout, "Stop"), **env)
    assert ended["continue"] is False and "decision" not in ended  # block would go on
    assert (
        guard_env.run(codex_payload(rollout, "UserPromptSubmit", "t3"), RUNAWAY_GUARD_MAX_USD="1")
        == ""
    )


def test_no_estimate_before_any_response(guard_env, tmp_path):
    answer = guard_env.run(
        prompt(tmp_path / "p" / "s1.jsonl", "UserPromptSubmit"), RUNAWAY_GUARD_MAX_USD="0.01"
    )
    assert answer == ""


def test_codex_trust_check_looks_for_each_events_own_record(tmp_path):
    """install.py --check looks in config.toml for the trust record of the event's own list
    (Codex names them pre_tool_use, user_prompt_submit, stop)."""
    from runaway_guard.hosts import codex

    settings = tmp_path / "hooks.json"
    (tmp_path / "config.toml").write_text(f'"{settings}:user_prompt_submit:2:0" = "sha256:x"\n')
    handler = {"type": "command", "command": "guard"}
    environ = {"CODEX_HOME": str(tmp_path)}
    note = codex.check_note(str(settings), handler, (2, 0), {}, environ, "UserPromptSubmit")
    assert "different hash" in note  # the record of this very entry is found
    note = codex.check_note(str(settings), handler, (2, 0), {}, environ, "Stop")
    assert "no trust record" in note


def test_a_call_whose_response_is_not_written_yet_adds_that_response_too(guard_env, tmp_path):
    """Claude Code writes a response up to 100 ms after its call's hook: the guard, which has
    not seen it, counts it as one more estimate."""
    transcript, answers = claude_steps(guard_env, tmp_path, 3, RUNAWAY_GUARD_MAX_USD="0.25")
    assert answers == [None, None, None]
    # $0.1575 seen; this call's response (not on disk) and the next: about 2 x $0.0494
    unseen = pre_tool_use(transcript, "t9", "Bash", {"command": "step 9"})
    stop = guard_env.answer(unseen, RUNAWAY_GUARD_MAX_USD="0.25")
    assert stop["continue"] is False
    assert "$0.16 spent, about $0.10 next, cap $0.25" in stop["stopReason"]


def test_a_placeholder_output_count_is_taken_as_the_usual_output():
    """Claude Code's first rows of a response carry a placeholder output count (1): until the
    real count comes, that response's output is the recent median, and so is the next's."""
    priced = []

    def price(inp, cached, written, out):
        priced.append((written, out))
        return 0, True

    state = {}
    for key in range(3):
        estimate.note(state, "main", key, 0, 1000, (5000, 5000, price))
    estimate.note(state, "main", 3, 0, 1, (5000, 5000, price))
    assert priced[-1] == (1000, 1999)  # written: the 1,000 to come; output: still + the next
    estimate.note(state, "main", 3, 0, 1000, (5000, 5000, price))  # its real count
    assert priced[-1] == (1000, 1000)
