"""Copilot CLI: detection of both payload dialects, answers, and events.jsonl read back from the
fixtures recorded with the real 1.0.102 (tests/fixtures/copilot/README.md).

The fixtures were recorded with a hook on every event from a Copilot hook file (camelCase) and
from the project's .claude/settings.local.json (PascalCase). `replay` feeds each preToolUse
payload to the guard with events.jsonl cut where Copilot had written it when that hook ran (up
to the `hook.start` that lists the call), as both installs would have seen it.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from guard_env import ROOT, GuardEnv
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from runaway_guard import hook as guard_hook
from runaway_guard import hosts, ledger, sessions
from runaway_guard.decisions import ASK, DENY, STOP, TELL
from runaway_guard.hosts import _procs, copilot
from runaway_guard.hosts.copilot import events as copilot_events

FIXTURES = ROOT / "tests" / "fixtures" / "copilot"
# gpt-4.1 in prices.json (GitHub's table agrees): $2 input, $0.50 cached input, $8 output / MTok
GPT41 = {"input": 2, "cached": 0.5, "output": 8}


def fixture(name):
    folder = FIXTURES / name
    lines = (folder / "hook_inputs.jsonl").read_text().splitlines()
    hooks = [{"event": event_of(p), "payload": p} for p in map(json.loads, lines)]
    (events,) = list((folder / "session-state").glob("*/events.jsonl"))
    records = [json.loads(line) for line in events.read_text().splitlines()]
    return hooks, events, records


def event_of(payload):
    """PreToolUse (from the Claude settings), preToolUse or agentStop (from a Copilot hook
    file), or other."""
    if "hook_event_name" in payload:
        return payload["hook_event_name"]
    keys = set(payload)
    if {"toolName", "toolArgs"} <= keys and not keys & {"toolResult", "error", "hookName"}:
        return "preToolUse"
    return "agentStop" if "stopReason" in keys else "other"


def priced(usage, rates=GPT41):
    """Tokens x table, written out independently of the skill (OpenAI counting)."""
    cached = usage["cacheReadTokens"]
    fresh = usage["inputTokens"] - cached
    dollars = (
        fresh * rates["input"] + cached * rates["cached"] + usage["outputTokens"] * rates["output"]
    )
    return dollars / 1e6


# ---------------------------------------------------------------------------------------------
# detection


@pytest.mark.parametrize("name", ["basic", "denied", "subagent"])
def test_every_payload_copilot_sent_is_copilots_never_claude(name):
    hooks, _, _ = fixture(name)
    for hook in hooks:
        env = {"COPILOT_CLI": "1", "CLAUDE_PROJECT_DIR": "/PROJECT"}
        assert hosts.detect(hook["payload"], env) == "copilot", hook
        assert hosts.detect(hook["payload"], {}) == "copilot", hook


def test_claude_codes_own_payloads_stay_claudes_even_under_copilot_env():
    """A Claude Code started from a shell tool of a Copilot session inherits COPILOT_CLI=1."""
    recorded = sorted((ROOT / "tests" / "fixtures" / "claude").glob("**/hook_inputs.jsonl"))
    payloads = [json.loads(line) for path in recorded for line in path.read_text().splitlines()]
    assert payloads
    for payload in payloads:
        assert hosts.detect(payload, {"COPILOT_CLI": "1"}) == "claude"
    stop = {"hook_event_name": "Stop", "session_id": "s", "transcript_path": "/x/s.jsonl"}
    assert hosts.detect(stop, {"COPILOT_CLI": "1"}) == "claude"


def test_call_reads_only_pre_tool_use_and_agent_stop_and_both_dialects_agree():
    hooks, _, _ = fixture("basic")
    camel = [copilot.call(h["payload"], {}) for h in hooks if h["event"] == "preToolUse"]
    pascal = [copilot.call(h["payload"], {}) for h in hooks if h["event"] == "PreToolUse"]
    read = ("preToolUse", "PreToolUse", "agentStop")
    others = [h for h in hooks if h["event"] not in read]
    assert all(copilot.call(h["payload"], {}) is None for h in others)
    turn_ends = [copilot.call(h["payload"], {}) for h in hooks if h["event"] == "agentStop"]
    assert turn_ends and all(call.event == "model" for call in turn_ends)
    assert len(camel) == len(pascal) == 8
    for a, b in zip(camel, pascal):
        assert (a.session_id, a.tool, a.tool_input, a.agent) == (
            b.session_id,
            b.tool,
            b.tool_input,
            b.agent,
        )
        assert a.slot != b.slot
    assert [c.tool for c in camel] == [
        "Bash",
        "Bash",
        "Read",
        "Read",
        "Write",
        "Edit",
        "Bash",
        "Read",
    ]


def test_each_install_has_its_own_slot():
    """A Copilot hook file (user or project), a project's Claude settings and a Claude-format
    plugin may all run the guard for one call: each claims the call's id in a slot of its own."""
    camel = {"sessionId": "s1", "toolName": "bash", "toolArgs": {"command": "ls"}}
    pascal = {"hook_event_name": "PreToolUse", "session_id": "s1", "tool_name": "Bash"}
    pascal.update(tool_input={"command": "ls"}, timestamp="2026-12-01T00:00:00.000Z")
    slots = {
        copilot.call(camel, {"COPILOT_HOOK_DIR": "/home/u/.copilot/hooks"}).slot,
        copilot.call(camel, {"COPILOT_HOOK_DIR": "/p/.github/hooks"}).slot,
        copilot.call(pascal, {}).slot,
        copilot.call(pascal, {"CLAUDE_PLUGIN_ROOT": "/src/runaway-guard"}).slot,
    }
    assert len(slots) == 4


