"""Run the real Codex CLI offline against the scripted model server: the pinned version, or
the one ``$RUNAWAY_GUARD_CODEX_VERSION`` names.

Typical use in a test::

    from scripted_model import ScriptedModel
    from codex_host import CodexHome, run_codex, recorder_hooks

    with ScriptedModel({"openai": [step, ...]}) as model:
        home = CodexHome(tmp_path / "codex-home", model.url, model="gpt-5.5")
        home.write_hooks(recorder_hooks(tmp_path / "hook_inputs.jsonl"))  # or run the installer
        run = run_codex(home, "do the thing", project=tmp_path / "proj")
    run.returncode, run.stdout, run.events, run.rollouts, run.hook_inputs

What was checked on Codex 0.169.0 (see tests/fixtures/codex/NOTES.md):

- A custom ``[model_providers.mock]`` without ``env_key`` needs no auth: no API key, no login.
- ``$CODEX_HOME/hooks.json`` runs under ``--dangerously-bypass-hook-trust`` without any trust
  entry in ``config.toml``; without the flag (and without trust) it is skipped silently.
- ``codex exec`` prints "Reading additional input from stdin..." and waits unless stdin is closed:
  stdin is always ``/dev/null`` here.
- Rollouts land in ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl``
  (one file per thread; subagents have their own).

Standard library only; Python 3.9 syntax.
"""

import contextlib
import itertools
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pins

__all__ = [
    "CODEX_VERSION",
    "AgentRouter",
    "CodexHome",
    "CodexRun",
    "CodexTui",
    "agent_name",
    "codex_bin",
    "codex_pin",
    "read_jsonl",
    "recorder_hooks",
    "rollout_files",
    "run_codex",
    "turn_metadata",
]

PACKAGE = "@openai/codex"
VERSION_VARIABLE = "RUNAWAY_GUARD_CODEX_VERSION"
CODEX_VERSION = pins.wanted(VERSION_VARIABLE)


def codex_bin():
    return pins.cli("codex")


def codex_pin():
    """(npm package, version variable) for harness.require_cli; nothing to check when
    ``$RUNAWAY_GUARD_CODEX_BIN`` names another binary."""
    if os.environ.get("RUNAWAY_GUARD_CODEX_BIN"):
        return (None, None)
    return (PACKAGE, VERSION_VARIABLE)


def _toml_str(value):
    return json.dumps(str(value))  # a JSON string is a valid TOML basic string


class CodexHome:
    """A throwaway ``CODEX_HOME`` whose config points Codex at the scripted model server.

    ``model_url`` is the server root (``model.url``); the provider's ``base_url`` is
    ``<model_url>/v1``. ``config_extra`` is appended verbatim to ``config.toml`` (TOML text).
    """

    def __init__(self, path, model_url, model="gpt-5.5", config_extra="", features=None):
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.model_url = model_url.rstrip("/")
        self.model = model
        lines = [
            f"model = {_toml_str(model)}",
            'model_provider = "mock"',
            'model_reasoning_effort = "medium"',
            "",
        ]
        if features:
            lines.append("[features]")
            for name, on in sorted(features.items()):
                lines.append("{} = {}".format(name, "true" if on else "false"))
            lines.append("")
        lines += [
            "[model_providers.mock]",
            'name = "mock"',
            "base_url = {}".format(_toml_str(self.model_url + "/v1")),
            'wire_api = "responses"',
            "request_max_retries = 0",
            "stream_max_retries = 0",
            "stream_idle_timeout_ms = 60000",
            "",
        ]
        text = "\n".join(lines)
        if config_extra:
            text += "\n" + config_extra.strip() + "\n"
        self.config_path.write_text(text)

    @property
    def config_path(self):
        return self.path / "config.toml"

    @property
    def hooks_path(self):
        return self.path / "hooks.json"

    @property
    def sessions(self):
        return self.path / "sessions"

    def write_hooks(self, hooks):
        """Place a hooks.json: a dict (its JSON), a str (raw text) or a path to copy."""
        if isinstance(hooks, dict):
            text = json.dumps(hooks, indent=2) + "\n"
        elif isinstance(hooks, Path):
            text = hooks.read_text()
        else:
            text = str(hooks)
        self.hooks_path.write_text(text)
        return self.hooks_path

    def rollouts(self):
        return rollout_files(self.path)


