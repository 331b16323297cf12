"""Tests for installer/install.py, run in-process through main(argv, env).

The corpus in tests/fixtures/settings/<host>/ holds settings files people grow by hand; files
named ``invalid-*`` must be refused (exit 2, left byte for byte), every other one must survive
install, re-install and uninstall in both scopes. The skill source is a fake tree in tmp_path whose
guard.py only writes a marker file, so these tests do not depend on the real guard.
"""

from __future__ import annotations

import copy
import hashlib
import importlib.util
import io
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "fixtures" / "settings"
MARK = "runaway-guard/skill/guard.py"

_spec = importlib.util.spec_from_file_location(
    "runaway_guard_install", ROOT / "installer" / "install.py"
)
install = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = install
_spec.loader.exec_module(install)
from runaway_guard import hosts  # noqa: E402
from runaway_guard_installer import hook_list, settings_file  # noqa: E402  (on sys.path now)

# The hosts whose hook the installer merges into a JSON settings file the person may also edit
# (a link, read-only, their own keys): every host of the registry with such an entry.
SETTINGS_HOSTS = [
    name for name in hosts.NAMES if hosts.load(name).INSTALL["entry"]["kind"] == "json-list"
]

STAND_IN_GUARD = """\
import pathlib, sys
data = " ".join(sys.argv[1:]) or sys.stdin.read()
(pathlib.Path(__file__).resolve().parent / "ran").write_text(data or "<empty>")
if sys.argv[1:2] == ["--self-check"]:
    print("runaway-guard works: the stand-in")
"""


# --------------------------------------------------------------------------- helpers


def make_source(folder: Path) -> Path:
    (folder / "skill" / "runaway_guard").mkdir(parents=True)
    (folder / "skill" / "__pycache__").mkdir()
    (folder / "references").mkdir()
    (folder / "SKILL.md").write_text("---\nname: runaway-guard\ndescription: test\n---\n")
    (folder / "skill" / "guard.py").write_text(STAND_IN_GUARD)
    (folder / "skill" / "status.py").write_text("print('status')\n")
    (folder / "skill" / "runaway_guard" / "__init__.py").write_text("")
    (folder / "skill" / "__pycache__" / "guard.cpython-311.pyc").write_bytes(b"\0junk")
    (folder / "skill" / "runaway_guard" / "stale.pyc").write_bytes(b"\0junk")
    (folder / "references" / "notes.md").write_text("notes\n")
    return folder


@pytest.fixture
def source(tmp_path: Path) -> Path:
    return make_source(tmp_path / "src")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


def with_clis(env: dict, folder: Path, *names: str) -> dict:
    """env with a PATH on which stand-in CLIs of these hosts are found."""
    bin_dir = folder / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name in names:
        cli = bin_dir / name
        cli.write_text("#!/bin/sh\n")
        cli.chmod(0o755)
    return {**env, "PATH": str(bin_dir)}


def run(argv, env, source: Path):
    """main() in-process: (exit code, stdout text)."""
    out = io.StringIO()
    code = install.main([*argv, "--source", str(source)], env=env, out=out)
    return code, out.getvalue()


def settings_path(host: str, scope: str, home: Path, project: Path) -> Path:
    if scope == "user":
        return home / (".claude/settings.json" if host == "claude" else ".codex/hooks.json")
    return project / (".claude/settings.local.json" if host == "claude" else ".codex/hooks.json")


def user_folder(host: str, home: Path) -> Path:
    """The host's user folder under HOME (its own variable unset), from its INSTALL data."""
    folder = hosts.load(host).INSTALL["home"]
    return home.joinpath(folder["default"], folder.get("subfolder", ""))


def user_settings(host: str, home: Path) -> Path:
    return user_folder(host, home) / hosts.load(host).INSTALL["user"]["settings"]


def guard_handlers_anywhere(obj):
    """Every handler in (part of) a settings object, of any host's shape, whose command runs
    the guard."""
    if isinstance(obj, list):
        return [found for item in obj for found in guard_handlers_anywhere(item)]
    if not isinstance(obj, dict):
        return []
    own = [obj] if MARK in str(obj.get("command", "")) else []
    return own + [found for value in obj.values() for found in guard_handlers_anywhere(value)]


def skill_path(host: str, scope: str, home: Path, project: Path) -> Path:
    if scope == "user":
        base = home / (".claude" if host == "claude" else ".codex")
        return base / "skills" / "runaway-guard"
    sub = ".claude/skills" if host == "claude" else ".agents/skills"
    return project / sub / "runaway-guard"


def scope_args(scope: str, project: Path) -> list[str]:
    return ["--scope", "project", "--project", str(project)] if scope == "project" else []


def parse(path: Path):
    text = path.read_bytes().decode("utf-8-sig")
    return json.loads(text) if text.strip() else {}


def is_guard(handler) -> bool:
    return (
        isinstance(handler, dict)
        and isinstance(handler.get("command"), str)
        and MARK in handler["command"]
    )


