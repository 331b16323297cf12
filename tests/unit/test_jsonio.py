"""jsonio reads and writes exactly what `json` does, without importing it on the hot path."""

import json
import math
import subprocess
import sys

from guard_env import SKILL
from hypothesis import given
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
        "from runaway_guard import hook, pricing;"
        "pricing.claude_cost('claude-opus-4-8', {'input_tokens': 1});"
        "pricing.codex_cost('gpt-5.5', {'input_tokens': 1});"
        "print(sorted({'json', 're'} & set(sys.modules)))"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code, str(SKILL)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "[]"
