"""Hardness: whatever arrives on stdin or in the transcripts, the guard exits 0, prints nothing or
one valid answer of the host's form, never a traceback, never hangs, writes only in its state
dir, keeps its ledger exact under 32 parallel calls and across rewrites, and fails open when it
cannot write.

Most generated cases run in-process through `hook.run`, failing open exactly as guard.py does;
a sample runs as real processes in the installed form (`python -I -S guard.py`).
"""

import copy
import errno
import json
import marshal
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from claude_records import assistant, result, usage
from guard_env import GUARD, ROOT, fuzz, jsonl, tmpfs
from hypothesis import given
from hypothesis import strategies as st
from runaway_guard import config, fs, hook, hosts, jsonio, ledger, log, state_file

CODEX_FIXTURES = ROOT / "tests" / "fixtures" / "codex"
HANG = 5.0  # seconds: a generous bound, far inside the hosts' hook timeouts
# What the guard may fail open with: a state dir it cannot write (the file system's cases
# below), and a payload that is no JSON object it can read (hook.py answers those). A payload
# it reads fails it open with nothing: anything else is a bug in how it reads its inputs.
FILESYSTEM_ERRORS = (OSError,)
UNREADABLE_ERRORS = (ValueError, *FILESYSTEM_ERRORS)


def guarded(data, environ):
    """guard.py's main() in-process: (answer, exception or None); logs fail-open like it."""
    try:
        return hook.run(data, environ), None
    except BaseException as error:
        log.append(config.load(None, environ).state_dir, "fail-open", f"{error!r}")
        return "", error


def check_answer(answer, host):
    """'' or one JSON answer of exactly the form this host accepts."""
    if not answer:
        return
    assert "\n" not in answer
    value = json.loads(answer)
    assert isinstance(value, dict)
    if host == "cursor":
        assert value == {}
    elif host == "copilot":
        # One answer for both dialects (Copilot hook file and Claude settings), 1.0.102
        if "additionalContext" in value:
            assert set(value) == {"additionalContext"} and value["additionalContext"]
        else:
            assert set(value) == {"permissionDecision", "permissionDecisionReason"}
            assert value["permissionDecision"] in ("deny", "ask")
            assert value["permissionDecisionReason"]
    elif host == "codex":
        assert list(value) == ["hookSpecificOutput"]
        specific = value["hookSpecificOutput"]
        assert specific["hookEventName"] == "PreToolUse"
        if "additionalContext" in specific:
            assert set(specific) == {"hookEventName", "additionalContext"}
            assert specific["additionalContext"]
        else:
            assert set(specific) == {
                "hookEventName",
                "permissionDecision",
                "permissionDecisionReason",
            }
            assert specific["permissionDecision"] == "deny"
            assert specific["permissionDecisionReason"]
    else:
        assert set(value) <= {"hookSpecificOutput", "systemMessage", "continue", "stopReason"}
        specific = value.get("hookSpecificOutput", {})
        assert set(specific) <= {
            "hookEventName",
            "permissionDecision",
            "permissionDecisionReason",
            "additionalContext",
        }
        assert specific.get("permissionDecision") in (None, "deny", "ask")


def host_of(data, environ):
    """The host of a payload the guard can read (as jsonio reads it), else None."""
    if len(data) > hook.MAX_INPUT:
        return None
    try:
        payload = jsonio.loads(data)
    except ValueError:
        return None
    return hosts.detect(payload, environ) if isinstance(payload, dict) else None


def run_case(data, environ):
    started = time.monotonic()
    answer, error = guarded(data, environ)
    assert time.monotonic() - started < HANG
    check_answer(answer, host_of(data, environ))
    expected = FILESYSTEM_ERRORS if host_of(data, environ) else UNREADABLE_ERRORS
    if error is not None and not isinstance(error, expected):
        raise AssertionError(f"unexpected {error!r} for {data[:300]!r}") from error
    return answer, error


def run_process(data, environ, timeout=30):
    """The installed hook command: a new interpreter, -I -S, stdin; (stdout, stderr)."""
    done = subprocess.run(
        [sys.executable, "-I", "-S", str(GUARD)],
        input=data,
        capture_output=True,
        env=environ,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == b"", done.stderr  # never a traceback
    return done.stdout.decode()


def environment(root):
    root = Path(root)
    (root / "home").mkdir(parents=True, exist_ok=True)
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(root / "home"),
        "XDG_CONFIG_HOME": str(root / "home" / ".config"),
        "RUNAWAY_GUARD_STATE_DIR": str(root / "state"),
    }


