"""The ledger: exact spend from recorded sessions, read in any number of pieces, across rewrites."""

import contextlib
import json
import marshal
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from claude_records import assistant, result, usage
from guard_env import ROOT, jsonl
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from runaway_guard import day_totals, hosts, ledger, spend_ledger, state_file
from runaway_guard.calls import Call

CODEX_FIXTURES = ROOT / "tests" / "fixtures" / "codex"
# Expected totals from the scripted usage (tests/fixtures/codex/NOTES.md), agreed by ccusage.
CODEX_EXPECTED = {"usage": 0.190100, "failures": 0.083550, "subagent": 0.118000}


def codex_session(name, into):
    """Copy a recorded Codex session into a folder; (rollout paths, hook inputs re-pointed)."""
    source = CODEX_FIXTURES / name
    shutil.copytree(source / "sessions", into / "sessions")
    old_root = None
    inputs = []
    for line in (source / "hook_inputs.jsonl").read_text().splitlines():
        payload = json.loads(line)
        if payload.get("hook_event_name") != "PreToolUse":
            continue
        path = payload["transcript_path"]
        old_root = old_root or path[: path.index("/sessions/")]
        payload["transcript_path"] = str(into) + path[len(old_root) :]
        inputs.append(payload)
    rollouts = sorted(into.glob("sessions/**/rollout-*.jsonl"))
    return rollouts, inputs


def spend_of(state_dir, host, session_id):
    with ledger.Ledger(str(state_dir), host, session_id) as book:
        return book.state["spend"], dict(sorted(book.state["spend"]["agent"].items()))


@pytest.mark.parametrize("name", sorted(CODEX_EXPECTED))
def test_codex_recorded_sessions_priced_exactly(guard_env, tmp_path, name):
    rollouts, inputs = codex_session(name, tmp_path / "codex")
    full = {path: path.read_bytes() for path in rollouts}
    snapshots = [
        json.loads(line)
        for line in (CODEX_FIXTURES / name / "hook_inputs.snapshots.jsonl").read_text().splitlines()
    ]
    lines_at = {s["tool_use_id"]: s["transcript_lines"] for s in snapshots if "tool_use_id" in s}
    for path in rollouts:
        path.write_bytes(b"")
    # Replay: each hook sees its own rollout as long as it was when the real hook ran.
    for payload in inputs:
        path = Path(payload["transcript_path"])
        lines = full[path].splitlines(keepends=True)[: lines_at.get(payload["tool_use_id"], 0)]
        if len(b"".join(lines)) > len(path.read_bytes()):
            path.write_bytes(b"".join(lines))
        guard_env.run(payload)
    for path, data in full.items():
        path.write_bytes(data)
    guard_env.run({**inputs[0], "tool_use_id": "final", "tool_input": {"command": "true"}})
    spend, _ = spend_of(guard_env.state_dir, "codex", inputs[0]["session_id"])
    assert spend["total"] == round(CODEX_EXPECTED[name] * 1e12)


def test_codex_subagents_are_found_and_attributed(guard_env, tmp_path):
    _, inputs = codex_session("subagent", tmp_path / "codex")
    root_call = next(p for p in inputs if "agent_id" not in p)
    guard_env.run(root_call)  # the main thread alone: its folder holds the children too
    spend, by_agent = spend_of(guard_env.state_dir, "codex", root_call["session_id"])
    assert spend["total"] == round(CODEX_EXPECTED["subagent"] * 1e12)
    assert len(by_agent) == 3 and by_agent["main"] == round(0.066250 * 1e12)


def FakeCall(host, session_id, transcript_path):
    return Call(host, session_id, transcript_path=str(transcript_path))


def claude_session(folder):
    """A Claude Code session with placeholder rows, a subagent folder, a sibling-less layout."""
    main = folder / "s1.jsonl"
    records = []
    for n in range(30):
        use = usage(inp=5 + n, out=1, cw5=100 * n, cw1h=50, read=1000 * n)
        final = dict(use, output_tokens=40 + n)
        records.append(assistant(f"msg{n}", model="claude-opus-4-8", use=use, stop=None))
        records.append(
            assistant(f"msg{n}", model="claude-opus-4-8", tool=(f"t{n}", "Bash", {}), use=final)
        )
        records.append(result(f"t{n}", f"out {n}", error=n % 3 == 0))
    records.append(assistant("synthetic", model="<synthetic>"))
    jsonl(main, records)
    sub = folder / "s1" / "subagents" / "agent-a1.jsonl"
    jsonl(
        sub, [assistant(f"sub{n}", model="claude-haiku-4-5", isSidechain=True) for n in range(12)]
    )
    nested = folder / "s1" / "subagents" / "workflows" / "run1" / "agent-a2.jsonl"
    jsonl(nested, [assistant(f"deep{n}", model="claude-sonnet-4-6") for n in range(5)])
    return [main, sub, nested]


