"""Hostile content in what the hosts write and send (issue 25): numbers out of range, nesting
deeper than any parser's recursion, invalid UTF-8, duplicate keys, wrong types and paths that
are not files, in a session file's line, an OpenCode row or a payload.

The property: a session the guard refuses (its spend past the cap) stays refused after any one
such change, and the guard never fails open on it; a session it allows neither crashes nor
hangs. Each host's session is one of its recorded fixtures (tests/fixtures/<host>/).
"""

import json
import os
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path

import pytest
from guard_env import ROOT, fuzz
from hypothesis import assume, example, given
from hypothesis import strategies as st
from runaway_guard import calls, hook, jsonio, ledger, log, pricing
from runaway_guard.hosts import copilot
from test_opencode_host import make_db, put_message, step, tool_call

FIXTURES = ROOT / "tests" / "fixtures"
HANG_S = 5.0
HOLE = "@@hostile@@"  # where a value's raw JSON text goes, in place of the string that holds it

# The raw JSON text of hostile values: numbers out of range (an integer of 5,000 digits is past
# what Python reads from text, one of 4,000 is not), non-numbers where a number goes, nesting
# past the parser's recursion and nesting just short of it (read, then hashed deeper down).
DEEP = "[" * 5000 + "]" * 5000
ALMOST = "[" * 985 + "]" * 985
NUMBERS = [
    "1e300",
    "-1e300",
    "Infinity",
    "-Infinity",
    "NaN",
    "-1",
    "-1" + "0" * 30,
    "1" + "0" * 30,
    "1" + "0" * 5000,
    "1" + "0" * 4000,
    "0.5",
    "true",
    "false",
]
WRONG_TYPES = ['"12"', "[7]", '{"n":1}', "null", '""', '"x\\u0000y"', '"\\ud800"', "[[[]]]"]
HOSTILE = NUMBERS + WRONG_TYPES + [DEEP, ALMOST]
BAD_BYTES = [b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00", b"\xf4\x90\x80\x80"]


def raw(value_text, record=None, path=()):
    """The line of record with the value at path replaced by value_text (the whole line when
    path is empty)."""
    if not path:
        return value_text.encode()
    record = json.loads(json.dumps(record))
    target = record
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = HOLE
    return json.dumps(record, separators=(",", ":")).replace(f'"{HOLE}"', value_text).encode()


def paths_of(value, prefix=()):
    """Every key path in a JSON value; the numbers' paths first."""
    numbers, others = [], []
    stack = [(value, prefix)]
    while stack:
        item, at = stack.pop()
        if at:
            is_number = isinstance(item, (int, float)) and not isinstance(item, bool)
            (numbers if is_number else others).append(at)
        if isinstance(item, dict):
            stack.extend((inner, (*at, key)) for key, inner in item.items())
        elif isinstance(item, list):
            stack.extend((inner, (*at, index)) for index, inner in enumerate(item))
    return numbers, others


@st.composite
def hostile_lines(draw, records):
    """One hostile line made from one of a host's records."""
    record = draw(st.sampled_from(records))
    kind = draw(st.sampled_from(["number", "number", "value", "record", "bytes", "duplicate"]))
    numbers, others = paths_of(record)
    if kind == "record" or not (numbers or others):
        return raw(draw(st.sampled_from([*HOSTILE, '"a string"', "[1,2]"])))
    if kind == "number" and numbers:
        return raw(draw(st.sampled_from(NUMBERS + WRONG_TYPES)), record, draw(st.sampled_from(numbers)))
    line = json.dumps(record, separators=(",", ":")).encode()
    if kind == "bytes":
        at = draw(st.integers(0, len(line)))
        return line[:at] + draw(st.sampled_from(BAD_BYTES)) + line[at:]
    if kind == "duplicate":
        # JSON.parse and json.loads keep the last of two members of one name; a head reader the
        # first: the hostile value goes first or last.
        key = json.dumps(draw(st.sampled_from(sorted(record))))
        value = draw(st.sampled_from(HOSTILE)).encode()
        if draw(st.booleans()):
            return b"{" + key.encode() + b":" + value + b"," + line[1:]
        return line[:-1] + b"," + key.encode() + b":" + value + b"}"
    return raw(draw(st.sampled_from(HOSTILE)), record, draw(st.sampled_from(numbers + others)))


# ---------------------------------------------------------------------------------------------
# each host's recorded session, placed under a folder, and the payload of its next call


class Session:
    """A host's recorded session under root: its files, and its next PreToolUse payloads."""

    host = ""
    session_id = ""

    def __init__(self, root):
        self.root = Path(root)
        self.env = {
            "HOME": str(self.root / "home"),
            "RUNAWAY_GUARD_STATE_DIR": str(self.root / "state"),
            "RUNAWAY_GUARD_MAX_FAILURES": "99",
            "RUNAWAY_GUARD_MAX_REPEATS": "99",
        }
        self.calls = 0
        self.place()

    def place(self):
        raise NotImplementedError

    def payload(self):
        """The next call's payload: a shell command the session has not run yet."""
        raise NotImplementedError

    def records(self):
        """The records of its main session file, to make hostile lines from."""
        return [json.loads(line) for line in self.main.read_bytes().splitlines() if line.strip()]

    def write(self, line, replace):
        """Append the line to the main file, or put it in place of one of its records (the file
        written again in place, as a host rewriting it would)."""
        lines = self.main.read_bytes().splitlines(keepends=True)
        if replace is not None:
            lines[replace % len(lines)] = line + b"\n"
        else:
            lines.append(line + b"\n")
        self.main.write_bytes(b"".join(lines))

    def spend(self):
        with ledger.Ledger(self.env["RUNAWAY_GUARD_STATE_DIR"], self.host, self.session_id) as book:
            return book.state["spend"]["total"]

    def fail_opens(self):
        path = Path(self.env["RUNAWAY_GUARD_STATE_DIR"]) / log.LOG_NAME
        lines = path.read_text(errors="replace").splitlines() if path.exists() else []
        return [line for line in lines if " fail-open " in line]

    def run(self, data, cap=None):
        """The guard's answer to one payload (bytes), failing open as guard.py does (a
        `fail-open` line in hook.log); it must come within HANG_S."""
        env = dict(self.env)
        if cap is not None:
            env["RUNAWAY_GUARD_MAX_USD"] = repr(cap)
        started = time.monotonic()
        try:
            answer = hook.run(data, env)
        except BaseException as error:
            log.append(env["RUNAWAY_GUARD_STATE_DIR"], "fail-open", f"{error!r}")
            answer = ""
        assert time.monotonic() - started < HANG_S
        assert "\n" not in answer and (not answer or isinstance(json.loads(answer), dict))
        return answer

    def next_call(self, field=None, value_text=None):
        """The next call's payload as bytes; with field, that field's value is value_text."""
        self.calls += 1
        payload = self.payload()
        if field is None:
            return json.dumps(payload).encode()
        return raw(value_text, payload, (field,))

    def inject(self, line, replace):
        self.write(line, replace)


def refused(answer):
    """Whether an answer refuses the call (deny, ask or stop, in any host's words)."""
    return any(word in answer for word in ('"deny"', '"ask"', '"stop"', '"continue":false'))


class Claude(Session):
    host = "claude"

    def place(self):
        source = FIXTURES / "claude" / "failures"
        self.session_id = json.loads((source / "result.json").read_text())["session_id"]
        self.main = self.root / "p" / f"{self.session_id}.jsonl"
        self.main.parent.mkdir(parents=True)
        shutil.copy(source / self.main.name, self.main)

    def payload(self):
        return {
            "session_id": self.session_id,
            "transcript_path": str(self.main),
            "cwd": str(self.root),
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": f"echo {self.calls}"},
            "tool_use_id": f"toolu_hostile{self.calls}",
            "prompt_id": "p1",
        }


class Codex(Session):
    host = "codex"

    def place(self):
        shutil.copytree(FIXTURES / "codex" / "usage" / "sessions", self.root / "sessions")
        (self.main,) = self.root.glob("sessions/**/rollout-*.jsonl")
        meta = json.loads(self.main.read_text().splitlines()[0])["payload"]
        self.session_id = meta["session_id"]

    def payload(self):
        return {
            "session_id": self.session_id,
            "turn_id": "turn-hostile",
            "transcript_path": str(self.main),
            "cwd": str(self.root),
            "hook_event_name": "PreToolUse",
            "model": "gpt-5.5",
            "tool_name": "Bash",
            "tool_input": {"command": f"echo {self.calls}"},
            "tool_use_id": f"call_hostile{self.calls}",
        }


class Gemini(Session):
    host = "gemini"

    def place(self):
        source = FIXTURES / "gemini" / "failures"
        shutil.copytree(source / "chats", self.root / "chats")
        (self.main,) = (self.root / "chats").glob("*.jsonl")
        lines = (source / "hook_inputs.jsonl").read_text().replace("<root>", str(self.root))
        self.base = next(
            payload
            for payload in map(json.loads, lines.splitlines())
            if payload["hook_event_name"] == "BeforeTool"
        )
        self.session_id = self.base["session_id"]

    def payload(self):
        return dict(
            self.base,
            transcript_path=str(self.main),
            timestamp=f"2026-12-01T20:00:{self.calls % 60:02d}.000Z",
            tool_input={"command": f"echo {self.calls}"},
        )


class Copilot(Session):
    host = "copilot"

    def place(self):
        source = FIXTURES / "copilot" / "basic"
        shutil.copytree(source / "session-state", self.root / "copilot" / "session-state")
        (self.main,) = self.root.glob("copilot/session-state/*/events.jsonl")
        self.session_id = self.main.parent.name

    def payload(self):
        return {
            "sessionId": self.session_id,
            "timestamp": 1796153301084 + self.calls,
            "cwd": str(self.root),
            "toolName": "bash",
            "toolArgs": {"command": f"echo {self.calls}"},
        }

    def run(self, data, cap=None):
        # Copilot's module reads COPILOT_HOME from the process's environment; a call waits for
        # events.jsonl to show it, which these calls never do.
        saved = os.environ.get("COPILOT_HOME"), copilot.WAIT
        os.environ["COPILOT_HOME"] = str(self.root / "copilot")
        copilot.WAIT = copilot.SHORT_WAIT = 0.01
        try:
            return super().run(data, cap)
        finally:
            copilot.WAIT, copilot.SHORT_WAIT = saved[1], 0.2
            if saved[0] is None:
                del os.environ["COPILOT_HOME"]
            else:
                os.environ["COPILOT_HOME"] = saved[0]


class Qwen(Session):
    host = "qwen"

    def place(self):
        source = FIXTURES / "qwen" / "usage"
        (chat,) = (source / "chats").glob("*.jsonl")
        self.main = self.root / "project" / "chats" / chat.name
        self.main.parent.mkdir(parents=True)
        shutil.copy(chat, self.main)
        lines = (source / "hook_inputs.jsonl").read_text().splitlines()
        self.base = next(
            payload for payload in map(json.loads, lines) if payload["hook_event_name"] == "PreToolUse"
        )
        self.session_id = self.base["session_id"]

    def payload(self):
        return dict(
            self.base,
            transcript_path=str(self.main),
            cwd=str(self.root),
            tool_input={"command": f"echo {self.calls}"},
            tool_use_id=f"toolu_hostile{self.calls}",
            tool_call_id=f"call_hostile{self.calls}",
        )


class OpenCode(Session):
    """OpenCode's session is rows of its SQLite database: a hostile line is a message's data,
    written as a new row or over one that was there."""

    host = "opencode"

    def place(self):
        self.main = make_db(self.root / "opencode.db")
        self.session_id = "ses_root"
        for n in range(4):
            message = step(f"msg_{n}", "anthropic", "claude-sonnet-4-6", 0.3, 1000, 100)
            put_message(self.main, "ses_root", *message, 1796153274877 + n)

    def records(self):
        with sqlite3.connect(self.main) as db:
            return [json.loads(data) for (data,) in db.execute("SELECT data FROM message")]

    def write(self, line, replace, created=None):
        with sqlite3.connect(self.main) as db:
            if replace is not None:
                db.execute(
                    "UPDATE message SET data = CAST(? AS TEXT) WHERE id = ?",
                    (line, f"msg_{replace % 4}"),
                )
            else:
                stamp = 1796153275877 + self.calls if created is None else created
                db.execute(
                    "INSERT INTO message (id, session_id, time_created, time_updated, data)"
                    " VALUES (?, 'ses_root', ?, ?, CAST(? AS TEXT))",
                    (f"msg_hostile{self.calls}", stamp, stamp, line),
                )

    def payload(self):
        return tool_call(self.main, f"call_hostile{self.calls}")


class Cursor(Session):
    """Cursor writes no session file the guard reads: its stop hook's payload brings the
    turn's tokens, and a hostile line is such a payload."""

    host = "cursor"

    def place(self):
        inputs = FIXTURES / "cursor" / "mulmoterminal-2026.09" / "hook_inputs.jsonl"
        self.stop = json.loads(inputs.read_text().splitlines()[0])
        inputs = FIXTURES / "cursor" / "ggshield-2.5.25" / "hook_inputs.jsonl"
        self.base = json.loads(inputs.read_text().splitlines()[1])
        self.session_id = self.base["conversation_id"]
        for n in range(3):  # three turns' spend
            self.stop_hook(dict(self.stop, conversation_id=self.session_id, generation_id=f"s{n}"))

    def stop_hook(self, record):
        self.run(json.dumps(record).encode())

    def records(self):
        return [dict(self.stop, conversation_id=self.session_id, generation_id="hostile")]

    def write(self, line, replace):
        # A payload that is no JSON object is hook.py's to answer (with Cursor's allow): what
        # the host module reads is an object's fields.
        try:
            assume(isinstance(jsonio.loads(line), dict))
        except ValueError:
            assume(False)
        self.run(line)

    def payload(self):
        return dict(
            self.base,
            generation_id=f"g{self.calls}",
            tool_use_id=f"tool-hostile{self.calls}",
            tool_input={"command": f"echo {self.calls}", "cwd": "", "timeout": 30000},
        )


HOSTS = [Claude, Codex, Gemini, Copilot, Qwen, OpenCode, Cursor]
RECORDS = {}  # each host's records, read once


def records_of(session_type):
    if session_type not in RECORDS:
        with tempfile.TemporaryDirectory() as root:
            RECORDS[session_type] = session_type(root).records()
    return RECORDS[session_type]


# ---------------------------------------------------------------------------------------------
# the property


def refused_session(session_type, root):
    """The host's session, its spend past the cap (half what it spent): (session, cap)."""
    session = session_type(root)
    session.run(session.next_call())
    spent = session.spend()
    assert spent > 0
    cap = spent / 2 / 10**12
    assert refused(session.run(session.next_call(), cap))
    return session, cap


@pytest.mark.parametrize("session_type", HOSTS, ids=lambda t: t.host)
def test_a_hostile_line_never_lets_a_refused_session_pass(session_type):
    records = records_of(session_type)

    @fuzz(40)
    @given(line=hostile_lines(records), replace=st.none() | st.integers(0, 1000))
    def case(line, replace):
        with tempfile.TemporaryDirectory() as root:
            session, cap = refused_session(session_type, root)
            spent = session.spend()
            session.inject(line, replace)
            assert refused(session.run(session.next_call(), cap))
            assert session.spend() >= spent
            assert session.fail_opens() == []

    case()
