"""The OpenCode plugin itself, run by Node outside OpenCode: what it sends, how it obeys the
answer, and that it fails open (no interpreter, a crash, a bad answer, a timeout) with a line in
the guard's log. The same file runs inside the real OpenCode in tests/e2e/test_opencode.py."""

import json
import os
import shutil
import subprocess
import sys
import time

import pytest
from guard_env import SKILL

PLUGIN = SKILL / "runaway_guard" / "hosts" / "opencode_plugin.js"
NODE = shutil.which("node")

# Loads the plugin twice in one instance (as a user and a project install would) and once in
# another, then runs the steps given in argv[3] (JSON) against the first and prints one JSON
# result per step.
HARNESS = r"""
const [plugin, parentsJson, stepsJson] = process.argv.slice(2);
const parents = JSON.parse(parentsJson);
const get = async ({ path }) => ({ data: { id: path.id, parentID: parents[path.id] } });
const client = { session: { get } };
const mod = await import(plugin);
const ctx = { client, directory: "/proj" };
const hooks = await mod.RunawayGuard(ctx);
const again = await mod.RunawayGuard(ctx);  // the same instance: a second install stands down
const other = await mod.RunawayGuard({ client, directory: "/other" });  // another instance
const results = [{ second_copy: Object.keys(again).length, other: Object.keys(other).length }];
for (const [name, input, output] of JSON.parse(stepsJson)) {
  const started = Date.now();
  try {
    await hooks[name](input, output);
    results.push({ ok: true, output, ms: Date.now() - started });
  } catch (error) {
    results.push({ threw: error.message, ms: Date.now() - started });
  }
}
console.log(JSON.stringify(results));
"""

# A stand-in for `guard.py --serve`: a payload a line in, an answer a line out. "crash" exits 3,
# "sleep" answers late, "upgraded" ends the process unanswered the first time (as the guard
# does when the skill changed under it).
ANSWERING_GUARD = r"""import json, os, sys
assert sys.argv[1:] == ["--serve"], sys.argv
answers = json.loads(os.environ["ANSWERS"])
for line in sys.stdin:
    payload = json.loads(line)
    with open(os.environ["PAYLOAD_LOG"], "a") as fh:
        fh.write(json.dumps({**payload, "pid": os.getpid()}) + "\n")
    answer = answers.get(payload.get("tool_name") or payload["hook_event_name"])
    if answer == "crash":
        sys.exit(3)
    if answer == "upgraded":
        marker = os.environ["PAYLOAD_LOG"] + ".upgraded"
        if not os.path.exists(marker):
            open(marker, "w").close()
            sys.exit(0)
        answer = {"decision": "deny", "reason": "from the new guard"}
    if answer == "sleep":
        import time; time.sleep(5)
        answer = None
    print("" if answer is None else answer if isinstance(answer, str) else json.dumps(answer))
    sys.stdout.flush()
with open(os.environ["PAYLOAD_LOG"] + ".ended", "a") as fh:
    fh.write(f"{os.getpid()}\n")
"""


def run_plugin(
    tmp_path, steps, answers=None, python=sys.executable, parents=None, timeout_ms=None, env=None
):
    if NODE is None:
        pytest.fail("node is not installed (it comes with npm, which the e2e setup needs)")
    guard = tmp_path / "guard.py"
    guard.write_text(ANSWERING_GUARD)
    text = PLUGIN.read_text()
    text = text.replace('"@PYTHON@"', json.dumps(str(python))).replace(
        '"@GUARD@"', json.dumps(str(guard))
    )
    if timeout_ms:
        assert "const TIMEOUT_MS = 30000;" in text
        text = text.replace("const TIMEOUT_MS = 30000;", f"const TIMEOUT_MS = {timeout_ms};")
    copy = tmp_path / "runaway-guard.mjs"
    copy.write_text(text)
    harness = tmp_path / "harness.mjs"
    harness.write_text(HARNESS)
    home = tmp_path / "home"
    run_env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "PAYLOAD_LOG": str(tmp_path / "payloads.jsonl"),
        "ANSWERS": json.dumps(answers or {}),
        **(env or {}),
    }
    proc = subprocess.run(
        [NODE, str(harness), str(copy), json.dumps(parents or {}), json.dumps(steps)],
        env=run_env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout)
    log = tmp_path / "payloads.jsonl"
    payloads = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    pids = {payload.pop("pid") for payload in payloads}
    hook_log = home / ".local" / "state" / "runaway-guard" / "hook.log"
    return results, payloads, hook_log.read_text() if hook_log.exists() else "", pids


def tool(name, args, session="ses_root", call_id="call_1"):
    return [
        "tool.execute.before",
        {"tool": name, "sessionID": session, "callID": call_id},
        {"args": args},
    ]