def sync_once(state_dir, host, call):
    with ledger.Ledger(str(state_dir), host, call.session_id) as book:
        hosts.load(host).sync(book, call)
        return book.state["spend"]


def read_in_pieces(tmp, files, cuts_per_file, host, session_id, main):
    """Write each file in pieces cut at the given fractions, syncing after every piece."""
    state_dir = tmp / "state"
    data = {path: path.read_bytes() for path in files}
    for path in files:
        path.write_bytes(b"")
    call = FakeCall(host, session_id, main)
    for step in range(max(len(c) for c in cuts_per_file) + 1):
        for path, cuts in zip(files, cuts_per_file):
            ends = [round(len(data[path]) * c) for c in sorted(cuts)] + [len(data[path])]
            end = ends[min(step, len(ends) - 1)]
            with path.open("ab") as handle:
                handle.write(data[path][path.stat().st_size : end])
            sync_once(state_dir, host, call)
    return sync_once(state_dir, host, call)


fractions = st.lists(st.floats(0, 1), min_size=1, max_size=50)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(cuts=st.lists(fractions, min_size=3, max_size=3))
def test_claude_pieces_equal_one_read(tmp_path_factory, cuts):
    tmp = tmp_path_factory.mktemp("pieces")
    files = claude_session(tmp / "proj")
    whole = sync_once(tmp / "whole", "claude", FakeCall("claude", "s1", files[0]))
    assert read_in_pieces(tmp, files, cuts, "claude", "s1", files[0]) == whole
    assert set(whole["agent"]) == {"main", "a1", "a2"}


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(cuts=st.lists(fractions, min_size=3, max_size=3))
def test_codex_pieces_equal_one_read(tmp_path_factory, cuts):
    tmp = tmp_path_factory.mktemp("pieces")
    rollouts, inputs = codex_session("subagent", tmp / "codex")
    main = next(Path(p["transcript_path"]) for p in inputs if "agent_id" not in p)
    rollouts.sort(key=lambda path: path != main)
    session_id = inputs[0]["session_id"]
    whole = sync_once(tmp / "whole", "codex", FakeCall("codex", session_id, main))
    assert whole["total"] == round(CODEX_EXPECTED["subagent"] * 1e12)
    assert read_in_pieces(tmp, rollouts, cuts, "codex", session_id, main) == whole


def test_one_response_priced_once_at_its_largest_output(tmp_path):
    main = jsonl(
        tmp_path / "s1.jsonl",
        [
            assistant("m", model="claude-opus-4-8", use=usage(inp=4, out=3, cw1h=1843, read=48210)),
            assistant(
                "m", model="claude-opus-4-8", use=usage(inp=4, out=412, cw1h=1843, read=48210)
            ),
            assistant("m", model="claude-opus-4-8", use=usage(inp=4, out=3, cw1h=1843, read=48210)),
        ],
    )
    spend = sync_once(tmp_path / "state", "claude", FakeCall("claude", "s1", main))
    # Opus 4.8 per million: input $5, 1-hour write $10, read $0.5, output $25
    assert spend["total"] == round((4 * 5 + 1843 * 10 + 48210 * 0.5 + 412 * 25) * 1e6)


def test_rewrite_after_compaction_neither_drops_nor_doubles(tmp_path):
    files = claude_session(tmp_path / "proj")
    call = FakeCall("claude", "s1", files[0])
    before = sync_once(tmp_path / "state", "claude", call)
    # Claude Code rewrites a large transcript keeping only what follows the compaction.
    lines = files[0].read_bytes().splitlines(keepends=True)
    files[0].write_bytes(b"".join(lines[-9:]))
    os.utime(files[0])
    assert sync_once(tmp_path / "state", "claude", call) == before
    jsonl(files[0], [assistant("after", model="claude-opus-4-8")])
    after = sync_once(tmp_path / "state", "claude", call)
    assert after["total"] == before["total"] + round((3 * 5 + 10 * 25) * 1e6)


