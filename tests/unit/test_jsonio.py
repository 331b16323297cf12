"""jsonio reads and writes exactly what `json` does, without importing it on the hot path."""

import json
import math
import subprocess
import sys

import pytest
from guard_env import SKILL
from hypothesis import example, given
from hypothesis import strategies as st
from runaway_guard import jsonio

values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
    max_leaves=20,
)


def same(a, b):
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return a == b and type(a) is type(b)


@given(values)
def test_round_trip_equals_json(value):
    text = jsonio.dumps(value)
    assert json.loads(text) == value
    assert jsonio.loads(text) == value
    assert text == json.dumps(value, separators=(",", ":"))


@given(values)
def test_sorted_dump_equals_json(value):
    assert jsonio.dumps(value, sort_keys=True) == json.dumps(
        value, sort_keys=True, separators=(",", ":")
    )


@given(st.text() | st.binary().map(lambda b: b.decode("latin-1")))
def test_any_text_parses_as_json_would_or_raises_value_error(text):
    try:
        expected = json.loads(text)
    except ValueError:
        expected = ValueError
    try:
        got = jsonio.loads(text)
    except ValueError:
        got = ValueError
    assert got is expected or same(got, expected)


def test_the_hook_imports_neither_json_nor_re():
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "from runaway_guard import claude_prices, hook, openai_prices;"
        "claude_prices.claude_cost('claude-opus-4-8', {'input_tokens': 1});"
        "openai_prices.openai_cost('gpt-5.5', {'input_tokens': 1});"
        "print(sorted({'json', 're'} & set(sys.modules)))"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code, str(SKILL)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "[]"


# Records as hosts write them: keys a reader looks for among others, and text full of the bytes
# that could fool a reader of heads: quotes, backslashes, brackets, `"type":"` itself.
tricky_text = st.lists(
    st.sampled_from(['"', "\\", "{", "[", "}", ":", ",", '"type":"', "type", "a", "é"])
).map("".join)
keys = st.sampled_from(["type", "payload", "message", "a", "ty\\pe", 'x"type']) | st.text()
record_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | tricky_text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=12,
)
records = st.dictionaries(keys, record_values, max_size=6)


@given(records, st.booleans(), st.booleans())
def test_head_types_agree_with_a_full_decode(record, ascii_only, spaced):
    separators = (", ", ": ") if spaced else (",", ":")
    line = json.dumps(record, ensure_ascii=ascii_only, separators=separators).encode()
    data = bytearray(b"junk\n" + line + b"\nmore")
    kind, inner = jsonio.head_types(data, 5, 5 + len(line), "payload")
    if kind is not None:
        assert record["type"] == kind
    if inner is not None:
        assert record["payload"]["type"] == inner
    assert jsonio.head_types(line, 0, len(line)) == (kind, None)
    for key in ("type", "a"):
        found = jsonio.leading_string(data, 5, 5 + len(line), b'"payload":{"%s":"' % key.encode())
        if found is not None:
            assert record["payload"][key] == found


@given(records, st.booleans(), st.booleans())
def test_type_at_finds_the_type_head_types_reads(record, ascii_only, spaced):
    separators = (", ", ": ") if spaced else (",", ":")
    line = json.dumps(record, ensure_ascii=ascii_only, separators=separators).encode()
    data = bytearray(b"junk\n" + line + b"\nmore")
    key = jsonio.type_at(data, 5, 5 + len(line))
    kind = jsonio.head_types(data, 5, 5 + len(line))[0]
    if key < 0:
        assert kind is None
    else:
        assert data.startswith(b'"type":"', key)
        if kind is not None:
            end = data.index(b'"', key + 8)
            assert data[key + 8 : end].decode("ascii", "replace") == kind


def type_at_by_searches(data, start, stop):
    """type_at as first written, one search or test a condition: the reference for type_at,
    which reads the head before the key as one slice (fewer calls, each of which parses its
    arguments on Python 3.11)."""
    stop = min(stop, start + jsonio.HEAD)
    key = data.find(b'"type":"', start + 1, stop)
    if (
        key < 0
        or not data.startswith(b"{", start)
        or data[key - 1] == 0x5C
        or data.find(b"{", start + 1, key) >= 0
        or data.find(b"[", start + 1, key) >= 0
    ):
        return -1
    return key


@given(records, st.booleans(), st.booleans(), st.binary(max_size=4), st.integers(0, 1100))
def test_type_at_reads_a_head_as_the_searches_do(record, ascii_only, spaced, junk, cut):
    separators = (", ", ": ") if spaced else (",", ":")
    line = json.dumps(record, ensure_ascii=ascii_only, separators=separators).encode()
    data = bytearray(junk + b"\n" + line + b"\nmore")
    start = len(junk) + 1
    for stop in (start + len(line), start + min(cut, len(line)), len(data)):
        assert jsonio.type_at(data, start, stop) == type_at_by_searches(data, start, stop)
    assert jsonio.type_at(line, 0, len(line)) == type_at_by_searches(line, 0, len(line))


