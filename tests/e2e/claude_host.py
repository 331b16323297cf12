"""Run the real Claude Code CLI in print mode, offline, against the scripted model.

    with ScriptedModel(scenario) as model:
        home = prepare_home(tmp_path / "home", settings={"hooks": ...})
        run = run_claude("do the thing", model.url, home=home, cwd=tmp_path / "proj")
        run.result["total_cost_usd"], run.transcript, run.session_dir

The HOME is a throwaway folder: Claude Code writes ``$HOME/.claude.json``, ``$HOME/.claude/``
(settings, ``projects/<cwd with non-alphanumerics as ->/<session>.jsonl``) there. We run as root,
where Claude Code refuses ``--dangerously-skip-permissions``, so the tools are allowed through
``permissions.allow`` in ``$HOME/.claude/settings.json`` instead (print mode denies anything that
would need a prompt). ``prepare_home`` merges into an existing settings file, so the project's
installer may run before or after it.

Stdlib only; the CLI comes from tests/e2e/hosts_install.sh (or ``$RUNAWAY_GUARD_CLAUDE_BIN``):
the pinned version, or the one ``$RUNAWAY_GUARD_CLAUDE_VERSION`` names.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pins

HERE = Path(__file__).resolve().parent
PACKAGE = "@anthropic-ai/claude-code"
VERSION_VARIABLE = "RUNAWAY_GUARD_CLAUDE_VERSION"
CLAUDE_VERSION = pins.wanted(VERSION_VARIABLE)

DEFAULT_ALLOW = [
    "Bash",
    "Read",
    "Write",
    "Edit",
    "Glob",
    "Grep",
    "Agent",
    "WebSearch",
    "WebFetch",
    "TodoWrite",
    "NotebookEdit",
]

# Everything that would reach the network or slow a run down, switched off.
OFFLINE_ENV = {
    "ANTHROPIC_API_KEY": "test",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_BUG_COMMAND": "1",
    "DISABLE_NON_ESSENTIAL_MODEL_CALLS": "1",
    "CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY": "1",
    "CLAUDE_CODE_DISABLE_TERMINAL_TITLE": "1",
    "CLAUDE_CODE_ENABLE_TELEMETRY": "0",
    "NO_COLOR": "1",
}

# Inherited variables that would leak the developer's own configuration into a run.
_DROP_ENV_PREFIXES = ("ANTHROPIC_", "CLAUDE_", "CLAUDECODE", "OTEL_", "RUNAWAY_GUARD_")


def claude_bin():
    return pins.cli("claude")


def claude_pin() -> tuple:
    """(npm package, version variable) for harness.require_cli; nothing to check when
    ``$RUNAWAY_GUARD_CLAUDE_BIN`` names another binary."""
    other = os.environ.get("RUNAWAY_GUARD_CLAUDE_BIN")
    return (None, None) if other else (PACKAGE, VERSION_VARIABLE)


def deep_merge(base: dict, extra: dict) -> dict:
    """Merge ``extra`` into a copy of ``base``: dicts recursively, lists appended (without
    duplicates), scalars replaced."""
    out = dict(base)
    for key, value in extra.items():
        old = out.get(key)
        if isinstance(old, dict) and isinstance(value, dict):
            out[key] = deep_merge(old, value)
        elif isinstance(old, list) and isinstance(value, list):
            out[key] = old + [v for v in value if v not in old]
        else:
            out[key] = value
    return out


def config_dir(home) -> Path:
    return Path(home) / ".claude"


def prepare_home(home, settings: dict | None = None, allow=DEFAULT_ALLOW) -> Path:
    """Create (or update) a test HOME: ``.claude/settings.json`` with the tools allowed and
    ``settings`` merged in (e.g. ``{"hooks": {"PreToolUse": [...]}}``)."""
    home = Path(home)
    cfg = config_dir(home)
    cfg.mkdir(parents=True, exist_ok=True)
    path = cfg / "settings.json"
    current = json.loads(path.read_text()) if path.exists() else {}
    merged = deep_merge(current, {"permissions": {"allow": list(allow)}})
    if settings:
        merged = deep_merge(merged, settings)
    path.write_text(json.dumps(merged, indent=2) + "\n")
    return home


def claude_env(home, base_url: str, env: dict | None = None) -> dict:
    out = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(_DROP_ENV_PREFIXES) and k not in ("HOME", "XDG_CONFIG_HOME")
    }
    out.update(OFFLINE_ENV)
    out["HOME"] = str(home)
    out["ANTHROPIC_BASE_URL"] = base_url
    # keep the guard's state inside the throwaway HOME as well
    out.setdefault("XDG_STATE_HOME", str(Path(home) / ".local" / "state"))
    out.setdefault("XDG_CONFIG_HOME", str(Path(home) / ".config"))
    if env:
        out.update(env)
    return out


def project_dir_name(cwd) -> str:
    """Claude Code's folder name for a project: every non-alphanumeric char becomes ``-``."""
    return re.sub(r"[^A-Za-z0-9]", "-", str(cwd))