def test_replaced_file_and_deleted_subagent_keep_what_was_counted(tmp_path):
    files = claude_session(tmp_path / "proj")
    call = FakeCall("claude", "s1", files[0])
    before = sync_once(tmp_path / "state", "claude", call)
    files[1].unlink()
    replacement = tmp_path / "proj" / "new.jsonl"
    replacement.write_bytes(files[0].read_bytes())
    os.replace(replacement, files[0])  # a new inode with the same content
    assert sync_once(tmp_path / "state", "claude", call) == before


@pytest.mark.parametrize(
    "damage",
    [
        b"{not marshal",
        marshal.dumps([]),
        marshal.dumps({"v": 1}),
        marshal.dumps({"v": 999}),
        state_file.SLOTS,  # slots, and neither whole
        state_file.SLOTS + bytes(4096),
        state_file.SLOTS + (20).to_bytes(4, "little") + b"\x01" * 60,
    ],
)
def test_corrupt_state_is_rebuilt_from_the_ledger(tmp_path, damage):
    files = claude_session(tmp_path / "proj")
    call = FakeCall("claude", "s1", files[0])
    before = sync_once(tmp_path / "state", "claude", call)
    state_path = next((tmp_path / "state" / "sessions" / "claude").glob("*.state"))
    state_path.write_bytes(damage)
    assert sync_once(tmp_path / "state", "claude", call) == before


def test_an_earlier_or_torn_state_keeps_the_persons_cap(tmp_path):
    """What only the state holds (a raised cap) survives an upgrade from a state of one marshal
    value, and a call killed while it writes its slot: the state before it is read."""
    from test_state_slots import write_torn

    files = claude_session(tmp_path / "proj")
    call = FakeCall("claude", "s1", files[0])
    before = sync_once(tmp_path / "state", "claude", call)
    with ledger.Ledger(str(tmp_path / "state"), "claude", "s1") as book:
        book.state["cap_usd"] = 7.5
    with open(book.state_path, "wb") as handle:  # as an earlier version wrote it
        handle.write(marshal.dumps(book.state, state_file.MARSHAL_FORMAT))
    open(book.lock.path, "wb").close()  # which never wrote in its lock file
    assert sync_once(tmp_path / "state", "claude", call) == before
    with open(book.state_path, "rb") as handle:
        assert handle.read(4) == state_file.SLOTS
    inode = os.stat(book.state_path).st_ino
    assert sync_once(tmp_path / "state", "claude", call) == before
    assert os.stat(book.state_path).st_ino == inode  # written in place
    state, place = state_file.read_slots(book.state_path)
    write_torn(book.state_path, dict(state, cap_usd=None), place, {0, 2})
    assert sync_once(tmp_path / "state", "claude", call) == before
    assert state_file.read_state(book.state_path)["cap_usd"] == 7.5


def test_an_earlier_version_beside_this_one_is_given_a_state_it_reads(tmp_path):
    """Two installs of different versions on one session (user and project scope): the earlier
    one reads the state as one marshal value and rebuilds from the ledger, with a full read of
    every file, whatever it cannot read. Once it has replaced the slots, this version writes one
    marshal value too, for the session; an upgrade, whose lock file is empty, goes to slots."""
    files = claude_session(tmp_path / "proj")
    call = FakeCall("claude", "s1", files[0])
    before = sync_once(tmp_path / "state", "claude", call)
    book = ledger.Ledger(str(tmp_path / "state"), "claude", "s1")
    with open(book.state_path, "rb") as handle, pytest.raises(ValueError):
        marshal.loads(handle.read())  # the earlier version cannot read slots: it rebuilds
    state = state_file.read_state(book.state_path)
    with open(book.state_path, "wb") as handle:  # and writes what it rebuilt
        handle.write(marshal.dumps(dict(state, cap_usd=7.5), state_file.MARSHAL_FORMAT))
    for _ in range(2):
        assert sync_once(tmp_path / "state", "claude", call) == before
        with open(book.state_path, "rb") as handle:
            assert marshal.loads(handle.read())["cap_usd"] == 7.5  # what it reads, whole
    open(book.lock.path, "wb").close()  # an upgrade: the earlier version's lock file
    assert sync_once(tmp_path / "state", "claude", call) == before
    assert state_file.read_slots(book.state_path)[1] is not None


