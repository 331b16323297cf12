"""status.py: finding the session, the JSON contract, the report for people, the person's controls.

Sessions are built by running the real guard (`skill/guard.py` in a new interpreter) over small
transcripts written here, then status.py is run the way a person runs it: a process in a folder.
"""

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from claude_records import assistant, result, usage
from guard_env import SKILL, GuardEnv, jsonl
from runaway_guard import claude_prices, ledger, openai_prices, report, state_file

STATUS = SKILL / "status.py"
OPUS = "claude-opus-4-6"
BIG = {"inp": 100000, "out": 2000}  # $0.55 on Opus 4.6
BIG_USD = claude_prices.claude_cost(OPUS, usage(**BIG))[0] / 1e12


def now_iso():
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())


class World(GuardEnv):
    """GuardEnv with projects; runs the guard and status.py as processes."""

    def __init__(self, root):
        super().__init__(root)
        self.count = 0

    def project(self, name):
        path = self.root / name
        (path / ".git").mkdir(parents=True, exist_ok=True)
        return path

    def guard(self, payload, **env):
        done = self.process(payload, **env)
        assert done.returncode == 0
        line = done.stdout.decode().strip()
        return json.loads(line) if line else None

    def status(self, *args, cwd=None, **env):
        done = subprocess.run(
            [sys.executable, str(STATUS), *args],
            capture_output=True,
            text=True,
            cwd=str(cwd or self.root),
            env={**self.env, **env},
            timeout=60,
            check=False,
        )
        return done.returncode, done.stdout, done.stderr

    def status_json(self, *args, cwd=None, **env):
        code, out, err = self.status("--json", *args, cwd=cwd, **env)
        assert code == 0, err
        return json.loads(out)

    def state(self, host, session):
        _, base = state_file.session_paths(str(self.state_dir), host, session)
        return state_file.read_state(base + state_file.STATE)

    def next_id(self, prefix):
        self.count += 1
        return f"{prefix}{self.count}"


class Claude:
    """One Claude Code session: a transcript, its subagents, and its hook calls."""

    def __init__(self, world, project, session):
        self.world = world
        self.project = Path(project)
        self.session = session
        self.transcript = world.home / ".claude" / "projects" / project.name / f"{session}.jsonl"

    def respond(self, model=OPUS, agent=None, tool=None, **use):
        """One API response (priced once) in the main file or a subagent's file."""
        msg = self.world.next_id("msg_")
        record = assistant(
            msg, model=model, tool=tool, use=usage(**(use or BIG)), timestamp=now_iso()
        )
        record["sessionId"] = self.session
        path = self.transcript
        if agent:
            path = self.transcript.parent / self.session / "subagents" / f"agent-{agent}.jsonl"
            record["isSidechain"] = True
            record["agentId"] = agent
        jsonl(path, [record])
        return msg

    def call(self, command="ls", agent=None, tool="Bash", tool_input=None, spend=True, **env):
        """The model asks for a tool call (a response that costs), then the guard sees it."""
        tool_use_id = self.world.next_id("toolu_")
        tool_input = tool_input if tool_input is not None else {"command": command}
        if spend:
            self.respond(agent=agent, tool=(tool_use_id, tool, tool_input))
        payload = {
            "session_id": self.session,
            "transcript_path": str(self.transcript),
            "cwd": str(self.project),
            "hook_event_name": "PreToolUse",
            "tool_name": tool,
            "tool_input": tool_input,
            "tool_use_id": tool_use_id,
        }
        if agent:
            payload["agent_id"] = agent
        return tool_use_id, self.world.guard(payload, **env)

    def outcome(self, tool_use_id, text="done", error=False):
        record = result(tool_use_id, text, error, timestamp=now_iso())
        record["sessionId"] = self.session
        jsonl(self.transcript, [record])