def without_guard(obj, host="claude"):
    """The settings object with the guard taken out (independent of the installer's code).

    Guard handlers in the host's GUARD_EVENTS and the guard's statusLine go; so
    does a group they alone filled, then an empty list and an empty hooks object (the one
    documented exception to "uninstall gives back the original": an empty container cannot be
    told apart from one the installer made).
    """
    obj = copy.deepcopy(without_guard_rules(obj))
    line = obj.get("statusLine")  # the guard's status line (Claude Code, Qwen Code)
    if isinstance(line, dict) and str(line.get("command")).endswith(".py' --statusline"):
        del obj["statusLine"]
    hooks = obj.get("hooks")
    if not isinstance(hooks, dict):
        return obj
    for event in GUARD_EVENTS[host]:
        if event not in hooks:
            continue
        groups = []
        for group in hooks[event]:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                kept = [h for h in group["hooks"] if not is_guard(h)]
                if not kept and len(kept) != len(group["hooks"]):
                    continue
                group = {**group, "hooks": kept}
            groups.append(group)
        if groups:
            hooks[event] = groups
        else:
            hooks.pop(event, None)
    if not hooks:
        del obj["hooks"]
    return obj


EVENT = "PreToolUse"
# hosts/_turns.py; Claude Code also PostToolUse (after a subagent: hosts/claude/)
TURNS = (EVENT, "UserPromptSubmit", "Stop")
GUARD_EVENTS = {"claude": (*TURNS, "PostToolUse"), "codex": TURNS}


def is_guard_rule(rule) -> bool:
    """A permission rule for one of the guard's folders (they all end in runaway-guard)."""
    return isinstance(rule, str) and rule.startswith("Edit(") and rule.endswith("runaway-guard/**)")


def without_guard_rules(obj):
    """The settings object without the guard's rules in permissions.ask, nor what they alone
    filled."""
    obj = copy.deepcopy(obj)
    permissions = obj.get("permissions")
    if not isinstance(permissions, dict) or not isinstance(permissions.get("ask"), list):
        return obj
    kept = [rule for rule in permissions["ask"] if not is_guard_rule(rule)]
    if kept:
        permissions["ask"] = kept
    else:
        del permissions["ask"]
        if not permissions:
            del obj["permissions"]
    return obj


def same(a, b) -> bool:
    """Equal, key order included."""
    return json.dumps(a, sort_keys=False) == json.dumps(b, sort_keys=False)


def backups(path: Path) -> list[Path]:
    if not path.parent.exists():
        return []
    return sorted(path.parent.glob(path.name + ".runaway-guard-backup-*"))


def guard_handlers(obj):
    found = []
    for gi, group in enumerate(obj.get("hooks", {}).get(EVENT, [])):
        if isinstance(group, dict) and isinstance(group.get("hooks"), list):
            for hi, handler in enumerate(group["hooks"]):
                if is_guard(handler):
                    found.append((gi, hi, handler))
    return found


def corpus(valid: bool):
    cases = []
    for host in ("claude", "codex"):
        for path in sorted((CORPUS / host).glob("*.json")):
            if path.name.startswith("invalid-") != valid:
                for scope in ("user", "project"):
                    cases.append(pytest.param(host, scope, path, id=f"{host}-{scope}-{path.name}"))
    return cases


# --------------------------------------------------------------------------- the corpus


def test_corpus_is_big_enough():
    for host in ("claude", "codex"):
        files = list((CORPUS / host).glob("*.json"))
        assert len(files) >= 25
        assert any(f.name.startswith("invalid-") for f in files)


def placed(host, scope, fixture, tmp_path, home):
    """The corpus file copied to where the host keeps its settings for that scope."""
    project = tmp_path / "project"
    project.mkdir()
    target = settings_path(host, scope, home, project)
    target.parent.mkdir(parents=True)
    original_bytes = fixture.read_bytes()
    target.write_bytes(original_bytes)
    return project, {"HOME": str(home)}, target, original_bytes


@pytest.mark.parametrize(("host", "scope", "fixture"), corpus(valid=True))
def test_valid_file_round_trip(host, scope, fixture, tmp_path, source, home):
    project, env, target, original_bytes = placed(host, scope, fixture, tmp_path, home)
    original = parse(target)
    args = ["--host", host, *scope_args(scope, project)]

    # install: nothing lost, the guard where it belongs
    code, _ = run(args, env, source)
    assert code == 0
    installed = parse(target)
    assert same(without_guard(installed, host), without_guard(original, host))
    skill = skill_path(host, scope, home, project)
    command = hook_list.hook_command(sys.executable, skill)
    before = guard_handlers(original)
    after = guard_handlers(installed)
    if before:
        gi, hi, _ = before[0]
        assert installed["hooks"][EVENT][gi]["hooks"][hi]["command"] == command
        assert [(g, h) for g, h, _ in after] == [(g, h) for g, h, _ in before]
    else:
        groups = installed["hooks"][EVENT]
        assert groups[-1] == {"hooks": [{"type": "command", "command": command, "timeout": 30}]}
        assert len(groups) == len(original.get("hooks", {}).get(EVENT, [])) + 1
    assert (skill / "skill" / "guard.py").is_file()
    assert target.read_bytes().startswith(b"\xef\xbb\xbf") == original_bytes.startswith(
        b"\xef\xbb\xbf"
    )
    saved = backups(target)
    assert len(saved) == 1 and saved[0].read_bytes() == original_bytes

    # idempotent: byte-identical, no new backup
    once = target.read_bytes()
    code, out = run(args, env, source)
    assert code == 0
    assert target.read_bytes() == once
    assert backups(target) == saved
    assert "file not touched" in out

    # uninstall gives back the original (guard-free) object
    code, _ = run([*args, "--uninstall"], env, source)
    assert code == 0
    assert same(parse(target), without_guard(original, host))
    if not before and same(without_guard(original, host), original):
        assert same(parse(target), original)
    assert not skill.exists()


