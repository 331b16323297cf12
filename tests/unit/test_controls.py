"""The person's controls: a plain status call always passes; loosening a limit is theirs to do.

On Claude Code the guard asks the person before an agent's `--raise-cap`, `--clear` or `--off`
runs; on Codex, which cannot ask, it refuses and names the exact command for the person's own
terminal. The person runs the same commands from status.py, which writes the session's state.
"""

import types

import pytest
from guard_env import ROOT, fuzz
from hypothesis import given
from hypothesis import strategies as st
from runaway_guard import controls
from runaway_guard.control_words import LOOSEN
from runaway_guard.control_words import STATUS as STATUS_CALL
from test_status import STATUS, Claude, Codex, World, kind

HOME = "/home/u"
ENVIRON = {"HOME": HOME}
STATE_DIR = f"{HOME}/.local/state/runaway-guard"
CONFIG_DIR = f"{HOME}/.config/runaway-guard"
CONFIG = f"{CONFIG_DIR}/config.json"
PROJECT = f"{HOME}/proj"
OWN = str(ROOT / "skill")


@pytest.fixture
def world(tmp_path):
    return World(tmp_path)


def classify(command=None, tool="Bash", tool_input=None, cwd=PROJECT):
    if tool_input is None:
        tool_input = {"command": command}
    call = types.SimpleNamespace(
        command=command if tool == "Bash" else None, tool=tool, tool_input=tool_input, cwd=cwd
    )
    return controls.classify(call, STATE_DIR, CONFIG, ENVIRON)


@pytest.mark.parametrize(
    ("command", "cwd"),
    [
        (f"python3 {STATUS}", PROJECT),
        (f"python3 '{STATUS}' --json", PROJECT),
        (f"python3 {STATUS} --today --json", PROJECT),
        (f"python3 {STATUS} --month --json", PROJECT),
        (f"python3 {STATUS} --month 2026-11 --json", PROJECT),
        (f"python3 {STATUS} --session abc-123 --json", PROJECT),
        (f"{STATUS} -h", PROJECT),
        ("python3 skill/status.py --json", str(ROOT)),  # relative to the call's folder
        ("python3 status.py", OWN),
        (f"cd {ROOT} && python3 skill/status.py --json", PROJECT),  # as SKILL.md says
        (f"python3 {OWN}/../skill/status.py --json 2>&1", PROJECT),
    ],
)
def test_plain_status_calls(command, cwd):
    assert classify(command, cwd=cwd) == STATUS_CALL


def test_a_link_to_the_guards_status_py_is_its_status_py(tmp_path):
    (tmp_path / "status.py").symlink_to(STATUS)
    assert classify("python3 status.py --json", cwd=str(tmp_path)) == STATUS_CALL


@pytest.mark.parametrize(
    "command",
    [
        "python3 status.py --json",  # the repository's own status.py
        "python3 ./status.py",
        "python3 /x/runaway-guard/skill/status.py --today --json",  # another copy
        f"cd {OWN} && cd /tmp && python3 status.py",
    ],
)
def test_another_status_py_is_an_ordinary_call(tmp_path, command):
    (tmp_path / "status.py").write_text("print('not the guard')\n")
    assert classify(command, cwd=str(tmp_path)) is None


