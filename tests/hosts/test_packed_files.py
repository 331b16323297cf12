"""A followed file's entry (hosts/_files.py), on every host that follows one file per subagent:
a state the version before wrote, its subagents' entries packed as [off, ino, the rest as JSON],
reads on as if it had kept them whole; a dormant file's entry, kept apart, comes back whole."""

import marshal
import os
import re
import time
from pathlib import Path

import pytest
from guard_env import ROOT, as_previous_version, followed_files, with_agents
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from runaway_guard import hosts, ledger, state_file
from runaway_guard.calls import Call
from runaway_guard.hosts import _files, gemini
from runaway_guard.sessions import refresh

FIXTURES = ROOT / "tests" / "fixtures"
CLAUDE_SESSION = "ce26ac75-a0c0-4c5a-8200-1f2adcf4b202"
CODEX_DAY = "sessions/2026/11/30"
CODEX_ROOT = "01a22a39-2c35-7c10-825c-56a048782d9a"
QWEN_SESSION = "a37822d9-2596-4b1c-82c1-d505cb589b3b"

# Each host's session: (session id, the main file, [(its path in the session, its fixture)]),
# the main file first. Claude Code's second subagent is another session's, moved in.
SESSIONS = {
    "claude": (
        CLAUDE_SESSION,
        f"{CLAUDE_SESSION}.jsonl",
        [
            (f"{CLAUDE_SESSION}.jsonl", f"claude/models/{CLAUDE_SESSION}.jsonl"),
            *(
                (f"{CLAUDE_SESSION}/subagents/{name}", f"claude/{fixture}/{name}")
                for fixture, name in (
                    (f"models/{CLAUDE_SESSION}/subagents", "agent-a51e4630e38e22fce.jsonl"),
                    (
                        "unknown_model/432b0714-a2a3-4c17-8a88-ebe8c20fb628/subagents",
                        "agent-aee17223fa2a4913d.jsonl",
                    ),
                )
            ),
        ],
    ),
    "codex": (
        CODEX_ROOT,
        f"{CODEX_DAY}/rollout-2026-11-30T02-11-59-{CODEX_ROOT}.jsonl",
        [
            (f"{CODEX_DAY}/{name}", f"codex/subagent/{CODEX_DAY}/{name}")
            for name in (
                f"rollout-2026-11-30T02-11-59-{CODEX_ROOT}.jsonl",
                "rollout-2026-11-30T02-12-00-01a22a39-2e23-75c1-806c-594cfdd034a7.jsonl",
                "rollout-2026-11-30T02-12-00-01a22a39-2e8b-7b50-931f-e2ca6588d325.jsonl",
            )
        ],
    ),
    "qwen": (
        QWEN_SESSION,
        f"chats/{QWEN_SESSION}.jsonl",
        [
            (f"chats/{QWEN_SESSION}.jsonl", f"qwen/subagent/chats/{QWEN_SESSION}.jsonl"),
            (
                f"subagents/{QWEN_SESSION}/agent-general-purpose-call_01a233182d9f0008.jsonl",
                f"qwen/subagent/subagents/{QWEN_SESSION}/"
                "agent-general-purpose-call_01a233182d9f0008.jsonl",
            ),
        ],
    ),
}
NAMED = {"claude": _files.agent_file, "qwen": _files.agent_file, "gemini": gemini._agent}


stamps = st.text(st.sampled_from("0129-:TZ."), max_size=24)
entries = st.fixed_dictionaries(
    {"agent": st.sampled_from(["a1", "main", "general-purpose-x", "", "é"])},
    optional={
        "off": st.integers(0, 2**63),
        "ino": st.integers(0, 2**64),
        "skip": st.just(True),
        "ver": st.text(max_size=8),
        "model": st.text(max_size=12),
        "thread": st.text(max_size=12),
        "records": st.booleans(),
        "calls": st.lists(st.text(max_size=12), max_size=4),
        "start": stamps,
        "own": st.integers(0, 70),
        "tied": st.integers(0, 70),
        "last": stamps,
    },
)


