"""OpenCode: the plugin's payloads, the answers, and the reader of OpenCode's SQLite database,
on the sessions recorded from OpenCode 1.18.33 (tests/fixtures/opencode/)."""

import itertools
import json
import os
import sqlite3
import subprocess
import sys

import pytest
from guard_env import ROOT, SKILL, GuardEnv
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from runaway_guard import hosts, state_file
from runaway_guard.calls import MODEL, TOOL
from runaway_guard.decisions import DENY, STOP, TELL
from runaway_guard.hosts import opencode

FIXTURES = ROOT / "tests" / "fixtures" / "opencode"
SCHEMA = FIXTURES / "schema.sql"  # OpenCode 1.18.33's session, message and part tables
PICO = 10**12
NO_LIMITS = {"RUNAWAY_GUARD_MAX_FAILURES": "99", "RUNAWAY_GUARD_MAX_REPEATS": "99"}


def fixture(name, tmp_path):
    """(database path, the plugin's payloads pointing at it, expected.json) of one recording."""
    folder = FIXTURES / name
    db = tmp_path / f"{name}.db"
    with sqlite3.connect(db) as conn:
        conn.executescript(SCHEMA.read_text() + (folder / "opencode.sql").read_text())
    payloads = []
    for line in (folder / "hook_inputs.jsonl").read_text().splitlines():
        payload = json.loads(line)
        payload["database"] = str(db)
        payloads.append(payload)
    return db, payloads, json.loads((folder / "expected.json").read_text())


def state_of(guard_env, session_id):
    _, base = state_file.session_paths(str(guard_env.state_dir), "opencode", session_id)
    return state_file.read_state(base + state_file.STATE)


def replay(guard_env, payloads, **env):
    return [guard_env.run(payload, **{**NO_LIMITS, **env}) for payload in payloads]


def stored_pico(db, session_ids):
    marks = ",".join("?" * len(session_ids))
    with sqlite3.connect(db) as conn:
        rows = conn.execute(f"SELECT data FROM message WHERE session_id IN ({marks})", session_ids)
        costs = [json.loads(data).get("cost") or 0 for (data,) in rows]
    return sum(round(cost * PICO) for cost in costs)


# ---------------------------------------------------------------------------------------------
# payloads and answers


@pytest.mark.parametrize("name", ["failures", "subagent", "unpriced", "stopped"])
def test_recorded_payloads_are_opencodes_and_become_calls(name, tmp_path):
    _, payloads, expected = fixture(name, tmp_path)
    for payload in payloads:
        assert hosts.detect(payload, {}) == "opencode"
        call = opencode.call(payload)
        assert call.session_id == expected["session_id"]
        assert call.event == (MODEL if payload["hook_event_name"] == "chat.params" else TOOL)
        assert call.transcript_path == payload["database"]
        if payload["agent_session_id"] == payload["session_id"]:
            assert (call.agent, call.prompt_id) == ("main", payload["prompt_id"])
        else:  # a subagent's child session: its own agent, and no prompt of the person's
            assert (call.agent, call.prompt_id) == (payload["agent_session_id"], None)


def test_tool_names_and_fields():
    payload = {
        "runaway_guard_plugin": "opencode",
        "hook_event_name": "tool.execute.before",
        "session_id": "ses_root",
        "agent_session_id": "ses_child",
        "call_id": "call_1",
        "tool_name": "task",
        "tool_input": {"prompt": "go"},
        "cwd": "/p",
    }
    call = opencode.call(payload)
    assert (call.tool, call.tool_use_id, call.agent, call.cwd) == (
        "Agent",
        "call_1",
        "ses_child",
        "/p",
    )
    assert (
        opencode.call(dict(payload, tool_name="bash", tool_input={"command": "ls"})).command == "ls"
    )
    assert opencode.call(dict(payload, hook_event_name="tool.execute.after")) is None
    assert opencode.call(dict(payload, runaway_guard_plugin="other")) is None
    odd = opencode.call(dict(payload, session_id=7, agent_session_id=["x"], call_id={}))
    assert (odd.session_id, odd.agent, odd.tool_use_id) == (None, "main", None)


def test_answers_the_plugin_obeys():
    assert opencode.render(None) == ""
    assert opencode.render({"kind": TELL, "wire": "loop", "model_text": ""}) == ""
    tell = {"kind": TELL, "wire": "loop", "model_text": "runaway-guard: careful"}
    assert json.loads(opencode.render(tell)) == {"decision": "tell", "reason": tell["model_text"]}
    deny = {"kind": DENY, "wire": "failure", "model_text": "runaway-guard: no", "person_text": "p"}
    assert json.loads(opencode.render(deny)) == {"decision": "deny", "reason": "runaway-guard: no"}
    stop = dict(deny, kind=STOP, person_text="runaway-guard stopped the agent")
    assert json.loads(opencode.render(stop)) == {
        "decision": "stop",
        "reason": "runaway-guard: no",
        "message": "runaway-guard stopped the agent",
    }


