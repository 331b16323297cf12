"""The guard's desktop notification reaches a real notification daemon: Debian's `dunst` on an
`Xvfb` display, owning org.freedesktop.Notifications on a session bus of its own; the test reads
it back from dunst's history (tests/e2e/desktop_install.sh installs them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from prometheus_servers import binary

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))  # its session builders
from test_status import Claude, World


def wait_for(check, seconds=15.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return False


@pytest.fixture
def desktop(tmp_path):
    """(environment with DBUS_SESSION_BUS_ADDRESS and DISPLAY, dunstctl's runner)."""
    started = []
    try:
        bus = subprocess.Popen(
            [binary("dbus-daemon"), "--session", "--nofork", "--print-address=1"],
            stdout=subprocess.PIPE,
        )
        started.append(bus)
        address = bus.stdout.readline().decode().strip()
        display = f":{90 + os.getpid() % 500}"
        started.append(subprocess.Popen([binary("Xvfb"), display, "-nolisten", "tcp"]))
        env = {**os.environ, "DBUS_SESSION_BUS_ADDRESS": address, "DISPLAY": display}
        assert wait_for(lambda: os.path.exists(f"/tmp/.X11-unix/X{display[1:]}"))
        log = (tmp_path / "dunst.log").open("ab")
        started.append(subprocess.Popen([binary("dunst")], env=env, stdout=log, stderr=log))

        def dunstctl(*args):
            done = subprocess.run([binary("dunstctl"), *args], env=env, capture_output=True)
            return done.returncode, done.stdout.decode()

        assert wait_for(lambda: dunstctl("is-paused")[0] == 0), "dunst did not start"
        yield {"DBUS_SESSION_BUS_ADDRESS": address, "DISPLAY": display}, dunstctl
    finally:
        for process in reversed(started):
            process.terminate()
            process.wait(timeout=10)


def test_a_stop_reaches_the_desktop_once(tmp_path, desktop):
    env, dunstctl = desktop
    world = World(tmp_path)
    session = Claude(world, world.project("proj"), "s-desktop")

    def shown():
        dunstctl("close-all")  # what dunst shows moves to its history
        history = json.loads(dunstctl("history")[1] or "{}").get("data", [[]])[0]
        return [(item["summary"]["data"], item["body"]["data"]) for item in history]

    session.call(RUNAWAY_GUARD_MAX_USD="0.5", **env)  # over the cap at once: a stop
    assert wait_for(lambda: len(shown()) >= 1), "no notification reached dunst"
    session.call(RUNAWAY_GUARD_MAX_USD="0.5", **env)  # stopped again: nothing new
    time.sleep(2)
    notes = shown()
    assert len(notes) == 1, notes
    summary, body = notes[0]
    assert summary == "runaway-guard stopped: session (Claude Code)"
    assert "reached its cap of $0.50" in body and "s-desktop" in body
    assert "--raise-cap &lt;USD&gt;" in body or "--raise-cap <USD>" in body
    print("\n".join(notes[0]))
