"""A dead guard is visible: a copy of the skill broken in each way a install breaks (a syntax error,
a module gone, a bad bundle, the package gone) still exits 0 and prints nothing, as the hosts run
it (`python -I -S guard.py`), and writes one `dead` line in hook.log; `guard.py --self-check`
says the guard works on a healthy copy and what is broken on each broken one."""

import json
import marshal
import os
import re
import shutil
import stat
import subprocess
import sys

import pytest
import self_check
from guard_env import SKILL
from runaway_guard import hosts
from runaway_guard.calls import TOOL

DEAD_LINE = re.compile(
    r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d dead (?P<error>\w+: .*)\. The guard at (?P<guard>\S+) lets "
    r"every call through; reinstall with: python3 installer/install.py --host (?P<host>\w+)$"
)
PAYLOAD = {
    "hook_event_name": "PreToolUse",
    "session_id": "s1",
    "tool_name": "Bash",
    "tool_input": {"command": "true"},
    "tool_use_id": "toolu_1",
}


def installed_copy(tmp_path):
    """A fresh copy of the skill where Claude Code's user scope keeps it; its skill/ folder."""
    skill = tmp_path / "home" / ".claude" / "skills" / "runaway-guard" / "skill"
    shutil.copytree(SKILL, skill, ignore=shutil.ignore_patterns("__pycache__"))
    return skill


def environment(tmp_path, **extra):
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path / "home"),
        "RUNAWAY_GUARD_STATE_DIR": str(tmp_path / "state"),
        **extra,
    }


def run_guard(skill, environ, *args, payload=PAYLOAD):
    """guard.py as the hosts run it: a new interpreter, -I -S, the payload on stdin."""
    return subprocess.run(
        [sys.executable, "-I", "-S", str(skill / "guard.py"), *args],
        input=json.dumps(payload).encode(),
        capture_output=True,
        env=environ,
        timeout=120,
        check=False,
    )


def syntax_error_in_hook(skill):
    with (skill / "runaway_guard" / "hook.py").open("a") as handle:
        handle.write("\ndef (\n")
    return "SyntaxError"


def hosts_gone(skill):
    shutil.rmtree(skill / "runaway_guard" / "hosts")
    return "ImportError"


def module_gone(skill):
    (skill / "runaway_guard" / "calls.py").unlink()
    return "ModuleNotFoundError"


def syntax_error_in_the_package(skill):
    with (skill / "runaway_guard" / "__init__.py").open("a") as handle:
        handle.write("\nx = (\n")
    return "SyntaxError"


def package_gone(skill):
    shutil.rmtree(skill / "runaway_guard")
    return "ModuleNotFoundError"


def bad_bundle(skill):
    """A bundle that is fresh by its sources' mtimes and sizes, whose code raises."""
    done = run_guard(skill, {"HOME": str(skill), "RUNAWAY_GUARD_STATE_DIR": str(skill / "s")})
    assert done.returncode == 0
    (bundle,) = (skill / "runaway_guard" / "__pycache__").glob("hook.*.bundle")
    form, magic, entries = marshal.loads(bundle.read_bytes())
    name, file, is_package, mtime, size, _ = entries[0]
    code = compile("raise RuntimeError('a bad bundle')", file, "exec")
    entries[0] = (name, file, is_package, mtime, size, code)
    bundle.write_bytes(marshal.dumps((form, magic, entries)))
    return "RuntimeError"


BREAKAGES = [
    syntax_error_in_hook,
    hosts_gone,
    module_gone,
    syntax_error_in_the_package,
    package_gone,
    bad_bundle,
]


@pytest.mark.parametrize("breakage", BREAKAGES)
def test_a_guard_that_cannot_load_says_so_in_hook_log_and_lets_the_call_through(tmp_path, breakage):
    skill = installed_copy(tmp_path)
    error = breakage(skill)
    environ = environment(tmp_path)
    for _ in range(2):
        done = run_guard(skill, environ)
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    log = tmp_path / "state" / "hook.log"
    lines = log.read_text().splitlines()
    assert len(lines) == 2, lines  # one line a call
    found = DEAD_LINE.match(lines[0])
    assert found and found["error"].startswith(error + ": "), lines[0]
    assert found["guard"] == str(skill / "guard.py") and found["host"] == "claude"
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    assert stat.S_IMODE(log.parent.stat().st_mode) == 0o700

    done = run_guard(skill, environ, "--self-check")
    assert done.returncode == 1 and done.stdout == b""
    said = done.stderr.decode()
    assert said.startswith("runaway-guard is broken: ") and said.count("\n") == 1, said
    assert error in said and "reinstall with: python3 installer/install.py --host claude" in said


