"""Codex: PreToolUse payloads, its answers, and `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`.

Each subagent writes its own rollout whose `session_meta.session_id` is the root session's id,
so the session's spend is the root file plus every file naming that root. Usage comes from
`token_usage_record` lines (one per response; newer builds), else from the advances of the
cumulative `token_count` totals. The model comes from `turn_context` and is carried from one
read to the next.

Answers (seen on 0.169.0 and 0.171.0): a deny with a non-empty reason, and additionalContext
alone; any other key, `ask` or `continue` marks the hook failed and the call runs, so every
refusal here is a plain deny. No answer ends a turn: a stop is a deny, and then `end_run`
ends the run from outside, the way the person would (research/codex-ending-a-turn.md).
"""

import time

from .. import fs, jsonio, pricing
from ..calls import NOT_JSON, Call, canonical, count, fingerprint, ignore, tool_name
from ..decisions import DENY, REFUSAL_PREFIX, STOP, TELL
from ..jsonio import HEAD, head_types, type_at
from . import hook_entry
from ._files import (
    LONG,
    each_line,
    first_line,
    follow,
    followed,
    list_again,
    listed,
    local_day,
    read_all,
)
from ._turns import EVENTS, answering_turn, render_stop, turn_call

NAME = "codex"
LABEL = "Codex"
RUNGS = frozenset({TELL, DENY, STOP})
# Each call is in the rollout before the hook runs (0.169.0, 0.171.0): hook._catch_up.
WRITES_CALLS = True
TOOLS = {
    "shell": "Bash",
    "exec_command": "Bash",
    "local_shell": "Bash",
    "container.exec": "Bash",
    "apply_patch": "Edit",
    "spawn_agent": "Agent",
    "collaborationspawn_agent": "Agent",
}

INSTALL = {
    "home": ("CODEX_HOME", ".codex"),
    "user": {"settings": "hooks.json", "skills": "skills"},
    "project": {"settings": ".codex/hooks.json", "skills": ".agents/skills"},
    "binaries": ("codex",),
    # UserPromptSubmit and Stop: spend with no tool call (a past cap refuses a new prompt, and
    # a turn another Stop hook keeps going ends there)
    "entry": hook_entry(*EVENTS),
    "after_install": (
        "Codex: the hooks do NOT run until you trust them. Start codex, open /hooks and trust the "
        "runaway-guard hooks (tool calls, prompts, turn ends){changed}. `codex exec` skips "
        "untrusted hooks silently, without any warning.",
    ),
    "after_install_project": (
        "Project hooks load only in a trusted project: trust {project} when Codex asks (or run "
        "`codex exec --trust` once there).",
    ),
    "after_uninstall": "Codex forgets the hook on its next start.",
    # The repository is a Codex plugin too (0.171.0 reads Claude Code's marketplace.json, but
    # prefers .codex-plugin/plugin.json and ignores the hooks of Claude's plugin.json: it wants
    # them one level down, under "hooks"). ${PLUGIN_ROOT} is replaced by the plugin's copy in
    # plugins/cache/<marketplace>/<plugin>/<version>, which `codex plugin remove` deletes. Its
    # hook needs the person's trust, like the installer's (README, Codex). No skill: Codex does
    # not list a plugin root's own SKILL.md as a skill ("skills": "./" lists nothing on 0.171.0).
    "plugin": {
        "manifests": {
            ".codex-plugin/plugin.json": {
                "name": "{name}",
                "version": "{version}",
                "description": "{description}",
                "author": {"name": "{author}"},
                "license": "{license}",
                "hooks": {"hooks": "{hooks}"},
            },
        },
        "root": "${PLUGIN_ROOT}",
        "folder": "plugins/cache/{name}/{name}",
        "id": "{name}@{name}",
        "install": ("codex plugin marketplace add {source}", "codex plugin add {id}"),
        "uninstall": ("codex plugin remove {id}", "codex plugin marketplace remove {name}"),
    },
}


