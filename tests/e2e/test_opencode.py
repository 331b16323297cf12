"""The guard inside the real OpenCode CLI (pinned 1.18.33), ``opencode run``, offline.

Each test: a fresh HOME, ``installer/install.py --host opencode`` as a person runs it (it writes
the plugin into ``$XDG_CONFIG_HOME/opencode/plugin/`` and the skill beside it), the guard's limits
in the environment, ``opencode run --format json`` against the scripted Chat Completions API on
127.0.0.1, and the verdict from the run, OpenCode's own database and the installed
``status.py --json``.

The scripted model never gives up by itself: it calls its next tool whatever the guard said.
The run ends only when the guard stops it (a throw from the plugin's ``chat.params``: the next
request is never sent, ``opencode run`` exits 1 with the reason) or when the script is done.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from harness import CHECK_PY, Person, benign_commands, lines, require_cli
from opencode_host import COST, MODEL, OpenCodeHome, is_title_request, opencode_bin, run_opencode
from scripted_model import ScriptedModel, route_by_marker

pytestmark = pytest.mark.e2e

# prompt 1000 (200 cached), completion 50 (10 reasoning) at $3 / $0.30 / $15 per MTok:
# (800 * 3 + 200 * 0.3 + 50 * 15) / 1e6 = $0.00321, as OpenCode stores it
USAGE = {"input_tokens": 1000, "cached_tokens": 200, "output_tokens": 50, "reasoning_tokens": 10}
STEP_USD = 0.00321
TITLE = {"text": "A title", "usage": {"input_tokens": 40, "output_tokens": 6}}
REFUSED = "runaway-guard:"


def price(usage: dict) -> float:
    """OpenCode's rule for the model's cost block (reasoning at the output rate)."""
    cached = usage.get("cached_tokens", 0)
    fresh = usage["input_tokens"] - cached
    total = fresh * COST["input"] + cached * COST["cache_read"]
    return (total + usage["output_tokens"] * COST["output"]) / 1e6


def sh(command: str, usage=None) -> dict:
    return {"tool_calls": [{"shell": command}], "usage": dict(usage or USAGE)}


def final(text: str = "Done.") -> dict:
    return {"text": text, "usage": dict(USAGE)}


def serve(steps, route=None) -> dict:
    """The agent's steps in order; titles (and a subagent's marked requests) answered aside."""

    def side(body):
        if is_title_request(body):
            return dict(TITLE)
        return route(body) if route else None

    return {"chat": list(steps), "chat_route": side}


class OpenCode:
    """A person's HOME with the guard installed into OpenCode (user scope unless told)."""

    def __init__(self, tmp_path: Path, model_url: str, scopes=("user",), **limits):
        require_cli(opencode_bin(), "OpenCode")
        self.person = Person(tmp_path, **limits)
        self.home = OpenCodeHome(
            self.person.root, model_url, home=self.person.home, project=self.person.project
        )
        self.install_output = ""
        for scope in scopes:
            args = ["--scope", scope]
            if scope == "project":
                args += ["--project", str(self.person.project)]
            self.install_output += self.person.install("opencode", *args)

    @property
    def skill(self) -> Path:
        return self.home.config_dir / "skills" / "runaway-guard"

    def run(self, prompt: str = "Go.", **kwargs):
        """One `opencode run`; self.guard_pids: the guard processes seen while it ran."""
        self.guard_pids, running = set(), threading.Event()

        def watch():
            while not running.wait(0.02):
                self.guard_pids.update(self.guards_running())

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        try:
            run = run_opencode(self.home, prompt, env=self.person.host_env(), **kwargs)
        finally:
            running.set()
            watcher.join()
        assert run.session_id, f"{run!r}\n{run.stdout[-2000:]}\n{run.stderr[-2000:]}"
        deadline = time.monotonic() + 10
        while self.guards_running() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not self.guards_running(), "the guard outlived OpenCode (guard.py --serve)"
        return run

    def guards_running(self) -> list:
        """The pids of this person's guard processes (`guard.py --serve`, kept by the plugin)."""
        guard = str(self.skill / "skill" / "guard.py").encode()
        found = []
        for entry in Path("/proc").iterdir():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if guard in argv and b"--serve" in argv:
                found.append(int(entry.name))
        return found

    def status(self, session_id: str) -> dict:
        return self.person.status(self.skill, session_id)

    def marker(self, name: str = "ran.txt") -> list:
        return lines(self.person.project / name)