def test_the_line_says_which_file_broke(tmp_path):
    skill = installed_copy(tmp_path)
    with (skill / "runaway_guard" / "wires.py").open("a") as handle:
        handle.write("\nraise LookupError('wires broke')\n")
    environ = environment(tmp_path)
    assert run_guard(skill, environ).stdout == b""
    line = (tmp_path / "state" / "hook.log").read_text()
    assert "dead LookupError: wires broke (in runaway_guard/wires.py, line " in line
    said = run_guard(skill, environ, "--self-check").stderr.decode()
    assert "runaway_guard.hook cannot be loaded: LookupError: wires broke" in said


def test_an_interrupted_load_is_not_a_dead_guard(tmp_path):
    skill = installed_copy(tmp_path)
    with (skill / "runaway_guard" / "hook.py").open("a") as handle:
        handle.write("\nraise KeyboardInterrupt\n")
    done = run_guard(skill, environment(tmp_path))
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert not (tmp_path / "state" / "hook.log").exists()


def test_a_missing_host_module_fails_the_self_check_for_that_host(tmp_path):
    """The hook loads and each call of that host fails open (a `fail-open` line): the
    self-check names the module."""
    skill = installed_copy(tmp_path)
    shutil.rmtree(skill / "runaway_guard" / "hosts" / "codex")
    environ = environment(tmp_path)
    done = run_guard(skill, environ, "--self-check", "--host", "codex")
    assert done.returncode == 1
    assert "runaway_guard.hosts.codex cannot be loaded: ModuleNotFoundError" in done.stderr.decode()
    assert run_guard(skill, environ, "--self-check").returncode == 1  # every host: codex too
    done = run_guard(skill, environ, "--self-check", "--host", "claude")
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    ("variables", "folder"),
    [
        ({"XDG_STATE_HOME": "xdg"}, "xdg/runaway-guard"),
        ({}, "home/.local/state/runaway-guard"),
    ],
)
def test_the_dead_line_goes_where_the_guard_keeps_its_state(tmp_path, variables, folder):
    skill = installed_copy(tmp_path)
    syntax_error_in_hook(skill)
    environ = environment(tmp_path, **{k: str(tmp_path / v) for k, v in variables.items()})
    del environ["RUNAWAY_GUARD_STATE_DIR"]
    assert run_guard(skill, environ).stdout == b""
    assert DEAD_LINE.match((tmp_path / folder / "hook.log").read_text().strip())


def test_an_unsafe_or_unwritable_state_dir_gets_no_line_and_the_call_still_passes(tmp_path):
    skill = installed_copy(tmp_path)
    syntax_error_in_hook(skill)
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # writable by others: the guard leaves it alone
    blocked = tmp_path / "file"
    blocked.write_text("")  # a file where the folder should be
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("")
    linked = tmp_path / "linked"
    linked.mkdir(mode=0o700)
    (linked / "hook.log").symlink_to(elsewhere)  # never followed
    for folder in (shared, blocked / "state", linked):
        done = run_guard(skill, environment(tmp_path, RUNAWAY_GUARD_STATE_DIR=str(folder)))
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert not (shared / "hook.log").exists()
    assert elsewhere.read_text() == ""


def test_a_long_dead_log_is_rotated(tmp_path):
    skill = installed_copy(tmp_path)
    syntax_error_in_hook(skill)
    log = tmp_path / "state" / "hook.log"
    log.parent.mkdir(mode=0o700)
    log.write_text("x" * (self_check.MAX_LOG_BYTES + 1))
    run_guard(skill, environment(tmp_path))
    assert DEAD_LINE.match(log.read_text().strip())
    assert (tmp_path / "state" / "hook.log.1").stat().st_size == self_check.MAX_LOG_BYTES + 1


# --------------------------------------------------------------------------- --self-check