class Codex:
    """One Codex session: a root rollout, subagent rollouts naming it, and its hook calls."""

    def __init__(self, world, project, session, model="gpt-5.5"):
        self.world = world
        self.project = Path(project)
        self.session = session
        self.model = model
        folder = world.home / ".codex" / "sessions" / "2026" / "11" / "30"
        self.folder = folder
        self.rollout = folder / f"rollout-2026-11-30T00-00-00-{session}.jsonl"
        self._start(self.rollout, session)

    def _start(self, path, thread):
        jsonl(
            path,
            [
                {
                    "timestamp": now_iso(),
                    "type": "session_meta",
                    "payload": {"session_id": self.session, "id": thread, "cwd": str(self.project)},
                },
                {
                    "timestamp": now_iso(),
                    "type": "turn_context",
                    "payload": {"model": self.model, "cwd": str(self.project)},
                },
            ],
        )

    def subagent(self, thread):
        path = self.folder / f"rollout-2026-11-30T00-00-01-{thread}.jsonl"
        self._start(path, thread)
        return path

    def respond(self, path=None, thread=None, inp=100000, out=2000):
        jsonl(
            path or self.rollout,
            [
                {
                    "timestamp": now_iso(),
                    "type": "token_usage_record",
                    "payload": {
                        "thread_id": thread or self.session,
                        "session_id": self.session,
                        "response_id": self.world.next_id("resp_"),
                        "usage": {
                            "input_tokens": inp,
                            "cached_input_tokens": 0,
                            "cache_write_input_tokens": 0,
                            "output_tokens": out,
                            "reasoning_output_tokens": 0,
                            "total_tokens": inp + out,
                        },
                    },
                }
            ],
        )

    def cost(self, inp=100000, out=2000):
        use = {"input_tokens": inp, "cached_input_tokens": 0, "output_tokens": out}
        return openai_prices.openai_cost(self.model, use, None)[0] / 1e12

    def call(self, command="ls", spend=True, **env):
        call_id = self.world.next_id("call_")
        if spend:
            self.respond()
        payload = {
            "session_id": self.session,
            "turn_id": "turn-1",
            "transcript_path": str(self.rollout),
            "cwd": str(self.project),
            "hook_event_name": "PreToolUse",
            "model": self.model,
            "tool_name": "Bash",
            "tool_input": {"command": command},
            "tool_use_id": call_id,
        }
        return call_id, self.world.guard(payload, **env)

    def outcome(self, call_id, code=0, text="out"):
        jsonl(
            self.rollout,
            [
                {
                    "timestamp": now_iso(),
                    "type": "response_item",
                    "payload": {
                        "type": "function_call_output",
                        "call_id": call_id,
                        "output": f"Process exited with code {code}\nOutput:\n{text}",
                    },
                }
            ],
        )


def kind(answer):
    """What the guard answered: None, tell, deny, ask or stop."""
    if not answer:
        return None
    if answer.get("continue") is False:
        return "stop"
    specific = answer.get("hookSpecificOutput", {})
    if "permissionDecision" in specific:
        return specific["permissionDecision"]
    return "tell" if "additionalContext" in specific else None


@pytest.fixture
def world(tmp_path):
    return World(tmp_path)


def widest(text):
    """The widest line, the status script's path counted as its name: a path is as long as the
    checkout's, and the report puts it on a line of its own."""
    return max(len(line.replace(str(STATUS), STATUS.name)) for line in text.splitlines())


# -- finding the session


def test_discovery_prefers_this_project_then_the_most_recent(world):
    alpha, beta = world.project("alpha"), world.project("beta")
    (alpha / "src").mkdir()
    first = Claude(world, alpha, "c-alpha")
    first.call()
    Codex(world, beta, "x-beta").call()
    later = Claude(world, beta, "c-beta")
    later.call()

    # In alpha (even in a subfolder: its git root is the project) alpha's session wins,
    # though beta's sessions were seen later.
    assert world.status_json(cwd=alpha / "src")["session_id"] == "c-alpha"
    # In beta: the one of its two sessions seen last, whichever host.
    assert world.status_json(cwd=beta)["session_id"] == "c-beta"
    Codex(world, beta, "x-beta").call(spend=False)
    assert world.status_json(cwd=beta)["host"] == "codex"
    # Outside every project: the most recent overall.
    elsewhere = world.root / "elsewhere"
    elsewhere.mkdir()
    assert world.status_json(cwd=elsewhere)["session_id"] == "x-beta"


def test_the_status_call_itself_marks_its_session(world):
    proj = world.project("proj")
    one, two = Claude(world, proj, "one"), Claude(world, proj, "two")
    one.call()
    two.call()
    assert world.status_json(cwd=proj)["session_id"] == "two"
    # Session one's agent runs status.py: the call passes the guard first, which marks it.
    _, answer = one.call(f"python3 {STATUS} --json", spend=False)
    assert answer is None
    assert world.status_json(cwd=proj)["session_id"] == "one"


def test_session_by_id_prefix_and_host(world):
    proj = world.project("proj")
    Claude(world, proj, "abcd-1111").call()
    Codex(world, proj, "abcd-2222").call()
    assert world.status_json("--session", "abcd-1111")["host"] == "claude"
    assert world.status_json("--session", "abcd-2")["session_id"] == "abcd-2222"
    assert world.status_json("--session", "codex:abcd-2222")["host"] == "codex"
    code, _, err = world.status("--session", "abcd")
    assert code == 2 and "more than one session" in err
    code, out, err = world.status("--session", "nope")
    assert code == 2 and not out
    assert "no session 'nope'" in err and "--today" in err


