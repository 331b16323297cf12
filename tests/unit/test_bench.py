"""The benchmark's quick mode runs on every host the bench has a generator for (its figures are
not judged here: timed tests on a shared machine measure the machine)."""

import subprocess
import sys

from guard_env import ROOT
from runaway_guard.hosts import NAMES

sys.path.insert(0, str(ROOT / "bench"))
import sessions


def test_quick_bench_measures_every_host_with_a_generator(tmp_path):
    bench = str(ROOT / "bench" / "guard_bench.py")
    done = subprocess.run(
        [sys.executable, bench, "--quick", "--calls", "5", "--data", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert " ! " not in done.stdout, done.stdout  # no call failed or wrote to stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith("| ") and " MB + " in line]
    # claude-real is Claude Code in another record mix, measured when asked for (--hosts)
    hosts = sorted(name for name in sessions.GENERATORS if name in NAMES)
    assert sorted(line.split("|")[1].strip() for line in rows) == hosts
    for line in rows:  # every row measured the session's state file (a size in KB, not 0)
        state = line.split("|")[9].strip()
        assert state.endswith(" KB") and float(state.split()[0]) > 0, line
