"""The guard installed as a Codex plugin with Codex's own commands, trusted the way a person
trusts it, then guarding ``codex exec`` with no trust bypass, then removed with Codex's command.

Seen on 0.171.0: ``codex plugin marketplace add <clone>`` reads ``.claude-plugin/marketplace.json``,
``codex plugin add`` copies the plugin to ``$CODEX_HOME/plugins/cache/<marketplace>/<plugin>/
<version>`` and takes its hook from ``.codex-plugin/plugin.json``; the hook runs only once the
person trusted it: the TUI's start screen "Hooks need review" → "Trust all and continue" (or
``t`` in ``/hooks``) records ``[hooks.state."<plugin id>:plugin.json#hooks[0]:pre_tool_use:0:0"]``
with ``trusted_hash`` (the hook's definition) and ``trusted_content_hash`` (the plugin's files) in
``config.toml``.
"""

from __future__ import annotations

import re
import subprocess
import time

import pytest
from codex_host import TUI_ANSWERED, CodexTui, codex_bin
from scripted_model import ScriptedModel
from test_codex import DEAR, IGNORES, Codex, Script, blocked_outputs, interrupted, serve, sh
from test_plugins import LOOP, NAME, checkout, host_cli

pytestmark = pytest.mark.e2e

PLUGIN = f"{NAME}@{NAME}"
TRUSTED = re.compile(
    r'\[hooks\.state\."' + re.escape(PLUGIN) + r':plugin\.json#hooks\[0\]:pre_tool_use:0:0"\]\s*'
    r'trusted_hash = "sha256:[0-9a-f]{64}"'
)


class Phases:
    """One scripted model for the whole test: each phase serves its own script."""

    def __init__(self):
        self.script = None

    def __call__(self, body):
        return self.script(body)


class CodexPlugin(Codex):
    """A person's CODEX_HOME with nothing installed, the clone, and Codex's plugin commands."""

    def __init__(self, tmp_path, model_url, **limits):
        super().__init__(tmp_path, model_url, scopes=(), **limits)
        self.home.config_path.write_text(self.home.config_path.read_text() + TUI_ANSWERED)
        self.source = checkout(tmp_path / NAME)

    def cli(self, *args: str) -> subprocess.CompletedProcess:
        env = self.person.env(CODEX_HOME=self.home.path)
        return host_cli(codex_bin(), env, self.person.project, "plugin", *args)

    def trust_in_the_tui(self) -> None:
        """What a person does at the next start of Codex: trust the new hook when asked."""
        env = self.person.host_env()
        with CodexTui(
            self.home,
            self.person.project,
            "",
            env,
            bypass_hook_trust=False,
            extra_args=["--no-daemon"],
        ) as tui:
            tui.wait_for("Hooks need review")
            tui.wait_for("Trust all and continue")
            # The choice is made only once the marker stands on it. A key pressed while the
            # screen is drawn but not yet listening is lost (seen once under load): press again.
            for _ in range(5):
                screen = tui.screen()
                if "› 2. Trust all and continue" in screen:
                    break
                tui.keys("Up" if "› 3." in screen else "Down")
                time.sleep(2)
            tui.wait_for("› 2. Trust all and continue")
            tui.keys("Enter")
            tui.wait_for("Ask Codex to do anything")
        assert TRUSTED.search(self.home.config_path.read_text()), self.home.config_path.read_text()

    def run_trusted(self):
        """``codex exec`` as a person runs it: no trust bypass (an untrusted hook would not run)."""
        return self.run(bypass_hook_trust=False)