class CodexRun:
    """The outcome of one ``codex exec``."""

    def __init__(self, args, returncode, stdout, stderr, home, project, hook_log=None):
        self.args = args
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.home = home
        self.project = project
        self.hook_log = hook_log

    @property
    def events(self):
        """The ``--json`` JSONL events on stdout (non-JSON lines skipped)."""
        out = []
        for line in self.stdout.splitlines():
            line = line.strip()
            if line.startswith("{"):
                with contextlib.suppress(ValueError):
                    out.append(json.loads(line))
        return out

    @property
    def thread_id(self):
        for event in self.events:
            if event.get("type") == "thread.started":
                return event.get("thread_id")
        return None

    @property
    def rollouts(self):
        """Every rollout file under ``$CODEX_HOME/sessions`` (main thread and subagents)."""
        return rollout_files(self.home.path)

    @property
    def main_rollout(self):
        """The rollout of the root thread (the one named after ``thread.started``)."""
        tid = self.thread_id
        for path in self.rollouts:
            if tid and path.name.endswith(tid + ".jsonl"):
                return path
        return self.rollouts[0] if self.rollouts else None

    @property
    def hook_inputs(self):
        if self.hook_log is None or not Path(self.hook_log).exists():
            return []
        return read_jsonl(self.hook_log)

    def __repr__(self):
        return f"CodexRun(rc={self.returncode!r}, rollouts={len(self.rollouts)})"


def turn_metadata(request):
    """The ``x-codex-turn-metadata`` object Codex puts in ``client_metadata`` of every request.

    It carries ``session_id`` (root thread), ``thread_id``, ``agent_name`` (``/root`` for the main
    thread, ``/root/<task_name>`` for a subagent), ``turn_id``, ``model`` and more.
    """
    meta = (request or {}).get("client_metadata") or {}
    raw = meta.get("x-codex-turn-metadata")
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return {}
    return raw if isinstance(raw, dict) else {}


def agent_name(request):
    """``/root`` for the main thread, ``/root/<task_name>`` for a subagent (None if unknown)."""
    return turn_metadata(request).get("agent_name")


class AgentRouter:
    """A callable step that serves a separate script to each Codex agent (main and subagents).

    ``AgentRouter({"/root": [step, ...], "/root/worker": [step, ...]})``; give the scripted model
    ``[router] * n`` (n >= the total number of requests). An agent whose script is exhausted (or
    that has none) gets ``default`` (a final text). Requests are dispatched on ``agent_name`` in
    the request's turn metadata; ``self.seen`` records (agent, request) in arrival order.
    """

    def __init__(self, scripts, default=None):
        self.scripts = {name: list(steps) for name, steps in scripts.items()}
        self.default = default or {"text": "done", "usage": {"input_tokens": 1, "output_tokens": 1}}
        self.seen = []

    def __call__(self, request):
        name = agent_name(request) or "/root"
        self.seen.append((name, request))
        steps = self.scripts.get(name) or []
        step = steps.pop(0) if steps else self.default
        return step(request) if callable(step) else step


def rollout_files(codex_home):
    """Rollouts under ``<codex_home>/sessions/YYYY/MM/DD/``, oldest first (by name, then path)."""
    root = Path(codex_home) / "sessions"
    if not root.exists():
        return []
    return sorted(root.glob("*/*/*/rollout-*.jsonl"), key=lambda p: (p.name, str(p)))


