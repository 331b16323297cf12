"""Team budgets (team/) against a stdlib stand-in for the Pushgateway and Prometheus: what is
published, what is read back, the figures the wires use, the refresh's timing, its failures.

The real servers are driven in tests/e2e/test_team_prometheus.py.
"""

import http.server
import json
import os
import socket
import subprocess
import sys
import threading
import time

import pytest
from claude_records import assistant, pre_tool_use, usage
from guard_env import GUARD, jsonl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from runaway_guard import config, config_team, ledger, state_file, team
from runaway_guard.team import metrics, refresher, totals
from runaway_guard.team import servers as team_servers
from runaway_guard.team import status as team_status

PICO = 10**12
NOW = time.mktime((2026, 12, 15, 12, 0, 0, 0, 0, -1))
MONTH, DAY = team.periods(NOW)


class FakeServers(http.server.ThreadingHTTPServer):
    """One port that answers like both servers: PUT/DELETE groups, GET /api/v1/query."""

    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests = []
        self.sums = {}  # part -> USD; what the query answers
        self.fail = {}  # method -> HTTP status to answer instead
        self.raw_query = None  # bytes to answer the query with instead
        self.redirect = {}  # method -> where a 302 sends it instead
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server_address[1]}"

    def close(self):
        self.shutdown()
        self.server_close()


class _Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _answer(self, status, body=b""):
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _serve(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        server = self.server
        server.requests.append((self.command, self.path, body, dict(self.headers)))
        if self.command in server.fail:
            return self._answer(server.fail[self.command], b"no")
        if self.command in server.redirect:
            self.send_response(302)
            self.send_header("Location", server.redirect[self.command] + self.path)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        if self.command == "GET":
            if server.raw_query is not None:
                return self._answer(200, server.raw_query)
            result = [
                {"metric": {"part": part}, "value": [NOW, repr(value)]}
                for part, value in server.sums.items()
            ]
            data = {"resultType": "vector", "result": result}
            return self._answer(200, json.dumps({"status": "success", "data": data}).encode())
        return self._answer(200)

    do_GET = do_PUT = do_DELETE = do_POST = _serve


@pytest.fixture
def servers():
    fake = FakeServers()
    yield fake
    fake.close()


def environ_for(guard_env, url, **extra):
    values = {
        **guard_env.env,
        "USER": "alice",
        "RUNAWAY_GUARD_TEAM": "acme",
        "RUNAWAY_GUARD_PUSHGATEWAY_URL": url,
        "RUNAWAY_GUARD_PROMETHEUS_URL": url,
    }
    values.update({key: str(value) for key, value in extra.items()})
    return values


def team_settings(guard_env, url, **extra):
    return config.load(None, environ_for(guard_env, url, **extra))


def book(state_dir, host, session_id, rows):
    """A session whose ledger holds rows of (key, USD, day)."""
    with ledger.Ledger(str(state_dir), host, session_id) as session:
        for key, amount, day in rows:
            session.usage(
                key,
                "main",
                "m",
                picodollars=round(amount * PICO),
                known_model=True,
                output=1,
                day=day,
            )
        return session.state


def last_month(day=DAY):
    year, month = int(day[:4]), int(day[5:7])
    return f"{year - (month == 1)}-{(month - 2) % 12 + 1:02d}-28"


# -- configuration ------------------------------------------------------------------------------


def test_team_settings_from_the_environment_and_the_users_file(guard_env, tmp_path):
    settings = team_settings(guard_env, "http://gw:9091/", RUNAWAY_GUARD_TEAM_MONTHLY_USD=2000)
    assert (settings.team, settings.user) == ("acme", "alice")
    assert settings.pushgateway_url == "http://gw:9091"  # no trailing slash
    assert settings.team_monthly_usd == 2000 and settings.person_daily_usd == 0
    assert settings.team_refresh_s == 20 and settings.team_fail_closed is False
    assert settings.sources["team_monthly_usd"] == "environment"

    guard_env.config(
        team="web.dev",
        user="bob",
        pushgateway_url="https://push.example",
        prometheus_url="https://prom.example",
        person_daily_usd=50,
        team_refresh_s=5,
        team_fail_closed=True,
    )
    settings = config.load(None, guard_env.env)
    assert (settings.team, settings.user, settings.person_daily_usd) == ("web.dev", "bob", 50)
    assert settings.team_refresh_s == 5 and settings.team_fail_closed is True
    assert settings.problems == []


def test_default_user_is_the_login_name_as_a_label(guard_env):
    env = {**environ_for(guard_env, "http://x"), "USER": "Ann Smith"}
    env.pop("LOGNAME", None)
    assert config.load(None, env).user == "Ann_Smith"


def test_invalid_or_incomplete_team_settings_switch_team_budgets_off(guard_env):
    env = environ_for(guard_env, "http://x", RUNAWAY_GUARD_TEAM="a/b")
    settings = config.load(None, env)
    assert settings.team is None and any("RUNAWAY_GUARD_TEAM=" in p for p in settings.problems)
    env = environ_for(guard_env, "http://x", RUNAWAY_GUARD_PROMETHEUS_URL="")
    settings = config.load(None, env)
    assert settings.team is None
    assert any("no valid RUNAWAY_GUARD_PROMETHEUS_URL" in p for p in settings.problems)
    env = environ_for(guard_env, "ftp://x", RUNAWAY_GUARD_TEAM_REFRESH_S="0")
    settings = config.load(None, env)
    assert settings.team is None and settings.team_refresh_s == 20
    assert len(settings.problems) == 4  # both URLs, the interval, team budgets off


def test_a_project_may_tighten_team_caps_but_not_name_the_team_or_servers(guard_env, tmp_path):
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    (project / ".runaway-guard.json").write_text(
        json.dumps(
            {
                "team": "other",
                "pushgateway_url": "http://evil",
                "team_monthly_usd": 100,
                "person_daily_usd": 80,
                "team_refresh_s": 1,
                "team_fail_closed": True,
            }
        )
    )
    env = environ_for(
        guard_env, "http://x", RUNAWAY_GUARD_TEAM_MONTHLY_USD=500, RUNAWAY_GUARD_PERSON_DAILY_USD=50
    )
    settings = config.load(str(project), env)
    assert (settings.team, settings.pushgateway_url) == ("acme", "http://x")
    assert settings.team_monthly_usd == 100 and settings.sources["team_monthly_usd"] == "project"
    assert settings.person_daily_usd == 50  # 80 would loosen it
    assert settings.team_refresh_s == 20 and settings.team_fail_closed is True
    problems = " ".join(settings.problems)
    for key in ("team", "pushgateway_url", "team_refresh_s", "person_daily_usd"):
        assert f"{key}" in problems


IMPORTS = (
    "import sys, os; sys.path.insert(0, sys.argv[1]); before = set(sys.modules); "
    "from runaway_guard import hook; hook.run(sys.stdin.buffer.read(), dict(os.environ)); "
    "print(' '.join(sorted(set(sys.modules) - before)))"
)


def imported(guard_env, env, tool_use_id):
    """The modules one hook call imports, in the hook's own interpreter form."""
    payload = json.dumps(pre_tool_use(guard_env.root / "t.jsonl", tool_use_id)).encode()
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", IMPORTS, str(GUARD.parent)],
        input=payload,
        env=env,
        capture_output=True,
        check=True,
    )
    return set(done.stdout.split())


