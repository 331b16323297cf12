"""Every transcript shape the readers must know: old subagent layouts, token_count fallbacks."""

import json
import os
import shutil
import tempfile

from claude_records import assistant, usage
from guard_env import jsonl
from hypothesis import given
from hypothesis import strategies as st
from runaway_guard import fs, jsonio, ledger, openai_prices
from runaway_guard.hosts import claude
from runaway_guard.hosts.claude.transcript import _COUNTED, _Reader
from runaway_guard.hosts.codex import rollout
from test_jsonio import record_values, tricky_text
from test_ledger import CODEX_EXPECTED, FakeCall, codex_session, sync_once

OPUS_ROW = (3 * 5 + 10 * 25) * 10**6  # usage() priced at claude-opus-4-8, in picodollars


def test_sidechain_records_in_the_main_file_are_their_agents_spend(tmp_path):
    """Claude Code up to 2.0.27 wrote subagents into the main file with isSidechain."""
    main = jsonl(
        tmp_path / "s1.jsonl",
        [
            assistant("m1", model="claude-opus-4-8", version="2.0.20"),
            assistant("m2", model="claude-opus-4-8", isSidechain=True, agentId="ag1"),
            assistant("m3", model="claude-opus-4-8", isSidechain=True, agentId="ag1"),
        ],
    )
    spend = sync_once(tmp_path / "state", "claude", FakeCall("claude", "s1", main))
    assert spend["agent"] == {"main": OPUS_ROW, "ag1": 2 * OPUS_ROW}


def test_sibling_agent_files_of_older_versions_belong_by_session_id(tmp_path):
    """2.0.28 to 2.1.1 wrote agent-<id>.jsonl beside the session file, for every session."""
    main = jsonl(tmp_path / "s1.jsonl", [assistant("m1", model="claude-opus-4-8", version="2.1.0")])
    jsonl(tmp_path / "agent-a1.jsonl", [assistant("a1", model="claude-opus-4-8", sessionId="s1")])
    other = assistant("x1", model="claude-opus-4-8", sessionId="another-session")
    jsonl(tmp_path / "agent-b2.jsonl", [other])
    spend = sync_once(tmp_path / "state", "claude", FakeCall("claude", "s1", main))
    assert spend["agent"] == {"main": OPUS_ROW, "a1": OPUS_ROW}


def test_a_quiet_folder_of_sibling_agent_files_is_not_listed_again(tmp_path, monkeypatch):
    """The older layout's agent files are looked for when the transcript's folder changed: a call
    on an unchanged folder lists nothing, and a dormant agent file there stays asleep; a new
    agent file is still found, and the dormant one still counted."""
    project = tmp_path / "project"
    main = jsonl(project / "s1.jsonl", [assistant("m1", model="claude-opus-4-8", version="2.1.0")])
    jsonl(project / "agent-a1.jsonl", [assistant("a1", model="claude-opus-4-8", sessionId="s1")])
    for path in (main, project / "agent-a1.jsonl", project):
        os.utime(path, (1_000_000_000, 1_000_000_000))
    call = FakeCall("claude", "s1", main)
    sync_once(tmp_path / "state", "claude", call)
    listed = []
    real_listdir = fs.listdir
    monkeypatch.setattr(fs, "listdir", lambda path: listed.append(path) or real_listdir(path))
    with ledger.Ledger(str(tmp_path / "state"), "claude", "s1") as book:
        claude.sync(book, call)
        assert listed == [] and list(book.state["files"]) == [str(main)]  # a1's is dormant
    jsonl(project / "agent-a2.jsonl", [assistant("a2", model="claude-opus-4-8", sessionId="s1")])
    spend = sync_once(tmp_path / "state", "claude", call)
    assert listed == [str(project)]
    assert spend["agent"] == {"main": OPUS_ROW, "a1": OPUS_ROW, "a2": OPUS_ROW}


def test_sibling_files_are_not_looked_for_once_the_version_is_new(tmp_path):
    main = jsonl(tmp_path / "s1.jsonl", [assistant("m1", model="claude-opus-4-8")])
    call = FakeCall("claude", "s1", main)
    sync_once(tmp_path / "state", "claude", call)  # reads version 2.1.328
    jsonl(tmp_path / "agent-a1.jsonl", [assistant("a1", model="claude-opus-4-8", sessionId="s1")])
    spend = sync_once(tmp_path / "state", "claude", call)
    assert spend["agent"] == {"main": OPUS_ROW}