def test_a_subagents_call_belongs_to_the_session_it_runs_in():
    hooks, _, _ = fixture("subagent")
    calls = [copilot.call(h["payload"], {}) for h in hooks if h["event"].lower() == "pretooluse"]
    root = hooks[0]["payload"]["sessionId"]
    assert {c.session_id for c in calls} == {root}
    assert [c.agent for c in calls] == ["main", "main"] + [calls[2].agent] * 2
    assert calls[2].agent != "main"


def test_the_events_path_follows_copilot_home(tmp_path):
    payload = {"sessionId": "abc", "toolName": "bash", "toolArgs": {}}
    found = copilot.call(payload, {"COPILOT_HOME": str(tmp_path)})
    assert found.transcript_path == str(tmp_path / "session-state" / "abc" / "events.jsonl")
    assert copilot.call(dict(payload, sessionId="../x"), {}).transcript_path is None


# ---------------------------------------------------------------------------------------------
# answers


def test_render_gives_one_answer_both_dialects_honour():
    assert copilot.render(None) == ""
    assert copilot.render({"kind": TELL, "model_text": ""}) == ""
    assert json.loads(copilot.render({"kind": TELL, "model_text": "m"})) == {
        "additionalContext": "m"
    }
    deny = json.loads(copilot.render({"kind": DENY, "model_text": "m", "person_text": "p"}))
    assert deny == {"permissionDecision": "deny", "permissionDecisionReason": "m"}
    for kind in (ASK, STOP):
        answer = json.loads(copilot.render({"kind": kind, "model_text": "m", "person_text": "p"}))
        assert answer == {"permissionDecision": "ask", "permissionDecisionReason": "p"}


# ---------------------------------------------------------------------------------------------
# events.jsonl, replayed as each hook saw it


def replay(tmp_path, name, monkeypatch, both=True):
    """Run the guard for every preToolUse of the fixture, in order: (guard, session, answers)."""
    hooks, events, records = fixture(name)
    lines = events.read_text().splitlines(keepends=True)
    guard = GuardEnv(tmp_path)
    home = tmp_path / "copilot-home"
    session = records[0]["data"]["sessionId"]
    target = home / "session-state" / session / "events.jsonl"
    target.parent.mkdir(parents=True)
    monkeypatch.setenv("COPILOT_HOME", str(home))  # the hook's own environment
    # the hook.start line that lists each call, in call order
    cuts = []
    for index, record in enumerate(records):
        data = record.get("data") or {}
        if record["type"] == "hook.start" and data.get("hookType") == "preToolUse":
            cuts += [index] * len(data["input"]["toolCalls"])
    camel = [h for h in hooks if h["event"] == "preToolUse"]
    pascal = [h for h in hooks if h["event"] == "PreToolUse"]
    answers = []
    for position, cut in enumerate(cuts):
        target.write_text("".join(lines[: cut + 1]))
        for dialect in (camel, pascal) if both else (camel,):
            answers.append(guard.run(dialect[position]["payload"], COPILOT_CLI="1"))
    target.write_text("".join(lines))
    return guard, session, answers


