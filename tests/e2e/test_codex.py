"""The guard inside the real Codex CLI (the pinned version), ``codex exec``, offline.

Each test: a fresh HOME and CODEX_HOME, ``installer/install.py --host codex`` as a person runs
it (it writes ``$CODEX_HOME/hooks.json``), the guard's limits in the environment, ``codex exec
--dangerously-bypass-hook-trust`` (an untrusted hook is otherwise skipped without a word) against
the scripted Responses API on 127.0.0.1, and the verdict from the ``--json`` events, the rollouts
and the installed ``status.py --json``.

No hook answer ends a Codex turn: every rung of the ladder is a deny, and at the last rung (a
stop) the guard also interrupts ``codex exec`` the way Ctrl-C does; the TUI under tmux gets Esc
(the tests at the end). A scripted model that ignores refusals (``IGNORES``) shows the stop; the
others stop by themselves once they have seen enough refusals (``Command blocked by PreToolUse
hook: …`` in their input).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from codex_host import (
    TUI_ANSWERED,
    AgentRouter,
    CodexHome,
    CodexTui,
    agent_name,
    codex_bin,
    codex_pin,
    read_jsonl,
    run_codex,
)
from harness import CHECK_PY, HERE, LATENCY, Person, benign_commands, lines, require_cli, slow
from scripted_model import ScriptedModel

pytestmark = pytest.mark.e2e

MODEL = "gpt-5.5"  # $5 / $0.50 cached / $30 per MTok
BLOCKED = "Command blocked by PreToolUse hook"
# 1400 input + 100 output tokens on gpt-5.5 = $0.007 + $0.003 = $0.010000
STEP_USAGE = {"input_tokens": 1400, "output_tokens": 100}
STEP_USD = 0.01
# 90000 input + 1000 output tokens on gpt-5.5 = $0.45 + $0.03 = $0.48 a response
DEAR = {"input_tokens": 90000, "output_tokens": 1000}
DEAR_USD = 0.48
IGNORES = 999  # a model that goes on whatever it is told
SMALL = {"input_tokens": 100, "output_tokens": 10}
CCUSAGE = HERE / ".hosts" / "node_modules" / ".bin" / "ccusage"


def sh(command: str, usage=None) -> dict:
    return {"tool_calls": [{"shell": command}], "usage": dict(usage or SMALL)}


def final(message: str = "Stopping here.", usage=None) -> dict:
    return {"text": message, "usage": dict(usage or SMALL)}


def refusals_seen(body) -> int:
    """How many of the guard's refusals the model has been shown so far."""
    return json.dumps(body.get("input") or []).count(BLOCKED)


class Script:
    """Serves one agent's steps in order; once the model has seen ``stop_after`` refusals it
    answers a final text instead (a deny cannot end a Codex turn)."""

    def __init__(self, steps, stop_after: int = 3):
        self.steps = list(steps)
        self.stop_after = stop_after

    def __call__(self, body):
        if refusals_seen(body) >= self.stop_after or not self.steps:
            return final()
        step = self.steps.pop(0)
        return step(body) if callable(step) else step


class Codex:
    """A person's HOME and CODEX_HOME with the guard installed (user scope unless told)."""

    def __init__(self, tmp_path: Path, model_url: str, scopes=("user",), features=None, **limits):
        require_cli(codex_bin(), "Codex", *codex_pin())
        self.person = Person(tmp_path, **limits)
        self.home = CodexHome(self.person.root / "codex-home", model_url, MODEL, features=features)
        self.install_output = ""
        for scope in scopes:
            args = ["--scope", scope]
            if scope == "project":
                args += ["--project", str(self.person.project)]
            self.install_output += self.person.install("codex", *args, CODEX_HOME=self.home.path)

    @property
    def skill(self) -> Path:
        return self.home.path / "skills" / "runaway-guard"

    def run(self, prompt: str = "Go.", **kwargs):
        env = self.person.host_env(HOME=self.person.home)
        run = run_codex(self.home, prompt, self.person.project, env=env, **kwargs)
        assert run.thread_id, f"{run!r}\n{run.stdout[-2000:]}\n{run.stderr[-2000:]}"
        return run

    def status(self, session_id: str) -> dict:
        return self.person.status(self.skill, session_id, CODEX_HOME=self.home.path)

    def marker(self, name: str = "ran.txt") -> list:
        return lines(self.person.project / name)