def test_synthetic_and_api_error_rows_are_not_priced(tmp_path):
    main = jsonl(
        tmp_path / "s1.jsonl",
        [
            assistant("m1", model="<synthetic>", use=usage(inp=10**6)),
            assistant("m2", model="claude-opus-4-8", isApiErrorMessage=True, use=usage(inp=10**6)),
            assistant("m3", model="claude-opus-4-8"),
        ],
    )
    spend = sync_once(tmp_path / "state", "claude", FakeCall("claude", "s1", main))
    assert spend["total"] == OPUS_ROW


def test_codex_token_count_fallback_without_usage_records(tmp_path):
    """Builds before ~0.151 wrote only cumulative token_count events, re-emitted unchanged too."""
    rollouts, inputs = codex_session("usage", tmp_path / "codex")
    (rollout,) = rollouts
    lines = rollout.read_text().splitlines(keepends=True)
    kept = []
    for line in lines:
        record = json.loads(line)
        if record.get("type") == "token_usage_record":
            continue
        kept.append(line)
        if record.get("payload", {}).get("type") == "token_count":
            kept.append(line)  # a re-emit with unchanged totals must not count twice
    assert len(kept) < len(lines) + 12
    rollout.write_text("".join(kept))
    call = FakeCall("codex", inputs[0]["session_id"], rollout)
    spend = sync_once(tmp_path / "state", "codex", call)
    assert spend["total"] == round(CODEX_EXPECTED["usage"] * 1e12)
    assert set(spend["model"]) == {"gpt-5.5", "gpt-5.1-codex-max"}


def test_codex_model_carried_from_one_read_to_the_next(tmp_path):
    rollouts, inputs = codex_session("usage", tmp_path / "codex")
    (rollout,) = rollouts
    data = rollout.read_bytes()
    cut = data.index(b'"token_usage_record"')
    cut = data.rindex(b"\n", 0, cut) + 1  # the first usage record starts a later read
    rollout.write_bytes(data[:cut])
    call = FakeCall("codex", inputs[0]["session_id"], rollout)
    assert sync_once(tmp_path / "state", "codex", call)["total"] == 0
    rollout.write_bytes(data)
    spend = sync_once(tmp_path / "state", "codex", call)
    assert "gpt-unknown" not in spend["model"]
    assert spend["total"] == round(CODEX_EXPECTED["usage"] * 1e12)


def test_codex_outcomes_old_and_new():
    from runaway_guard.hosts.codex.rollout import outcome

    new_fail = "Chunk ID: 1\nWall time: 0.2 seconds\nProcess exited with code 2\nOutput:\nno"
    new_fail_again = "Chunk ID: 9\nWall time: 0.7 seconds\nProcess exited with code 2\nOutput:\nno"
    assert outcome(new_fail)[0] == "fail"
    assert outcome(new_fail) == outcome(new_fail_again)  # per-run headers do not count
    assert outcome("Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess.")[0] == "ok"
    old = '{"output":"ls: cannot access","metadata":{"exit_code":2,"duration_seconds":0.1}}'
    assert outcome(old)[0] == "fail"
    old_ok = '{"output":"a\\nb","metadata":{"exit_code":0,"duration_seconds":0.3}}'
    assert outcome(old_ok)[0] == "ok"
    assert outcome('{"output": not json')[0] == "ok"
    assert outcome("unsupported call: no_such_tool")[0] == "fail"
    assert (
        outcome("Command blocked by PreToolUse hook: runaway-guard: stop. Command: x")[0] == "guard"
    )
    assert outcome("Command blocked by PreToolUse hook: other guard. Command: x")[0] == "fail"


def test_claude_guard_refusals_as_claude_code_records_them(tmp_path, guard_env):
    """Only the guard's own refusals are left out of a failure run; an output that merely
    mentions the guard is an ordinary failure."""
    from claude_records import pre_tool_use, result

    transcript = tmp_path / "p" / "s1.jsonl"
    texts = {
        "t0": "PreToolUse:Bash hook error: runaway-guard: 5 tool calls in a row have failed.",
        "t1": "runaway-guard: this agent's last 5 tool calls failed in a row (limit 5).",
        "t2": "Exit code 1\nFAILED tests/test_guard.py - assert 'runaway-guard: x' in out",
    }
    for tool_use_id, text in texts.items():
        command = {"command": f"run {tool_use_id}"}
        jsonl(transcript, [assistant(f"m{tool_use_id}", tool=(tool_use_id, "Bash", command))])
        guard_env.run(pre_tool_use(transcript, tool_use_id, "Bash", command))
        jsonl(transcript, [result(tool_use_id, text, error=True)])
    guard_env.run(pre_tool_use(transcript, "t3", "Bash", {"command": "ls"}))
    with ledger.Ledger(str(guard_env.state_dir), "claude", "s1") as book:
        assert book.state["agents"]["main"]["fails"] == 1


