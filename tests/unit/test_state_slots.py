"""The state file's two slots: a write is whole or absent, for a crash, a power cut or a reader."""

import marshal
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from runaway_guard import state_file

BLOCK = 512  # a disk's smallest write: what a power cut can leave of a page

states = st.dictionaries(
    st.sampled_from(["spend", "files", "cap_usd", "agents", "recent"]),
    st.one_of(
        st.integers(-(2**40), 2**40),
        st.text(max_size=3000),
        st.lists(st.integers(0, 2**20), max_size=600),
    ),
    min_size=1,
)


def write_torn(path, state, place, blocks):
    """write_state killed before it returns: of what it writes, only the blocks named land."""

    def torn(fd, data):
        offset = os.lseek(fd, 0, os.SEEK_CUR)
        for start in range(0, len(data), BLOCK):
            if start // BLOCK in blocks:
                os.pwrite(fd, data[start : start + BLOCK], offset + start)
        raise KeyboardInterrupt  # the process dies here

    real, state_file.write_all = state_file.write_all, torn
    try:
        state_file.write_state(path, state, place)
    except KeyboardInterrupt:
        pass
    finally:
        state_file.write_all = real


@settings(max_examples=300, deadline=None)
@given(
    written=st.lists(states, min_size=1, max_size=6),
    new=states,
    blocks=st.sets(st.integers(0, 24)),
)
def test_a_torn_write_leaves_the_state_before_it(tmp_path_factory, written, new, blocks):
    path = str(tmp_path_factory.mktemp("slots") / "s.state")
    written = [dict(state, n=n) for n, state in enumerate(written)]
    place = None
    for state in written:
        state_file.write_state(path, state, place)
        read, place = state_file.read_slots(path)
        assert read == state
    new["n"] = -1
    length = state_file.SLOT_HEAD + len(marshal.dumps(new, state_file.MARSHAL_FORMAT))
    # in place, every block landed; a new file (a rename) is never renamed unfinished
    whole = length <= place[0] and set(range(-(-length // BLOCK))) <= blocks
    write_torn(path, new, place, blocks)
    read, torn_place = state_file.read_slots(path)
    assert read == (new if whole else written[-1])  # never a state mixed of two writes
    # the next call writes over the torn slot, never over the state it read
    state_file.write_state(path, {"after": 1}, torn_place)
    read, again = state_file.read_slots(path)
    assert read == {"after": 1}
    write_torn(path, {"lost": 1}, again, set())
    assert state_file.read_state(path) == {"after": 1}


def test_slots_grow_by_a_new_file_and_are_then_written_in_place(tmp_path):
    path = str(tmp_path / "s.state")
    state_file.write_state(path, {"n": "x" * 100})
    inode = os.stat(path).st_ino
    for n in range(5):
        state_file.write_state(path, {"n": "y" * (100 + n)}, state_file.read_slots(path)[1])
        assert state_file.read_state(path) == {"n": "y" * (100 + n)}
    assert os.stat(path).st_ino == inode  # in place: no rename
    state_file.write_state(path, {"n": "z" * 20000}, state_file.read_slots(path)[1])
    assert os.stat(path).st_ino != inode  # grown past its slot: a new file
    state, (size, _, _) = state_file.read_slots(path)
    assert state == {"n": "z" * 20000}
    assert size >= 20000 * 3 // 2 and size % state_file.PAGE == 0
    state_file.write_state(path, {"n": "z"}, state_file.read_slots(path)[1])
    assert os.path.getsize(path) <= 8 + 2 * size


def test_an_earlier_version_cannot_misread_slots(tmp_path):
    """Versions before the slots read the state as one marshal value: they fail on the file
    and rebuild the state from the ledger, never taking a slot one write old for the state."""
    path = str(tmp_path / "s.state")
    state_file.write_state(path, {"v": 1, "spend": 3})
    with open(path, "rb") as handle, pytest.raises(ValueError):
        marshal.loads(handle.read())


def test_a_reader_without_the_lock_reads_again_after_meeting_two_writes(tmp_path, monkeypatch):
    path = str(tmp_path / "s.state")
    state_file.write_state(path, {"n": 1})
    read_slots, reads = state_file.read_slots, []

    def met_two_writes(path):  # both slots were being written while it read
        reads.append(path)
        return (None, (0, 1, 0)) if len(reads) == 1 else read_slots(path)

    monkeypatch.setattr(state_file, "read_slots", met_two_writes)
    assert state_file.read_state(path) == {"n": 1} and len(reads) == 2
    monkeypatch.setattr(state_file, "read_slots", lambda path: reads.append(path) or (None, None))
    assert state_file.read_state(str(tmp_path / "missing.state")) is None and len(reads) == 3