# ---------------------------------------------------------------------------------------------
# spend


@pytest.mark.parametrize("name", ["failures", "subagent", "stopped"])
def test_spend_is_opencodes_stored_cost_over_the_session_tree(name, tmp_path, guard_env):
    db, payloads, expected = fixture(name, tmp_path)
    replay(guard_env, payloads)
    state = state_of(guard_env, expected["session_id"])
    spend = state["spend"]
    tree = list(expected["sessions"])
    assert spend["total"] == stored_pico(db, tree)
    assert abs(spend["total"] / PICO - expected["stored_cost_usd"]) < 1e-6
    for session_id, stored in expected["sessions"].items():
        agent = "main" if stored["parent_id"] is None else session_id
        assert spend["agent"].get(agent, 0) == round(stored["cost"] * PICO)
    assert spend["model"] == {"mock/mock-model": spend["total"]}
    assert state["unpriced"] == []
    # the title request is billed but never stored: the guard follows what OpenCode stored
    title = expected["title_cost_usd"]
    assert title > 0
    assert abs(expected["served_cost_usd"] - title - spend["total"] / PICO) < 1e-9


def test_a_model_opencode_cannot_price_is_priced_from_its_tokens(tmp_path, guard_env):
    _, payloads, expected = fixture("unpriced", tmp_path)
    assert expected["stored_cost_usd"] == 0
    replay(guard_env, payloads)
    state = state_of(guard_env, expected["session_id"])
    assert state["unpriced"] == ["mock/scripted-unpriced"]
    assert state["spend"]["total"] > 0  # never zero: the dearest OpenAI rates
    assert state["spend"]["model"] == {"mock/scripted-unpriced": state["spend"]["total"]}


def step(message_id, provider, model, cost, fresh, out, read=0, write=0, reasoning=0, done=True):
    """An assistant message: one model step, finished unless ``done`` is False."""
    tokens = {
        "input": fresh,
        "output": out,
        "reasoning": reasoning,
        "cache": {"read": read, "write": write},
    }
    data = {"role": "assistant", "cost": cost, "tokens": tokens, "modelID": model}
    data["providerID"] = provider
    data["time"] = {"created": 1796153274877}
    if done:
        data["time"]["completed"] = 1796153275377
    return message_id, data


def make_db(path, root="ses_root", children=()):
    with sqlite3.connect(path) as conn:
        conn.executescript(SCHEMA.read_text())
        for session, parent in [(root, None), *children]:
            conn.execute(
                "INSERT INTO session (id, project_id, parent_id, slug, directory, title, version,"
                " time_created, time_updated) VALUES (?, 'global', ?, 's', '/p', 't', '1.18.33',"
                " 1, 1)",
                (session, parent),
            )
    return path


def put_message(db, session, message_id, data, created, updated=None):
    put(db, "message", message_id, session, created, updated, data)


def put_part(db, session, part_id, data, created, updated=None):
    """A tool call's part, in its step's assistant message (made when missing, still open)."""
    step = {"role": "assistant", "time": {"created": created}}
    put(db, "message", f"msg_{part_id}", session, created, None, step, replace=False)
    put(db, "part", part_id, session, created, updated, data, message_id=f"msg_{part_id}")


def put(db, table, row_id, session, created, updated, data, replace=True, **extra):
    """Insert (or rewrite) one row as OpenCode writes it: ``data`` JSON, ``time_created`` kept
    from the first write, ``time_updated`` at each."""
    row = {"id": row_id, "session_id": session, "time_created": created}
    row.update(extra, time_updated=updated or created, data=json.dumps(data))
    columns = ", ".join(row)
    marks = ", ".join("?" * len(row))
    change = "time_updated = excluded.time_updated, data = excluded.data" if replace else ""
    conflict = f"DO UPDATE SET {change}" if change else "DO NOTHING"
    with sqlite3.connect(db) as conn:
        conn.execute(
            f"INSERT INTO {table} ({columns}) VALUES ({marks}) ON CONFLICT (id) {conflict}",
            list(row.values()),
        )


