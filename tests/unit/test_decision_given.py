"""A decision made is a decision given: when the state, the ledger or the day file cannot be
written (a full disk, a read-only one, a lock held too long), the refusal the guard decided still
goes out and what it could not save is logged; a Cursor payload it cannot read is allowed, never
left unanswered; a state folder someone else could write to is refused."""

import errno
import json
import os
import subprocess
from pathlib import Path

import pytest
from claude_records import assistant, usage
from guard_env import fill, fuzz, jsonl, tmpfs
from hypothesis import given
from hypothesis import strategies as st
from runaway_guard import fs, hook, ledger, log, state_file
from test_hardness import environment, log_lines, run_process

CAP = {"RUNAWAY_GUARD_MAX_USD": "0.01"}  # one response of the transcript below crosses it


def over_cap_session(root, session_id="s1"):
    """A Claude Code transcript whose one response costs more than CAP; the payload of a call."""
    main = Path(root) / "p" / f"{session_id}.jsonl"
    jsonl(main, [assistant("m1", use=usage(inp=50_000, out=2_000))])
    payload = {
        "session_id": session_id,
        "transcript_path": str(main),
        "cwd": str(root),
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "ls"},
    }
    return main, payload


def call(environ, payload, n):
    return hook.run(json.dumps(dict(payload, tool_use_id=f"toolu_{n}")).encode(), environ)


def refused(answer):
    return bool(answer) and json.loads(answer)["hookSpecificOutput"]["permissionDecision"] in (
        "deny",
        "ask",
    )


def state_dir(environ):
    return Path(environ["RUNAWAY_GUARD_STATE_DIR"])


@pytest.fixture
def capped(tmp_path):
    environ = {**environment(tmp_path), **CAP}
    _, payload = over_cap_session(tmp_path)
    return environ, payload