def serve(router, count: int = 40, delay=LATENCY) -> dict:
    return {"openai": [slow(router, delay) if delay else router] * count}


def interrupted(run) -> int:
    """How many of the run's threads had their turn interrupted (Ctrl-C in exec), as their
    rollouts say."""
    return sum(
        any((r.get("payload") or {}).get("type") == "turn_aborted" for r in read_jsonl(path))
        for path in run.rollouts
    )


def blocked_outputs(run) -> list:
    """The function call outputs in the rollouts that carry a hook refusal."""
    out = []
    for path in run.rollouts:
        for record in read_jsonl(path):
            payload = record.get("payload") or {}
            if payload.get("type") == "function_call_output" and BLOCKED in str(payload):
                out.append(str(payload.get("output")))
    return out


def openai_cost(usages) -> float:
    """OpenAI's rule (and ccusage's): input includes cached, output includes reasoning."""
    total = 0.0
    for u in usages:
        cached = u.get("cached_tokens", 0)
        total += (u["input_tokens"] - cached) * 5 + cached * 0.5 + u["output_tokens"] * 30
    return total / 1e6


# ---------------------------------------------------------------------------------------------


def test_failure_run_ends_the_run_by_the_8th_call(tmp_path):
    router = Script([sh(f"echo {n} >> ran.txt; exit {n % 3 + 1}") for n in range(1, 13)], IGNORES)
    with ScriptedModel(serve(router)) as model:
        codex = Codex(tmp_path, model.url)  # the default: 5 failures in a row
        run = codex.run()
        calls = len(model.api_requests("openai"))
    assert codex.marker() == ["1", "2", "3", "4", "5"], run.stdout[-3000:]
    refused = blocked_outputs(run)
    # the 6th call refused, the 7th refused again (an "ask" is a deny on Codex), the 8th
    # interrupted: the turn ends as with Ctrl-C and codex exec exits 1
    assert len(refused) == 2 and "5 tool calls in a row have failed" in refused[0], refused
    assert calls == 8
    assert run.returncode == 1 and interrupted(run), run.stderr[-2000:]
    assert "interrupting codex exec" in codex.person.hook_log()
    status = codex.status(run.thread_id)
    assert status["host"] == "codex"
    assert status["blocked"]["wire"] == "failure"
    assert status["failures_in_a_row"] == 5


def test_with_the_interrupt_off_a_stop_is_a_refusal(tmp_path):
    router = Script([sh(f"echo {n} >> ran.txt; exit {n % 3 + 1}") for n in range(1, 9)])
    with ScriptedModel(serve(router)) as model:
        codex = Codex(tmp_path, model.url, max_failures=3, interrupt=0)
        run = codex.run()
    assert codex.marker() == ["1", "2", "3"], run.stdout[-3000:]
    refused = blocked_outputs(run)
    assert len(refused) == 3, refused  # refuse, "ask" (a deny on Codex), stop (a deny)
    assert "3 tool calls in a row have failed" in refused[0]
    assert run.returncode == 0 and not interrupted(run)  # the model gave up by itself
    assert codex.status(run.thread_id)["blocked"]["wire"] == "failure"


def test_loop_wire_stops_the_same_call_with_the_same_output(tmp_path):
    same = "echo x >> ran.txt; echo same output"
    router = Script([sh(same) for _ in range(8)], stop_after=2)
    with ScriptedModel(serve(router)) as model:
        codex = Codex(tmp_path, model.url, max_repeats=3)
        run = codex.run()
    assert codex.marker() == ["x", "x", "x"], run.stdout[-3000:]
    refused = blocked_outputs(run)
    assert len(refused) == 2 and "already ran 3 times with the same result" in refused[0]
    assert codex.status(run.thread_id)["blocked"]["wire"] == "loop"