# Every spelling an agent may use to change the guard's config, state or own files.
LOOSENING = [
    f"python3 {STATUS} --raise-cap 50",
    f"python3 {STATUS} --session s1 --clear",
    f"python3 {STATUS} --off",
    f"python3 {STATUS} --rai 50",  # argparse takes a prefix
    f"python3 {STATUS} --r 50",
    f"python3 {STATUS} --cl",
    "python3 -c \"import os; os.remove('/home/u/.config/runaway-guard/config.json')\" x/status.py",
    f"python3 {STATUS} --json && python3 {STATUS} --raise-cap 50",
    f"echo --off | xargs python3 {STATUS}",
    "python3 status.py --raise-cap 50",  # any status.py: the flags say what it is for
    "RUNAWAY_GUARD_MAX_USD=500 claude -p go",
    "export RUNAWAY_GUARD_OFF=1",
    "echo 'export RUNAWAY_GUARD_OFF=1' >> ~/.bashrc",
    "env -u RUNAWAY_GUARD_MAX_USD claude -p go",
    f"rm -rf {STATE_DIR}/sessions",
    f"echo '{{}}' > {CONFIG}",
    """echo '{"off":true}' > ~/.config/runaway-guard/config.json""",
    """echo '{"off":true}' > $HOME/.config/runaway-guard/config.json""",
    """echo '{"off":true}' > ${HOME}/.config/runaway-guard/config.json""",
    'echo \'{"off":true}\' > "$HOME/.config/runaway-guard/config.json"',
    """echo '{"off":true}' > $XDG_CONFIG_HOME/runaway-guard/config.json""",
    """echo '{"off":true}' >> ~/.config/runaway-guard/config.json""",
    """echo '{"off":true}' >| ~/.config/runaway-guard/config.json""",
    """echo '{"off":true}' &> ~/.config/runaway-guard/config.json""",
    """printf '{"off":true}' 1>~/.config/runaway-guard/config.json""",
    """echo '{"off":true}' | tee ~/.config/runaway-guard/config.json""",
    """echo '{"off":true}' | sudo tee -a ~/.config/runaway-guard/config.json >/dev/null""",
    "cat > ~/.config/runaway-guard/config.json <<'EOF'\n{\"off\": true}\nEOF",
    "cp /tmp/loose.json ~/.config/runaway-guard/config.json",
    "cp -t ~/.config/runaway-guard /tmp/config.json",
    "mv /tmp/loose.json ~/.config/runaway-guard/config.json",
    "mv ~/.config/runaway-guard/config.json /tmp/",
    "ln -sf /tmp/loose.json ~/.config/runaway-guard/config.json",
    "sed -i 's/25/2500/' ~/.config/runaway-guard/config.json",
    "sed -Ei.bak 's/25/2500/' $HOME/.config/runaway-guard/config.json",
    "truncate -s0 ~/.config/runaway-guard/config.json",
    "dd if=/tmp/x of=$HOME/.config/runaway-guard/config.json",
    "rm -rf ~/.local/state/runaway-guard",
    "rm -rf $HOME/.local/state/runaway-guard",
    "rm -rf ${XDG_STATE_HOME}/runaway-guard",
    'rm -rf "$RUNAWAY_GUARD_STATE_DIR"',
    "rm -rf ~/.local/state",  # the folder that holds it
    "rm -rf ~/.local/state/runaway-*",
    "rm -r ~/.config/runaway-guard",
    "find ~/.local/state/runaway-guard -name '*.state' -delete",
    "find ~/.local/state/runaway-guard -type f | xargs rm",
    'find ~/.local/state/runaway-guard -type f | while read f; do rm "$f"; done',
    "for f in ~/.local/state/runaway-guard/*; do rm $f; done",
    "cd ~/.config/runaway-guard && echo '{}' > config.json",
    "cd ~/.config && rm -rf runaway-guard",
    "cd ~/.local/state/runaway-guard; rm -rf *",
    "python3 -c \"open('/home/u/.config/runaway-guard/config.json', 'w').write('{}')\"",
    "python3 -c 'import os; os.remove(os.path.expanduser(\"~/.config/runaway-guard/x\"))'",
    "python3 - <<EOF\nimport shutil\nshutil.rmtree('/home/u/.local/state/runaway-guard')\nEOF",
    "echo \"import os; os.remove('$HOME/.config/runaway-guard/config.json')\" | python3",
    "node -e \"require('fs').rmSync(process.env.HOME + '/.local/state/runaway-guard', {})\"",
    "bash -c 'rm -rf ~/.local/state/runaway-guard'",
    "sh -c \"echo '{}' > \\$HOME/.config/runaway-guard/config.json\"",
    "eval 'rm -rf ~/.local/state/runaway-guard'",
    'echo "$(rm -rf ~/.local/state/runaway-guard)"',
    "ls `rm -rf ~/.local/state/runaway-guard`",
    "D=~/.config/runaway-guard; rm -rf $D",
    "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: ../.config/runaway-guard/config.json\n"
    '@@\n-{}\n+{"off": true}\n*** End Patch\nEOF',
    f"sed -i 's/refuse/allow/' {OWN}/runaway_guard/hook.py",
    f"echo 'raise SystemExit' > {OWN}/guard.py",
    f"rm -rf {OWN}",
    "unset RUNAWAY_GUARD_MAX_USD",
    "bash <<'EOF'\nrm -rf ~/.local/state/runaway-guard\nEOF",
    "python3 <<< \"import shutil; shutil.rmtree('$HOME/.local/state/runaway-guard')\"",
    "git checkout HEAD~3 -- .runaway-guard.json",
    "rm .runaway-guard.json",
    "echo '{}' > .runaway-guard.json",
]


