"""The Codex stop: which process the guard interrupts, and that it never touches another.

A fake `codex` (bash started with argv[0] = "codex", so its command line reads like the real
one's) runs the guard's `end_run` as its child, the way Codex runs a hook; it records a
SIGINT if it gets one. The real runs are in tests/e2e/test_codex.py.
"""

import json
import os
import shutil
import subprocess
import sys

import pytest
from guard_env import GUARD, ROOT, SKILL
from hypothesis import given
from hypothesis import strategies as st
from runaway_guard.hosts import codex

FIXTURE = ROOT / "tests" / "fixtures" / "codex" / "usage"

HOOK = """
import os, sys
sys.path.insert(0, {skill!r})
from runaway_guard.calls import Call
from runaway_guard.hosts import codex
codex.END_WAIT_S = 0
def note(text):
    with open({notes!r}, "a") as handle:
        handle.write(text + "\\n")
call = Call("codex", "s-1", transcript_path={rollout!r})
codex.end_run(call, dict(os.environ), note)
"""


def under_codex(tmp_path, args, command, rollout, hold=True, env=None, stdin=""):
    """Run command under a fake `codex <args>` (holding rollout open unless told); (what the
    command printed, whether codex got SIGINT). Like Codex, the fake kills its hook when it is
    interrupted."""
    marker = tmp_path / "sigint"
    script = (
        f"trap 'echo SIGINT >> {marker}; kill $!' INT; "
        + (f"exec 3>>{rollout}; " if hold else "")
        + f"sh -c 'exec {command}' <&0 & wait $!; true"
    )
    base = {k: v for k, v in os.environ.items() if not k.startswith("TMUX")}
    done = subprocess.run(
        ["codex", "-c", script, *args],
        executable="/bin/bash",
        env={**base, **(env or {})},
        input=stdin,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout, marker.exists()


def fake_codex(tmp_path, *args, hold=True, env=None):
    """The guard's interrupt under a fake `codex <args>`; (its notes, whether codex got SIGINT)."""
    rollout = tmp_path / "rollout-1.jsonl"
    rollout.write_text("")
    notes = tmp_path / "notes"
    hook = tmp_path / "hook.py"
    hook.write_text(HOOK.format(skill=str(SKILL), rollout=str(rollout), notes=str(notes)))
    _, interrupted = under_codex(
        tmp_path, args, f"{sys.executable} {hook}", rollout, hold=hold, env=env
    )
    return notes.read_text().splitlines(), interrupted


def test_codex_exec_gets_ctrl_c(tmp_path):
    notes, interrupted = fake_codex(tmp_path, "exec", "--json", "go")
    assert interrupted
    assert notes[0].startswith("interrupting codex exec (pid ")


def test_a_codex_that_does_not_hold_this_rollout_is_left_alone(tmp_path):
    notes, interrupted = fake_codex(tmp_path, "exec", "go", hold=False)
    assert not interrupted
    assert "does not hold this session's rollout open" in notes[0]


@pytest.mark.parametrize(
    "args, why",
    [
        (["app-server", "--listen", "unix://"], "deny only: codex app-server"),
        (["--remote", "unix:///x.sock", "go"], "deny only: codex remote"),
        (["exec", "--remote=ws://h", "go"], "deny only: codex remote"),
        (["mcp-server"], "deny only: codex mcp-server"),
        (["go"], "is not in a tmux pane of its own"),  # the TUI, no tmux
    ],
)
def test_deny_only_where_no_clean_stop_exists(tmp_path, args, why):
    notes, interrupted = fake_codex(tmp_path, *args)
    assert not interrupted
    assert why in notes[0], notes


def test_a_tmux_pane_that_is_not_the_tuis_terminal_gets_no_keys(tmp_path):
    # TMUX_PANE names a pane, but codex's terminal is not that pane's (a popup, a nested
    # terminal, a stale variable): nothing is typed anywhere.
    env = {"TMUX": "/nonexistent/socket,1,0", "TMUX_PANE": "%0"}
    notes, interrupted = fake_codex(tmp_path, "resume", "--last", env=env)
    assert not interrupted
    assert "is not in a tmux pane of its own" in notes[0]


def test_no_codex_among_the_ancestors(tmp_path):
    notes = tmp_path / "notes"
    hook = tmp_path / "hook.py"
    hook.write_text(HOOK.format(skill=str(SKILL), rollout=str(tmp_path / "r"), notes=str(notes)))
    subprocess.run([sys.executable, str(hook)], check=True, timeout=30)
    assert notes.read_text().splitlines() == [
        "deny only: no codex process among the hook's ancestors"
    ]


@pytest.mark.parametrize(
    "argv, mode",
    [
        (["codex"], "tui"),
        (["codex", "fix the bug"], "tui"),
        (["/usr/bin/codex", "-m", "gpt-5.5", "--search", "resume", "--last"], "tui"),
        (["codex", "fork", "abc"], "tui"),
        (["codex", "exec", "go"], "exec"),
        (["codex", "-c", "model=x", "--enable", "y", "e", "go"], "exec"),
        (["codex", "--dangerously-bypass-hook-trust", "exec", "--json", "resume"], "exec"),
        (["codex", "-s", "exec", "go"], "tui"),  # "exec" is the sandbox's value here
        (["codex", "app-server"], "app-server"),
        (["codex", "review"], "review"),
        (["codex", "--", "exec"], "exec"),
    ],
)
def test_mode_from_the_command_line(argv, mode):
    assert codex._mode(argv) == mode


@given(st.lists(st.text(max_size=12), max_size=8))
def test_mode_reads_any_command_line(argv):
    assert isinstance(codex._mode(["codex", *argv]), str)


@pytest.mark.parametrize("interrupt", ["1", "0"])
def test_the_guard_interrupts_codex_exec_at_the_cap_unless_told_not_to(tmp_path, interrupt):
    """The whole hook as Codex runs it: the deny is printed, then codex exec gets Ctrl-C."""
    shutil.copytree(FIXTURE / "sessions", tmp_path / "sessions")
    rollout = next((tmp_path / "sessions").glob("*/*/*/rollout-*.jsonl"))
    payload = json.loads((FIXTURE / "hook_inputs.jsonl").read_text().splitlines()[0])
    payload.update(transcript_path=str(rollout), cwd=str(tmp_path))
    env = {
        "RUNAWAY_GUARD_STATE_DIR": str(tmp_path / "state"),
        "RUNAWAY_GUARD_MAX_USD": "0.01",  # the first response already costs more
        "RUNAWAY_GUARD_INTERRUPT": interrupt,
    }
    command = f"{sys.executable} -I -S {GUARD}"
    out, interrupted = under_codex(
        tmp_path, ["exec", "go"], command, rollout, env=env, stdin=json.dumps(payload)
    )
    answer = json.loads(out)["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny"
    assert "spend cap is reached" in answer["permissionDecisionReason"]
    assert interrupted == (interrupt == "1")
    log = (tmp_path / "state" / "hook.log").read_text() if interrupt == "1" else ""
    assert ("stop interrupting codex exec" in log) == (interrupt == "1")


def test_calls_stopped_together_interrupt_once(guard_env, tmp_path):
    from runaway_guard import hook

    shutil.copytree(FIXTURE / "sessions", tmp_path / "sessions")
    rollout = next((tmp_path / "sessions").glob("*/*/*/rollout-*.jsonl"))
    payload = json.loads((FIXTURE / "hook_inputs.jsonl").read_text().splitlines()[0])
    payload.update(transcript_path=str(rollout), cwd=str(tmp_path))
    scheduled = []
    for n in range(3):  # parallel calls at the cap, or one call seen by two installs
        payload["tool_use_id"] = f"call-{n}"
        assert "spend cap is reached" in guard_env.run(payload, RUNAWAY_GUARD_MAX_USD="0.01")
        scheduled.append(interrupts(hook._after))
    assert scheduled == [1, 0, 0]
    payload["tool_use_id"] = "call-off"
    guard_env.run(payload, RUNAWAY_GUARD_MAX_USD="0.01", RUNAWAY_GUARD_INTERRUPT="0")
    assert interrupts(hook._after) == 0


def interrupts(after):
    """How many of what the hook does after its answer are Codex's end_run (a notification's
    sender may be among them too)."""
    return sum(step[0] is codex.end_run for step in after)