def test_spend_cap_ends_the_run_of_a_model_that_ignores_refusals(tmp_path):
    cap = 2
    steps = [sh(f"echo {n} >> ran.txt", DEAR) for n in range(1, 26)]
    with ScriptedModel(serve(Script(steps, IGNORES))) as model:
        codex = Codex(tmp_path, model.url, max_usd=cap)
        run = codex.run()
        requests = model.api_requests("openai")
    # Codex writes a response's usage before it runs the response's calls, so call k sees k
    # responses, and adds the next one's estimate ($0.485: uncached input is written again):
    # at call 4 ($1.92, past the 80 % warning before it could be given) the next would cross
    # the cap: the call is refused and the turn interrupted. Three commands ran.
    assert codex.marker() == ["1", "2", "3"]
    assert run.returncode == 1 and interrupted(run), run.stderr[-2000:]
    assert len(requests) == 4  # the refused call's result was never sent to the model
    status = codex.status(run.thread_id)
    assert status["blocked"]["wire"] == "session"
    assert "would cross the session spend cap" in status["blocked"]["reason"]
    served = [request["step"]["usage"] for request in requests]
    assert status["spend_usd"] == pytest.approx(openai_cost(served), abs=1e-9)
    assert status["spend_usd"] <= cap  # a ceiling: before it, $2.40


def spawn(task: str, message: str) -> dict:
    call = {
        "name": "spawn_agent",
        "arguments": {"task_name": task, "message": message, "fork_turns": "none"},
    }
    return {"tool_calls": [call], "usage": dict(SMALL)}


def wait_step() -> dict:
    return {"tool_calls": [{"name": "wait_agent", "arguments": {"timeout_ms": 30000}}]}


MULTI_AGENT = {"multi_agent_v2": True}


def test_subagent_runaway_is_stopped_and_its_spend_counts(tmp_path):
    worker = [sh(f"echo {n} >> sub.txt; exit 1", STEP_USAGE) for n in range(1, 9)]
    root = [spawn("worker", "Run the checks."), wait_step()]
    scripts = {"/root": Script(root, stop_after=99), "/root/worker": Script(worker, stop_after=2)}

    def router(body):
        return scripts.get(agent_name(body) or "/root", Script([]))(body)

    with ScriptedModel(serve(router)) as model:
        codex = Codex(tmp_path, model.url, features=MULTI_AGENT, max_failures=3)
        run = codex.run("Delegate the checks to a worker.")
        agents = [agent_name(r["body"]) for r in model.api_requests("openai")]
    assert "/root/worker" in agents, agents
    assert codex.marker("sub.txt") == ["1", "2", "3"], run.stdout[-3000:]
    status = codex.status(run.thread_id)
    sub_agents = [a for a in status["by_agent"] if a != "main"]
    assert len(sub_agents) == 1, status["by_agent"]
    # the worker's five responses (three commands, two refused calls) at $0.01 each, all or
    # all but the last seen by the guard
    assert status["by_agent"][sub_agents[0]] >= 4 * STEP_USD - 1e-9
    assert status["agents"][sub_agents[0]]["failures_in_a_row"] == 3
    assert status["agents"]["main"]["failures_in_a_row"] == 0


def test_subagent_spend_reaches_the_cap(tmp_path):
    cap = 0.05
    worker = [sh(f"echo {n} >> sub.txt", STEP_USAGE) for n in range(1, 12)]
    root = [spawn("worker", "Run the checks."), wait_step(), wait_step(), wait_step()]
    scripts = {"/root": Script(root, stop_after=2), "/root/worker": Script(worker, stop_after=2)}

    def router(body):
        return scripts.get(agent_name(body) or "/root", Script([]))(body)

    with ScriptedModel(serve(router)) as model:
        codex = Codex(tmp_path, model.url, features=MULTI_AGENT, max_usd=cap)
        run = codex.run("Delegate the checks to a worker.")
    ran = codex.marker("sub.txt")
    status = codex.status(run.thread_id)
    assert status["blocked"]["wire"] == "session", status["blocked"]
    # the worker's call at the cap ended the whole run: both threads' turns interrupted
    assert run.returncode == 1 and interrupted(run) == len(run.rollouts) == 2
    # the root's two small responses + the worker's: the cap came from the worker's spend
    assert 3 <= len(ran) <= 5, ran
    sub_agents = [a for a in status["by_agent"] if a != "main"]
    assert status["by_agent"][sub_agents[0]] >= len(ran) * STEP_USD - 1e-9


