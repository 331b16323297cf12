"""Run the real OpenCode CLI (pinned 1.18.33) offline against the scripted model server.

Typical use in a test::

    from scripted_model import ScriptedModel
    from opencode_host import OpenCodeHome, run_opencode

    with ScriptedModel({"chat": [step, ...]}) as model:
        home = OpenCodeHome(tmp_path, model.url)
        home.place_plugin(recorder_script(tmp_path / "calls.jsonl"))  # or run the installer
        run = run_opencode(home, "do the thing")
    run.returncode, run.events, run.session_id, run.store.parts(), run.store.cost(run.session_id)

What was checked on OpenCode 1.18.33 (tests/fixtures/opencode/README.md):

- The provider is an ``@ai-sdk/openai-compatible`` one (bundled in the binary: nothing is
  downloaded) whose ``baseURL`` is ``<model.url>/v1``; OpenCode streams ``POST
  /v1/chat/completions`` with ``stream_options.include_usage``. The provider config is a file
  outside HOME and the project, named by ``OPENCODE_CONFIG``, so the person's config folder and
  the project hold only what the installer writes. With a ``cost`` block on the model, OpenCode
  prices each step itself and stores ``cost`` on the assistant message.
- OpenCode takes the session's folder from ``PWD``, not from the process's working directory.
- With any plugin in a config folder, OpenCode npm-installs ``@opencode-ai/plugin`` into that
  folder in the background at start. ``npm_config_offline=true`` with an empty npm cache makes
  that fail at once ("background dependency install failed" in its log) and nothing else
  changes: the guard's plugin imports only Node's built-ins. Without it, a fresh HOME fetches
  26 packages from the registry (4 s here), and an unreachable registry stalls each start ~70 s.
- Besides the agent's steps OpenCode sends a title request (no tools) through the same model;
  it is billed but not stored. ``is_title_request`` tells it apart.
- ``opencode run --format json`` prints one JSON event per line on stdout (``step_start``,
  ``tool_use``, ``step_finish`` with ``cost`` ..., each with ``sessionID``); the progress and
  ``Error: <reason>`` go to stderr (with ``--format json`` the reason that ends a run is an
  ``error`` event on stdout). A throw from the plugin's ``chat.params`` ends the run with exit
  code 1.
- Everything is stored in SQLite, ``$XDG_DATA_HOME/opencode/opencode.db`` (WAL): tables
  ``session`` (``parent_id`` for a subagent's child session), ``message`` and ``part`` (JSON in
  ``data``). :class:`Store` reads it read-only.

Standard library only; Python 3.9 syntax.
"""

import contextlib
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pins

__all__ = [
    "COST",
    "MODEL",
    "OPENCODE_VERSION",
    "PLUGIN_SOURCE",
    "OpenCodeHome",
    "OpenCodeRun",
    "Store",
    "is_title_request",
    "opencode_bin",
    "plugin_text",
    "recorder_script",
    "run_opencode",
]

OPENCODE_VERSION = "1.18.33"
MODEL = "mock-model"
# USD per million tokens, the way a custom model's ``cost`` is written in opencode.json
COST = {"input": 3, "output": 15, "cache_read": 0.3, "cache_write": 3.75}

_HERE = Path(__file__).resolve().parent
_ROOT = _HERE.parent.parent
PLUGIN_SOURCE = _ROOT / "skill" / "runaway_guard" / "hosts" / "opencode_plugin.js"
PLUGIN_NAME = "runaway-guard.js"
_DROP = (
    "OPENCODE",
    "XDG_",
    "OPENAI_",
    "ANTHROPIC_",
    "npm_config_",
    "NPM_CONFIG_",
    "RUNAWAY_GUARD_",
)


def opencode_bin():
    return pins.cli("opencode")


def is_title_request(body):
    """OpenCode's title generation: a request without tools (it is billed, never stored)."""
    return not (body or {}).get("tools")