def model_call(db, session="ses_root", agent=None):
    return {
        "runaway_guard_plugin": "opencode",
        "hook_event_name": "chat.params",
        "session_id": "ses_root",
        "agent_session_id": agent or session,
        "database": str(db),
        "cwd": "/p",
    }


def test_a_call_reads_the_database_without_functools_or_collections(tmp_path, guard_env):
    """_sqlite3 imports functools (and collections, 5 ms a call) for its statement cache only:
    a call loads it without them (opencode._sqlite) and reads the same cost."""
    db = make_db(tmp_path / "u.db")
    put_message(db, "ses_root", *step("m1", "mock", "x", 0.25, 10, 1), 1000)
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "from runaway_guard import hook;"
        "hook.run(sys.stdin.buffer.read(), {'RUNAWAY_GUARD_STATE_DIR': sys.argv[2], 'HOME': '/'});"
        "print(sorted({'_sqlite3', 'sqlite3', 'functools', 'collections'} & set(sys.modules)))"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code, str(SKILL), str(guard_env.state_dir)],
        input=json.dumps(model_call(db)).encode(),
        capture_output=True,
        check=True,
    )
    assert done.stdout.decode().strip() == "['_sqlite3']"
    assert state_of(guard_env, "ses_root")["spend"]["total"] == round(0.25 * 10**12)


def test_zero_cost_steps_are_priced_by_the_table_as_openai_or_claude(tmp_path, guard_env):
    db = make_db(tmp_path / "o.db")
    # gpt-5.5: $5 input, $0.50 cached, $30 output (reasoning included); OpenCode's input excludes
    # the cached part and its output excludes reasoning
    put_message(
        db, "ses_root", *step("m1", "openai", "gpt-5.5", 0, 800, 40, read=200, reasoning=10), 10
    )
    # claude-sonnet-4-6: $3 input, $0.30 read, $3.75 write (5 min), $15 output
    put_message(
        db, "ses_root", *step("m2", "anthropic", "claude-sonnet-4-6", 0, 100, 20, 1000, 400), 11
    )
    put_message(db, "ses_root", *step("m3", "opencode", "big-pickle", 0, 5000, 500), 12)  # free
    put_message(db, "ses_root", *step("m4", "mock", "gpt-5.5", 0.5, 1, 1), 13)  # OpenCode's own
    guard_env.run(model_call(db))
    spend = state_of(guard_env, "ses_root")["spend"]
    gpt = (800 * 5 + 200 * 0.5 + 50 * 30) * 10**6
    claude = (100 * 3 + 1000 * 0.3 + 400 * 3.75 + 20 * 15) * 10**6
    assert spend["model"] == {
        "openai/gpt-5.5": round(gpt),
        "anthropic/claude-sonnet-4-6": round(claude),
        "mock/gpt-5.5": PICO // 2,
    }
    assert state_of(guard_env, "ses_root")["unpriced"] == []


def test_a_reached_cap_stops_the_next_model_request_and_says_why(tmp_path, guard_env):
    db = make_db(tmp_path / "c.db")
    put_message(db, "ses_root", *step("m1", "mock", "x", 0.3, 10, 1), 10)
    assert guard_env.run(model_call(db), RUNAWAY_GUARD_MAX_USD="0.7") == ""
    put_message(db, "ses_root", *step("m2", "mock", "x", 0.3, 10, 1), 20)
    # OpenCode prices its steps: the next is estimated at the last one's $0.30
    answer = json.loads(guard_env.run(model_call(db), RUNAWAY_GUARD_MAX_USD="0.7"))
    assert answer["decision"] == "stop"
    assert answer["message"].startswith(
        "runaway-guard stopped the agent: the next response would cross the session spend cap: "
        "$0.60 spent, about $0.30 next, cap $0.70."
    )
    assert state_of(guard_env, "ses_root")["blocked"]["wire"] == "session"


def test_the_step_opencode_writes_before_its_request_keeps_the_estimate(tmp_path, guard_env):
    """chat.params runs after OpenCode stored the new step (cost 0, no tokens): the request is
    still estimated at the last priced step's cost, so it is stopped before it crosses the cap."""
    db = make_db(tmp_path / "e.db")
    for n in (1, 2):
        put_message(db, "ses_root", *step(f"m{n}", "mock", "x", 0.3, 10, 1), 10 * n)
    put_message(db, "ses_root", *step("m3", "mock", "x", 0, 0, 0, done=False), 30)
    answer = json.loads(guard_env.run(model_call(db), RUNAWAY_GUARD_MAX_USD="0.8"))
    assert answer["decision"] == "stop"
    assert "$0.60 spent, about $0.30 next, cap $0.80" in answer["message"]