def log_lines(environ):
    path = Path(environ["RUNAWAY_GUARD_STATE_DIR"]) / log.LOG_NAME
    return path.read_text().splitlines() if path.exists() else []


# -- the odd things a path can point at --


@pytest.fixture(scope="module")
def odd_paths(tmp_path_factory):
    """Paths that are not regular files: the guard must neither hang nor write through them."""
    root = tmp_path_factory.mktemp("odd")
    (root / "dir.jsonl").mkdir()
    fifo = root / "fifo.jsonl"
    os.mkfifo(fifo)
    sock_path = root / "sock.jsonl"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(sock_path))
    (root / "dangling.jsonl").symlink_to(root / "nowhere" / "x.jsonl")
    (root / "loop.jsonl").symlink_to(root / "loop.jsonl")
    paths = [
        str(root / "dir.jsonl"),
        str(fifo),
        str(sock_path),
        str(root / "dangling.jsonl"),
        str(root / "loop.jsonl"),
        str(root / "dir.jsonl" / ".." / ".." / "missing.jsonl"),
        str(root / "missing" / "deep" / "x.jsonl"),
        "/dev/zero",
        "/dev/null",
        "/proc/self/mem",
        "relative/../x.jsonl",
        "",
        "/",
        "x" * 5000,
        "/tmp/\x00nul.jsonl",
    ]
    yield paths
    sock.close()


# -- hook input fuzzing --

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=6,
)
# Wrong types for a field, cheap to draw: most cases take these, some a generated value.
WRONG = st.sampled_from(
    [
        None,
        True,
        False,
        0,
        -1,
        7,
        1.5,
        -0.0,
        float("nan"),
        float("inf"),
        2**64,
        -(2**70),
        "",
        "x",
        "claude-opus-4-8",
        "toolu_1",
        "\x00",
        "\ud800",
        "é" * 50,
        [],
        [1, "a"],
        {},
        {"a": 1},
        [[[]]],
        {"type": "text", "text": 5},
    ]
)
values = st.one_of(WRONG, WRONG, WRONG, json_values)
FIELDS = (
    "session_id",
    "transcript_path",
    "cwd",
    "hook_event_name",
    "tool_name",
    "tool_input",
    "tool_use_id",
    "agent_id",
    "prompt_id",
    "turn_id",
    "model",
    "permission_mode",
)


def base_payload(tmp, host):
    payload = {
        "session_id": "fuzz-session",
        "transcript_path": str(tmp / "t" / "fuzz-session.jsonl"),
        "cwd": str(tmp),
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "ls"},
        "tool_use_id": "toolu_1",
    }
    if host == "codex":
        payload["turn_id"] = "turn-1"
        payload["model"] = "gpt-5.5"
    return payload


@st.composite
def hook_inputs(draw, tmp, odd):
    """Bytes on the guard's stdin: garbage, broken JSON, wrong types, odd paths and ids."""
    kind = draw(st.sampled_from(["bytes", "truncated", "types", "paths", "strings", "json"]))
    if kind == "bytes":
        return draw(st.binary(max_size=300))
    if kind == "json":
        return json.dumps(draw(values)).encode()
    payload = base_payload(tmp, draw(st.sampled_from(["claude", "codex"])))
    if kind == "truncated":
        text = json.dumps(payload).encode()
        return text[: draw(st.integers(0, len(text) - 1))]
    if kind == "types":
        for field in draw(st.lists(st.sampled_from(FIELDS), min_size=1, max_size=5)):
            payload[field] = draw(values)
    elif kind == "paths":
        field = draw(st.sampled_from(["transcript_path", "cwd", "session_id"]))
        payload[field] = draw(st.sampled_from(odd))
    else:
        ugly = st.one_of(
            st.text(max_size=20),
            st.sampled_from(
                [
                    "../../x",
                    "/etc/passwd",
                    ".",
                    "..",
                    "~",
                    "a/b",
                    "\x00",
                    "é" * 200,
                    "\ud800",
                    "x" * 9000,
                    "ab\n" * 2000,
                    "toolu_1",
                    "fuzz-session",
                ]
            ),
        )
        for field in draw(st.lists(st.sampled_from(FIELDS), min_size=1, max_size=4)):
            payload[field] = draw(ugly)
    data = json.dumps(payload).encode()
    if draw(st.booleans()):
        # invalid UTF-8 or a NUL byte inside the document
        at = draw(st.integers(0, len(data)))
        data = (
            data[:at]
            + draw(st.sampled_from([b"\xff", b"\xc3", b"\x00", b"\xed\xa0\x80"]))
            + data[at:]
        )
    return data