def plugin_text(python, guard, source=PLUGIN_SOURCE):
    """The plugin's source with its interpreter and guard script filled in, as the installer
    does (the quoted placeholders "@PYTHON@" and "@GUARD@" become JSON strings)."""
    text = Path(source).read_text(encoding="utf-8")
    for placeholder, value in (("@PYTHON@", python), ("@GUARD@", guard)):
        if f'"{placeholder}"' not in text:
            raise ValueError(f"{source} has no {placeholder} placeholder")
        text = text.replace(f'"{placeholder}"', json.dumps(str(value)))
    return text


_RECORDER = r"""import json, sys
raw = sys.stdin.read()
with open(%(log)r, "a") as fh:
    fh.write(raw.strip() + "\n")
with open(%(log)r) as fh:
    n = sum(1 for _ in fh) - 1
answer = None
for needle, rule_answer in %(rules)r:
    if needle in raw:
        answer = rule_answer
        break
else:
    answers = %(answers)r
    answer = answers[n] if n < len(answers) else None
if answer is not None:
    sys.stdout.write(json.dumps(answer) + "\n")
"""


def recorder_script(log_path, rules=(), answers=()):
    """A guard stand-in for the plugin (its path): appends each payload to ``log_path`` (JSONL)
    and answers ``answer`` for the first ``(substring, answer)`` rule found in the payload's
    JSON, else ``answers[n]`` for the n-th payload (from 0; None or past the end: no answer)."""
    log_path = Path(log_path).resolve()
    script = log_path.with_suffix(".recorder.py")
    values = {"log": str(log_path), "rules": [list(r) for r in rules], "answers": list(answers)}
    script.write_text(_RECORDER % values)
    return script


class OpenCodeHome:
    """A throwaway HOME (XDG folders in their default places under it), a project (a git
    repository), and a provider config pointing OpenCode at the scripted model.

    ``models``: ``{model id: cost dict or None}`` (None = a model OpenCode cannot price);
    ``model`` is the one the agent runs with (also the small model for titles).
    """

    def __init__(self, root, model_url, model=MODEL, models=None, home=None, project=None):
        self.root = Path(root)
        self.home = Path(home) if home else self.root / "home"
        self.project = Path(project) if project else self.root / "proj"
        self.model = model
        for folder in (self.home, self.project):
            folder.mkdir(parents=True, exist_ok=True)
        if not (self.project / ".git").exists():
            subprocess.run(["git", "init", "-q", str(self.project)], check=True, timeout=30)
        models = dict(models or {model: COST})
        entries = {}
        for name, cost in models.items():
            entry = {"name": name, "tool_call": True, "limit": {"context": 128000, "output": 8192}}
            if cost is not None:
                entry["cost"] = dict(cost)
            entries[name] = entry
        provider = {
            "npm": "@ai-sdk/openai-compatible",
            "name": "Scripted model (loopback)",
            "options": {"baseURL": model_url.rstrip("/") + "/v1", "apiKey": "scripted"},
            "models": entries,
        }
        config = {
            "$schema": "https://opencode.ai/config.json",
            "model": f"mock/{model}",
            "small_model": f"mock/{model}",
            "autoupdate": False,
            "share": "disabled",
            "provider": {"mock": provider},
        }
        self.provider_config = self.root / "opencode-provider.json"
        self.provider_config.write_text(json.dumps(config, indent=2) + "\n")

    @property
    def config_dir(self):
        return self.home / ".config" / "opencode"

    @property
    def data_dir(self):
        return self.home / ".local" / "share" / "opencode"

    @property
    def db_path(self):
        return self.data_dir / "opencode.db"

    def plugin_dir(self, scope="user"):
        if scope == "project":
            return self.project / ".opencode" / "plugin"
        return self.config_dir / "plugin"

    def place_plugin(self, guard, python=sys.executable, scope="user", name=PLUGIN_NAME):
        """Put the guard's plugin in place by hand, running ``guard`` (a script path)."""
        folder = self.plugin_dir(scope)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / name
        path.write_text(plugin_text(python, guard), encoding="utf-8")
        return path

    def env(self, extra=None):
        """The environment OpenCode runs in: nothing of the developer's own config leaks in."""
        out = {k: v for k, v in os.environ.items() if not k.startswith(_DROP)}
        home = self.home
        out.update(
            {
                "HOME": str(home),
                "PWD": str(self.project),
                "XDG_CONFIG_HOME": str(home / ".config"),
                "XDG_DATA_HOME": str(home / ".local" / "share"),
                "XDG_CACHE_HOME": str(home / ".cache"),
                "XDG_STATE_HOME": str(home / ".local" / "state"),
                "OPENCODE_CONFIG": str(self.provider_config),
                "OPENCODE_DISABLE_MODELS_FETCH": "1",
                "OPENCODE_DISABLE_AUTOUPDATE": "1",
                "OPENCODE_DISABLE_SHARE": "1",
                "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
                "npm_config_offline": "true",
                "npm_config_cache": str(home / ".npm"),
                "NO_COLOR": "1",
            }
        )
        out.update({k: str(v) for k, v in (extra or {}).items()})
        return out

    @property
    def store(self):
        return Store(self.db_path)