def test_read_in_pieces_as_opencode_writes_a_step_then_prices_it(tmp_path, guard_env):
    """A step is stored at its start with cost 0 and no tokens, then rewritten when it ends;
    a subagent's child session appears later; a write stamped earlier may commit later."""
    db = make_db(tmp_path / "p.db", children=[("ses_child", "ses_root")])
    put_message(db, "ses_root", *step("m1", "mock", "x", 0, 0, 0, done=False), 1000)
    guard_env.run(model_call(db))
    assert state_of(guard_env, "ses_root")["spend"]["total"] == 0
    put_message(db, "ses_root", *step("m1", "mock", "x", 0.00321, 800, 40), 1000, 2000)
    put_message(db, "ses_child", *step("c1", "mock", "x", 0.001, 10, 1), 9000)
    guard_env.run(model_call(db, "ses_child"))
    put_message(db, "ses_root", *step("m2", "mock", "x", 0.002, 10, 1), 8000)  # late commit
    put_message(db, "ses_root", *step("m3", "mock", "x", 0.004, 10, 1), 100)  # far too late
    guard_env.run(model_call(db))
    spend = state_of(guard_env, "ses_root")["spend"]
    assert spend["agent"] == {"main": round(0.00521 * PICO), "ses_child": round(0.001 * PICO)}


def test_a_step_finished_after_newer_messages_moved_the_cursor_on_is_counted(tmp_path, guard_env):
    """A long step (a subagent's task, a slow tool) is priced minutes after it started, when
    newer messages are long past it: it is followed by id until OpenCode marks it completed."""
    db = make_db(tmp_path / "s.db", children=[("ses_child", "ses_root")])
    put_message(db, "ses_root", *step("m1", "mock", "x", 0, 0, 0, done=False), 1000)
    guard_env.run(model_call(db))
    for n in range(3):  # the child works on: each call moves the cursor further on
        put_message(db, "ses_child", *step(f"c{n}", "mock", "x", 0.001, 10, 1), 100_000 * (n + 1))
        guard_env.run(model_call(db, "ses_child"))
    assert state_of(guard_env, "ses_root")["files"][str(db)]["open"] == {"m1": [0, 0]}
    put_message(db, "ses_root", *step("m1", "mock", "x", 0.00321, 800, 40), 1000, 400_000)
    guard_env.run(model_call(db))
    state = state_of(guard_env, "ses_root")
    assert state["spend"]["agent"] == {"main": round(0.00321 * PICO), "ses_child": 3 * 10**9}
    assert state["files"][str(db)]["open"] == {}


def test_a_call_still_running_when_the_cursor_moved_on_gets_its_outcome(tmp_path, guard_env):
    db = make_db(tmp_path / "t.db")
    base = dict(model_call(db), hook_event_name="tool.execute.before", tool_name="bash")
    guard_env.run(dict(base, call_id="c1", tool_input={"command": "make"}))
    running = {"type": "tool", "callID": "c1", "state": {"status": "running"}}
    put_part(db, "ses_root", "p1", running, 1000)
    # its step stamped completed (as if written first): the call still running keeps it open
    put_message(db, "ses_root", "msg_p1", {"role": "assistant", "time": {"completed": 2}}, 1000)
    put_message(db, "ses_root", *step("m2", "mock", "x", 0.001, 10, 1), 900_000)
    guard_env.run(model_call(db))
    assert state_of(guard_env, "ses_root")["files"][str(db)]["open"] == {"msg_p1": None}
    failed = {"status": "completed", "output": "", "metadata": {"exit": 2}}
    put_part(db, "ses_root", "p1", dict(running, state=failed), 1000, 950_000)
    guard_env.run(model_call(db))
    state = state_of(guard_env, "ses_root")
    assert (state["agents"]["main"]["fails"], state["agents"]["main"]["pending"]) == (1, [])
    assert state["files"][str(db)]["open"] == {}


def test_a_state_an_earlier_guard_followed_is_read_again_and_counted_once(tmp_path, guard_env):
    db = make_db(tmp_path / "u.db")
    for n in range(40):  # more than the ledger's recent responses
        put_message(db, "ses_root", *step(f"m{n:02d}", "mock", "x", 0.001, 10, 1), 1000 * n)
    guard_env.run(model_call(db))
    _, base = state_file.session_paths(str(guard_env.state_dir), "opencode", "ses_root")
    state = state_of(guard_env, "ses_root")
    state["files"][str(db)] = {"agent": "main", "since": 39_000}  # as the earlier guard left it
    os.remove(base + state_file.STATE)
    with open(base + ".json", "w") as handle:  # in the JSON file the earlier guard wrote
        json.dump(state, handle)
    put_message(db, "ses_root", *step("m40", "mock", "x", 0.001, 10, 1), 40_000)
    guard_env.run(model_call(db))
    state = state_of(guard_env, "ses_root")
    assert state["spend"]["total"] == 41 * 10**9
    assert state["files"][str(db)] == {
        "agent": "main",
        "created": 40_000,
        "open": {},
        "done": [f"m{n:02d}" for n in range(41)],  # read finished: not decoded again
    }


