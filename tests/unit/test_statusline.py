"""status.py --statusline: the line a host's status line shows, from the guard's state only."""

import json
import subprocess
import sys

import pytest
from guard_env import GUARD, fuzz
from hypothesis import given
from hypothesis import strategies as st
from runaway_guard import statusline
from test_status import BIG_USD, STATUS, Claude, World


@pytest.fixture
def world(tmp_path):
    return World(tmp_path)


def line(world, payload, **env):
    """status.py --statusline's line, checked to be guard.py --statusline's (the installer's)."""
    shown = [_line(world, script, payload, env) for script in (STATUS, GUARD)]
    assert shown[0] == shown[1]
    return shown[0]


def _line(world, script, payload, env):
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    done = subprocess.run(
        [sys.executable, "-I", "-S", str(script), "--statusline"],
        input=data,
        capture_output=True,
        env={**world.env, **env},
        timeout=60,
        check=False,
    )
    assert done.returncode == 0 and done.stderr == b""
    return done.stdout.decode()


def claude_payload(session):
    """What Claude Code 2.1.332 passes its statusLine command (the fields the line reads)."""
    return {
        "hook_event_name": "Status",
        "session_id": session.session,
        "transcript_path": str(session.transcript),
        "cwd": str(session.project),
        "model": {"id": "claude-opus-4-6", "display_name": "Opus"},
        "workspace": {"current_dir": str(session.project), "project_dir": str(session.project)},
        "cost": {"total_cost_usd": 123.0},
    }


def test_the_line_follows_spend_warning_and_stop(world):
    session = Claude(world, world.project("proj"), "s-line")
    # the warning at half the cap: $1.10 of $2 with about $0.69 next is under the ceiling
    env = {
        "RUNAWAY_GUARD_MAX_USD": "2",
        "RUNAWAY_GUARD_WARN_AT": "0.5",
        "RUNAWAY_GUARD_DAILY_USD": "100",
    }
    assert line(world, claude_payload(session), **env) == (
        "guard $0.00 / $2.00 · today $0.00 / $100.00 · ok\n"
    )
    session.call(**env)  # $0.55
    shown = line(world, claude_payload(session), **env)
    assert shown == f"guard ${BIG_USD:.2f} / $2.00 · today ${BIG_USD:.2f} / $100.00 · ok\n"
    session.call(**env)  # $1.10 of 2: the warning
    assert line(world, claude_payload(session), **env).endswith(" · warned\n")
    session.call(**env)  # the next response would cross the cap: stopped
    assert line(world, claude_payload(session), **env).endswith(" · stopped: session\n")


def test_the_line_shows_the_projects_day_under_a_project_cap(world):
    session = Claude(world, world.project("proj"), "s-project")
    env = {"RUNAWAY_GUARD_PROJECT_DAILY_USD": "5"}
    session.call(**env)
    shown = line(world, claude_payload(session), **env)
    assert f" · project ${BIG_USD:.2f} / $5.00 · ok" in shown
    assert " · project " not in line(world, claude_payload(session))  # no cap, not shown


def test_the_line_reads_no_session_file(world):
    """The host's own figure and transcript are not the guard's: only its state counts."""
    session = Claude(world, world.project("proj"), "s-files")
    session.call()
    session.transcript.unlink()
    shown = f"guard ${BIG_USD:.2f} / $25.00 · today ${BIG_USD:.2f} · ok\n"
    assert line(world, claude_payload(session)) == shown


def test_a_payload_without_a_session_prints_nothing(world):
    for payload in (b"", b"not json", b"[1]", b'{"session_id": 5}', b"{}", b"\xff" * 40):
        assert line(world, payload) == ""


@fuzz(300)
@given(
    st.one_of(
        st.binary(max_size=200),
        st.dictionaries(
            st.sampled_from(["session_id", "cwd", "workspace", "sessionId"]),
            st.recursive(
                st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                lambda inner: (
                    st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=12), inner, max_size=3)
                ),
                max_leaves=6,
            ),
        ).map(lambda value: json.dumps(value).encode()),
    )
)
def test_any_payload_gives_one_line_or_nothing(tmp_path_factory, data):
    world = World(tmp_path_factory.mktemp("line"))
    text = statusline.line(data, world.env)
    assert text == "" or ("\n" not in text and text.startswith("guard"))