def read_jsonl(path):
    out = []
    with open(str(path), encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if line:
                out.append(json.loads(line))
    return out


_RECORDER = r"""import json, sys
raw = sys.stdin.read()
payload = json.loads(raw)
log = %(log)r
with open(log, "a") as fh:
    fh.write(json.dumps(payload) + "\n")
if %(snapshot)r and payload.get("transcript_path"):
    # what the rollout holds at the moment the hook runs
    snap = {"hook_event_name": payload.get("hook_event_name"),
            "tool_use_id": payload.get("tool_use_id"), "transcript_lines": 0,
            "call_present": False, "token_usage_record_response_ids": [], "token_count_events": 0}
    try:
        with open(payload["transcript_path"]) as fh:
            for line in fh:
                snap["transcript_lines"] += 1
                rec = json.loads(line)
                body = rec.get("payload") or {}
                if rec.get("type") == "token_usage_record":
                    snap["token_usage_record_response_ids"].append(body.get("response_id"))
                elif rec.get("type") == "event_msg" and body.get("type") == "token_count":
                    snap["token_count_events"] += 1
                elif body.get("call_id") and body.get("call_id") == payload.get("tool_use_id"):
                    snap["call_present"] = True
    except (OSError, ValueError) as exc:
        snap["error"] = str(exc)
    with open(log[:-len(".jsonl")] + ".snapshots.jsonl", "a") as fh:
        fh.write(json.dumps(snap) + "\n")
answers = %(answers)r
rules = %(rules)r
answer = None
command = json.dumps(payload.get("tool_input"))
for needle, rule_answer in rules:
    if needle in command:
        answer = rule_answer
        break
else:
    if isinstance(answers, list):
        n = sum(1 for _ in open(log)) - 1
        answer = answers[n] if n < len(answers) else None
    else:
        answer = answers
if answer is not None:
    sys.stdout.write(answer if isinstance(answer, str) else json.dumps(answer))
"""


def recorder_hooks(
    log_path,
    answers=None,
    events=("PreToolUse",),
    timeout=30,
    script_dir=None,
    rules=(),
    snapshot=False,
):
    """A hooks.json dict whose hook appends each stdin JSON to ``log_path`` (one per line).

    ``answers``: None (print nothing), one answer (a dict printed as JSON, or a raw str) for every
    call, or a list with one answer per hook call in order (None = nothing; past the end: nothing).
    ``rules``: ``[(substring, answer), ...]``; the first substring found in the JSON of
    ``tool_input`` picks the answer (takes precedence over ``answers``).
    ``snapshot``: also append to ``<log stem>.snapshots.jsonl`` what the rollout
    (``transcript_path``) holds when the hook runs: line count, whether the hooked call is there,
    the ``token_usage_record`` response ids and the number of ``token_count`` events.
    The log should end in ``.jsonl``.
    """
    log_path = Path(log_path).resolve()
    script_dir = Path(script_dir) if script_dir else log_path.parent
    script_dir.mkdir(parents=True, exist_ok=True)
    script = script_dir / f"{log_path.stem}.hook.py"
    script.write_text(
        _RECORDER
        % {
            "log": str(log_path),
            "answers": answers,
            "rules": [list(r) for r in rules],
            "snapshot": bool(snapshot),
        }
    )
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"
    handler = {"type": "command", "command": command, "timeout": timeout}
    return {"hooks": {event: [{"hooks": [handler]}] for event in events}}


def run_codex(
    home,
    prompt,
    project,
    *,
    json_output=True,
    bypass_hook_trust=True,
    sandbox="danger-full-access",
    extra_args=(),
    env=None,
    timeout=180,
    hook_log=None,
    binary=None,
    resume=None,
    model=None,
):
    """Run ``codex exec`` once in ``project`` (created if missing) with ``CODEX_HOME=home``.

    ``resume``: ``"--last"`` or a session id continues that session (``codex exec resume``; the
    same rollout file is appended to). ``model`` overrides the model for this run (``-m``).
    ``env`` entries are added to (a copy of) the current environment; ``HOME`` defaults to a
    ``home/`` folder beside the project so nothing of the real user leaks in, and ``OPENAI_*`` keys
    are removed. Returns a :class:`CodexRun`; a timeout raises ``subprocess.TimeoutExpired``.
    """
    if not isinstance(home, CodexHome):
        raise TypeError("home must be a CodexHome")
    binary = binary or codex_bin()
    if not binary:
        raise FileNotFoundError("Codex CLI not installed: run tests/e2e/hosts_install.sh")
    project = Path(project)
    project.mkdir(parents=True, exist_ok=True)
    args = [binary, "exec"]
    if json_output:
        args.append("--json")
    if bypass_hook_trust:
        args.append("--dangerously-bypass-hook-trust")
    args.append("--skip-git-repo-check")
    if model:
        args += ["-m", model]
    if resume:
        # `codex exec resume` takes neither --color nor -s; the sandbox comes from -c
        if sandbox:
            args += ["-c", f"sandbox_mode={json.dumps(sandbox)}"]
        args += list(extra_args)
        args += ["resume"] + (["--last"] if resume == "--last" else [resume])
    else:
        args += ["--color", "never"]
        if sandbox:
            args += ["-s", sandbox]
        args += list(extra_args)
    args.append(prompt)

    user_home = project.parent / (project.name + "-user-home")
    user_home.mkdir(parents=True, exist_ok=True)
    run_env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    run_env.pop("CODEX_API_KEY", None)
    run_env.update({"CODEX_HOME": str(home.path), "HOME": str(user_home), "NO_COLOR": "1"})
    run_env.setdefault("RUST_LOG", "error")
    if env:
        run_env.update(env)
    proc = subprocess.run(
        args,
        cwd=str(project),
        env=run_env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=timeout,
        check=False,
    )
    return CodexRun(
        args,
        proc.returncode,
        proc.stdout.decode("utf-8", "replace"),
        proc.stderr.decode("utf-8", "replace"),
        home,
        project,
        hook_log=hook_log,
    )


# What the TUI asks a new user once (a screen-reader check, a newer model on offer), answered
# in config.toml as Codex records the answers itself, so a run starts at the prompt box.
TUI_ANSWERED = """
[tui]
screen_reader_detection_done = true

[notice.model_migrations]
"gpt-5.5" = "gpt-6-sol"
"""

_tmux_servers = itertools.count(1)


class CodexTui:
    """The interactive Codex TUI in a pane of a private tmux server, as a person runs it.

    ``with CodexTui(home, project, prompt, env=...) as tui``: ``tui.screen()`` is what the pane
    shows, ``tui.wait_for(text)`` waits until it shows ``text``, ``tui.type(text)`` types a
    prompt and Enter, ``tui.alive`` tells whether codex still runs. ``in_tmux=False`` starts
    codex without ``TMUX``/``TMUX_PANE`` in its environment: as if its terminal were not tmux.
    ``bypass_hook_trust=False``: hooks run only once trusted (the TUI asks at its start). An
    empty ``prompt`` starts it idle; ``extra_args`` go before the prompt (``--no-daemon``: no
    background app server that outlives the TUI). The tmux server (and codex with it) is killed
    on exit. Needs ``tmux`` on PATH.
    """

    def __init__(
        self,
        home,
        project,
        prompt,
        env=None,
        in_tmux=True,
        binary=None,
        bypass_hook_trust=True,
        extra_args=(),
    ):
        self.home = home
        self.project = Path(project)
        self.project.mkdir(parents=True, exist_ok=True)
        self.server = f"rg-codex-{os.getpid()}-{next(_tmux_servers)}"
        binary = binary or codex_bin()
        if not binary:
            raise FileNotFoundError("Codex CLI not installed: run tests/e2e/hosts_install.sh")
        user_home = self.project.parent / (self.project.name + "-user-home")
        user_home.mkdir(parents=True, exist_ok=True)
        run_env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "TMUX"))}
        run_env.pop("CODEX_API_KEY", None)
        run_env.update({"CODEX_HOME": str(home.path), "HOME": str(user_home), "NO_COLOR": "1"})
        run_env.setdefault("RUST_LOG", "error")
        run_env.update(env or {})
        self.env = run_env
        argv = [binary, "-s", "danger-full-access"]
        if bypass_hook_trust:
            argv.append("--dangerously-bypass-hook-trust")
        argv += [*extra_args, prompt] if prompt else list(extra_args)
        command = " ".join(shlex.quote(arg) for arg in argv)
        if not in_tmux:
            command = "env -u TMUX -u TMUX_PANE " + command
        self._tmux("new-session", "-d", "-s", "codex", "-x", "160", "-y", "45", command)

    def _tmux(self, *args):
        return subprocess.run(
            ["tmux", "-L", self.server, *args],
            cwd=str(self.project),
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )

    def screen(self):
        return self._tmux("capture-pane", "-p", "-t", "codex").stdout

    def wait_for(self, text, timeout=60):
        """Wait until the pane shows text; AssertionError with the screen if it never does."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.screen():
                return
            time.sleep(0.2)
        raise AssertionError(f"the TUI never showed {text!r}:\n{self.screen()}")

    def type(self, text):
        self._tmux("send-keys", "-t", "codex", "-l", text)
        time.sleep(0.3)
        self._tmux("send-keys", "-t", "codex", "Enter")

    def keys(self, *keys):
        """Press keys (tmux names: ``Down``, ``Enter``, ``Escape``), one at a time."""
        for key in keys:
            self._tmux("send-keys", "-t", "codex", key)
            time.sleep(0.3)

    @property
    def alive(self):
        shown = self._tmux("display-message", "-p", "-t", "codex", "#{pane_dead}")
        return shown.returncode == 0 and shown.stdout.strip() == "0"

    def close(self):
        self._tmux("kill-server")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
