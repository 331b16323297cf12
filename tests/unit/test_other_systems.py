"""macOS and Windows by test doubles: the Linux-only facilities taken away (/proc, posix and its
record locks, a POSIX path), the guard still judges and refuses; ending a run from outside
degrades to the refusal alone, with its `stop` line. README, "Operating systems"."""

import json
import subprocess
import sys

import pytest
from guard_env import SKILL
from runaway_guard import fs
from runaway_guard.calls import Call
from runaway_guard.hosts import _procs, codex, copilot
from runaway_guard.hosts.codex import rollout

# ps as macOS shows it: pid -> (ppid, comm, args); the Codex app's path has a space in it
PS = {
    4_000_003: (4_000_002, "/usr/bin/python3", "/usr/bin/python3 -I -S /x/skill/guard.py"),
    4_000_002: (4_000_001, "/bin/zsh", "/bin/zsh -c python3 -I -S /x/skill/guard.py"),
    4_000_001: (1, "/Applications/Codex Tools/codex", "/Applications/Codex Tools/codex exec go"),
}


def fake_ps(argv, environ=None):
    pid = int(argv[-1])
    if pid not in PS:
        return ""
    parent, comm, args = PS[pid]
    if "comm=" in argv:
        return f"{parent:>6} {comm}\n"
    return args + "\n"


@pytest.fixture
def macos(monkeypatch):
    """No /proc: every lookup goes to `ps` (here the table above)."""
    real_isdir = fs.isdir
    monkeypatch.setattr(fs, "isdir", lambda p: False if p.startswith("/proc") else real_isdir(p))
    monkeypatch.setattr(_procs, "output", fake_ps)
    monkeypatch.setattr(fs, "getppid", lambda: 4_000_003)


def test_macos_finds_the_codex_above_the_hook_through_ps(macos):
    pid, argv = _procs.nearest(("codex", "codex.exe"))
    assert pid == 4_000_001
    assert argv == ["/Applications/Codex Tools/codex", "exec", "go"]
    assert codex._mode(argv) == "exec"


def test_macos_interrupts_codex_exec_without_proc(macos, monkeypatch):
    sent, notes = [], []
    monkeypatch.setattr(codex, "END_WAIT_S", 0)
    monkeypatch.setattr(codex.fs, "kill", lambda pid, sig: sent.append((pid, sig)))
    codex.end_run(Call("codex", "s", transcript_path="/r.jsonl"), {}, notes.append)
    assert [pid for pid, _ in sent] == [4_000_001]
    assert notes == ["interrupting codex exec (pid 4000001) with SIGINT, as Ctrl-C"]


def test_the_real_ps_reads_like_procs(monkeypatch):
    """This machine's ps (procps) answers the same columns macOS's does."""
    here = _procs.process(fs.getpid())
    assert here is not None
    assert _procs.from_ps(fs.getpid())[0] == here[0]
    assert fs.basename(_procs.from_ps(fs.getpid())[1][0]).startswith("python")


def test_no_proc_and_no_ps_is_a_refusal_with_a_stop_line(monkeypatch):
    monkeypatch.setattr(fs, "isdir", lambda p: False)
    monkeypatch.setattr(_procs, "output", lambda argv, environ=None: "")
    monkeypatch.setattr(codex.fs, "kill", lambda *a: pytest.fail("signalled"))
    notes = []
    codex.end_run(Call("codex", "s"), {}, notes.append)
    assert notes == ["deny only: no codex process among the hook's ancestors"]


@pytest.mark.parametrize("host", [codex, copilot])
def test_windows_never_signals_a_host(monkeypatch, host):
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setattr(host.fs, "kill", lambda *a: pytest.fail("os.kill terminates on Windows"))
    monkeypatch.setattr(_procs, "nearest", lambda names: pytest.fail("looked for a process"))
    notes = []
    host.end_run(Call(host.NAME, "s"), {}, notes.append)
    assert notes == [
        "deny only: Windows has no Ctrl-C for another process (os.kill would terminate it)"
    ]


def codex_call(n, **fields):
    payload = {
        "session_id": "win-1",
        "turn_id": "t",
        "transcript_path": None,
        "cwd": "/tmp",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "dir"},
        "tool_use_id": f"c{n}",
    }
    payload.update(fields)
    return payload


def kinds(lines):
    return [
        json.loads(line)["hookSpecificOutput"].get("permissionDecision") if line else None
        for line in lines
    ]


def test_a_windows_working_folder_still_gets_the_loop_refused(guard_env):
    lines = [guard_env.run(codex_call(n, cwd=r"C:\Users\me\proj")) for n in range(6)]
    assert kinds(lines) == [None] * 5 + ["deny"]
    log = guard_env.state_dir / "hook.log"
    assert not log.exists() or "fail-open" not in log.read_text()


def test_windows_rollout_paths_split_at_backslashes(monkeypatch):
    """fs's names are ntpath's on Windows: a rollout's folder, its name and its day folder."""
    import ntpath

    from runaway_guard.hosts import _files

    for name in ("dirname", "join", "basename"):
        monkeypatch.setattr(fs, name, getattr(ntpath, name))
    monkeypatch.setattr(fs, "sep", "\\")
    day = r"C:\Users\me\.codex\sessions\2026\12\05"
    assert _files._split(day + r"\rollout-a.jsonl") == (day + "\\", "rollout-a.jsonl")
    looked = []
    monkeypatch.setattr(fs, "isdir", lambda path: looked.append(path) or True)
    folders = rollout._day_folders(day)
    assert folders[0] == day and len(folders) >= 2
    assert all(p.startswith(r"C:\Users\me\.codex\sessions\20") for p in looked)


NO_POSIX = """
import json, os, sys
sys.modules["posix"] = None  # as on Windows: the fs layer falls back to os, no record locks
sys.modules["nt"] = os  # where Windows has `stat`
sys.path.insert(0, {skill!r})
from runaway_guard import fs, hook
assert fs.lockf is None and fs.getuid is None and fs.O_NOFOLLOW == 0
print(json.dumps([hook.run(json.dumps(call).encode(), {env!r}) for call in {calls!r}]))
"""


def test_without_posix_and_its_locks_the_guard_still_refuses_the_loop(guard_env):
    calls = [codex_call(n) for n in range(6)]
    script = NO_POSIX.format(skill=str(SKILL), env=guard_env.env, calls=calls)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert kinds(json.loads(done.stdout)) == [None] * 5 + ["deny"]
    log = guard_env.state_dir / "hook.log"
    assert not log.exists() or "fail-open" not in log.read_text()


SELF_CHECK_NO_POSIX = """
import os, sys, tempfile  # tempfile (shutil) imports posix on this system, not the guard's fs
sys.modules["posix"] = None
sys.modules["nt"] = os
sys.argv = [{guard!r}, "--self-check", "--host", "codex"]
sys.path.insert(0, {skill!r})
__file__ = sys.argv[0]
exec(compile(open(__file__).read(), __file__, "exec"))
"""


def test_the_self_check_names_what_this_system_lacks(guard_env):
    script = SELF_CHECK_NO_POSIX.format(guard=str(SKILL / "guard.py"), skill=str(SKILL))
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        env=guard_env.env,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("runaway-guard works: codex refused a repeated call; ")
    assert "on this system, no file locks" in done.stdout
    here = subprocess.run(
        [sys.executable, str(SKILL / "guard.py"), "--self-check", "--host", "codex"],
        capture_output=True,
        text=True,
        timeout=60,
        env=guard_env.env,
    )
    assert here.stdout == "runaway-guard works: codex refused a repeated call\n"
