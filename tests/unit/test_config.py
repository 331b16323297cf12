"""Configuration: environment over the user's file over defaults; a project file only tightens.

An invalid config file is named in the status and the log, and the guard keeps working on the
settings it could read.
"""

import json
import subprocess
import sys

import pytest
from claude_records import pre_tool_use
from guard_env import GUARD
from runaway_guard import config
from test_status import Claude, World, kind


@pytest.fixture
def world(tmp_path):
    return World(tmp_path)


@pytest.fixture
def homes(tmp_path):
    home = tmp_path / "home"
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    environ = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
    return environ, home / ".config" / "runaway-guard" / "config.json", project


def write(path, value):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(value if isinstance(value, str) else json.dumps(value))
    return path


def test_defaults(homes):
    environ, _, project = homes
    settings = config.load(str(project), environ)
    assert (settings.max_usd, settings.warn_at, settings.daily_usd) == (25.0, 0.8, 0.0)
    assert (settings.max_failures, settings.max_repeats) == (5, 5)
    assert settings.off is False and settings.problems == []
    assert settings.state_dir.endswith(".local/state/runaway-guard")
    assert set(settings.sources.values()) == {"default"}


def test_environment_over_user_file_over_defaults(homes):
    environ, user, project = homes
    write(user, {"max_usd": 40, "daily_usd": 100, "max_failures": 8, "warn_at": 0.5})
    settings = config.load(str(project), environ)
    assert (settings.max_usd, settings.daily_usd, settings.max_failures) == (40.0, 100.0, 8)
    assert settings.sources["max_usd"] == "user"
    assert settings.sources["max_repeats"] == "default"
    environ = {**environ, "RUNAWAY_GUARD_MAX_USD": "60", "RUNAWAY_GUARD_MAX_FAILURES": "3"}
    settings = config.load(str(project), environ)
    assert (settings.max_usd, settings.max_failures) == (60.0, 3)
    assert settings.sources["max_usd"] == "environment"
    assert (settings.daily_usd, settings.warn_at) == (100.0, 0.5)  # the file's, untouched
    environ["RUNAWAY_GUARD_MAX_USD"] = "0"
    assert config.load(str(project), environ).max_usd == 0  # the person may remove the cap


def test_state_dir_and_off(homes, tmp_path):
    environ, user, project = homes
    write(user, {"state_dir": str(tmp_path / "from-file"), "off": True})
    settings = config.load(str(project), environ)
    assert settings.state_dir == str(tmp_path / "from-file") and settings.off
    environ = {**environ, "RUNAWAY_GUARD_STATE_DIR": str(tmp_path / "from-env")}
    assert config.load(str(project), environ).state_dir == str(tmp_path / "from-env")
    write(user, {})
    assert config.load(str(project), {**environ, "RUNAWAY_GUARD_OFF": "1"}).off
    environ["XDG_STATE_HOME"] = str(tmp_path / "xdg")
    del environ["RUNAWAY_GUARD_STATE_DIR"]
    assert config.load(str(project), environ).state_dir == str(tmp_path / "xdg" / "runaway-guard")


def test_project_file_can_only_tighten(homes):
    environ, user, project = homes
    write(user, {"max_usd": 30})
    write(project / ".runaway-guard.json", {"max_usd": 10, "max_repeats": 3, "daily_usd": 50})
    settings = config.load(str(project / "src"), environ)
    assert (settings.max_usd, settings.max_repeats, settings.daily_usd) == (10.0, 3, 50.0)
    assert settings.sources["max_usd"] == "project"
    assert settings.problems == []

    # Raising or removing a cap, loosening a threshold: ignored and reported.
    write(
        project / ".runaway-guard.json",
        {"max_usd": 500, "daily_usd": 0, "max_failures": 50, "warn_at": 0.95, "off": True},
    )
    environ["RUNAWAY_GUARD_DAILY_USD"] = "20"
    settings = config.load(str(project), environ)
    assert (settings.max_usd, settings.daily_usd, settings.max_failures) == (30.0, 20.0, 5)
    assert settings.warn_at == 0.8 and settings.off is False
    text = "\n".join(settings.problems)
    for key in ("max_usd", "daily_usd", "max_failures", "warn_at"):
        assert f"{key}=" in text and "can only tighten" in text
    assert "off can only be set by the user" in text

    # A cap of 0 in the project file does not remove the user's cap either.
    write(project / ".runaway-guard.json", {"max_usd": 0})
    assert config.load(str(project), environ).max_usd == 30.0


def test_project_file_stops_at_the_repository_root(homes, tmp_path):
    environ, _, project = homes
    write(tmp_path / ".runaway-guard.json", {"max_usd": 1})  # above the repository: not its own
    assert config.load(str(project), environ).max_usd == 25.0


def test_invalid_values_and_files_are_named(homes):
    environ, user, project = homes
    write(
        user,
        {"max_usd": "lots", "max_failures": 2.5, "warn_at": 3, "mystery": 1, "daily_usd": True},
    )
    environ = {**environ, "RUNAWAY_GUARD_MAX_REPEATS": "-1"}
    settings = config.load(str(project), environ)
    assert settings.max_usd == 25.0 and settings.max_failures == 5 and settings.daily_usd == 0
    text = "\n".join(settings.problems)
    assert f"{user}: max_usd='lots' is not valid" in text
    assert "max_failures=2.5" in text and "warn_at=3" in text and "daily_usd=True" in text
    assert "unknown key 'mystery'" in text
    assert "RUNAWAY_GUARD_MAX_REPEATS='-1' is not valid" in text

    write(user, "{not json")
    write(project / ".runaway-guard.json", "[1, 2]")
    settings = config.load(str(project), {**environ, "RUNAWAY_GUARD_MAX_USD": "7"})
    assert settings.max_usd == 7.0  # the rest still applies
    assert any(p.startswith(f"{user}: not valid JSON") for p in settings.problems)
    assert any(str(project / ".runaway-guard.json") in p for p in settings.problems)