def refusals(run) -> list:
    """The tool calls the plugin refused, as OpenCode stored them (status error, the reason)."""
    parts = run.store.tool_parts(run.store.tree(run.session_id))
    return [
        p["state"]["error"]
        for p in parts
        if p["state"].get("status") == "error" and p["state"].get("error", "").startswith(REFUSED)
    ]


def agent_requests(model) -> list:
    return [r for r in model.api_requests("chat") if not is_title_request(r["body"])]


# ---------------------------------------------------------------------------------------------


def test_failure_run_is_refused_at_the_sixth_command_and_the_run_ends(tmp_path):
    """The scripted model answers at once (no delay) and ignores every refusal."""
    steps = [sh(f"echo {n} >> ran.txt; exit 1") for n in range(1, 15)]
    with ScriptedModel(serve(steps)) as model:
        opencode = OpenCode(tmp_path, model.url)  # the default limit: 5 failures in a row
        run = opencode.run()
        served = agent_requests(model)
    assert opencode.marker() == ["1", "2", "3", "4", "5"], run.stderr[-3000:]
    refused = refusals(run)
    assert len(refused) == 3, refused  # refuse, refuse again (OpenCode cannot ask), stop
    assert "5 tool calls in a row have failed" in refused[0]
    # the stop came before the next model request: it was never sent, and the run ended
    assert len(served) == 8
    assert run.returncode == 1 and run.error.startswith("runaway-guard:"), run.error
    status = opencode.status(run.session_id)
    assert status["host"] == "opencode"
    assert status["blocked"]["wire"] == "failure"
    assert status["failures_in_a_row"] == 5


def test_identical_loop_is_refused_at_the_sixth_call(tmp_path):
    steps = [sh("echo x >> ran.txt; echo same output") for _ in range(14)]
    with ScriptedModel(serve(steps)) as model:
        opencode = OpenCode(tmp_path, model.url)  # the default limit: 5 repeats
        run = opencode.run()
    assert opencode.marker() == ["x"] * 5, run.stderr[-3000:]
    refused = refusals(run)
    assert len(refused) == 3 and "already ran 5 times with the same result" in refused[0]
    assert run.returncode == 1
    assert opencode.status(run.session_id)["blocked"]["wire"] == "loop"


def test_polls_and_edit_and_retest_are_never_refused(tmp_path):
    steps = [dict(sh(command), delay=0.05) for command in benign_commands()] + [final()]
    with ScriptedModel(serve(steps)) as model:
        opencode = OpenCode(tmp_path, model.url, max_failures=3, max_repeats=3)
        (opencode.person.project / "check.py").write_text(CHECK_PY)
        run = opencode.run()
    assert refusals(run) == []
    assert run.returncode == 0, run.stderr[-3000:]
    assert (opencode.person.project / "c").read_text().strip() == "6"
    assert opencode.marker("runs.txt") == ["v"] * 3
    assert opencode.status(run.session_id)["blocked"] is None
    assert len(opencode.guard_pids) == 1  # one guard process answered the whole run


def test_spend_cap_ends_the_run_at_the_next_model_request(tmp_path):
    # $0.00321 a response: the 80 % warning at the 11th call ($0.0321 spent), and at the 12th
    # ($0.03531 spent, more while the 12th response is not written) the next would cross $0.04
    cap = 0.04
    steps = [sh(f"echo {n} >> ran.txt") for n in range(1, 20)]
    with ScriptedModel(serve(steps)) as model:
        opencode = OpenCode(tmp_path, model.url, max_usd=cap)
        run = opencode.run()
        served = agent_requests(model)
    # a ceiling: the 12th call is refused and the 13th request, which would cross the cap, is
    # never sent
    assert len(served) == 12, len(served)
    assert opencode.marker() == [str(n) for n in range(1, 12)]
    assert ["would cross the session spend cap" in text for text in refusals(run)] == [True]
    assert run.returncode == 1 and "would cross the session spend cap" in run.error, run.error
    warned = [r for r in served if "cap is spent" in json.dumps(r["body"]["messages"])]
    assert warned, "the model never saw the spend warning (appended to a tool's output)"
    status = opencode.status(run.session_id)
    assert status["blocked"]["wire"] == "session"
    stored = run.store.cost(run.session_id)
    assert status["spend_usd"] == pytest.approx(stored, abs=1e-6)
    assert stored == pytest.approx(12 * STEP_USD, abs=1e-9)


