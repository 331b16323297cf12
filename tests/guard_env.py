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


def followed_files(book):
    """Every file entry a session's state holds, packed as hosts._files keeps a subagent's, the
    dormant files' too (a part of the state in a file of its own: book.part)."""
    dormant = book.part("dormant") or {"index": {}, "rests": {}}
    return {
        **book.state["files"],
        **{
            folder + name: [off, ino, dormant["rests"][folder][name]]
            for folder, names in dormant["index"].items()
            for name, (off, ino) in names.items()
        },
    }


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