def test_fuzz_hook_input_in_process(tmp_path_factory, odd_paths):
    tmp = tmp_path_factory.mktemp("fuzz-input")
    environ = environment(tmp)
    jsonl(tmp / "t" / "fuzz-session.jsonl", [assistant("m1"), result("toolu_0")])
    seen = {"cases": 0, "errors": 0}

    @fuzz(5000)
    @given(data=hook_inputs(tmp, odd_paths))
    def case(data):
        seen["cases"] += 1
        _, error = run_case(data, environ)
        seen["errors"] += error is not None

    case()
    assert seen["cases"] >= 5000
    # Every error was logged as fail-open in the state dir, one line each.
    fail_open = [line for line in log_lines(environ) if " fail-open " in line]
    assert len(fail_open) == seen["errors"]


def test_enormous_inputs(guard_env, tmp_path):
    payload = base_payload(tmp_path, "claude")
    huge_value = dict(payload, tool_input={"command": "x" * (8 << 20)})
    too_big = dict(payload, tool_input={"command": "x" * (hook.MAX_INPUT + 10)})
    deep = b"[" * 100_000 + b"]" * 100_000
    for data in (json.dumps(huge_value).encode(), json.dumps(too_big).encode(), deep):
        run_case(data, guard_env.env)


def test_an_input_that_cannot_be_read_fails_open_saying_why(guard_env, monkeypatch):
    for key, value in guard_env.env.items():
        monkeypatch.setenv(key, value)

    def read():
        raise OSError(errno.EIO, "Input/output error")

    assert hook.respond(read) == ("", False)
    logged = (guard_env.state_dir / "hook.log").read_text()
    assert "fail-open OSError: [Errno 5] Input/output error" in logged


# -- transcript line fuzzing --


def set_path(record, path, value):
    """Replace (or, for DROP, remove) the value at path; skipped where an earlier mutation
    already replaced a parent."""
    target = record
    try:
        for key in path[:-1]:
            target = target[key]
        if value is DROP:
            if isinstance(target, dict):
                target.pop(path[-1], None)
        else:
            target[path[-1]] = value
    except (KeyError, IndexError, TypeError):
        pass


DROP = object()


def mutated_lines(templates, paths, junk):
    """Lines made from real record shapes: fields given wrong types or removed, bytes injected,
    lines cut short, or plain random bytes. Cheap to draw, so thousands run in seconds."""

    @st.composite
    def build(draw):
        kind = draw(st.sampled_from(["fields", "fields", "fields", "inject", "cut", "bytes"]))
        if kind == "bytes":
            return draw(st.binary(max_size=120))
        index = draw(st.integers(0, len(templates) - 1))
        record = json.loads(json.dumps(templates[index]))
        if kind == "fields":
            for _ in range(draw(st.integers(1, 3))):
                path = draw(st.sampled_from(paths[index]))
                value = draw(st.one_of(st.just(DROP), WRONG, WRONG, json_values))
                set_path(record, path, value if value is DROP else copy.deepcopy(value))
        text = json.dumps(record, allow_nan=True)
        if kind == "inject":
            at = draw(st.integers(0, len(text)))
            text = text[:at] + draw(st.sampled_from(junk)) + text[at:]
        elif kind == "cut":
            text = text[: draw(st.integers(0, len(text) - 1))]
        return text.encode("utf-8", "surrogatepass")

    return build()


def paths_of(value, prefix=()):
    """Every key path in a JSON value, leaves and inner nodes."""
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, inner in value.items():
            found.extend(paths_of(inner, (*prefix, key)))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            found.extend(paths_of(inner, (*prefix, index)))
    return found


JUNK = ["\x00", "\ud800", "\n", "{", "}", '"', "\\", '"usage"', '"tool_result"', "\xff"]


def claude_line_strategy():
    templates = [
        assistant("m-fuzz", tool=("toolu_1", "Bash", {"command": "ls"}), requestedModel="x"),
        assistant("m-fuzz2", stop=None),
        result("toolu_1", "Exit code 1", error=True),
        result("toolu_2", [{"type": "text", "text": "ok"}]),
        {"type": "system", "subtype": "compact_boundary", "compactMetadata": {"preTokens": 5}},
        {"type": "cost-state", "costUSD": 1.5, "version": "2.1.328"},
    ]
    return mutated_lines(templates, [paths_of(t) for t in templates], JUNK)


def codex_line_strategy():
    fixture = next((CODEX_FIXTURES / "failures" / "sessions").glob("**/rollout-*.jsonl"))
    templates = [json.loads(line) for line in fixture.read_text().splitlines()[:40]]
    templates = [t for t in templates if len(json.dumps(t)) < 4000]
    return mutated_lines(templates, [paths_of(t) for t in templates], JUNK)