def test_an_earlier_versions_json_state_is_read_once_and_replaced(tmp_path):
    """Versions before `.state` wrote the state as `<id>.json`: an upgrade mid-session keeps its
    cursors and the person's settings (a rebuild from the ledger would not keep a raised cap)."""
    from runaway_guard import sessions

    files = claude_session(tmp_path / "proj")
    call = FakeCall("claude", "s1", files[0])
    before = sync_once(tmp_path / "state", "claude", call)
    folder = tmp_path / "state" / "sessions" / "claude"
    state = state_file.read_state(str(folder / "s1.state"))
    state["cap_usd"] = 7.5
    (folder / "s1.json").write_text(json.dumps(state))
    (folder / "s1.state").unlink()
    (listed,) = sessions.all_sessions(str(tmp_path / "state"))  # status finds it meanwhile
    assert listed[1]["cap_usd"] == 7.5
    assert sync_once(tmp_path / "state", "claude", call) == before
    assert not (folder / "s1.json").exists()
    assert state_file.read_state(str(folder / "s1.state"))["cap_usd"] == 7.5


def test_the_state_holds_json_data_only(tmp_path):
    """The state is written with marshal but holds what JSON can (status --json shows parts of
    it): no tuples, sets or non-string keys, which marshal would keep and JSON would not."""
    files = claude_session(tmp_path / "proj")
    sync_once(tmp_path / "state", "claude", FakeCall("claude", "s1", files[0]))
    state = state_file.read_state(str(tmp_path / "state" / "sessions" / "claude" / "s1.state"))
    assert state["spend"]["total"] > 0
    assert json.loads(json.dumps(state)) == state


def test_state_files_are_private(tmp_path):
    files = claude_session(tmp_path / "proj")
    sync_once(tmp_path / "state", "claude", FakeCall("claude", "s1", files[0]))
    folder = tmp_path / "state" / "sessions" / "claude"
    assert (tmp_path / "state").stat().st_mode & 0o777 == 0o700
    for path in folder.iterdir():
        assert path.stat().st_mode & 0o777 == 0o600, path
    data = b"".join(p.read_bytes() for p in folder.iterdir())
    assert b"out 1" not in data  # counts and hashes, no transcript text


def cost_state(total):
    return {"type": "cost-state", "sessionId": "s1", "totalCostUSD": total}


def test_host_total_corrected_again_after_many_responses(tmp_path):
    """Claude Code's own total booked as "side" is corrected by the next one, however many
    responses came between (the booking must not fall out of the recent responses)."""
    row = round((3 * 5 + 10 * 25) * 1e6)  # usage() at claude-opus-4-8
    main = jsonl(tmp_path / "s1.jsonl", [assistant("m0", model="claude-opus-4-8")])
    jsonl(main, [cost_state(row * 3 / 1e12)])  # two requests the transcript never showed
    call = FakeCall("claude", "s1", main)
    assert sync_once(tmp_path / "state", "claude", call)["total"] == 3 * row
    jsonl(main, [assistant(f"m{n}", model="claude-opus-4-8") for n in range(1, 301)])
    jsonl(main, [cost_state(row * 304 / 1e12)])  # 301 shown, three never shown
    spend = sync_once(tmp_path / "state", "claude", call)
    assert spend["total"] == 304 * row
    assert spend["agent"] == {"main": 304 * row}