@given(
    entry=entries, name=st.sampled_from(["a1", "main", "b"]), host=st.sampled_from(["x", *NAMED])
)
def test_a_dormant_entry_is_json_and_comes_back_as_itself(entry, name, host):
    """What a dormant file's part keeps of an entry (off, ino and the rest as JSON text, its
    agent left out when the host's named tells it) is the entry again once read."""
    named = NAMED.get(host)
    path = f"/home/u/s/agent-{name}.jsonl"
    rest = _files._rest(path, entry, named)
    assert isinstance(rest, str)
    woken = _files._entry(entry.get("off"), entry.get("ino"), rest)
    assert with_agents({path: woken}, named)[path] == entry


def fixture_lines(host):
    return [
        (path, (FIXTURES / fixture).read_bytes().splitlines(True))
        for path, fixture in SESSIONS[host][2]
    ]


steps = st.lists(
    st.tuples(
        st.sets(st.integers(0, 2), min_size=1),  # the files that grow
        st.integers(1, 8),  # by up to this many lines
        st.sampled_from([None, "moved", "truncated"]),  # then the first of them
        st.booleans(),  # the state then rewritten as the version before kept it
    ),
    max_size=10,
)


@pytest.mark.parametrize("host", sorted(SESSIONS))
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=steps)
@example(steps=[({0, 1, 2}, 3, None, False), ({1}, 2, "moved", False), ({1, 2}, 4, None, False)])
@example(steps=[({0, 1, 2}, 5, None, False), ({2}, 2, "truncated", False), ({2}, 3, None, False)])
@example(steps=[({0, 1, 2}, 4, None, True), ({1, 2}, 3, None, False), ({1}, 2, None, True)])
def test_a_previous_versions_packed_entries_read_as_kept_whole(tmp_path_factory, host, steps):
    """Files grow a few lines a call; one may be put under a new inode or cut back (read again
    from its start); after a call the state may be rewritten as the version before kept it (its
    subagents' entries packed lists). The state is the same as never rewritten, after every
    call: spend, recent responses, the wires' records, and each file's entry in the order files
    are read; at the end, spend and entries are a cold read's of the whole files, read to their
    ends, and every entry is a dict."""
    tmp = tmp_path_factory.mktemp(host)
    session, main, _ = SESSIONS[host]
    files = [(tmp / "home" / path, lines) for path, lines in fixture_lines(host)]
    for path, _ in files:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")
    written = [0] * len(files)
    call = Call(host, session, transcript_path=str(tmp / "home" / main))
    waited = sorted(
        {m for _, lines in files for m in re.findall(rb'"((?:toolu|call)_\w+)"', b"".join(lines))}
    )

    def synced(state_dir, first):
        with ledger.Ledger(str(tmp / state_dir), host, session) as book:
            if first:
                for tool_use_id in waited:
                    book.call("main", tool_use_id.decode(), tool_use_id.decode())
            hosts.load(host).sync(book, call)
            state = book.state
            entries = with_agents(state["files"], NAMED.get(host))
            return state["spend"], state["recent"], state["agents"], list(entries.items())

    last = (set(range(len(files))), 10**6, None, False)
    for number, (grown, count, change, older) in enumerate([*steps, last]):
        grown = sorted({index % len(files) for index in grown})
        for index in grown:
            path, lines = files[index]
            with path.open("ab") as handle:
                handle.writelines(lines[written[index] : written[index] + count])
            written[index] = min(len(lines), written[index] + count)
        path, lines = files[grown[0]]
        if change == "moved":
            path.with_suffix(".new").write_bytes(path.read_bytes())
            path.with_suffix(".new").replace(path)
        elif change == "truncated":
            written[grown[0]] //= 2
            path.write_bytes(b"".join(lines[: written[grown[0]]]))
        first = number == 0
        packed = synced("packed", first)
        assert packed == synced("whole", first)
        if older:
            as_previous_version(str(tmp / "packed"), host, session, NAMED.get(host))
    # every file whole now: a cold read of them all books the same, ends at the same places
    cold = synced("cold", True)
    assert (packed[0], dict(packed[3])) == (cold[0], dict(cold[3]))
    assert {path: entry.get("off") for path, entry in packed[3]} == {
        str(path): path.stat().st_size for path, _ in files
    }
    state = state_file.read_state(
        state_file.session_paths(str(tmp / "packed"), host, session)[1] + ".state"
    )
    assert {path: type(entry) for path, entry in state["files"].items()} == {
        str(path): dict for path, _ in files
    }