class Store:
    """OpenCode's SQLite database, opened read-only for each query (OpenCode may be writing)."""

    def __init__(self, path):
        self.path = Path(path)

    def query(self, sql, args=()):
        if not self.path.exists():
            return []
        uri = "file:" + str(self.path) + "?mode=ro"
        with contextlib.closing(sqlite3.connect(uri, uri=True, timeout=10)) as db:
            db.row_factory = sqlite3.Row
            return [dict(row) for row in db.execute(sql, args)]

    def sessions(self):
        """Every session row, oldest first."""
        return self.query("SELECT * FROM session ORDER BY time_created, id")

    def tree(self, root):
        """The ids of ``root`` and of every session below it (subagents), parents first."""
        children = {}
        for row in self.sessions():
            children.setdefault(row["parent_id"], []).append(row["id"])
        out, todo = [], [root]
        while todo:
            current = todo.pop(0)
            out.append(current)
            todo.extend(children.get(current, []))
        return out

    def _rows(self, table, session_ids):
        rows = self.query(f"SELECT * FROM {table} ORDER BY time_created, id")
        if session_ids is not None:
            rows = [r for r in rows if r["session_id"] in set(session_ids)]
        for row in rows:
            row["data"] = json.loads(row["data"])
        return rows

    def messages(self, session_ids=None):
        """Message rows (``data`` decoded), oldest first; only those sessions' when given."""
        return self._rows("message", session_ids)

    def parts(self, session_ids=None):
        """Part rows (``data`` decoded), oldest first; only those sessions' when given."""
        return self._rows("part", session_ids)

    def tool_parts(self, session_ids=None, tool=None):
        """The ``data`` of the tool parts (``tool``, ``callID``, ``state``)."""
        out = []
        for row in self.parts(session_ids):
            data = row["data"]
            if data.get("type") == "tool" and (tool is None or data.get("tool") == tool):
                out.append(dict(data, session_id=row["session_id"]))
        return out

    def assistant_messages(self, session_ids=None):
        return [m for m in self.messages(session_ids) if m["data"].get("role") == "assistant"]

    def schema(self):
        """SQL text that creates OpenCode's own ``session``, ``message`` and ``part`` tables,
        then their indexes (the guard's reads depend on them)."""
        rows = self.query(
            "SELECT sql FROM sqlite_master WHERE tbl_name IN ('session', 'message', 'part')"
            " AND sql IS NOT NULL ORDER BY type = 'index'"
        )
        return "".join(row["sql"].strip() + ";\n" for row in rows)

    def dump(self, session_ids, replace=()):
        """SQL inserts of those sessions' ``session``, ``message`` and ``part`` rows; each
        ``(old, new)`` of ``replace`` is applied to the text (to make temporary paths stable)."""
        wanted = set(session_ids)
        lines = []
        for table, key in (("session", "id"), ("message", "session_id"), ("part", "session_id")):
            for row in self.query(f"SELECT * FROM {table} ORDER BY time_created, id"):
                if row[key] not in wanted:
                    continue
                columns = ", ".join(row)
                values = ", ".join(_sql_literal(v) for v in row.values())
                lines.append(f"INSERT INTO {table} ({columns}) VALUES ({values});")
        text = "\n".join(lines) + "\n"
        for old, new in replace:
            text = text.replace(old, new)
        return text

    def cost(self, root):
        """OpenCode's own spend over the session tree: the sum of its stored step costs."""
        steps = self.assistant_messages(self.tree(root))
        return sum(float(m["data"].get("cost") or 0) for m in steps)