def test_state_stays_small_and_keeps_each_agents_last_response(tmp_path):
    main = tmp_path / "s1.jsonl"
    subagents = tmp_path / "s1" / "subagents"
    for n in range(40):
        jsonl(subagents / f"agent-a{n}.jsonl", [assistant(f"a{n}-{k}") for k in range(20)])
    jsonl(main, [assistant(f"m{k}") for k in range(500)])
    call = FakeCall("claude", "s1", main)
    sync_once(tmp_path / "state", "claude", call)
    with ledger.Ledger(str(tmp_path / "state"), "claude", "s1") as book:
        recent = book.state["recent"]
    assert len(recent) <= ledger.RECENT + 41
    assert {f"a{n}-19" for n in range(40)} | {"m499"} <= recent.keys()
    assert "m0" not in recent and "a0-0" not in recent
    # a late row of an agent's last response is still a correction, not a second response
    jsonl(subagents / "agent-a0.jsonl", [assistant("a0-19", use=usage(out=50))])
    before = sync_once(tmp_path / "state", "claude", call)["total"]
    after = sync_once(tmp_path / "state", "claude", call)["total"]
    assert after == before
    state_path = next((tmp_path / "state" / "sessions" / "claude").glob("*.state"))
    state = state_file.read_state(str(state_path))
    assert len(marshal.dumps(state, state_file.MARSHAL_FORMAT)) < 16 << 10
    assert state_path.stat().st_size < 3 * (16 << 10)  # two slots, half as large again
    # An hour after an agent last booked a response, its last one is done: not kept for it.
    with ledger.Ledger(str(tmp_path / "state"), "claude", "s1") as book:
        active = book.state["active"]
        active.update(dict.fromkeys(active, 0), a7="not a time")
    sync_once(tmp_path / "state", "claude", call)  # the next call finds them stale
    with ledger.Ledger(str(tmp_path / "state"), "claude", "s1") as book:
        assert len(book.state["recent"]) == ledger.RECENT and book.state["active"] == {}


@contextlib.contextmanager
def held_by_another_process(path):
    """The session lock held by a call in another process (a process never waits for its own
    POSIX record locks)."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import os, sys; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT);"
            " os.lockf(fd, os.F_LOCK, 0); print('held', flush=True); sys.stdin.read()",
            str(path),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline() == "held\n"
        yield
    finally:
        holder.communicate("")


def test_old_sessions_pruned_once_a_day(tmp_path):
    state_dir = tmp_path / "state"
    old, recent = (FakeCall("claude", name, tmp_path / f"{name}.jsonl") for name in ("o.1", "r"))
    for call in (old, recent):
        jsonl(call.transcript_path, [assistant(f"{call.session_id}-m")])
        sync_once(state_dir, "claude", call)
    day_totals.daily_spend(str(state_dir), "2026-10-01", "claude:o.1", 5)
    day_totals.daily_spend(str(state_dir), "2026-11-30", "claude:r", 5)
    folder = state_dir / "sessions" / "claude"
    (folder / "o.1.state.123.tmp").write_text("")  # left by a call killed mid-write
    (folder / "o.1.dormant.7").write_text("")  # a part of the state in a file of its own
    (folder / "r.dormant.2").write_text("")  # written long ago, its session in use: kept
    (folder / "o.json").write_text("{}")  # another session (an earlier version's state)
    now = (state_dir / ".pruned").stat().st_mtime + 2 * ledger.PRUNE_EVERY
    aged = now - ledger.PRUNE_AFTER - 60
    for path in [
        *folder.glob("o.1.*"),
        folder / "r.dormant.2",
        *(state_dir / "daily").glob("2026-10-01.*"),
    ]:
        os.utime(path, (aged, aged))
    assert ledger.prune_if_due(str(state_dir), now) == 1
    kept = {"r.state", "r.ledger", "r.lock", "r.dormant.2"}
    assert {p.name for p in folder.iterdir()} == kept | {"o.json"}
    day = {"2026-11-30.json", "2026-11-30.json.lock"}
    assert {p.name for p in (state_dir / "daily").iterdir()} == day
    # Not again the same day, whatever has aged since; a session in use is never pruned.
    os.utime(folder / "o.json", (aged, aged))
    assert ledger.prune_if_due(str(state_dir), now + 60) == 0
    with held_by_another_process(folder / "o.lock"):
        os.utime(folder / "o.lock", (aged, aged))
        assert ledger.prune_if_due(str(state_dir), now + ledger.PRUNE_EVERY + 60) == 0
    assert ledger.prune_if_due(str(state_dir), now + 2 * ledger.PRUNE_EVERY + 60) == 1
    assert {p.name for p in folder.iterdir()} == kept
    # A hook call prunes when due: the marker says when it last looked.
    marker = state_dir / ".pruned"
    os.utime(marker, (aged, aged))
    sync_once(state_dir, "claude", recent)
    assert marker.stat().st_mtime > aged + ledger.PRUNE_EVERY


def test_prune_py_is_loaded_only_by_the_call_that_prunes(tmp_path):
    """The deleting is the one call a day's: the others leave prune.py unloaded."""
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); from runaway_guard import ledger;"
        "print(ledger.prune_if_due(sys.argv[2]), 'runaway_guard.prune' in sys.modules)"
    )
    marker = tmp_path / ".pruned"
    marker.write_text("")
    runs = []
    for aged in (False, True):
        if aged:
            os.utime(marker, (1, 1))
        done = subprocess.run(
            [sys.executable, "-I", "-S", "-c", code, str(ROOT / "skill"), str(tmp_path)],
            capture_output=True,
            check=True,
        )
        runs.append(done.stdout.split())
    assert runs == [[b"0", b"False"], [b"0", b"True"]]


