"""The person's controls: a plain status call always passes; loosening a limit is theirs to do.

On Claude Code the guard asks the person before an agent's `--raise-cap`, `--clear` or `--off`
runs; on Codex, which cannot ask, it refuses and names the exact command for the person's own
terminal. The person runs the same commands from status.py, which writes the session's state.
"""

import types

import pytest
from runaway_guard import controls
from test_status import STATUS, Claude, Codex, World, kind

STATE_DIR = "/home/u/.local/state/runaway-guard"
CONFIG = "/home/u/.config/runaway-guard/config.json"


@pytest.fixture
def world(tmp_path):
    return World(tmp_path)


def classify(command=None, tool="Bash", tool_input=None):
    if tool_input is None:
        tool_input = {"command": command}
    call = types.SimpleNamespace(command=command, tool=tool, tool_input=tool_input)
    return controls.classify(call, STATE_DIR, CONFIG)


@pytest.mark.parametrize(
    "command",
    [
        "python3 skill/status.py",
        f"python3 '{STATUS}' --json",
        "python3 /x/runaway-guard/skill/status.py --today --json",
        "python3 skill/status.py --session abc-123 --json",
        "skill/status.py -h",
    ],
)
def test_plain_status_calls(command):
    assert classify(command) == controls.STATUS


@pytest.mark.parametrize(
    "command",
    [
        "python3 skill/status.py --raise-cap 50",
        "python3 skill/status.py --session s1 --clear",
        "python3 skill/status.py --off",
        "python3 skill/status.py --json && python3 skill/status.py --raise-cap 50",
        "RUNAWAY_GUARD_MAX_USD=500 claude -p go",
        f"rm -rf {STATE_DIR}/sessions",
        f"echo '{{}}' > {CONFIG}",
    ],
)
def test_loosening_calls(command):
    assert classify(command) == controls.LOOSEN


@pytest.mark.parametrize(
    "command",
    [
        "ls -la",
        "python3 skill/status.py --json; rm -rf build",  # chained: not a plain status call
        "python3 skill/status.py --json | tee out.txt",
        "python3 skill/status.py --verbose",
    ],
)
def test_other_calls_go_through_the_wires(command):
    assert classify(command) is None


def test_edits_of_the_guards_files_loosen():
    edit = {"file_path": f"{STATE_DIR}/sessions/claude/s1.state", "old_string": "a"}
    assert classify(tool="Edit", tool_input=edit) == controls.LOOSEN
    assert classify(tool="Write", tool_input={"file_path": CONFIG}) == controls.LOOSEN
    assert classify(tool="Edit", tool_input={"file_path": "/repo/app.py"}) is None


# -- through the guard, on both hosts


def stopped_at_cap(world, host):
    proj = world.project("proj")
    session = (Claude if host == "claude" else Codex)(world, proj, f"{host}-capped")
    env = {"RUNAWAY_GUARD_MAX_USD": "1"}
    session.call(**env)
    _, answer = session.call(**env)  # over $1: stopped
    assert kind(answer) == ("stop" if host == "claude" else "deny")
    return proj, session, env