def test_subagent_spend_counts_and_equals_opencodes_stored_cost(tmp_path):
    task = {
        "name": "task",
        "arguments": {
            "description": "child run",
            "prompt": "CHILD-TASK: list and count",
            "subagent_type": "general",
        },
    }
    child_usage = {"input_tokens": 2500, "cached_tokens": 1800, "output_tokens": 120}
    child = route_by_marker(
        {"CHILD-TASK": [sh("ls", child_usage), sh("echo 2", child_usage), final("counted")]}
    )
    steps = [{"tool_calls": [task], "usage": dict(USAGE), "delay": 0.1}, sh("echo done"), final()]
    with ScriptedModel(serve(steps, child)) as model:
        opencode = OpenCode(tmp_path, model.url)
        run = opencode.run("Delegate a count.")
        requests = model.api_requests("chat")
    assert run.returncode == 0, run.stderr[-3000:]
    tree = run.store.tree(run.session_id)
    assert len(tree) == 2
    status = opencode.status(run.session_id)
    child_id = tree[1]
    stored_child = run.store.cost(child_id)
    assert stored_child == pytest.approx(2 * price(child_usage) + price(USAGE), abs=1e-9)
    assert status["by_agent"][child_id] == pytest.approx(stored_child, abs=1e-6)
    # the guard's session total is OpenCode's own stored cost over the whole tree
    assert status["spend_usd"] == pytest.approx(run.store.cost(run.session_id), abs=1e-6)
    assert status["unpriced_models"] == []
    assert status["by_model"] == {f"mock/{MODEL}": pytest.approx(status["spend_usd"], abs=1e-9)}
    # what was served, priced by hand: the title request is billed but OpenCode stores it nowhere
    served = sum(price({"cached_tokens": 0, **r["step"]["usage"]}) for r in requests)
    titles = [r for r in requests if is_title_request(r["body"])]
    assert len(titles) == 1
    gap = served - status["spend_usd"]
    assert gap == pytest.approx(price(TITLE["usage"]), abs=1e-9)
    print(json.dumps({"served_usd": served, "guard_usd": status["spend_usd"], "title_gap": gap}))


def test_installed_in_user_and_project_scope_runs_once(tmp_path):
    steps = [sh(f"echo {n} >> ran.txt; exit 1") for n in range(1, 9)]
    with ScriptedModel(serve(steps)) as model:
        opencode = OpenCode(tmp_path, model.url, scopes=("user", "project"), max_failures=3)
        project = opencode.person.project
        assert (project / ".opencode" / "plugin" / "runaway-guard.js").is_file()
        run = opencode.run()
    assert opencode.marker() == ["1", "2", "3"], run.stderr[-3000:]
    assert len(refusals(run)) == 3
    # the note before the limit, appended to the third command's output once: one copy ran
    outputs = [p["state"].get("output", "") for p in run.store.tool_parts([run.session_id])]
    assert [o.count("runaway-guard:") for o in outputs[:3]] == [0, 0, 1], outputs
    assert opencode.status(run.session_id)["failures_in_a_row"] == 3
    assert "fail-open" not in opencode.person.hook_log()
    check = opencode.person.check("opencode")
    assert check.returncode == 0 and "ok: " in check.stdout, check.stdout + check.stderr


def test_a_missing_interpreter_lets_every_call_through_and_is_logged(tmp_path):
    steps = [sh(f"echo {n} >> ran.txt; exit 1") for n in range(1, 4)] + [final()]
    with ScriptedModel(serve(steps)) as model:
        opencode = OpenCode(tmp_path, model.url, max_failures=1)
        plugin = opencode.home.plugin_dir() / "runaway-guard.js"
        text = plugin.read_text()
        python = next(line for line in text.splitlines() if line.startswith("const PYTHON = "))
        plugin.write_text(text.replace(python, 'const PYTHON = "/nonexistent/python3";'))
        run = opencode.run()
    assert run.returncode == 0 and opencode.marker() == ["1", "2", "3"]
    assert (
        "fail-open opencode plugin: cannot run /nonexistent/python3" in opencode.person.hook_log()
    )