@pytest.mark.parametrize(("host", "scope", "fixture"), corpus(valid=False))
def test_invalid_file_refused_untouched(host, scope, fixture, tmp_path, source, home, capsys):
    project, env, target, original_bytes = placed(host, scope, fixture, tmp_path, home)
    listing = sorted(p.name for p in target.parent.iterdir())
    for extra in ([], ["--uninstall"], ["--dry-run"], ["--check"]):
        code, _ = run(["--host", host, *scope_args(scope, project), *extra], env, source)
        assert code == 2, extra
        err = capsys.readouterr().err
        assert str(target) in err and "refused" in err
    assert target.read_bytes() == original_bytes
    assert sorted(p.name for p in target.parent.iterdir()) == listing
    assert not skill_path(host, scope, home, project).exists()


# --------------------------------------------------------------------------- generated cases


@pytest.mark.parametrize("host", SETTINGS_HOSTS)
def test_symlinked_settings_written_through(host, tmp_path, source, home):
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / "settings.json"
    original = {"model": "x", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "s"}]}]}}
    real.write_text(json.dumps(original))
    os.chmod(real, 0o640)
    link = user_settings(host, home)
    link.parent.mkdir(parents=True)
    link.symlink_to(real)
    env = {"HOME": str(home)}

    assert run(["--host", host], env, source)[0] == 0
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert guard_handlers_anywhere(parse(real))
    assert stat.S_IMODE(real.stat().st_mode) == 0o640
    assert run(["--host", host, "--uninstall"], env, source)[0] == 0
    assert link.is_symlink()
    assert same(parse(real), original)


def test_dangling_symlink_creates_target(tmp_path, source, home):
    real = tmp_path / "elsewhere" / "settings.json"
    real.parent.mkdir()
    link = home / ".claude" / "settings.json"
    link.parent.mkdir()
    link.symlink_to(real)
    assert run(["--host", "claude"], {"HOME": str(home)}, source)[0] == 0
    assert link.is_symlink() and guard_handlers(parse(real))


@pytest.mark.parametrize("host", SETTINGS_HOSTS)
def test_read_only_file_refused(host, tmp_path, source, home, capsys):
    target = user_settings(host, home)
    target.parent.mkdir(parents=True)
    target.write_text('{"model": "opus"}\n')
    os.chmod(target, 0o444)
    code, _ = run(["--host", host], {"HOME": str(home)}, source)
    assert code == 2
    assert "read-only" in capsys.readouterr().err
    assert target.read_text() == '{"model": "opus"}\n'
    assert stat.S_IMODE(target.stat().st_mode) == 0o444
    assert not backups(target)
    assert not skill_path(host, "user", home, tmp_path).exists()


def test_host_all_refuses_both_when_one_is_invalid(tmp_path, source, home, capsys):
    claude = home / ".claude" / "settings.json"
    codex = home / ".codex" / "hooks.json"
    claude.parent.mkdir()
    codex.parent.mkdir()
    claude.write_text('{"model": "opus"}')
    codex.write_text("[]")
    assert run(["--host", "all"], {"HOME": str(home)}, source)[0] == 2
    assert claude.read_text() == '{"model": "opus"}' and codex.read_text() == "[]"
    assert not backups(claude) and not (home / ".claude" / "skills").exists()
    assert "top level is a JSON array" in capsys.readouterr().err


def test_concurrent_change_is_not_overwritten(tmp_path):
    target = tmp_path / "settings.json"
    target.write_text('{"someone": "else"}')
    with pytest.raises(settings_file.InstallError, match="changed while"):
        settings_file.write_atomic(target, b"{}\n", expected=b"{}")
    assert target.read_text() == '{"someone": "else"}'
    assert [p.name for p in tmp_path.iterdir()] == ["settings.json"]


def test_folder_in_place_of_settings_refused(tmp_path, source, home, capsys):
    (home / ".claude" / "settings.json").mkdir(parents=True)
    assert run(["--host", "claude"], {"HOME": str(home)}, source)[0] == 2
    assert "is a folder" in capsys.readouterr().err


def test_mode_kept_and_missing_file_created(tmp_path, source, home):
    env = {"HOME": str(home)}
    assert run(["--host", "claude"], env, source)[0] == 0
    created = home / ".claude" / "settings.json"
    assert created.is_file() and not backups(created)
    os.chmod(created, 0o600)
    codex = home / ".codex" / "hooks.json"
    codex.parent.mkdir()
    codex.write_text("{}")
    os.chmod(codex, 0o600)
    assert run(["--host", "all", "--python", sys.executable], env, source)[0] == 0
    assert stat.S_IMODE(codex.stat().st_mode) == 0o600
    assert run(["--host", "all", "--uninstall"], env, source)[0] == 0
    assert stat.S_IMODE(created.stat().st_mode) == 0o600
    assert parse(created) == {} and parse(codex) == {}


