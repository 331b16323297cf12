"""The guard inside the real Gemini CLI (pinned 0.61.0), ``gemini -p``, offline.

Each test: a fresh HOME, ``installer/install.py --host gemini`` as a person runs it (it writes
``~/.gemini/settings.json``), the guard's limits in the environment, ``gemini -p --approval-mode
yolo`` against the scripted Gemini API on 127.0.0.1, and the verdict from the JSON the CLI
printed, the marker files the commands wrote and the installed ``status.py --json``.

The scripted model answers at once (no delay): Gemini CLI appends to its session file
synchronously before the next request, so the guard always sees the previous response and
outcome. The model never gives up by itself: every refusal is ignored, only the guard's stop
(``continue: false``) or the end of the script ends a run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from gemini_api import function_responses, tool_names
from gemini_host import GeminiHome, gemini_bin, run_gemini
from harness import Person, lines, require_cli
from scripted_model import ScriptedModel

pytestmark = pytest.mark.e2e

FLASH = "gemini-2.5-flash"
BLOCKED = "Tool execution blocked: runaway-guard:"
PRICES = json.loads(
    (Path(__file__).resolve().parents[2] / "skill" / "runaway_guard" / "prices.json").read_text()
)["gemini"]["models"]
# 5000 prompt + 400 output tokens on gemini-2.5-flash: $0.0015 + $0.0010
STEP = {"prompt": 5000, "output": 400}
STEP_USD = 0.0025
SMALL = {"prompt": 800, "cached": 600, "thoughts": 20, "output": 10}
NO_LOOP_DETECTION = {"model": {"disableLoopDetection": True}}


def sh(command: str, usage=None) -> dict:
    return {"calls": [{"shell": command}], "usage": dict(usage or SMALL)}


def say(text: str, usage=None) -> dict:
    return {"text": text, "usage": dict(usage or SMALL)}


def cost(model: str, meta: dict) -> float:
    """USD of one served usageMetadata, by hand from prices.json."""
    entry = PRICES[model]
    prompt = meta.get("promptTokenCount", 0)
    long = entry.get("long_context")
    rates = long if long and prompt > long["above_prompt_tokens"] else entry
    cached = meta.get("cachedContentTokenCount", 0)
    billed_in = prompt - cached + meta.get("toolUsePromptTokenCount", 0)
    billed_out = meta.get("candidatesTokenCount", 0) + meta.get("thoughtsTokenCount", 0)
    return (
        billed_in * rates["input"] + cached * rates["cached_input"] + billed_out * rates["output"]
    ) / 1e6


def served(model: ScriptedModel, api: str = "gemini") -> list:
    """(model, usageMetadata) of every response served on one API, in order."""
    import gemini_api

    return [
        (gemini_api.model_of(r["path"]), gemini_api.usage_metadata(r["step"].get("usage")))
        for r in model.api_requests(api)
    ]


def refusals(model: ScriptedModel) -> list:
    """The guard's refusals as the model was shown them (a deny's functionResponse error)."""
    seen = []
    for request in model.api_requests("gemini"):
        for response in function_responses(request["body"]):
            error = (response.get("response") or {}).get("error") or ""
            if error.startswith(BLOCKED):
                seen.append(error)
    return seen


class Gemini:
    """A person's HOME with Gemini CLI pointed at the scripted model and the guard installed."""

    def __init__(self, tmp_path: Path, model_url: str, scopes=("user",), settings=None, **limits):
        require_cli(gemini_bin(), "Gemini")
        self.person = Person(tmp_path, **limits)
        self.home = GeminiHome(self.person.home, model_url, settings=settings)
        self.install_output = ""
        for scope in scopes:
            args = ["--scope", scope]
            if scope == "project":
                args += ["--project", str(self.person.project)]
            self.install_output += self.person.install("gemini", *args)

    @property
    def skill(self) -> Path:
        return self.home.gemini_dir / "skills" / "runaway-guard"

    def run(self, prompt: str = "Go.", model=FLASH, **kwargs):
        env = self.person.host_env()
        run = run_gemini(self.home, prompt, self.person.project, model=model, env=env, **kwargs)
        assert run.session_id, f"{run!r}\n{run.stdout[-2000:]}\n{run.stderr[-3000:]}"
        return run

    def status(self, session_id: str) -> dict:
        return self.person.status(self.skill, session_id)

    def today(self) -> dict:
        """``status.py --today --json``: every session of the day, every host."""
        proc = subprocess.run(
            [sys.executable, str(self.skill / "skill" / "status.py"), "--today", "--json"],
            env=self.person.env(),
            cwd=str(self.person.project),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return json.loads(proc.stdout)

    def marker(self, name: str = "ran.txt") -> list:
        return lines(self.person.project / name)


# ---------------------------------------------------------------------------------------------


def test_failure_run_is_stopped_by_the_sixth_failing_command(tmp_path):
    steps = [sh(f"echo {n} >> ran.txt; exit {n % 3 + 1}") for n in range(1, 12)]
    with ScriptedModel({"gemini": steps}) as model:
        gemini = Gemini(tmp_path, model.url)
        run = gemini.run()
        seen = refusals(model)
        requests = len(model.api_requests("gemini"))
    assert gemini.marker() == ["1", "2", "3", "4", "5"], run.stderr[-3000:]
    # the 6th call refused, the 7th too (an "ask" is a refusal here), the 8th ends the run
    assert len(seen) == 2 and "5 tool calls in a row have failed" in seen[0], seen
    assert requests == 8 and run.response == "" and run.returncode == 0
    status = gemini.status(run.session_id)
    assert status["host"] == "gemini"
    assert status["blocked"]["wire"] == "failure" and status["blocked"]["kind"] == "stop"
    assert status["failures_in_a_row"] == 5


def test_identical_loop_is_stopped_by_the_sixth_call(tmp_path):
    steps = [sh("echo x >> ran.txt; echo same output") for _ in range(10)]
    with ScriptedModel({"gemini": steps}) as model:
        # Gemini CLI's own detector would stop the 5th identical call first (next test)
        gemini = Gemini(tmp_path, model.url, settings=NO_LOOP_DETECTION)
        run = gemini.run()
        seen = refusals(model)
    assert gemini.marker() == ["x"] * 5, run.stderr[-3000:]
    assert seen and "already ran 5 times with the same result" in seen[0], seen
    assert gemini.status(run.session_id)["blocked"]["wire"] == "loop"


def test_with_gemini_clis_own_loop_detector_it_stops_first(tmp_path):
    """What the person sees with both: Gemini CLI ends the run at the 5th identical call
    ("Loop detected, stopping execution"); the guard, at 5 repeats, has refused nothing."""
    steps = [sh("echo x >> ran.txt; echo same output") for _ in range(10)]
    with ScriptedModel({"gemini": steps}) as model:
        gemini = Gemini(tmp_path, model.url)
        run = gemini.run()
        seen = refusals(model)
    assert gemini.marker() == ["x"] * 4
    assert run.warnings == ["Loop detected, stopping execution"]
    assert seen == []
    assert gemini.status(run.session_id)["blocked"] is None


def test_polls_with_changing_output_and_edit_and_retest_are_never_refused(tmp_path):
    polls = [sh("date +%s%N >> polls.txt; tail -1 polls.txt") for _ in range(10)]
    cycle = []
    for v in range(1, 5):
        write = {"name": "write_file", "args": {"file_path": "check.py", "content": f"v = {v}\n"}}
        cycle.append({"calls": [write], "usage": dict(SMALL)})
        cycle.append(sh("python3 -c 'import check, sys; sys.exit(0 if check.v >= 4 else 1)'"))
    with ScriptedModel({"gemini": [*polls, say("Polled.")]}) as model:
        # ten identical polls would trip Gemini CLI's own detector (it ignores the output)
        gemini = Gemini(tmp_path, model.url, settings=NO_LOOP_DETECTION)
        run = gemini.run()
        assert refusals(model) == []
    assert len(gemini.marker("polls.txt")) == 10
    assert gemini.status(run.session_id)["blocked"] is None
    with ScriptedModel({"gemini": [*cycle, say("Fixed.")]}) as model:
        gemini = Gemini(tmp_path / "retest", model.url, max_failures=3, max_repeats=3)
        run = gemini.run()
        assert refusals(model) == []
        assert tool_names(model.api_requests("gemini")[0]["body"])
    assert (gemini.person.project / "check.py").read_text() == "v = 4\n"
    assert run.response == "Fixed."
    assert gemini.status(run.session_id)["failures_in_a_row"] == 0


def test_spend_cap_ends_the_run_below_the_cap(tmp_path):
    cap = 0.01
    steps = [sh(f"echo {n} >> ran.txt", STEP) for n in range(1, 20)]
    with ScriptedModel({"gemini": steps}) as model:
        gemini = Gemini(tmp_path, model.url, max_usd=cap)
        run = gemini.run()
        responses = served(model)
    spent = [sum(cost(m, u) for m, u in responses[: n + 1]) for n in range(len(responses))]
    print(json.dumps({"responses": len(responses), "spent": spent[-1], "cap": cap}))
    # a ceiling: the run ends at or below the cap, before the response that would cross it
    # (estimated at $0.0026: the uncached prompt and the last output written again, so the run
    # may stop where the next would land exactly on the cap)
    assert spent[-1] <= cap < spent[-1] + 2 * STEP_USD, (spent, cap)
    count = len(responses)
    assert gemini.marker() in ([str(n) for n in range(1, count + i)] for i in (0, 1))
    status = gemini.status(run.session_id)
    assert status["blocked"]["wire"] == "session" and status["blocked"]["kind"] == "stop"
    assert status["spend_usd"] == pytest.approx(spent[-1], abs=1e-9)


def test_spend_cap_reached_inside_a_subagent_ends_the_run(tmp_path):
    cap = 0.01
    sub = [sh(f"echo {n} >> sub.txt", STEP) for n in range(1, 20)]
    invoke = {"agent_name": "generalist", "prompt": "SUBTASK-CAP: run the checks"}
    main = [{"calls": [{"name": "invoke_agent", "args": invoke}], "usage": dict(SMALL)}]
    main += [sh(f"echo {n} >> main.txt") for n in range(1, 10)]
    steps = list(sub)

    def route(body):
        import gemini_api

        if "SUBTASK-CAP" in gemini_api.first_user_text(body):
            return steps.pop(0)
        return None

    with ScriptedModel({"gemini": main, "gemini_route": route}) as model:
        gemini = Gemini(tmp_path, model.url, max_usd=cap)
        run = gemini.run("Delegate.")
        responses = served(model)
        routed = [r for r in model.api_requests("gemini") if r.get("routed")]
    spent = [sum(cost(m, u) for m, u in responses[: n + 1]) for n in range(len(responses))]
    reached = next(n for n, total in enumerate(spent) if total >= cap - 1e-12)
    print(json.dumps({"responses": len(responses), "cap_reached_by": reached + 1}))
    assert len(responses) - 1 - reached <= 2, (spent, cap)
    assert gemini.marker("main.txt") == []  # the parent never ran another command
    assert 1 <= len(gemini.marker("sub.txt")) <= 4
    status = gemini.status(run.session_id)
    assert status["blocked"]["wire"] == "session"
    sub_agents = [a for a in status["by_agent"] if a != "main"]
    assert len(sub_agents) == 1 and len(routed) >= 3
    assert status["by_agent"][sub_agents[0]] == pytest.approx(
        sum(
            cost(m, u)
            for (m, u), r in zip(responses, model.api_requests("gemini"))
            if r.get("routed")
        ),
        abs=1e-9,
    )


def test_subagent_spend_counted_and_total_equals_tokens_times_table_on_three_models(tmp_path):
    big = {"prompt": 240000, "cached": 180000, "thoughts": 900, "output": 350}
    runs = [
        ("gemini-2.5-pro", [sh("echo pro", big), say("Pro done.", SMALL)]),
        (
            "gemini-3.1-pro-preview",
            [
                {
                    "calls": [
                        {
                            "name": "invoke_agent",
                            "args": {"agent_name": "generalist", "prompt": "SUBTASK-M: echo"},
                        }
                    ],
                    "usage": {"prompt": 9000, "cached": 7000, "thoughts": 300, "output": 80},
                },
                say(
                    "Preview done.", {"prompt": 9500, "cached": 9000, "thoughts": 40, "output": 30}
                ),
            ],
        ),
        (
            "gemini-3-flash-preview",
            [
                sh(
                    "echo flash",
                    {"prompt": 12000, "cached": 11000, "thoughts": 60, "tool": 300, "output": 45},
                ),
                say("Flash done."),
            ],
        ),
    ]
    sub = [
        sh("echo sub", {"prompt": 4000, "cached": 0, "thoughts": 120, "output": 60}),
        {
            "calls": [{"name": "complete_task", "args": {"result": {"response": "ok"}}}],
            "usage": {"prompt": 4200, "cached": 3900, "output": 20},
        },
    ]
    steps = [step for _, script in runs for step in script]

    def route(body):
        import gemini_api

        if "SUBTASK-M" in gemini_api.first_user_text(body):
            return sub.pop(0) if sub else say("sub done")
        return None

    with ScriptedModel({"gemini": steps, "gemini_route": route}) as model:
        gemini = Gemini(tmp_path, model.url)
        first = gemini.run("Echo pro.", model=runs[0][0])
        for prompt, (name, _) in zip(("Delegate.", "Echo flash."), runs[1:]):
            gemini.run(prompt, model=name, extra_args=["--resume", "latest"])
        responses = served(model)
        routed = [r.get("routed", False) for r in model.api_requests("gemini")]
    assert {m for m, _ in responses} == {name for name, _ in runs}
    status = gemini.status(first.session_id)
    expected = sum(cost(m, u) for m, u in responses)
    assert status["spend_usd"] == pytest.approx(expected, abs=1e-6)
    for name, _ in runs:
        by_model = sum(cost(m, u) for m, u in responses if m == name)
        assert status["by_model"][name] == pytest.approx(by_model, abs=1e-9)
    sub_agents = [a for a in status["by_agent"] if a != "main"]
    assert len(sub_agents) == 1
    sub_usd = sum(cost(m, u) for (m, u), r in zip(responses, routed) if r)
    assert sub_usd > 0 and status["by_agent"][sub_agents[0]] == pytest.approx(sub_usd, abs=1e-9)
    assert status["unpriced_models"] == []
    print(json.dumps({"expected_usd": expected, "status_usd": status["spend_usd"]}))
    rows = gemini.today()["sessions"]
    assert [(r["host"], r["session_id"]) for r in rows] == [("gemini", first.session_id)]
    assert rows[0]["spend_usd"] == pytest.approx(expected, abs=1e-6)


def test_router_calls_are_billed_but_never_written(tmp_path):
    """The default model (auto) asks a router (gemini-3.5-flash-lite, generateContent) first:
    the CLI writes no record of it, so the guard's total is short by exactly its price."""
    router = say('{"reasoning": "simple", "model_choice": "flash"}', {"prompt": 1500, "output": 25})
    steps = [
        sh("echo auto", {"prompt": 6000, "cached": 5000, "thoughts": 80, "output": 40}),
        say("Done."),
    ]
    with ScriptedModel({"gemini": steps, "gemini_utility_default": router}) as model:
        gemini = Gemini(tmp_path, model.url)
        run = gemini.run("Echo auto.", model=None)
        main = served(model)
        utility = served(model, "gemini_utility")
        router_request = model.api_requests("gemini_utility")[0]["body"]
    assert [m for m, _ in utility] == ["gemini-3.5-flash-lite"]
    status = gemini.status(run.session_id)
    main_usd = sum(cost(m, u) for m, u in main)
    gap_usd = sum(cost(m, u) for m, u in utility)
    assert status["spend_usd"] == pytest.approx(main_usd, abs=1e-9)
    # the CLI's own stats do show it, as role utility_router
    roles = run.stats["models"]["gemini-3.5-flash-lite"]["roles"]
    assert list(roles) == ["utility_router"]
    print(
        json.dumps(
            {
                "router_usd": gap_usd,
                "main_usd": main_usd,
                "gap_share": gap_usd / (gap_usd + main_usd),
                "router_request_chars": len(json.dumps(router_request)),
            }
        )
    )


def test_installed_in_user_and_project_scope_answers_each_call_once(tmp_path):
    steps = [sh(f"echo {n} >> ran.txt; exit 1") for n in range(1, 12)]
    with ScriptedModel({"gemini": steps}) as model:
        gemini = Gemini(tmp_path, model.url, scopes=("user", "project"), max_failures=3)
        project = gemini.person.project
        assert (project / ".gemini" / "settings.json").exists()
        assert (project / ".gemini" / "skills" / "runaway-guard" / "SKILL.md").exists()
        run = gemini.run()
        seen = refusals(model)
    assert "runaway-guard" in run.stderr  # the CLI's warning about new project hooks
    assert gemini.marker() == ["1", "2", "3"], run.stderr[-3000:]
    # both copies ran for every call and gave one answer: refuse, refuse, stop
    assert len(seen) == 2, seen
    assert gemini.status(run.session_id)["failures_in_a_row"] == 3


def test_fresh_install_runs_on_the_first_call(tmp_path):
    with ScriptedModel({"gemini": [sh("echo hello"), say("Hi.")]}) as model:
        gemini = Gemini(tmp_path, model.url)
        assert "hook added" in gemini.install_output
        assert "trusted" in gemini.install_output  # the person is told about trusted folders
        settings = json.loads(gemini.home.settings_path.read_text())
        assert settings["security"]["auth"]["selectedType"] == "gemini-api-key"  # kept
        handler = settings["hooks"]["BeforeTool"][0]["hooks"][0]
        assert handler["timeout"] == 30000 and handler["name"] == "runaway-guard"
        assert not gemini.person.state_dir.exists()
        run = gemini.run()
    status = gemini.status(run.session_id)
    assert status["host"] == "gemini" and status["session_id"] == run.session_id
    assert status["spend_usd"] == pytest.approx(2 * cost(FLASH, _meta(SMALL)), abs=1e-9)
    assert "fail-open" not in gemini.person.hook_log()
    check = gemini.person.check("gemini")
    assert check.returncode == 0, check.stdout + check.stderr


def _meta(usage):
    import gemini_api

    return gemini_api.usage_metadata(usage)