def params(session="ses_root", message="msg_user", agent="build"):
    inp = {
        "sessionID": session,
        "agent": agent,
        "model": {"providerID": "p", "id": "m"},
        "message": {"id": message},
    }
    return ["chat.params", inp, {}]


def test_payloads_and_obeying_the_answers(tmp_path):
    answers = {
        "bash": {"decision": "deny", "reason": "runaway-guard: refused"},
        "read": {"decision": "tell", "reason": "runaway-guard: a note"},
        "chat.params": {
            "decision": "stop",
            "reason": "for the model",
            "message": "runaway-guard stopped it",
        },
    }
    after = [
        "tool.execute.after",
        {"tool": "read", "sessionID": "ses_child", "callID": "call_2"},
        {"output": "file"},
    ]
    steps = [
        params(),
        tool("bash", {"command": "ls"}),
        tool("read", {"filePath": "a"}, "ses_child", "call_2"),
        after,
    ]
    results, payloads, log, pids = run_plugin(
        tmp_path, steps, answers, parents={"ses_child": "ses_root"}
    )
    assert results[0] == {"second_copy": 0, "other": 4}  # installed twice: hooks once
    assert results[1]["threw"] == "runaway-guard stopped it"
    assert results[2]["threw"] == "runaway-guard: refused"
    assert results[3]["ok"]
    assert results[4]["output"] == {"output": "file\n\nrunaway-guard: a note"}
    database = str(tmp_path / "home" / ".local" / "share" / "opencode" / "opencode.db")
    common = {
        "runaway_guard_plugin": "opencode",
        "cwd": "/proj",
        "database": database,
        "prompt_id": "msg_user",
    }
    assert payloads[0] == {
        **common,
        "hook_event_name": "chat.params",
        "session_id": "ses_root",
        "agent_session_id": "ses_root",
        "agent": "build",
        "provider_id": "p",
        "model_id": "m",
    }
    assert payloads[1] == {
        **common,
        "hook_event_name": "tool.execute.before",
        "session_id": "ses_root",
        "agent_session_id": "ses_root",
        "call_id": "call_1",
        "tool_name": "bash",
        "tool_input": {"command": "ls"},
    }
    assert payloads[2]["session_id"] == "ses_root"  # the child's root
    assert payloads[2]["agent_session_id"] == "ses_child"
    assert payloads[2]["prompt_id"] is None
    assert len(payloads) == 3 and log == ""
    assert len(pids) == 1  # one guard answered every call
    ended = tmp_path / "payloads.jsonl.ended"
    deadline = time.monotonic() + 10
    while not ended.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert ended.read_text().split() == [str(pid) for pid in pids]  # ended with Node's exit


def test_a_guard_that_ends_unanswered_is_started_again_for_the_call(tmp_path):
    results, payloads, log, pids = run_plugin(
        tmp_path, [tool("bash", {"command": "ls"}), params()], {"bash": "upgraded"}
    )
    assert results[1]["threw"] == "from the new guard"
    assert results[2]["ok"]
    assert [p["hook_event_name"] for p in payloads] == [
        "tool.execute.before",
        "tool.execute.before",
        "chat.params",
    ]
    assert len(pids) == 2 and log == ""


def test_database_follows_opencodes_variables(tmp_path):
    env = {"XDG_DATA_HOME": str(tmp_path / "data"), "OPENCODE_DB": "other.db"}
    _, payloads, _, _ = run_plugin(tmp_path, [params()], env=env)
    assert payloads[0]["database"] == str(tmp_path / "data" / "opencode" / "other.db")
    _, payloads, _, _ = run_plugin(tmp_path, [params()], env={"OPENCODE_DB": "/abs/x.db"})
    assert payloads[-1]["database"] == "/abs/x.db"


@pytest.mark.parametrize(
    ("answer", "python", "logged"),
    [
        ("crash", sys.executable, "guard exited with 3"),
        ("not json", sys.executable, "unreadable answer: not json"),
        (None, "/nonexistent/python3", "cannot run /nonexistent/python3"),
        ("sleep", sys.executable, "guard timed out after 300 ms"),
    ],
)
def test_fails_open_with_a_line_in_the_guards_log(tmp_path, answer, python, logged):
    answers = {"bash": answer, "chat.params": answer}
    results, _, log, _ = run_plugin(
        tmp_path,
        [tool("bash", {"command": "ls"}), params()],
        answers,
        python=python,
        timeout_ms=300,
    )
    assert [r.get("ok") for r in results[1:]] == [True, True]
    assert all(r["ms"] < 3000 for r in results[1:])
    lines = log.splitlines()
    assert len(lines) == 2 and all(f"fail-open opencode plugin: {logged}" in line for line in lines)