def test_codex_append_keeps_positions(tmp_path, source, home):
    fixture = CORPUS / "codex" / "same-and-other-events.json"
    target = home / ".codex" / "hooks.json"
    target.parent.mkdir()
    target.write_bytes(fixture.read_bytes())
    original = parse(target)
    env = {"HOME": str(home)}
    assert run(["--host", "codex"], env, source)[0] == 0
    installed = parse(target)
    # the guard's events get its group appended (Codex trusts a hook by its position), the
    # others are left as they were, in their order
    added = [event for event in GUARD_EVENTS["codex"] if event not in original["hooks"]]
    assert list(installed["hooks"]) == list(original["hooks"]) + added
    for event in installed["hooks"]:
        before = original["hooks"].get(event, [])
        if event in GUARD_EVENTS["codex"]:
            assert installed["hooks"][event][: len(before)] == before
            assert is_guard(installed["hooks"][event][len(before)]["hooks"][0])
        else:
            assert installed["hooks"][event] == before


def test_old_guard_replaced_in_place(tmp_path, source, home):
    fixture = CORPUS / "codex" / "existing-guard-middle.json"
    target = home / ".codex" / "hooks.json"
    target.parent.mkdir()
    target.write_bytes(fixture.read_bytes())
    code, out = run(["--host", "codex"], {"HOME": str(home)}, source)
    assert code == 0
    # "added": the old guard had no UserPromptSubmit or Stop entry yet
    assert "hook added to" in out and "asks again" in out and "/hooks" in out
    groups = parse(target)["hooks"][EVENT]
    assert len(groups) == 3 and is_guard(groups[1]["hooks"][0])
    assert "/opt/x" not in groups[1]["hooks"][0]["command"]


def test_shared_group_keeps_added_keys(tmp_path, source, home):
    target = home / ".claude" / "settings.json"
    target.parent.mkdir()
    target.write_bytes((CORPUS / "claude" / "existing-guard-shared-group.json").read_bytes())
    assert run(["--host", "claude"], {"HOME": str(home)}, source)[0] == 0
    handler = parse(target)["hooks"][EVENT][0]["hooks"][1]
    assert handler["statusMessage"] == "guarding" and handler["timeout"] == 30


def test_dry_run_writes_nothing(tmp_path, source, home):
    env = with_clis({"HOME": str(home)}, tmp_path, "claude", "codex")
    code, out = run(["--host", "all", "--dry-run"], env, source)
    assert code == 0
    assert list(home.iterdir()) == []
    assert "+++ " in out and MARK in out and "skill/guard.py" in out
    assert "nothing was written" in out
    # after a real install, a dry run shows no change
    assert run(["--host", "all"], env, source)[0] == 0
    code, out = run(["--host", "all", "--dry-run"], env, source)
    assert code == 0
    assert "no change" in out and "+++ " not in out
    code, out = run(["--host", "all", "--dry-run", "--uninstall"], env, source)
    assert code == 0
    assert "-            " in out and (home / ".claude" / "skills" / "runaway-guard").is_dir()


def test_skill_copy_skips_bytecode_and_updates(tmp_path, source, home):
    env = {"HOME": str(home)}
    assert run(["--host", "claude"], env, source)[0] == 0
    skill = home / ".claude" / "skills" / "runaway-guard"
    names = sorted(p.relative_to(skill).as_posix() for p in skill.rglob("*") if p.is_file())
    assert names == [
        "SKILL.md",
        "references/notes.md",
        "skill/guard.py",
        "skill/runaway_guard/__init__.py",
        "skill/status.py",
    ]
    (source / "skill" / "status.py").write_text("print('v2')\n")
    (skill / "skill" / "__pycache__").mkdir()  # the runtime's own cache is not a difference
    code, out = run(["--host", "claude", "--dry-run"], env, source)
    assert code == 0
    assert "~ " in out and "status.py" in out
    assert run(["--host", "claude"], env, source)[0] == 0
    assert (skill / "skill" / "status.py").read_text() == "print('v2')\n"
    assert not list(skill.parent.glob(".runaway-guard.*"))


def test_uninstall_leaves_a_checkout_alone(tmp_path, home):
    checkout = make_source(home / ".claude" / "skills" / "runaway-guard")
    (checkout / ".git").mkdir()
    env = {"HOME": str(home)}
    assert run(["--host", "claude"], env, checkout)[0] == 0
    code, out = run(["--host", "claude", "--uninstall"], env, checkout)
    assert code == 0 and "left as it is" in out
    assert (checkout / "SKILL.md").is_file()
    assert not guard_handlers(parse(home / ".claude" / "settings.json"))