def test_codex_subagent_rollout_in_the_next_days_folder(tmp_path):
    """A subagent spawned after midnight writes its rollout into the new day's folder."""
    import time

    sessions = tmp_path / "sessions"
    main = sessions / "2026" / "01" / "01" / "rollout-2026-01-01T23-59-00-root.jsonl"
    today = sessions.joinpath(*time.strftime("%Y/%m/%d").split("/"))
    child = today / f"rollout-{time.strftime('%Y-%m-%dT00-00-05')}-child.jsonl"
    record = {"type": "token_usage_record", "payload": {"response_id": "r1"}}
    usage_line = {"input_tokens": 1000, "cached_input_tokens": 0, "output_tokens": 0}
    for path, thread in ((main, "root"), (child, "child")):
        jsonl(
            path,
            [
                {"type": "session_meta", "payload": {"id": thread, "session_id": "root"}},
                {"type": "turn_context", "payload": {"model": "gpt-5.5"}},
                {
                    **record,
                    "payload": {**record["payload"], "thread_id": thread, "usage": usage_line},
                },
            ],
        )
    spend = sync_once(tmp_path / "state", "codex", FakeCall("codex", "root", main))
    assert spend["agent"] == {"main": 5 * 10**9, "child": 5 * 10**9}


def test_subagent_folders_listed_again_only_when_they_change(tmp_path, monkeypatch):
    """A quiet subagents folder costs a stat, not a listing; a new agent file is still found,
    in the folder or deeper."""
    main = jsonl(tmp_path / "s1.jsonl", [assistant("m1", model="claude-opus-4-8")])
    subagents = tmp_path / "s1" / "subagents"
    jsonl(subagents / "agent-a1.jsonl", [assistant("a1", model="claude-opus-4-8")])
    jsonl(subagents / "workflows" / "agent-a2.jsonl", [assistant("a2", model="claude-opus-4-8")])
    old = 1_700_000_000
    for folder in (subagents, subagents / "workflows"):
        os.utime(folder, (old, old))
    call = FakeCall("claude", "s1", main)
    assert set(sync_once(tmp_path / "state", "claude", call)["agent"]) == {"main", "a1", "a2"}
    listed = []
    real_scandir = fs.scandir
    monkeypatch.setattr(fs, "scandir", lambda path: listed.append(path) or real_scandir(path))
    sync_once(tmp_path / "state", "claude", call)
    assert listed == []  # both folders unchanged: nothing listed
    jsonl(subagents / "workflows" / "agent-a3.jsonl", [assistant("a3", model="claude-opus-4-8")])
    jsonl(subagents / "agent-a4.jsonl", [assistant("a4", model="claude-opus-4-8")])
    spend = sync_once(tmp_path / "state", "claude", call)
    assert set(spend["agent"]) == {"main", "a1", "a2", "a3", "a4"}
    assert spend["agent"]["a4"] == OPUS_ROW


# Heads as the hosts write them, and near misses: the types they name, tricky text in their place
# and before them, other members first, the type under another key, escapes, spaces.
kinds = st.sampled_from(
    ["response_item", "event_msg", "session_meta", "user", "assistant", "system", "attachment"]
)
inner_kinds = st.sampled_from(
    [
        "reasoning",
        "function_call_output",
        "custom_tool_call_output",
        "token_count",
        "item_completed",
        "thread_settings_applied",
        "message",
    ]
)
heads = st.lists(
    st.tuples(
        st.sampled_from(["timestamp", "ordinal", "parentUuid", "ty\\pe", "x"]), record_values
    ),
    max_size=3,
)


@st.composite
def host_lines(draw):
    record = dict(draw(heads))
    record[draw(st.sampled_from(["type", "type", "Type"]))] = draw(kinds | tricky_text)
    payload = {"type": draw(inner_kinds | tricky_text)}
    payload.update(draw(st.dictionaries(st.sampled_from(["a", "type"]), record_values, max_size=2)))
    record[draw(st.sampled_from(["payload", "payload", "message"]))] = payload
    record["rest"] = "x" * draw(st.integers(900, 1200))
    separators = draw(st.sampled_from([(",", ":"), (", ", ": ")]))
    return json.dumps(record, separators=separators, ensure_ascii=draw(st.booleans())).encode()


class Waiting:
    def __init__(self, expecting):
        self.expecting = lambda: expecting


def head_types_decision(host, data, start, end, expecting):
    """What the readers decided from jsonio.head_types alone, before reading heads by shape."""
    if end - start <= 1024:
        return False
    if host == "codex":
        kind, inner = jsonio.head_types(data, start, end, "payload")
        if kind == "response_item":
            return not expecting or (inner is not None and inner not in rollout._OUTPUTS)
        return kind == "event_msg" and inner is not None and inner not in rollout._EVENTS
    kind = jsonio.head_types(data, start, end)[0]
    return kind is not None and (
        kind not in _COUNTED
        or (kind == "user" and not expecting)
        or (kind == "system" and data.find(b'"compact_boundary"', start, end) < 0)
    )


