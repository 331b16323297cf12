"""Cursor from documented and recorded payloads (tests/fixtures/cursor/README.md): the wires, the
stop hook's spend, the shell call counted once, and every answer valid for Cursor."""

import json
import subprocess
import sys

import pytest
from guard_env import ROOT, fuzz
from hypothesis import given
from hypothesis import strategies as st
from runaway_guard import hook, hosts, ledger
from runaway_guard.decisions import ASK, DENY, STOP, TELL, fit
from runaway_guard.hosts import cursor

FIXTURES = ROOT / "tests" / "fixtures" / "cursor"
PERMISSION = {
    "preToolUse",
    "beforeShellExecution",
    "beforeMCPExecution",
    "beforeReadFile",
    "subagentStart",
}


def recorded(folder):
    path = FIXTURES / folder / "hook_inputs.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


GGSHIELD = recorded("ggshield-2.5.25")
DOCS = recorded("docs")
SHELL_PRE = GGSHIELD[1]  # Cursor 2.5.25 preToolUse Shell
SHELL_POST = GGSHIELD[2]  # and its postToolUse
FAILURE = DOCS[3]  # postToolUseFailure
BEFORE_SHELL = DOCS[1]
STOP_HOOK = recorded("mulmoterminal-2026.09")[0]


class Session:
    """One Cursor conversation fed to the guard, call by call."""

    def __init__(self, tmp_path, **limits):
        self.env = {"RUNAWAY_GUARD_STATE_DIR": str(tmp_path / "state"), "HOME": str(tmp_path)}
        self.env.update({f"RUNAWAY_GUARD_{k.upper()}": str(v) for k, v in limits.items()})
        self.state_dir = tmp_path / "state"
        self.conversation = SHELL_PRE["conversation_id"]
        self.generation = SHELL_PRE["generation_id"]
        self.count = 0

    def send(self, base, **fields):
        payload = dict(base, conversation_id=self.conversation, generation_id=self.generation)
        payload.update(fields)
        answer = hook.run(json.dumps(payload).encode(), self.env)
        event = payload["hook_event_name"]
        check_answer(cursor._ALIASES.get(event, event), answer)
        return json.loads(answer)

    def shell(self, command, exit_code=0, output="", fail=False):
        """preToolUse, then (when it was allowed) its postToolUse or postToolUseFailure."""
        self.count += 1
        tool_id = f"tool-{self.count}"
        shell_input = {"command": command, "cwd": "", "timeout": 30000}
        answer = self.send(SHELL_PRE, tool_use_id=tool_id, tool_input=shell_input)
        if answer["permission"] == "allow":
            if fail:
                self.send(FAILURE, tool_use_id=tool_id, tool_input=shell_input)
            else:
                result = json.dumps({"output": output, "exitCode": exit_code})
                self.send(
                    SHELL_POST, tool_use_id=tool_id, tool_input=shell_input, tool_output=result
                )
        return answer

    def state(self):
        with ledger.Ledger(str(self.state_dir), "cursor", self.conversation) as book:
            return book.state


def check_answer(event, answer):
    """Every printed answer is one JSON object Cursor accepts for that event."""
    assert answer and "\n" not in answer
    value = json.loads(answer)
    assert isinstance(value, dict)
    if event in PERMISSION:
        assert value["permission"] in ("allow", "deny")
        if value["permission"] == "deny":
            assert value["agent_message"].startswith("runaway-guard:")
            assert value["user_message"]
    elif event == "beforeSubmitPrompt":
        assert value == {"continue": True}
    else:
        assert value == {}


def test_a_failure_run_is_refused_from_the_sixth_call(tmp_path):
    session = Session(tmp_path)
    answers = [session.shell(f"make test-{n}", exit_code=2, output="boom") for n in range(1, 9)]
    assert [a["permission"] for a in answers] == ["allow"] * 5 + ["deny"] * 3
    assert "5 tool calls in a row have failed" in answers[5]["agent_message"]
    assert session.state()["blocked"]["wire"] == "failure"