def test_env_overrides_and_project_default(tmp_path, source, home, monkeypatch):
    env = {
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "cc"),
        "CODEX_HOME": str(tmp_path / "cx"),
    }
    assert run(["--host", "all"], env, source)[0] == 0
    assert guard_handlers(parse(tmp_path / "cc" / "settings.json"))
    assert guard_handlers(parse(tmp_path / "cx" / "hooks.json"))
    assert (tmp_path / "cx" / "skills" / "runaway-guard" / "SKILL.md").is_file()
    assert not (home / ".claude").exists()

    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "sub" / "dir").mkdir(parents=True)
    monkeypatch.chdir(repo / "sub" / "dir")
    code, out = run(["--host", "all", "--scope", "project"], env, source)
    assert code == 0
    assert guard_handlers(parse(repo / ".claude" / "settings.local.json"))
    assert guard_handlers(parse(repo / ".codex" / "hooks.json"))
    assert (repo / ".agents" / "skills" / "runaway-guard" / "SKILL.md").is_file()
    assert "trusted project" in out and ".gitignore" in out


def test_host_all_means_the_hosts_found_here(tmp_path, source, home, capsys):
    env = {"HOME": str(home)}
    code, out = run(["--host", "all"], env, source)
    assert code == 0 and "No coding agent found" in out and "nothing was installed" in out
    assert run(["--host", "all", "--check"], env, source)[0] == 1
    assert list(home.iterdir()) == []
    code, out = run(["--host", "all"], with_clis(env, tmp_path, "codex"), source)
    assert code == 0
    assert "found on this machine: Codex\nNot found (skipped): Claude Code" in out
    assert guard_handlers(parse(home / ".codex" / "hooks.json"))
    assert not (home / ".claude").exists()
    (home / ".claude").mkdir()  # a host's folder counts as found too
    code, out = run(["--host", "all"], env, source)
    assert code == 0 and guard_handlers(parse(home / ".claude" / "settings.json"))


def test_bad_usage_exit_2(tmp_path, source, home):
    env = {"HOME": str(home)}
    assert run(["--host", "vim"], env, source)[0] == 2
    assert run(["--host", "claude", "--project", str(tmp_path)], env, source)[0] == 2
    assert run(["--host", "claude", "--check", "--uninstall"], env, source)[0] == 2
    assert run(["--host", "claude", "--python", str(tmp_path / "nope")], env, source)[0] == 2
    assert list(home.iterdir()) == []


def test_missing_source_is_an_error(tmp_path, home):
    assert run(["--host", "claude"], {"HOME": str(home)}, tmp_path)[0] == 1
    assert list(home.iterdir()) == []


def test_next_steps_message(tmp_path, source, home):
    code, out = run(
        ["--host", "all"], with_clis({"HOME": str(home)}, tmp_path, "claude", "codex"), source
    )
    assert code == 0
    for needle in (
        "restart",
        "/hooks",
        "codex exec",
        "silently",
        "status.py",
        "RUNAWAY_GUARD_MAX_USD",
        '{"max_usd": 25}',
    ):
        assert needle in out


# --------------------------------------------------------------------------- the command


WEIRD = "h o m e 'single' \"double\" $HOME ${x} `echo pwned` ; & | \\ ü"


