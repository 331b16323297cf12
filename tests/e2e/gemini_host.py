"""Run the real Gemini CLI (pinned 0.61.0) headless and offline against the scripted model.

Typical use in a test::

    from scripted_model import ScriptedModel
    from gemini_host import GeminiHome, recorder_hooks, run_gemini

    with ScriptedModel({"gemini": [step, ...]}) as model:
        home = GeminiHome(tmp_path / "home", model.url)
        home.write_settings(recorder_hooks(tmp_path / "hooks.jsonl"))  # or run the installer
        run = run_gemini(home, "do the thing", tmp_path / "proj")
    run.returncode, run.output, run.session_files, run.hook_inputs

What was checked on Gemini CLI 0.61.0 (see tests/fixtures/gemini/README.md):

- ``GOOGLE_GEMINI_BASE_URL`` points the CLI at the server (plain http is allowed for
  127.0.0.1); ``GEMINI_API_KEY`` may be anything. The user settings must pin
  ``security.auth.selectedType: "gemini-api-key"``: otherwise the base URL selects the
  "gateway" auth, which headless mode refuses (exit 41, "Invalid auth method selected.").
- A headless run in a folder that is not trusted exits at once: ``GEMINI_CLI_TRUST_WORKSPACE``
  is set to ``true`` here (project-scope hooks then run, after a printed warning).
- Hooks come from ``~/.gemini/settings.json`` (user) and ``<project>/.gemini/settings.json``
  (project); both scopes run. Timeouts are in milliseconds.
- Sessions land in ``~/.gemini/tmp/<project slug>/chats/session-<time>-<id8>.jsonl``; a
  subagent's in ``chats/<session id>/<agent session id>.jsonl``.
- ``gemini -p`` exits 0 even when a hook stopped the run or the CLI's own loop detector did;
  the JSON on stdout says so in ``warnings`` / ``error``.

Standard library only; Python 3.9 syntax.
"""

import contextlib
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pins
from codex_host import read_jsonl  # one JSONL reader for the runners

__all__ = [
    "GEMINI_VERSION",
    "GeminiHome",
    "GeminiRun",
    "gemini_bin",
    "read_jsonl",
    "recorder_hooks",
    "run_gemini",
    "session_files",
]

GEMINI_VERSION = "0.61.0"

_DROP = ("GEMINI_", "GOOGLE_", "CLOUDSDK_")

# What every scripted run needs in ~/.gemini/settings.json (see the module docstring).
BASE_SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "privacy": {"usageStatisticsEnabled": False},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
}


def gemini_bin():
    return pins.cli("gemini")


def _merge(into, extra):
    """Merge ``extra`` into ``into`` (dicts recursively; a ``hooks.<Event>`` list is extended)."""
    for key, value in extra.items():
        old = into.get(key)
        if isinstance(old, dict) and isinstance(value, dict):
            _merge(old, value)
        elif isinstance(old, list) and isinstance(value, list):
            old.extend(value)
        else:
            into[key] = value
    return into


class GeminiHome:
    """A throwaway HOME whose ``~/.gemini/settings.json`` lets the CLI talk to the scripted model.

    ``settings`` is merged into ``BASE_SETTINGS`` (see ``_merge``).
    """

    def __init__(self, path, model_url, settings=None):
        self.path = Path(path)
        self.gemini_dir.mkdir(parents=True, exist_ok=True)
        self.model_url = model_url.rstrip("/")
        if not self.settings_path.exists():
            self.settings_path.write_text(json.dumps(BASE_SETTINGS, indent=2) + "\n")
        if settings:
            self.write_settings(settings)

    @property
    def gemini_dir(self):
        return self.path / ".gemini"

    @property
    def settings_path(self):
        return self.gemini_dir / "settings.json"

    def settings(self):
        return json.loads(self.settings_path.read_text())

    def write_settings(self, extra, replace=False):
        """Merge ``extra`` into the user settings (or write ``BASE_SETTINGS`` + ``extra``)."""
        current = json.loads(json.dumps(BASE_SETTINGS)) if replace else self.settings()
        self.settings_path.write_text(json.dumps(_merge(current, extra), indent=2) + "\n")
        return self.settings_path

    def sessions(self):
        return session_files(self.path)


class GeminiRun:
    """The outcome of one ``gemini -p``."""

    def __init__(self, args, proc, home, project, hook_log=None):
        self.args = args
        self.returncode = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.home = home
        self.project = Path(project)
        self.hook_log = hook_log

    @property
    def output(self):
        """The ``--output-format json`` object on stdout ({} when there is none)."""
        start = self.stdout.find("{")
        if start < 0:
            return {}
        with contextlib.suppress(ValueError):
            value = json.loads(self.stdout[start:])
            return value if isinstance(value, dict) else {}
        return {}

    @property
    def session_id(self):
        return self.output.get("session_id")

    @property
    def response(self):
        return self.output.get("response")

    @property
    def warnings(self):
        return list(self.output.get("warnings") or [])

    @property
    def stats(self):
        return self.output.get("stats") or {}

    @property
    def session_files(self):
        """Every session file under ``~/.gemini/tmp/*/chats`` (main and subagents)."""
        return session_files(self.home.path)

    @property
    def main_session(self):
        """The main session file of this run (named after the first 8 chars of its id)."""
        sid = self.session_id or ""
        for path in self.session_files:
            if path.parent.name == "chats" and path.stem.endswith(sid[:8]):
                return path
        return None

    @property
    def subagent_files(self):
        """The subagent session files of this run (``chats/<session id>/*.jsonl``)."""
        sid = self.session_id or "?"
        return [p for p in self.session_files if p.parent.name == sid]

    @property
    def hook_inputs(self):
        """Every payload the recorder hook logged (``recorder_hooks``), in order."""
        log = Path(self.hook_log) if self.hook_log else None
        return read_jsonl(log) if log and log.exists() else []

    def __repr__(self):
        return f"GeminiRun(rc={self.returncode!r}, sessions={len(self.session_files)})"