@pytest.mark.parametrize("delay", [LATENCY, 0], ids=["paced", "instant"])
def test_benign_repetition_finishes_without_refusal(tmp_path, delay):
    router = Script([sh(command) for command in benign_commands()], stop_after=1)
    with ScriptedModel(serve(router, delay=delay)) as model:
        codex = Codex(tmp_path, model.url, max_failures=3, max_repeats=3)
        (codex.person.project / "check.py").write_text(CHECK_PY)
        run = codex.run()
    assert blocked_outputs(run) == []
    assert (codex.person.project / "c").read_text().strip() == "6"
    assert codex.marker("runs.txt") == ["v"] * 3
    assert codex.status(run.thread_id)["blocked"] is None


@pytest.mark.parametrize("wire", ["loop", "failure"])
def test_an_instant_model_is_stopped_on_time(tmp_path, wire):
    if wire == "loop":
        steps = [sh("echo x >> ran.txt; echo same") for _ in range(12)]
    else:
        steps = [sh(f"echo {n} >> ran.txt; exit 1") for n in range(1, 13)]
    with ScriptedModel(serve(Script(steps, stop_after=1), delay=0)) as model:
        codex = Codex(tmp_path, model.url)  # the defaults: 5 failures, 5 repeats
        run = codex.run()
    assert len(codex.marker()) == 5, (codex.marker(), run.stdout[-3000:])
    assert len(blocked_outputs(run)) == 1
    assert codex.status(run.thread_id)["blocked"]["wire"] == wire