# Bytes made of what a head's reader looks at, and a run that takes a key to HEAD's edge.
head_bytes = st.lists(
    st.sampled_from([b"{", b"[", b'"type":"', b"\\", b'"', b"a", b"}", b":", b"\n", b"x" * 1000])
).map(b"".join)


@given(head_bytes, st.integers(0, 3), st.integers(0, 2100))
# each condition at its edge: an array or an object first, right after the brace or later, an
# escaped quote, no brace, a key that ends one byte past HEAD or right at it
@example(b'{["type":"a"', 0, 20)
@example(b'{a[a"type":"a"', 0, 20)
@example(b'{{"type":"a"', 0, 20)
@example(b'{\\"type":"a"', 0, 20)
@example(b'a"type":"a"', 0, 20)
@example(b"{" + b"x" * 1016 + b'"type":"a"', 0, 2000)
@example(b"{" + b"x" * 1015 + b'"type":"a"', 0, 2000)
@example(b"{" + b"x" * 1016 + b'"type":"a"', 0, 1025)
def test_type_at_of_heads_made_of_its_own_bytes(data, start, stop):
    assert jsonio.type_at(data, start, stop) == type_at_by_searches(data, start, stop)


@given(st.binary(max_size=200), st.integers(0, 200), st.integers(0, 200))
def test_head_types_of_any_bytes(data, start, stop):
    key = jsonio.type_at(data, start, stop)
    assert key == -1 or start < key < stop
    assert key == type_at_by_searches(data, start, stop)
    kind, inner = jsonio.head_types(data, start, stop, "payload")
    assert kind is None or isinstance(kind, str)
    assert inner is None or isinstance(inner, str)


def test_head_types_of_the_hosts_records():
    user = b'{"parentUuid":"p","isSidechain":false,"promptId":"x","type":"user","message":{}}'
    assistant = b'{"parentUuid":null,"isSidechain":false,"message":{"id":"m"},"type":"assistant"}'
    event = b'{"timestamp":"t","ordinal":8,"type":"event_msg","payload":{"type":"token_count"}}'
    assert jsonio.head_types(user, 0, len(user)) == ("user", None)
    assert jsonio.head_types(assistant, 0, len(assistant)) == (None, None)  # read whole
    assert jsonio.head_types(event, 0, len(event), "payload") == ("event_msg", "token_count")
    assert jsonio.head_types(b'{"a":"x\\"type\\":\\"u","type":"v"}', 0, 40) == ("v", None)
    escaped = b'{"x\\"type":"v","type":"w"}'  # the key is x"type: not the type
    assert jsonio.head_types(escaped, 0, len(escaped))[0] in (None, "w")


@given(st.text(), st.booleans())
def test_string_end_finds_where_a_json_string_ends(text, ascii_only):
    quoted = json.dumps(text, ensure_ascii=ascii_only)
    line = '{"a":' + quoted + ',"b":"\\\\"}'
    assert jsonio.string_end(line, 5) == 5 + len(quoted)
    assert jsonio.value_at(line, 5) == (text, 5 + len(quoted))
    with pytest.raises(ValueError):
        jsonio.string_end(quoted[:-1], 0)


DEEP = [
    "[" * 100_000,
    "[" * 5_000 + "]" * 5_000,
    '{"a":' * 5_000 + "1" + "}" * 5_000,
    '{"ok":1,"input":' + "[" * 3_000 + "]" * 3_000 + "}",
]


def _jsonio_without_accelerator():
    """jsonio as it loads where `_json` is missing (its pure `json` code path)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("jsonio_plain", jsonio.__file__)
    module = importlib.util.module_from_spec(spec)
    saved = sys.modules.get("_json")
    sys.modules["_json"] = None  # `import _json` raises ImportError
    try:
        spec.loader.exec_module(module)
    finally:
        if saved is None:
            del sys.modules["_json"]
        else:
            sys.modules["_json"] = saved
    assert module._json is None
    return module


@pytest.mark.parametrize("reader", ["accelerated", "plain"])
@pytest.mark.parametrize("text", DEEP, ids=["open", "arrays", "objects", "inside"])
def test_nesting_deeper_than_recursion_is_a_value_error(reader, text):
    """A line nested past the interpreter's recursion limit is bad input (ValueError), never a
    RecursionError that would fail the guard open, in both code paths and for str and bytes."""
    module = jsonio if reader == "accelerated" else _jsonio_without_accelerator()
    for data in (text, text.encode()):
        with pytest.raises(ValueError):
            module.loads(data)
    with pytest.raises(ValueError):
        module.value_at(text, 0)