# Where Codex keeps the trust of the plugin's one hook (its manifest's hooks[0], PreToolUse).
PLUGIN_HOOK_KEY = "runaway-guard@runaway-guard:plugin.json#hooks[0]:pre_tool_use:0:0"


def check_note(settings_path, handler, position, group, environ, event="PreToolUse"):
    """For `install.py --check`, best effort: does config.toml hold a trusted hash for this hook
    (the entry at position in event's list)?

    Codex runs a hook only once the person trusted it in /hooks; the trust is recorded per file
    and position with a hash of the hook's definition (the format is internal to Codex).
    """
    import hashlib
    import json

    codex_home = environ.get("CODEX_HOME") or fs.join(
        environ.get("HOME") or fs.expanduser("~"), ".codex"
    )
    config = fs.join(codex_home, "config.toml")
    # Codex's name for the event: PreToolUse -> pre_tool_use
    name = "".join(f"_{c.lower()}" if c.isupper() else c for c in event).lstrip("_")
    definition = {"event_name": name}
    if isinstance(group, dict) and group.get("matcher") is not None:
        definition["matcher"] = group["matcher"]
    normal = {
        "type": "command",
        "command": handler.get("command"),
        "timeout": handler.get("timeout", 600),
        "async": bool(handler.get("async", False)),
    }
    if handler.get("statusMessage") is not None:
        normal["statusMessage"] = handler["statusMessage"]
    definition["hooks"] = [normal]
    canonical = json.dumps(definition, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    digest = "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()
    try:
        with open(config, encoding="utf-8") as handle:
            text = handle.read()
    except OSError:
        text = ""
    group_index, handler_index = position
    paths = (str(settings_path), fs.realpath(settings_path))
    keys = {f"{path}:{name}:{group_index}:{handler_index}" for path in paths}
    if digest in text and any(key in text for key in keys):
        return "Codex trust: a trusted hash for this hook is recorded in config.toml."
    if any(key in text for key in keys):
        return (
            "Codex trust: config.toml records a different hash for this position: the hook "
            "looks MODIFIED and will not run. Open /hooks in codex and trust it."
        )
    return (
        f"Codex trust: no trust record found in {config}: if Codex has not been told to trust "
        "the hook, it does not run. Open /hooks in codex and trust it (this check is best "
        "effort: the format is internal to Codex)."
    )


def plugin_check_note(environ):
    """For `install.py --check` of the plugin: has the person trusted its hook? Codex records
    it in config.toml under the plugin's key (seen on 0.171.0; the hashes cover the hook and the
    plugin's files, so only the record's presence is checked here)."""
    codex_home = environ.get("CODEX_HOME") or fs.join(
        environ.get("HOME") or fs.expanduser("~"), ".codex"
    )
    config = fs.join(codex_home, "config.toml")
    key = f'[hooks.state."{PLUGIN_HOOK_KEY}"]'
    try:
        with open(config, encoding="utf-8") as handle:
            trusted = any(line.strip() == key for line in handle)
    except (OSError, ValueError):
        trusted = False
    if trusted:
        return f"Codex trust: the plugin's hook has a trust record in {config}."
    return (
        f"Codex trust: no trust record for the plugin's hook in {config}: it does not run until "
        'you trust it (start codex: "Hooks need review" → "Trust all and continue", or '
        "/hooks → t)."
    )


_USAGE_FIELDS = (
    "input_tokens",
    "cached_input_tokens",
    "cache_write_input_tokens",
    "output_tokens",
    "reasoning_output_tokens",
    "total_tokens",
)
_VOLATILE = ("Chunk ID:", "Wall time:", "Original token count:")
_BLOCKED = ("Command blocked by PreToolUse hook:", "Tool call blocked by PreToolUse hook:")
_TOOL_ERRORS = ("unsupported call:", "write_stdin failed:", "unable to locate")


def call(payload):
    turn, fired = turn_call(NAME, payload, "turn_id")
    if turn:
        return fired
    agent = payload.get("agent_id")
    return Call(
        NAME,
        payload.get("session_id"),
        transcript_path=payload.get("transcript_path"),
        cwd=payload.get("cwd"),
        agent=agent,
        tool=tool_name(payload.get("tool_name"), TOOLS),
        tool_input=payload.get("tool_input"),
        tool_use_id=payload.get("tool_use_id"),
        model=payload.get("model"),
        # The main thread's turn_id changes when the person sends a new prompt.
        prompt_id=None if agent else payload.get("turn_id"),
    )


def render(decision):
    """A deny with its reason, or additionalContext alone: nothing else passes on Codex's
    PreToolUse; at a prompt or a turn's end only a stop is said (render_stop)."""
    if answering_turn():
        return render_stop(decision)
    if not decision:
        return ""
    model_text = decision.get("model") or ""
    if decision["kind"] == TELL:
        if not model_text:
            return ""
        out = {"hookEventName": "PreToolUse", "additionalContext": model_text}
    else:
        out = {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": model_text or decision.get("person") or "runaway-guard",
        }
    return jsonio.dumps({"hookSpecificOutput": out})


# -- ending the run from outside (a stop: the deny is already printed) ---------------------------

# Codex's subcommands (0.171.0 `codex --help`); any other first word is the TUI's prompt. And
# the options that take a value, so that a value is not read as the subcommand.
# fmt: off
_SUBCOMMANDS = frozenset((
    "agents", "exec", "e", "review", "login", "logout", "mcp", "mcp-server", "plugin",
    "app-server", "remote-control", "completion", "update", "doctor", "sandbox", "debug",
    "apply", "a", "resume", "queue", "archive", "delete", "migrate-rollouts", "migrate-nfs-db",
    "unarchive", "fork", "cloud", "exec-server", "features", "help",
))
_VALUED = frozenset((
    "-c", "--config", "--enable", "--disable", "--remote", "--remote-auth-token-env", "-i",
    "--image", "-m", "--model", "--local-provider", "-p", "--profile", "-s", "--sandbox", "-C",
    "--cd", "--add-dir", "-a", "--ask-for-approval",
))
# fmt: on
# How long the hook waits once it has interrupted: Codex ends the turn and kills the hook
# meanwhile (well under the hook's timeout; if it does not, Codex gets the deny).
END_WAIT_S = 5.0


def end_run(call, environ, note):
    """End this run's turn the way the person would, where its mode allows it; else nothing.

    - `codex exec`: SIGINT to its codex process is exactly Ctrl-C: the turn is interrupted
      cleanly and exec exits 1.
    - the TUI inside tmux: Esc typed into its pane ends the turn; the session stays open.
    - anything else (the TUI outside tmux, where a signal would kill it; an app server, which
      serves other sessions too; `--remote`; an unknown subcommand): the deny alone.

    Only the codex process that started this hook is ever touched: the nearest codex among this
    process's ancestors, and on Linux only if it holds this call's rollout open.
    """
    from . import _procs

    if _procs.unsupported():
        note(f"deny only: {_procs.unsupported()}")
        return
    found = _procs.nearest(("codex", "codex.exe"))
    if found is None:
        note("deny only: no codex process among the hook's ancestors")
        return
    pid, argv = found
    rollout = call.transcript_path
    if rollout and fs.isdir(f"/proc/{pid}/fd") and not _procs.holds(pid, rollout):
        note(f"deny only: codex (pid {pid}) does not hold this session's rollout open")
        return
    mode = _mode(argv)
    if mode == "exec":
        import signal

        note(f"interrupting codex exec (pid {pid}) with SIGINT, as Ctrl-C")
        fs.kill(pid, signal.SIGINT)
    elif mode == "tui":
        pane = environ.get("TMUX_PANE")
        if not (pane and environ.get("TMUX")) or _pane_tty(environ, pane) != _procs.terminal(pid):
            note(f"deny only: the Codex TUI (pid {pid}) is not in a tmux pane of its own")
            return
        note(f"interrupting the Codex TUI (pid {pid}) with Esc in tmux pane {pane}")
        _tmux(environ, "send-keys", "-t", pane, "Escape")
    else:
        note(f"deny only: codex {mode} (pid {pid}) may serve other sessions")
        return
    time.sleep(END_WAIT_S)


def _mode(argv):
    """'exec', 'tui', 'remote', or the subcommand codex was started with."""
    args = argv[1:]
    if any(arg == "--remote" or arg.startswith("--remote=") for arg in args):
        return "remote"  # hooks run in the server this client talks to, never here
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            index += 1
            break
        if not arg.startswith("-"):
            break
        index += 2 if arg in _VALUED else 1
    first = args[index] if index < len(args) else None
    if first in ("exec", "e"):
        return "exec"
    if first is None or first in ("resume", "fork") or first not in _SUBCOMMANDS:
        return "tui"
    return first


def _pane_tty(environ, pane):
    """The terminal of a tmux pane (as tmux shows it), or None."""
    return _tmux(environ, "display-message", "-p", "-t", pane, "#{pane_tty}").strip() or None


def _tmux(environ, *args):
    from ._procs import output

    return output(["tmux", *args], environ)


def sync(book, call):
    """Bring the book up to date with the session's rollouts; False when there is none."""
    path = call.transcript_path
    if not path or not call.session_id:
        return False
    follow(book, path, {"agent": call.agent})
    files = book.state["files"]
    # the subagents' entries are packed lists (_files.read_all), the main rollout's a dict
    main = next(
        (p for p, e in files.items() if e.__class__ is dict and e.get("agent") == "main"), None
    )
    known = main or path
    # Rollout names start with their creation time: once the main rollout is known only newer
    # names are opened; a subagent's call seen first looks at the whole folder for its root.
    since = fs.basename(known)[: len("rollout-YYYY-MM-DDThh-mm-ss")] if main else ""
    for folder in _day_folders(fs.dirname(known)):
        _discover(book, folder, since, call.session_id)
    windows = [None]  # the newest token_count line that records a plan's usage windows
    read_all(book, path, lambda entry: _Reader(book, entry, call.session_id, windows))
    if windows[0] is not None:
        from .. import plans

        plans.record_codex(book.state, windows[0])
    return True


def _day_folders(folder):
    """The main rollout's day folder, and today's (a subagent spawned after midnight writes its
    rollout into the new day's folder; local and UTC days both, as either may name it)."""
    folders = [folder]
    day = folder.replace(fs.sep, "/").split("/")[-3:]
    if len(day) == 3 and all(part.isdigit() for part in day):
        sessions = fs.dirname(fs.dirname(fs.dirname(folder)))
        for today in {time.strftime("%Y/%m/%d"), time.strftime("%Y/%m/%d", time.gmtime())}:
            candidate = fs.join(sessions, *today.split("/"))
            if candidate != folder and fs.isdir(candidate):
                folders.append(candidate)
    return folders


def _discover(ledger, folder, since, root_id):
    """Register the folder's rollouts of this session, looked for when the folder changed."""
    for name in listed(ledger, folder) or ():
        item_path = fs.join(folder, name)
        if not name.startswith("rollout-") or name < since or followed(ledger, item_path):
            continue
        meta = _session_meta(item_path)
        if meta is None:
            list_again(ledger, folder)  # its first line is not written yet: look again next call
        elif meta.get("session_id") == root_id:
            agent = "main" if meta.get("id") == root_id else str(meta.get("id"))
            follow(ledger, item_path, {"agent": agent})
        else:
            follow(ledger, item_path, {"foreign": True})


def _session_meta(path):
    """The first line's session_meta payload; None while that line is incomplete."""
    try:
        first = first_line(path)
    except OSError:
        return {}
    if not first.endswith(b"\n"):
        return None
    try:
        record = jsonio.loads(first)
    except ValueError:
        return {}
    if isinstance(record, dict) and record.get("type") == "session_meta":
        payload = record.get("payload")
        return payload if isinstance(payload, dict) else {}
    return {}


def _usage(raw):
    raw = raw if isinstance(raw, dict) else {}
    return {field: count(raw.get(field)) for field in _USAGE_FIELDS}


def _output_text(output):
    if isinstance(output, str):
        return output
    return canonical(output)


def outcome(text):
    """('ok' | 'fail', fingerprint) of a tool output, ignoring its per-run header lines."""
    if text.startswith('{"output":'):
        structured = _structured_outcome(text)
        if structured:
            return structured
    lines = [line for line in text.split("\n") if not line.startswith(_VOLATILE)]
    status = "ok"
    for line in lines[:8]:
        for marker in ("Process exited with code ", "Exit code: ", "Exit code "):
            if line.startswith(marker):
                code = line[len(marker) :].strip()
                status = "ok" if code == "0" else "fail"
    if text.startswith(_BLOCKED):
        own = any(text.startswith(f"{blocked} {REFUSAL_PREFIX}") for blocked in _BLOCKED)
        status = "guard" if own else "fail"
    elif text.startswith(_TOOL_ERRORS):
        status = "fail"
    return status, fingerprint("\n".join(lines))


def _structured_outcome(text):
    """Older Codex builds wrote a shell call's output as JSON with its exit code in metadata."""
    try:
        value = jsonio.loads(text)
    except ValueError:
        value = None
    metadata = value.get("metadata") if isinstance(value, dict) else None
    if not isinstance(metadata, dict) or "exit_code" not in metadata:
        return None  # not that shape after all: judged as plain text
    code = metadata["exit_code"]
    return ("ok" if code == 0 else "fail"), fingerprint(value.get("output"))


_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})
_EVENTS = frozenset({"token_count", "thread_settings_applied"})  # the events read
# (tuples: a slice of the read buffer is a bytearray, which no set can hold)
_EVENT_NAMES = tuple(name.encode() for name in _EVENTS)
_OUTPUT_NAMES = tuple(name.encode() for name in _OUTPUTS)
# A record's type and its payload's as Codex writes them, one right after the other.
_ITEM = b'"type":"response_item","payload":{"type":"'
_EVENT = b'"type":"event_msg","payload":{"type":"'