def test_spend_parity_with_the_scripted_usage_and_ccusage(tmp_path):
    root_usages = [
        {"input_tokens": 12000, "cached_tokens": 0, "output_tokens": 800, "reasoning_tokens": 512},
        {"input_tokens": 13500, "cached_tokens": 11776, "output_tokens": 450},
        {"input_tokens": 15000, "cached_tokens": 13312, "output_tokens": 1200},
        {"input_tokens": 15800, "cached_tokens": 14848, "output_tokens": 150},
        {"input_tokens": 16100, "cached_tokens": 15000, "output_tokens": 60},
        {"input_tokens": 16500, "cached_tokens": 16000, "output_tokens": 40},
    ]
    worker_usages = [
        {"input_tokens": 3000, "cached_tokens": 0, "output_tokens": 90, "reasoning_tokens": 40},
        {"input_tokens": 3300, "cached_tokens": 2900, "output_tokens": 60},
    ]
    root = [
        sh("ls", root_usages[0]),
        dict(spawn("worker", "Echo once."), usage=root_usages[1]),
        dict(wait_step(), usage=root_usages[2]),
        sh("echo done > out.txt", root_usages[3]),
        sh("cat out.txt", root_usages[4]),
        final("All done.", root_usages[5]),
    ]
    worker = [sh("echo one", worker_usages[0]), final("one", worker_usages[1])]
    router = AgentRouter({"/root": root, "/root/worker": worker})
    # ccusage 20.0.24 drops a subagent's rollout whose usage events share a second with the
    # root's (seen here; the recorded fixtures spaced them too): one response a second.
    with ScriptedModel({"openai": [slow(router, 1.1)] * 20}) as model:
        codex = Codex(tmp_path, model.url, features=MULTI_AGENT)
        run = codex.run("List, delegate an echo, write and read a file.")
        served = [r["step"].get("usage") for r in model.api_requests("openai")]
    assert all(served), served
    expected = openai_cost(root_usages + worker_usages)
    assert sorted(map(json.dumps, served)) == sorted(
        map(json.dumps, root_usages + worker_usages)
    ), "the script was not served as written"
    # The guard's last call came before the root's final response: status reads the rest.
    status = codex.status(run.thread_id)
    print(json.dumps({"expected": expected, "status": status["spend_usd"]}))
    assert status["spend_usd"] == pytest.approx(expected, abs=1e-6)
    assert len(status["by_agent"]) == 2
    assert status["by_agent"]["main"] == pytest.approx(openai_cost(root_usages), abs=1e-6)
    assert status["unpriced_models"] == []

    ccusage = shutil.which("ccusage") or (str(CCUSAGE) if CCUSAGE.exists() else None)
    if ccusage is None:
        pytest.fail(f"ccusage 20.0.24 not found at {CCUSAGE}: run tests/e2e/hosts_install.sh")
    proc = subprocess.run(
        [ccusage, "codex", "session", "--json", "--offline"],
        env=codex.person.env(CODEX_HOME=codex.home.path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    sessions = report.get("sessions") or []
    ccusage_total = sum(s.get("costUSD", 0) for s in sessions)
    assert ccusage_total == pytest.approx(status["spend_usd"], abs=1e-6), report


def test_installed_in_user_and_project_scope_counts_each_call_once(tmp_path):
    router = Script([sh(f"echo {n} >> ran.txt; exit 1") for n in range(1, 9)], stop_after=1)
    with ScriptedModel(serve(router)) as model:
        codex = Codex(tmp_path, model.url, scopes=("user", "project"), max_failures=3)
        project = codex.person.project
        assert (project / ".codex" / "hooks.json").exists()
        # a project's hooks run only in a trusted project
        with open(codex.home.config_path, "a") as handle:
            handle.write(f'\n[projects.{json.dumps(str(project))}]\ntrust_level = "trusted"\n')
        run = codex.run()
    project_skill = project / ".agents" / "skills" / "runaway-guard"
    for skill in (codex.skill, project_skill):
        assert (skill / "skill" / "runaway_guard" / "__pycache__").is_dir(), skill
    assert codex.marker() == ["1", "2", "3"], run.stdout[-3000:]
    assert codex.status(run.thread_id)["failures_in_a_row"] == 3


def test_fresh_install_runs_on_the_next_tool_call(tmp_path):
    router = Script([sh("echo hello")], stop_after=1)
    with ScriptedModel(serve(router)) as model:
        codex = Codex(tmp_path, model.url)
        assert "hook added" in codex.install_output
        assert "/hooks" in codex.install_output  # the person is told to trust it
        assert not codex.person.state_dir.exists()
        run = codex.run()
    state = codex.person.state_dir / "sessions" / "codex" / f"{run.thread_id}.state"
    assert state.exists(), sorted(codex.person.state_dir.rglob("*"))
    status = codex.status(run.thread_id)
    assert status["host"] == "codex" and status["session_id"] == run.thread_id
    assert "fail-open" not in codex.person.hook_log()
    check = codex.person.check("codex", CODEX_HOME=codex.home.path)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "ok: " in check.stdout


# -- the interactive TUI, in tmux and not -------------------------------------------------------


class Runaway:
    """A model that calls a tool at every request whatever it is told, until the person says
    "Thanks" (then it answers in words); side requests that offer no shell (a title, the TUI's
    background apply_patch-only request) get a word."""

    def __init__(self, command, usage):
        self.command = command
        self.usage = usage
        self.calls = 0

    def __call__(self, body):
        if "exec_command" not in json.dumps(body.get("tools")):
            return final("Title")
        if "Thanks" in json.dumps(body.get("input")):
            return final("You are welcome.")
        self.calls += 1
        return sh(self.command.format(n=self.calls), self.usage)


def tui(codex, in_tmux=True):
    with open(codex.home.config_path, "a") as handle:
        handle.write(TUI_ANSWERED)
    env = codex.person.host_env(HOME=codex.person.home)
    return CodexTui(codex.home, codex.person.project, "Go.", env=env, in_tmux=in_tmux)


def test_tui_in_tmux_the_turn_ends_at_the_cap_and_the_session_goes_on(tmp_path):
    model_script = Runaway("echo {n} >> ran.txt", DEAR)
    with ScriptedModel(serve(model_script, count=60)) as model:
        codex = Codex(tmp_path, model.url, max_usd=2)
        with tui(codex) as session:
            session.wait_for("Conversation interrupted")
            assert codex.marker() == ["1", "2", "3"]  # as in exec: at call 4 the next crosses
            session.type("Thanks")  # past the cap: the prompt is refused, the session stays
            session.wait_for("would cross the session spend cap")
            assert session.alive
    assert model_script.calls == 4
    assert "interrupting the Codex TUI" in codex.person.hook_log()
    rollout = codex.home.rollouts()[0]
    assert any((r.get("payload") or {}).get("type") == "turn_aborted" for r in read_jsonl(rollout))


def test_tui_outside_tmux_a_stop_is_a_refusal(tmp_path):
    model_script = Runaway("echo {n} >> ran.txt; exit 1", SMALL)
    with ScriptedModel(serve(Script([model_script] * 6, stop_after=IGNORES), count=60)) as model:
        codex = Codex(tmp_path, model.url, max_failures=2)
        with tui(codex, in_tmux=False) as session:
            session.wait_for("Stopping here.")  # the model ran out of script by itself
            assert session.alive
    assert codex.marker() == ["1", "2"]
    assert "deny only: the Codex TUI" in codex.person.hook_log()


def windowed(step: dict, used: int, now: int) -> dict:
    """A step whose response carries the plan's usage windows, as ChatGPT's backend sends them
    to Codex (codex-rs/codex-api/src/rate_limits.rs): the 5-hour one at ``used`` %."""
    headers = {
        "x-codex-primary-used-percent": str(used),
        "x-codex-primary-window-minutes": "300",
        "x-codex-primary-reset-at": str(now + 3 * 3600),
        "x-codex-secondary-used-percent": "12",
        "x-codex-secondary-window-minutes": "10080",
        "x-codex-secondary-reset-at": str(now + 5 * 86400),
    }
    return dict(step, headers=headers)


def test_on_a_plan_the_window_share_caps_the_run_and_status_shows_it(tmp_path):
    """A person on a plan (RUNAWAY_GUARD_PLAN=codex) who keeps 30 % of the 5-hour window for
    later: the dollar cap ($0.01, passed by the first response) does not apply, the window cap
    (70 %) stops the run at the first call that sees a response that recorded 80 %. Codex
    0.171.0 writes a response's windows (its token_count event) after the response's calls ran:
    call k sees the windows of k - 1 responses."""
    import time

    now = int(time.time())
    steps = [windowed(sh(f"echo {n} >> ran.txt", DEAR), 20 * n, now) for n in range(1, 8)]
    with ScriptedModel(serve(Script(steps, IGNORES))) as model:
        codex = Codex(tmp_path, model.url, plan="codex", max_window_share=0.7, max_usd=0.01)
        run = codex.run()
        requests = model.api_requests("openai")
    # calls 2 to 5 see 20, 40, 60 (past 80 % of the cap: told), 80 % (stopped)
    assert codex.marker() == ["1", "2", "3", "4"]
    told = [r for r in requests if "of the plan's 5-hour window" in json.dumps(r["body"])]
    assert told, "no window warning"
    status = codex.status(run.thread_id)
    assert status["blocked"]["wire"] == "window"
    assert status["plan"] is True and status["paid_usd"] == 0
    assert status["spend_usd"] > 0.01  # the API-equivalent value, shown beside it
    windows = {w["window"]: w for w in status["plan_windows"]["windows"]}
    assert windows["primary"]["used_share"] == 1.0  # the stopped call's response: read after
    assert windows["primary"]["window_minutes"] == 300
    assert windows["secondary"]["used_share"] == 0.12
    assert status["plan_windows"]["max_window_share"] == 0.7