@pytest.mark.parametrize("host", ["claude", "codex"])
def test_the_agent_cannot_lift_its_own_cap(world, host):
    proj, session, env = stopped_at_cap(world, host)

    # A plain status call passes with no output, though the session is stopped at its cap.
    _, answer = session.call(f"python3 '{STATUS}' --json", spend=False, **env)
    assert answer is None
    _, answer = session.call(f"python3 {STATUS}", spend=False, **env)
    assert answer is None

    # The agent tries to raise its cap: Claude Code asks the person, Codex refuses.
    raise_cmd = f"python3 {STATUS} --raise-cap 50"
    _, answer = session.call(raise_cmd, spend=False, **env)
    specific = answer["hookSpecificOutput"]
    if host == "claude":
        assert kind(answer) == "ask"
        assert raise_cmd in specific["permissionDecisionReason"]
    else:
        assert set(answer) == {"hookSpecificOutput"}
        assert set(specific) == {"hookEventName", "permissionDecision", "permissionDecisionReason"}
        assert specific["permissionDecision"] == "deny"
        assert "only the user can loosen" in specific["permissionDecisionReason"]
        assert raise_cmd in specific["permissionDecisionReason"]
    for flag in ("--clear", "--off"):
        _, answer = session.call(f"python3 {STATUS} {flag}", spend=False, **env)
        assert kind(answer) == ("ask" if host == "claude" else "deny")
    # The refusal of the agent changed nothing.
    assert world.state(host, session.session)["cap_usd"] is None

    # The person raises it in their own terminal; the agent goes on.
    code, out, _ = world.status("--raise-cap", "50", cwd=proj, **env)
    assert code == 0 and "cap is now $50.00" in out
    state = world.state(host, session.session)
    assert state["cap_usd"] == 50.0
    assert kind(session.call(**env)[1]) is None
    data = world.status_json(cwd=proj, **env)
    assert data["cap_usd"] == 50.0 and data["refusing"] == []


def test_the_person_approves_the_raise_on_claude(world):
    """Claude Code: the person says yes to the ask, status.py runs as the agent's call."""
    proj, session, env = stopped_at_cap(world, "claude")
    tool_use_id, answer = session.call(f"python3 {STATUS} --raise-cap 40", spend=False, **env)
    assert kind(answer) == "ask"
    code, _, _ = world.status("--raise-cap", "40", cwd=proj, **env)  # what then runs
    assert code == 0
    session.outcome(tool_use_id, "This session's cap is now $40.00")
    assert kind(session.call(**env)[1]) is None


@pytest.mark.parametrize("host", ["claude", "codex"])
def test_clear_a_failure_stop(world, host):
    proj = world.project("proj")
    session = (Claude if host == "claude" else Codex)(world, proj, f"{host}-fails")
    env = {"RUNAWAY_GUARD_MAX_FAILURES": "2"}
    for index in range(2):
        call_id, _ = session.call(f"make {index}", **env)
        if host == "claude":
            session.outcome(call_id, "Exit code 1", error=True)
        else:
            session.outcome(call_id, code=1)
    assert kind(session.call("make 9", spend=False, **env)[1]) == "deny"
    # A status call passes and does not break the failure run.
    assert session.call(f"python3 {STATUS} --json", spend=False, **env)[1] is None
    data = world.status_json(cwd=proj, **env)
    assert data["failures_in_a_row"] == 2
    assert data["blocked"]["wire"] == "failure"
    assert kind(session.call("make 10", spend=False, **env)[1]) in ("ask", "deny")

    code, out, _ = world.status("--clear", cwd=proj, **env)
    assert code == 0 and "Cleared" in out
    state = world.state(host, session.session)
    assert state["blocked"] is None
    assert all(r["fails"] == 0 and r["hist"] == [] for r in state["agents"].values())
    assert kind(session.call("make 11", spend=False, **env)[1]) is None


def test_clear_says_when_the_cap_still_holds(world):
    proj, _, env = stopped_at_cap(world, "claude")
    code, out, _ = world.status("--clear", cwd=proj, **env)
    assert code == 0 and "spend cap still holds" in out and "--raise-cap" in out


@pytest.mark.parametrize("host", ["claude", "codex"])
def test_off_and_on_for_one_session(world, host):
    proj, session, env = stopped_at_cap(world, host)
    code, out, _ = world.status("--off", cwd=proj, **env)
    assert code == 0 and "off for this session" in out
    assert session.call(**env)[1] is None  # the guard refuses nothing
    data = world.status_json(cwd=proj, **env)
    assert data["off"] is True and data["off_by"] == "session"
    assert data["spend_usd"] > 1.5  # but keeps counting
    code, out, _ = world.status("--on", cwd=proj, **env)
    assert code == 0
    assert kind(session.call(**env)[1]) in ("stop", "deny")
