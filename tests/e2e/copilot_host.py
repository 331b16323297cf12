"""Run the real GitHub Copilot CLI (pinned 1.0.102) offline against the scripted model.

    with ScriptedModel({"chat": [step, ...]}) as model:
        run = run_copilot("do the thing", model.url, home=tmp_path / "home",
                          project=tmp_path / "proj")
    run.returncode, run.stdout, run.session_id, run.events, run.usage_records, run.tool_results

What was checked on 1.0.102 (tests/fixtures/copilot/README.md has the detail):

- ``COPILOT_OFFLINE=true`` with ``COPILOT_PROVIDER_BASE_URL`` (the scripted model's ``/v1``)
  needs no GitHub login and makes no other network call; the model speaks OpenAI Chat
  Completions (streamed, ``stream_options.include_usage``).
- ``copilot -p`` needs ``--allow-all-tools``; it exits 0 when the run ends, also after a hook
  stopped it. Hooks in ``$COPILOT_HOME/hooks/*.json`` always load; a project's hooks
  (``.github/hooks/``, ``.claude/settings*.json``) load in ``-p`` mode only in a trusted folder
  (``--trust-folder``).
- The first start unpacks ~235 MB into ``COPILOT_CACHE_HOME``: one cache under
  tests/e2e/.hosts/ serves every run.
- ``$COPILOT_HOME/session-state/<sessionId>/events.jsonl`` is written by a debounced writer: it
  lags ~0.1 s behind the run and is only complete once the process has exited.

Stdlib only; Python 3.9 syntax.
"""

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pins
from codex_host import read_jsonl

__all__ = [
    "COPILOT_VERSION",
    "CopilotRun",
    "claude_hooks",
    "copilot_bin",
    "copilot_env",
    "read_jsonl",
    "recorder_command",
    "run_copilot",
    "user_hooks",
    "write_json",
]

COPILOT_VERSION = "1.0.102"

_HERE = Path(__file__).resolve().parent
CACHE = _HERE / ".hosts" / "copilot-cache"

# Inherited variables that would leak a developer's own configuration or credentials into a run.
_DROP = ("COPILOT_", "GITHUB_", "GH_", "RUNAWAY_GUARD_", "OPENAI_", "CLAUDE_", "XDG_")


def copilot_bin():
    return pins.cli("copilot")


def copilot_env(home, model_url, model="gpt-4.1", copilot_home=None, env=None):
    """The environment of one offline run: a throwaway HOME, nothing of the developer's own."""
    home = Path(home)
    out = {k: v for k, v in os.environ.items() if not k.startswith(_DROP)}
    out.update(
        {
            "HOME": str(home),
            "COPILOT_HOME": str(copilot_home or home / ".copilot"),
            "COPILOT_CACHE_HOME": str(CACHE),
            "COPILOT_OFFLINE": "true",
            "COPILOT_AUTO_UPDATE": "false",
            "COPILOT_PROVIDER_BASE_URL": model_url.rstrip("/") + "/v1",
            "COPILOT_PROVIDER_API_KEY": "scripted",
            "COPILOT_MODEL": model,
            "XDG_STATE_HOME": str(home / ".local" / "state"),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "NO_COLOR": "1",
        }
    )
    out.update({k: str(v) for k, v in (env or {}).items()})
    return out


def write_json(path, data):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return path