def test_the_hook_imports_team_only_for_a_team_and_never_the_network(guard_env):
    assert config.load(None, guard_env.env).team is None
    assert not {
        m for m in imported(guard_env, guard_env.env, "toolu_1") if b"team" in m or b"url" in m
    }
    env = environ_for(guard_env, "http://127.0.0.1:9", RUNAWAY_GUARD_TEAM_MONTHLY_USD=5)
    cache = cache_of(fetched_at=time.time(), attempted_at=time.time())
    cache.update(zip(("month", "day"), team.periods(time.time())))
    state_file.private_dir(team.folder(str(guard_env.state_dir)))
    state_file.write_atomic(team.cache_path(str(guard_env.state_dir)), json.dumps(cache).encode())
    modules = imported(guard_env, env, "toolu_2")  # the figures are fresh: no refresh to start
    assert b"runaway_guard.team" in modules
    assert not modules & {b"urllib", b"urllib.request", b"subprocess", b"json", b"re", b"socket"}


# -- what is published --------------------------------------------------------------------------


def test_exposition_is_exact_to_the_picodollar():
    assert metrics.usd_text(0) == "0.000000000000"
    assert metrics.usd_text(1_234_567_890_123_456) == "1234.567890123456"
    body = metrics.exposition("2026-12", "2026-12-15", 5 * PICO + 1, 7)
    assert 'runaway_guard_month_spend_usd{month="2026-12"} 5.000000000001\n' in body
    assert 'runaway_guard_day_spend_usd{day="2026-12-15"} 0.000000000007\n' in body
    assert body.count("# TYPE") == 2


def test_machine_totals_sum_every_session_of_both_hosts_from_the_ledger(guard_env):
    state_dir = guard_env.state_dir
    book(state_dir, "claude", "c1", [("a", 1.5, DAY), ("b", 0.25, f"{MONTH}-01")])
    book(state_dir, "codex", "x1", [("c", 2.0, DAY), ("d", 9.0, last_month())])
    book(state_dir, "claude", "c2", [("e", 0.125, DAY)])
    # A lost state: its ledger holds the spend (a later correction of a response wins).
    book(state_dir, "claude", "c3", [("f", 1.0, DAY), ("f", 3.0, DAY)])
    (state_dir / "sessions" / "claude" / "c3.state").unlink()
    (state_dir / "sessions" / "claude" / "c2.state").write_text("{damaged")
    for path in (state_dir / "sessions").glob("*/*"):
        os.utime(path, (NOW - 60, NOW - 60))  # written a minute before NOW
    month_total, day_total, sessions = totals.machine_totals(str(state_dir), MONTH, DAY, NOW)
    assert month_total == round((1.5 + 0.25 + 2.0 + 0.125 + 3.0) * PICO)
    assert day_total == round((1.5 + 2.0 + 0.125 + 3.0) * PICO)
    assert sessions["claude:c1"] == [round(1.75 * PICO), round(1.5 * PICO)]
    assert sessions["codex:x1"] == [round(2.0 * PICO)] * 2
    assert "claude:c3" not in sessions  # a state that could not be read names no session


def test_a_state_written_before_the_month_is_not_read(guard_env):
    book(guard_env.state_dir, "claude", "old", [("a", 5.0, DAY)])  # a day in its ledger, but
    path = guard_env.state_dir / "sessions" / "claude" / "old.state"
    os.utime(path, (NOW - 40 * 86400, NOW - 40 * 86400))  # last written long before the month
    assert totals.machine_totals(str(guard_env.state_dir), MONTH, DAY, NOW)[0] == 0


def test_the_query_names_team_person_and_this_machine_only():
    text = metrics.query_text("acme", "alice", "m1", "2026-12", "2026-12-15")
    assert 'sum(runaway_guard_month_spend_usd{team="acme",month="2026-12",machine!="m1"})' in text
    assert 'user="alice",day="2026-12-15",machine="m1"' in text
    assert text.count("label_replace") == 4


# -- one refresh against the stand-in -----------------------------------------------------------