@pytest.mark.parametrize("host", ["claude", "codex"])
def test_fuzz_transcript_lines(tmp_path_factory, host):
    """Generated lines appended to a live session's transcript; the guard reads each batch."""
    tmp = tmp_path_factory.mktemp(f"fuzz-lines-{host}")
    environ = environment(tmp)
    payload = base_payload(tmp, host)
    transcript = Path(payload["transcript_path"])
    if host == "codex":
        transcript = tmp / "sessions" / "rollout-2026-11-30T10-00-00-fuzz.jsonl"
        transcript.parent.mkdir(parents=True)
        transcript.write_text(
            json.dumps(
                {
                    "type": "session_meta",
                    "payload": {"id": "fuzz-session", "session_id": "fuzz-session"},
                }
            )
            + "\n"
        )
        payload["transcript_path"] = str(transcript)
        payload["session_id"] = "fuzz-session"
    else:
        transcript.parent.mkdir(parents=True)
        transcript.write_text("")
    lines = claude_line_strategy() if host == "claude" else codex_line_strategy()
    counter = {"n": 0, "lines": 0}

    @fuzz(2500)
    @given(batch=st.lists(lines, min_size=2, max_size=5), newline=st.booleans())
    def case(batch, newline):
        counter["n"] += 1
        counter["lines"] += len(batch)
        with transcript.open("ab") as handle:
            handle.write(b"\n".join(batch) + (b"\n" if newline else b""))
        call = dict(
            payload,
            tool_use_id=f"toolu_{counter['n']}",
            tool_input={"command": f"echo {counter['n']}"},
        )
        _, error = run_case(json.dumps(call).encode(), environ)
        assert error is None, error  # a transcript's content never makes the guard fail

    case()
    assert counter["n"] >= 2500 and counter["lines"] >= 7000
    # read in thousands of pieces, the junk among them, the ledger equals one read of the file
    final = dict(payload, tool_use_id="last")
    assert spend(environ, host, "fuzz-session") == full_read(
        tmp, host, "fuzz-session", json.dumps(final).encode()
    )


def test_enormous_transcript_lines(guard_env, tmp_path):
    """A line far over the reader's limit is skipped whole; the records around it still count."""
    transcript = tmp_path / "p" / "s1.jsonl"
    jsonl(transcript, [assistant("before")])
    with transcript.open("ab") as handle:
        handle.write(b'{"type":"user","usage":"' + b"x" * (9 << 20) + b'"}\n')
        handle.write(b"\xff\xfe\x00" * 1000 + b"\n")
    jsonl(transcript, [assistant("after")])
    payload = base_payload(tmp_path, "claude")
    payload["transcript_path"] = str(transcript)
    payload["session_id"] = "s1"
    run_case(json.dumps(payload).encode(), guard_env.env)
    with ledger.Ledger(str(guard_env.state_dir), "claude", "s1") as book:
        assert book.state["recent"].keys() == {"before", "after"}


# -- real processes --


def test_sample_of_nasty_inputs_as_real_processes(tmp_path, odd_paths):
    environ = environment(tmp_path)
    jsonl(tmp_path / "t" / "fuzz-session.jsonl", [assistant("m1")])
    cases = [
        b"",
        b"\x00" * 64,
        b"\xff\xfe garbage",
        b"[1, 2, 3]",
        b'"a string"',
        b"{" * 5000,
        b"[" * 200_000,
        b'{"session_id": 1, "transcript_path": [], "cwd": {}, "tool_name": null}',
        b'{"session_id": "s", "tool_input": "' + b"A" * (hook.MAX_INPUT + 1) + b'"}',
    ]
    for host in ("claude", "codex"):
        base = base_payload(tmp_path, host)
        cases.append(json.dumps(base).encode()[:-7])
        for field in ("transcript_path", "cwd", "session_id"):
            for odd in odd_paths:
                cases.append(json.dumps(dict(base, **{field: odd})).encode())
    assert len(cases) > 40
    for data in cases:
        answer = run_process(data, environ)
        check_answer(answer.rstrip("\n"), host_of(data, environ))
        assert answer.count("\n") <= 1