def test_a_status_finds_the_main_file_among_packed_entries(tmp_path):
    """status.py refreshes a session first (sessions.refresh): it finds the main file's entry
    among the subagents' packed ones a state of the version before holds."""
    session, main, _ = SESSIONS["claude"]
    for path, lines in fixture_lines("claude"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_bytes(b"".join(lines[: len(lines) // 2]))
    state_dir = str(tmp_path / "state")
    with ledger.Ledger(state_dir, "claude", session) as book:
        hosts.load("claude").sync(
            book, Call("claude", session, transcript_path=str(tmp_path / main))
        )
        before = book.state["spend"]["total"]
    as_previous_version(state_dir, "claude", session, _files.agent_file)
    packed = state_file.read_state(
        state_file.session_paths(state_dir, "claude", session)[1] + state_file.STATE
    )["files"]
    assert sorted(type(entry).__name__ for entry in packed.values()) == ["dict", "list", "list"]
    for path, lines in fixture_lines("claude"):
        (tmp_path / path).write_bytes(b"".join(lines))
    assert refresh(state_dir, "claude", session)["spend"]["total"] > before


class Clock:
    """hosts._files' time module, its time() set by the test."""

    def __init__(self, now):
        self.now = now

    def time(self):
        return self.now

    def __getattr__(self, name):
        return getattr(time, name)


def agent_of(host, path, index):
    """The agent id a call from the file at index carries (Codex's calls name their rollout)."""
    if index == 0:
        return "main"
    return NAMED[host](path) if host in NAMED else f"sub{index}"


dormant_steps = st.lists(
    st.tuples(
        st.sampled_from([0.0, 0.4, 0.9, 1.5, 30.0, 61.0, 300.0]),  # the clock moves on
        st.sets(st.integers(0, 2), max_size=3),  # the files that grow (written now)
        st.integers(1, 8),  # by up to this many lines
        st.integers(0, 2),  # the file whose agent makes the call
    ),
    max_size=12,
)


@pytest.mark.parametrize("host", sorted(SESSIONS))
@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=dormant_steps)
@example(steps=[(61.0, set(), 1, 0), (0.4, {1}, 8, 1), (0.3, {2}, 8, 0)])
@example(steps=[(61.0, {0}, 3, 0), (0.4, {1}, 4, 1), (0.4, {1, 2}, 2, 0), (1.5, set(), 1, 0)])
@example(steps=[(300.0, set(), 1, 0), (0.0, {2}, 5, 2), (0.9, {2}, 5, 0), (61.0, {1}, 2, 1)])
def test_dormant_files_are_read_late_by_at_most_a_sweep(tmp_path_factory, monkeypatch, host, steps):
    """Against a reader that looks at every file every call (nothing dormant), call after call:
    the calling agent's and the main agent's spend are the same; no agent's is ever more; once a
    sweep is due everything is the same, files' entries too; and so after a status's refresh."""
    tmp = tmp_path_factory.mktemp(host)
    session, main, _ = SESSIONS[host]
    files = [(tmp / "home" / path, lines) for path, lines in fixture_lines(host)]
    clock = Clock(time.time())
    monkeypatch.setattr(_files, "time", clock)
    written = [len(lines) // 3 for _, lines in files]
    for (path, lines), count in zip(files, written):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"".join(lines[:count]))
    for path in {path for path, _ in files} | {path.parent for path, _ in files}:
        os.utime(path, (clock.now - 1000, clock.now - 1000))  # folders listed once, files quiet

    def synced(state_dir, index, quiet_s=_files.QUIET_S):
        path = files[index][0] if host == "codex" else tmp / "home" / main
        agent = agent_of(host, str(files[index][0]), index)
        call = Call(host, session, transcript_path=str(path), agent=agent)
        monkeypatch.setattr(_files, "QUIET_S", quiet_s)
        with ledger.Ledger(str(tmp / state_dir), host, session) as book:
            swept = "swept" not in book.state or clock.now - book.state["swept"] >= 1
            hosts.load(host).sync(book, call)
            entries = followed_files(book, NAMED.get(host))
            return book.state["spend"], entries, swept

    for number, (later, grown, count, caller) in enumerate([(0.0, set(), 1, 0), *steps]):
        clock.now += later
        caller %= len(files)
        for index in sorted({index % len(files) for index in grown}):
            path, lines = files[index]
            with path.open("ab") as handle:
                handle.writelines(lines[written[index] : written[index] + count])
            written[index] = min(len(lines), written[index] + count)
            os.utime(path, (clock.now, clock.now))
        caller = 0 if host != "codex" and number == 0 else caller
        spend, entries, swept = synced("dormant", caller)
        folder = tmp / "dormant" / "sessions" / host
        assert len([p for p in folder.iterdir() if ".dormant." in p.name]) <= 1  # none left
        plain, plain_entries, _ = synced("plain", caller, float("inf"))
        agents, plain_agents = spend["agent"], plain["agent"]
        for agent in {"main", agent_of(host, str(files[caller][0]), caller)} & set(plain_agents):
            assert agents.get(agent) == plain_agents[agent]
        assert all(value <= plain_agents.get(agent, 0) for agent, value in agents.items())
        if swept:
            assert (spend, entries) == (plain, plain_entries)
    with ledger.Ledger(str(tmp / "dormant"), host, session) as book:
        asleep = bool((book.part("dormant") or {}).get("index"))
    assert refresh(str(tmp / "dormant"), host, session)["spend"] == synced("plain", 0)[0]
    if steps and steps[-1][0] >= 61.0 and not steps[-1][1]:
        assert asleep  # files the host had not written for a minute were dormant


@pytest.mark.parametrize(
    "damage",
    [b"", b"junk", [1, 2], {"index": [], "rests": {}}, {"index": {"/x/": {"a": [1]}}, "rests": {}}],
)
def test_a_damaged_dormant_part_is_rebuilt_from_the_ledger(tmp_path, damage):
    """A call that cannot read the dormant files' part (a file of its own) fails (the hook fails
    open) and leaves no state: the next call rebuilds it from the ledger, spend and all."""
    session, main, _ = SESSIONS["claude"]
    for path, lines in fixture_lines("claude"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_bytes(b"".join(lines))
        os.utime(tmp_path / path, (1_000_000_000, 1_000_000_000))
    state_dir = str(tmp_path / "state")
    call = Call("claude", session, transcript_path=str(tmp_path / main))

    def sync():
        with ledger.Ledger(state_dir, "claude", session) as book:
            hosts.load("claude").sync(book, call)
            return book.state, followed_files(book)

    state, followed = sync()
    assert len(followed) == 3 and len(state["files"]) == 1  # both subagents dormant
    base = state_file.session_paths(state_dir, "claude", session)[1]
    part = Path(f"{base}.dormant.{state['parts']['dormant']}")
    assert sorted(p.name for p in part.parent.iterdir() if ".dormant." in p.name) == [part.name]
    part.write_bytes(damage if isinstance(damage, bytes) else marshal.dumps(damage))
    state["swept"] = 0
    state_file.write_state(base + state_file.STATE, state)
    with pytest.raises((TypeError, ValueError, KeyError, EOFError)):
        sync()
    assert not os.path.exists(base + state_file.STATE)
    assert sync()[0]["spend"] == state["spend"]