@pytest.mark.parametrize("open_count", [0, 3])
def test_every_read_searches_opencodes_indexes(tmp_path, open_count):
    """No table is walked: the cost of a read is what is new, not the session's size."""
    with sqlite3.connect(tmp_path / "plan.db") as conn:
        conn.executescript(SCHEMA.read_text())
        params = {f"o{n}": f"msg_{n}" for n in range(open_count)}
        params.update(root="ses_root", since=1000, new=2000)
        plans = [
            [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", params)]
            for sql in (
                opencode.query(open_count, False),
                opencode.query(open_count, True),
                opencode.query(open_count, True, messages=False),
            )
        ]
    for plan in plans:
        scans = [step for step in plan if step.startswith("SCAN")]
        assert set(scans) <= {"SCAN tree", "SCAN CONSTANT ROW"}, plan
        searches = [step for step in plan if step.startswith("SEARCH")]
        assert "SEARCH session USING INDEX session_parent_idx (parent_id=?)" in searches
        by_time = "message_session_time_created_id_idx (session_id=? AND time_created>?)"
        assert any(step.endswith(by_time) for step in searches), plan
        by_id = "sqlite_autoindex_message_1 (id=?)"
        assert any(step.endswith(by_id) for step in searches) == bool(open_count), plan
    parts = "SEARCH part USING INDEX part_message_id_id_idx (message_id=?)"
    assert [parts in plan for plan in plans] == [False, True, True]


# ---------------------------------------------------------------------------------------------
# the margin's window, read again each call


def tool_call(db, call_id, session="ses_root"):
    return dict(
        model_call(db, session),
        hook_event_name="tool.execute.before",
        call_id=call_id,
        tool_name="bash",
        tool_input={"command": f"echo {call_id}"},
    )


def test_steps_read_again_in_the_window_are_counted_once(tmp_path, guard_env):
    """A model answering at once puts dozens of steps in the margin's 5 s, more than the
    ledger's recent responses: each is counted once, and decoded once."""
    db = make_db(tmp_path / "w.db")
    for n in range(40):
        put_message(db, "ses_root", *step(f"m{n:02d}", "mock", "x", 0.001, 10, 1), 1000 + 100 * n)
        guard_env.run(model_call(db))
    guard_env.run(model_call(db))
    state = state_of(guard_env, "ses_root")
    assert state["spend"]["total"] == 40 * 10**9
    assert len(state["recent"]) < 40 == len(state["files"][str(db)]["done"])


def test_a_step_counted_open_then_finished_is_counted_at_its_final_cost_once(tmp_path, guard_env):
    """A step counted while open (one a crash left open, or a long one) is read again each
    call as newer steps push it out of the ledger's recent responses: unchanged, it is not
    counted again; finished, it is corrected once."""
    db = make_db(tmp_path / "o.db")
    put_message(db, "ses_root", *step("m00", "mock", "x", 0.001, 10, 1, done=False), 1000)
    guard_env.run(model_call(db))
    for n in range(1, 41):
        put_message(db, "ses_root", *step(f"m{n:02d}", "mock", "x", 0.001, 10, 1), 1000 + n)
        guard_env.run(model_call(db))
    state = state_of(guard_env, "ses_root")
    assert "m00" not in state["recent"]
    assert state["spend"]["total"] == 41 * 10**9
    put_message(db, "ses_root", *step("m00", "mock", "x", 0.003, 10, 5), 1000, 3000)
    guard_env.run(model_call(db))
    guard_env.run(model_call(db))
    state = state_of(guard_env, "ses_root")
    assert state["spend"]["total"] == 43 * 10**9
    assert state["files"][str(db)]["open"] == {}


@pytest.mark.parametrize("limit", ["DONE_MAX", "OPEN_MAX"])
def test_past_the_limits_the_window_is_read_against_the_whole_ledger(
    tmp_path, guard_env, monkeypatch, limit
):
    """More finished steps in the window than DONE_MAX, or open ones than OPEN_MAX: the
    next call reads the window against the whole ledger, counted once."""
    monkeypatch.setattr(opencode, limit, 2)
    db = make_db(tmp_path / "x.db")
    for n in range(40):
        done = n % 8 != 3  # five steps stay open
        put_message(
            db, "ses_root", *step(f"m{n:02d}", "mock", "x", 0.001, 10, 1, done=done), 9000 + n
        )
        guard_env.run(model_call(db))
    assert "done" not in state_of(guard_env, "ses_root")["files"][str(db)]
    for n in range(3, 40, 8):
        put_message(db, "ses_root", *step(f"m{n:02d}", "mock", "x", 0.002, 10, 2), 9000 + n)
    guard_env.run(model_call(db))
    assert state_of(guard_env, "ses_root")["spend"]["total"] == 45 * 10**9


def test_a_first_read_keeps_the_rows_the_next_window_returns_again():
    """What the next read may return again stays known: a row created before the window
    does not (OpenCode's integer stamps); one whose stamp is not a number might."""
    rows = [("m1", 1000), ("m2", 9000), ("m3", "9000"), ("m4", 8.5)]
    assert opencode._window(rows, 10_000) == rows[1:]


def test_a_late_row_is_read_after_its_window_was_read_finished(tmp_path, guard_env):
    db = make_db(tmp_path / "l.db")
    for n in range(5):
        put_message(db, "ses_root", *step(f"m{n}", "mock", "x", 0.001, 10, 1), 10_000 + n)
    guard_env.run(model_call(db))
    guard_env.run(model_call(db))
    put_message(db, "ses_root", *step("late", "mock", "x", 0.002, 10, 1), 9_000)  # committed now
    guard_env.run(model_call(db))
    guard_env.run(model_call(db))
    assert state_of(guard_env, "ses_root")["spend"]["total"] == 7 * 10**9


def test_an_outcome_in_a_step_read_finished_before_its_call_is_found(tmp_path, guard_env):
    """A call's part is looked for in the steps new since the last read and the open ones (a
    call runs before its step ends); a database written ahead of the hooks (a replay) has it
    in a step already read finished: the window's parts are read then."""
    db = make_db(tmp_path / "a.db")
    put_message(db, "ses_root", *step("m1", "mock", "x", 0.001, 10, 1), 1000)
    failed = {"type": "tool", "callID": "c1", "state": {"status": "error", "error": "boom"}}
    put(db, "part", "p1", "ses_root", 1000, None, failed, message_id="m1")
    guard_env.run(model_call(db))
    guard_env.run(tool_call(db, "c1"))
    put_message(db, "ses_root", *step("m2", "mock", "x", 0.001, 10, 1), 2000)
    guard_env.run(model_call(db))
    record = state_of(guard_env, "ses_root")["agents"]["main"]
    assert (record["fails"], record["pending"]) == (1, [])


def plain(monkeypatch):
    """The reader without its shortcuts: every row of the window decoded and matched against
    the whole ledger, the parts of the whole window read."""
    read, query = opencode._read, opencode.query

    def read_all(book, db, path, root):
        book.state["files"].get(path, {}).pop("done", None)
        read(book, db, path, root)

    monkeypatch.setattr(opencode, "_read", read_all)
    monkeypatch.setattr(opencode, "query", lambda *a, **k: query(*a, **k).replace(":new", ":since"))


OPS = st.lists(
    st.tuples(
        st.sampled_from(["step", "step", "open", "finish", "call", "outcome", "model"]),
        st.integers(0, 10**6),
        st.sampled_from(["ses_root", "ses_child"]),
        st.integers(-4000, 700),  # a step's time after the newest: before it, a late commit
    ),
    min_size=1,
    max_size=60,
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=OPS)
def test_the_window_read_once_agrees_with_reading_it_all(tmp_path, guard_env, monkeypatch, ops):
    """Steps (finished, open then finished, late), calls and their outcomes (in open steps,
    in finished ones, running), read call after call: the same spend, outcomes and open
    steps as the plain reader's, and the spend OpenCode stored."""
    folder = tmp_path / f"w{next(EXAMPLES)}"
    folder.mkdir()
    db = make_db(folder / "w.db", children=[("ses_child", "ses_root")])
    fast, slow = GuardEnv(folder / "fast"), GuardEnv(folder / "slow")
    clock, steps, opened, calls = 100_000, [], [], []

    def run(payload):
        fast.run(payload, **NO_LIMITS)
        with monkeypatch.context() as patched:
            plain(patched)
            slow.run(payload, **NO_LIMITS)

    for op, value, session, offset in ops:
        if op in ("step", "open") or not steps:
            clock = max(clock, clock + offset)
            message_id = f"msg_{len(steps):04d}"
            data = step(
                message_id, "mock", "x", (value + 1) / 10**6, 10, value % 50, done=op != "open"
            )
            put_message(db, session, *data, clock + min(offset, 0))
            steps.append((message_id, session, clock + min(offset, 0)))
            if op == "open":
                opened.append(len(steps) - 1)
        elif op == "finish" and opened:
            message_id, session, stamp = steps[opened.pop(value % len(opened))]
            data = step(message_id, "mock", "x", (value + 1) / 10**6, 10, value % 50 + 50)
            put_message(db, session, *data, stamp)
        elif op == "call":
            calls.append((f"call_{len(calls)}", session))
            run(tool_call(db, *calls[-1]))
        elif op == "outcome" and calls:
            call_id, session = calls[value % len(calls)]
            status = ["completed", "error", "running"][value % 3]
            state = {"status": status, "error": "boom", "output": "o", "metadata": {"exit": 0}}
            message_id = steps[value % len(steps)][0]
            part = {"type": "tool", "callID": call_id, "state": state}
            put(db, "part", f"prt_{call_id}", session, 0, value, part, message_id=message_id)
        else:
            run(model_call(db, session))
    for index in opened:
        message_id, session, stamp = steps[index]
        put_message(db, session, *step(message_id, "mock", "x", 0.5, 10, 99), stamp)
    run(model_call(db))
    states = [state_of(env, "ses_root") for env in (fast, slow)]
    for state in states:
        state["files"][str(db)].pop("done", None)
    views = [
        (s["spend"], {a: (r["fails"], r["hist"], r["pending"]) for a, r in s["agents"].items()})
        for s in states
    ]
    assert views[0] == views[1]
    assert states[0]["files"] == states[1]["files"]
    assert states[0]["spend"]["total"] == stored_pico(db, ["ses_root", "ses_child"])


# ---------------------------------------------------------------------------------------------
# failures


def test_failures_are_non_zero_exits_and_errors_but_not_the_guards_refusals(tmp_path, guard_env):
    _, payloads, expected = fixture("failures", tmp_path)
    tools = [i for i, p in enumerate(payloads) if p["hook_event_name"] == "tool.execute.before"]
    commands = [payloads[i]["tool_input"] for i in tools]
    assert commands[3] == {"command": "echo ok"}
    replay(guard_env, payloads[: tools[3] + 1])  # up to `echo ok`: false, exit 3, read missing
    record = state_of(guard_env, expected["session_id"])["agents"]["main"]
    assert record["fails"] == 3
    replay(guard_env, payloads[tools[3] + 1 :])  # echo ok succeeded; `refuse-me` was refused
    record = state_of(guard_env, expected["session_id"])["agents"]["main"]
    assert record["fails"] == 0
    assert len(record["hist"]) == 4  # the refused call never ran: no outcome of its own


def test_a_failure_run_is_refused_then_stopped(tmp_path, guard_env):
    db = make_db(tmp_path / "f.db")
    answers = []
    for n in range(1, 9):
        call_id = f"call_{n}"
        payload = dict(
            model_call(db),
            hook_event_name="tool.execute.before",
            call_id=call_id,
            tool_name="bash",
            tool_input={"command": f"false {n}"},
        )
        answers.append(guard_env.answer(payload, RUNAWAY_GUARD_MAX_FAILURES="5"))
        state = {"status": "completed", "output": "", "metadata": {"exit": 1}}
        if answers[-1] and answers[-1]["decision"] != "tell":  # refused: the plugin's error
            state = {"status": "error", "error": answers[-1]["reason"]}
        put_part(db, "ses_root", f"prt_{n}", {"type": "tool", "callID": call_id, "state": state}, n)
    assert answers[:5] == [None] * 4 + [{"decision": "tell", "reason": answers[4]["reason"]}]
    assert [a["decision"] for a in answers[5:]] == ["deny", "deny", "stop"]
    assert json.loads(guard_env.run(model_call(db)))["decision"] == "stop"


def test_permission_rejections_reset_and_running_parts_wait(tmp_path, guard_env):
    db = make_db(tmp_path / "r.db")
    base = dict(model_call(db), hook_event_name="tool.execute.before", tool_name="bash")
    for n, state in enumerate(
        [
            {"status": "completed", "metadata": {"exit": 2}},
            {"status": "error", "error": "boom"},
            {
                "status": "error",
                "error": "The user rejected permission to use this specific tool call.",
            },
            {"status": "error", "error": "File not found: x"},
            {"status": "running"},
        ]
    ):
        guard_env.run(dict(base, call_id=f"c{n}", tool_input={"command": str(n)}))
        put_part(db, "ses_root", f"p{n}", {"type": "tool", "callID": f"c{n}", "state": state}, n)
    guard_env.run(model_call(db))
    record = state_of(guard_env, "ses_root")["agents"]["main"]
    assert record["fails"] == 1  # 2 failures, reset by the person, 1 failure; c4 still running
    assert [c for c, _ in record["pending"]] == ["c4"]


def test_the_guards_note_in_a_tool_output_is_not_part_of_its_outcome(tmp_path, guard_env):
    db = make_db(tmp_path / "n.db")
    base = dict(model_call(db), hook_event_name="tool.execute.before", tool_name="bash")
    outputs = ["same\n", "same\n\n\nrunaway-guard: one more and it is refused", "same\n"]
    answers = []
    for n, output in enumerate([*outputs, None]):
        call = dict(base, call_id=f"c{n}", tool_input={"command": "echo same"})
        answers.append(guard_env.answer(call, RUNAWAY_GUARD_MAX_REPEATS="3"))
        state = {"status": "completed", "output": output, "metadata": {"exit": 0}}
        put_part(db, "ses_root", f"p{n}", {"type": "tool", "callID": f"c{n}", "state": state}, n)
    assert [a and a["decision"] for a in answers] == [None, None, "tell", "deny"]


def test_without_a_database_the_loop_wire_still_judges_the_calls(tmp_path, guard_env):
    payload = dict(
        model_call(tmp_path / "missing.db"),
        hook_event_name="tool.execute.before",
        call_id="c",
        tool_name="bash",
        tool_input={"command": "ls"},
    )
    answers = [
        guard_env.answer(dict(payload, call_id=f"c{n}"), RUNAWAY_GUARD_MAX_REPEATS="3")
        for n in range(4)
    ]
    assert [a and a["decision"] for a in answers] == [None, None, "tell", "deny"]


# ---------------------------------------------------------------------------------------------
# outside input never breaks the guard

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
EXAMPLES = itertools.count()
NUMBER = st.integers() | st.floats() | st.sampled_from([0, -1, 10**30, 1e308, 2**63])
TOKENS = st.fixed_dictionaries(
    {},
    optional={
        "input": NUMBER,
        "output": NUMBER,
        "reasoning": NUMBER,
        "cache": st.fixed_dictionaries({}, optional={"read": NUMBER, "write": NUMBER}) | JSON,
    },
)
FIELDS = {
    "cost": NUMBER | JSON,
    "tokens": TOKENS | JSON,
    "modelID": st.sampled_from(["gpt-5.5", "claude-sonnet-4-6", "x", ""]) | JSON,
    "providerID": st.sampled_from(["anthropic", "openai", "opencode"]) | JSON,
    "time": st.fixed_dictionaries({}, optional={"created": NUMBER}) | JSON,
}
STATE = st.fixed_dictionaries(
    {},
    optional={
        "status": st.sampled_from(["completed", "error", "running"]) | JSON,
        "error": st.text(max_size=30) | JSON,
        "output": st.text(max_size=30) | JSON,
        "metadata": st.fixed_dictionaries({}, optional={"exit": NUMBER | JSON}) | JSON,
    },
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    message=st.fixed_dictionaries({}, optional=FIELDS),
    part=st.fixed_dictionaries({}, optional={"state": STATE | JSON}),
    payload=st.dictionaries(
        st.sampled_from(
            [
                "session_id",
                "agent_session_id",
                "call_id",
                "tool_name",
                "tool_input",
                "prompt_id",
                "cwd",
                "hook_event_name",
            ]
        ),
        JSON,
    ),
)
def test_any_row_or_payload_is_read_without_error(tmp_path, guard_env, message, part, payload):
    db = tmp_path / "h.db"
    if not db.exists():
        make_db(db)
    n = next(EXAMPLES)
    call = dict(model_call(db), hook_event_name="tool.execute.before", tool_name="bash")
    guard_env.run(dict(call, call_id=f"call_{n}", tool_input={"command": str(n)}))
    put_message(db, "ses_root", f"m{n}", dict(message, role="assistant"), 5)
    put_part(db, "ses_root", f"p{n}", dict(part, type="tool", callID=f"call_{n}"), 5)
    guard_env.run(model_call(db))
    line = guard_env.run({**payload, "runaway_guard_plugin": "opencode", "database": str(db)})
    assert line == "" or isinstance(json.loads(line), dict)