@pytest.mark.parametrize("host", SETTINGS_HOSTS)
def test_installed_command_runs_through_sh(host, tmp_path, source):
    home = tmp_path / WEIRD
    home.mkdir()
    pydir = tmp_path / "py $dir `x` 'q'"
    pydir.mkdir()
    python = pydir / "python3"
    python.symlink_to(sys.executable)
    env = {"HOME": str(home)}
    assert run(["--host", host, "--python", str(python)], env, source)[0] == 0
    handlers = guard_handlers_anywhere(parse(user_settings(host, home))["hooks"])
    handler = handlers[0]
    assert all(other == handler for other in handlers)
    assert handler["timeout"] == hosts.load(host).INSTALL["entry"]["handler"]["timeout"]
    proc = subprocess.run(
        ["sh", "-c", handler["command"]],
        input=b'{"hook_event_name": "PreToolUse"}',
        capture_output=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    skills = user_folder(host, home) / hosts.load(host).INSTALL["user"]["skills"]
    marker = skills / "runaway-guard" / "skill" / "ran"
    assert marker.read_text() == '{"hook_event_name": "PreToolUse"}'
    assert not (tmp_path / "pwned").exists()


def test_sh_quote_round_trips():
    for text in (WEIRD, "", "'", "''", "a'b'c", "$(rm -rf /)", "\n\t"):
        proc = subprocess.run(
            ["sh", "-c", f"printf %s {hook_list.sh_quote(text)}"], capture_output=True, check=True
        )
        assert proc.stdout.decode() == text


# --------------------------------------------------------------------------- --check


def test_check_reports_a_broken_hook(tmp_path, source, home):
    env = {"HOME": str(home), "PATH": os.environ.get("PATH", "")}
    env["PATH"] += os.pathsep + with_clis({}, tmp_path, "claude", "codex")["PATH"]
    pydir = tmp_path / "venv" / "bin"
    pydir.mkdir(parents=True)
    python = pydir / "python3"
    python.symlink_to(sys.executable)

    code, out = run(["--host", "all", "--check"], env, source)
    assert code == 1 and "does not exist" in out

    assert run(["--host", "all", "--python", str(python)], env, source)[0] == 0
    code, out = run(["--host", "all", "--check"], env, source)
    assert code == 0, out
    events = len(GUARD_EVENTS["claude"]) + len(GUARD_EVENTS["codex"])
    assert out.count("ok: ") == events and "Codex trust" in out  # per event
    guard = home / ".claude" / "skills" / "runaway-guard" / "skill"
    assert (guard / "ran").read_text() == "--self-check --host claude"

    python.unlink()  # the interpreter went away: the hook would fail silently under || true
    code, out = run(["--host", "claude", "--check"], env, source)
    assert code == 1 and "gone" in out and "guard is OFF" in out

    assert run(["--host", "claude"], env, source)[0] == 0  # re-install repairs it
    assert run(["--host", "claude", "--check"], env, source)[0] == 0
    (guard / "guard.py").unlink()
    code, out = run(["--host", "claude", "--check"], env, source)
    assert code == 1 and "guard.py does not exist" in out

    (guard / "guard.py").write_text("import sys; sys.exit(3)\n")
    code, out = run(["--host", "claude", "--check"], env, source)
    assert code == 1 and "exited with 3" in out


def test_check_runs_the_installed_guards_self_check(tmp_path, home):
    """The real skill installed: --check runs its `guard.py --self-check` with the hook's own
    interpreter and flags, and a guard that can no longer load is a FAIL saying what and how to
    repair it, where the empty call of before found nothing wrong (it exits 0, prints nothing)."""
    env = {"HOME": str(home), "PATH": os.environ.get("PATH", "")}
    assert run(["--host", "claude"], env, ROOT)[0] == 0
    assert run(["--host", "cursor"], env, ROOT)[0] == 0
    code, out = run(["--host", "claude", "--check"], env, ROOT)
    assert code == 0, out
    assert f"ok: {sys.executable} runs the guard: runaway-guard works: claude refused a" in out
    code, out = run(["--host", "cursor", "--check"], env, ROOT)
    assert code == 0 and "runaway-guard works: cursor refused a repeated call" in out, out
    assert not (home / ".local" / "state").exists()  # the person's state is not touched

    package = home / ".claude" / "skills" / "runaway-guard" / "skill" / "runaway_guard"
    hook = package / "hook.py"
    hook.write_text(hook.read_text() + "\ndef (\n")
    code, out = run(["--host", "claude", "--check"], env, ROOT)
    assert code == 1
    fails = [line for line in out.splitlines() if line.startswith("FAIL")]
    failed = fails[0]
    assert fails == [failed] * len(GUARD_EVENTS["claude"])  # one per event it is installed for
    assert failed.startswith("FAIL: the guard's self-check exited with 1: runaway-guard is broken")
    assert "runaway_guard.hook cannot be loaded: SyntaxError" in failed
    assert failed.endswith("reinstall with: python3 installer/install.py --host claude")
    assert run(["--host", "cursor", "--check"], env, ROOT)[0] == 0  # its own copy is whole

    assert run(["--host", "claude"], env, ROOT)[0] == 0  # re-install repairs it
    assert run(["--host", "claude", "--check"], env, ROOT)[0] == 0
    (package / "__init__.py").write_text("import nothing_of_the_kind\n")
    code, out = run(["--host", "claude", "--check"], env, ROOT)
    assert code == 1 and "the runaway_guard package cannot be imported: ModuleNotFoundError" in out

    (package.parent / "guard.py").write_text("import sys\n")  # an older guard, or not a guard
    code, out = run(["--host", "claude", "--check"], env, ROOT)
    assert code == 1 and "did not answer --self-check" in out and "may be OFF" in out


def test_check_sees_codex_trust_record(tmp_path, source, home):
    env = {"HOME": str(home)}
    assert run(["--host", "codex"], env, source)[0] == 0
    hooks = home / ".codex" / "hooks.json"
    handler = parse(hooks)["hooks"][EVENT][0]["hooks"][0]
    canonical = json.dumps(
        {
            "event_name": "pre_tool_use",
            "hooks": [{**handler, "async": False}],
        },
        sort_keys=True,
        separators=(",", ":"),
    )
    digest = "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()
    config = home / ".codex" / "config.toml"
    config.write_text(f'[hooks.state."{hooks}:pre_tool_use:0:0"]\ntrusted_hash = "{digest}"\n')
    code, out = run(["--host", "codex", "--check"], env, source)
    assert code == 0 and "trusted hash for this hook is recorded" in out
    config.write_text(f'[hooks.state."{hooks}:pre_tool_use:0:0"]\ntrusted_hash = "sha256:00"\n')
    code, out = run(["--host", "codex", "--check"], env, source)
    assert "MODIFIED" in out


# --------------------------------------------------------------------------- property test

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
guard_commands = st.builds(
    lambda py, prefix: f"{py} '{prefix}/runaway-guard/skill/guard.py' || true",
    st.sampled_from(["python3", "/usr/bin/python3", "'/opt/my py/bin/python'"]),
    st.sampled_from(["/old", "~/.claude/skills", "/a b/c"]),
)
handlers = st.one_of(
    st.fixed_dictionaries(
        {"type": st.just("command"), "command": st.text(max_size=20)},
        optional={"timeout": st.integers(1, 600), "async": st.booleans()},
    ),
    st.fixed_dictionaries(
        {"type": st.just("command"), "command": guard_commands},
        optional={"timeout": st.integers(1, 600), "statusMessage": st.text(max_size=5)},
    ),
    json_values,
)
groups = st.one_of(
    st.fixed_dictionaries(
        {"hooks": st.lists(handlers, max_size=3)},
        optional={"matcher": st.sampled_from(["", "*", "Bash", "Edit|Write", "mcp__.*"])},
    ),
    json_values,
)
events = st.dictionaries(
    st.sampled_from(["PreToolUse", "PostToolUse", "Stop", "SessionStart", "Other"]),
    st.lists(groups, max_size=4),
    max_size=4,
)
settings_objects = st.builds(
    lambda extra, hooks, where: (
        ({**extra, "hooks": hooks} if where == "end" else {"hooks": hooks, **extra})
        if where != "none"
        else extra
    ),
    st.dictionaries(st.text(max_size=8).filter(lambda k: k != "hooks"), json_values, max_size=5),
    events,
    st.sampled_from(["end", "start", "none"]),
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    obj=settings_objects,
    host=st.sampled_from(["claude", "codex"]),
    indent=st.sampled_from([None, 2, 4]),
)
def test_property_install_uninstall(obj, host, indent):
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        source = make_source(tmp_path / "src")
        home = tmp_path / "home"
        target = settings_path(host, "user", home, tmp_path)
        target.parent.mkdir(parents=True)
        target.write_text(json.dumps(obj, indent=indent, ensure_ascii=False), encoding="utf-8")
        env = {"HOME": str(home)}

        assert run(["--host", host], env, source)[0] == 0
        installed = parse(target)
        assert same(without_guard(installed, host), without_guard(obj, host))
        assert guard_handlers(installed)
        once = target.read_bytes()
        assert run(["--host", host], env, source)[0] == 0
        assert target.read_bytes() == once
        assert len(backups(target)) == 1
        assert run(["--host", host, "--uninstall"], env, source)[0] == 0
        assert same(parse(target), without_guard(obj, host))
        shutil.rmtree(tmp_path / "src")


def test_cursor_command_allows_the_call_when_the_guard_cannot_start(tmp_path, source, home):
    """Cursor's CLI blocks a call whose hook printed nothing: a missing interpreter must not."""
    assert run(["--host", "cursor"], {"HOME": str(home)}, source)[0] == 0
    installed = parse(home / ".cursor" / "hooks.json")["hooks"]["preToolUse"][0]["command"]
    broken = installed.replace(hook_list.sh_quote(sys.executable), "/nonexistent/python3")
    done = subprocess.run(["sh", "-c", broken], input=b"{}", capture_output=True, check=True)
    assert json.loads(done.stdout) == {"permission": "allow"}
    # the stand-in guard answers nothing and exits 0: the fallback is not printed then
    working = subprocess.run(["sh", "-c", installed], input=b"{}", capture_output=True)
    assert working.returncode == 0 and working.stdout == b""


# --------------------------------------------------------------------------- OpenCode's plugin


def test_opencode_plugin_installed_checked_and_removed(tmp_path, source, home):
    plugin = ROOT / "skill" / "runaway_guard" / "hosts" / "opencode_plugin.js"
    (source / "skill" / "runaway_guard" / "hosts").mkdir()
    shutil.copy(plugin, source / "skill" / "runaway_guard" / "hosts" / "opencode_plugin.js")
    xdg = tmp_path / "xdg"
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(xdg), "PATH": os.environ.get("PATH", "")}
    # XDG_CONFIG_HOME alone is no sign of OpenCode: its folder (or its CLI) is
    code, out = run(["--host", "all", "--dry-run"], with_clis(env, tmp_path, "claude"), source)
    assert "OpenCode" not in out.split("Not found")[0]

    assert run(["--host", "opencode"], env, source)[0] == 0
    folder = xdg / "opencode"
    installed = folder / "plugin" / "runaway-guard.js"
    text = installed.read_text()
    guard = folder / "skills" / "runaway-guard" / "skill" / "guard.py"
    assert f"const PYTHON = {json.dumps(sys.executable)};" in text
    assert f"const GUARD = {json.dumps(guard.as_posix())};" in text
    assert guard.is_file()
    assert not (folder / "opencode.json").exists()  # OpenCode's own config is never touched
    (folder / "plugin" / "mine.js").write_text("export const Mine = async () => ({});\n")

    code, out = run(["--host", "opencode", "--check"], env, source)
    assert code == 0, out
    assert (guard.parent / "ran").read_text() == "--self-check --host opencode"
    text = text.replace(json.dumps(sys.executable), json.dumps(str(tmp_path / "gone" / "python3")))
    installed.write_text(text)
    code, out = run(["--host", "opencode", "--check"], env, source)
    assert code == 1 and "is gone" in out
    assert run(["--host", "opencode"], env, source)[0] == 0  # re-install repairs it
    assert run(["--host", "opencode", "--check"], env, source)[0] == 0

    project = tmp_path / "proj"
    project.mkdir()
    assert run(["--host", "opencode", *scope_args("project", project)], env, source)[0] == 0
    assert (project / ".opencode" / "plugin" / "runaway-guard.js").is_file()
    assert (project / ".opencode" / "skills" / "runaway-guard" / "SKILL.md").is_file()

    assert run(["--host", "opencode", "--uninstall"], env, source)[0] == 0
    # what OpenCode loads from the folder ({plugin,plugins}/*.{ts,js}): the person's own only
    assert sorted(p.name for p in (folder / "plugin").glob("*.js")) == ["mine.js"]
    assert not (folder / "skills" / "runaway-guard").exists()

    installed.write_text("export const Someone = async () => ({});\n")  # not ours: refused
    assert run(["--host", "opencode"], env, source)[0] == 2
    assert installed.read_text().startswith("export const Someone")


