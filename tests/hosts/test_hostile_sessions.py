"""Hostile content in what the hosts write and send (issue 25): numbers out of range, nesting
deeper than any parser's recursion, invalid UTF-8, duplicate keys, wrong types and paths that
are not files, in a session file's line, an OpenCode row or a payload.

The property: a session the guard refuses (its spend past the cap) stays refused after any one
such change, and the guard never fails open on it; a session it allows neither crashes nor
hangs. Each host's session is one of its recorded fixtures (tests/fixtures/<host>/), but
OpenCode's, whose rows are written as OpenCode writes them (test_opencode_host's helpers).
"""

import json
import os
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import pytest
from guard_env import ROOT, fill, fuzz, tmpfs
from hypothesis import assume, given
from hypothesis import strategies as st
from runaway_guard import (
    calls,
    claude_prices,
    gemini_prices,
    hook,
    jsonio,
    ledger,
    log,
    state_file,
    tail,
)
from runaway_guard.hosts import copilot
from runaway_guard.hosts.codex import rollout
from runaway_guard.hosts.gemini import results as gemini_results
from runaway_guard.hosts.qwen import _reported_outcome
from test_opencode_host import make_db, put_message, step, tool_call

FIXTURES = ROOT / "tests" / "fixtures"
HANG_S = 5.0
HOLE = "@@hostile@@"  # where a value's raw JSON text goes, in place of the string that holds it