def state_of(guard, session):
    with ledger.Ledger(str(guard.state_dir), "copilot", session) as book:
        return json.loads(json.dumps(book.state))


def test_spend_is_tokens_times_the_table_and_each_call_is_counted_once(tmp_path, monkeypatch):
    guard, session, answers = replay(tmp_path, "basic", monkeypatch)
    _, _, records = fixture("basic")
    usages = [r["data"]["usage"] for r in records if r["type"] == "session.usage_record"]
    state = state_of(guard, session)
    # the last response (a text, after the last call) is not on disk at any hook: 7 of 8
    expected = sum(priced(u) for u in usages[:-1])
    assert state["spend"]["total"] / 1e12 == pytest.approx(expected, abs=1e-9)
    assert answers == [""] * 16
    record = state["agents"]["main"]
    # 8 calls, each seen by both installs, counted once; the last pair's outcomes are not read yet
    ran = [h for h in record["hist"]]
    assert len(ran) == 6
    assert len(record["pending"]) == 2


def test_a_status_after_the_run_reads_the_last_response_too(tmp_path, monkeypatch):
    guard, session, _ = replay(tmp_path, "basic", monkeypatch)
    state = sessions.refresh(str(guard.state_dir), "copilot", session)
    _, _, records = fixture("basic")
    usages = [r["data"]["usage"] for r in records if r["type"] == "session.usage_record"]
    assert state["spend"]["total"] / 1e12 == pytest.approx(sum(map(priced, usages)), abs=1e-9)
    assert state["spend"]["model"].keys() == {"gpt-4.1"}


def test_failures_come_from_exit_codes_and_denied_calls_never_count(tmp_path, monkeypatch):
    guard, session, _ = replay(tmp_path, "basic", monkeypatch, both=False)
    state = state_of(guard, session)
    main = state["agents"]["main"]
    # outcomes read: ok (echo), fail (exit 3), ok (view), fail (view missing), ok, ok
    assert main["fails"] == 0
    guard2, session2, _ = replay(tmp_path / "denied", "denied", monkeypatch, both=False)
    denied = state_of(guard2, session2)["agents"]["main"]
    # the two refused calls and the interrupted one never ran: no failure, no history entry
    assert denied["fails"] == 0
    assert len(denied["hist"]) == 1


def test_a_subagents_failure_and_spend_are_its_own(tmp_path, monkeypatch):
    guard, session, _ = replay(tmp_path, "subagent", monkeypatch)
    state = sessions.refresh(str(guard.state_dir), "copilot", session)
    _, _, records = fixture("subagent")
    task = next(r["data"]["toolCallId"] for r in records if r["type"] == "subagent.started")
    assert set(state["spend"]["agent"]) == {"main", task}
    usages = [r["data"]["usage"] for r in records if r["type"] == "session.usage_record"]
    sub = sum(priced(u) for u in usages if u.get("parentToolCallId") == task)
    assert state["spend"]["agent"][task] / 1e12 == pytest.approx(sub, abs=1e-9)
    assert task in state["agents"]


def test_the_failure_wire_stops_the_sixth_failing_command(tmp_path, monkeypatch):
    """Five failing shell calls in a row, each outcome on disk before the next hook."""
    guard, events = one_session(tmp_path, monkeypatch)
    env = {"RUNAWAY_GUARD_MAX_FAILURES": "5"}
    answers = []
    for n in range(1, 7):
        args = {"command": f"false {n}", "description": "x"}
        failed = complete(f"c{n}", exit_code=1, text=f"boom {n}")
        answers.append(through(guard, events, f"c{n}", args, failed, **env))
    assert answers[:4] == [None] * 4
    assert set(answers[4]) == {"additionalContext"}  # a warning, the call runs
    assert answers[5]["permissionDecision"] in ("deny", "ask")
    assert answers[5]["permissionDecisionReason"].startswith("runaway-guard:")


def test_the_guards_own_refusals_do_not_feed_the_failure_run(tmp_path, monkeypatch):
    guard, events = one_session(tmp_path, monkeypatch)
    env = {"RUNAWAY_GUARD_MAX_FAILURES": "2"}
    for n in range(1, 6):
        through(guard, events, f"c{n}", {"command": f"x {n}"}, denied(f"c{n}"), **env)
    state = state_of(guard, "s1")
    assert state["agents"]["main"]["fails"] == 0