def test_refresh_puts_the_group_and_reads_the_others(guard_env, servers):
    settings = team_settings(guard_env, servers.url)
    book(guard_env.state_dir, "claude", "c1", [("a", 1.5, DAY)])
    servers.sums = {"team_others": 10.25, "person_others": 0.5, "team_mine": 1.5}
    cache = refresher.refresh(settings, NOW)
    put = [r for r in servers.requests if r[0] == "PUT"]
    assert len(put) == 1
    assert (
        put[0][1] == f"/metrics/job/runaway_guard/team/acme/user/alice/machine/{cache['machine']}"
    )
    assert b"1.500000000000" in put[0][2] and b"c1" not in put[0][2]
    assert cache["others_month"] == round(10.25 * PICO) and cache["others_day"] == round(0.5 * PICO)
    assert cache["error"] is None and cache["fetched_at"] == NOW
    assert team.read_cache(str(guard_env.state_dir)) == cache
    state = state_file.read_state(str(guard_env.state_dir / "sessions" / "claude" / "c1.state"))
    seen = team.figures(settings, state, cache, NOW + 1)
    assert seen["team"] == round(11.75 * PICO) and seen["person"] == round(2.0 * PICO)
    assert seen["known"] == {"team": True, "person": True}


def test_a_renamed_user_deletes_this_machines_old_group(guard_env, servers):
    refresher.refresh(team_settings(guard_env, servers.url), NOW)
    old_group = team.read_cache(str(guard_env.state_dir))["group"]
    servers.requests.clear()
    cache = refresher.refresh(
        team_settings(guard_env, servers.url, RUNAWAY_GUARD_USER="al"), NOW + 1
    )
    methods = [(r[0], r[1]) for r in servers.requests]
    assert methods[0] == ("DELETE", old_group) and methods[1][0] == "PUT"
    assert "/user/al/" in cache["group"] and cache["orphans"] == []


def test_credentials_in_a_url_go_as_basic_auth_and_are_never_shown(guard_env, servers):
    url = servers.url.replace("http://", "http://ci:s3cret@")
    settings = team_settings(guard_env, url)
    servers.fail["PUT"] = 500
    cache = refresher.refresh(settings, NOW)
    assert servers.requests[0][3]["Authorization"] == "Basic Y2k6czNjcmV0"
    assert "s3cret" not in cache["error"] and "HTTP 500" in cache["error"]
    assert "s3cret" not in json.dumps(team_status.report(settings, {"spend": {}}, NOW)[0])


@pytest.mark.parametrize(
    "trouble",
    ["put-500", "query-500", "query-not-json", "query-error", "query-odd", "query-nan"],
)
def test_server_troubles_are_recorded_and_keep_the_last_figures(guard_env, servers, trouble):
    settings = team_settings(guard_env, servers.url)
    servers.sums = {"team_others": 3.0, "person_others": 1.0}
    good = refresher.refresh(settings, NOW)
    if trouble == "put-500":
        servers.fail["PUT"] = 500
    elif trouble == "query-500":
        servers.fail["GET"] = 503
    else:
        servers.raw_query = {
            "query-not-json": b"<html>",
            "query-error": b'{"status":"error","error":"bad"}',
            "query-odd": b'{"status":"success","data":{"result":[{"value":1}]}}',
            "query-nan": b'{"status":"success","data":{"result":'
            b'[{"metric":{"part":"team_others"},"value":[1,"NaN"]}]}}',
        }[trouble]
    servers.sums = {"team_others": 4.0, "person_others": 2.0}
    cache = refresher.refresh(settings, NOW + 30)
    assert cache["error"] and cache["failures"] == 1 and cache["stale_since"] == NOW + 30
    if trouble == "put-500":  # what Prometheus says is still read
        assert cache["others_month"] == round(4.0 * PICO) and cache["fetched_at"] == NOW + 30
    else:  # the last figures stay, with their time
        assert cache["others_month"] == good["others_month"] and cache["fetched_at"] == NOW
    again = refresher.refresh(settings, NOW + 90)
    assert again["failures"] == 2 and again["stale_since"] == NOW + 30  # stale since the first
    servers.fail.clear()
    servers.raw_query = None
    healed = refresher.refresh(settings, NOW + 200)
    assert healed["error"] is None and healed["failures"] == 0 and healed["stale_since"] is None


def test_no_machine_series_seen_long_after_pushing_warns_about_honor_labels(guard_env, servers):
    settings = team_settings(guard_env, servers.url)
    servers.sums = {"team_others": 0.0}
    assert refresher.refresh(settings, NOW)["warning"] is None
    cache = refresher.refresh(settings, NOW + 120)
    assert "honor_labels" in cache["warning"]
    servers.sums["team_mine"] = 0.0
    assert refresher.refresh(settings, NOW + 121)["warning"] is None


@given(
    answer=st.recursive(
        st.none() | st.booleans() | st.floats() | st.text(max_size=8) | st.integers(),
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.dictionaries(
                st.sampled_from(["status", "data", "result", "metric", "part", "value", "x"]),
                inner,
                max_size=4,
            )
        ),
        max_leaves=20,
    ),
    raw=st.binary(max_size=40),
)
@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_any_prometheus_answer_gives_figures_or_an_error(guard_env, monkeypatch, answer, raw):
    settings = team_settings(guard_env, "http://127.0.0.1:9")
    bodies = iter([b"", json.dumps(answer).encode() if answer is not None else raw])
    monkeypatch.setattr(team_servers, "_request", lambda *args, **kw: next(bodies))
    cache = refresher.refresh(settings, NOW)
    assert cache["error"] or all(
        isinstance(cache[key], int) for key in ("others_month", "others_day")
    )
    team.figures(settings, {"spend": {"day": {DAY: 5}}}, cache, NOW)


