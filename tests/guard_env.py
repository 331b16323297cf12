"""Shared test helpers: the skill package on sys.path, transcript writers, guard runners."""

import contextlib
import errno
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SKILL = ROOT / "skill"
GUARD = SKILL / "guard.py"
sys.path.insert(0, str(SKILL))


def jsonl(path, records, mode="a"):
    """Append records to a JSONL file the way the hosts write them (compact, one per line)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open(mode, encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, separators=(",", ":")) + "\n")
    return path


class GuardEnv:
    """A private HOME and state dir, and ways to run the guard in it."""

    def __init__(self, root):
        self.root = Path(root)
        self.home = self.root / "home"
        self.home.mkdir(parents=True, exist_ok=True)
        self.state_dir = self.root / "state"
        self.env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "RUNAWAY_GUARD_STATE_DIR": str(self.state_dir),
        }

    def run(self, payload, **extra_env):
        """In-process: the answer line the guard would print ('' for none)."""
        from runaway_guard import hook

        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        return hook.run(data, {**self.env, **extra_env})

    def answer(self, payload, **extra_env):
        line = self.run(payload, **extra_env)
        return json.loads(line) if line else None

    def process(self, payload, **extra_env):
        """As the host runs it: a new interpreter, stdin, exit code and both streams."""
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        return subprocess.run(
            [sys.executable, str(GUARD)],
            input=data,
            capture_output=True,
            env={**self.env, **extra_env},
            timeout=60,
            check=False,
        )

    def config(self, **values):
        """Write the user's config file; its path."""
        path = self.home / ".config" / "runaway-guard" / "config.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
        return path


def fuzz(examples):
    """Hypothesis settings for the property tests: no deadline, no example database."""
    from hypothesis import HealthCheck, settings

    return settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


def followed_files(book, named=None):
    """Every file entry a session's state holds, the dormant files' too (a part of the state in
    a file of its own: book.part), each a dict as hosts._files keeps it; with named (the host's),
    an entry's agent left out of a dormant one put back, as reading the file does."""
    from runaway_guard.hosts import _files

    dormant = book.part("dormant") or {"index": {}, "rests": {}}
    found = {
        **book.state["files"],
        **{
            folder + name: _files._entry(off, ino, dormant["rests"][folder][name])
            for folder, names in dormant["index"].items()
            for name, (off, ino) in names.items()
        },
    }
    return with_agents(found, named)


def with_agents(files, named):
    """files (path: entry) with each agent left out of a dormant entry put back (named: the
    host's), as reading the file does."""
    return {
        path: entry
        if named is None or "agent" in entry or entry.get("foreign")
        else {"agent": named(path), **entry}
        for path, entry in files.items()
    }


def as_previous_version(state_dir, host, session_id, named):
    """Rewrite a session's saved state in the form the version before kept its files' entries
    in between calls: a subagent's packed as [off, ino, the rest as JSON], its agent left out
    when named(path) tells it; the main file's and another session's (foreign) a dict."""
    from runaway_guard import jsonio, state_file

    path = state_file.session_paths(state_dir, host, session_id)[1] + state_file.STATE
    state = state_file.read_state(path)
    for file, entry in state["files"].items():
        if entry.get("agent") != "main" and not entry.get("foreign"):
            rest = dict(entry)
            off, ino = rest.pop("off", None), rest.pop("ino", None)
            if named is not None and rest.get("agent") == named(file):
                del rest["agent"]
            state["files"][file] = [off, ino, jsonio.dumps(rest)]
    state_file.write_state(path, state)


@contextlib.contextmanager
def tmpfs(folder, options):
    """A small tmpfs at folder (root can mount one here; CI runs as root)."""
    folder.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        import pytest

        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=False)


def fill(path):
    """Write path until the disk it is on has no space left."""
    with open(path, "wb", buffering=0) as handle:
        try:
            while True:
                handle.write(b"x" * 1024)
        except OSError as error:
            assert error.errno == errno.ENOSPC