def test_polls_whose_output_changes_are_progress_not_a_loop(tmp_path, monkeypatch):
    guard, events = one_session(tmp_path, monkeypatch)
    env = {"RUNAWAY_GUARD_MAX_REPEATS": "3"}
    args = {"command": "cat status", "description": "poll"}
    answers = []
    for n in range(1, 13):  # 8 polls whose output changes, then the same result 3 times
        # the shellId grows every call: only the output before it tells progress from a loop
        text = f"step {n}" if n <= 8 else "same"
        result = complete(f"c{n}", text=f"{text}\n<shellId: {n} completed>")
        answers.append(through(guard, events, f"c{n}", args, result, **env))
    assert answers[:8] == [None] * 8
    assert all(a is None or "permissionDecision" not in a for a in answers[8:11])
    assert answers[11]["permissionDecisionReason"].startswith("runaway-guard:")


def test_without_its_events_file_the_guard_still_answers_at_once(tmp_path, monkeypatch):
    monkeypatch.setenv("COPILOT_HOME", str(tmp_path / "none"))
    guard = GuardEnv(tmp_path)
    payload = {"sessionId": "nowhere", "toolName": "bash", "toolArgs": {"command": "ls"}}
    start = time.monotonic()
    assert guard.run(payload) == ""
    assert time.monotonic() - start < copilot.WAIT


def one_session(tmp_path, monkeypatch):
    """The guard, and the events.jsonl of session s1 under a COPILOT_HOME of its own."""
    home = tmp_path / "home"
    events = home / "session-state" / "s1" / "events.jsonl"
    events.parent.mkdir(parents=True)
    monkeypatch.setenv("COPILOT_HOME", str(home))
    return GuardEnv(tmp_path), events


def through(guard, events, call_id, args, outcome, **env):
    """One shell call as Copilot makes it: its hook.start on disk, the guard, its outcome."""
    write_events(events, [hook_start([(call_id, "bash", args)])])
    answer = guard.answer({"sessionId": "s1", "toolName": "bash", "toolArgs": args}, **env)
    write_events(events, [outcome])
    return answer


def write_events(path, records):
    with open(path, "a", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record) + "\n")


def hook_start(calls):
    items = [{"id": i, "name": n, "args": a} for i, n, a in calls]
    data = {"hookInvocationId": "h", "hookType": "preToolUse", "input": {"toolCalls": items}}
    return {"type": "hook.start", "data": data}


def complete(call_id, exit_code=0, text=""):
    data = {
        "toolCallId": call_id,
        "success": True,
        "shellExecution": {"exitCode": exit_code},
        "result": {"content": text},
    }
    return {"type": "tool.execution_complete", "data": data}


def denied(call_id):
    error = {"message": "Denied by preToolUse hook: runaway-guard: no", "code": "denied"}
    return {
        "type": "tool.execution_complete",
        "data": {"toolCallId": call_id, "success": False, "error": error},
    }


# ---------------------------------------------------------------------------------------------
# prices


def test_a_github_billed_response_costs_what_copilot_charged():
    usage = {
        "model": "claude-sonnet-4.5",
        "inputTokens": 1000,
        "outputTokens": 10,
        "isByok": False,
        "copilotUsage": {"totalNanoAiu": 123456789},
    }
    # 123456789 nano-AI units = 0.123456789 AI credits = $0.00123456789
    assert copilot_events._price(usage) == ("claude-sonnet-4.5", 1234567890, True)


def test_under_the_persons_key_tokens_are_priced_with_the_table():
    usage = {"model": "gpt-5-mini", "inputTokens": 3000, "cacheReadTokens": 1000}
    usage.update({"outputTokens": 200, "isByok": True, "cost": 0})
    pico = (2000 * 0.25 + 1000 * 0.025 + 200 * 2) * 1e6
    model, picodollars, known = copilot_events._price(usage)
    assert (model, known) == ("gpt-5-mini", True)
    assert picodollars == round(pico)