def _passed_by_shape(data, start, end, expecting):
    """Whether a line is passed over, read from a head shaped as Codex writes it (the payload's
    type right after the record's); None for any other head, which head_types reads. Decides as
    head_types(data, start, end, "payload") would lead to, in fewer steps."""
    key = type_at(data, start, end)
    if key < 0:
        return False  # head_types reads no type either
    stop = start + HEAD if end - start > HEAD else end
    if data.startswith(_ITEM, key, stop):
        if not expecting:
            return True
        begin, names = key + len(_ITEM), _OUTPUT_NAMES
    elif data.startswith(_EVENT, key, stop):
        begin, names = key + len(_EVENT), _EVENT_NAMES
    else:
        return None
    close = data.find(b'"', begin, stop)
    if close < 0:
        return None
    inner = data[begin:close]
    return None if 0x5C in inner else inner not in names


class _Reader:
    def __init__(self, ledger, entry, root_id, windows=None):
        self.ledger = ledger
        self.entry = entry
        self.root_id = root_id
        self.windows = windows if windows is not None else [None]
        # (model, tier), its pricing.codex_usage_pricer and codex_pricer (the next request's)
        self.priced_as = self.pricer = self.tokens_pricer = None

    def __call__(self, raw):
        self.line(raw)

    def lines(self, data, start, stop):
        """Each whole line of data[start:stop], as line() would take it, but a long line whose
        head names a record that cannot matter (a response item while no call waits for its
        output, an event other than those read) is passed over unread."""
        each_line(data, start, stop, self.line, self._passed_over)

    def _passed_over(self, data, start, end):
        if end - start <= LONG:
            return False
        passed = _passed_by_shape(data, start, end, self.ledger.expecting())
        if passed is not None:
            return passed
        kind, inner = head_types(data, start, end, "payload")
        if kind == "response_item":
            return not self.ledger.expecting() or (inner is not None and inner not in _OUTPUTS)
        return kind == "event_msg" and inner is not None and inner not in _EVENTS

    def line(self, raw):
        # find, not `in`: a bytes operand of `in` is tried as an int first, an exception a test
        find = raw.find
        if find(b'"token_usage_record"') >= 0:
            handler = self._usage_record
        elif find(b'"token_count"') >= 0:
            if find(b'"used_percent"') >= 0 or find(b'"plan_type":"') >= 0:
                self.windows[0] = raw  # read once the files are (plans.record_codex)
            if self.entry.get("records"):
                return
            handler = self._token_count
        elif find(b'"turn_context"') >= 0 or find(b'"thread_settings_applied"') >= 0:
            handler = self._settings
        elif find(b'"session_meta"') >= 0:
            if "thread" in self.entry:
                return  # a fork's copy of its parent's meta
            handler = self._meta
        elif self.ledger.expecting() and find(b"_output") >= 0 and self.ledger.waiting_for(raw):
            handler = self._output
        else:
            return
        try:
            record = jsonio.loads(raw)
        except ValueError:
            ignore(NOT_JSON)
            return
        if isinstance(record, dict) and isinstance(record.get("payload"), dict):
            handler(record, record["payload"])

    def _meta(self, record, payload):
        if record.get("type") == "session_meta" and isinstance(payload.get("id"), str):
            self.entry["thread"] = payload["id"]

    def _settings(self, record, payload):
        if (
            record.get("type") != "turn_context"
            and payload.get("type") != "thread_settings_applied"
        ):
            return
        settings = payload.get("thread_settings")
        source = settings if isinstance(settings, dict) else payload
        if isinstance(source.get("model"), str):
            self.entry["model"] = source["model"]
        if isinstance(source.get("service_tier"), str):
            self.entry["tier"] = source["service_tier"]

    def _price(self, key, usage, timestamp):
        """Book one response; usage as Codex writes it (the pricer reads its counts as _usage
        does: a first read prices thousands of records, each read once)."""
        usage = usage if isinstance(usage, dict) else {}
        model = self.entry.get("model") or "gpt-unknown"
        tier = self.entry.get("tier")
        if self.priced_as != (model, tier):
            self.priced_as = (model, tier)
            self.pricer = pricing.codex_usage_pricer(model, tier)
            self.tokens_pricer = pricing.codex_pricer(model, tier)
        pusd, known = self.pricer(usage)
        self.ledger.usage(
            key,
            self.entry["agent"],
            model,
            pusd,
            known,
            count(usage.get("output_tokens")),
            local_day(timestamp),
            (
                count(usage.get("input_tokens")),
                count(usage.get("cached_input_tokens"))
                + count(usage.get("cache_write_input_tokens")),
                self.tokens_pricer,
            ),
        )

    def _usage_record(self, record, payload):
        if record.get("type") != "token_usage_record":
            return
        thread = payload.get("thread_id")
        own = self.entry.get("thread")
        if not isinstance(thread, str) or (own and thread != own):
            return  # a copy of another thread's record
        response = payload.get("response_id")
        if not isinstance(response, str):
            return
        self.entry["records"] = True
        self._price(f"{thread}:{response}", payload.get("usage"), record.get("timestamp"))

    def _token_count(self, record, payload):
        if payload.get("type") != "token_count" or not isinstance(payload.get("info"), dict):
            return
        info = payload["info"]
        total = _usage(info.get("total_token_usage"))
        last = self.entry.get("total")
        if last and total["total_tokens"] == last["total_tokens"] and total == last:
            return  # a re-emit with unchanged totals
        if last and all(total[f] >= last[f] for f in _USAGE_FIELDS):
            usage = {f: total[f] - last[f] for f in _USAGE_FIELDS}
        else:
            usage = _usage(info.get("last_token_usage")) if last else total
        self.entry["total"] = total
        thread = self.entry.get("thread") or "?"
        self._price(
            f"{thread}:t{total['total_tokens']}:{total['output_tokens']}",
            usage,
            record.get("timestamp"),
        )

    def _output(self, record, payload):
        if payload.get("type") not in ("function_call_output", "custom_tool_call_output"):
            return
        call_id = payload.get("call_id")
        if not isinstance(call_id, str):
            return
        status, digest = outcome(_output_text(payload.get("output")))
        self.ledger.result(call_id, status, digest)
