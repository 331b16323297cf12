"""Run the real Qwen Code CLI (pinned 0.24.4) offline against the scripted model server.

Typical use in a test::

    from scripted_model import ScriptedModel
    from qwen_host import QwenHome, run_qwen, recorder_hooks

    with ScriptedModel({"chat": [step, ...]}) as model:
        home = QwenHome(tmp_path / "home", model.url, model="gpt-4.1")
        home.add_hooks(recorder_hooks(tmp_path / "hook_inputs.jsonl"))  # or run the installer
        run = run_qwen(home, "do the thing", project=tmp_path / "proj")
    run.returncode, run.events, run.chat_records(), run.hook_inputs

What was checked on Qwen Code 0.24.4 (see tests/fixtures/qwen/README.md):

- Offline: ``~/.qwen/settings.json`` with ``security.auth.selectedType: "openai"``, one
  ``modelProviders.openai`` entry per model (``baseUrl`` = the server's ``/v1``, ``envKey`` the
  variable that holds a dummy key) and ``model.name``. No login, no other network access.
- ``qwen -p <prompt> --approval-mode yolo --output-format json`` prints one JSON array of
  events (``system``/``assistant``/``user``/``result``) on stdout; ``stdin`` must be closed.
- ``$QWEN_HOME`` (default ``~/.qwen``) holds the settings and the sessions:
  ``projects/<slug>/chats/<session id>.jsonl`` (slug: the project path with every character
  outside ``[A-Za-z0-9]`` replaced by ``-``), subagents under
  ``projects/<slug>/subagents/<session id>/agent-<agent id>.jsonl``.
- Its own loop detector ends a run at the 5th consecutive identical call (same tool, same
  arguments); ``model.skipLoopDetection`` does not turn that one off.

Standard library only; Python 3.9 syntax.
"""

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pins
from codex_host import read_jsonl  # one JSONL reader for the e2e runners

__all__ = [
    "QWEN_VERSION",
    "QwenHome",
    "QwenRun",
    "project_slug",
    "qwen_bin",
    "recorder_hooks",
    "run_qwen",
]

QWEN_VERSION = "0.24.4"

# What the developer's own shell may carry that would leak into a run.
_DROP = ("QWEN_", "GEMINI_", "OPENAI_", "DASHSCOPE_", "CLAUDE_", "RUNAWAY_GUARD_", "XDG_")
KEY_VARIABLE = "SCRIPTED_MODEL_KEY"


def qwen_bin():
    return pins.cli("qwen")


def project_slug(project):
    """The folder name Qwen Code gives a project under ``projects/``."""
    return re.sub(r"[^A-Za-z0-9]", "-", str(Path(project).resolve()))


class QwenHome:
    """A throwaway HOME whose ``.qwen/settings.json`` points Qwen Code at the scripted model.

    ``model_url`` is the server root (``model.url``). ``models`` are the ids offered (the first,
    or ``model``, is used). ``settings`` is merged over the generated settings (top-level keys
    replaced, dicts one level deep merged).
    """

    def __init__(self, path, model_url, model="gpt-4.1", models=(), settings=None):
        self.path = Path(path)
        self.qwen_dir.mkdir(parents=True, exist_ok=True)
        self.model = model
        base = model_url.rstrip("/") + "/v1"
        ids = [model] + [m for m in models if m != model]
        data = {
            "security": {"auth": {"selectedType": "openai"}},
            "modelProviders": {
                "openai": [
                    {"id": m, "name": m, "baseUrl": base, "envKey": KEY_VARIABLE} for m in ids
                ]
            },
            "model": {"name": model},
            # no update checks, no usage statistics: nothing leaves the machine
            "general": {"enableAutoUpdate": False},
            "privacy": {"usageStatisticsEnabled": False},
        }
        for key, value in (settings or {}).items():
            if isinstance(value, dict) and isinstance(data.get(key), dict):
                data[key] = dict(data[key], **value)
            else:
                data[key] = value
        self.write_settings(data)

    @property
    def qwen_dir(self):
        return self.path / ".qwen"

    @property
    def settings_path(self):
        return self.qwen_dir / "settings.json"

    def settings(self):
        return json.loads(self.settings_path.read_text(encoding="utf-8"))

    def write_settings(self, data):
        self.settings_path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")

    def add_hooks(self, hooks):
        """Append Claude-shaped hook groups (``{"PreToolUse": [group, ...], ...}``)."""
        data = self.settings()
        mine = data.setdefault("hooks", {})
        for event, groups in hooks.items():
            mine.setdefault(event, []).extend(groups)
        self.write_settings(data)

    def project_dir(self, project):
        return self.qwen_dir / "projects" / project_slug(project)

    def chat_files(self, project):
        return sorted((self.project_dir(project) / "chats").glob("*.jsonl"))

    def subagent_files(self, project):
        return sorted((self.project_dir(project) / "subagents").glob("*/agent-*.jsonl"))


def recorder_hooks(log_path, events=("PreToolUse",), answers=None, python=sys.executable):
    """Hook groups that append each stdin payload to ``log_path`` (JSON lines, verbatim), and
    what the session file held at that moment to ``<log_path>.snapshots`` (line count and the
    response ids of its ``api_response`` records).

    ``answers`` (optional): path of a JSON file ``{event: answer or [answer per firing]}``; an
    answer ``{"exit": N, "stderr": "..."}`` exits with N instead of printing.
    """
    script = Path(log_path).with_suffix(".recorder.py")
    script.write_text(_RECORDER, encoding="utf-8")
    groups = {}
    for event in events:
        command = " ".join(
            shlex.quote(str(p)) for p in (python, script, log_path, event, answers or "")
        )
        groups[event] = [{"hooks": [{"type": "command", "command": command, "timeout": 30}]}]
    return groups