def test_under_the_persons_key_the_next_request_is_estimated_from_its_tokens():
    """A cached session grows: the next request reads what this one sent from the cache and
    sends this one's output back, so it costs more than this one did (issue 26's ceiling)."""
    from runaway_guard import estimate

    usage = {"model": "gpt-4.1", "inputTokens": 30000, "cacheReadTokens": 27000}
    usage.update({"outputTokens": 3000, "isByok": True, "cost": 0})
    _, picodollars, _ = copilot_events._price(usage)
    state = {}
    estimate.note(state, "main", "r1", picodollars, 3000, copilot_events._ahead(usage, "gpt-4.1"))
    # what this one read from the cache at $0.50, its fresh input and its output sent back at
    # $2, as much output again at $8 per MTok
    expected = 27000 * 0.5 + (3000 + 3000) * 2 + 3000 * 8
    assert estimate.next_cost(state, "main") == round(expected * 1e6)
    assert estimate.next_cost(state, "main") > picodollars
    charged = dict(usage, isByok=False, copilotUsage={"totalNanoAiu": 10**9})
    assert copilot_events._ahead(charged, "gpt-4.1") == estimate.LAST_COST  # GitHub's charge again


# Anthropic's ids as Copilot CLI 1.0.102 records them under the person's Anthropic key
# (COPILOT_PROVIDER_TYPE=anthropic): the model sent to the API, dated or not, as written.
@pytest.mark.parametrize("model", ["claude-sonnet-4-20250514", "claude-sonnet-4-5"])
def test_a_byok_claude_response_is_priced_without_importing_re(model, tmp_path):
    """`re` costs a call as much as the interpreter's start: an id the table lists is priced
    without normalize_model, at Claude's rates ($3 input, $0.30 cache read, $15 output)."""
    hooks, events, _ = fixture("basic")
    text = events.read_text().replace('"gpt-4.1"', json.dumps(model))
    records = [json.loads(line) for line in text.splitlines()]
    session = records[0]["data"]["sessionId"]
    home = tmp_path / "copilot-home"
    target = home / "session-state" / session / "events.jsonl"
    target.parent.mkdir(parents=True)
    target.write_text(text)
    guard = GuardEnv(tmp_path)
    payload = [h["payload"] for h in hooks if h["event"] == "preToolUse"][-1]
    code = (  # the hook's call (hook.main) without its exit, then what it imported
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "from runaway_guard import hook;"
        "hook.respond(sys.stdin.buffer.read);"
        "print(sorted({'re', 'runaway_guard.unlisted_models'} & set(sys.modules)))"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code, str(ROOT / "skill")],
        input=json.dumps(payload).encode(),
        env={**guard.env, "COPILOT_HOME": str(home), "COPILOT_CLI": "1"},
        capture_output=True,
    )
    assert done.stdout.decode().strip() == "[]", done.stderr.decode()[-2000:]
    usages = [r["data"]["usage"] for r in records if r["type"] == "session.usage_record"]
    assert {u["model"] for u in usages} == {model}
    expected = sum(priced(u, {"input": 3, "cached": 0.3, "output": 15}) for u in usages)
    assert state_of(guard, session)["spend"]["total"] / 1e12 == pytest.approx(expected, abs=1e-9)


# ---------------------------------------------------------------------------------------------
# ending a `copilot -p` run


def test_only_a_copilot_prompt_process_is_ever_signalled(monkeypatch):
    table = {
        40: (30, ["/usr/bin/bash", "-c", "python3 guard.py || true"]),
        30: (20, ["/x/copilot-linux-x64/copilot", "-p", "go", "--allow-all-tools"]),
        20: (1, ["node", "/x/.bin/copilot", "-p", "go"]),
        41: (31, ["sh", "-c", "guard"]),
        31: (21, ["/x/copilot", "--resume"]),
        42: (32, ["sh"]),
        32: (1, ["/usr/bin/claude", "-p", "go"]),
    }
    monkeypatch.setattr(_procs, "process", table.get)
    killed, notes = [], []
    monkeypatch.setattr(copilot.fs, "kill", lambda pid, sig: killed.append(pid))
    for hook_parent in (40, 41, 42):
        monkeypatch.setattr(_procs.fs, "getppid", lambda pid=hook_parent: pid)
        copilot.end_run(None, {}, notes.append)
    assert killed == [30]  # not 31 (interactive: the person answers the ask), not claude
    assert notes[0].startswith("interrupting copilot -p (pid 30)")
    assert all(note.startswith("deny only") for note in notes[1:])


def test_end_run_never_raises(monkeypatch):
    monkeypatch.setattr(_procs.fs, "getppid", lambda: 4_000_000)  # no such process
    copilot.end_run(None, {}, lambda note: None)