@given(
    cache=st.dictionaries(
        st.sampled_from(
            [
                "v",
                "team",
                "user",
                "month",
                "day",
                "mine_month",
                "others_month",
                "mine_day",
                "others_day",
                "sessions",
                "snapshot_at",
                "fetched_at",
                "attempted_at",
                "failures",
                "error",
            ]
        ),
        st.none()
        | st.integers()
        | st.floats()
        | st.text(max_size=10)
        | st.sampled_from(["acme", "alice", MONTH, DAY])
        | st.dictionaries(st.text(max_size=12), st.lists(st.integers(), max_size=3), max_size=2),
    ),
    days=st.dictionaries(st.sampled_from([DAY, f"{MONTH}-01", "x", 3]), st.integers()),
)
@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_any_cache_gives_figures_never_an_error(guard_env, cache, days):
    settings = team_settings(guard_env, "http://x", RUNAWAY_GUARD_TEAM_MONTHLY_USD=1)
    state = {"host": "claude", "session_id": "s", "started": NOW, "spend": {"day": days}}
    seen = team.figures(settings, state, cache, NOW)
    assert all(isinstance(seen[key], int) for key in ("team", "person"))
    team.due(settings, cache, NOW, urgent=True)


# -- the figures the wires use ------------------------------------------------------------------


def cache_of(**values):
    base = {
        "v": 1,
        "team": "acme",
        "user": "alice",
        "month": MONTH,
        "day": DAY,
        "snapshot_at": NOW - 10,
        "fetched_at": NOW - 10,
        "attempted_at": NOW - 10,
        "others_month": 100 * PICO,
        "others_day": 10 * PICO,
        "mine_month": 5 * PICO,
        "mine_day": 2 * PICO,
        "sessions": {"claude:s": [3 * PICO, 1 * PICO]},
        "failures": 0,
        "error": None,
        "stale_since": None,
    }
    base.update(values)
    return base


def session_state(month_usd, day_usd, session_id="s", started=NOW - 100):
    days = {DAY: round(day_usd * PICO)}
    if month_usd != day_usd:
        days[f"{MONTH}-01" if f"{MONTH}-01" != DAY else f"{MONTH}-02"] = round(
            (month_usd - day_usd) * PICO
        )
    return {"host": "claude", "session_id": session_id, "started": started, "spend": {"day": days}}


def test_figures_add_what_this_session_spent_since_the_snapshot(guard_env):
    settings = team_settings(guard_env, "http://x")
    seen = team.figures(settings, session_state(4, 1.5), cache_of(), NOW)
    assert seen["team"] == round(106 * PICO)  # 100 others + 5 this machine + 1 since
    assert seen["person"] == round(12.5 * PICO)  # 10 + 2 + 0.5
    # A session that began after the snapshot: all of its spend is new.
    seen = team.figures(settings, session_state(4, 1.5, "new", NOW - 5), cache_of(), NOW)
    assert seen["team"] == round(109 * PICO)
    # One idle for long before it: its spend is already in this machine's total.
    seen = team.figures(settings, session_state(4, 1.5, "idle", NOW - 9999), cache_of(), NOW)
    assert seen["team"] == round(105 * PICO)


def test_figures_of_another_month_day_team_or_user_are_not_used(guard_env):
    settings = team_settings(guard_env, "http://x")
    state = session_state(4, 1.5)
    for stale in (cache_of(month="1999-01", day="1999-01-31"), cache_of(user="bob"), None):
        seen = team.figures(settings, state, stale, NOW)
        # Only this session's own spend is known: a floor for both.
        assert seen["team"] == round(4 * PICO) and seen["person"] == round(1.5 * PICO)
        assert seen["known"] == {"team": False, "person": False}
    seen = team.figures(settings, state, cache_of(day="1999-01-31"), NOW)
    assert seen["known"] == {"team": True, "person": False}
    # Servers never reached: this machine's totals are the floor.
    seen = team.figures(settings, state, cache_of(others_month=None, others_day=None), NOW)
    assert seen["team"] == round(6 * PICO) and seen["known"]["team"] is False


def test_refresh_is_due_after_the_interval_with_a_backoff_while_failing(guard_env):
    settings = team_settings(guard_env, "http://x", RUNAWAY_GUARD_TEAM_REFRESH_S=20)
    assert team.due(settings, None, NOW)
    assert not team.due(settings, cache_of(), NOW)  # 10 s old
    assert team.due(settings, cache_of(), NOW + 10)
    assert team.due(settings, cache_of(), NOW, urgent=True)  # a session near a cap
    assert team.due(settings, cache_of(day="1999-01-01"), NOW)
    failing = cache_of(failures=3, attempted_at=NOW - 100, fetched_at=NOW - 500, error="down")
    assert not team.due(settings, failing, NOW)  # 160 s after 3 failures
    assert not team.due(settings, failing, NOW, urgent=True)
    assert team.due(settings, failing, NOW + 61)
    assert not team.due(settings, cache_of(failures=40, attempted_at=NOW), NOW + 599)
    closed = team_settings(guard_env, "http://x", RUNAWAY_GUARD_TEAM_FAIL_CLOSED=1)
    assert team.due(closed, failing, NOW)  # refusing: no backoff


def test_decisions_name_whose_budget_is_spent_and_who_can_raise_it(guard_env, monkeypatch):
    monkeypatch.setattr(team, "start_refresh", lambda *args: None)
    settings = team_settings(
        guard_env,
        "http://x",
        RUNAWAY_GUARD_TEAM_MONTHLY_USD=100,
        RUNAWAY_GUARD_PERSON_DAILY_USD=15,
    )
    state_file.private_dir(team.folder(settings.state_dir))
    state_file.write_atomic(team.cache_path(settings.state_dir), json.dumps(cache_of()).encode())
    state = session_state(4, 1.5)
    found = [d for d in team.decisions(settings, state, "Bash", {}, NOW) if d]
    stop = next(d for d in found if d["wire"] == "team")
    assert stop["kind"] == "stop" and "monthly team (acme)" in stop["model_text"]
    assert (
        "team's budget owner" in stop["model_text"] and "$106.00 of $100.00" in stop["model_text"]
    )
    assert "RUNAWAY_GUARD_TEAM_MONTHLY_USD" in stop["person_text"]
    tell = next(d for d in found if d["wire"] == "person")
    assert tell["kind"] == "tell" and "daily per-person (alice)" in tell["model_text"]
    spawn = team.decisions(settings, state, "Agent", {}, NOW)
    assert {d["kind"] for d in spawn if d and d["wire"] == "person"} == {"deny"}