@pytest.mark.parametrize("command", LOOSENING)
def test_loosening_calls(command):
    assert classify(command) == LOOSEN


@pytest.mark.parametrize(
    ("command", "cwd"),
    [
        ("echo '{}' > config.json", CONFIG_DIR),
        ("rm -rf .", STATE_DIR),
        ("rm -rf ../runaway-guard", f"{STATE_DIR}/sessions"),
        ("git checkout .", OWN),
        ("rm -rf sessions", STATE_DIR),
    ],
)
def test_relative_paths_from_a_guarded_folder_loosen(command, cwd):
    assert classify(command, cwd=cwd) == LOOSEN


@pytest.mark.parametrize(
    "command",
    [
        "ls -la",
        "cat ~/.config/runaway-guard/config.json",
        "cat $HOME/.config/runaway-guard/config.json",
        "jq .max_usd ~/.config/runaway-guard/config.json",
        "ls -la ~/.local/state/runaway-guard/",
        "head -n 5 ~/.local/state/runaway-guard/hook.log",
        "tail -f $XDG_STATE_HOME/runaway-guard/hook.log",
        "grep -r max_usd ~/.config/runaway-guard",
        "find ~/.local/state/runaway-guard -name '*.state'",
        "cat ~/.config/runaway-guard/config.json | jq .",
        "cp ~/.config/runaway-guard/config.json /tmp/backup.json",  # a copy out only reads
        "echo $RUNAWAY_GUARD_STATE_DIR",
        "cat .runaway-guard.json",
        "git commit -m 'runaway-guard: fix the cap'",
        "grep -rn RUNAWAY_GUARD_ README.md",
        "git commit -m \"$(cat <<'EOF'\nFix the runaway-guard (cap) check\nEOF\n)\"",
        "python3 -m pip install runaway-guard",
        "cat <<EOF > notes.md\nThe runaway-guard config lives in ~/.config/runaway-guard\nEOF",
        f"python3 {STATUS} --json | jq .spend_usd",  # not plain: judged by the wires
        f"python3 {STATUS} --json; rm -rf build",
        f"python3 {STATUS} --json | tee out.txt",
        f"python3 {STATUS} --verbose",
    ],
)
def test_reads_and_other_calls_go_through_the_wires(command):
    assert classify(command) is None


def test_a_command_too_long_to_read_loosens_when_it_names_a_guarded_folder():
    padding = "x" * (70 << 10)
    assert classify(f"echo {padding} > ~/.config/runaway-guard/config.json") == LOOSEN
    assert classify(f"echo {padding} runaway") is None


def test_reading_in_a_guarded_folder_goes_through_the_wires():
    assert classify("cat config.json", cwd=CONFIG_DIR) is None
    assert classify("ls -la", cwd=STATE_DIR) is None


def test_the_common_call_is_not_read_word_by_word(monkeypatch):
    def read(*args):
        raise AssertionError("read word by word")

    monkeypatch.setattr(controls, "_read_command", read)
    for command in ("ls -la", "npm test && git status", "python3 -m pytest -q"):
        assert classify(command) is None


