"""The hook's modules from one file a call (skill/runaway_guard/__init__.py): the same modules as
an import gives, never stale, and an import whenever the bundle cannot be used."""

import json
import os
import py_compile
import shutil
import subprocess
import sys

import pytest
import runaway_guard
from guard_env import SKILL
from hypothesis import given, settings
from hypothesis import strategies as st

# What a hook call loads, as guard.py and hosts.load do; then, per module of the package: whether
# it came from a bundle (no spec), its names, file and package.
PROBE = """
import json, sys
sys.path.insert(0, sys.argv[1])
from runaway_guard import load
load("runaway_guard.hook")
from runaway_guard import hosts
hosts.load(sys.argv[2])
print(json.dumps({
    name: [
        module.__spec__ is None,
        [n for n in sorted(vars(module)) if not n.startswith("__")],
        [module.__file__, module.__package__, getattr(module, "__path__", None)],
    ]
    for name, module in sys.modules.items()
    if name.startswith("runaway_guard.")
    and name != "runaway_guard.rebundle"
}))
"""


@pytest.fixture
def skill(tmp_path):
    """A copy of the skill without compiled files, as the installer leaves it."""
    copy = tmp_path / "skill"
    shutil.copytree(SKILL, copy, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def probe(skill, host="claude"):
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", PROBE, str(skill), host],
        capture_output=True,
        check=True,
    )
    return json.loads(done.stdout)


def bundles(skill):
    return sorted(path.name for path in (skill / "runaway_guard" / "__pycache__").glob("*.bundle"))


def from_bundle(modules):
    return {name for name, (bundled, _, _) in modules.items() if bundled}


def test_the_first_call_imports_and_writes_the_bundles_the_next_runs_from(skill):
    first = probe(skill)
    assert not from_bundle(first)
    tag = sys.implementation.cache_tag
    assert bundles(skill) == [f"hook.{tag}.bundle", f"hosts.claude.{tag}.bundle"]
    second = probe(skill)
    assert from_bundle(second) == set(second) == set(first)
    # the same modules with the same names as the import system gives
    assert {name: facts for name, (_, *facts) in second.items()} == {
        name: facts for name, (_, *facts) in first.items()
    }


def test_a_call_from_its_bundles_leaves_the_writer_unloaded(skill):
    """rebundle.py (the import and the write) is for a missing or stale bundle only."""
    code = PROBE.split("print(")[0] + 'print("runaway_guard.rebundle" in sys.modules)'
    loaded = [
        subprocess.run(
            [sys.executable, "-I", "-S", "-c", code, str(skill), "claude"],
            capture_output=True,
            check=True,
        ).stdout
        for _ in range(2)
    ]
    assert loaded == [b"True\n", b"False\n"]