class CopilotRun:
    """The outcome of one ``copilot -p``."""

    def __init__(self, args, proc, copilot_home, project):
        self.args = args
        self.returncode = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.copilot_home = Path(copilot_home)
        self.project = Path(project)

    @property
    def session_id(self):
        """The session this run wrote (its ``Resume copilot --resume=<id>`` line)."""
        match = re.search(r"--resume=([0-9a-f-]{36})", self.stdout)
        if match:
            return match.group(1)
        dirs = self.session_dirs
        return dirs[-1].name if dirs else None

    @property
    def session_dirs(self):
        root = self.copilot_home / "session-state"
        if not root.exists():
            return []
        return sorted((p for p in root.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime)

    @property
    def events_path(self):
        sid = self.session_id
        return self.copilot_home / "session-state" / sid / "events.jsonl" if sid else None

    @property
    def events(self):
        path = self.events_path
        return read_jsonl(path) if path and path.exists() else []

    def of_type(self, kind):
        return [e.get("data") or {} for e in self.events if e.get("type") == kind]

    @property
    def usage_records(self):
        """``session.usage_record`` usages, one per model response (subagents included)."""
        return [d.get("usage") or {} for d in self.of_type("session.usage_record")]

    @property
    def tool_results(self):
        """``tool.execution_complete`` data in order (success, shellExecution, error)."""
        return self.of_type("tool.execution_complete")

    @property
    def ran(self):
        """The tool calls that really ran: completed without an ``error``."""
        return [r for r in self.tool_results if not r.get("error")]

    @property
    def aborted(self):
        return bool(self.of_type("abort"))

    def __repr__(self):
        return f"CopilotRun(rc={self.returncode!r}, session={self.session_id!r})"


def run_copilot(
    prompt,
    model_url,
    *,
    home,
    project,
    copilot_home=None,
    model="gpt-4.1",
    allow_all_tools=True,
    trust_folder=True,
    args=(),
    env=None,
    timeout=120,
    binary=None,
):
    """``copilot -p <prompt>`` in ``project`` (created if missing) with a throwaway HOME.

    ``COPILOT_HOME`` defaults to ``home/.copilot`` (where the installer writes the user hook
    file). ``env`` is added on top of ``copilot_env`` (e.g. the guard's limits). Stdin is
    closed. A timeout raises ``subprocess.TimeoutExpired``.
    """
    binary = binary or copilot_bin()
    if not binary:
        raise FileNotFoundError("Copilot CLI not installed: run tests/e2e/hosts_install.sh")
    home, project = Path(home), Path(project)
    home.mkdir(parents=True, exist_ok=True)
    project.mkdir(parents=True, exist_ok=True)
    run_env = copilot_env(home, model_url, model, copilot_home, env)
    argv = [binary, "-p", prompt, "--no-auto-update", "--no-color"]
    if allow_all_tools:
        argv.append("--allow-all-tools")
    if trust_folder:
        argv.append("--trust-folder")
    argv += list(args)
    proc = subprocess.run(
        argv,
        cwd=str(project),
        env=run_env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return CopilotRun(argv, proc, run_env["COPILOT_HOME"], project)


# ---------------------------------------------------------------------------------------------
# hook files for recording payloads (the guard itself is installed by installer/install.py)

_RECORDER = r"""import json, os, sys
raw = sys.stdin.read()
try:
    payload = json.loads(raw)
except ValueError:
    payload = raw
event = sys.argv[1]
entry = {"event": event, "payload": payload,
         "env": {k: v for k, v in os.environ.items()
                 if k in ("COPILOT_CLI", "COPILOT_HOOK_DIR", "COPILOT_PROJECT_DIR",
                          "CLAUDE_PROJECT_DIR", "COPILOT_CLI_BINARY_VERSION")}}
with open(%(log)r, "a") as fh:
    fh.write(json.dumps(entry) + "\n")
answer = %(answers)r.get(event)
for needle, rule_answer in %(rules)r.get(event, ()):
    if needle in raw:
        answer = rule_answer
        break
if answer is not None:
    sys.stdout.write(answer if isinstance(answer, str) else json.dumps(answer))
"""


def recorder_command(log_path, answers=None, rules=None, script_dir=None):
    """A command (to which the event name is appended) that logs each hook's stdin JSON to
    ``log_path`` as ``{"event", "payload", "env"}`` lines and prints ``answers[event]``, or the
    answer of the first ``(substring, answer)`` of ``rules[event]`` found in the raw stdin."""
    log_path = Path(log_path).resolve()
    script_dir = Path(script_dir) if script_dir else log_path.parent
    script_dir.mkdir(parents=True, exist_ok=True)
    script = script_dir / f"{log_path.stem}.hook.py"
    rules = {event: [tuple(rule) for rule in pairs] for event, pairs in (rules or {}).items()}
    values = {"log": str(log_path), "answers": dict(answers or {}), "rules": rules}
    script.write_text(_RECORDER % values)
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"


def user_hooks(command, events, timeout=30):
    """A Copilot hook file (camelCase events: camelCase payloads) running ``command <event>``."""
    hooks = {
        event: [{"type": "command", "bash": f"{command} {event}", "timeoutSec": timeout}]
        for event in events
    }
    return {"version": 1, "hooks": hooks}


def claude_hooks(command, events, matcher=".*"):
    """Claude Code settings (PascalCase events) running ``command <Event>``; Copilot reads them
    from a project's ``.claude/settings.json`` and ``.claude/settings.local.json``."""
    hooks = {
        event: [
            {"matcher": matcher, "hooks": [{"type": "command", "command": f"{command} {event}"}]}
        ]
        for event in events
    }
    return {"hooks": hooks}