def test_fail_closed_refuses_once_a_refresh_failed(guard_env, monkeypatch):
    monkeypatch.setattr(team, "start_refresh", lambda *args: None)
    extra = {"RUNAWAY_GUARD_TEAM_MONTHLY_USD": 1000}
    failed = cache_of(error="Prometheus http://x: connection refused", stale_since=NOW - 50)
    state_file.private_dir(team.folder(str(guard_env.state_dir)))
    state_file.write_atomic(team.cache_path(str(guard_env.state_dir)), json.dumps(failed).encode())
    state = session_state(1, 1)
    open_settings = team_settings(guard_env, "http://x", **extra)
    assert all(
        d is None or d["kind"] == "tell"
        for d in team.decisions(open_settings, state, "Bash", {}, NOW)
    )
    closed = team_settings(guard_env, "http://x", RUNAWAY_GUARD_TEAM_FAIL_CLOSED=1, **extra)
    stop = [d for d in team.decisions(closed, state, "Bash", {}, NOW) if d]
    assert stop[0]["kind"] == "stop" and "cannot be checked" in stop[0]["model_text"]


# -- the refresh as the hook starts it ----------------------------------------------------------


class BlackHole:
    """A port that accepts connections and never answers; counts them."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.accepted = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted.append((time.monotonic(), conn))

    @property
    def url(self):
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"


def claude_session(guard_env, amount=0.5):
    main = jsonl(
        guard_env.root / "s.jsonl",
        [
            assistant(
                "msg_1",
                model="claude-opus-4-8",
                use=usage(inp=round(amount / 5e-6)),
                timestamp=time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
            )
        ],
        mode="w",
    )
    return main


def test_the_hook_never_waits_for_the_refresh_and_starts_only_one(guard_env):
    hole = BlackHole()
    env = environ_for(guard_env, hole.url, RUNAWAY_GUARD_TEAM_MONTHLY_USD=100)
    main = claude_session(guard_env)

    def call(index):
        payload = json.dumps(pre_tool_use(main, f"toolu_{index}", session="s")).encode()
        started = time.monotonic()
        # As a host runs it: both pipes read to their end.
        done = subprocess.run(
            [sys.executable, "-I", "-S", str(GUARD)],
            input=payload,
            capture_output=True,
            env=env,
            timeout=30,
        )
        assert done.returncode == 0 and done.stderr == b""
        return time.monotonic() - started

    first = call(0)
    threads = [threading.Thread(target=call, args=(i,)) for i in range(1, 13)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert first < 1.0  # the refresh it started waits up to TIMEOUT on each request
    time.sleep(0.5)
    assert len(hole.accepted) == 1  # one refresh, blocked on its first request
    lock = guard_env.state_dir / "team" / "refresh.lock"
    assert lock.exists()
    hole.sock.close()


def test_an_unreachable_server_is_recorded_and_retried_later(guard_env):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}"  # nobody listens once closed
    env = environ_for(guard_env, dead, RUNAWAY_GUARD_TEAM_MONTHLY_USD=100)
    main = claude_session(guard_env)
    assert guard_env.run(pre_tool_use(main, "toolu_1", session="s"), **env) == ""
    cache_file = guard_env.state_dir / "team" / "cache.json"
    deadline = time.monotonic() + 15
    while not cache_file.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    cache = json.loads(cache_file.read_text())
    assert "refused" in cache["error"].lower() and cache["failures"] == 1
    assert cache["stale_since"] and cache["fetched_at"] is None
    assert cache["mine_month"] > 0
    shown = json.loads(status_py(env, "--json", "--session", "s").stdout)
    assert shown["team_stale_since"] == cache["stale_since"] and shown["team_spend_usd"] is None
    assert shown["team_cap_usd"] == 100 and shown["team"]["error"] == cache["error"]
    text = status_py(env, "--session", "s").stdout
    assert "Team acme" in text and "stale since" in text


def status_py(env, *args):
    return subprocess.run(
        [sys.executable, str(GUARD.parent / "status.py"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_team_sync_waits_and_reports(guard_env, servers):
    env = environ_for(guard_env, servers.url)
    servers.sums = {"team_others": 2.0, "person_others": 0.0}
    done = status_py(env, "--team-sync")
    assert done.returncode == 0, done.stderr
    assert "team acme" in done.stdout and "$2.00" in done.stdout
    servers.fail["PUT"] = 502
    done = status_py(env, "--team-sync", "--json")
    assert done.returncode == 1 and "HTTP 502" in json.loads(done.stdout)["error"]


# -- what the servers answer is input -------------------------------------------------------------


def query_answer(*results):
    return json.dumps({"status": "success", "data": {"result": list(results)}}).encode()


def sample(part, value):
    return {"metric": {"part": part}, "value": [NOW, value]}


@pytest.mark.parametrize(
    "answer",
    [
        query_answer(sample("team_others", "-1000")),  # would cancel this machine's spend
        query_answer(sample("team_others", "+Inf")),
        query_answer(sample("team_others", "1e400")),
        query_answer(sample("team_others", "9" * 5000)),
        query_answer(sample("team_others", 5)),  # a number, where Prometheus sends a string
        query_answer(sample("team_others", "1"), sample("team_others", "-1")),  # twice
        query_answer(*[sample("team_others", "1")] * 5),
        query_answer({"metric": ["part"], "value": [NOW, "1"]}),
        b'{"status":"success","data":{"result":' + b"[" * 100_000 + b"]" * 100_000 + b"}}",
        b'{"status":"success","data":{"result":[]}}' + b" " * (team_servers.MAX_ANSWER + 1),
        b"\xff\xfe{}",
    ],
    ids=lambda answer: answer[:60].decode("utf-8", "replace"),
)
def test_a_hostile_prometheus_answer_is_ignored_and_recorded(guard_env, servers, answer):
    settings = team_settings(guard_env, servers.url)
    servers.sums = {"team_others": 3.0, "person_others": 1.0}
    good = refresher.refresh(settings, NOW)
    servers.raw_query = answer
    cache = refresher.refresh(settings, NOW + 30)
    assert cache["error"].startswith("Prometheus") and cache["failures"] == 1
    assert cache["others_month"] == good["others_month"] and cache["fetched_at"] == NOW


def test_negative_figures_in_the_cache_never_lower_this_sessions_own_spend(guard_env):
    settings = team_settings(guard_env, "http://x")
    for hostile in ({"others_month": -(10**15)}, {"mine_month": -(10**15)}):
        seen = team.figures(settings, session_state(4, 1.5), cache_of(**hostile), NOW)
        assert seen["team"] >= round(4 * PICO)
    seen = team.figures(
        settings, session_state(4, 1.5), cache_of(sessions={"claude:s": [10**15, 0]}), NOW
    )
    assert seen["team"] == round(4 * PICO)  # a base past the session's spend: its own, at least


def test_a_redirect_is_not_followed_and_the_credentials_stay_home(guard_env, servers):
    """urllib sends the Authorization header on to wherever a redirect points."""
    elsewhere = FakeServers()
    try:
        servers.redirect["GET"] = elsewhere.url
        settings = team_settings(guard_env, servers.url.replace("//", "//ci:s3cret@"))
        cache = refresher.refresh(settings, NOW)
        assert elsewhere.requests == []
        assert "HTTP 302, a redirect to http://127.0.0.1" in cache["error"]
        assert "not followed" in cache["error"] and "s3cret" not in cache["error"]
    finally:
        elsewhere.close()


class Trickle:
    """A server that answers a byte at a time, each in less than the socket timeout."""

    def __init__(self, gap=0.3):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.gap = gap
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.closed:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._drip, args=(conn,), daemon=True).start()

    def _drip(self, conn):
        with conn:
            conn.recv(65536)
            for byte in b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + b" " * 1000:
                if self.closed:
                    return
                try:
                    conn.sendall(bytes([byte]))
                except OSError:
                    return
                time.sleep(self.gap)

    @property
    def url(self):
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def close(self):
        self.closed = True
        self.sock.close()


def test_a_server_that_trickles_is_cut_off_recorded_and_fail_closed_refuses(guard_env, monkeypatch):
    monkeypatch.setattr(team_servers, "REQUEST_S", 1.0)
    monkeypatch.setattr(team, "start_refresh", lambda *args: None)
    trickle = Trickle()
    try:
        settings = team_settings(
            guard_env,
            trickle.url,
            RUNAWAY_GUARD_TEAM_FAIL_CLOSED=1,
            RUNAWAY_GUARD_TEAM_MONTHLY_USD=1000,
        )
        started = time.monotonic()
        cache = refresher.refresh(settings, NOW)
        assert time.monotonic() - started < 3.5  # two requests of 1 s at most, and the rest
        assert cache["error"].count("no whole answer within 1 s") == 2
        stop = [d for d in team.decisions(settings, session_state(1, 1), "Bash", {}, NOW) if d]
        assert stop[-1]["kind"] == "stop" and "no whole answer" in stop[-1]["person_text"]
    finally:
        trickle.close()


def test_a_whole_refresh_keeps_to_its_deadline(guard_env, monkeypatch):
    """Each request ends by the refresh's deadline, so the refresh records what happened
    before its process is ended (the alarm), however many requests it has."""
    hole = BlackHole()
    settings = team_settings(guard_env, hole.url)
    started = time.monotonic()
    cache = refresher.refresh(settings, NOW, ends=time.monotonic() + 1.5)
    assert time.monotonic() - started < 3.0
    assert "Pushgateway" in cache["error"] and "no time left" in cache["error"]
    hole.sock.close()


def write_cache(state_dir, cache):
    state_file.private_dir(team.folder(str(state_dir)))
    state_file.write_atomic(team.cache_path(str(state_dir)), json.dumps(cache).encode())


def test_a_refresh_that_cannot_start_keeps_the_caps_and_fail_closed(guard_env, monkeypatch):
    def no_process(*args, **kwargs):
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(subprocess, "Popen", no_process)
    main = claude_session(guard_env, 0.5)
    now = time.time()
    old = {"fetched_at": now - 300, "attempted_at": now - 300, "snapshot_at": now - 300}
    old.update(zip(("month", "day"), team.periods(now)))
    # Figures over the cap, due for a refresh that cannot start: the cap still holds.
    write_cache(guard_env.state_dir, cache_of(others_month=900 * PICO, **old))
    env = environ_for(guard_env, "http://x", RUNAWAY_GUARD_TEAM_MONTHLY_USD=100)
    answer = guard_env.answer(pre_tool_use(main, "toolu_1", session="s"), **env)
    assert answer["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert "monthly team (acme)" in answer["hookSpecificOutput"]["permissionDecisionReason"]
    # Under the cap: fail-closed refuses, since the figures cannot be refreshed.
    write_cache(guard_env.state_dir, cache_of(others_month=0, **old))
    env["RUNAWAY_GUARD_TEAM_FAIL_CLOSED"] = "1"
    answer = guard_env.answer(pre_tool_use(main, "toolu_2", session="s"), **env)
    assert answer["continue"] is False and "could not be started" in answer["stopReason"]
    assert "could not be started (BlockingIOError" in (guard_env.state_dir / "hook.log").read_text()


def test_a_refresh_that_never_ends_makes_fail_closed_refuse(guard_env, monkeypatch):
    spawned = []
    monkeypatch.setattr(team, "_spawn", lambda *args: spawned.append(args))
    settings = team_settings(
        guard_env, "http://x", RUNAWAY_GUARD_TEAM_FAIL_CLOSED=1, RUNAWAY_GUARD_TEAM_MONTHLY_USD=100
    )
    state = session_state(1, 1)
    assert team.decisions(settings, state, "Bash", {}, time.time()) == [None, None]
    assert len(spawned) == 1  # no figures yet: one refresh is under way, the call goes on
    later = time.time() + team.DEADLINE + team.GRACE + 1
    stop = team.decisions(settings, state, "Bash", {}, later)[-1]
    assert stop["kind"] == "stop" and "has not ended" in stop["person_text"]
    assert len(spawned) == 2  # started again, but awaited since the first start
    # A refresh that ends removes the mark: its error or its figures decide.
    refresher.refresh(settings, later)
    assert not os.path.exists(team.awaited_path(settings.state_dir))
    # Figures long unread with nothing under way: unknown.
    write_cache(guard_env.state_dir, cache_of(fetched_at=NOW - 3600, attempted_at=NOW - 3600))
    monkeypatch.setattr(team, "start_refresh", lambda *args: False)  # a lock held elsewhere
    stop = team.decisions(settings, state, "Bash", {}, NOW)[-1]
    assert stop["kind"] == "stop" and "last read at" in stop["person_text"]


@pytest.mark.parametrize(
    ("key", "value"),
    [("RUNAWAY_GUARD_TEAM", "."), ("RUNAWAY_GUARD_TEAM", ".."), ("RUNAWAY_GUARD_USER", "..")],
)
def test_dot_names_are_refused(guard_env, key, value):
    """They would be path segments of the Pushgateway's group URL."""
    settings = config.load(None, environ_for(guard_env, "http://x", **{key: value}))
    assert any(key in p and "not . or .." in p for p in settings.problems)
    if key == "RUNAWAY_GUARD_TEAM":
        assert settings.team is None
    else:
        assert (settings.team, settings.user) == ("acme", "alice")  # the login name
    env = {**environ_for(guard_env, "http://x"), "USER": "..", "LOGNAME": ".."}
    assert config_team.login_name(env) == "unknown" and config.load(None, env).user == "unknown"


