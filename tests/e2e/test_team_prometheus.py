"""Team budgets against the real Debian `prometheus` and `prometheus-pushgateway` on 127.0.0.1.

Several simulated machines (each its own HOME and state dir, all on this one host, so they share
its hostname and /etc/machine-id as containers and cloned VMs do) feed the installed-form guard
(`python -I -S skill/guard.py`) real hook payloads over the recorded Claude Code and Codex
sessions of tests/fixtures, re-dated to today so their spend is this month's. The guard
publishes from the machine's ledger and reads the team's figures back on its own (detached
refreshes), every RUNAWAY_GUARD_TEAM_REFRESH_S = REFRESH seconds; Prometheus scrapes the gateway
every SCRAPE seconds.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest
from prometheus_servers import SCRAPE, Servers

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
SKILL = ROOT / "skill"
GUARD = SKILL / "guard.py"
FIXTURES = ROOT / "tests" / "fixtures"
RECORDED_DAY = "2026-11-30"  # every fixture session's timestamps are on this day
REFRESH = 2  # seconds: RUNAWAY_GUARD_TEAM_REFRESH_S on every machine here
PICO = 10**12
MONTH_SUM = 'sum(runaway_guard_month_spend_usd{{team="{team}",month="{month}"}})'
DAY_SUM = 'sum(runaway_guard_day_spend_usd{{team="{team}",user="{user}",day="{day}"}})'

sys.path.insert(0, str(SKILL))


def today():
    return time.strftime("%Y-%m-%d", time.gmtime())


def redate(folder: Path):
    """Move a recorded session to today (the machines run in UTC), so it counts this month."""
    for path in folder.rglob("*.jsonl"):
        path.write_text(path.read_text().replace(f"{RECORDED_DAY}T", f"{today()}T"))


class Machine:
    """One developer laptop or CI runner: its own HOME, state dir and guard settings."""

    def __init__(self, root: Path, name: str, user: str, servers: Servers | None, **settings):
        self.root = Path(root) / name
        self.home = self.root / "home"
        self.home.mkdir(parents=True)
        self.state_dir = self.root / "state"
        self.user = user
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "TZ": "UTC",
            "USER": user,
            "LOGNAME": user,
            "RUNAWAY_GUARD_STATE_DIR": str(self.state_dir),
            "RUNAWAY_GUARD_MAX_USD": "0",
        }
        if servers is not None:
            self.env.update(
                {
                    "RUNAWAY_GUARD_PUSHGATEWAY_URL": servers.gateway_url,
                    "RUNAWAY_GUARD_PROMETHEUS_URL": servers.prometheus_url,
                    "RUNAWAY_GUARD_TEAM_REFRESH_S": str(REFRESH),
                }
            )
        self.env.update({f"RUNAWAY_GUARD_{k.upper()}": str(v) for k, v in settings.items()})
        self.payloads = []

    # -- sessions: recorded transcripts, real payloads

    def claude(self, name: str) -> list:
        """A recorded Claude Code session on this machine; its PreToolUse payloads."""
        folder = self.root / "claude" / name
        shutil.copytree(FIXTURES / "claude" / name, folder)
        redate(folder)
        session = json.loads((folder / "result.json").read_text())["session_id"]
        shape = json.loads((FIXTURES / "claude" / "hook_inputs.jsonl").read_text().splitlines()[0])
        payload = dict(
            shape,
            session_id=session,
            transcript_path=str(folder / f"{session}.jsonl"),
            cwd=str(self.root),
            tool_use_id=f"toolu_{name}",
        )
        self.payloads.append(payload)
        return [payload]

    def codex(self, name: str) -> list:
        """A recorded Codex session on this machine; the PreToolUse payloads Codex sent."""
        folder = self.root / "codex" / name
        shutil.copytree(FIXTURES / "codex" / name / "sessions", folder / "sessions")
        redate(folder)
        payloads = []
        for line in (FIXTURES / "codex" / name / "hook_inputs.jsonl").read_text().splitlines():
            payload = json.loads(line)
            if payload.get("hook_event_name") != "PreToolUse":
                continue
            path = payload["transcript_path"]
            payload["transcript_path"] = str(folder) + path[path.index("/sessions/") :]
            payload["cwd"] = str(self.root)
            payloads.append(payload)
        self.payloads.extend(payloads)
        return payloads

    # -- the guard as the host runs it

    def hook(self, payload: dict, **env) -> dict | None:
        done = subprocess.run(
            [sys.executable, "-I", "-S", str(GUARD)],
            input=json.dumps(payload).encode(),
            capture_output=True,
            env={**self.env, **{k: str(v) for k, v in env.items()}},
            timeout=60,
        )
        assert done.returncode == 0 and done.stderr == b"", done.stderr
        return json.loads(done.stdout) if done.stdout.strip() else None

    def run_all(self, tag: str = "") -> list:
        """Every payload once more; a tag makes them new calls (the same id is answered from
        the state: a guard installed twice)."""
        return [
            self.hook(dict(payload, tool_use_id=payload["tool_use_id"] + tag))
            for payload in self.payloads
        ]

    def status(self, *args, check=True) -> subprocess.CompletedProcess:
        done = subprocess.run(
            [sys.executable, str(SKILL / "status.py"), *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
            cwd=str(self.root),
        )
        assert done.returncode == 0 or not check, done.stderr
        return done

    def status_json(self, session: str) -> dict:
        return json.loads(self.status("--json", "--session", session).stdout)

    # -- what the machine has spent, read independently of the guard's code

    def ledger_total(self) -> int:
        """Picodollars in this machine's ledgers today: the last row of a response wins."""
        total = 0
        for path in self.state_dir.glob("sessions/*/*.ledger"):
            latest = {}
            for line in path.read_text().splitlines():
                key, picodollars, _, _, _, day = json.loads(line)
                latest[key] = (picodollars, day)
            total += sum(picodollars for picodollars, day in latest.values() if day == today())
        return total

    def cache(self) -> dict:
        path = self.state_dir / "team" / "cache.json"
        return json.loads(path.read_text()) if path.exists() else {}

    def wait_refreshed(self, after: float, timeout: float = 15.0) -> dict:
        """The cache once a refresh that began after `after` finished."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            cache = self.cache()
            if (cache.get("attempted_at") or 0) >= after:
                return cache
            time.sleep(0.05)
        raise AssertionError(f"{self.root.name}: no refresh after {after}: {self.cache()}")


def refused(answer: dict | None) -> bool:
    specific = (answer or {}).get("hookSpecificOutput") or {}
    return specific.get("permissionDecision") == "deny"


def reason(answer: dict) -> str:
    return answer["hookSpecificOutput"]["permissionDecisionReason"]


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    running = Servers(tmp_path_factory.mktemp("servers")).start()
    yield running
    running.stop()


def test_team_total_is_the_sum_of_every_machines_ledger(servers, tmp_path):
    month = today()[:7]
    laptop_a = Machine(tmp_path, "laptop-a", "alice", servers, team="acme")
    laptop_a.claude("models")  # two hosts on one machine: one total
    laptop_a.codex("usage")
    runner = Machine(tmp_path, "ci-runner", "alice", servers, team="acme")
    runner.codex("subagent")
    laptop_b = Machine(tmp_path, "laptop-b", "bob", servers, team="acme")
    laptop_b.claude("long_prompt")
    laptop_b.claude("failures")
    laptop_b.codex("failures")
    machines = (laptop_a, runner, laptop_b)
    for machine in machines:
        machine.run_all()  # each machine's first call starts its refresh; nobody waits for it

    totals = [machine.ledger_total() for machine in machines]
    assert all(totals)
    team_usd = sum(totals) / PICO
    team_sum = MONTH_SUM.format(team="acme", month=month)
    servers.wait_value(team_sum, team_usd)
    alice = DAY_SUM.format(team="acme", user="alice", day=today())
    assert abs(servers.value(alice) - (totals[0] + totals[1]) / PICO) <= 1e-6
    groups = [g for g in servers.groups() if g.get("team") == "acme"]
    assert len(groups) == 3 and len({g["machine"] for g in groups}) == 3  # one hostname, 3 ids
    for machine, total in zip(machines, totals):
        assert machine.cache()["mine_month"] == total  # what it published is its ledger's

    # What a machine sees: the team's month and the person's day, as status.py reports them.
    assert laptop_b.status("--team-sync").returncode == 0
    seen = laptop_b.status_json(laptop_b.payloads[0]["session_id"])
    assert abs(seen["team_spend_usd"] - team_usd) <= 1e-6
    assert abs(seen["person_spend_usd"] - totals[2] / PICO) <= 1e-6
    assert seen["team_refreshed_at"] and seen["team_stale_since"] is None
    assert seen["team"]["name"] == "acme" and seen["team"]["user"] == "bob"

    # Five more pushes from every machine, the same calls again (a retry, a guard installed
    # twice), a refresh that crashed before writing its cache, a session state lost: no change.
    for machine in machines:
        for _ in range(5):
            assert machine.status("--team-sync").returncode == 0
        machine.run_all()
    (laptop_a.state_dir / "team" / "cache.json").unlink()
    next((laptop_a.state_dir / "sessions" / "claude").glob("*.state")).unlink()
    assert laptop_a.status("--team-sync").returncode == 0
    time.sleep(3 * SCRAPE)
    assert abs(servers.value(team_sum) - team_usd) <= 1e-6
    assert [machine.ledger_total() for machine in machines] == totals

    # The gateway restarts (its persistence file written as it stops): no machine pushes.
    servers.stop_gateway()
    servers.start_gateway()
    assert len([g for g in servers.groups() if g.get("team") == "acme"]) == 3
    time.sleep(3 * SCRAPE)  # scrapes of the restarted gateway only
    assert abs(servers.value(team_sum) - team_usd) <= 1e-6
    # It restarts empty: the machines' next refreshes (as their calls go on) fill it in again,
    # each machine once: the sum climbs back to the total and never past it.
    servers.stop_gateway()
    servers.persistence.unlink()
    servers.start_gateway(persist=False)
    time.sleep(3 * SCRAPE)
    assert servers.value(team_sum) is None
    deadline = time.monotonic() + 30
    seen = None
    while time.monotonic() < deadline:
        for machine in machines:
            machine.hook(dict(machine.payloads[0], tool_use_id=f"toolu_{time.time()}"))
        seen = servers.value(team_sum)
        assert seen is None or seen <= team_usd + 1e-6
        if seen is not None and abs(seen - team_usd) <= 1e-6:
            break
        time.sleep(0.3)
    assert seen is not None and abs(seen - team_usd) <= 1e-6
    time.sleep(3 * SCRAPE)
    assert abs(servers.value(team_sum) - team_usd) <= 1e-6


@pytest.mark.parametrize("scope", ["team", "person"])
def test_a_cap_crossed_on_other_machines_refuses_here_within_one_refresh(servers, tmp_path, scope):
    """Watcher W runs under the cap. Other machines publish spend that takes the team (or W's
    person, over their two machines) past it: W's next calls are refused within one refresh
    interval of the figure reaching Prometheus. Another person's spend never counts toward
    W's person cap."""
    team = f"{scope}-cap"
    watcher = Machine(tmp_path, "watcher", "carol", None)
    watcher.claude("failures")
    if scope == "team":
        others = [Machine(tmp_path, "m1", "alice", None), Machine(tmp_path, "m2", "bob", None)]
        others[0].claude("models")
        others[1].codex("usage")
        bystander = None
    else:
        others = [Machine(tmp_path, "carol-ci", "carol", None)]
        others[0].codex("usage")
        bystander = Machine(tmp_path, "dave", "dave", None)
        bystander.claude("models")
    # The ledgers first, with no team configured: what each machine will publish.
    for machine in [watcher, *others] + ([bystander] if bystander else []):
        machine.run_all()
    mine, theirs = watcher.ledger_total(), sum(m.ledger_total() for m in others)
    cap = (mine + theirs * 0.6) / PICO  # crossed only once the others' spend is in

    team_env = {
        "RUNAWAY_GUARD_TEAM": team,
        "RUNAWAY_GUARD_PUSHGATEWAY_URL": servers.gateway_url,
        "RUNAWAY_GUARD_PROMETHEUS_URL": servers.prometheus_url,
        "RUNAWAY_GUARD_TEAM_REFRESH_S": str(REFRESH),
    }
    for machine in [watcher, *others] + ([bystander] if bystander else []):
        machine.env.update(team_env)
    key = "TEAM_MONTHLY_USD" if scope == "team" else "PERSON_DAILY_USD"
    watcher.env[f"RUNAWAY_GUARD_{key}"] = f"{cap:.12f}"
    call = dict(watcher.payloads[0])

    started = time.time()
    assert watcher.hook(dict(call, tool_use_id="toolu_w0")) is None
    assert watcher.wait_refreshed(started)["error"] is None
    if bystander:  # another person's spend: the team's, not carol's
        bystander.run_all("-team")
        total = (mine + bystander.ledger_total()) / PICO
        servers.wait_value(MONTH_SUM.format(team=team, month=today()[:7]), total)
        deadline = time.monotonic() + REFRESH + 1
        while time.monotonic() < deadline:
            assert not refused(watcher.hook(dict(call, tool_use_id=f"toolu_b{time.time()}")))
            time.sleep(0.1)

    for machine in others:
        machine.run_all("-team")
    if scope == "team":
        query = MONTH_SUM.format(team=team, month=today()[:7])
    else:
        query = DAY_SUM.format(team=team, user="carol", day=today())
    servers.wait_value(query, (mine + theirs) / PICO)
    visible = time.monotonic()  # the crossing is in Prometheus from here on
    answer = None
    for index in range(200):
        answer = watcher.hook(dict(call, tool_use_id=f"toolu_w{index + 1}"))
        if refused(answer):
            break
        time.sleep(0.1)
    waited = time.monotonic() - visible
    assert refused(answer) and answer.get("continue") is False
    assert waited <= REFRESH + 1.5, f"refused {waited:.2f} s after the crossing was visible"
    text = reason(answer)
    if scope == "team":
        assert f"monthly team ({team})" in text and "the team's budget owner" in text
        assert "RUNAWAY_GUARD_TEAM_MONTHLY_USD" in answer["systemMessage"]
    else:
        assert "daily per-person (carol)" in text and "all of carol's machines" in text
    seen = watcher.status_json(call["session_id"])
    assert seen["blocked"]["wire"] == scope
    assert any(item["wire"] == scope for item in seen["refusing"])
    print(f"\n{scope} cap: refused {waited:.2f} s after the crossing reached Prometheus")