def test_invalid_config_file_named_in_status_and_log_and_the_guard_works_on(world):
    proj = world.project("proj")
    user = world.config()
    user.write_text('{"max_usd": 2, oops')
    write(proj / ".runaway-guard.json", {"max_usd": 1})
    session = Claude(world, proj, "s-bad-config")
    assert kind(session.call(spend=False)[1]) is None
    answer = session.call()[1]  # $0.55, about $0.69 next: past the project's $1, not $25
    assert kind(answer) == "stop"  # the project's tighter cap still holds
    data = world.status_json(cwd=proj)
    assert data["cap_usd"] == 1.0 and data["cap_source"] == "project"
    assert any(p.startswith(f"{user}: not valid JSON") for p in data["config_problems"])
    log = (world.state_dir / "hook.log").read_text()
    assert f"config {user}: not valid JSON" in log
    assert "fail-open" not in log
    code, out, _ = world.status(cwd=proj)
    assert code == 0 and "Configuration problems" in out and "not valid JSON" in out

    # Once fixed, the problem leaves the status.
    user.write_text('{"max_usd": 2}')
    session.call(spend=False)
    assert world.status_json(cwd=proj)["config_problems"] == []


def test_the_interrupt_is_on_unless_the_person_turns_it_off(homes):
    environ, user, project = homes
    assert config.load(str(project), environ).interrupt is True
    write(user, {"interrupt": False})
    assert config.load(str(project), environ).interrupt is False
    assert config.load(str(project), {**environ, "RUNAWAY_GUARD_INTERRUPT": "1"}).interrupt
    write(user, {})
    settings = config.load(str(project), {**environ, "RUNAWAY_GUARD_INTERRUPT": "0"})
    assert settings.interrupt is False and settings.problems == []

    # A project may turn it back on, never off.
    write(project / ".runaway-guard.json", {"interrupt": True})
    assert config.load(str(project), {**environ, "RUNAWAY_GUARD_INTERRUPT": "0"}).interrupt
    write(project / ".runaway-guard.json", {"interrupt": False})
    settings = config.load(str(project), environ)
    assert settings.interrupt is True
    assert any("interrupt=false would loosen" in p for p in settings.problems)

    write(user, {"interrupt": "no"})
    write(project / ".runaway-guard.json", {"interrupt": 0})
    settings = config.load(str(project), {**environ, "RUNAWAY_GUARD_INTERRUPT": "off"})
    assert settings.interrupt is True
    text = "\n".join(settings.problems)
    assert "interrupt='no' is not true or false" in text
    assert "RUNAWAY_GUARD_INTERRUPT='off' is not 0 or 1" in text
    assert "interrupt=0 is not true or false" in text


def test_a_project_file_nested_past_the_recursion_limit_is_a_problem_line(world):
    proj = world.project("proj")
    world.config().write_text('{"max_usd": 1}')
    write(proj / ".runaway-guard.json", "[" * 20_000 + "]" * 20_000)
    session = Claude(world, proj, "s-deep-project")
    session.call()
    assert kind(session.call()[1]) == "stop"  # $1.10 of the user's $1: their cap holds
    log = (world.state_dir / "hook.log").read_text()
    assert "fail-open" not in log
    assert f"config {proj / '.runaway-guard.json'}: not valid JSON (JSON nested too deep" in log


# One hook call in a fresh interpreter, as guard.py makes it: the package's modules it loaded.
LOADED = (
    "import sys, os; sys.path.insert(0, sys.argv[1]); "
    "from runaway_guard import hook; hook.run(sys.stdin.buffer.read(), dict(os.environ)); "
    "print(' '.join(name for name in sys.modules if name.startswith('runaway_guard.')))"
)
# (text_loops is not among them: Claude Code's and Copilot CLI's readers count every answer.)
LOADED_WHEN_NEEDED = {"config_file", "config_team", "time_limits"}


def test_a_call_loads_the_file_reader_and_the_limits_only_where_they_are_in_play(guard_env):
    """A steady call unmarshals every module it loads: one with no config file, no team, no
    notify URL and no time limit loads none of their modules."""
    transcript = guard_env.root / "t.jsonl"
    transcript.touch()

    def loaded(tool_use_id, **extra_env):
        done = subprocess.run(
            [sys.executable, "-I", "-S", "-c", LOADED, str(GUARD.parent)],
            input=json.dumps(pre_tool_use(transcript, tool_use_id)).encode(),
            env={**guard_env.env, **extra_env},
            capture_output=True,
            check=True,
        )
        return {name.split(".")[1] for name in done.stdout.decode().split()} & LOADED_WHEN_NEEDED

    assert loaded("toolu_1") == set()
    guard_env.config(max_usd=10)
    assert loaded("toolu_2", RUNAWAY_GUARD_MAX_SESSION_HOURS="1") == {"config_file", "time_limits"}
