"""runaway_guard.fs against os and os.path: the same answers without importing os."""

import os
import posixpath
import subprocess
import sys

from guard_env import ROOT
from hypothesis import given
from hypothesis import strategies as st
from runaway_guard import fs

parts = st.text(alphabet="ab./~", max_size=6)
paths = st.lists(parts, max_size=5).map("/".join)


@given(paths, st.lists(paths, max_size=3))
def test_join_is_posixpath_join(first, rest):
    assert fs.join(first, *rest) == posixpath.join(first, *rest)


@given(paths)
def test_dirname_and_basename_are_posixpath_s(path):
    assert fs.dirname(path) == posixpath.dirname(path)
    assert fs.basename(path) == posixpath.basename(path)


@given(paths)
def test_abspath_is_posixpath_abspath(path):
    if path.startswith("//") and not path.startswith("///"):
        path = path[1:]  # POSIX leaves a leading "//" to the system; the guard never gets one
    assert fs.abspath(path) == posixpath.abspath(path)


@given(st.sampled_from(["/home/u", "/home/u/", "/"]), paths)
def test_expanduser_is_posixpath_expanduser(home, path):
    saved = os.environ.get("HOME")
    os.environ["HOME"] = home
    try:
        for each in (path, "~" + path):
            assert fs.expanduser(each) == posixpath.expanduser(each)
    finally:
        if saved is None:
            del os.environ["HOME"]
        else:
            os.environ["HOME"] = saved


def test_is_dir_file_exists_and_makedirs(tmp_path):
    target = tmp_path / "a" / "b" / "c"
    fs.makedirs(str(target), 0o700)
    fs.makedirs(str(target), 0o700)  # already there: nothing to do
    assert fs.isdir(str(target)) and not fs.isfile(str(target)) and fs.exists(str(target))
    (target / "f").write_text("x")
    assert fs.isfile(str(target / "f")) and not fs.isdir(str(target / "f"))
    assert not fs.exists(str(target / "missing")) and fs.getsize(str(target / "f")) == 1
    assert oct(os.stat(target).st_mode & 0o777) == "0o700"
    assert os.stat(target.parent).st_mode & 0o777 == 0o777 & ~current_umask()


def current_umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_without_os_the_environment_is_decoded_alike():
    """In a hook process os is never imported: fs.environ is posix.environ, decoded as os
    would (undecodable bytes kept as surrogates)."""
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); from runaway_guard import fs;"
        "assert 'os' not in sys.modules;"
        "print(ascii(fs.environ['RG_TEST']), ascii(fs.environ['RG_BYTES']))"
    )
    env = {"RG_TEST": "caf\u00e9", "RG_BYTES": b"\xff".decode("utf-8", "surrogateescape")}
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code, str(ROOT / "skill")],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.split() == [ascii("caf\u00e9"), ascii(env["RG_BYTES"])]