def test_post_tool_use_failure_counts_and_a_declined_call_ends_the_run(tmp_path):
    session = Session(tmp_path, max_failures=2)
    assert session.shell("a", fail=True)["permission"] == "allow"
    assert session.shell("b", fail=True)["permission"] == "allow"
    assert session.shell("c")["permission"] == "deny"
    # the person turns a call down: that is no failure of the agent's, the run starts over
    session = Session(tmp_path / "2", max_failures=2)
    session.shell("a", fail=True)
    answer = session.send(SHELL_PRE, tool_use_id="x", tool_input={"command": "b"})
    session.send(
        FAILURE, tool_use_id="x", failure_type="permission_denied", tool_input={"command": "b"}
    )
    assert answer["permission"] == "allow"
    assert session.shell("c", fail=True)["permission"] == "allow"


def test_an_identical_loop_is_refused_from_the_sixth_call(tmp_path):
    session = Session(tmp_path)
    answers = [session.shell("cat status.txt", output="pending") for _ in range(8)]
    assert [a["permission"] for a in answers] == ["allow"] * 5 + ["deny"] * 3
    assert "already ran 5 times with the same result" in answers[5]["agent_message"]


def test_polls_and_edit_and_retest_are_never_refused(tmp_path):
    session = Session(tmp_path, max_failures=3, max_repeats=3)
    answers = [session.shell("cat counter", output=str(n)) for n in range(8)]
    for v in range(1, 4):
        answers.append(session.shell(f"sed -i s/v=.*/v={v}/ check.sh"))
        answers.append(session.shell("sh check.sh", exit_code=0 if v == 3 else 1, output=f"v={v}"))
        answers.append(session.shell("sh check.sh", exit_code=0 if v == 3 else 1, output=f"v={v}"))
    assert {a["permission"] for a in answers} == {"allow"}


def test_a_new_message_of_the_person_starts_over(tmp_path):
    session = Session(tmp_path, max_failures=2)
    session.shell("a", fail=True)
    session.shell("b", fail=True)
    assert session.shell("c")["permission"] == "deny"
    session.generation = "a-new-generation"
    assert session.shell("c")["permission"] == "allow"


def test_a_shell_call_firing_both_hooks_is_counted_once(tmp_path):
    session = Session(tmp_path)
    for _ in range(3):
        command = "cat status.txt"
        shell_input = {"command": command, "cwd": "", "timeout": 30000}
        session.count += 1
        tool_id = f"tool-{session.count}"
        assert session.send(BEFORE_SHELL, command=command, cwd="")["permission"] == "allow"
        assert (
            session.send(SHELL_PRE, tool_use_id=tool_id, tool_input=shell_input)["permission"]
            == "allow"
        )
        result = json.dumps({"output": "pending", "exitCode": 0})
        session.send(SHELL_POST, tool_use_id=tool_id, tool_input=shell_input, tool_output=result)
    assert len(session.state()["agents"]["main"]["hist"]) == 3


def test_a_second_install_sees_the_same_call_once(tmp_path):
    """~/.cursor/hooks.json and a Claude settings file Cursor also runs: one preToolUse each."""
    session = Session(tmp_path)
    shell_input = {"command": "ls", "cwd": "", "timeout": 30000}
    session.send(SHELL_PRE, tool_use_id="t1", tool_input=shell_input)
    session.send(SHELL_PRE, tool_use_id="t1", tool_input=shell_input, hook_event_name="PreToolUse")
    assert len(session.state()["agents"]["main"]["hist"]) == 1


def test_spend_arrives_with_the_stop_hook_and_is_enforced_from_the_next_turn(tmp_path):
    session = Session(tmp_path, max_usd=0.05)
    assert session.shell("make")["permission"] == "allow"
    session.send(STOP_HOOK)  # model "default": priced at the dearest model, flagged
    state = session.state()
    spent = state["spend"]["total"] / 1e12
    assert state["unpriced"] == ["default"]
    assert spent > 0.05
    session.generation = "the-next-turn"
    answer = session.shell("make")
    assert answer["permission"] == "deny" and "spend cap is reached" in answer["agent_message"]