def test_an_outcome_reported_twice_counts_once(tmp_path):
    """A post-tool hook installed twice (user and project scope) reports each outcome twice."""
    with ledger.Ledger(str(tmp_path), "qwen", "s1") as book:
        for call_id in ("call-1", "call-2"):
            book.complete_unseen("main", call_id)
            book.outcome("main", call_id, True, "exit 1")
            book.outcome("main", call_id, True, "exit 1")
        assert book.agent("main")["fails"] == 2


def test_recent_responses_stay_bounded_call_after_call(tmp_path):
    main = jsonl(tmp_path / "s1.jsonl", [assistant("m0")])
    call = FakeCall("claude", "s1", main)
    for n in range(1, 80):
        jsonl(main, [assistant(f"m{n}")])
        sync_once(tmp_path / "state", "claude", call)
    with ledger.Ledger(str(tmp_path / "state"), "claude", "s1") as book:
        recent = book.state["recent"]
        assert len(recent) <= 2 * ledger.RECENT + 1
        assert "m79" in recent


# -- a state of an earlier version, whose older recent responses were parked as one text --------

bookings = st.lists(
    st.tuples(
        st.integers(0, 60),  # the response, of a pool small enough to correct some
        st.integers(0, 40),  # its agent (the responses of a pool's number share one)
        st.integers(0, 9),  # its output: a larger one corrects what was booked
        st.sampled_from(["usage", "usage", "usage", "reconcile", "estimate", "reread"]),
    ),
    max_size=40,
)


def parked_as_before(state):
    """state as a guard before this one saved it: the recent responses but the last RECENT,
    once there were twice as many, parked as one JSON text ("parked": [count, text])."""
    recent = state["recent"]
    if len(recent) < 2 * ledger.RECENT:
        return
    keys = list(recent)[: -ledger.RECENT]
    text = json.dumps([recent.pop(key) for key in keys], separators=(",", ":"))
    parked = state.get("parked")
    if parked is not None:
        state["parked"] = [parked[0] + len(keys), f"{parked[1][:-1]},{text[1:]}"]
    else:
        state["parked"] = [len(keys), text]


class Clock:
    """ledger's time module, its time set by the test: agents go quiet for ACTIVE; time_ns (a
    correction's stamp) runs on from the call's start, the same in both ledgers."""

    def __init__(self, real):
        self.real, self.now, self.ns = real, real.time(), 0  # (older states are pruned)
        self.monotonic, self.sleep = real.monotonic, real.sleep

    def time(self):
        return self.now

    def time_ns(self):
        self.ns += 1000
        return self.ns


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    calls=st.lists(
        st.tuples(bookings, st.sampled_from([0, 60, 4000]), st.booleans()), min_size=1, max_size=8
    )
)
@example(  # parked twice, then a trim of them all (too many), two of them corrected, a trim
    calls=[  # (agents gone quiet)
        ([(n, 60, 0, "usage") for n in range(40)], 0, True),
        ([(n, 60, 0, "usage") for n in range(40, 60)], 60, True),
        ([(n, 0, 0, "usage") for n in range(100, 140)], 60, False),
        ([(0, 60, 5, "usage"), (1, 60, 5, "usage")], 60, True),
        ([(59, 60, 9, "usage")], 4000, False),
        ([(2, 60, 9, "usage")], 0, False),
    ]
)
def test_a_state_with_parked_responses_books_as_one_kept_whole(tmp_path_factory, calls):
    """Call after call, a ledger whose state an earlier guard saved with the older recent
    responses parked as one JSON text books as one that kept them all in "recent": the same
    spend, the same responses remembered in the same order, the same agents active, the same
    ledger file. A call books responses, some of them later rows of one booked before (parked
    by then, or not), the host's totals (reconcile) and estimates, with the whole ledger loaded
    (a re-read) or not; time may pass (agents go quiet: a trim); a call may be saved by the
    earlier guard (its state parked, read by the next call)."""
    tmp = tmp_path_factory.mktemp("parked")
    clock = Clock(ledger.time)
    ledger.time = spend_ledger.time = clock
    checked = ledger.write_state  # conftest's: the schema of this version

    def saved_parked(path, state, *where):
        parked_as_before(state)
        state_file.write_state(path, state, *where)

    def book_call(state_dir, bookings, parking):
        ledger.write_state = saved_parked if parking else checked
        with ledger.Ledger(str(tmp / state_dir), "claude", "s") as book:
            for response, agent, out, kind in bookings:
                if kind == "reconcile":
                    book.reconcile(10**12 * (1 + response), "claude-opus-4-8", "2026-12-01")
                elif kind == "estimate":
                    book.estimate_unwritten(f"c{response}", "claude-opus-4-8", 7 * 10**9, "d")
                elif kind == "reread":
                    book.load_known()  # a transcript read again: the whole ledger looked up
                else:
                    picodollars = 10**9 * (response + 1) + out
                    book.usage(
                        f"r{response}",
                        f"a{response % (agent + 1)}",
                        "m",
                        picodollars=picodollars,
                        known_model=True,
                        output=out,
                        day="d",
                    )
            state = book.state
            assert "parked" not in state
            booked = state["spend"], list(state["recent"].values()), state["active"]
            booked += (state.get("side"),)
        path = Path(book.ledger_path)
        return booked, path.read_bytes() if path.exists() else b""

    try:
        for bookings, elapsed, older in calls:
            clock.now += elapsed
            start = clock.ns = int(clock.now * 1e9)
            parked = book_call("parked", bookings, older)
            clock.ns = start
            assert parked == book_call("whole", bookings, False)
    finally:
        ledger.time = spend_ledger.time = clock.real
        ledger.write_state = checked