def session_files(home):
    """``<home>/.gemini/tmp/<slug>/chats/*.jsonl`` and ``chats/<id>/*.jsonl``, by path."""
    root = Path(home) / ".gemini" / "tmp"
    if not root.exists():
        return []
    found = list(root.glob("*/chats/*.jsonl")) + list(root.glob("*/chats/*/*.jsonl"))
    return sorted(found, key=str)


_RECORDER = r"""import json, sys
payload = json.loads(sys.stdin.read())
log = %(log)r
with open(log, "a") as fh:
    fh.write(json.dumps(payload) + "\n")
event = payload.get("hook_event_name")
answers = %(answers)r
rules = %(rules)r
answer = None
probe = json.dumps(payload.get("tool_input"))
for rule_event, needle, rule_answer in rules:
    if rule_event in (event, "*") and needle in probe:
        answer = rule_answer
        break
else:
    answer = answers.get(event)
    if isinstance(answer, list):
        n = 0
        with open(log) as fh:
            for line in fh:
                n += json.loads(line).get("hook_event_name") == event
        answer = answer[n - 1] if n - 1 < len(answer) else None
if answer is not None:
    sys.stdout.write(answer if isinstance(answer, str) else json.dumps(answer))
"""


def recorder_hooks(
    log_path,
    answers=None,
    events=("BeforeTool", "AfterTool", "BeforeModel"),
    timeout_ms=30000,
    rules=(),
    name="recorder",
):
    """A settings fragment whose hook appends each stdin JSON to ``log_path`` (one per line).

    ``answers``: ``{event: answer}`` where an answer is None (print nothing), a dict (printed as
    JSON), a raw str, or a list with one answer per call of that event in order (past the end:
    nothing). ``rules``: ``[(event or "*", substring, answer), ...]``; the first whose substring
    occurs in the JSON of ``tool_input`` picks the answer (before ``answers``).
    """
    log_path = Path(log_path).resolve()
    log_path.parent.mkdir(parents=True, exist_ok=True)
    script = log_path.parent / f"{log_path.stem}.hook.py"
    script.write_text(
        _RECORDER
        % {"log": str(log_path), "answers": dict(answers or {}), "rules": [list(r) for r in rules]}
    )
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"
    handler = {"name": name, "type": "command", "command": command, "timeout": timeout_ms}
    return {"hooks": {event: [{"matcher": "*", "hooks": [handler]}] for event in events}}


def run_gemini(
    home,
    prompt,
    project,
    *,
    model="gemini-2.5-flash",
    approval_mode="yolo",
    output_format="json",
    extra_args=(),
    env=None,
    timeout=120,
    hook_log=None,
    binary=None,
):
    """Run ``gemini -p <prompt>`` once in ``project`` (created if missing) with ``HOME=home``.

    ``model`` None leaves the CLI's default (``auto``: a router call picks the model). ``env``
    entries are added to a copy of the current environment without any ``GEMINI_*`` /
    ``GOOGLE_*`` variable. Returns a :class:`GeminiRun`; a timeout raises
    ``subprocess.TimeoutExpired``.
    """
    if not isinstance(home, GeminiHome):
        raise TypeError("home must be a GeminiHome")
    binary = binary or gemini_bin()
    if not binary:
        raise FileNotFoundError("Gemini CLI not installed: run tests/e2e/hosts_install.sh")
    project = Path(project)
    project.mkdir(parents=True, exist_ok=True)
    args = [binary, "-p", prompt]
    if approval_mode:
        args += ["--approval-mode", approval_mode]
    if output_format:
        args += ["--output-format", output_format]
    if model:
        args += ["-m", model]
    args += list(extra_args)
    run_env = {k: v for k, v in os.environ.items() if not k.startswith(_DROP)}
    run_env.update(
        {
            "HOME": str(home.path),
            "GEMINI_API_KEY": "scripted",
            "GOOGLE_GEMINI_BASE_URL": home.model_url,
            "GEMINI_CLI_TRUST_WORKSPACE": "true",
            "NO_COLOR": "1",
        }
    )
    if env:
        run_env.update({k: str(v) for k, v in env.items()})
    proc = subprocess.run(
        args,
        cwd=str(project),
        env=run_env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        encoding="utf-8",
        errors="replace",
        timeout=timeout,
    )
    return GeminiRun(args, proc, home, project, hook_log=hook_log)
