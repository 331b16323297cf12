"""tail.read_new: every complete line once, in order, however the file grows and is read."""

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from runaway_guard import tail


class Blocks:
    """A handler that takes runs of whole lines, as the transcript readers do."""

    def __init__(self):
        self.got = []

    def __call__(self, raw):  # pragma: no cover - never called: lines is preferred
        raise AssertionError("called per line")

    def lines(self, data, start, stop):
        assert stop > start and data[stop - 1 : stop] == b"\n"
        self.got.extend(line for line in bytes(data[start:stop]).split(b"\n") if line)


def per_line():
    got = []
    return got.append, got


def by_blocks():
    handler = Blocks()
    return handler, handler.got


line_text = st.binary(max_size=40).map(lambda data: data.replace(b"\n", b"."))
pieces = st.lists(st.integers(1, 200), max_size=30)


def read_growing(path, data, cuts, handler):
    cursor = {}
    restarts = []
    path.write_bytes(b"")
    written = 0
    for cut in [*cuts, len(data)]:
        end = min(len(data), written + cut)
        with path.open("ab") as handle:
            handle.write(data[written:end])
        written = end
        tail.read_new(str(path), cursor, handler, lambda: restarts.append(1))
    assert not restarts
    return cursor


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    lines=st.lists(line_text, max_size=40), cuts=pieces, block=st.integers(1, 64), tail_=line_text
)
def test_every_complete_line_once_in_order(tmp_path, monkeypatch, lines, cuts, block, tail_):
    monkeypatch.setattr(tail, "BLOCK", block)
    monkeypatch.setattr(tail, "_buffer", [])
    data = b"".join(line + b"\n" for line in lines) + tail_  # tail_: a last line not finished
    expected = [line for line in lines if line]
    for make in (per_line, by_blocks):
        handler, got = make()
        cursor = read_growing(tmp_path / "f.jsonl", data, cuts, handler)
        assert got == expected
        assert cursor["off"] == len(data) - len(tail_)
        assert all(isinstance(line, bytes) for line in got)


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    lengths=st.lists(st.integers(0, 120), min_size=1, max_size=25),
    cuts=pieces,
    block=st.integers(1, 32),
)
def test_overlong_lines_skipped_whole(tmp_path, monkeypatch, lengths, cuts, block):
    max_line = 40
    monkeypatch.setattr(tail, "BLOCK", block)
    monkeypatch.setattr(tail, "MAX_LINE", max_line)
    monkeypatch.setattr(tail, "_buffer", [])
    lines = [bytes([65 + n % 26]) * length for n, length in enumerate(lengths)]
    data = b"".join(line + b"\n" for line in lines)
    blocks = Blocks()
    cursor = read_growing(tmp_path / "f.jsonl", data, cuts, blocks)
    got = blocks.got
    assert cursor["off"] == len(data) and not cursor.get("skip")
    # Short lines always arrive, in order; a line is never cut; far longer ones never arrive.
    assert [line for line in got if len(line) <= max_line] == [
        line for line in lines if line and len(line) <= max_line
    ]
    assert all(line in lines for line in got)
    assert all(len(line) <= max_line + block for line in got)


def test_rewritten_file_read_again_from_the_start(tmp_path):
    path = tmp_path / "f.jsonl"
    path.write_bytes(b"one\ntwo\n")
    cursor, restarts = {}, []
    handler, got = per_line()
    tail.read_new(str(path), cursor, handler, lambda: restarts.append(1))
    path.write_bytes(b"three\n")  # shorter: a rewrite
    tail.read_new(str(path), cursor, handler, lambda: restarts.append(1))
    replacement = tmp_path / "g.jsonl"
    replacement.write_bytes(b"three\nfour\n")
    os.replace(replacement, path)  # a new inode
    tail.read_new(str(path), cursor, handler, lambda: restarts.append(1))
    assert got == [b"one", b"two", b"three", b"three", b"four"] and len(restarts) == 2


@pytest.mark.parametrize("kind", ["dir", "fifo"])
def test_not_a_regular_file(tmp_path, kind):
    path = tmp_path / "x.jsonl"
    path.mkdir() if kind == "dir" else os.mkfifo(path)
    with pytest.raises(OSError):
        tail.read_new(str(path), {}, lambda raw: None, lambda: None)