def test_a_stop_is_saved_before_the_run_is_ended(tmp_path, monkeypatch):
    guard, events = one_session(tmp_path, monkeypatch)
    seen = []

    def end_run(call, environ, note):
        seen.append(state_of(guard, "s1")["blocked"]["kind"])

    monkeypatch.setattr(copilot, "end_run", end_run)
    env = {"RUNAWAY_GUARD_MAX_FAILURES": "1"}
    kinds = []
    for n in (1, 2, 3, 4):  # a failure, then the ladder: deny, ask, stop
        after = complete(f"c{n}", exit_code=1) if n == 1 else denied(f"c{n}")
        answer = through(guard, events, f"c{n}", {"command": f"false {n}"}, after, **env)
        guard_hook.finish()  # as guard.py does once the answer is printed
        kinds.append(answer and answer["permissionDecision"])
    assert kinds == [None, "deny", "ask", "ask"]
    assert seen == [STOP]


# ---------------------------------------------------------------------------------------------
# whatever Copilot writes, the reader neither raises nor counts what is not a response

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=12,
)
_keys = st.sampled_from(
    ["type", "data", "usage", "toolCallId", "hookType", "input", "toolCalls", "error", "code"]
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.sampled_from(
        ["session.usage_record", "hook.start", "tool.execution_complete", "user.message", "x"]
    ),
    data=st.dictionaries(_keys | st.text(max_size=8), _json, max_size=6),
    usage=st.dictionaries(
        st.sampled_from(
            [
                "model",
                "inputTokens",
                "outputTokens",
                "cacheReadTokens",
                "apiCallId",
                "isByok",
                "copilotUsage",
            ]
        ),
        _json,
        max_size=7,
    ),
)
def test_any_events_line_is_read_without_error(tmp_path_factory, kind, data, usage):
    root = tmp_path_factory.mktemp("fuzz")
    if kind == "session.usage_record":
        data = dict(data, usage=usage)
    with ledger.Ledger(str(root), "copilot", "s") as book:
        entry = {"agent": "main"}
        reader = copilot_events._Reader(book, entry, {"pending": {}, "misses": 0})
        book.call("main", "c1", "h")
        reader.line(json.dumps({"type": kind, "data": data}).encode())
        assert book.state["spend"]["total"] >= 0


@settings(max_examples=150, deadline=None)
@given(payload=st.dictionaries(st.text(max_size=12) | _keys, _json, max_size=6))
def test_any_payload_gives_a_call_or_nothing(payload):
    for extra in ({}, {"toolName": "bash", "toolArgs": payload}, {"hook_event_name": "PreToolUse"}):
        found = copilot.call(dict(payload, **extra), {})
        assert found is None or found.host == "copilot"


# ---------------------------------------------------------------------------------------------
# a long read judges lines by their heads and holds hook.starts back: it must end exactly where
# reading every line whole does (pending calls in their order, spend, outcomes, the prompt)

_IDS = ["c1", "c2", "c3", "ç4", 'q"5', "s\\6"]
_call_id = st.sampled_from(_IDS)
_text = st.sampled_from(_IDS) | st.text(alphabet='ab{}[]"\\:,', max_size=5)
_args = st.dictionaries(st.sampled_from(["command", "id"]), _text | _json, max_size=2)


@st.composite
def _events(draw):
    """Events as Copilot writes them (and some it does not): most often a preToolUse's
    hook.start with its event id last, then the completion of one of its calls."""
    kind = draw(st.sampled_from(["call", "call", "hook.start", "complete", "usage", "other"]))
    members = {}
    for name in draw(st.lists(st.sampled_from(["id", "id", "timestamp", "x"]), max_size=2)):
        members[name] = draw(_call_id | _text)
    if kind in ("call", "hook.start"):
        calls = draw(st.lists(st.fixed_dictionaries({"id": _call_id, "args": _args}), max_size=3))
        data = {"hookType": draw(st.sampled_from(["preToolUse", "preToolUse", "postToolUse"]))}
        data["input"] = {"toolCalls": calls}
        if draw(st.booleans()):
            data["parentToolCallId"] = "c3"
        events = [{"type": "hook.start", "data": data, **members}]
        if kind == "call":
            ended = draw(st.sampled_from([c["id"] for c in calls]) if calls else _call_id)
            events.append(_ended(draw, ended))
        return events
    if kind == "complete":
        return [dict(_ended(draw, draw(_call_id)), **members)]
    if kind == "usage":
        usage = {"model": "gpt-4.1", "apiCallId": draw(st.sampled_from(["a1", "a2", "a3"]))}
        usage.update(inputTokens=draw(st.integers(0, 10**6)), isByok=True)
        usage.update(outputTokens=draw(st.integers(0, 10**4)), cacheReadTokens=100)
        return [{"type": "session.usage_record", "data": {"usage": usage}, **members}]
    kind = draw(st.sampled_from(["user.message", "hook.end", "data first", "data first"]))
    if kind == "data first":  # not Copilot's order: read whole
        data = {"toolCallId": draw(_call_id), "hookType": "preToolUse", "input": {}}
        kind = draw(st.sampled_from(["hook.start", "tool.execution_complete"]))
        return [{"data": data, "type": kind}]
    return [{"type": kind, "data": {"interactionId": draw(_call_id)}}]


