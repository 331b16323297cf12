"""Qwen Code (0.24.4) from recorded sessions: tests/fixtures/qwen/<scenario>/.

Each replay feeds the guard the recorded hook inputs in order, with the chat file cut to what it
held when that hook ran (hook_inputs.snapshots.jsonl), so the guard reads exactly what it read in
the real run.
"""

import json
import os
import shutil

import pytest
from guard_env import ROOT, followed_files, fuzz
from hypothesis import given
from hypothesis import strategies as st
from runaway_guard import fs, hook, hosts, ledger
from runaway_guard.calls import MODEL, TOOL, Call
from runaway_guard.decisions import ASK, DENY, STOP, TELL, fit
from runaway_guard.hosts import _files, qwen

FIXTURES = ROOT / "tests" / "fixtures" / "qwen"
PRICES = json.loads((ROOT / "skill" / "runaway_guard" / "prices.json").read_text())["openai"]
INSTALLED = ("PreToolUse", "UserPromptSubmit", "PostToolUse", "PostToolUseFailure")


def lines(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


class Replay:
    """The recorded session, with its files moved under tmp_path and its hooks replayed."""

    def __init__(self, scenario, tmp_path, **limits):
        self.dir = FIXTURES / scenario
        self.inputs = lines(self.dir / "hook_inputs.jsonl")
        self.snapshots = lines(self.dir / "hook_inputs.snapshots.jsonl")
        assert len(self.snapshots) == len(self.inputs)
        self.session = self.inputs[0]["session_id"]
        old_chat = self.inputs[0]["transcript_path"]
        self.old_root = old_chat[: old_chat.index("/chats/")]
        self.root = tmp_path / "project-dir"
        (self.root / "chats").mkdir(parents=True)
        self.chat = self.root / "chats" / f"{self.session}.jsonl"
        self.recorded_chat = (self.dir / "chats" / self.chat.name).read_bytes().splitlines(True)
        self.env = {"RUNAWAY_GUARD_STATE_DIR": str(tmp_path / "state"), "HOME": str(tmp_path)}
        self.env.update({f"RUNAWAY_GUARD_{k.upper()}": str(v) for k, v in limits.items()})
        self.state_dir = tmp_path / "state"
        self.answers = []

    def _at(self, index):
        """Put the files as they were when hook `index` ran."""
        self.chat.write_bytes(b"".join(self.recorded_chat[: self.snapshots[index]["lines"]]))
        subagents = self.dir / "subagents"
        if subagents.exists() and not (self.root / "subagents").exists():
            shutil.copytree(subagents, self.root / "subagents")

    def payload(self, index):
        text = json.dumps(self.inputs[index]).replace(self.old_root, str(self.root))
        return json.loads(text)

    def run(self, events=INSTALLED):
        for index, payload in enumerate(self.inputs):
            if payload["hook_event_name"] not in events:
                continue
            self._at(index)
            answer = hook.run(json.dumps(self.payload(index)).encode(), self.env)
            self.answers.append((payload["hook_event_name"], answer))
        self.chat.write_bytes(b"".join(self.recorded_chat))
        return self

    def state(self):
        with ledger.Ledger(str(self.state_dir), "qwen", self.session) as book:
            qwen.sync(book, qwen.call(self.payload(0)))
            return book.state


def table_cost(model, usage):
    """USD of one served response from prices.json, written out independently of the skill."""
    entry = PRICES["models"][model]
    cached = usage.get("cached_tokens", 0)
    uncached = usage["input_tokens"] - cached
    return (
        uncached * entry["input"]
        + cached * entry["cached_input"]
        + usage["output_tokens"] * entry["output"]
    ) / 1e6


def served_total(scenario):
    total = 0.0
    for served in json.loads((FIXTURES / scenario / "served.json").read_text()):
        model = served["model"].replace("-2025-04-14", "")
        total += table_cost(model, served["usage"])
    return total


@pytest.mark.parametrize("scenario", ["failures", "usage", "subagent", "stop"])
def test_spend_equals_every_served_response_times_the_table(scenario, tmp_path):
    state = Replay(scenario, tmp_path).run().state()
    assert state["spend"]["total"] / 1e12 == pytest.approx(served_total(scenario), abs=1e-6)
    assert state["unpriced"] == []


def test_two_models_in_one_session_each_priced_at_its_own_rates(tmp_path):
    state = Replay("usage", tmp_path).run().state()
    by_model = {model: pico / 1e12 for model, pico in state["spend"]["model"].items()}
    served = json.loads((FIXTURES / "usage" / "served.json").read_text())
    gpt41 = sum(table_cost("gpt-4.1", s["usage"]) for s in served if s["run"] == 0)
    mini = sum(table_cost("gpt-5-mini", s["usage"]) for s in served if s["run"] == 1)
    assert by_model == pytest.approx({"gpt-4.1-2025-04-14": gpt41, "gpt-5-mini": mini}, abs=1e-9)
    # reasoning tokens are inside the output count: 300 output tokens priced, not 428
    by_hand = (1640 * 0.25 + 15360 * 0.025 + 300 * 2) + (504 * 0.25 + 16896 * 0.025 + 60 * 2)
    assert mini == pytest.approx(by_hand / 1e6, abs=1e-12)


def test_a_subagents_responses_are_booked_to_it(tmp_path):
    replay = Replay("subagent", tmp_path).run()
    agents = replay.state()["spend"]["agent"]
    sub = next(name for name in agents if name != "main")
    assert sub.startswith("general-purpose-call_")
    assert agents[sub] / 1e12 == pytest.approx(
        table_cost("gpt-4.1", {"input_tokens": 3000, "output_tokens": 50, "cached_tokens": 2048})
        + table_cost("gpt-4.1", {"input_tokens": 3200, "output_tokens": 20, "cached_tokens": 2944}),
        abs=1e-9,
    )


def test_a_quiet_subagents_folder_is_not_listed_again(tmp_path, monkeypatch):
    """A call on an unchanged subagents folder costs a stat, not a listing; a new agent file
    is still found."""
    recorded = FIXTURES / "subagent"
    session = lines(recorded / "hook_inputs.jsonl")[0]["session_id"]
    chat = tmp_path / "chats" / f"{session}.jsonl"
    shutil.copytree(recorded / "chats", chat.parent)
    folder = tmp_path / "subagents" / session
    shutil.copytree(recorded / "subagents" / session, folder)
    os.utime(folder, (1_700_000_000, 1_700_000_000))
    call = Call("qwen", session, transcript_path=str(chat))

    def sync():
        with ledger.Ledger(str(tmp_path / "state"), "qwen", session) as book:
            qwen.sync(book, call)
            followed = followed_files(book, _files.agent_file)
            return {path: entry["agent"] for path, entry in followed.items()}

    first = sync()
    listed = []
    real_listdir = fs.listdir
    monkeypatch.setattr(fs, "listdir", lambda path: listed.append(path) or real_listdir(path))
    assert sync() == first and listed == []
    new = folder / "agent-general-purpose-call_new.jsonl"
    new.write_text("")
    assert sync() == {**first, str(new): "general-purpose-call_new"}
    assert listed == [str(folder)]


def test_failures_count_and_the_guards_own_refusal_does_not(tmp_path):
    replay = Replay("failures", tmp_path).run()
    record = replay.state()["agents"]["main"]
    # exit 1, exit 3 (two failures), a success (reset), a refusal by the guard (not counted)
    outcomes = [entry[1] is not None for entry in record["hist"]]
    assert len(record["hist"]) == 3 and all(outcomes)
    assert record["fails"] == 0


def test_a_failure_run_is_refused_at_the_limit(tmp_path):
    replay = Replay("failures", tmp_path, max_failures=2).run()
    pre = [answer for event, answer in replay.answers if event == "PreToolUse"]
    assert pre[:2] == ["", ""]
    third = json.loads(pre[2])["hookSpecificOutput"]
    assert third["permissionDecision"] == "deny"
    assert third["permissionDecisionReason"].startswith("runaway-guard: 2 tool calls in a row")


def test_a_spend_cap_refuses_the_call_and_ends_the_run_at_the_next_request(tmp_path):
    """The first response ($0.0304) crosses a $0.02 cap: its call is refused with a stop, and
    the UserPromptSubmit before the next request answers continue:false, which ends the run."""
    replay = Replay("usage", tmp_path, max_usd=0.02).run(events=INSTALLED[:2])
    first_prompt, first_call, continuation = (answer for _, answer in replay.answers[:3])
    assert first_prompt == ""
    refused = json.loads(first_call)
    assert refused["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert refused["continue"] is False
    assert json.loads(continuation)["continue"] is False
    assert "reached its cap" in json.loads(continuation)["stopReason"]


def test_a_response_recorded_late_still_ends_the_run_before_the_next_request(tmp_path):
    """Under load Qwen may write a response's record after the hook of the call it made: that
    call runs, and the UserPromptSubmit before the next request sees the cap and ends the run."""
    replay = Replay("usage", tmp_path, max_usd=0.02)
    first_call = next(
        i for i, p in enumerate(replay.inputs) if p["hook_event_name"] == "PreToolUse"
    )
    replay.snapshots[first_call] = dict(replay.snapshots[first_call], lines=2)  # not written yet
    replay.run(events=INSTALLED[:2])
    first_prompt, call, continuation = (answer for _, answer in replay.answers[:3])
    assert first_prompt == call == ""
    assert json.loads(continuation)["continue"] is False
    assert replay.state()["blocked"]["wire"] == "session"


def test_a_new_prompt_from_the_person_clears_a_stop(tmp_path):
    """The guard ended the first run: each of its requests is refused; the person's next prompt
    (`--continue`, a new prompt_id) goes through."""
    replay = Replay("usage", tmp_path)
    with ledger.Ledger(str(replay.state_dir), "qwen", replay.session) as book:
        book.state["blocked"] = {"wire": "loop", "kind": STOP, "reason": "runaway-guard: x"}
        book.state["prompt"] = f"{replay.session}########0"
    replay.run(events=("UserPromptSubmit",))
    prompts = [
        p["prompt_id"][-1] for p in replay.inputs if p["hook_event_name"] == "UserPromptSubmit"
    ]
    first = [answer for run, (_, answer) in zip(prompts, replay.answers) if run == "0"]
    second = [answer for run, (_, answer) in zip(prompts, replay.answers) if run == "2"]
    assert first and all(json.loads(answer)["continue"] is False for answer in first)
    assert second and all(answer == "" for answer in second)


def test_detection_tells_qwen_from_claude_and_cursor():
    claude = lines(ROOT / "tests" / "fixtures" / "claude" / "hook_inputs.jsonl")
    qwen_inputs = [
        p for s in ("failures", "subagent") for p in lines(FIXTURES / s / "hook_inputs.jsonl")
    ]
    assert {hosts.detect(p, {}) for p in claude} == {"claude"}
    assert {hosts.detect(p, {}) for p in qwen_inputs} == {"qwen"}
    cursor_subagent = {
        "conversation_id": "c",
        "tool_call_id": "tc-1",
        "hook_event_name": "subagentStart",
    }
    assert hosts.detect(cursor_subagent, {}) == "cursor"


def test_shell_calls_differing_only_in_their_label_are_one_call():
    base = lines(FIXTURES / "failures" / "hook_inputs.jsonl")[1]
    one = qwen.call(dict(base, tool_input={"command": "make test", "description": "run tests"}))
    two = qwen.call(dict(base, tool_input={"command": "make test", "description": "try again"}))
    other = qwen.call(dict(base, tool_input={"command": "make lint", "description": "run tests"}))
    assert one.tool_input == two.tool_input != other.tool_input
    assert one.event == TOOL and one.tool == "Bash"


@pytest.mark.parametrize("kind", [DENY, ASK, STOP])
def test_answers(kind):
    decision = fit(
        {
            "kind": kind,
            "wire": "loop",
            "model_text": "runaway-guard: m",
            "person_text": "runaway-guard: p",
        },
        qwen.RUNGS,
    )
    value = json.loads(qwen.render(decision))
    specific = value["hookSpecificOutput"]
    assert specific["hookEventName"] == "PreToolUse"
    assert specific["permissionDecision"] == ("ask" if kind == ASK else "deny")
    assert ("continue" in value) == (kind == STOP)
    assert qwen.render(None) == ""
    assert fit({"kind": TELL, "wire": "x", "model_text": "m"}, qwen.RUNGS) is None


def test_a_continuation_is_a_before_model_event():
    prompt = next(
        p for p in lines(FIXTURES / "stop" / "hook_inputs.jsonl") if p.get("prompt") == ""
    )
    assert qwen.call(prompt).event == MODEL


@fuzz(300)
@given(
    st.dictionaries(
        st.sampled_from(
            [
                "hook_event_name",
                "tool_name",
                "tool_input",
                "tool_call_id",
                "tool_use_id",
                "session_id",
                "prompt_id",
                "agent_id",
                "transcript_path",
                "cwd",
            ]
        ),
        st.one_of(
            st.none(),
            st.booleans(),
            st.integers(),
            st.text(max_size=20),
            st.sampled_from(["PreToolUse", "UserPromptSubmit", "run_shell_command"]),
            st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=3),
        ),
    )
)
def test_any_payload_is_a_call_or_nothing(payload):
    made = qwen.call(payload)
    assert made is None or made.host == "qwen"


@fuzz(300)
@given(
    st.one_of(
        st.binary(max_size=200),
        st.recursive(
            st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=10)),
            lambda inner: st.one_of(
                st.lists(inner, max_size=3),
                st.dictionaries(
                    st.sampled_from(
                        [
                            "type",
                            "systemPayload",
                            "uiEvent",
                            "event.name",
                            "model",
                            "response_id",
                            "input_token_count",
                            "toolCallResult",
                            "callId",
                            "status",
                            "resultDisplay",
                            "message",
                            "parts",
                        ]
                    ),
                    inner,
                    max_size=4,
                ),
            ),
            max_leaves=12,
        ).map(lambda v: json.dumps(v).encode()),
    )
)
def test_any_chat_line_is_read_or_skipped(raw):
    class Book:
        def __init__(self):
            self.state = {"files": {}}

        def expecting(self):
            return True

        def waiting_for(self, raw):
            return True

        def usage(self, key, agent, model, picodollars, known, out, day):
            assert isinstance(key, str) and isinstance(picodollars, int) and picodollars >= 0

        def result(self, call_id, status, digest):
            assert status in ("ok", "fail", "guard", "reset")

    for agent in ("main", "sub"):
        qwen._Reader(Book(), {"agent": agent}).line(raw)
        qwen._Reader(Book(), {"agent": agent}).line(
            raw.replace(b"{", b'{"type":"tool_result","event.name":"qwen-code.api_response",', 1)
        )
