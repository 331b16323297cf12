"""Claude Code's reader passes over a response's repeated rows undecoded
(transcript._Reader._repeats): what it books must be what decoding every row books, whatever the
rows' bytes."""

import json

from claude_records import usage
from hypothesis import example, given, settings
from hypothesis import strategies as st
from runaway_guard import jsonio
from runaway_guard.hosts.claude import transcript

USAGES = [
    usage(out=10, read=5),
    usage(out=10, read=6),
    usage(out=12, read=5),
    usage(out=10, read=5, service_tier="priority"),  # differs in its last bytes
]
IDS = ["msg_1", "msg_12", "msg_1\\u0031", 'msg_"1', "msg_2"]
# Bytes a row's own members are looked for by, inside strings and tool inputs.
TRICKY = [
    '"usage":{"output_tokens":10}',
    json.dumps(USAGES[0]),
    '}]},"x":{"usage":',
    ',"type":"assistant"',
    ',"requestedModel":"claude-sonnet-4-6"',
    '"pausedResponses"',
    '"isSidechain":false,',
    "\\",
    '\\"',
    "}",
    "é",
    "a",
]


def mostly(plain, other):
    """plain three times in four, else other's draw."""
    return st.one_of(st.just(plain), st.just(plain), st.just(plain), other)