@given(host_lines(), st.booleans())
def test_heads_read_by_shape_pass_over_what_head_types_would(line, expecting):
    data = bytearray(b"junk\n" + line + b"\nmore")
    end = 5 + len(line)
    readers = {
        "codex": rollout._Reader(Waiting(expecting), {"agent": "main"}, "root"),
        "claude": _Reader(Waiting(expecting), {"agent": "main", "ver": "2.1.328"}),
    }
    for host, reader in readers.items():
        passed = reader._passed_over(data, 5, end)
        assert passed == head_types_decision(host, data, 5, end, expecting), host


def test_codex_rollout_made_in_the_same_clock_tick_as_the_listing_is_found(tmp_path):
    """A folder's time moves in clock ticks: a rollout created right after the folder was
    listed can leave its time as it was. Such a time is not trusted until it is a second old."""
    folder = tmp_path / "sessions" / "2026" / "01" / "01"
    main = folder / "rollout-2026-01-01T10-00-00-root.jsonl"
    child = folder / "rollout-2026-01-01T10-00-05-child.jsonl"
    record = {"type": "token_usage_record", "payload": {"response_id": "r1"}}
    usage_line = {"input_tokens": 1000, "cached_input_tokens": 0, "output_tokens": 0}

    def rollout(path, thread):
        jsonl(
            path,
            [
                {"type": "session_meta", "payload": {"id": thread, "session_id": "root"}},
                {"type": "turn_context", "payload": {"model": "gpt-5.5"}},
                {
                    **record,
                    "payload": {**record["payload"], "thread_id": thread, "usage": usage_line},
                },
            ],
        )

    rollout(main, "root")
    call = FakeCall("codex", "root", main)
    assert set(sync_once(tmp_path / "state", "codex", call)["agent"]) == {"main"}
    listed = os.stat(folder).st_mtime_ns
    rollout(child, "child")
    os.utime(folder, ns=(listed, listed))  # created within the listing's clock tick
    assert sync_once(tmp_path / "state", "codex", call)["agent"] == {
        "main": 5 * 10**9,
        "child": 5 * 10**9,
    }


# A usage record is priced from its counts as Codex wrote them, by a pricer made once per model
# and tier: the same as counting them first (_usage, as a token_count's are) and pricing that.
_counts = (
    st.none()
    | st.booleans()
    | st.integers(-5, 300_000)
    | st.floats(-5, 300_000)
    | st.sampled_from([float("nan"), float("inf"), "12"])
)
_usages = (
    st.dictionaries(st.sampled_from(rollout._USAGE_FIELDS), _counts) | st.none() | st.just([1])
)


def _priced_as_counted(model, tier, raw):
    """The entry reading every count first (_usage) and pricing them with the table gives."""
    counted = rollout._usage(raw)
    inp = counted["input_tokens"]
    cached = min(counted["cached_input_tokens"], inp)
    written = min(counted["cache_write_input_tokens"], inp - cached)
    picodollars, _ = openai_prices.openai_pricer(model, tier)(
        inp, cached, written, counted["output_tokens"]
    )
    return picodollars, counted["output_tokens"], model


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["gpt-5.5", "gpt-5.4", "gpt-9-new"]),
            st.sampled_from(["default", "priority", "flex"]),
            _usages,
        ),
        min_size=1,
        max_size=6,
    )
)
def test_codex_usage_records_are_priced_as_their_counts(turns):
    lines, expected = [], []
    for n, (model, tier, raw) in enumerate(turns):
        settings = {"model": model, "service_tier": tier}
        lines.append({"type": "turn_context", "payload": settings})
        payload = {"thread_id": "t", "response_id": f"r{n}", "usage": raw}
        lines.append(
            {"timestamp": "2026-11-30T10:00:00Z", "type": "token_usage_record", "payload": payload}
        )
        expected.append(_priced_as_counted(model, tier, raw))
    data = bytearray(b"".join(json.dumps(line).encode() + b"\n" for line in lines))
    root = tempfile.mkdtemp()
    try:
        with ledger.Ledger(root, "codex", "s") as book:
            rollout._Reader(book, {"agent": "main"}, "t").lines(data, 0, len(data))
            recent = book.state["recent"]
            booked = [tuple(recent[f"t:r{n}"][1:4]) for n in range(len(turns))]
    finally:
        shutil.rmtree(root)
    assert booked == expected