def disk_refuses_after(monkeypatch, writes, short=False):
    """fs.write works `writes` more times, then (after half a write, if short) fails with ENOSPC
    for every file but hook.log."""
    real = fs.write
    left = [writes]

    def write(fd, data):
        if os.readlink(f"/proc/self/fd/{fd}").endswith(log.LOG_NAME):
            return real(fd, data)
        if left[0] > 0:
            left[0] -= 1
            return real(fd, data)
        if short and left[0] == 0 and len(data) > 1:
            left[0] = -1  # half of this write lands, then the disk is full
            return real(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(fs, "write", write)
    return lambda: monkeypatch.setattr(fs, "write", real)


def test_a_refusal_is_given_when_nothing_can_be_saved(capped, monkeypatch):
    environ, payload = capped
    assert refused(call(environ, payload, 0))
    restore = disk_refuses_after(monkeypatch, 0)
    assert refused(call(environ, payload, 1))
    restore()
    assert any(" unsaved " in line and "No space" in line for line in log_lines(environ))
    assert not [line for line in log_lines(environ) if " fail-open " in line]


def test_the_first_call_of_a_session_is_judged_on_a_full_disk(capped, monkeypatch):
    """Nothing saved yet: the decision comes from the session files alone."""
    environ, payload = capped
    restore = disk_refuses_after(monkeypatch, 0)
    assert refused(call(environ, payload, 0))
    restore()


@fuzz(60)
@given(writes=st.integers(0, 12), short=st.booleans())
def test_a_disk_that_fills_at_any_write_never_lets_a_refused_call_through(
    tmp_path_factory, writes, short
):
    """Whichever write the disk refuses (the ledger's append, a part, a slot, the day file),
    and whether it refuses a write whole or cuts it short, the refusal goes out; once there is
    space again the session's spend is what a whole read gives, counted once."""
    root = tmp_path_factory.mktemp("fill")
    environ = {**environment(root), **CAP, "RUNAWAY_GUARD_DAILY_USD": "100"}
    _, payload = over_cap_session(root)
    with pytest.MonkeyPatch.context() as monkeypatch:
        restore = disk_refuses_after(monkeypatch, writes, short)
        for n in range(3):
            assert refused(call(environ, payload, n))
        restore()
    assert refused(call(environ, payload, 9))
    whole = {**environment(root / "whole"), **CAP}
    call(whole, payload, 0)
    with ledger.Ledger(str(state_dir(environ)), "claude", "s1") as book:
        mine = book.state["spend"]["total"]
    with ledger.Ledger(str(state_dir(whole)), "claude", "s1") as book:
        assert mine == book.state["spend"]["total"]
    assert ledger_total(environ) == mine


def ledger_total(environ):
    """The spend the session's .ledger file holds: the last line of each response counts."""
    path = state_dir(environ) / "sessions" / "claude" / "s1.ledger"
    known = {}
    for line in path.read_bytes().splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # a line a full disk cut short
        known[entry[0]] = entry
    return sum(entry[1] for entry in known.values())


def test_a_lock_held_too_long_still_gets_the_refusal(capped, monkeypatch):
    environ, payload = capped
    assert refused(call(environ, payload, 0))
    monkeypatch.setattr(state_file, "LOCK_WAIT", 0.05)
    monkeypatch.setattr(state_file.Lock, "__init__", _never_locks)
    assert refused(call(environ, payload, 1))
    assert any(" unsaved " in line and "lock busy" in line for line in log_lines(environ))


def _never_locks(self, path, attempt=None):
    self.path, self.fd, self.attempt = path, None, lambda fd: False


def test_the_persons_control_says_when_it_could_not_be_saved(capped, monkeypatch):
    """Only a hook call judges unsaved: a raised cap that was not written must not say done."""
    environ, payload = capped
    call(environ, payload, 0)
    monkeypatch.setattr(state_file.Lock, "__init__", _never_locks)
    monkeypatch.setattr(state_file, "LOCK_WAIT", 0.05)
    with pytest.raises(TimeoutError), ledger.Ledger(str(state_dir(environ)), "claude", "s1"):
        pass


def test_a_read_only_disk_keeps_a_stopped_session_stopped(tmp_path):
    with tmpfs(tmp_path / "disk", "size=1m") as disk:
        environ = {**environment(tmp_path), **CAP, "RUNAWAY_GUARD_STATE_DIR": str(disk / "s")}
        _, payload = over_cap_session(tmp_path)
        data = json.dumps(dict(payload, tool_use_id="toolu_0")).encode()
        assert refused(run_process(data, environ))
        remounted = subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=False)
        assert remounted.returncode == 0
        data = json.dumps(dict(payload, tool_use_id="toolu_1")).encode()
        assert refused(run_process(data, environ))


def test_a_full_tmpfs_keeps_a_stopped_session_stopped(tmp_path):
    with tmpfs(tmp_path / "disk", "size=64k") as disk:
        environ = {**environment(tmp_path), **CAP, "RUNAWAY_GUARD_STATE_DIR": str(disk / "s")}
        main, payload = over_cap_session(tmp_path)
        assert refused(run_process(json.dumps(dict(payload, tool_use_id="t0")).encode(), environ))
        fill(disk / "filler")
        for n in range(40):  # new responses: the ledger grows while the disk is full
            jsonl(main, [assistant(f"m{n + 2}", use=usage(out=n + 1))])
        for n in range(1, 4):
            data = json.dumps(dict(payload, tool_use_id=f"t{n}")).encode()
            assert refused(run_process(data, environ))