def _ended(draw, call_id):
    data = {"toolCallId": call_id, "success": draw(st.booleans())}
    data["result"] = {"content": draw(_text)}
    if draw(st.booleans()):
        data["shellExecution"] = {"exitCode": draw(st.integers(0, 2))}
    if draw(st.booleans()):
        data["error"] = {"code": draw(st.sampled_from(["denied", "rejected", "x"]))}
    return {"type": "tool.execution_complete", "data": data}


def _read(events, pending, expecting, whole, cuts=()):
    """pending, spend, agents and prompt after reading the events: each line whole (line()), or
    as tail.read_new hands them, in runs of lines cut at the given lines (lines())."""
    root = Path(tempfile.mkdtemp())
    try:
        with ledger.Ledger(str(root), "copilot", "s") as book:
            mine = {"pending": {call_id: ["main", "h0", []] for call_id in pending}, "misses": 0}
            entry = {"agent": "main"}
            reader = copilot_events._Reader(book, entry, mine)
            if expecting:
                book.call("main", "c1", "h1")
            if whole:
                for line in events:
                    reader.line(line)
            else:
                edges = sorted({0, len(events), *(cut % (len(events) + 1) for cut in cuts)})
                for start, stop in zip(edges, edges[1:]):
                    data = bytearray(b"".join(line + b"\n" for line in events[start:stop]))
                    reader.lines(data, 0, len(data))
            reader.flush()
            state = book.state
            return list(mine["pending"].items()), state["spend"], state["agents"], entry
    finally:
        shutil.rmtree(root)


_CALL = {"hookType": "preToolUse", "input": {"toolCalls": [{"id": "c1", "args": {}}]}}
_HOOK_START = {"type": "hook.start", "data": _CALL}
_ENDED = {"type": "tool.execution_complete", "data": {"toolCallId": "c1", "success": True}}
_ENDED_DATA_FIRST = {"data": _ENDED["data"], "type": _ENDED["type"]}


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# the call added to full pending calls pushes the oldest out even though it ends at once
@example(events=[[_HOOK_START, _ENDED]], spaced=False, pending=128, expecting=False, cuts=[])
# a completion read whole comes after the hook.start held back
@example(
    events=[[_HOOK_START], [_ENDED_DATA_FIRST]], spaced=False, pending=0, expecting=False, cuts=[]
)
@given(
    events=st.lists(_events(), max_size=8),
    spaced=st.booleans(),
    pending=st.sampled_from([0, 1, copilot_events.PENDING_KEEP - 1, copilot_events.PENDING_KEEP]),
    expecting=st.booleans(),
    cuts=st.lists(st.integers(0, 20), max_size=3),
)
def test_reading_by_heads_ends_where_reading_every_line_does(
    events, spaced, pending, expecting, cuts
):
    separators = (", ", ": ") if spaced else (",", ":")
    records = [record for group in events for record in group]
    lines = [json.dumps(r, separators=separators, ensure_ascii=spaced).encode() for r in records]
    before = [f"old{n}" for n in range(pending)]
    whole = _read(lines, before, expecting, whole=True)
    assert _read(lines, before, expecting, whole=False, cuts=cuts) == whole