def _sql_literal(value):
    if value is None:
        return "NULL"
    if isinstance(value, (int, float)):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


class OpenCodeRun:
    """The outcome of one ``opencode run``."""

    def __init__(self, args, returncode, stdout, stderr, home):
        self.args = args
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.home = home

    @property
    def events(self):
        """The ``--format json`` events on stdout: one JSON object per line."""
        return [json.loads(line) for line in self.stdout.splitlines() if line.startswith('{"')]

    @property
    def session_id(self):
        """The root session of this run (the first event's, else the newest root session)."""
        for event in self.events:
            if event.get("sessionID"):
                return self._root(event["sessionID"])
        roots = [s["id"] for s in self.store.sessions() if not s["parent_id"]]
        return roots[-1] if roots else None

    def _root(self, session_id):
        parents = {s["id"]: s["parent_id"] for s in self.store.sessions()}
        while parents.get(session_id):
            session_id = parents[session_id]
        return session_id

    @property
    def store(self):
        return self.home.store

    @property
    def error(self):
        """The message that ended the run (the ``error`` event, or an ``Error: ...`` line on
        stderr), or None."""
        for event in reversed(self.events):
            if event.get("type") == "error":
                error = event.get("error") or {}
                return (error.get("data") or {}).get("message") or error.get("name") or "error"
        for line in reversed(self.stderr.splitlines()):
            if line.startswith("Error: "):
                return line[len("Error: ") :]
        return None

    def __repr__(self):
        return f"OpenCodeRun(rc={self.returncode!r}, session={self.session_id!r})"


def run_opencode(
    home,
    prompt,
    *,
    env=None,
    timeout=120,
    extra_args=(),
    binary=None,
    print_logs=False,
):
    """Run ``opencode run --format json <prompt>`` once in ``home.project``.

    ``env`` entries are added to :meth:`OpenCodeHome.env` (the guard's limits, say).
    ``print_logs`` adds OpenCode's own log (level INFO) to stderr. Returns an
    :class:`OpenCodeRun`; a timeout raises ``subprocess.TimeoutExpired``.
    """
    if not isinstance(home, OpenCodeHome):
        raise TypeError("home must be an OpenCodeHome")
    binary = binary or opencode_bin()
    if not binary:
        raise FileNotFoundError("OpenCode CLI not installed: run tests/e2e/hosts_install.sh")
    args = [binary, "run", "--format", "json"]
    if print_logs:
        args += ["--print-logs", "--log-level", "INFO"]
    args += list(extra_args)
    args.append(prompt)
    options = {"cwd": str(home.project), "env": home.env(env), "stdin": subprocess.DEVNULL}
    proc = subprocess.run(
        args, capture_output=True, text=True, errors="replace", timeout=timeout, **options
    )
    return OpenCodeRun(args, proc.returncode, proc.stdout, proc.stderr, home)