def test_fifo_among_session_files_does_not_hang(tmp_path):
    """Opening a FIFO for reading blocks until a writer comes: the guard must never do that."""
    environ = environment(tmp_path)
    # Codex: a FIFO named like a rollout in the session's day folder.
    day = tmp_path / "codex" / "sessions" / "2026" / "11" / "30"
    shutil.copytree(next((CODEX_FIXTURES / "usage" / "sessions").glob("2026/11/30")), day)
    rollout = next(day.glob("rollout-*.jsonl"))
    os.mkfifo(day / "rollout-2026-11-30T23-59-59-fifo.jsonl")
    payload = {**base_payload(tmp_path, "codex"), "transcript_path": str(rollout)}
    payload["session_id"] = rollout.stem[-36:]
    out = run_process(json.dumps(payload).encode(), environ, timeout=20)
    check_answer(out.strip(), "codex")
    # Claude Code: FIFOs as a subagent file and as an old-layout sibling agent file.
    main = tmp_path / "claude" / "s1.jsonl"
    jsonl(main, [assistant("m1", version="2.0.50")])
    (tmp_path / "claude" / "s1" / "subagents").mkdir(parents=True)
    os.mkfifo(tmp_path / "claude" / "s1" / "subagents" / "agent-f.jsonl")
    os.mkfifo(tmp_path / "claude" / "agent-g.jsonl")
    payload = {**base_payload(tmp_path, "claude"), "transcript_path": str(main), "session_id": "s1"}
    out = run_process(json.dumps(payload).encode(), environ, timeout=20)
    check_answer(out.strip(), "claude")
    # ... and the session is still counted: a stray FIFO does not switch the guard off.
    with ledger.Ledger(environ["RUNAWAY_GUARD_STATE_DIR"], "claude", "s1") as book:
        assert "m1" in book.state["recent"]
    assert not [line for line in log_lines(environ) if " fail-open " in line]


# -- nothing written outside the state dir --


def snapshot(root, skip):
    found = {}
    for folder, dirs, files in os.walk(root):
        if Path(folder) == skip:
            dirs[:] = []
            continue
        for name in dirs + files:
            path = os.path.join(folder, name)
            if Path(path) == skip:
                continue
            info = os.lstat(path)
            found[path] = (info.st_mode, info.st_size, info.st_mtime_ns)
    return found


def test_nothing_written_outside_the_state_dir(tmp_path):
    root = tmp_path / "world"
    project = root / "project"
    project.mkdir(parents=True)
    environ = environment(root)
    state = Path(environ["RUNAWAY_GUARD_STATE_DIR"])
    main = root / "claude" / "s1.jsonl"
    jsonl(main, [assistant("m1"), result("toolu_0", "ok")])
    rollout_dir = root / "codex" / "sessions"
    shutil.copytree(next((CODEX_FIXTURES / "usage" / "sessions").glob("2026/11/30")), rollout_dir)
    rollout = next(rollout_dir.glob("rollout-*.jsonl"))
    ids = [
        "../../x",
        "../../../../../../tmp/escaped",
        str(root / "abs"),
        "/etc/passwd",
        "..",
        ".",
        "~",
        "a\x00b",
        "s" * 5000,
        "sub/dir/id",
        "..\\..\\win",
        ".hidden",
        "é/../ü",
    ]
    before = snapshot(root, state)
    count = 0
    for session_id in ids:
        for transcript, host in (
            (main, "claude"),
            (rollout, "codex"),
            (root / "new.jsonl", "claude"),
        ):
            for cwd in (str(project), str(root / "nowhere" / ".."), "/"):
                payload = base_payload(root, host)
                payload.update(
                    session_id=session_id,
                    transcript_path=str(transcript),
                    cwd=cwd,
                    tool_use_id=f"{session_id}/../t{count}",
                    agent_id=session_id,
                )
                count += 1
                run_case(json.dumps(payload).encode(), environ)
    # a few through the real hook command
    for session_id in ids[:5]:
        payload = dict(base_payload(root, "claude"), session_id=session_id)
        run_process(json.dumps(payload).encode(), environ)
    assert snapshot(root, state) == before
    # everything the guard wrote is inside its state dir, under names it chose
    for path in state.rglob("*"):
        assert state in path.parents
        assert ".." not in path.relative_to(state).parts


# -- concurrency --


