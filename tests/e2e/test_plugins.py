"""The guard installed through each host's own command, from the local checkout, offline.

The checkout is copied as a clone would have it (the files git tracks, or would), so that a
host copying the whole plugin folder does not also copy the developer's .venv and CLIs. Each
test installs with the host's command, runs a scripted session in which the model repeats one
call, and checks that the guard refuses it by the 6th call (the default limit: 5 identical
calls with identical results); the uninstall test then removes it with the host's command and
checks that no hook is left (the same loop runs to the end, nothing in the host's settings).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from claude_host import claude_bin, claude_env
from copilot_host import copilot_bin, copilot_env
from gemini_host import gemini_bin
from harness import ROOT, lines, slow_all
from runaway_guard import state_file
from scripted_model import ScriptedModel, bash, text, usage
from test_claude_code import Claude
from test_copilot_cli import Copilot, final, sh
from test_gemini_cli import NO_LOOP_DETECTION, Gemini, say
from test_gemini_cli import sh as gemini_sh

pytestmark = pytest.mark.e2e

NAME = "runaway-guard"
LOOP = "echo x >> ran.txt; echo same output"


LOCAL = shutil.ignore_patterns(".git", ".venv", ".hosts", "__pycache__", "*.pyc", ".*_cache")


def checkout(dest: Path) -> Path:
    """The repository as a fresh clone has it: tracked and new (not ignored) files (without git:
    everything but what a run makes locally)."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout.decode()
    except (OSError, subprocess.CalledProcessError):
        return Path(shutil.copytree(ROOT, dest, ignore=LOCAL))
    for rel in filter(None, listed.split("\0")):
        src = ROOT / rel
        if src.is_file():
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target)
    return dest