class ClaudeRun:
    """The outcome of one ``claude -p`` run."""

    def __init__(self, args, proc, home, cwd, output_format):
        self.args = args
        self.returncode = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.home = Path(home)
        self.cwd = Path(cwd)
        self.events: list = []
        self.result: dict = {}
        if output_format == "stream-json":
            for line in proc.stdout.splitlines():
                line = line.strip()
                if line.startswith("{"):
                    try:
                        self.events.append(json.loads(line))
                    except ValueError:
                        pass
            results = [e for e in self.events if e.get("type") == "result"]
            self.result = results[-1] if results else {}
        else:
            text = proc.stdout.strip()
            try:
                self.result = json.loads(text) if text else {}
            except ValueError:
                # a trailing line of noise: take the last line that parses
                for line in reversed(text.splitlines()):
                    try:
                        self.result = json.loads(line)
                        break
                    except ValueError:
                        continue

    @property
    def session_id(self):
        sid = self.result.get("session_id")
        if sid:
            return sid
        for e in self.events:
            if e.get("session_id"):
                return e["session_id"]
        return None

    @property
    def projects_dir(self) -> Path:
        return config_dir(self.home) / "projects"

    @property
    def transcript(self):
        """``$HOME/.claude/projects/<project>/<session>.jsonl`` (None if not written)."""
        sid = self.session_id
        if not sid:
            return None
        expected = self.projects_dir / project_dir_name(self.cwd) / f"{sid}.jsonl"
        if expected.exists():
            return expected
        found = sorted(self.projects_dir.glob(f"*/{sid}.jsonl"))
        return found[0] if found else None

    @property
    def session_dir(self):
        """``<project>/<session>/`` (subagents/, tool-results/ ...), or None."""
        t = self.transcript
        if t is None:
            return None
        d = t.with_suffix("")
        return d if d.is_dir() else None

    def subagent_transcripts(self) -> list:
        d = self.session_dir
        return sorted(d.rglob("agent-*.jsonl")) if d else []

    def records(self, path=None) -> list:
        path = path or self.transcript
        out = []
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                line = line.strip()
                if line:
                    out.append(json.loads(line))
        return out

    def __repr__(self) -> str:
        return (
            f"ClaudeRun(rc={self.returncode}, session={self.session_id}, "
            f"cost={self.result.get('total_cost_usd')}, stderr={self.stderr[-300:]!r})"
        )


def run_claude(
    prompt: str,
    base_url: str,
    *,
    home,
    cwd,
    model: str = "claude-sonnet-4-6",
    settings: dict | None = None,
    output_format: str = "json",
    extra_args=(),
    env: dict | None = None,
    timeout: float = 180,
) -> ClaudeRun:
    """Run ``claude -p <prompt> --output-format <fmt> --model <model>`` in ``cwd`` with a
    fresh (or prepared) HOME pointed at ``base_url``."""
    home = Path(home)
    cwd = Path(cwd)
    cwd.mkdir(parents=True, exist_ok=True)
    if settings is not None or not (config_dir(home) / "settings.json").exists():
        prepare_home(home, settings)
    args = [claude_bin(), "-p", prompt, "--output-format", output_format, "--model", model]
    if output_format == "stream-json":
        args.append("--verbose")  # required by the CLI for stream-json in print mode
    args.extend(extra_args)
    proc = subprocess.run(
        args,
        cwd=str(cwd),
        env=claude_env(home, base_url, env),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    return ClaudeRun(args, proc, home, cwd, output_format)


def save_fixture(run: ClaudeRun, dest) -> Path:
    """Copy the session's transcript, its ``<session>/`` folder (subagents ...) and the printed
    result (``result.json``) into ``dest``."""
    dest = Path(dest)
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    transcript = run.transcript
    if transcript is not None:
        shutil.copy2(transcript, dest / transcript.name)
        if run.session_dir is not None:
            shutil.copytree(run.session_dir, dest / run.session_dir.name)
    (dest / "result.json").write_text(json.dumps(run.result, indent=2) + "\n")
    return dest