def test_a_known_model_is_priced_from_the_table(tmp_path):
    session = Session(tmp_path)
    session.send(STOP_HOOK, model="gpt-5", generation_id="g1")
    session.send(STOP_HOOK, model="gpt-5", generation_id="g1")  # the same turn reported twice
    spent = session.state()["spend"]["total"] / 1e12
    gpt5 = json.loads((ROOT / "skill" / "runaway_guard" / "prices.json").read_text())["openai"][
        "models"
    ]["gpt-5"]
    # input_tokens counted as excluding the cache reads (the dearer reading)
    expected = (20152 * gpt5["input"] + 8704 * gpt5["cached_input"] + 15 * gpt5["output"]) / 1e6
    assert spent == pytest.approx(expected, abs=1e-9)


def test_every_event_gets_a_valid_answer(tmp_path):
    session = Session(tmp_path)
    for folder in ("ggshield-2.5.25", "entire-cli-2026.02", "mulmoterminal-2026.09", "docs"):
        for payload in recorded(folder):
            answer = hook.run(json.dumps(payload).encode(), session.env)
            check_answer(
                cursor._ALIASES.get(payload["hook_event_name"], payload["hook_event_name"]), answer
            )


@pytest.mark.parametrize("kind", [TELL, DENY, ASK, STOP])
def test_every_rung_is_a_deny_or_nothing(kind):
    cursor.call(SHELL_PRE)
    decision = fit(
        {"kind": kind, "wire": "loop", "model_text": "runaway-guard: m", "person_text": "p"},
        cursor.RUNGS,
    )
    value = json.loads(cursor.render(decision))
    assert value["permission"] == ("allow" if kind == TELL else "deny")
    if kind != TELL:
        assert value["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_detection_tells_cursor_from_claude_and_qwen():
    claude = [
        json.loads(line)
        for line in (ROOT / "tests/fixtures/claude/hook_inputs.jsonl").read_text().splitlines()
    ]
    assert {hosts.detect(p, {}) for p in claude} == {"claude"}
    for folder in ("ggshield-2.5.25", "entire-cli-2026.02", "mulmoterminal-2026.09", "docs"):
        assert {hosts.detect(p, {}) for p in recorded(folder)} == {"cursor"}


def test_only_known_event_names_are_installed():
    documented = set(
        (FIXTURES / "README.md")
        .read_text()
        .split("## Events")[1]
        .split("An event name")[0]
        .replace(",", " ")
        .replace(".", " ")
        .split()
    )
    assert set(cursor.INSTALL["entry"]["events"]) <= documented
    assert cursor.INSTALL["entry"]["grouped"] is False


@fuzz(300)
@given(
    st.dictionaries(
        st.sampled_from(
            [
                "hook_event_name",
                "tool_name",
                "tool_input",
                "tool_use_id",
                "conversation_id",
                "generation_id",
                "tool_output",
                "failure_type",
                "is_interrupt",
                "input_tokens",
                "output_tokens",
                "model",
                "cache_read_tokens",
                "loop_count",
                "workspace_roots",
            ]
        ),
        st.one_of(
            st.none(),
            st.booleans(),
            st.integers(),
            st.floats(),
            st.text(max_size=20),
            st.sampled_from(
                [
                    "preToolUse",
                    "postToolUse",
                    "postToolUseFailure",
                    "stop",
                    "Shell",
                    '{"exitCode":1}',
                ]
            ),
            st.lists(st.text(max_size=5), max_size=2),
            st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=3),
        ),
    )
)
def test_any_payload_is_a_call_or_nothing_and_any_answer_is_json(payload):
    made = cursor.call(payload)
    assert made is None or made.host == "cursor"
    assert isinstance(json.loads(cursor.render(None)), dict)


def test_when_the_guard_fails_cursor_still_gets_its_allow(tmp_path):
    """Cursor's CLI blocks a call whose hook prints nothing: failing open means answering."""
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "RUNAWAY_GUARD_STATE_DIR": str(blocker / "state"),
    }
    for payload, expected in ((SHELL_PRE, '{"permission":"allow"}'), (STOP_HOOK, "{}")):
        done = subprocess.run(
            [sys.executable, str(ROOT / "skill" / "guard.py")],
            input=json.dumps(payload).encode(),
            capture_output=True,
            env=env,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0
        assert done.stdout.decode().strip() == expected