def host_cli(binary: str, env: dict, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """One of the host's own commands (plugin, marketplace, extensions ...), which must succeed."""
    proc = subprocess.run(
        [binary, *args],
        env=env,
        cwd=str(cwd),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    name = Path(binary).name
    assert proc.returncode == 0, f"{name} {' '.join(args)}: {proc.stdout}\n{proc.stderr}"
    return proc


def take_marker(person) -> list:
    """The commands that really ran (each appends to ran.txt); the marker starts afresh."""
    ran = lines(person.project / "ran.txt")
    (person.project / "ran.txt").unlink(missing_ok=True)
    return ran


def loop_steps(n: int = 8) -> list:
    return [bash(LOOP, "Check again", usage=usage(50, 10)) for _ in range(n)] + [text("Ok.")]


# --------------------------------------------------------------------------- Claude Code


class ClaudePlugin(Claude):
    """A person's HOME (nothing installed yet), the checkout, Claude Code's plugin commands."""

    def __init__(self, tmp_path: Path):
        super().__init__(tmp_path, scopes=())
        self.source = checkout(tmp_path / NAME)

    def cli(self, *args: str) -> subprocess.CompletedProcess:
        env = claude_env(self.person.home, "http://127.0.0.1:9", self.person.host_env())
        return host_cli(claude_bin(), env, self.person.project, *args)

    def install_plugin(self) -> None:
        self.cli("plugin", "marketplace", "add", str(self.source))
        self.cli("plugin", "install", f"{NAME}@{NAME}")

    def uninstall_plugin(self) -> None:
        self.cli("plugin", "uninstall", f"{NAME}@{NAME}")
        self.cli("plugin", "marketplace", "remove", NAME)

    @property
    def user_settings(self) -> dict:
        return json.loads(self.settings.read_text())

    def loop(self, steps):
        """A run of the scripted steps; the commands that really ran (the marker is reset)."""
        with ScriptedModel({"anthropic": steps}) as model:
            run = self.run(model)
        return run, take_marker(self.person)


def denied_commands(run) -> list:
    return [d["tool_input"].get("command") for d in run.result.get("permission_denials", [])]


def test_claude_code_validates_the_manifests(tmp_path):
    claude = ClaudePlugin(tmp_path)
    proc = claude.cli("plugin", "validate", "--json", str(claude.source))
    report = json.loads(proc.stdout)
    assert report["success"] is True, report
    assert report["manifest"]["type"] == "marketplace" and not report["manifest"]["errors"]
    # the hooks file that Gemini CLI reads is read by Claude Code too: it ignores those events
    for part in report["contents"]:
        assert not part["errors"], part
        for warning in part["warnings"]:
            assert "unknown hook event; entry ignored at runtime" in warning["message"], part
    # the tool calls, and the prompts and turn ends (spend with no tool call: hosts/_turns.py),
    # and the Agent tool's end (after a subagent: hosts/claude/)
    events = ["PreToolUse", "UserPromptSubmit", "Stop", "PostToolUse"]
    assert [h["event"] for h in report["provides"]["hooks"]] == events
    assert report["provides"]["skills"] == [f"{NAME}:{NAME}"]


def test_claude_code_plugin_guards_then_uninstall_leaves_no_hook(tmp_path):
    claude = ClaudePlugin(tmp_path)
    claude.install_plugin()
    assert claude.user_settings["enabledPlugins"] == {f"{NAME}@{NAME}": True}

    run, ran = claude.loop(slow_all(loop_steps()))
    assert ran == ["x"] * 5, run
    assert denied_commands(run) == [LOOP] * 3
    assert run.result["terminal_reason"] == "hook_stopped", run.result
    state = claude.person.state_dir / "sessions" / "claude" / f"{run.session_id}.state"
    assert state_file.read_state(str(state))["blocked"]["wire"] == "loop"
    assert "twice" not in claude.person.hook_log()  # the plugin's hook ran once per call

    # the installer sees the plugin and adds no second hook
    said = claude.person.install("claude")
    assert "installed as Claude Code's plugin" in said and "no second hook" in said, said
    assert "hooks" not in claude.user_settings
    check = claude.person.check("claude")
    assert check.returncode == 0 and "the plugin runs the guard" in check.stdout, check.stdout

    claude.uninstall_plugin()
    settings = claude.user_settings
    assert not settings.get("enabledPlugins") and not settings.get("extraKnownMarketplaces")
    assert "hooks" not in settings
    # nothing guards the loop any more, even with a model that answers at once
    run, ran = claude.loop(loop_steps())
    assert ran == ["x"] * 8, run
    assert run.result["terminal_reason"] == "completed", run.result
    assert not list((claude.person.state_dir / "sessions" / "claude").glob(f"{run.session_id}.*"))


def test_claude_code_plugin_and_installer_hook_count_each_call_once(tmp_path):
    claude = ClaudePlugin(tmp_path)
    claude.person.install("claude")  # the installer's hook first: the plugin command cannot see it
    claude.install_plugin()
    check = claude.person.check("claude")
    assert "both run the guard" in check.stdout, check.stdout

    run, ran = claude.loop(slow_all(loop_steps()))
    # two guards ran on every call, and the loop is still refused at the 6th call, not the 3rd
    assert ran == ["x"] * 5, run
    assert denied_commands(run) == [LOOP] * 3
    status = claude.status(run.session_id)
    assert status["runs_twice"] is True
    assert status["blocked"]["wire"] == "loop"


# --------------------------------------------------------------------------- Copilot CLI


class CopilotPlugin(Copilot):
    """A person's HOME (nothing installed yet), the checkout, Copilot CLI's plugin commands."""

    def __init__(self, tmp_path: Path, installs=()):
        super().__init__(tmp_path, installs=installs)
        self.source = checkout(tmp_path / NAME)

    def install_plugin(self) -> str:
        self.cli("plugin", "marketplace", "add", str(self.source))
        return self.cli("plugin", "install", f"{NAME}@{NAME}").stdout

    def cli(self, *args: str) -> subprocess.CompletedProcess:
        env = copilot_env(self.person.home, "http://127.0.0.1:9", env=self.person.host_env())
        return host_cli(copilot_bin(), env, self.person.project, *args)

    @property
    def user_settings(self) -> dict:
        return json.loads((self.copilot_home / "settings.json").read_text())

    def loop(self, n: int):
        """A run whose model repeats one command n times (answering at once); what ran."""
        with ScriptedModel({"chat": [sh(LOOP) for _ in range(n)] + [final()]}) as model:
            run = self.run(model)
        return run, take_marker(self.person)


def test_copilot_cli_plugin_guards_then_uninstall_leaves_no_hook(tmp_path):
    copilot = CopilotPlugin(tmp_path)
    said = copilot.install_plugin()
    assert "installed successfully" in said, said
    assert copilot.user_settings["enabledPlugins"] == {f"{NAME}@{NAME}": True}

    run, ran = copilot.loop(15)
    assert ran == ["x"] * 5, run.stdout[-3000:]
    assert run.aborted  # the guard ended the run
    state = copilot.person.state_dir / "sessions" / "copilot" / f"{run.session_id}.state"
    assert state_file.read_state(str(state))["blocked"]["wire"] == "loop"
    assert "twice" not in copilot.person.hook_log()

    said = copilot.person.install("copilot")
    assert "installed as Copilot CLI's plugin" in said and "no second hook" in said, said
    assert not (copilot.copilot_home / "hooks").exists()

    copilot.cli("plugin", "uninstall", f"{NAME}@{NAME}")
    copilot.cli("plugin", "marketplace", "remove", NAME)
    settings = copilot.user_settings
    # 1.0.102 keeps the plugin's id in enabledPlugins, switched off
    assert True not in settings.get("enabledPlugins", {}).values(), settings
    assert not settings.get("extraKnownMarketplaces"), settings
    run, ran = copilot.loop(8)
    assert ran == ["x"] * 8 and not run.aborted, run.stdout[-3000:]
    assert not (
        copilot.person.state_dir / "sessions" / "copilot" / f"{run.session_id}.state"
    ).exists()


def test_copilot_cli_plugin_and_installer_hook_count_each_call_once(tmp_path):
    """Copilot runs the installer's hook file (its own payloads) and the plugin's Claude-style
    entry for every call: each install claims the call in its own slot."""
    copilot = CopilotPlugin(tmp_path, installs=("copilot",))
    copilot.install_plugin()
    check = copilot.person.check("copilot")
    assert "both run the guard" in check.stdout, check.stdout
    run, ran = copilot.loop(15)
    assert ran == ["x"] * 5, run.stdout[-3000:]
    assert run.aborted
    status = copilot.status(run.session_id)
    assert status["blocked"]["wire"] == "loop" and status["runs_twice"] is True


# --------------------------------------------------------------------------- Gemini CLI


class GeminiExtension(Gemini):
    """A person's HOME, the checkout, Gemini CLI's extension commands. Gemini CLI's own loop
    detector is off: it stops an identical loop itself, before the guard's limit."""

    def __init__(self, tmp_path: Path, model_url: str, scopes=()):
        super().__init__(tmp_path, model_url, scopes=scopes, settings=NO_LOOP_DETECTION)
        self.source = checkout(tmp_path / NAME)

    def cli(self, *args: str) -> subprocess.CompletedProcess:
        # the person answers the "trust this folder?" question
        env = self.person.env(GEMINI_CLI_TRUST_WORKSPACE="true", NO_COLOR="1")
        return host_cli(gemini_bin(), env, self.person.project, *args)

    def install_extension(self) -> str:
        said = self.cli("extensions", "install", str(self.source), "--consent")
        return said.stdout + said.stderr

    @property
    def extension(self) -> Path:
        return self.home.gemini_dir / "extensions" / NAME

    def loop(self, model: ScriptedModel):
        """A run of the model's script; the commands that really ran (the marker is reset)."""
        self.home.model_url = model.url
        return self.run(), take_marker(self.person)


def gemini_loop(n: int) -> dict:
    return {"gemini": [gemini_sh(LOOP) for _ in range(n)] + [say("Done.")]}


def test_gemini_cli_validates_the_extension(tmp_path):
    gemini = GeminiExtension(tmp_path, "http://127.0.0.1:9")
    said = gemini.cli("extensions", "validate", str(gemini.source))
    assert "successfully validated" in said.stdout + said.stderr


def test_gemini_cli_extension_guards_then_uninstall_leaves_no_hook(tmp_path):
    with ScriptedModel(gemini_loop(8)) as model:
        gemini = GeminiExtension(tmp_path, model.url)
        said = gemini.install_extension()
        assert "installed successfully" in said, said
        run, ran = gemini.loop(model)
    assert ran == ["x"] * 5, run.stdout[-3000:]
    assert "Invalid hook event name" not in run.stderr  # the file holds Gemini's events only
    state = gemini.person.state_dir / "sessions" / "gemini" / f"{run.session_id}.state"
    assert state_file.read_state(str(state))["blocked"]["wire"] == "loop"
    assert "twice" not in gemini.person.hook_log()
    guard = gemini.extension / "skill" / "guard.py"
    assert guard.is_file()  # Gemini CLI ran its own copy: ${extensionPath} is that folder

    said = gemini.person.install("gemini")
    assert "installed as Gemini CLI's extension" in said and "no second hook" in said, said
    assert "hooks" not in json.loads(gemini.home.settings_path.read_text())

    gemini.cli("extensions", "uninstall", NAME)
    assert not gemini.extension.exists()
    with ScriptedModel(gemini_loop(8)) as model:
        run, ran = gemini.loop(model)
    assert ran == ["x"] * 8, run.stdout[-3000:]
    assert not list((gemini.person.state_dir / "sessions" / "gemini").glob(f"{run.session_id}.*"))


def test_gemini_cli_extension_and_installer_hook_count_each_call_once(tmp_path):
    """Both get the same payload, timestamp included: the second answers as the first did."""
    with ScriptedModel(gemini_loop(8)) as model:
        gemini = GeminiExtension(tmp_path, model.url, scopes=("user",))
        gemini.install_extension()
        check = gemini.person.check("gemini")
        assert "both run the guard" in check.stdout, check.stdout
        run, ran = gemini.loop(model)
    assert ran == ["x"] * 5, run.stdout[-3000:]
    status = gemini.status(run.session_id)
    assert status["blocked"]["wire"] == "loop" and status["runs_twice"] is True
