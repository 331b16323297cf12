"""A call is judged once the host has written what came before it, whatever the model's speed.

Claude Code writes its transcript every 100 ms: a model that answers at once calls again before
the previous result is on disk. Here a writer thread plays the host, writing the previous
result and the new call a little after the hook started (tests/e2e has the real runs).
"""

import threading
import time

from claude_records import assistant, pre_tool_use, result
from guard_env import jsonl
from test_wires import decision

SAME = {"command": "echo same"}


def late(transcript, records, delay):
    writer = threading.Timer(delay, jsonl, args=(transcript, records))
    writer.start()
    return writer


def test_a_loop_is_stopped_on_time_when_the_host_writes_late(guard_env, tmp_path):
    transcript = tmp_path / "p" / "s1.jsonl"
    jsonl(transcript, [assistant("m0", tool=("t0", "Bash", SAME))])
    answers = [decision(guard_env.answer(pre_tool_use(transcript, "t0", "Bash", SAME)))]
    for n in range(1, 6):
        # the previous result and this call reach the disk 60 ms after the hook starts
        records = [result(f"t{n - 1}", "same"), assistant(f"m{n}", tool=(f"t{n}", "Bash", SAME))]
        writer = late(transcript, records, 0.06)
        answers.append(decision(guard_env.answer(pre_tool_use(transcript, f"t{n}", "Bash", SAME))))
        writer.join()
    assert answers == [None, None, None, None, "tell", "deny"]


def test_a_session_whose_calls_never_show_stops_waiting(guard_env, tmp_path):
    transcript = tmp_path / "p" / "s1.jsonl"
    jsonl(transcript, [assistant("m0")])
    started = time.monotonic()
    for n in range(8):
        guard_env.answer(pre_tool_use(transcript, f"t{n}", "Bash", {"command": f"c{n}"}))
    # one short wait (0.15 s) at the second call, none after: the host never wrote a call
    assert time.monotonic() - started < 0.15 + 8 * 0.1


def test_a_written_call_is_judged_at_once(guard_env, tmp_path):
    transcript = tmp_path / "p" / "s1.jsonl"
    for n in range(6):
        if n:
            jsonl(transcript, [result(f"t{n - 1}", f"out {n}")])
        jsonl(transcript, [assistant(f"m{n}", tool=(f"t{n}", "Bash", SAME))])
        started = time.monotonic()
        assert guard_env.answer(pre_tool_use(transcript, f"t{n}", "Bash", SAME)) is None
        assert time.monotonic() - started < 0.1