# Each host's file tools, in the shapes their payloads give (tests/fixtures/<host>/).
FILE_TOOLS = [
    ("Write", {"file_path": CONFIG, "content": '{"off": true}'}),  # Claude Code, Cursor
    ("Edit", {"file_path": CONFIG, "old_string": "25", "new_string": "2500"}),
    ("Edit", {"file_path": f"{OWN}/guard.py", "old_string": "a", "new_string": "b"}),
    ("Write", {"file_path": f"{STATE_DIR}/sessions/claude/s1.state", "content": ""}),
    ("Write", {"file_path": "~/.config/runaway-guard/config.json", "content": "{}"}),
    ("Write", {"file_path": "../.config/runaway-guard/config.json", "content": "{}"}),
    ("Write", {"path": CONFIG, "file_text": "{}"}),  # Copilot CLI's create
    ("Edit", {"path": CONFIG, "old_str": "25", "new_str": "2500"}),  # Copilot CLI's edit
    ("Write", {"filePath": CONFIG, "content": "{}"}),  # OpenCode's write
    ("NotebookEdit", {"notebook_path": f"{OWN}/x.ipynb", "new_source": ""}),  # unmapped
    ("Edit", {"command": f"*** Begin Patch\n*** Delete File: {CONFIG}\n*** End Patch"}),  # Codex
    ("Edit", {"patchText": "*** Begin Patch\n*** Add File: ../.config/runaway-guard/config.json"}),
    ("Edit", {"command": f"--- a/hook.py\n+++ b/{OWN}/runaway_guard/hook.py\n@@ -1 +1 @@"}),
    ("Write", {"file_path": f"{PROJECT}/.runaway-guard.json", "content": "{}"}),
    ("mcp__fs__delete_file", {"path": CONFIG}),
    ("mcp__fs__move_file", {"source": CONFIG, "destination": "/tmp/c.json"}),
]


@pytest.mark.parametrize(("tool", "tool_input"), FILE_TOOLS)
def test_file_tools_aimed_at_the_guard_loosen(tool, tool_input):
    assert classify(tool=tool, tool_input=tool_input) == LOOSEN


def test_file_tools_relative_to_a_guarded_folder_loosen():
    write = {"file_path": "config.json", "content": "{}"}
    assert classify(tool="Write", tool_input=write, cwd=CONFIG_DIR) == LOOSEN
    patch = {"command": "*** Begin Patch\n*** Update File: hook.py\n"}
    assert classify(tool="Edit", tool_input=patch, cwd=f"{OWN}/runaway_guard") == LOOSEN


@pytest.mark.parametrize(
    ("tool", "tool_input"),
    [
        ("Edit", {"file_path": "/repo/app.py", "old_string": "a"}),
        ("Write", {"file_path": "notes/runaway-guard.md", "content": CONFIG}),
        ("Read", {"file_path": CONFIG}),
        ("Edit", {"command": "*** Begin Patch\n*** Update File: src/main.rs\n"}),
        ("TodoWrite", {"todos": [{"content": f"edit {CONFIG}"}]}),
    ],
)
def test_other_file_tool_calls_go_through_the_wires(tool, tool_input):
    assert classify(tool=tool, tool_input=tool_input) is None


# -- a property over spellings

PLACES = {
    "config": [
        "~/.config/runaway-guard",
        "$HOME/.config/runaway-guard",
        "${HOME}/.config/runaway-guard",
        "$XDG_CONFIG_HOME/runaway-guard",
        CONFIG_DIR,
    ],
    "state": [
        "~/.local/state/runaway-guard",
        "${XDG_STATE_HOME}/runaway-guard",
        "$RUNAWAY_GUARD_STATE_DIR",
        STATE_DIR,
    ],
}
WRITERS = [
    "echo '{{}}' > {}",
    "echo x >> {}",
    "printf x | tee {}",
    "printf x | tee -a {}",
    "cp /tmp/x {}",
    "mv /tmp/x {}",
    "rm -f {}",
    "rm -rf {}",
    "sed -i s/a/b/ {}",
    "touch {}",
    "truncate -s 0 {}",
    "ln -sf /tmp/x {}",
    "install -m 600 /tmp/x {}",
    "chmod 777 {}",
]
READS = ["cat {}", "head -c 100 {}", "ls -l {}", "wc -c {}", "jq . {}", "grep -c x {}", "stat {}"]