def test_the_self_check_of_a_healthy_guard_touches_nothing_of_the_person(tmp_path):
    skill = installed_copy(tmp_path)
    environ = environment(tmp_path, RUNAWAY_GUARD_MAX_REPEATS="1000", RUNAWAY_GUARD_OFF="1")
    done = run_guard(skill, environ, "--self-check")
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    names = ", ".join(hosts.NAMES)
    assert done.stdout.decode() == f"runaway-guard works: {names} each refused a repeated call\n"
    assert not (tmp_path / "state").exists()  # the person's state dir
    assert sorted(p.name for p in (tmp_path / "home").iterdir()) == [".claude"]
    for name in hosts.NAMES:
        done = run_guard(skill, environ, "--self-check", "--host", name)
        assert done.stdout.decode() == f"runaway-guard works: {name} refused a repeated call\n"


def test_a_hook_that_stops_refusing_fails_the_self_check(tmp_path):
    skill = installed_copy(tmp_path)
    wires = skill / "runaway_guard" / "wires.py"
    wires.write_text(wires.read_text() + "\nloop_wire = lambda record, call_hash, limit: None\n")
    done = run_guard(skill, environment(tmp_path), "--self-check", "--host", "gemini")
    assert done.returncode == 1
    said = done.stderr.decode()
    assert said.startswith("runaway-guard is broken: gemini: 10 identical calls and none was")


def test_a_hook_that_refuses_everything_fails_the_self_check(tmp_path):
    skill = installed_copy(tmp_path)
    wires = skill / "runaway_guard" / "wires.py"
    refuse = (
        '{"kind": "deny", "wire": "loop", "model_text": "runaway-guard: no", "person_text": ""}'
    )
    wires.write_text(wires.read_text() + f"\nstrongest = lambda found: {refuse}\n")
    done = run_guard(skill, environment(tmp_path), "--self-check", "--host", "claude")
    assert done.returncode == 1
    assert "runaway-guard is broken: claude: the first call was refused: " in done.stderr.decode()


def test_a_hook_that_raises_fails_the_self_check(tmp_path):
    skill = installed_copy(tmp_path)
    ledger = skill / "runaway_guard" / "ledger.py"
    ledger.write_text(
        ledger.read_text().replace("def __enter__(self):", "def __enter__(self):\n        1 / 0", 1)
    )
    done = run_guard(skill, environment(tmp_path), "--self-check", "--host", "qwen")
    assert done.returncode == 1
    said = done.stderr.decode()
    assert "a call through the hook raised ZeroDivisionError: division by zero" in said
    assert "(in runaway_guard/ledger.py, line " in said


def test_a_wrong_argument_is_a_usage_error(tmp_path):
    skill = installed_copy(tmp_path)
    for args in (["--host"], ["--host", "nobody"], ["--hots", "claude"]):
        done = run_guard(skill, environment(tmp_path), "--self-check", *args)
        assert done.returncode == 2 and done.stdout == b"" and done.stderr, args


def test_a_healthy_call_never_loads_the_self_check(tmp_path):
    """What a dead guard needs costs a working call nothing: self_check is imported only when
    something failed."""
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-X", "importtime", str(SKILL / "guard.py")],
        input=json.dumps({**PAYLOAD, "cwd": str(tmp_path)}).encode(),
        capture_output=True,
        env=environment(tmp_path),
        timeout=60,
        check=True,
    )
    imported = done.stderr.decode()
    assert "runaway_guard" in imported and "self_check" not in imported


# --------------------------------------------------------------------------- its data


@pytest.mark.parametrize("name", hosts.NAMES)
def test_each_host_has_a_self_check_payload_of_its_own(name):
    payload = self_check._payload(name, 1, "/project")
    assert hosts.detect(payload, {}) == name
    call = hosts.load(name).call(payload)
    assert call is not None and call.event == TOOL and call.session_id


@pytest.mark.parametrize("name", [n for n in hosts.NAMES if hosts.load(n).INSTALL])
def test_the_reinstall_hint_names_the_host_the_skill_is_installed_for(name):
    spec = hosts.load(name).INSTALL
    home = (spec["home"]["default"], spec["home"].get("subfolder", ""))
    user = "/h/" + "/".join(part for part in home if part) + "/" + spec["user"]["skills"]
    project = "/work/proj/" + spec["project"]["skills"]
    for skills in (user, project):
        assert self_check.guess_host(f"{skills}/runaway-guard/skill/") == name, skills
    assert self_check.guess_host("/opt/runaway-guard/skill/") == "all"