# --------------------------------------------------------------------------- the host's plugin


def enable_plugin(path: Path, on: bool = True) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"enabledPlugins": {"runaway-guard@somewhere": on, "x@y": True}}))


def test_an_enabled_plugin_means_no_second_hook(tmp_path, source, home):
    env = {"HOME": str(home)}
    settings = home / ".claude" / "settings.json"
    enable_plugin(settings)
    before = settings.read_bytes()
    code, out = run(["--host", "claude"], env, source)
    assert code == 0
    assert "installed as Claude Code's plugin (runaway-guard@somewhere in " in out
    assert "no second hook was added" in out and "claude plugin uninstall" in out
    assert settings.read_bytes() == before
    assert not (home / ".claude" / "skills" / "runaway-guard").exists()
    code, out = run(["--host", "claude", "--check"], env, source)
    assert code == 0 and "ok: the plugin runs the guard" in out

    enable_plugin(settings, on=False)  # disabled: the installer's hook is the guard
    assert run(["--host", "claude"], env, source)[0] == 0
    assert guard_handlers(parse(settings))
    enable_plugin_too = json.loads(settings.read_text())
    enable_plugin_too["enabledPlugins"]["runaway-guard@somewhere"] = True
    settings.write_text(json.dumps(enable_plugin_too))
    code, out = run(["--host", "claude", "--check"], env, source)
    assert "both run the guard" in out
    code, out = run(["--host", "claude", "--uninstall"], env, source)
    assert code == 0 and not guard_handlers(parse(settings))
    assert "installed as Claude Code's plugin" in out and "it stays" in out


