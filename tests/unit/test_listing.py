"""_files.listing, the subagent folder listed again only when it changed (Gemini CLI, Qwen Code),
against a plain listdir of the folder before every call."""

import os
import tempfile
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st
from runaway_guard import fs
from runaway_guard.hosts import _files

TICK_NS = 4 * 10**6  # the folder's modification time moves by clock ticks (4 ms: a jiffy)
START_NS = 1_700_000_000 * 10**9

steps = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(0, 5)),
        st.tuples(st.just("remove"), st.integers(0, 5)),
        st.tuples(st.just("wait"), st.sampled_from([0, 10**6, 3 * 10**6, 5 * 10**8, 2 * 10**9])),
        st.tuples(st.just("call"), st.just(0)),
    ),
    max_size=25,
)


@settings(max_examples=150, deadline=None)
@given(steps)
def test_a_folder_listed_again_only_when_it_changed_misses_no_file(steps):
    """What the calls follow (each listing's names, a vanished file dropped as read_all drops it)
    is what a plain listdir shows, whatever the order of adds, removes and calls: a file made in
    the same tick as a listing leaves the folder's time as it was, so a time is kept only once it
    is a second old. And a call on a folder unchanged since a kept time does not list it."""
    now = [START_NS]
    with (
        tempfile.TemporaryDirectory() as root,
        mock.patch.object(_files.time, "time_ns", lambda: now[0]),
    ):
        folder = os.path.join(root, "subagents")
        os.mkdir(folder)
        os.utime(folder, ns=(START_NS, START_NS))
        seen, followed = {}, set()
        for action, value in steps:
            if action == "wait":
                now[0] += value
            elif action == "call":
                followed &= set(os.listdir(folder))  # a vanished file is dropped when read
                kept = folder in seen and fs.stat(folder).st_mtime_ns == seen[folder]
                names = _files.listing(seen, folder)
                assert (names is None) == kept
                followed.update(names or ())
                assert followed == set(os.listdir(folder))
            else:
                path = os.path.join(folder, f"agent-{value}.jsonl")
                if action == "add" and not os.path.exists(path):
                    open(path, "w").close()
                elif action == "remove" and os.path.exists(path):
                    os.remove(path)
                else:
                    continue
                stamp = now[0] - now[0] % TICK_NS  # the folder changed, at the clock's tick
                os.utime(folder, ns=(stamp, stamp))


def test_a_missing_folder_is_not_kept():
    with tempfile.TemporaryDirectory() as root:
        folder = os.path.join(root, "subagents")
        seen = {folder: 1}
        assert _files.listing(seen, folder) is None and seen == {}
        os.mkdir(folder)
        os.utime(folder, ns=(START_NS, START_NS))
        assert _files.listing(seen, folder) == [] and seen == {folder: START_NS}
        assert _files.listing(seen, folder) is None
