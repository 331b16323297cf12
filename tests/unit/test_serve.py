"""`guard.py --serve`, the guard OpenCode's plugin keeps running: one answer a line for each
payload a line, the same answers as one hook process a call, whatever the lines hold; it ends at
the end of its input, and unanswered when the skill changed under it."""

import json
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from guard_env import GUARD, ROOT, SKILL, GuardEnv, fuzz
from hypothesis import given
from hypothesis import strategies as st
from runaway_guard import hook, serve

FIXTURES = ROOT / "tests" / "fixtures" / "opencode"


def loop_call(n, call_id=None):
    """A tool call with no database: only the loop wire judges it (a note at the 5th)."""
    return {
        "runaway_guard_plugin": "opencode",
        "hook_event_name": "tool.execute.before",
        "session_id": "ses_serve",
        "call_id": call_id or f"call_{n}",
        "tool_name": "bash",
        "tool_input": {"command": "ls"},
        "cwd": "/proj",
    }


class Served:
    """One `guard.py --serve` process in a GuardEnv."""

    def __init__(self, guard_env, guard=GUARD, **env):
        self.process = subprocess.Popen(
            [sys.executable, "-I", "-S", str(guard), "--serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**guard_env.env, **env},
        )

    def ask(self, line):
        data = line if isinstance(line, bytes) else json.dumps(line).encode()
        self.process.stdin.write(data + b"\n")
        self.process.stdin.flush()
        return self.process.stdout.readline()

    def close(self):
        """(exit code, stdout left, stderr) once its input is closed."""
        out, err = self.process.communicate(timeout=30)
        return self.process.returncode, out, err


def test_the_answers_are_the_hook_process_ones_call_by_call(tmp_path, guard_env):
    folder = FIXTURES / "failures"
    db = tmp_path / "opencode.db"
    with sqlite3.connect(db) as conn:
        conn.executescript((FIXTURES / "schema.sql").read_text())
        conn.executescript((folder / "opencode.sql").read_text())
    payloads = [
        dict(json.loads(line), database=str(db))
        for line in (folder / "hook_inputs.jsonl").read_text().splitlines()
    ]
    payloads += [loop_call(n) for n in range(7)]
    limits = {"RUNAWAY_GUARD_MAX_FAILURES": "3", "RUNAWAY_GUARD_MAX_REPEATS": "3"}
    served = Served(guard_env, **limits)
    lines = [served.ask(payload) for payload in payloads]
    assert served.close() == (0, b"", b"")
    state_dir = guard_env.state_dir
    guard_env.state_dir = tmp_path / "alone"
    guard_env.env["RUNAWAY_GUARD_STATE_DIR"] = str(guard_env.state_dir)
    alone = [guard_env.process(payload, **limits) for payload in payloads]
    assert all(run.returncode == 0 and run.stderr == b"" for run in alone)
    assert lines == [run.stdout or b"\n" for run in alone]
    assert sum(line != b"\n" for line in lines) >= 3  # refusals and notes among them
    assert not (state_dir / "hook.log").exists()


def test_a_line_that_is_no_payload_is_answered_empty_and_the_next_is_answered(guard_env):
    served = Served(guard_env)
    too_large = b'{"x": "' + b"a" * hook.MAX_INPUT + b'"}'
    for line in [b"not json", b"[]", b"\xff\xfe", too_large, b""]:
        assert served.ask(line) == b"\n"
    answers = [served.ask(loop_call(n)) for n in range(5)]
    assert answers[:4] == [b"\n"] * 4
    assert json.loads(answers[4])["decision"] == "tell"
    assert served.close() == (0, b"", b"")
    log = (guard_env.state_dir / "hook.log").read_text()
    assert log.count(" ignored ") == 5 and "too large" in log and "fail-open" not in log


def test_an_interrupt_is_left_to_the_host(guard_env):
    served = Served(guard_env)
    assert served.ask(loop_call(0)) == b"\n"
    served.process.send_signal(signal.SIGINT)
    assert served.ask(loop_call(1)) == b"\n"
    assert served.close() == (0, b"", b"")


def test_a_skill_changed_under_it_ends_it_before_the_next_answer(tmp_path, guard_env):
    skill = tmp_path / "skill"
    shutil.copytree(SKILL, skill, ignore=shutil.ignore_patterns("__pycache__"))
    served = Served(guard_env, guard=skill / "guard.py")
    assert served.ask(loop_call(0)) == b"\n"
    money = skill / "runaway_guard" / "money.py"
    money.write_text(money.read_text() + "\n")  # an upgrade
    time.sleep(serve.STAMP_EVERY_S)
    assert served.ask(loop_call(1)) == b""  # ended, unanswered: the plugin asks a new one
    assert served.close() == (0, b"", b"")


payload_lines = st.one_of(
    st.binary(max_size=200).map(lambda data: data.replace(b"\n", b" ")),
    st.builds(
        lambda fields: json.dumps({**loop_call(0), **fields}).encode(),
        st.dictionaries(
            st.sampled_from(["hook_event_name", "session_id", "call_id", "tool_input", "cwd"]),
            st.one_of(st.none(), st.integers(), st.text(max_size=20), st.lists(st.integers())),
        ),
    ),
)


@fuzz(40)
@given(lines=st.lists(payload_lines, min_size=1, max_size=12))
def test_any_lines_get_one_answer_each_and_it_exits_0(tmp_path_factory, lines):
    served = Served(GuardEnv(tmp_path_factory.mktemp("serve")))
    for line in lines:
        answer = served.ask(line)
        assert answer.endswith(b"\n")
        assert answer == b"\n" or isinstance(json.loads(answer), dict)
    assert served.close() == (0, b"", b"")


def test_the_processes_a_call_leaves_behind_are_collected_once_ended(guard_env):
    team = {
        "RUNAWAY_GUARD_TEAM": "t",
        "RUNAWAY_GUARD_USER": "u",
        "RUNAWAY_GUARD_PUSHGATEWAY_URL": "http://127.0.0.1:9",  # refused: the refresh ends
        "RUNAWAY_GUARD_PROMETHEUS_URL": "http://127.0.0.1:9",
    }
    served = Served(guard_env, **team)
    pid = served.process.pid
    children = Path(f"/proc/{pid}/task/{pid}/children")
    assert served.ask(loop_call(0)) == b"\n"  # starts the team's refresh, a child
    started = children.read_text().split()
    assert len(started) == 1
    deadline = time.monotonic() + 20
    while Path(f"/proc/{started[0]}/stat").read_text().split()[2] != "Z":
        assert time.monotonic() < deadline, "the refresh did not end"
        time.sleep(0.05)
    served.ask(loop_call(1))
    assert started[0] not in children.read_text().split()  # no zombie left
    assert served.close() == (0, b"", b"")
