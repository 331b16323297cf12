"""Project budgets (projects.py) and time limits (time_limits.py): where a project is, its
branch, the local calendar's days, weeks and months, its month files, the caps and the clocks."""

import json
import subprocess
import time

import pytest
from guard_env import fuzz
from hypothesis import given
from hypothesis import strategies as st
from runaway_guard import config, project_report, projects, time_limits
from test_status import Claude, Codex, World, kind


@pytest.fixture
def world(tmp_path):
    return World(tmp_path)


def git(*args, cwd):
    subprocess.run(
        ["git", "-c", "user.email=t@t", "-c", "user.name=t", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


# -- where a project is, and its branch


def test_repository_subfolder_and_branch(tmp_path):
    repo = tmp_path / "repo"
    (repo / "src" / "deep").mkdir(parents=True)
    git("init", "-q", "-b", "feature/x", cwd=repo)
    root, head = projects.locate(str(repo / "src" / "deep"))
    assert root == str(repo)
    assert projects.branch(head) == "feature/x"


def test_worktree_is_its_own_project_with_its_branch(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git("init", "-q", "-b", "main", cwd=repo)
    git("commit", "-q", "--allow-empty", "-m", "one", cwd=repo)
    git("worktree", "add", "-q", "-b", "side", str(tmp_path / "wt"), cwd=repo)
    (tmp_path / "wt" / "sub").mkdir()
    root, head = projects.locate(str(tmp_path / "wt" / "sub"))
    assert root == str(tmp_path / "wt")
    assert projects.branch(head) == "side"
    git("checkout", "-q", "--detach", cwd=tmp_path / "wt")
    assert projects.branch(head).startswith("detached@")


def test_outside_git_the_folder_itself(tmp_path):
    (tmp_path / "plain" / "sub").mkdir(parents=True)
    assert projects.locate(str(tmp_path / "plain" / "sub")) == (
        str(tmp_path / "plain" / "sub"),
        None,
    )
    assert projects.branch(None) == ""


@pytest.mark.parametrize(
    "content",
    [b"", b"gitdir:", b"\xff\xfe", b"nonsense", b"gitdir: \x00x", b"gitdir: " + b"a" * 9000],
)
def test_a_hostile_dot_git_file_gives_no_branch(tmp_path, content):
    (tmp_path / ".git").write_bytes(content)
    root, head = projects.locate(str(tmp_path))
    assert root == str(tmp_path)
    assert projects.branch(head) == ""


# -- the local calendar


def in_zone(monkeypatch, zone):
    monkeypatch.setenv("TZ", zone)
    time.tzset()


@pytest.fixture
def restore_zone():
    yield
    time.tzset()


def local_noon(day):
    return time.localtime(time.mktime((*day, 12, 0, 0, 0, 0, -1)))


def test_week_is_monday_to_sunday_over_a_dst_change(monkeypatch, restore_zone):
    in_zone(monkeypatch, "Europe/Berlin")  # summer time from Sunday 2026-03-29, 02:00
    days = projects.week_days(local_noon((2026, 3, 29)))
    assert days == [f"2026-03-{day}" for day in range(23, 30)]
    late = time.localtime(time.mktime((2026, 3, 29, 23, 30, 0, 0, 0, -1)))
    assert projects.week_days(late)[0] == "2026-03-23"
    # autumn: the doubled hour, Sunday 2026-10-25
    assert projects.week_days(local_noon((2026, 10, 25)))[0] == "2026-10-19"
    assert projects.week_days(local_noon((2026, 10, 26))) == ["2026-10-26"]


def test_week_reaches_into_the_month_before(monkeypatch, restore_zone):
    in_zone(monkeypatch, "America/New_York")
    assert projects.week_days(local_noon((2026, 4, 1))) == [
        "2026-03-30",
        "2026-03-31",
        "2026-04-01",
    ]
    assert projects.week_days(local_noon((2027, 1, 3)))[0] == "2026-12-28"


class Settings:
    """A Config's project caps and state dir."""

    def __init__(self, state_dir, day=0.0, week=0.0, month=0.0):
        self.state_dir = str(state_dir)
        self.project_daily_usd = day
        self.project_weekly_usd = week
        self.project_monthly_usd = month
        self.warn_at = 0.8
        self.team_project = None


class Call:
    def __init__(self, cwd, session="s1", host="claude"):
        self.cwd, self.session_id, self.host = cwd, session, host


def spent(state, day, usd):
    state["spend"]["day"][day] = int(usd * 1e12)


def test_day_week_and_month_totals_over_a_month_end(tmp_path, monkeypatch, restore_zone):
    in_zone(monkeypatch, "Europe/Berlin")
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    settings = Settings(tmp_path / "state", day=100)
    states = [{"spend": {"day": {}}} for _ in range(2)]
    spent(states[0], "2026-03-30", 1)  # Monday, last month
    spent(states[0], "2026-03-20", 4)  # the week before
    spent(states[1], "2026-04-01", 2)
    now = time.mktime((2026, 4, 1, 12, 0, 0, 0, 0, -1))
    monkeypatch.setattr(time, "time", lambda: now)
    projects.track(states[0], Call(str(repo)), settings, now)
    totals = projects.track(states[1], Call(str(repo / "sub"), "s2", "codex"), settings, now)
    assert totals == {"day": 2 * 10**12, "week": 3 * 10**12, "month": 2 * 10**12}
    march = json.loads(
        (tmp_path / "state" / "projects")
        .joinpath(states[0]["project"]["file"], "2026-03.json")
        .read_text()
    )
    assert march["path"] == str(repo)
    assert march["days"]["2026-03-20"] == {"": {"claude:s1": 4 * 10**12}}


def test_spend_goes_to_the_branch_it_was_made_on(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    head = repo / ".git" / "HEAD"
    head.write_text("ref: refs/heads/one\n")
    settings = Settings(tmp_path / "state", month=100)
    state = {"spend": {"day": {}}}
    today = time.strftime("%Y-%m-%d")
    spent(state, today, 1)
    projects.track(state, Call(str(repo)), settings)
    head.write_text("ref: refs/heads/two\n")
    spent(state, today, 3)
    totals = projects.track(state, Call(str(repo)), settings)
    assert totals["day"] == 3 * 10**12
    assert state["project"]["days"][today] == {"one": 10**12, "two": 2 * 10**12}
    month = project_report.month_rows(str(tmp_path / "state"), today[:7])
    assert month["projects"][0]["branches"] == {"two": 2.0, "one": 1.0}


def test_a_session_moving_to_another_project_keeps_its_spend_where_it_was(tmp_path):
    settings = Settings(tmp_path / "state", day=100)
    state = {"spend": {"day": {}}}
    today = time.strftime("%Y-%m-%d")
    spent(state, today, 5)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert projects.track(state, Call(str(tmp_path / "a")), settings)["day"] == 5 * 10**12
    assert projects.track(state, Call(str(tmp_path / "b")), settings)["day"] == 0
    spent(state, today, 6)
    assert projects.track(state, Call(str(tmp_path / "b")), settings)["day"] == 10**12


HOSTILE = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=30,
)


@fuzz(200)
@given(days=HOSTILE)
def test_hostile_month_files_count_only_whole_positive_shares(days):
    kept = projects.month_days({"days": days})
    total = sum(projects.day_total(shares) for shares in kept.values())
    expected = 0
    if isinstance(days, dict):
        for day, branches in days.items():
            if len(day) != 10 or not isinstance(branches, dict):
                continue
            for sessions in branches.values():
                if isinstance(sessions, dict):
                    expected += sum(v for v in sessions.values() if type(v) is int and v > 0)
    assert total == expected


def test_a_hostile_month_file_does_not_stop_the_count(tmp_path):
    settings = Settings(tmp_path / "state", day=100)
    state = {"spend": {"day": {}}}
    today = time.strftime("%Y-%m-%d")
    (tmp_path / "p").mkdir()
    spent(state, today, 1)
    projects.track(state, Call(str(tmp_path / "p")), settings)
    path = tmp_path / "state" / "projects" / state["project"]["file"] / f"{today[:7]}.json"
    path.write_text(
        json.dumps({"days": {today: {"": {"x": -(10**15), "y": 2.5, "z": True, "w": "9"}}}})
    )
    spent(state, today, 2)
    assert projects.track(state, Call(str(tmp_path / "p")), settings)["day"] == 2 * 10**12
    path.write_text("[1, 2")
    spent(state, today, 3)
    assert projects.track(state, Call(str(tmp_path / "p")), settings)["day"] == 3 * 10**12


# -- configuration


def test_project_file_may_only_tighten_the_new_limits(tmp_path):
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    user = tmp_path / "cfg" / "runaway-guard" / "config.json"
    user.parent.mkdir(parents=True)
    user.write_text(json.dumps({"project_weekly_usd": 10, "max_session_hours": 8}))
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".runaway-guard.json").write_text(
        json.dumps(
            {
                "project_daily_usd": 3,  # none before: tightened
                "project_weekly_usd": 50,  # looser: refused
                "project_monthly_usd": 0,  # none: nothing to loosen
                "max_session_hours": 0,  # would switch it off: refused
                "max_autonomous_minutes": 30,
            }
        )
    )
    settings = config.load(str(repo), env)
    assert settings.project_daily_usd == 3
    assert settings.project_weekly_usd == 10
    assert settings.project_monthly_usd == 0
    assert settings.max_session_hours == 8
    assert settings.max_autonomous_minutes == 30
    assert any("project_weekly_usd=50 would loosen" in line for line in settings.problems)
    env["RUNAWAY_GUARD_PROJECT_MONTHLY_USD"] = "-1"
    env["RUNAWAY_GUARD_MAX_AUTONOMOUS_MINUTES"] = "nan"
    settings = config.load(str(repo), env)
    assert sum("is not valid" in line for line in settings.problems) == 2


# -- time limits


def test_time_limits_warn_then_stop():
    class Limits:
        max_session_hours, max_autonomous_minutes, warn_at = 1.0, 10.0, 0.8

    now = 100_000.0
    state = {"started": now - 3000, "prompt_at": now - 60}
    warned = {}
    note, quiet = time_limits.wires(state, Limits, "Bash", warned, now)  # 50 of 60 min: a note
    assert quiet is None
    assert note["kind"] == "tell" and note["wire"] == "time"
    assert time_limits.wires(state, Limits, "Bash", warned, now) == [None, None]  # once
    state["started"] = now - 3600
    state["prompt_at"] = now - 600
    stops = time_limits.wires(state, Limits, "Bash", warned, now)
    assert [(d["kind"], d["wire"]) for d in stops] == [("stop", "time"), ("stop", "autonomy")]
    assert "max_autonomous_minutes" in stops[1]["person_text"]


# -- through the guard and status.py


def test_project_daily_cap_stops_every_session_of_the_project_only(world):
    proj, other = world.project("proj"), world.project("other")
    env = {"RUNAWAY_GUARD_PROJECT_DAILY_USD": "1"}
    first = Claude(world, proj, "s-a")
    first.call("one", **env)  # $0.55
    _, answer = first.call("two", **env)  # $1.10: at the cap
    assert kind(answer) == "stop"
    assert world.state("claude", "s-a")["blocked"]["wire"] == "project"
    later = Codex(world, proj / "sub", "s-b")
    _, answer = later.call("ls", spend=False, **env)  # a new session, another host
    assert kind(answer) == "deny" and "project" in json.dumps(answer)
    elsewhere = Claude(world, other, "s-c")
    # $0.55 and about $0.69 next in its own project fit $2; with proj's $1.10 they would not
    _, answer = elsewhere.call("ls", **{**env, "RUNAWAY_GUARD_PROJECT_DAILY_USD": "2"})
    assert kind(answer) is None
    data = world.status_json("--session", "s-a", cwd=proj, **env)
    assert data["project"]["path"] == str(proj)
    assert data["project"]["day_usd"] == data["project"]["month_usd"] == data["spend_usd"]
    assert data["project"]["daily_cap_usd"] == 1.0 and data["project"]["weekly_cap_usd"] is None
    assert {"wire": "project"}.items() <= data["refusing"][0].items()
    today = world.status_json("--today", cwd=proj)
    assert set(today["by_project"]) == {str(proj), str(other)}
    month = world.status_json("--month", cwd=proj)
    assert [row["path"] for row in month["projects"]] == [str(proj), str(other)]


def test_status_shows_the_clocks(world):
    proj = world.project("proj")
    Claude(world, proj, "s-t").call("ls")
    data = world.status_json(cwd=proj, RUNAWAY_GUARD_MAX_SESSION_HOURS="2")
    assert 0 <= data["session_hours"] < 0.1 and 0 <= data["autonomous_minutes"] < 5
    assert data["max_session_hours"] == 2 and data["max_autonomous_minutes"] is None
    code, _, _ = world.status("--month", "nope")
    assert code == 2


def test_autonomy_limit_stops_a_call_and_a_new_prompt_lifts_it(world):
    proj = world.project("proj")
    session = Claude(world, proj, "s-auto")
    env = {"RUNAWAY_GUARD_MAX_AUTONOMOUS_MINUTES": "0.02"}  # 1.2 s

    def call(command, prompt):
        session.respond()
        payload = {
            "session_id": "s-auto",
            "transcript_path": str(session.transcript),
            "cwd": str(proj),
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": command},
            "tool_use_id": world.next_id("toolu_"),
            "prompt_id": prompt,
        }
        return kind(world.guard(payload, **env))

    assert call("one", "p1") is None
    time.sleep(1.3)
    assert call("two", "p1") == "stop"
    assert world.state("claude", "s-auto")["blocked"]["wire"] == "autonomy"
    assert call("three", "p2") is None  # the person wrote again


def test_the_project_record_in_the_state_is_json_data(guard_env, tmp_path):
    """The autouse check (conftest) sees the state saved with its project record."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    payload = {
        "session_id": "s-json",
        "cwd": str(repo / "sub"),
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "ls"},
        "tool_use_id": "toolu_1",
    }
    assert guard_env.answer(payload, RUNAWAY_GUARD_PROJECT_WEEKLY_USD="5") is None
    from runaway_guard import state_file

    _, base = state_file.session_paths(str(guard_env.state_dir), "claude", "s-json")
    record = state_file.read_state(base + state_file.STATE)["project"]
    assert record["path"] == str(repo)
    assert record["totals"] == {"day": 0, "week": 0, "month": 0}


def test_a_new_session_reads_only_real_sessions_of_the_month_file_again(tmp_path):
    settings = Settings(tmp_path / "state", day=100)
    (tmp_path / "p").mkdir()
    today = time.strftime("%Y-%m-%d")
    first = {"spend": {"day": {}}}
    spent(first, today, 1)
    projects.track(first, Call(str(tmp_path / "p")), settings)
    path = tmp_path / "state" / "projects" / first["project"]["file"] / f"{today[:7]}.json"
    data = json.loads(path.read_text())
    planted = {"../../x:y": 5, "nohost:z": 5, "claude:ghost": 5, "claude:": 5}
    data["days"][today][""].update(planted)
    path.write_text(json.dumps(data))
    second = {"spend": {"day": {}}}
    totals = projects.track(second, Call(str(tmp_path / "p"), "s2"), settings)
    assert totals["day"] == 10**12 + 20
    assert not (tmp_path / "x").exists()
    assert [p.name for p in (tmp_path / "state").iterdir()] == ["projects"]  # no state made


def test_a_team_label_names_the_project_in_the_published_month(tmp_path):
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".runaway-guard.json").write_text(json.dumps({"team_project": "billing"}))
    settings = config.load(str(repo), env)
    assert settings.team_project == "billing"
    settings.state_dir = str(tmp_path / "state")
    settings.project_daily_usd = 100.0
    state = {"spend": {"day": {}}}
    today = time.strftime("%Y-%m-%d")
    spent(state, today, 2)
    projects.track(state, Call(str(repo)), settings)
    other = tmp_path / "other"
    other.mkdir()
    settings.team_project = None  # another project, without a label
    projects.track({"spend": {"day": {today: 5}}}, Call(str(other), "s2"), settings)
    assert projects.labelled_months(settings.state_dir, today[:7]) == {"billing": 2 * 10**12}
    from runaway_guard.team import metrics

    body = metrics.exposition(today[:7], today, 1, 1, {"billing": 2 * 10**12})
    line = f'runaway_guard_project_month_spend_usd{{month="{today[:7]}",project="billing"}}'
    assert f"{line} 2.000000000000\n" in body

    (repo / ".runaway-guard.json").write_text(json.dumps({"team_project": 'a b"}'}))
    settings = config.load(str(repo), env)
    assert settings.team_project is None
    assert any("team_project" in line for line in settings.problems)
