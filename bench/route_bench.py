#!/usr/bin/env python3
"""What one tool call costs through each install route's hook command, as the host runs it.

    python3 bench/route_bench.py [--calls 30]

A host runs a hook command through `sh -c`. The installer writes the absolute interpreter that
ran it (`'<python>' -I -S '<skill>/skill/guard.py' || true`); a plugin or extension cannot know
that path, so its command names `python3` and the PATH finds it
(`python3 -I -S "${ROOT}/skill/guard.py" || true`): behind a pyenv shim, that is a bash script
running `pyenv exec` on every call. This runs the same steady call (a Claude Code PreToolUse on
a small session whose state is warm) through each command, interleaved, and prints the median
and 90th percentile of the wall time of each, and the median CPU time of the shell and all it
ran (steadier than wall time on a busy machine):

- installer: the command install.py writes, with this interpreter (sys.executable);
- plugin, for each `python3` found on PATH (first hit of each PATH entry that has one, so a
  pyenv shim and the system's /usr/bin/python3 both show), with only that entry's folder
  ahead of the rest of PATH.

Standard library only; it always exits 0 (a report).
"""

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "installer"))

from runaway_guard_installer.hook_list import hook_command  # noqa: E402
from runaway_guard_installer.manifests import plugin_command  # noqa: E402

SESSION = "7e57be4c-0000-4000-8000-000000000001"


def session(folder):
    """A small Claude Code transcript and the PreToolUse payload of its next call."""
    transcript = os.path.join(folder, f"{SESSION}.jsonl")
    records = [
        {"type": "user", "sessionId": SESSION, "version": "2.1.332", "message": {"content": "Go"}},
        {
            "type": "assistant",
            "sessionId": SESSION,
            "message": {
                "id": "msg_1",
                "model": "claude-sonnet-4-6",
                "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash"}],
                "usage": {"input_tokens": 50, "output_tokens": 10},
            },
        },
    ]
    with open(transcript, "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record) + "\n")
    payload = {
        "session_id": SESSION,
        "transcript_path": transcript,
        "cwd": folder,
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "ls"},
        "tool_use_id": "toolu_1",
    }
    return json.dumps(payload).encode()


def pythons_on_path(path):
    """(folder, python3) for each PATH folder holding a python3, first of each real file."""
    found, seen = [], set()
    for folder in path.split(os.pathsep):
        candidate = os.path.join(folder, "python3")
        if not (os.path.isfile(candidate) and os.access(candidate, os.X_OK)):
            continue
        real = os.path.realpath(candidate)
        if real in seen:
            continue
        seen.add(real)
        found.append((folder, candidate))
    return found


def once(command, env, payload):
    """Wall time and CPU time (the shell and everything it ran) of one call, in ms."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(["sh", "-c", command], input=payload, env=env, capture_output=True, check=True)
    wall = (time.perf_counter() - started) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000
    return wall, cpu


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=30)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="route-bench-")
    try:
        payload = session(work)
        base = dict(os.environ, RUNAWAY_GUARD_STATE_DIR=os.path.join(work, "state"))
        base.pop("PYTHONDONTWRITEBYTECODE", None)
        path = base.get("PATH", "")
        routes = [("installer: " + sys.executable, hook_command(sys.executable, _skill()), base)]
        plugin = plugin_command("${PLUGIN_ROOT}")
        for folder, python in pythons_on_path(path):
            env = dict(base, PLUGIN_ROOT=ROOT, PATH=folder + os.pathsep + path)
            label = f"plugin: {python}" + (" (pyenv shim)" if _is_shim(python) else "")
            routes.append((label, plugin, env))
        times = {label: [] for label, _, _ in routes}
        for _ in range(3):  # warm up: bytecode, page cache, the state file
            for _label, command, env in routes:
                once(command, env, payload)
        for _ in range(args.calls):
            for label, command, env in routes:
                times[label].append(once(command, env, payload))
        print(f"{args.calls} calls each, interleaved, through `sh -c` (load {_load()}):")
        print(f"{'route':<58}{'wall median':>12}{'p90':>9}{'CPU median':>12}")
        for label, _, _ in routes:
            walls = sorted(wall for wall, _ in times[label])
            cpus = [cpu for _, cpu in times[label]]
            p90 = walls[int(0.9 * (len(walls) - 1))]
            print(
                f"{label:<58}{statistics.median(walls):>10.1f}ms{p90:>7.1f}ms"
                f"{statistics.median(cpus):>10.1f}ms"
            )
        print(f"installer command: {routes[0][1]}")
        print(f"plugin command:    {plugin}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def _skill():
    from pathlib import Path

    return Path(ROOT)  # the checkout is laid out like an installed skill folder


def _load():
    try:
        return " ".join(f"{value:.1f}" for value in os.getloadavg())
    except OSError:
        return "unknown"


def _is_shim(python):
    try:
        with open(python, "rb") as handle:
            return handle.read(2) == b"#!" and b"pyenv" in handle.read(400)
    except OSError:
        return False


if __name__ == "__main__":
    sys.exit(main())