@pytest.mark.parametrize(
    "broken",
    [
        {"RUNAWAY_GUARD_TEAM": ".."},
        {"RUNAWAY_GUARD_PROMETHEUS_URL": "http://ci:a/b@prom"},
        {"RUNAWAY_GUARD_PUSHGATEWAY_URL": ""},
    ],
)
def test_unusable_team_settings_with_fail_closed_refuse_every_call(guard_env, monkeypatch, broken):
    monkeypatch.setattr(team, "_spawn", lambda *args: pytest.fail("nothing to refresh"))
    env = environ_for(
        guard_env, "http://x", RUNAWAY_GUARD_TEAM_MONTHLY_USD=100, RUNAWAY_GUARD_TEAM_FAIL_CLOSED=1
    )
    settings = config.load(None, {**env, **broken})
    assert settings.team and settings.team_error
    stop = team.decisions(settings, session_state(0, 0), "Bash", {}, NOW)
    assert stop[0]["kind"] == "stop" and "team settings are not usable" in stop[0]["person_text"]
    fields, refusing = team_status.report(settings, session_state(0, 0), NOW)
    assert "not usable" in fields["team"]["error"] and refusing[0]["wire"] == "team"
    assert "not usable" in refresher.sync(settings)["error"]
    # Without fail-closed they only switch team budgets off.
    env.pop("RUNAWAY_GUARD_TEAM_FAIL_CLOSED")
    assert config.load(None, {**env, **broken}).team is None