def test_no_session_yet_is_a_clear_message(world):
    code, out, err = world.status()
    assert code == 2 and not out
    assert "has not seen any session yet" in err


def test_claude_subagents_are_in_the_session(world):
    proj = world.project("proj")
    session = Claude(world, proj, "s-sub")
    session.call()
    session.respond(agent="a7f3", inp=10000, out=100)
    session.call("pytest -q", agent="a7f3")
    data = world.status_json(cwd=proj)
    expected_agent = (
        claude_prices.claude_cost(OPUS, usage(inp=10000, out=100))[0]
        + claude_prices.claude_cost(OPUS, usage(**BIG))[0]
    )
    assert data["by_agent"]["a7f3"] == pytest.approx(expected_agent / 1e12)
    assert data["by_agent"]["main"] == pytest.approx(BIG_USD)
    assert data["spend_usd"] == pytest.approx(sum(data["by_agent"].values()))
    assert set(data["agents"]) == {"main", "a7f3"}


def test_codex_subagent_rollouts_are_in_the_session(world):
    proj = world.project("proj")
    session = Codex(world, proj, "root-thread")
    session.call()
    child = session.subagent("child-thread")
    session.respond(child, thread="child-thread", inp=50000, out=1000)
    session.call(spend=False)
    data = world.status_json(cwd=proj)
    assert data["host"] == "codex"
    assert data["by_agent"] == {
        "main": pytest.approx(session.cost()),
        "child-thread": pytest.approx(session.cost(50000, 1000)),
    }
    assert data["by_model"] == {"gpt-5.5": pytest.approx(data["spend_usd"])}


# -- the JSON object


def test_every_json_field(world):
    proj = world.project("proj")
    session = Claude(world, proj, "s-json")
    env = {"RUNAWAY_GUARD_MAX_FAILURES": "3", "RUNAWAY_GUARD_DAILY_USD": "40"}
    session.respond(model="claude-zeta-9", inp=1000, out=10)  # a model the table lacks
    for index in range(3):
        tool_use_id, _ = session.call(f"make step{index}", **env)
        session.outcome(tool_use_id, f"Exit code 2\nerror {index}", error=True)
    _, answer = session.call("make again", **env)
    assert kind(answer) == "deny"  # three failures in a row, limit 3

    data = world.status_json(cwd=proj, **env)
    zeta = claude_prices.claude_cost("claude-zeta-9", usage(inp=1000, out=10))[0]
    total = 4 * claude_prices.claude_cost(OPUS, usage(**BIG))[0] + zeta
    assert data["host"] == "claude"
    assert data["session_id"] == "s-json"
    assert data["cwd"] == str(proj)
    assert data["spend_usd"] == total / 1e12
    assert data["cap_usd"] == 25.0
    assert data["cap_source"] == "default"
    assert data["warn_at"] == 0.8
    assert data["today_usd"] == data["spend_usd"]
    assert data["daily_spend_usd"] == data["spend_usd"]
    assert data["daily_sessions"] == 1
    assert data["daily_cap_usd"] == 40.0
    assert data["daily_cap_source"] == "environment"
    assert data["by_model"] == {
        OPUS: pytest.approx(4 * BIG_USD),
        "claude-zeta-9": pytest.approx(zeta / 1e12),
    }
    assert list(data["by_model"]) == [OPUS, "claude-zeta-9"]  # dearest first
    assert data["by_agent"] == {"main": data["spend_usd"]}
    assert data["failures_in_a_row"] == 3
    main = data["agents"]["main"]
    assert main["failures_in_a_row"] == 3
    assert main["loop_repeats"] == 0  # three different calls: no loop
    assert main["refusals"] == {"failure": 1}
    assert data["limits"] == {"max_failures": 3, "max_repeats": 5}
    assert data["blocked"]["wire"] == "failure"
    assert data["blocked"]["agent"] == "main"
    assert "failed in a row" in data["blocked"]["reason"]
    assert time.time() - data["blocked"]["at"] < 120
    assert data["refusing"] == [
        {"wire": "failure", "agent": "main", "why": "3 failed calls in a row (limit 3)"}
    ]
    assert data["off"] is False and data["off_by"] is None
    assert data["unpriced_models"] == ["claude-zeta-9"]
    assert data["config_problems"] == []
    assert data["state_file"] == str(world.state_dir / "sessions" / "claude" / "s-json.state")
    assert data["started"] <= data["last_seen"] <= time.time()
    assert set(data["forecast"]) == {
        "basis",
        "usd_per_hour",
        "cap",
        "reached_in_s",
        "reached_at",
        "note",
    }
    assert data["commands"]["raise_cap"].endswith("--session s-json --raise-cap 38")
    assert data["commands"]["clear"] == f"python3 {STATUS} --session s-json --clear"