def test_a_hook_start_is_dropped_only_when_its_one_call_ends():
    """The cases the byte test decides: the event's own id after the call, an "id" in the
    arguments, an escape, a second call, a `}` after the event's id."""
    lists_only = copilot_events._lists_only
    own = b'{"type":"hook.start","data":{"input":{"toolCalls":[{"id":"c1","args":{}}]}},'
    assert lists_only(own + b'"id":"e1","timestamp":"t","x":[1]}', b"c1")
    assert lists_only(own[:-1] + b"}", b"c1")
    assert not lists_only(own + b'"id":"e1","timestamp":"t"}', b"c2")
    assert not lists_only(own + b'"id":"e1","x":"}"}', b"c1")
    assert not lists_only(own + b'"id":"e1","x":"a\\"b"}', b"c1")
    two = b'{"type":"hook.start","data":{"input":{"toolCalls":[{"id":"c1"},{"id":"c2"}]}}'
    assert not lists_only(two + b"}", b"c1") and not lists_only(two + b"}", b"c2")
    assert not lists_only(two + b',"id":"e1"}', b"c1")
    args = b'{"type":"hook.start","data":{"input":{"toolCalls":[{"id":"c1","args":{"id":"c2"}}]}}}'
    assert not lists_only(args, b"c1")
    last = b'{"type":"hook.start","data":{"input":{"toolCalls":[{"id":"c2"}]}},"id":"c1"}'
    assert not lists_only(last, b"c1")


def test_fixtures_are_small():
    total = sum(p.stat().st_size for p in FIXTURES.rglob("*") if p.is_file())
    assert total < 400_000
    assert (FIXTURES / "README.md").exists() and Path(FIXTURES / "record.py").exists()


def test_a_second_install_repeats_a_refusal_but_not_a_note(tmp_path, monkeypatch):
    """Copilot runs the guard from its hook file, then from the Claude settings, for one call."""
    guard, events = one_session(tmp_path, monkeypatch)
    args = {"command": "false"}
    camel = {"sessionId": "s1", "toolName": "bash", "toolArgs": args}
    pascal = {"hook_event_name": "PreToolUse", "session_id": "s1", "tool_name": "Bash"}
    pascal.update(tool_input=args, timestamp="2026-12-01T00:00:00.000Z")
    pairs = []
    for n in range(1, 5):
        write_events(events, [hook_start([(f"c{n}", "bash", args)])])
        first = guard.answer(camel, RUNAWAY_GUARD_MAX_FAILURES="2")
        second = guard.answer(pascal, RUNAWAY_GUARD_MAX_FAILURES="2")
        pairs.append((first and next(iter(first)), second and next(iter(second))))
        write_events(events, [complete(f"c{n}", exit_code=1)])
    assert pairs == [
        (None, None),
        ("additionalContext", None),  # the note once, not twice
        ("permissionDecision", "permissionDecision"),
        ("permissionDecision", "permissionDecision"),
    ]
    assert state_of(guard, "s1")["agents"]["main"]["fails"] == 2  # the refused calls never ran


# ---------------------------------------------------------------------------------------------
# the installer, with Copilot's INSTALL data


def installer(home, *args):
    return subprocess.run(
        [sys.executable, str(ROOT / "installer" / "install.py"), "--host", "copilot", *args],
        env={"HOME": str(home), "PATH": os.environ.get("PATH", "")},
        cwd=str(home),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_installer_writes_removes_and_checks_a_hook_file_of_its_own(tmp_path):
    home, project = tmp_path / "home", tmp_path / "proj"
    home.mkdir()
    project.mkdir()
    assert installer(home).returncode == 0
    path = home / ".copilot" / "hooks" / "runaway-guard.json"
    (handler,) = json.loads(path.read_text())["hooks"]["preToolUse"]
    assert handler["type"] == "command" and handler["timeoutSec"] == 30
    assert handler["bash"].endswith("/.copilot/skills/runaway-guard/skill/guard.py' || true")
    before = path.stat().st_mtime_ns
    assert installer(home).returncode == 0 and path.stat().st_mtime_ns == before  # idempotent
    assert installer(home, "--check").returncode == 0
    local = installer(home, "--scope", "project", "--project", str(project))
    assert local.returncode == 0, local.stderr
    assert (project / ".github" / "hooks" / "runaway-guard.json").is_file()
    assert (project / ".github" / "skills" / "runaway-guard" / "skill" / "guard.py").is_file()
    assert installer(home, "--uninstall").returncode == 0
    assert not path.exists() and not (home / ".copilot" / "skills" / "runaway-guard").exists()
    assert installer(home, "--check").returncode == 1


def test_the_installer_leaves_a_hook_file_that_is_not_its_own(tmp_path):
    home = tmp_path / "home"
    path = home / ".copilot" / "hooks" / "runaway-guard.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"version": 1, "hooks": {}}\n')
    result = installer(home)
    assert result.returncode == 2
    assert path.read_text() == '{"version": 1, "hooks": {}}\n'