def saved_by_an_earlier_guard(book):
    """book's state written as it is (a key this version's schema does not name), and not
    saved again on leaving: as a guard before this one left it."""
    state_file.write_state(book.state_path, book.state, book._place)
    book.lock.__exit__()
    book.lock = None


def test_a_parked_response_is_remembered_whatever_its_key(tmp_path):
    """The responses an earlier guard parked are remembered, and a later row of one corrects
    it: keys that JSON escapes, and keys that are the start of another's."""
    keys = ['a"b', "a\\", "é", "a", "a,", "[x", "side"] + [f"k{n}" for n in range(40)]
    with ledger.Ledger(str(tmp_path), "claude", "s") as book:
        for key in keys:
            book.usage(key, key, "m", picodollars=1000, known_model=True, output=1, day="d")
    with ledger.Ledger(str(tmp_path), "claude", "s") as book:
        parked_as_before(book.state)
        assert book.state["parked"][0] == len(keys) - ledger.RECENT
        saved_by_an_earlier_guard(book)
    with ledger.Ledger(str(tmp_path), "claude", "s") as book:
        assert "parked" not in book.state and list(book.state["recent"]) == keys
        assert all(book.remembers(key) for key in keys)
        assert not any(book.remembers(key) for key in ("b", "k", "k4x", '"a"', "a\\\\"))
        for key in keys:  # a later row of each: corrected, not booked again
            book.usage(key, key, "m", picodollars=2000, known_model=True, output=2, day="d")
        assert book.state["spend"]["total"] == 2000 * len(keys)


@pytest.mark.parametrize(
    "parked", [[3, "[[1,2]"], [1, "[7]"], [1, "{}"], [1, None], "x", [1, '[["a",1]]', 5]]
)
def test_a_state_whose_parked_responses_cannot_be_read_is_rebuilt(tmp_path, parked):
    """Parked responses that are not what an earlier guard wrote: the spend is the ledger's."""
    with ledger.Ledger(str(tmp_path), "claude", "s") as book:
        book.usage("r1", "main", "m", picodollars=1000, known_model=True, output=1, day="d")
    with ledger.Ledger(str(tmp_path), "claude", "s") as book:
        book.state["recent"] = {}
        book.state["spend"]["total"] = 5  # what the ledger does not say: gone once rebuilt
        book.state["parked"] = parked
        saved_by_an_earlier_guard(book)
    with ledger.Ledger(str(tmp_path), "claude", "s") as book:
        assert "parked" not in book.state and book.state["spend"]["total"] == 1000
        assert not book.remembers("r1")  # a fresh state: every transcript is read again