# The raw JSON text of hostile values: numbers out of range (an integer of 5,000 digits is past
# what Python reads from text, one of 4,000 is not), non-numbers where a number goes, nesting
# past the parser's recursion and nesting just short of it (read, then hashed deeper down).
DEEP = "[" * 5000 + "]" * 5000
ALMOST = "[@@almost@@]"  # made where it is sent (near_limit): how deep depends on the stack
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
READABLE = [number for number in NUMBERS if len(number) < 4300]
WRONG_TYPES = ['"12"', "[7]", '{"n":1}', "null", '""', '"x\\u0000y"', '"\\ud800"', "[[[]]]"]
HOSTILE = NUMBERS + WRONG_TYPES + [DEEP, ALMOST]
BAD_BYTES = [b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00", b"\xf4\x90\x80\x80"]


def near_limit(data):
    """data with ALMOST made nesting that jsonio reads from a frame or two below here, only a
    little short of where it would stop."""
    depth, frame = 0, sys._getframe()
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    levels = sys.getrecursionlimit() - depth - 20
    return data.replace(ALMOST.encode(), b"[" * levels + b"]" * levels)


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
    """(the key paths of a JSON value's numbers, every other key path in it)."""
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
        return raw(
            draw(st.sampled_from(NUMBERS + WRONG_TYPES)), record, draw(st.sampled_from(numbers))
        )
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
    priced = "usage"  # a key on the way to the token counts its reader prices

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

    def fresh(self, record, n):
        """The record as a response of its own (the host's readers price a response once)."""
        return record

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

    def log(self):
        path = Path(self.env["RUNAWAY_GUARD_STATE_DIR"]) / log.LOG_NAME
        return path.read_text(errors="replace") if path.exists() else ""

    def fail_opens(self):
        return [line for line in self.log().splitlines() if " fail-open " in line]

    def run(self, data, cap=None):
        """The guard's answer to one payload (bytes), failing open as guard.py does (a
        `fail-open` line in hook.log); it must come within HANG_S."""
        env = dict(self.env)
        if cap is not None:
            env["RUNAWAY_GUARD_MAX_USD"] = repr(cap)
        started = time.monotonic()
        data = near_limit(data)
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
        self.write(near_limit(line), replace)


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

    def fresh(self, record, n):
        record = json.loads(json.dumps(record))
        if isinstance(record.get("message"), dict):  # a response, not a cost-state record
            record["message"]["id"] = f"msg_hostile{n}"
        return record


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
        saved = os.environ.get("COPILOT_HOME"), copilot.WAIT, copilot.SHORT_WAIT
        os.environ["COPILOT_HOME"] = str(self.root / "copilot")
        copilot.WAIT = copilot.SHORT_WAIT = 0.01
        try:
            return super().run(data, cap)
        finally:
            copilot.WAIT, copilot.SHORT_WAIT = saved[1:]
            if saved[0] is None:
                del os.environ["COPILOT_HOME"]
            else:
                os.environ["COPILOT_HOME"] = saved[0]


class Qwen(Session):
    host = "qwen"
    priced = "token_count"  # its telemetry's api_response, not the usageMetadata it shows

    def place(self):
        source = FIXTURES / "qwen" / "usage"
        (chat,) = (source / "chats").glob("*.jsonl")
        self.main = self.root / "project" / "chats" / chat.name
        self.main.parent.mkdir(parents=True)
        shutil.copy(chat, self.main)
        lines = (source / "hook_inputs.jsonl").read_text().splitlines()
        self.base = next(
            payload
            for payload in map(json.loads, lines)
            if payload["hook_event_name"] == "PreToolUse"
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
    rows = 0  # hostile rows written

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
                self.rows += 1
                stamp = 1796153275877 + self.rows if created is None else created
                db.execute(
                    "INSERT INTO message (id, session_id, time_created, time_updated, data)"
                    " VALUES (?, 'ses_root', ?, ?, CAST(? AS TEXT))",
                    (f"msg_hostile{self.rows}", stamp, stamp, line),
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
            readable = isinstance(jsonio.loads(line), dict)
        except ValueError:
            readable = False
        if not readable:
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


def _has_tokens(record):
    return any("token" in str(key).lower() for path in paths_of(record)[0] for key in path)


@pytest.mark.parametrize("session_type", HOSTS, ids=lambda t: t.host)
def test_a_full_disk_never_lets_a_refused_session_pass(session_type, tmp_path):
    """The state folder on a small tmpfs that fills up while the session goes on spending
    (hook.log too, so nothing can say so): the refusal still goes out, nothing fails open, and
    once there is space the session's spend has not gone down."""
    with tmpfs(tmp_path / "state", "size=1m,mode=700") as disk:
        session, cap = refused_session(session_type, tmp_path)
        spent = session.spend()
        fill(disk / "filler")
        priced = [record for record in records_of(session_type) if _has_tokens(record)]
        for n, record in enumerate(priced[:8]):  # new responses: the ledger must grow
            session.write(jsonio.dumps(session.fresh(record, n)).encode(), None)
        for _ in range(3):
            assert refused(session.run(session.next_call(), cap))
        (disk / "filler").unlink()
        assert session.fail_opens() == []
        assert refused(session.run(session.next_call(), cap))
        assert session.spend() >= spent


@pytest.mark.parametrize("session_type", HOSTS, ids=lambda t: t.host)
def test_a_hostile_line_never_crashes_an_allowed_session(session_type):
    """Read first (the session's first call finds it) or later: no fail-open, no hang, and what
    was counted stays counted."""
    records = records_of(session_type)

    @fuzz(25)
    @given(
        line=hostile_lines(records), replace=st.none() | st.integers(0, 1000), first=st.booleans()
    )
    def case(line, replace, first):
        with tempfile.TemporaryDirectory() as root:
            session = session_type(root)
            spent = 0
            if not first:
                session.run(session.next_call())
                spent = session.spend()
            session.inject(line, replace)
            session.run(session.next_call())
            assert session.spend() >= spent
            assert session.fail_opens() == []

    case()


# The fields that say which session and which event a payload is: a hostile value there is a
# payload of no session the guard knows (it answers nothing), not a way past a refusal.
IDENTITY = {"session_id", "sessionId", "conversation_id", "hook_event_name", "runaway_guard_plugin"}


@st.composite
def hostile_fields(draw, session_type, odd, identity=False):
    """(field, its value's raw JSON text) for one field of the host's payload (with identity,
    the fields that name its session and event too)."""
    with tempfile.TemporaryDirectory() as root:
        fields = sorted(set(session_type(root).payload()) - (set() if identity else IDENTITY))
    field = draw(st.sampled_from(fields))
    # (no integer of 5,000 digits: that payload is not JSON Python reads, and what answers an
    # unreadable payload is hook.py's; nor can a host's JSON.stringify write one)
    value = draw(st.sampled_from([*READABLE, *WRONG_TYPES, ALMOST, *odd]))
    return field, value


@pytest.fixture(scope="module")
def odd_paths(tmp_path_factory):
    """Paths a payload may name that are not session files, as JSON strings."""
    root = tmp_path_factory.mktemp("odd")
    (root / "folder.jsonl").mkdir()
    os.mkfifo(root / "fifo.jsonl")
    paths = [root / "folder.jsonl", root / "fifo.jsonl", "/dev/zero", "/", f"{root}/\x00.jsonl"]
    return [json.dumps(str(path)) for path in paths] + [json.dumps("x" * 5000)]


@pytest.mark.parametrize("session_type", HOSTS, ids=lambda t: t.host)
def test_a_hostile_payload_field_never_lets_a_refused_session_pass(session_type, odd_paths):
    @fuzz(25)
    @given(change=hostile_fields(session_type, odd_paths))
    def case(change):
        with tempfile.TemporaryDirectory() as root:
            session, cap = refused_session(session_type, root)
            assert refused(session.run(session.next_call(*change), cap))
            assert session.fail_opens() == []

    case()


@pytest.mark.parametrize("session_type", HOSTS, ids=lambda t: t.host)
def test_a_hostile_payload_field_never_crashes_an_allowed_session(session_type, odd_paths):
    @fuzz(25)
    @given(change=hostile_fields(session_type, odd_paths, identity=True))
    def case(change):
        with tempfile.TemporaryDirectory() as root:
            session = session_type(root)
            session.run(session.next_call())
            spent = session.spend()
            session.run(session.next_call(*change))
            assert session.spend() >= spent
            assert session.fail_opens() == []

    case()


@pytest.mark.parametrize("session_type", HOSTS, ids=lambda t: t.host)
def test_a_hostile_session_id_is_no_session(session_type):
    """A session id that is not a string names no session: nothing to judge, nothing broken."""
    with tempfile.TemporaryDirectory() as root:
        session = session_type(root)
        (field,) = (
            IDENTITY & {"session_id", "sessionId", "conversation_id"} & set(session.payload())
        )
        for value in [*READABLE, *WRONG_TYPES, ALMOST]:
            session.run(session.next_call(field, value))
        assert session.fail_opens() == []


# ---------------------------------------------------------------------------------------------
# the places one by one


@pytest.mark.parametrize(
    "session_type", [Claude, Codex, Gemini, Copilot, Qwen], ids=lambda t: t.host
)
def test_a_line_longer_than_the_readers_limit_is_skipped(session_type):
    with tempfile.TemporaryDirectory() as root:
        session, cap = refused_session(session_type, root)
        session.inject(b'{"type":"x","usage":"' + b"9" * (tail.MAX_LINE + 10) + b'"}', None)
        assert refused(session.run(session.next_call(), cap))
        assert session.fail_opens() == []


@pytest.mark.parametrize(
    "stamp",
    [2**62, -1, 0, 1e300, "1796153275999", b"\xff\x00", None, 2**63 - 1],
    ids=repr,
)
def test_an_opencode_row_stamped_out_of_range_moves_no_window(stamp):
    """time_created is OpenCode's clock; a row stamped far ahead (or not a number) must not
    make the reader look past the rows written after it."""
    with tempfile.TemporaryDirectory() as root:
        session = OpenCode(root)
        session.run(session.next_call())
        before = session.spend()
        line = json.dumps(step("msg_odd", "anthropic", "claude-sonnet-4-6", 0.5, 10, 1)[1])
        session.write(line.encode(), None, created=stamp)
        session.run(session.next_call())
        # then a step written as OpenCode writes them, now: counted
        later = step("msg_later", "anthropic", "claude-sonnet-4-6", 2.0, 10, 1)
        put_message(session.main, "ses_root", *later, int(time.time() * 1000))
        session.run(session.next_call())
        assert session.spend() >= before + 2 * 10**12
        assert session.fail_opens() == []


def test_an_opencode_database_that_is_no_database_is_judged_on_what_was_read(tmp_path):
    with tempfile.TemporaryDirectory() as root:
        session, cap = refused_session(OpenCode, root)
        session.main.write_bytes(b"not a database " * 1000)
        assert refused(session.run(session.next_call(), cap))
        assert session.fail_opens() == []
        assert "a database it cannot read" in session.log()


@pytest.mark.parametrize("session_type", [Claude, Codex, Gemini, Qwen], ids=lambda t: t.host)
@pytest.mark.parametrize("kind", ["folder", "fifo"])
def test_a_session_file_that_is_no_file_is_logged_once_and_judged_on_what_was_read(
    session_type, kind
):
    with tempfile.TemporaryDirectory() as root:
        session, cap = refused_session(session_type, root)
        session.main.unlink()
        if kind == "folder":
            session.main.mkdir()
        else:
            os.mkfifo(session.main)
        for _ in range(3):
            assert refused(session.run(session.next_call(), cap))
        assert session.fail_opens() == []
        logged = session.log()
        assert logged.count(" ignored ") == 1 and "cannot read its session file" in logged


def test_a_legacy_gemini_session_path_that_is_a_fifo_does_not_block(tmp_path):
    with tempfile.TemporaryDirectory() as root:
        session = Gemini(root)
        fifo = session.main.with_name("session-2026-12-01T19-42-fifo.json")
        os.mkfifo(fifo)
        session.run(raw(json.dumps(str(fifo)), session.payload(), ("transcript_path",)))
        assert session.fail_opens() == []
        assert "not a regular file" in session.log()


# ---------------------------------------------------------------------------------------------
# the readers' parts


@pytest.mark.parametrize(
    "value, expected",
    [
        (12, 12),
        (12.9, 12),
        (calls.MOST, calls.MOST),
        (calls.MOST + 1, 0),
        (10**4000, 0),
        (1e300, 0),
        (float("inf"), 0),
        (float("nan"), 0),
        (-1, 0),
        (-0.5, 0),
        (True, 0),
        ("12", 0),
        ([12], 0),
        (None, 0),
    ],
)
def test_a_count_from_outside_data(value, expected):
    assert calls.count(value) == expected


def test_a_response_with_a_hostile_count_costs_what_its_other_counts_cost():
    """The choice: a count that is not one is worth nothing; the others still count."""
    plain = {"input_tokens": 1000, "output_tokens": 10}
    expected = claude_prices.claude_cost("claude-sonnet-4-6", plain)[0]
    for hostile in (1e300, 10**4000, float("inf"), float("nan"), -5, True, "7", [1]):
        usage = dict(plain, cache_read_input_tokens=hostile)
        assert claude_prices.claude_cost("claude-sonnet-4-6", usage)[0] == expected
        tokens = {"input": 1000, "output": 10, "cached": hostile, "thoughts": hostile}
        gemini = gemini_prices.gemini_cost("gemini-2.5-pro", tokens)[0]
        assert (
            gemini == gemini_prices.gemini_cost("gemini-2.5-pro", {"input": 1000, "output": 10})[0]
        )


def test_a_value_nested_nearly_as_deep_as_the_parser_reads_is_hashed_deeper_down():
    """jsonio reads it near the top of the stack; the hash is taken further down, where its
    encoder would run out of recursion."""
    text = near_limit(ALMOST.encode())
    value, other = jsonio.loads(text), jsonio.loads(text.replace(b"[]", b"[1]"))

    def down(depth, item):
        return down(depth - 1, item) if depth else calls.fingerprint(item)

    assert down(40, value) == down(40, jsonio.loads(text)) != down(40, other)
    assert calls.fingerprint({"a": [1, "x"]}) == calls.fingerprint({"a": [1, "x"]})
    assert calls.canonical({"b": [1.5, None], "a": "x"}) == '{"a":"x","b":[1.5,null]}'

    def deep_down(depth, work):
        return deep_down(depth - 1, work) if depth else work()

    # the readers that write a tool's output out as text (to hash it, or to read its status)
    assert deep_down(40, lambda: rollout._output_text(value)) == calls.canonical(value)
    assert deep_down(40, lambda: _reported_outcome("PostToolUse", {"tool_response": value}))
    deep_down(40, lambda: gemini_results._decode_left(value, {}))


def test_ledger_lines_the_guard_did_not_write_are_ignored(tmp_path):
    """A line of the session's ledger (the guard's own file, which the agent can write to) that
    takes money away or cannot be summed is no entry: the rebuilt spend is the real lines'."""
    with ledger.Ledger(str(tmp_path), "claude", "s1") as book:
        book.usage(
            "m1",
            "main",
            "claude-sonnet-4-6",
            picodollars=5 * 10**12,
            known_model=True,
            output=10,
            day="2026-12-01",
        )
    path = tmp_path / "sessions" / "claude" / "s1.ledger"
    with path.open("ab") as handle:
        for amount in ("-5000000000000", "true", "1e300", "1" + "0" * 40, "1" + "0" * 5000):
            handle.write(f'["m{amount[:3]}",{amount},1,"m","main","2026-12-01"]\n'.encode())
        handle.write(b'["m9",1,-1,"m","main","2026-12-01"]\n' + DEEP.encode() + b"\n\xff\n")
    (tmp_path / "sessions" / "claude" / f"s1{state_file.STATE}").unlink()
    with ledger.Ledger(str(tmp_path), "claude", "s1") as book:
        assert book.state["spend"]["total"] == 5 * 10**12


class CursorFailures(Cursor):
    """A Cursor turn refused by its failure run (five shell calls failed in a row): a hostile
    post-tool payload never ends the run nor makes the guard fail open."""

    def place(self):
        super().place()
        inputs = FIXTURES / "cursor" / "docs" / "hook_inputs.jsonl"
        self.failure = dict(
            json.loads(inputs.read_text().splitlines()[3]), conversation_id=self.session_id
        )
        self.env["RUNAWAY_GUARD_MAX_FAILURES"] = "5"
        for n in range(5):
            self.run(json.dumps(self.payload(f"fail{n}")).encode())
            failed = dict(self.failure, tool_use_id=f"fail{n}", generation_id="g")
            self.run(json.dumps(failed).encode())

    def payload(self, tool_use_id=None):
        return dict(super().payload(), generation_id="g", tool_use_id=tool_use_id or "next")

    def records(self):
        return [dict(self.failure, generation_id="g", tool_use_id="fail4")]


@pytest.mark.parametrize("session_type", [CursorFailures], ids=lambda t: t.host)
def test_a_hostile_payload_never_ends_a_failure_run(session_type):
    records = records_of(session_type)

    @fuzz(40)
    @given(line=hostile_lines(records))
    def case(line):
        with tempfile.TemporaryDirectory() as root:
            session = session_type(root)
            assert refused(session.run(session.next_call()))
            session.inject(line, None)
            assert refused(session.run(session.next_call()))
            assert session.fail_opens() == []

    case()


@pytest.mark.parametrize("session_type", HOSTS, ids=lambda t: t.host)
def test_what_is_passed_over_is_said_once_a_session_and_a_clean_session_says_nothing(
    session_type,
):
    with tempfile.TemporaryDirectory() as root:
        session = session_type(root)
        session.run(session.next_call())
        assert " ignored " not in session.log()
        # a record with token counts, one of them hostile, and (but for a payload, which would
        # be unreadable) the same record not JSON
        counts = [
            (record, path, any(session.priced in str(key).lower() for key in path))
            for record in session.records()
            for path in paths_of(record)[0]
            if any("token" in str(key).lower() for key in path)
        ]
        record, path, _ = max(counts, key=lambda found: found[2])  # a usage's, where there is one
        for n in range(3):
            session.inject(raw("-1e300", session.fresh(record, n), path), None)
            if session_type is not Cursor:
                session.inject(b"{\xff" + json.dumps(session.fresh(record, n)).encode()[1:], None)
            session.run(session.next_call())
        said = [line for line in session.log().splitlines() if " ignored " in line]
        assert len(said) == 1 and session.session_id in said[0]