text = mostly("ok", st.lists(st.sampled_from(TRICKY), max_size=4).map("".join))
blocks = st.one_of(
    st.builds(lambda t: {"type": "thinking", "thinking": t, "signature": "Eq"}, text),
    st.builds(lambda t: {"type": "text", "text": t}, text),
    st.builds(
        lambda t, i: {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": i or {"t": t}},
        text,
        mostly(
            None, st.sampled_from([{"usage": USAGES[0]}, {"a": [{"b": 1}], "c": {"usage": {}}}])
        ),
    ),
    st.just({"type": "tool_result", "tool_use_id": "toolu_1", "content": "done"}),
)
ROOT_TAIL = ["requestId", "requestedModel", "type", "uuid", "timestamp", "cwd", "version"]


def moved(record, key, after):
    """record with key (if there) right after the key after."""
    out = {}
    for name, value in record.items():
        if name != key:
            out[name] = value
        if name == after and key in record:
            out[key] = record[key]
    return out


def odd(draw, record, message, use):
    """One of the ways a row can differ in meaning, or in where its members are (those that
    change what a row books come twice)."""
    kind = draw(st.sampled_from([*range(19), 0, 2, 3, 4, 4, 6, 7, 12, 13, 16, 17, 17, 17]))
    if kind == 0:
        message["pausedResponses"] = draw(st.sampled_from([[], [{"usage": use}]]))
        message = moved(message, "pausedResponses", "content")
    elif kind == 1:
        record["isApiErrorMessage"] = True
    elif kind == 2:
        record["type"] = draw(st.sampled_from(["user", "system", "cost-state"]))
    elif kind == 3:  # the last usage is another object's, the message's differs or is missing
        record = moved(dict(record, x={"y": 1, "usage": use}), "x", "message")
        message["usage"] = draw(st.sampled_from([*USAGES, None]))
    elif kind == 4:
        x = {"y": {"usage": use}, "type": "assistant"}  # no other object after the usage's
        record = moved(dict(record, x=x, type="user"), "x", "message")
        message.pop("usage", None)
    elif kind == 5:
        message["stop_details"] = draw(st.sampled_from([None, {"a": 1}, "}", "[", "]"]))
    elif kind == 6:
        placeholder = dict(use, output_tokens=use["output_tokens"] - 1)
        message["usage"] = draw(st.sampled_from([placeholder, *USAGES]))
    elif kind == 7:
        models = ["", None, 1, "claude-sonnet-4-6", "claude-opus-4-8", 'a\\"b', "a\\\\"]
        record["requestedModel"] = draw(st.sampled_from(models))
    elif kind == 8:
        keys = draw(st.permutations(list(message)))
        message = {key: message[key] for key in keys}
    elif kind == 9:
        keys = draw(st.permutations(list(record)))
        record = {key: record[key] for key in keys}
    elif kind == 10:
        for key in ("isSidechain", "agentId"):
            record = moved(record, key, "type")
    elif kind == 11:
        message = {"usage": use, **message}
    elif kind == 12:
        if record.pop("version", None) is None:
            record["version"] = "2.1.329"
    elif kind == 13:
        message.pop("id", None)
        record["requestId"] = draw(st.sampled_from(["req_1", "req_2"]))
    elif kind == 14:
        message["model"] = "<synthetic>"
    elif kind == 15:
        record["cwd"] = draw(st.sampled_from(['x},"', "}", '},"1', "x]"]))
    elif kind == 16:
        record["isSidechain"] = not record.get("isSidechain")
    elif kind == 17:  # another response, or model, with the same usage
        message[draw(st.sampled_from(["id", "model"]))] = draw(st.sampled_from(["msg_2", "m"]))
    else:
        record["parentUuid"] = draw(st.sampled_from([None, "p-22", 'p\\"3', "p\\"]))
    record["message"] = message
    return record, message


OTHERS = [
    b'{"parentUuid":"p","type":"user","message":{"role":"user","content":[{"type":"tool_result"'
    b',"tool_use_id":"toolu_1","content":"usage"}]},"version":"2.1.328"}',
    b'{"type":"progress","data":{"usage":1}}',
    b'{"type":"system","subtype":"compact_boundary","uuid":"c1","compactMetadata":'
    b'{"preTokens":100,"postTokens":10},"version":"2.1.328"}',
]


@st.composite
def response(draw):
    """A response's rows: its first, then copies with another block, the second of them (and
    now and then another) odd in one way."""
    msg_id = draw(mostly("msg_1", st.sampled_from(IDS)))
    use = draw(st.sampled_from(USAGES))
    model = draw(mostly("claude-opus-4-8", st.sampled_from(["claude-sonnet-4-6", "<synthetic>"])))
    requested = draw(st.sampled_from([None, None, "claude-sonnet-4-6", "claude-opus-4-8", "a\\"]))
    side = draw(st.sampled_from([{}, {}, {"agentId": "a1"}, {"agentId": "a2"}]))
    side = {"isSidechain": draw(mostly(False, st.just(True))), **side}
    # Now and then a response whose rows all lack a version or an id, or say whose they are
    # after the message, or name its id or model after the content.
    drop = draw(mostly(None, st.sampled_from(["version", "id"])))
    late = draw(st.booleans())
    named_late = draw(st.sampled_from([(), (), ("id",), ("model",), ("id", "model")]))
    decoy = draw(mostly(False, st.just(True)))  # an object before the message that looks like it
    lines = []
    for index in range(draw(st.integers(2, 3))):
        message = {
            "id": msg_id,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [draw(blocks)],
            "stop_reason": draw(st.sampled_from([None, "tool_use"])),
            "stop_sequence": None,
            "usage": use,
        }
        record = {"parentUuid": "p-1", **side, "message": message}
        record.update(requestId="req_1", requestedModel=requested, type="assistant", uuid="u1")
        record.update(timestamp="2026-11-30T10:00:00.000Z", cwd=draw(text), version="2.1.328")
        if requested is None:
            del record["requestedModel"]
        if drop:
            (message if drop == "id" else record).pop(drop)
            record["requestId"] = draw(st.sampled_from(["req_1", "req_2"]))
        if late:
            record = moved(moved(record, "isSidechain", "type"), "agentId", "type")
        for key in named_late:
            message = record["message"] = moved(message, key, "content")
        if decoy:
            fake = {"a": 1, "message": {"id": "msg_2", "model": "m", "content": []}}
            record = moved(dict(record, x=fake), "x", "isSidechain")
        if index == 1 or draw(st.integers(0, 7)) == 0:  # the second row always
            record, message = odd(draw, record, message, use)
        spaced = draw(st.integers(0, 19)) == 0
        line = json.dumps(
            record,
            ensure_ascii=draw(st.booleans()),
            separators=(", ", ": ") if spaced else (",", ":"),
        )
        lines.append(line.encode())
        if draw(st.integers(0, 7)) == 0:
            lines.append(draw(st.sampled_from(OTHERS)))
    return lines


transcripts = st.lists(response(), min_size=1, max_size=2).map(
    lambda parts: [line for part in parts for line in part]
)


class Book:
    """A ledger that writes down what it is told, in order."""

    def __init__(self, pending):
        self.calls = []
        self.pending = pending
        self.known = None
        self.state = {}  # what text_loops counts

    def expecting(self):
        return self.pending

    def waiting_for(self, raw):
        return self.pending

    def __getattr__(self, name):  # usage, result, estimate_unwritten, reconcile
        return lambda *args, **kwargs: self.calls.append((name, *args, *kwargs.values()))


class Plain(transcript._Reader):
    """The reader decoding every row it wants, as before the fast path."""

    def _repeats(self, raw, usage_at):
        return False


def read(reader_class, lines, agent, ver, pending):
    entry = {"agent": agent}
    if ver:
        entry["ver"] = "2.1.328"
    book = Book(pending)
    reader = reader_class(book, entry)
    data = bytearray(b"\n".join(lines) + b"\n")
    reader.lines(data, 0, len(data))
    reader.flush()
    return book.calls, entry, book.state


def row(block, parent=None, requested="claude-opus-4-8", late=(), decoy=False, **changes):
    """A row of one response as Claude Code 2.1.328 writes it (bench/sessions/claude.py writes them
    so), its message's members changed by changes, those named in late moved after the content,
    and with decoy an object before the message that looks like one."""
    message = {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-opus-4-8",
        "content": [{"type": block, "text": '"usage":{}'}],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": USAGES[0],
        **changes,
    }
    for key in late:
        message = moved(message, key, "content")
    record = {"parentUuid": parent, "isSidechain": False, "message": message}
    if decoy:
        fake = {"a": 1, "message": {"id": "msg_02", "model": "m", "content": []}}
        record = moved(dict(record, x=fake), "x", "isSidechain")
    record.update(requestId="req_01", requestedModel=requested, type="assistant", uuid=block)
    record.update(timestamp="2026-11-30T10:00:00.000Z", version="2.1.328")
    if requested is None:
        del record["requestedModel"]
    return json.dumps(record, separators=(",", ":")).encode()


@settings(max_examples=2500)
@given(transcripts, st.sampled_from(["main", "a1"]), mostly(True, st.just(False)), st.booleans())
# Rows whose head does not hold the message's id, or model, or holds an object like a message:
# another row with the same usage may be another response's, or of another model.
@example(
    [row("text", late=("id",)), row("tool_use", late=("id",), id="msg_02")], "main", True, False
)
@example(
    [row("text", None, None, ("model",)), row("tool_use", None, None, ("model",), model="m")],
    "main",
    1,
    0,
)
@example([row("text", decoy=True), row("tool_use", decoy=True, id="msg_02")], "main", True, False)
def test_passing_over_repeated_rows_books_what_decoding_them_does(lines, agent, ver, pending):
    expected = read(Plain, lines, agent, ver, pending)
    assert read(transcript._Reader, lines, agent, ver, pending) == expected


def test_a_responses_repeated_rows_are_not_decoded(monkeypatch):
    """Only the first of the rows Claude Code writes for one response is decoded."""
    lines = [row("thinking"), row("text", "thinking"), row("tool_use", "text")]
    decoded = []
    loads = jsonio.loads
    monkeypatch.setattr(jsonio, "loads", lambda raw: decoded.append(raw) or loads(raw))
    calls, _, _ = read(transcript._Reader, lines, "main", True, False)
    assert decoded == lines[:1]
    assert [call[0] for call in calls] == ["usage"]