def _calls(env, payload, count):
    """count in-process hook calls (the guard's own work, no interpreter start); their time."""
    from runaway_guard import hook

    started = time.perf_counter()
    for index in range(count):
        data = json.dumps(dict(payload, tool_use_id=f"toolu_speed_{time.time()}_{index}")).encode()
        hook.run(data, env)
    return time.perf_counter() - started


def test_servers_stopped_calls_stay_fast_and_local_caps_still_stop(tmp_path, monkeypatch):
    monkeypatch.setenv("TZ", "UTC")  # the in-process calls below: the machines' time zone
    time.tzset()
    own = Servers(tmp_path / "servers").start()
    teamed = Machine(tmp_path, "teamed", "erin", own, team="offline", team_monthly_usd=1000)
    plain = Machine(tmp_path, "plain", "erin", None)
    for machine in (teamed, plain):
        machine.claude("models")
    payload = teamed.payloads[0]
    started = time.time()
    teamed.hook(payload)
    plain.hook(plain.payloads[0])
    fresh = teamed.wait_refreshed(started)
    assert fresh["error"] is None and fresh["fetched_at"]
    own.stop()
    stopped = time.time()

    # A thousand calls each way, in alternating blocks (the machine is shared), in one run.
    team_s = plain_s = 0.0
    for _ in range(20):
        team_s += _calls(teamed.env, payload, 50)
        plain_s += _calls(plain.env, plain.payloads[0], 50)
    ratio = team_s / plain_s
    # As the host runs it: one interpreter per call.
    team_p, plain_p = [], []
    for index in range(25):
        for machine, times in ((teamed, team_p), (plain, plain_p)):
            begun = time.perf_counter()
            machine.hook(dict(machine.payloads[0], tool_use_id=f"toolu_proc_{index}"))
            times.append(time.perf_counter() - begun)
    process_ratio = statistics.median(team_p) / statistics.median(plain_p)
    print(
        f"\nservers stopped: 1000 calls {team_s * 1000:.0f} ms with a team, "
        f"{plain_s * 1000:.0f} ms without (x{ratio:.2f}); one process "
        f"{statistics.median(team_p) * 1000:.1f} ms vs {statistics.median(plain_p) * 1000:.1f} ms "
        f"(x{process_ratio:.2f})"
    )
    assert ratio < 2.5 and process_ratio < 1.5  # loosely: the machine is shared

    cache = teamed.wait_refreshed(stopped)
    assert cache["error"] and 1 <= cache["failures"] <= 5  # backed off, not once per call
    assert cache["fetched_at"] == fresh["fetched_at"]  # the last figures, kept with their time
    seen = teamed.status_json(payload["session_id"])
    assert seen["team_stale_since"] and seen["team_refreshed_at"] == fresh["fetched_at"]
    assert abs(seen["team_spend_usd"] - teamed.ledger_total() / PICO) <= 1e-6
    report = teamed.status("--session", payload["session_id"]).stdout
    assert "stale since" in report

    # Failing open: the local caps still stop the run.
    answer = teamed.hook(dict(payload, tool_use_id="toolu_cap"), RUNAWAY_GUARD_MAX_USD="0.05")
    assert refused(answer) and answer["continue"] is False and "session spend cap" in reason(answer)
    answer = teamed.hook(dict(payload, tool_use_id="toolu_day"), RUNAWAY_GUARD_DAILY_USD="0.05")
    assert refused(answer) and "daily spend cap" in reason(answer)
    assert teamed.hook(dict(payload, tool_use_id="toolu_open")) is None
    # A CI job that opted in refuses instead.
    answer = teamed.hook(dict(payload, tool_use_id="toolu_ci"), RUNAWAY_GUARD_TEAM_FAIL_CLOSED="1")
    assert refused(answer) and "cannot be checked" in reason(answer)