_RECORDER = r"""import json, os, sys
log, event, answers = sys.argv[1], sys.argv[2], sys.argv[3]
data = sys.stdin.read()
seen = 0
if os.path.exists(log):
    with open(log) as f:
        seen = sum(1 for line in f if json.loads(line).get("hook_event_name") == event)
with open(log, "a") as f:
    f.write(data.strip() + "\n")
ids, lines = [], 0
try:  # what the session file held when the hook ran (nothing yet: 0 lines)
    with open(json.loads(data).get("transcript_path") or "") as f:
        for line in f:
            lines += 1
            ui = (json.loads(line).get("systemPayload") or {}).get("uiEvent") or {}
            if ui.get("event.name") == "qwen-code.api_response":
                ids.append(ui.get("response_id"))
except (OSError, ValueError, AttributeError):
    pass
snap = {"event": event, "tool_call_id": json.loads(data).get("tool_call_id"), "lines": lines,
        "response_ids": ids}
with open(log + ".snapshots", "a") as f:
    f.write(json.dumps(snap) + "\n")
if answers and os.path.exists(answers):
    with open(answers) as f:
        answer = json.load(f).get(event)
    if isinstance(answer, list):
        answer = answer[seen] if seen < len(answer) else None
    if isinstance(answer, dict) and "exit" in answer:
        sys.stderr.write(answer.get("stderr", ""))
        sys.exit(answer["exit"])
    if answer is not None:
        print(json.dumps(answer))
"""


class QwenRun:
    """The outcome of one ``qwen -p``."""

    def __init__(self, args, returncode, stdout, stderr, home, project, hook_log=None):
        self.args = args
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.home = home
        self.project = Path(project)
        self.hook_log = Path(hook_log) if hook_log else None

    @property
    def events(self):
        """The ``--output-format json`` events ([] when stdout is not one JSON array)."""
        try:
            out = json.loads(self.stdout)
        except ValueError:
            return []
        return out if isinstance(out, list) else []

    @property
    def result(self):
        return next((e for e in self.events if e.get("type") == "result"), None)

    @property
    def session_id(self):
        for event in self.events:
            if event.get("session_id"):
                return event["session_id"]
        files = self.home.chat_files(self.project)
        return files[-1].stem if files else None

    def tool_uses(self):
        """Every tool call the CLI reported, in order (``{"id", "name", "input"}``)."""
        out = []
        for event in self.events:
            if event.get("type") != "assistant":
                continue
            for block in (event.get("message") or {}).get("content") or []:
                if block.get("type") == "tool_use":
                    out.append(block)
        return out

    def tool_results(self):
        """Every tool result the CLI reported (``{"tool_use_id", "is_error", "content"}``)."""
        out = []
        for event in self.events:
            if event.get("type") != "user":
                continue
            content = (event.get("message") or {}).get("content")
            for block in content if isinstance(content, list) else []:
                if block.get("type") == "tool_result":
                    out.append(block)
        return out

    def chat_path(self):
        sid = self.session_id
        path = self.home.project_dir(self.project) / "chats" / f"{sid}.jsonl"
        return path if sid and path.exists() else None

    def chat_records(self):
        path = self.chat_path()
        return read_jsonl(path) if path else []  # the path exists

    def api_responses(self):
        """The ``qwen-code.api_response`` telemetry of the session (main and subagents)."""
        out = []
        for record in self.chat_records():
            event = ((record.get("systemPayload") or {}).get("uiEvent")) or {}
            if event.get("event.name") == "qwen-code.api_response":
                out.append(event)
        return out

    @property
    def hook_inputs(self):
        return read_jsonl(self.hook_log) if self.hook_log and self.hook_log.exists() else []

    def describe(self):
        return (
            f"qwen exited {self.returncode}\n--- stdout ---\n{self.stdout[-3000:]}\n"
            f"--- stderr ---\n{self.stderr[-3000:]}"
        )


def qwen_env(home, extra=None):
    """The environment of one run: the person's HOME, a dummy key, nothing of the developer's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_DROP)}
    env.update(
        {
            "HOME": str(home.path),
            KEY_VARIABLE: "scripted-dummy-key",
            "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1",
            "NO_COLOR": "1",
            "CI": "1",
        }
    )
    env.update({k: str(v) for k, v in (extra or {}).items()})
    return env


def run_qwen(
    home,
    prompt,
    project,
    env=None,
    timeout=120,
    args=(),
    output_format="json",
    approval_mode="yolo",
    hook_log=None,
):
    """``qwen -p <prompt>`` in ``project`` with ``home`` as HOME; returns a QwenRun."""
    binary = qwen_bin()
    if not binary:
        raise FileNotFoundError("Qwen Code CLI not installed: run tests/e2e/hosts_install.sh")
    project = Path(project)
    project.mkdir(parents=True, exist_ok=True)
    argv = [
        binary,
        "-p",
        prompt,
        "--approval-mode",
        approval_mode,
        "--output-format",
        output_format,
        *args,
    ]
    proc = subprocess.run(
        argv,
        cwd=str(project),
        env=qwen_env(home, env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return QwenRun(argv, proc.returncode, proc.stdout, proc.stderr, home, project, hook_log)