@pytest.mark.parametrize("can_cut_back", [True, False])
def test_an_append_cut_short_neither_merges_nor_loses_lines(tmp_path, monkeypatch, can_cut_back):
    """Half an entry lands, then the disk is full: it is cut back off; where even that fails,
    the next append starts on a line of its own, and no whole entry is lost."""
    path = str(tmp_path / "s.ledger")
    state_file.append_lines(path, b'["a",1,0,"m","main","d"]\n')
    real = fs.write

    def short_then_full(fd, data):
        monkeypatch.setattr(fs, "write", _full)
        return real(fd, bytes(data[:5]))

    monkeypatch.setattr(fs, "write", short_then_full)
    if not can_cut_back:
        monkeypatch.setattr(fs, "ftruncate", _full)
    with pytest.raises(OSError):
        state_file.append_lines(path, b'["b",2,0,"m","main","d"]\n')
    monkeypatch.setattr(fs, "write", real)
    state_file.append_lines(path, b'["c",3,0,"m","main","d"]\n')
    cut = [] if can_cut_back else [b'["b",']
    lines = Path(path).read_bytes().splitlines()
    assert lines == [b'["a",1,0,"m","main","d"]', *cut, b'["c",3,0,"m","main","d"]']


def _full(*args):
    raise OSError(errno.ENOSPC, "No space left on device")


CURSOR = {
    "conversation_id": "c1",
    "generation_id": "g1",
    "hook_event_name": "preToolUse",
    "cursor_version": "2026.06",
    "tool_name": "Write",
    "tool_use_id": "w1",
}


@pytest.mark.parametrize(
    "data",
    [
        json.dumps({**CURSOR, "tool_input": {"content": "x" * (17 << 20)}}).encode(),
        (json.dumps(CURSOR)[:-1] + ',"tool_input":' + "[" * 5000 + "]" * 5000 + "}").encode(),
        json.dumps(CURSOR).encode()[:-1] + b',"x":"\xff\xfe"}',
        json.dumps(CURSOR).encode()[:-20],
    ],
    ids=["17MB", "deep", "invalid-utf8", "cut-short"],
)
def test_a_cursor_payload_the_guard_cannot_read_is_allowed(tmp_path, data):
    environ = environment(tmp_path)
    assert json.loads(run_process(data, environ)) == {"permission": "allow"}
    lines = log_lines(environ)
    assert any(" ignored " in line for line in lines)
    assert not [line for line in lines if " fail-open " in line]


def test_an_unreadable_payload_under_cursors_environment_is_allowed(tmp_path):
    environ = {**environment(tmp_path), "CURSOR_VERSION": "2026.06"}
    assert json.loads(run_process(b"{not json", environ)) == {"permission": "allow"}
    assert run_process(b"{not json", environment(tmp_path)) == ""  # elsewhere: nothing


@pytest.mark.parametrize("problem", ["others-write", "another-owner"])
def test_a_state_folder_others_can_write_is_refused(tmp_path, problem):
    environ = {**environment(tmp_path), **CAP}
    _, payload = over_cap_session(tmp_path)
    folder = state_dir(environ)
    folder.mkdir(mode=0o700)
    if problem == "others-write":
        folder.chmod(0o777)
    else:
        os.chown(folder, 12345, 12345)
    data = json.dumps(dict(payload, tool_use_id="t0")).encode()
    assert run_process(data, environ) == ""  # fails open: nothing planted there is believed
    assert not (folder / "sessions").exists()
    lines = log_lines(environ)
    assert any(" fail-open UnsafeFolder" in line and "chmod 700" in line for line in lines)


def test_a_link_planted_where_a_file_goes_is_not_followed(tmp_path):
    environ = {**environment(tmp_path), **CAP}
    _, payload = over_cap_session(tmp_path)
    victim = tmp_path / "victim"
    victim.write_text("precious")
    folder = state_dir(environ)
    folder.mkdir(mode=0o700)
    (folder / log.LOG_NAME).symlink_to(victim)
    sessions = folder / "sessions" / "claude"
    sessions.mkdir(parents=True, mode=0o700)
    (sessions / "s1.lock").symlink_to(victim)
    run_process(json.dumps(dict(payload, tool_use_id="t0")).encode(), environ)
    assert victim.read_text() == "precious"