def test_cap_fields_none_raised_and_from_config(world):
    proj = world.project("proj")
    session = Claude(world, proj, "s-cap")
    session.call()
    data = world.status_json(cwd=proj, RUNAWAY_GUARD_MAX_USD="0")
    assert data["cap_usd"] is None and data["daily_cap_usd"] is None
    world.status_json(cwd=proj)
    code, out, _ = world.status("--raise-cap", "60", cwd=proj)
    assert code == 0 and "$60.00" in out
    data = world.status_json(cwd=proj, RUNAWAY_GUARD_MAX_USD="0")
    assert data["cap_usd"] == 60.0 and data["cap_source"] == "raised"


def test_forecast_from_recent_spend_samples(world):
    state = ledger.new_state("claude", "s")
    now = 1_000_000.0
    state["started"] = now - 3600
    state["seen"] = now
    pico = 10**12
    # Slow for the first 45 minutes, then $6 in the last 10: the recent rate is $36/hour.
    state["burn"] = [[now - 3600, 0], [now - 1200, 1 * pico], [now - 600, 2 * pico]]
    state["spend"]["total"] = 8 * pico
    fc = report.forecast(state, 20.0, 8.0, 0, now)
    assert fc["basis"] == "last 15 min"
    assert fc["usd_per_hour"] == pytest.approx(36.0)
    assert fc["cap"] == "session"
    assert fc["reached_in_s"] == pytest.approx(12 / 36 * 3600)
    # The daily cap is nearer: it is the one reached first.
    fc = report.forecast(state, 20.0, 8.0, 9.0, now)
    assert fc["cap"] == "daily" and fc["reached_in_s"] == pytest.approx(100.0)
    # Too little recent history: the session average since the first sample.
    state["burn"] = [[now - 3600, 0], [now - 30, 7 * pico]]
    fc = report.forecast(state, 20.0, 8.0, 0, now)
    assert fc["basis"] == "session average"
    assert fc["usd_per_hour"] == pytest.approx(8.0)
    # A session a few seconds old has no rate yet.
    state["burn"] = [[now - 5, 0]]
    state["started"] = now - 5
    assert report.forecast(state, 20.0, 8.0, 0, now)["usd_per_hour"] is None


def test_guard_keeps_spend_samples_for_the_forecast(world):
    proj = world.project("proj")
    session = Claude(world, proj, "s-burn")
    session.call()
    session.call()
    burn = world.state("claude", "s-burn")["burn"]
    assert len(burn) == 1  # at most one sample a minute
    assert burn[0][1] > 0


# -- the report for people


def test_human_report_fits_80_columns(world):
    proj = world.project("a-project-with-a-rather-long-name-for-the-report")
    session = Claude(world, proj, "0b4d7f0e-5a2c-4d7e-9a41-8f0c7c9e2b11")
    env = {"RUNAWAY_GUARD_MAX_USD": "1", "RUNAWAY_GUARD_DAILY_USD": "2"}
    session.respond(model="claude-some-future-model-with-a-very-long-name-20991231", inp=10)
    session.respond(agent="a0123456789abcdef0123456789", inp=1000)
    for index in range(3):
        tool_use_id, _ = session.call(f"make {index}", **env)
        session.outcome(tool_use_id, "Exit code 1", error=True)
    world.config(max_usd="lots")
    code, out, _ = world.status(cwd=proj, **env)
    assert code == 0
    assert widest(out) <= 80, out
    for needle in (
        "Session spend $",
        "By model",
        "By agent",
        "Today $",
        "failures in a row",
        "Refusing: session spend",
        "--raise-cap",
        "Forecast:",
        "max_usd='lots' is not valid",
    ):
        assert needle in out, needle
    # The commands it prints paste as one command (backslash-continued lines).
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if "status.py" in line and "--off" not in line)
    command = ""
    for line in lines[start:]:
        command += line.strip().rstrip("\\")
        if not line.endswith("\\"):
            break
    assert "--raise-cap" in command and "--session 0b4d7f0e-5a2c-4d7e-9a41-8f0c7c9e2b11" in command

    code, out, _ = world.status("--today", cwd=proj, **env)
    assert code == 0 and widest(out) <= 80, out
    world.status("--off", cwd=proj)
    code, out, _ = world.status(cwd=proj, **env)
    assert "OFF for this session" in out and "--on" in out and widest(out) <= 80