def test_codex_plugin_trusted_guards_exec_then_remove_leaves_no_hook(tmp_path):
    phases = Phases()
    with ScriptedModel(serve(phases, count=80)) as model:
        codex = CodexPlugin(tmp_path, model.url)
        codex.cli("marketplace", "add", str(codex.source))
        codex.cli("add", PLUGIN)
        cache = codex.home.path / "plugins" / "cache" / NAME / NAME
        assert (cache / "0.1.0" / "skill" / "guard.py").is_file()

        # untrusted, the hook is skipped without a word: the whole loop runs
        phases.script = Script([sh(LOOP) for _ in range(6)], stop_after=1)
        run = codex.run_trusted()
        assert codex.marker() == ["x"] * 6 and not blocked_outputs(run)
        (codex.person.project / "ran.txt").unlink()

        check = codex.person.check("codex", CODEX_HOME=codex.home.path)
        assert "no trust record for the plugin's hook" in check.stdout, check.stdout
        codex.trust_in_the_tui()
        check = codex.person.check("codex", CODEX_HOME=codex.home.path)
        assert "ok: the plugin runs the guard" in check.stdout, check.stdout
        assert "the plugin's hook has a trust record" in check.stdout
        phases.script = Script([sh(LOOP) for _ in range(8)], stop_after=2)
        run = codex.run_trusted()
        assert codex.marker() == ["x"] * 5, run.stdout[-3000:]  # the 6th refused
        refused = blocked_outputs(run)
        assert refused and "already ran 5 times with the same result" in refused[0], refused
        (codex.person.project / "ran.txt").unlink()

        # a spend cap ends the run (Ctrl-C to codex exec), as with the installer's hook
        codex.person.limits["RUNAWAY_GUARD_MAX_USD"] = "2"
        phases.script = Script([sh(f"echo {n} >> ran.txt", DEAR) for n in range(1, 26)], IGNORES)
        run = codex.run_trusted()
        # a ceiling: the call before the response that would cross $2 is the last (issue 26)
        assert codex.marker() == ["1", "2", "3"], run.stdout[-3000:]
        assert run.returncode == 1 and interrupted(run), run.stderr[-2000:]
        status = codex.person.status(cache / "0.1.0", run.thread_id, CODEX_HOME=codex.home.path)
        assert status["host"] == "codex" and status["blocked"]["wire"] == "session"
        (codex.person.project / "ran.txt").unlink()
        del codex.person.limits["RUNAWAY_GUARD_MAX_USD"]

        codex.cli("remove", PLUGIN)
        codex.cli("marketplace", "remove", NAME)
        assert not cache.exists()
        config = codex.home.config_path.read_text()
        assert f'[plugins."{PLUGIN}"]' not in config, config
        phases.script = Script([sh(LOOP) for _ in range(7)], stop_after=1)
        run = codex.run_trusted()
        assert codex.marker() == ["x"] * 7, run.stdout[-3000:]  # no hook refused the 6th
    assert not (codex.home.path / "hooks.json").exists()


def test_codex_plugin_and_installer_hook_count_each_call_once(tmp_path):
    phases = Phases()
    with ScriptedModel(serve(phases, count=40)) as model:
        codex = CodexPlugin(tmp_path, model.url)
        # the installer's hook first: `codex plugin add` cannot see it
        codex.person.install("codex", CODEX_HOME=codex.home.path)
        codex.cli("marketplace", "add", str(codex.source))
        codex.cli("add", PLUGIN)
        check = codex.person.check("codex", CODEX_HOME=codex.home.path)
        assert "both run the guard" in check.stdout, check.stdout
        codex.trust_in_the_tui()  # "Trust all" trusts both hooks
        assert "hooks.json:pre_tool_use:0:0" in codex.home.config_path.read_text()
        phases.script = Script([sh(LOOP) for _ in range(8)], stop_after=2)
        run = codex.run_trusted()
    # both guards ran on every call (at once: Codex starts a call's hooks together), and the
    # loop is still refused at the 6th call, not the 3rd
    assert codex.marker() == ["x"] * 5, run.stdout[-3000:]
    status = codex.status(run.thread_id)
    assert status["runs_twice"] is True
    assert status["blocked"]["wire"] == "loop"