def test_the_team_folder_and_its_files_are_private(guard_env, servers, monkeypatch):
    monkeypatch.setattr(team, "_spawn", lambda *args: None)
    settings = team_settings(guard_env, servers.url)
    folder = guard_env.state_dir / "team"
    folder.mkdir(parents=True, mode=0o755)
    folder.chmod(0o755)
    refresher.refresh(settings, NOW)
    assert folder.stat().st_mode & 0o777 == 0o700
    for name in ("cache.json", "machine"):
        assert (folder / name).stat().st_mode & 0o777 == 0o600
    # A link where the cache's new copy is written: not followed.
    target = guard_env.root / "elsewhere"
    target.write_text("keep")
    (folder / f"cache.json.{os.getpid()}.tmp").symlink_to(target)
    with pytest.raises(OSError):
        refresher.refresh(settings, NOW)
    (folder / f"cache.json.{os.getpid()}.tmp").unlink()
    # A link where the refresh lock is: not followed, the refresh not started.
    (folder / "refresh.lock").symlink_to(target)
    with pytest.raises(OSError):
        team.start_refresh(settings)
    # A link where the folder is: refused.
    (folder / "refresh.lock").unlink()
    folder.rename(guard_env.root / "real-team")
    folder.symlink_to(guard_env.root / "real-team")
    with pytest.raises(OSError, match="a link or another user's"):
        team.start_refresh(settings)
    assert target.read_text() == "keep"