def test_a_project_plugin_counts_for_project_scope_only(tmp_path, source, home):
    env = {"HOME": str(home)}
    project = tmp_path / "proj"
    enable_plugin(project / ".claude" / "settings.json")
    assert run(["--host", "claude"], env, source)[0] == 0
    assert guard_handlers(parse(home / ".claude" / "settings.json"))
    code, out = run(["--host", "claude", *scope_args("project", project)], env, source)
    assert code == 0 and "no second hook was added" in out
    assert not (project / ".claude" / "settings.local.json").exists()


# Where each host's own command puts the plugin (Codex: plugins/cache/<marketplace>/<plugin>/
# <version>), and what the installer then says instead of adding a hook.
HOST_PLUGINS = [
    ("gemini", ".gemini/extensions/runaway-guard", ".gemini/settings.json",
     "Gemini CLI's extension", "gemini extensions uninstall runaway-guard", "extension"),
    ("codex", ".codex/plugins/cache/runaway-guard/runaway-guard/0.1.0", ".codex/hooks.json",
     "Codex's plugin", "codex plugin remove runaway-guard@runaway-guard", "plugin"),
]  # fmt: skip


@pytest.mark.parametrize("host, folder, settings, label, remove, called", HOST_PLUGINS)
def test_a_plugin_the_hosts_command_installed_means_no_second_hook(
    tmp_path, source, home, host, folder, settings, label, remove, called
):
    env = {"HOME": str(home)}
    (home / folder).mkdir(parents=True)
    code, out = run(["--host", host], env, source)
    assert code == 0 and f"installed as {label}" in out, out
    assert f"`{remove}`" in out
    assert not (home / settings).exists()
    code, out = run(["--host", host, "--check"], env, source)
    assert code == 0 and f"ok: the {called} runs the guard" in out


def test_the_check_of_a_codex_plugin_says_whether_its_hook_is_trusted(tmp_path, source, home):
    env = {"HOME": str(home)}
    (home / ".codex" / "plugins" / "cache" / "runaway-guard" / "runaway-guard").mkdir(parents=True)
    code, out = run(["--host", "codex", "--check"], env, source)
    assert "no trust record for the plugin's hook" in out, out
    key = "runaway-guard@runaway-guard:plugin.json#hooks[0]:pre_tool_use:0:0"
    (home / ".codex" / "config.toml").write_text(
        f'[hooks.state]\n[hooks.state."{key}"]\ntrusted_hash = "sha256:00"\n'
    )
    code, out = run(["--host", "codex", "--check"], env, source)
    assert code == 0 and "the plugin's hook has a trust record" in out, out
