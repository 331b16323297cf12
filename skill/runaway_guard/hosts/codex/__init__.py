"""Codex: PreToolUse payloads, its answers, and `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`.

Each subagent writes its own rollout whose `session_meta.session_id` is the root session's id,
so the session's spend is the root file plus every file naming that root. Usage comes from
`token_usage_record` lines (one per response; newer builds), else from the advances of the
cumulative `token_count` totals. The model comes from `turn_context` and is carried from one
read to the next.

Answers (seen on 0.169.0 and 0.171.0): a deny with a non-empty reason, and additionalContext
alone; any other key, `ask` or `continue` marks the hook failed and the call runs, so every
refusal here is a plain deny. No answer ends a turn: a stop is a deny, and then `end_run`
ends the run from outside, the way the person would (references/hosts/codex.md).

The rollouts are read in rollout.py; this module is the host's interface (hosts/__init__.py).
"""

import time

from ... import fs, jsonio
from ...calls import Call, tool_name
from ...decisions import DENY, STOP, TELL
from .. import hook_entry
from .._files import follow, main_path, read_all
from .._turns import EVENTS, answering_turn, render_stop, turn_call
from .rollout import _day_folders, _discover, _Reader

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
    "home": {"variable": "CODEX_HOME", "default": ".codex"},
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
    # hook needs the person's trust, like the installer's (references/hosts/codex.md). No skill:
    # Codex does not list a plugin root's own SKILL.md as a skill ("skills": "./" lists nothing
    # on 0.171.0).
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
    model_text = decision.get("model_text") or ""
    if decision["kind"] == TELL:
        if not model_text:
            return ""
        out = {"hookEventName": "PreToolUse", "additionalContext": model_text}
    else:
        out = {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": model_text
            or decision.get("person_text")
            or "runaway-guard",
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
    from .. import _procs

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
    from .._procs import output

    return output(["tmux", *args], environ)


def sync(book, call):
    """Bring the book up to date with the session's rollouts; False when there is none."""
    path = call.transcript_path
    if not path or not call.session_id:
        return False
    follow(book, path, {"agent": call.agent})
    main = main_path(book.state)
    known = main or path
    # Rollout names start with their creation time: once the main rollout is known only newer
    # names are opened; a subagent's call seen first looks at the whole folder for its root.
    since = fs.basename(known)[: len("rollout-YYYY-MM-DDThh-mm-ss")] if main else ""
    for folder in _day_folders(fs.dirname(known)):
        _discover(book, folder, since, call.session_id)
    windows = [None]  # the newest token_count line that records a plan's usage windows
    read_all(book, path, lambda entry: _Reader(book, entry, call.session_id, windows))
    if windows[0] is not None:
        from ... import plans

        plans.record_codex(book.state, windows[0])
    return True