def test_a_hostile_cache_sends_no_request_elsewhere(guard_env, servers):
    """The cache's old group paths are appended to the Pushgateway's URL: `@host` would send
    the credentials to that host, `..` would reach other groups."""
    hostile = ["@evil.example/x", "/metrics/job/runaway_guard/team/../user/a/machine/b", 5]
    write_cache(guard_env.state_dir, cache_of(orphans=hostile, group="@evil.example/y"))
    settings = team_settings(guard_env, servers.url.replace("//", "//ci:pw@"))
    cache = refresher.refresh(settings, NOW)
    assert [r[0] for r in servers.requests] == ["PUT", "GET"] and cache["error"] is None


# -- fail-closed holds against any one hostile answer or setting ----------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.floats() | st.text(max_size=8) | st.integers(),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=10,
)
sample_values = (
    st.sampled_from(
        ["-1e9", "-0.5", "NaN", "+Inf", "-Inf", "1e400", "9" * 400, "0", "1e11", " 1", "0x10", ""]
    )
    | st.text(max_size=12)
    | json_values
)
hostile_answers = st.one_of(
    st.lists(
        st.tuples(st.sampled_from((*metrics.PARTS, "x", 3)), sample_values), min_size=1, max_size=5
    ).map(lambda items: query_answer(*[sample(part, value) for part, value in items])),
    json_values.map(lambda value: json.dumps(value).encode()),
    st.sampled_from(["deep", "deep result", "oversized"]).map(
        lambda name: {
            "deep": b"[" * 50_000,
            "deep result": b'{"status":"success","data":{"result":' + b"[" * 50_000,
            "oversized": query_answer() + b" " * team_servers.MAX_ANSWER,
        }[name]
    ),
    st.binary(max_size=40),
)
hostile_names = st.sampled_from([".", "..", " ", "a/b", "a b", "x" * 65, "é", "../x", "a?b"]) | (
    st.text(max_size=8).filter(lambda value: value and not config.is_label(value.strip()))
)
hostile_urls = st.sampled_from(
    [
        "http://ci:a/b@x",
        "http://ci:a#b@x",
        "http://ci:a?b@x",
        "http://x/?token=1",
        "http://x:99999",
        "http://x:y",
        "http://[::1",
        "ftp://x",
        " ",
        "http://x y",
        "http://",
    ]
) | st.text(max_size=30).filter(lambda value: config_team.url_problem(value.strip()) is not None)
hostile_settings = st.one_of(
    st.tuples(st.just("RUNAWAY_GUARD_TEAM"), hostile_names.filter(bool)),
    st.tuples(st.just("RUNAWAY_GUARD_USER"), hostile_names),
    st.tuples(
        st.sampled_from(["RUNAWAY_GUARD_PUSHGATEWAY_URL", "RUNAWAY_GUARD_PROMETHEUS_URL"]),
        hostile_urls,
    ),
    st.tuples(st.just("RUNAWAY_GUARD_TEAM_REFRESH_S"), st.text(max_size=8)),
    st.tuples(
        st.just("project"),
        st.dictionaries(
            st.sampled_from(
                [
                    "team",
                    "user",
                    "pushgateway_url",
                    "team_monthly_usd",
                    "person_daily_usd",
                    "team_fail_closed",
                    "team_refresh_s",
                ]
            ),
            json_values,
            min_size=1,
        ),
    ),
)


@pytest.fixture
def refused_session(guard_env, servers, monkeypatch):
    """A session the team cap refuses, on a machine whose other session spent $1 today and
    this one $0.5, against a cap of $1.20, with fail-closed on; (env, call, good cache)."""
    monkeypatch.setattr(team, "_spawn", lambda *args: None)
    today = time.strftime("%Y-%m-%d")
    book(guard_env.state_dir, "claude", "other", [("a", 1.0, today)])
    main = claude_session(guard_env, 0.5)
    env = environ_for(
        guard_env, servers.url, RUNAWAY_GUARD_TEAM_MONTHLY_USD=1.2, RUNAWAY_GUARD_TEAM_FAIL_CLOSED=1
    )
    project = guard_env.root / "project"
    (project / ".git").mkdir(parents=True)
    ids = iter(range(10**6))

    def call(env=env):
        payload = pre_tool_use(main, f"toolu_{next(ids)}", session="s", cwd=str(project))
        return guard_env.answer(payload, **env)

    call()  # the session's spend is read
    servers.sums = {"team_others": 0.1, "person_others": 0.0}
    good = refresher.refresh(config.load(None, env))
    assert good["error"] is None and call()["continue"] is False  # $1.60 of $1.20
    return env, call, good, project


def refused(answer):
    return answer is not None and answer["hookSpecificOutput"]["permissionDecision"] == "deny"


@given(answer=hostile_answers, put=st.sampled_from([None, 302, 404, 500]))
@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_no_hostile_answer_lets_a_refused_session_pass(
    guard_env, servers, refused_session, answer, put
):
    env, call, good, _ = refused_session
    write_cache(guard_env.state_dir, good)
    servers.raw_query = answer
    servers.fail = {"PUT": put} if put else {}
    cache = refresher.refresh(config.load(None, env))
    assert refused(call())
    assert cache["error"] or all(cache[k] >= 0 for k in ("others_month", "others_day"))
    assert_no_fail_open(guard_env)


@given(change=hostile_settings)
@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_no_hostile_team_setting_lets_a_refused_session_pass(guard_env, refused_session, change):
    env, call, good, project = refused_session
    write_cache(guard_env.state_dir, good)
    key, value = change
    (project / ".runaway-guard.json").write_text(json.dumps(value if key == "project" else {}))
    assert refused(call({**env, key: value} if key != "project" else env))
    assert_no_fail_open(guard_env)


def assert_no_fail_open(guard_env):
    log_file = guard_env.state_dir / "hook.log"
    assert not log_file.exists() or "fail-open" not in log_file.read_text()