def test_human_report_of_a_quiet_session(world):
    proj = world.project("proj")
    Codex(world, proj, "x-quiet").call()
    code, out, _ = world.status(cwd=proj)
    assert code == 0
    assert "Nothing is refused" in out
    assert "Codex cannot ask" in out
    assert widest(out) <= 80


def test_today_lists_both_hosts(world):
    proj = world.project("proj")
    Claude(world, proj, "c-today").call()
    Codex(world, proj, "x-today").call()
    data = world.status_json("--today", RUNAWAY_GUARD_DAILY_USD="10")
    assert data["daily_cap_usd"] == 10.0
    assert {(row["host"], row["session_id"]) for row in data["sessions"]} == {
        ("claude", "c-today"),
        ("codex", "x-today"),
    }
    assert data["daily_spend_usd"] == pytest.approx(sum(r["today_usd"] for r in data["sessions"]))
    code, out, _ = world.status("--today")
    assert code == 0
    assert "claude   c-today" in out and "codex    x-today" in out


def test_today_is_exact_while_the_day_file_lags(world):
    """Without a daily cap a session's share of the day file is rewritten at most every 30 s;
    status still shows each session's spend to the cent, from its own state."""
    proj = world.project("proj")
    session = Claude(world, proj, "c-lag")
    day_file = world.state_dir / "daily" / f"{time.strftime('%Y-%m-%d')}.json"
    for _ in range(3):
        session.call()
    assert json.loads(day_file.read_text()) == {"claude:c-lag": round(BIG_USD * 1e12)}
    data = world.status_json("--today")
    assert [row["today_usd"] for row in data["sessions"]] == [pytest.approx(3 * BIG_USD)]
    assert data["daily_spend_usd"] == pytest.approx(3 * BIG_USD)
    assert world.status_json(cwd=proj)["daily_spend_usd"] == pytest.approx(3 * BIG_USD)
    # A daily cap needs the file exact: every change is written at once.
    session.call(RUNAWAY_GUARD_DAILY_USD="100")
    assert json.loads(day_file.read_text()) == {"claude:c-lag": round(4 * BIG_USD * 1e12)}


# -- the person's controls from status.py


def test_raise_cap_must_be_above_the_spend(world):
    proj = world.project("proj")
    Claude(world, proj, "s-raise").call()
    code, out, err = world.status("--raise-cap", "0.10", cwd=proj)
    assert code == 2 and not out
    assert "not above what this session has already spent ($0.55)" in err
    assert world.state("claude", "s-raise")["cap_usd"] is None
    for bad in ("abc", "0", "-5", "nan"):
        code, _, err = world.status("--raise-cap", bad, cwd=proj)
        assert code == 2 and "--raise-cap" in err
    code, _, err = world.status("--clear", "--off", cwd=proj)
    assert code == 2 and "not allowed with" in err


def test_daily_cap_spans_two_sessions_and_hosts(world):
    proj = world.project("proj")
    env = {"RUNAWAY_GUARD_DAILY_USD": "1.5"}
    first = Claude(world, proj, "s-day-1")
    second = Codex(world, proj, "s-day-2")
    assert kind(first.call(**env)[1]) is None  # $0.55 of 1.50
    # Each session under the daily cap, together over it with the next response: stopped.
    answer = second.call(**env)[1]  # $1.11 of 1.50, and its next (about $1.14) would cross
    assert kind(answer) == "deny"  # Codex: every rung is a deny
    reason = answer["hookSpecificOutput"]["permissionDecisionReason"]
    assert "the next response would cross the daily spend cap: $1.11 spent" in reason
    answer = first.call(**env)[1]
    assert kind(answer) == "stop"
    assert "daily spend" in answer["stopReason"]
    data = world.status_json(cwd=proj, **env)
    assert data["daily_spend_usd"] == pytest.approx(2 * BIG_USD + second.cost())
    assert data["spend_usd"] == pytest.approx(2 * BIG_USD)
    assert data["spend_usd"] < 1.5
    assert [item["wire"] for item in data["refusing"]] == ["daily"]
    _, out, _ = world.status(cwd=proj, **env)
    assert "daily cap spans every session" in out and "RUNAWAY_GUARD_DAILY_USD" in out
    # The other session is stopped too, on its next call.
    assert kind(second.call(**env)[1]) == "deny"  # Codex: every rung is a deny