def _spelled(draw, template, place, name, quote):
    path = f"{place}/{name}" if name else place
    if quote and not path.startswith("~"):
        path = f'"{path}"'
    command = template.format(path)
    return (
        draw(st.sampled_from(["", "cd /tmp && ", "sudo ", "true; ", "set -e\n"]))
        + command
        + draw(st.sampled_from(["", " 2>&1", " && echo done", " || true", "; ls"]))
    )


@fuzz(300)
@given(st.data())
def test_every_spelling_of_a_write_loosens_and_every_read_passes(data):
    draw = data.draw
    folder = draw(st.sampled_from(sorted(PLACES)))
    place = draw(st.sampled_from(PLACES[folder]))
    name = draw(st.sampled_from(["config.json", "", "sessions/claude/s1.state", "hook.log"]))
    quote = draw(st.booleans())
    writer = _spelled(draw, draw(st.sampled_from(WRITERS)), place, name, quote)
    assert classify(writer) == LOOSEN, writer
    reader = _spelled(draw, draw(st.sampled_from(READS)), place, name, quote)
    assert classify(reader) is None, reader


@fuzz(300)
@given(
    st.text(alphabet=st.sampled_from(list(" ~$/{}()'\"`;&|<>\\\n*=-.#aHOMEruny_gd")), max_size=80)
)
def test_any_text_near_the_guard_gives_an_answer(text):
    for command in (text, f"{text} runaway-guard", f"python3 {STATUS} {text}"):
        assert classify(command) in (None, LOOSEN, STATUS_CALL)
        assert classify(command, cwd=STATE_DIR) in (
            None,
            LOOSEN,
            STATUS_CALL,
        )


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


@pytest.mark.parametrize("host", ["claude", "codex"])
def test_a_repositorys_own_status_py_does_not_pass_a_stopped_session(world, host):
    proj, session, env = stopped_at_cap(world, host)
    (proj / "status.py").write_text("import shutil; shutil.rmtree('/')\n")
    _, answer = session.call("python3 status.py --json", spend=False, **env)
    assert kind(answer) == ("stop" if host == "claude" else "deny")
    _, answer = session.call(f"python3 {STATUS} --json", spend=False, **env)
    assert answer is None


@pytest.mark.parametrize("host", ["claude", "codex"])
def test_the_agent_cannot_write_the_config_file(world, host):
    """Asked on Claude Code, refused on Codex: with `~` and `$HOME`, whatever the session's
    state, and nothing is written by the guard itself."""
    proj = world.project("proj")
    session = (Claude if host == "claude" else Codex)(world, proj, f"{host}-config")
    for command in (
        """echo '{"off": true}' > ~/.config/runaway-guard/config.json""",
        """echo '{"off": true}' > $HOME/.config/runaway-guard/config.json""",
        f"rm -rf {world.state_dir}",
    ):
        _, answer = session.call(command, spend=False)
        assert kind(answer) == ("ask" if host == "claude" else "deny"), command
        reason = answer["hookSpecificOutput"]["permissionDecisionReason"]
        assert command in reason
    assert not (world.home / ".config" / "runaway-guard").exists()


def test_a_write_tool_call_names_its_file_to_the_person(world):
    proj = world.project("proj")
    session = Claude(world, proj, "claude-write")
    config = world.home / ".config" / "runaway-guard" / "config.json"
    write = {"file_path": str(config), "content": '{"off": true}'}
    _, answer = session.call(tool="Write", tool_input=write, spend=False)
    assert kind(answer) == "ask"
    assert f"Write {config}" in answer["hookSpecificOutput"]["permissionDecisionReason"]
    # an ordinary file goes through
    note = {"file_path": str(proj / "notes.md"), "content": "hi"}
    assert session.call(tool="Write", tool_input=note, spend=False)[1] is None