def test_32_parallel_calls_on_one_session(tmp_path):
    environ = environment(tmp_path)
    state = Path(environ["RUNAWAY_GUARD_STATE_DIR"])
    main = tmp_path / "p" / "s1.jsonl"
    sub = tmp_path / "p" / "s1" / "subagents" / "agent-a1.jsonl"
    for n in range(40):
        jsonl(
            main,
            [
                assistant(f"m{n}", use=usage(out=1, read=100 * n), stop=None),
                assistant(
                    f"m{n}", tool=(f"old{n}", "Bash", {}), use=usage(out=50 + n, read=100 * n)
                ),
                result(f"old{n}", f"out {n}"),
            ],
        )
        jsonl(sub, [assistant(f"s{n}", model="claude-haiku-4-5", use=usage(out=n + 1))])
    stop = threading.Event()
    torn = []

    def watch():  # a reader without the lock (status.py) sees each state whole, in order
        seen = 0
        while not stop.is_set():
            for path in (state / "sessions" / "claude").glob("*.state"):
                read = state_file.read_state(str(path))
                if read is None:
                    torn.append(path.read_bytes()[:100])  # never removed once written
                elif read["spend"]["total"] < seen:
                    torn.append(("spend went back", seen, read["spend"]["total"]))
                else:
                    seen = read["spend"]["total"]

    watcher = threading.Thread(target=watch)
    watcher.start()
    children = []
    try:
        for n in range(32):
            # the session goes on while the calls run: a response lands before each call
            jsonl(
                main,
                [
                    assistant(
                        f"new{n}",
                        tool=(f"call{n}", "Bash", {"command": f"echo {n}"}),
                        use=usage(out=10 + n, cw5=n),
                    )
                ],
            )
            payload = {
                **base_payload(tmp_path, "claude"),
                "session_id": "s1",
                "transcript_path": str(main),
                "tool_use_id": f"call{n}",
                "tool_input": {"command": f"echo {n}"},
            }
            child = subprocess.Popen(
                [sys.executable, "-I", "-S", str(GUARD)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=environ,
            )
            children.append((child, json.dumps(payload).encode()))
        for child, data in children:  # all 32 started before any gets its input
            child.stdin.write(data)
            child.stdin.close()
        for child, _ in children:
            assert child.wait(timeout=60) == 0
            assert child.stderr.read() == b""
            check_answer(child.stdout.read().decode().strip(), "claude")
            child.stdout.close()
            child.stderr.close()
    finally:
        stop.set()
        watcher.join()
    assert torn == []
    assert not [line for line in log_lines(environ) if " fail-open " in line]
    with ledger.Ledger(str(state), "claude", "s1") as book:
        parallel = book.state
        pending = {tool_use_id for tool_use_id, _ in parallel["agents"]["main"]["pending"]}
    # every call was registered: none lost to a concurrent writer
    assert pending == {f"call{n}" for n in range(32)}
    assert set(parallel["answers"]) == {f"call{n}" for n in range(32)}
    # the ledger equals one full read of the final transcripts
    fresh = environment(tmp_path / "fresh")
    payload = {
        **base_payload(tmp_path, "claude"),
        "session_id": "s1",
        "transcript_path": str(main),
        "tool_use_id": "last",
    }
    run_case(json.dumps(payload).encode(), fresh)
    with ledger.Ledger(fresh["RUNAWAY_GUARD_STATE_DIR"], "claude", "s1") as book:
        assert book.state["spend"] == parallel["spend"]
    entries = (state / "sessions" / "claude" / "s1.ledger").read_text().splitlines()
    assert all(isinstance(json.loads(line), list) for line in entries)  # no torn ledger line
    assert len({json.loads(line)[0] for line in entries}) == 40 + 40 + 32


# -- rewrites through the real hook command, Claude Code and Codex --


def codex_copy(name, into):
    shutil.copytree(CODEX_FIXTURES / name / "sessions", into / "sessions")
    rollouts = sorted(into.glob("sessions/**/rollout-*.jsonl"))
    main = min(rollouts, key=lambda p: p.name)
    meta = json.loads(main.read_text().splitlines()[0])["payload"]
    return rollouts, main, meta["session_id"]


def codex_call(main, session_id, n):
    return json.dumps(
        {
            "session_id": session_id,
            "turn_id": "turn-x",
            "transcript_path": str(main),
            "cwd": str(main.parent),
            "hook_event_name": "PreToolUse",
            "model": "gpt-5.5",
            "tool_name": "Bash",
            "tool_input": {"command": f"echo {n}"},
            "tool_use_id": f"c{n}",
        }
    ).encode()


def full_read(tmp_path, host, session_id, data):
    environ = environment(tmp_path / f"full-{host}")
    run_case(data, environ)
    with ledger.Ledger(environ["RUNAWAY_GUARD_STATE_DIR"], host, session_id) as book:
        return book.state["spend"]


def spend(environ, host, session_id):
    with ledger.Ledger(environ["RUNAWAY_GUARD_STATE_DIR"], host, session_id) as book:
        return book.state["spend"]


@pytest.mark.parametrize("name", ["subagent", "usage"])
def test_codex_rewrites_through_the_hook_command(tmp_path, name):
    rollouts, main, session_id = codex_copy(name, tmp_path / "codex")
    environ = environment(tmp_path)
    expected = full_read(tmp_path, "codex", session_id, codex_call(main, session_id, 0))
    assert expected["total"] > 0
    run_process(codex_call(main, session_id, 1), environ)
    assert spend(environ, "codex", session_id) == expected
    original = main.read_bytes()
    # truncated (shorter, same inode), then the rest written again: nothing counted twice
    main.write_bytes(original[: len(original) // 2])
    run_process(codex_call(main, session_id, 2), environ)
    assert spend(environ, "codex", session_id) == expected
    main.write_bytes(original)
    run_process(codex_call(main, session_id, 3), environ)
    assert spend(environ, "codex", session_id) == expected
    # replaced by a copy (new inode), and a subagent rollout deleted: nothing dropped
    copy = main.with_suffix(".tmp")
    copy.write_bytes(original)
    os.replace(copy, main)
    for path in rollouts:
        if path != main:
            path.unlink()
    run_process(codex_call(main, session_id, 4), environ)
    assert spend(environ, "codex", session_id) == expected


def corrupt_states(state_path):
    state = state_file.read_state(str(state_path))
    old = dict(state, v=0)
    old.pop("recent")
    wrong_types = dict(state, files=[], agents={"main": "x"})
    return [
        b"",
        b"\x00\xff garbage",
        state_path.read_bytes()[:-20],  # torn
        marshal.dumps(old),  # an older version
        marshal.dumps(wrong_types),
        marshal.dumps(dict(state, spend={"total": "12"})),
        marshal.dumps([]),
        json.dumps(state).encode(),  # JSON where marshal is expected
    ]


@pytest.mark.parametrize("host", ["claude", "codex"])
def test_corrupt_or_old_state_rebuilt_through_the_hook_command(tmp_path, host):
    if host == "codex":
        _, main, session_id = codex_copy("subagent", tmp_path / "codex")

        def call(n):
            return codex_call(main, session_id, n)
    else:
        session_id = "s1"
        main = tmp_path / "p" / "s1.jsonl"
        for n in range(10):
            jsonl(main, [assistant(f"m{n}", use=usage(out=n + 1, cw1h=10 * n)), result(f"t{n}")])

        def call(n):
            return json.dumps(
                {
                    **base_payload(tmp_path, "claude"),
                    "session_id": session_id,
                    "transcript_path": str(main),
                    "tool_use_id": f"x{n}",
                    "tool_input": {"command": f"echo {n}"},
                }
            ).encode()

    environ = environment(tmp_path)
    expected = full_read(tmp_path, host, session_id, call(0))
    run_process(call(1), environ)
    sessions = Path(environ["RUNAWAY_GUARD_STATE_DIR"]) / "sessions" / host
    state_path = next(sessions.glob("*.state"))
    for n, damage in enumerate(corrupt_states(state_path)):
        state_path.write_bytes(damage)
        run_process(call(10 + n), environ)
        assert spend(environ, host, session_id) == expected, damage[:60]
    # the ledger itself with a torn last line and junk: still no double count
    ledger_file = state_path.with_suffix(".ledger")
    with ledger_file.open("ab") as handle:
        handle.write(b'["half-written",12')
    state_path.write_bytes(b"")
    run_process(call(99), environ)
    assert spend(environ, host, session_id) == expected


def test_claude_compaction_rewrite_through_the_hook_command(tmp_path):
    environ = environment(tmp_path)
    main = tmp_path / "p" / "s1.jsonl"
    for n in range(20):
        jsonl(main, [assistant(f"m{n}", use=usage(out=n + 5)), result(f"t{n}")])

    def call(n):
        return json.dumps(
            {
                **base_payload(tmp_path, "claude"),
                "session_id": "s1",
                "transcript_path": str(main),
                "tool_use_id": f"x{n}",
                "tool_input": {"command": f"echo {n}"},
            }
        ).encode()

    run_process(call(0), environ)
    before = spend(environ, "claude", "s1")
    # rewritten shorter with a new inode, keeping the tail, then a new response appended
    lines = main.read_bytes().splitlines(keepends=True)
    copy = main.with_suffix(".new")
    copy.write_bytes(b"".join(lines[-6:]))
    os.replace(copy, main)
    jsonl(main, [assistant("after", use=usage(out=7))])
    run_process(call(1), environ)
    alone = tmp_path / "alone" / "s1.jsonl"
    jsonl(alone, [assistant("after", use=usage(out=7))])
    added = full_read(
        tmp_path,
        "claude",
        "s1",
        call(2).replace(json.dumps(str(main)).encode(), json.dumps(str(alone)).encode()),
    )
    assert added["total"] > 0
    assert spend(environ, "claude", "s1")["total"] == before["total"] + added["total"]


# -- no writable state dir, a full disk, no HOME --


def claude_payload(tmp_path):
    main = tmp_path / "p" / "s1.jsonl"
    if not main.exists():
        jsonl(main, [assistant("m1"), result("t0")])
    return json.dumps(
        {**base_payload(tmp_path, "claude"), "session_id": "s1", "transcript_path": str(main)}
    ).encode()


def test_state_dir_is_a_file(tmp_path):
    """No state can be kept: the call is judged from the session files alone, saved nowhere."""
    blocker = tmp_path / "blocker"
    blocker.write_text("not a folder")
    for state_dir in (blocker, blocker / "state"):
        environ = dict(environment(tmp_path), RUNAWAY_GUARD_STATE_DIR=str(state_dir))
        assert run_process(claude_payload(tmp_path), environ) == ""
        answer, error = guarded(claude_payload(tmp_path), environ)
        assert answer == "" and error is None
    assert blocker.read_text() == "not a folder"


def test_state_dir_read_only(tmp_path):
    """A read-only file system (as root, permissions alone would not stop a write)."""
    with tmpfs(tmp_path / "ro", "ro,size=64k") as folder:
        environ = dict(environment(tmp_path), RUNAWAY_GUARD_STATE_DIR=str(folder / "state"))
        assert run_process(claude_payload(tmp_path), environ) == ""


def test_full_disk_tmpfs(tmp_path):
    with tmpfs(tmp_path / "full", "size=64k") as folder:
        main = tmp_path / "p" / "s1.jsonl"
        for n in range(400):
            jsonl(main, [assistant(f"m{n}", use=usage(out=n + 1))])
        environ = dict(environment(tmp_path), RUNAWAY_GUARD_STATE_DIR=str(folder / "state"))
        (folder / "filler").write_bytes(b"x" * (40 << 10))
        payload = json.dumps(
            {**base_payload(tmp_path, "claude"), "session_id": "s1", "transcript_path": str(main)}
        ).encode()
        assert run_process(payload, environ) == ""
        # no temp files left behind to fill the disk further
        assert not list((folder / "state").rglob("*.tmp"))
        (folder / "filler").unlink()
        run_process(payload, environ)
        expected = full_read(tmp_path, "claude", "s1", payload)
        assert spend(environ, "claude", "s1") == expected


def test_full_disk_in_process(tmp_path, monkeypatch):
    """The guard's writes (fs.write) fail with ENOSPC for the state files (the log line still
    fits)."""
    environ = environment(tmp_path)
    payload = claude_payload(tmp_path)
    real_write = os.write

    def full(fd, data):
        if not os.readlink(f"/proc/self/fd/{fd}").endswith(log.LOG_NAME):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(fs, "write", full)
    answer, error = guarded(payload, environ)
    monkeypatch.setattr(fs, "write", real_write)
    assert answer == "" and error is None  # judged; what could not be saved is logged
    assert any(" unsaved " in line and "No space" in line for line in log_lines(environ))
    state = Path(environ["RUNAWAY_GUARD_STATE_DIR"]) / "sessions" / "claude"
    assert not list(state.glob("*.tmp"))
    # space again: the session is counted exactly once
    run_case(payload, environ)
    assert spend(environ, "claude", "s1") == full_read(tmp_path, "claude", "s1", payload)


def test_no_home(tmp_path):
    base = {"PATH": os.environ.get("PATH", "")}
    # no HOME, the state dir set: works normally
    environ = dict(base, RUNAWAY_GUARD_STATE_DIR=str(tmp_path / "state"))
    run_process(claude_payload(tmp_path), environ)
    assert list((tmp_path / "state" / "sessions" / "claude").glob("*.state"))
    # HOME empty, XDG dirs set
    environ = dict(
        base, HOME="", XDG_STATE_HOME=str(tmp_path / "xdg"), XDG_CONFIG_HOME=str(tmp_path / "xdgc")
    )
    run_process(claude_payload(tmp_path), environ)
    assert list((tmp_path / "xdg" / "runaway-guard").glob("sessions/claude/*.state"))
    # HOME that is a file: no state dir can exist, the guard fails open silently
    home_file = tmp_path / "homefile"
    home_file.write_text("")
    environ = dict(base, HOME=str(home_file))
    assert run_process(claude_payload(tmp_path), environ) == ""