@pytest.mark.parametrize("break_it", ["syntax", "missing"])
def test_a_broken_install_fails_open_in_silence(skill, break_it):
    hook = skill / "runaway_guard" / "hook.py"
    if break_it == "syntax":
        hook.write_text(hook.read_text() + "\ndef (:\n")
    else:
        hook.unlink()
    done = subprocess.run(
        [sys.executable, "-I", "-S", str(skill / "guard.py")],
        input=b'{"session_id": "s", "tool_name": "Bash", "tool_input": {}}',
        capture_output=True,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")


@pytest.mark.parametrize("host", ["codex", "opencode"])
def test_each_host_has_its_own_bundle(skill, host):
    probe(skill, host)
    second = probe(skill, host)
    assert f"runaway_guard.hosts.{host}" in from_bundle(second)
    assert "runaway_guard.hosts.claude" not in second


def test_a_process_that_imported_modules_itself_writes_no_bundle(skill):
    """A bundle holds what a call through guard.py loads: a process that had imported one of
    those modules plainly (a test, status) would leave it out, and writes none."""
    code = PROBE.replace(
        "from runaway_guard import", "import runaway_guard.pricing\nfrom runaway_guard import", 1
    )
    subprocess.run([sys.executable, "-I", "-S", "-c", code, str(skill), "claude"], check=True)
    assert not bundles(skill)
    probe(skill)
    assert "runaway_guard.pricing" in from_bundle(probe(skill))


def test_a_changed_source_is_imported_and_the_bundle_made_again(skill):
    probe(skill)
    wires = skill / "runaway_guard" / "wires.py"
    wires.write_text(wires.read_text() + "\nCHANGED = True\n")
    changed = probe(skill)
    assert not from_bundle(changed) & {"runaway_guard.hook", "runaway_guard.wires"}
    assert "CHANGED" in changed["runaway_guard.wires"][1]
    again = probe(skill)
    assert "runaway_guard.wires" in from_bundle(again)
    assert "CHANGED" in again["runaway_guard.wires"][1]


def test_a_same_size_edit_with_a_new_mtime_is_seen(skill):
    probe(skill)
    wires = skill / "runaway_guard" / "wires.py"
    stamp = wires.stat().st_mtime
    text = wires.read_text()
    wires.write_text(text.replace('"""', "'''", 2))  # same size, other code
    os.utime(wires, (stamp + 5, stamp + 5))
    assert "runaway_guard.wires" not in from_bundle(probe(skill))


@pytest.mark.parametrize("damage", [b"", b"garbage", b"\x00" * 64, "truncated"])
def test_a_damaged_bundle_is_imported_past_and_replaced(skill, damage):
    probe(skill)
    path = skill / "runaway_guard" / "__pycache__" / f"hook.{sys.implementation.cache_tag}.bundle"
    path.write_bytes(path.read_bytes()[:1000] if damage == "truncated" else damage)
    assert "runaway_guard.hook" not in from_bundle(probe(skill))
    assert "runaway_guard.hook" in from_bundle(probe(skill))


def test_where_no_bundle_can_be_written_every_call_imports(skill):
    cache = skill / "runaway_guard" / "__pycache__"
    cache.mkdir()
    (cache / f"hook.{sys.implementation.cache_tag}.bundle").mkdir()  # cannot be a file
    for _ in range(2):
        modules = probe(skill)
        assert "runaway_guard.hook" in modules
        assert "runaway_guard.hook" not in from_bundle(modules)
    assert not [p for p in cache.iterdir() if p.name.endswith(".tmp")]


def test_a_hash_checked_pyc_is_not_bundled(skill):
    """Only the timestamp check can be made from a stat: hash-checked .pyc files are left to the
    import system."""
    folder = skill / "runaway_guard"
    for source in [folder / "hook.py", *folder.glob("*.py")]:
        py_compile.compile(
            str(source), invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH
        )
    probe(skill)
    assert f"hook.{sys.implementation.cache_tag}.bundle" not in bundles(skill)


def test_the_guard_answers_the_same_from_its_bundle(skill, tmp_path):
    """Calls through guard.py importing, and the same calls from the bundles: the same answer
    (the loop wire's refusal of the sixth)."""
    payload = {
        "session_id": "s-bundle",
        "turn_id": "t",
        "transcript_path": None,
        "cwd": str(tmp_path),
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "false"},
        "tool_use_id": "toolu_1",
    }
    answers = []
    for round_ in range(2):
        env = {"HOME": str(tmp_path), "RUNAWAY_GUARD_STATE_DIR": str(tmp_path / f"s{round_}")}
        for call in range(7):  # the same call again and again: the loop wire answers
            if round_ == 0:
                for path in (skill / "runaway_guard" / "__pycache__").glob("*.bundle"):
                    path.unlink()
            payload["tool_use_id"] = f"toolu_{call}"
            done = subprocess.run(
                [sys.executable, "-I", "-S", str(skill / "guard.py")],
                input=json.dumps(payload).encode(),
                capture_output=True,
                env=env,
                check=True,
            )
            assert done.stderr == b""
        answers.append(done.stdout)
    assert bundles(skill)
    assert answers[0] == answers[1] and b"runaway-guard" in answers[0]


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=300))
def test_any_bytes_as_a_bundle_run_nothing(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("bundle") / "x.bundle"
    path.write_bytes(data)
    before = set(sys.modules)
    assert runaway_guard._run(str(path)) is False
    assert set(sys.modules) == before
