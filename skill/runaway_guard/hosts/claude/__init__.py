"""Claude Code: PreToolUse payloads, its answers, and `<project>/<session>.jsonl` transcripts.

Subagents live in `<session>/subagents/**/agent-<id>.jsonl` (2.1.2 and later), in sibling
`agent-<id>.jsonl` files (2.0.28 to 2.1.1), or as `isSidechain` records in the main file (older).

The transcripts' lines are read in transcript.py; this module is the host's interface
(hosts/__init__.py).
"""

import time

from ... import fs, jsonio, text_loops
from ...calls import MODEL, PROMPT, Call, text, tool_name
from ...decisions import ASK, DENY, STOP, TELL
from .. import hook_entry
from .._files import agent_file, first_line, follow, followed, listed, main_entry, read_all
from .._turns import EVENTS, answering_turn, render_stop, turn_call
from .transcript import _Reader

NAME = "claude"
LABEL = "Claude Code"
RUNGS = frozenset({TELL, DENY, ASK, STOP})
TOOLS = {"Task": "Agent", "MultiEdit": "Edit"}
# Each call is written to the transcript before the hook runs, a little late (a write queue
# flushed every 100 ms; seen on 2.1.332): the guard may wait for it (hook._catch_up).
WRITES_CALLS = True
# After a subagent's end (PostToolUse of its Agent call) its last answer, which may be the one
# that crossed a cap, can still be in that queue: the hook waits at most this long for it.
SUBAGENT_END_WAIT_S = 0.3

INSTALL = {
    "home": {"variable": "CLAUDE_CONFIG_DIR", "default": ".claude"},
    "user": {"settings": "settings.json", "skills": "skills"},
    "project": {"settings": ".claude/settings.local.json", "skills": ".claude/skills"},
    "binaries": ("claude",),
    # UserPromptSubmit and Stop: spend with no tool call (a past cap refuses a new prompt, and
    # a turn another Stop hook keeps going ends there). PostToolUse of the Agent tool (Task
    # before 2.1.x): after a subagent's end, before the main thread's next request, where
    # `continue: false` ends the run (SubagentStop's only ends the subagent: seen on 2.1.332).
    "entry": hook_entry(*EVENTS, "PostToolUse", matchers={"PostToolUse": "Agent|Task"}),
    # Claude Code's own rules: its file tools (Edit covers Write, MultiEdit and NotebookEdit)
    # ask before they change the guard's folders, even where the hook cannot run.
    "guard_rules": {"list": ("permissions", "ask"), "rule": "Edit({path}/**)"},
    # The guard's line under the prompt where the person has no status line of their own.
    "status_line": {"key": "statusLine"},
    "after_install": (
        "Claude Code: restart it (or open /hooks) so it loads the hook; in a folder you have not "
        "trusted yet, accept the trust prompt first.",
    ),
    "after_install_project": (
        "{settings_name} was written by the installer, so git does not ignore it automatically: "
        "add .claude/settings.local.json and .claude/skills/runaway-guard/ to .gitignore (they "
        "hold paths of this machine).",
    ),
    "after_uninstall": "Restart Claude Code (or open /hooks) so it drops the hook.",
    # The repository is a marketplace of one plugin carrying the skill and the hook entry above
    # (installer/manifests.py writes these files from this data and SKILL.md's frontmatter).
    "plugin": {
        "manifests": {
            ".claude-plugin/marketplace.json": {
                "name": "{name}",
                "owner": {"name": "{author}"},
                "metadata": {"description": "{description}"},
                "plugins": [{"name": "{name}", "source": "./", "description": "{description}"}],
            },
            ".claude-plugin/plugin.json": {
                "name": "{name}",
                "version": "{version}",
                "description": "{description}",
                "author": {"name": "{author}"},
                "license": "{license}",
                "skills": ["./"],  # the plugin's root is the skill folder
                "hooks": "{hooks}",
            },
        },
        "root": "${CLAUDE_PLUGIN_ROOT}",
        # enabledPlugins in these files switch `<name>@<marketplace>` on (user, then project)
        "enabled_in": {
            "user": ("settings.json",),
            "project": (".claude/settings.json", ".claude/settings.local.json"),
        },
        "id": "{name}@{name}",
        "install": ("claude plugin marketplace add {source}", "claude plugin install {id}"),
        "uninstall": ("claude plugin uninstall {id}", "claude plugin marketplace remove {name}"),
    },
}


def call(payload):
    turn, fired = turn_call(NAME, payload, "prompt_id")
    if turn:
        if fired is not None and fired.event == MODEL:  # PostToolUse of a finished subagent
            response = payload.get("tool_response")
            if isinstance(response, dict) and response.get("status") == "completed":
                fired.tool_input = text(response.get("agentId"))  # sync waits for its answer
        return fired
    return Call(
        NAME,
        payload.get("session_id"),
        transcript_path=payload.get("transcript_path"),
        cwd=payload.get("cwd"),
        agent=payload.get("agent_id"),
        tool=tool_name(payload.get("tool_name"), TOOLS),
        tool_input=payload.get("tool_input"),
        tool_use_id=payload.get("tool_use_id"),
        model=payload.get("model"),
        prompt_id=payload.get("prompt_id"),
    )


def render(decision):
    """PreToolUse's answer: the reason for the model, a systemMessage for the person; at a
    prompt or a turn's end only a stop is said (render_stop)."""
    if answering_turn():
        return render_stop(decision)
    if not decision:
        return ""
    kind = decision["kind"]
    model_text = decision.get("model_text") or ""
    person_text = decision.get("person_text") or ""
    specific = {"hookEventName": "PreToolUse"}
    answer = {"hookSpecificOutput": specific}
    if kind == TELL:
        specific["additionalContext"] = model_text
    elif kind == ASK:
        specific["permissionDecision"] = "ask"
        # An ask's reason is shown to the person, who decides.
        specific["permissionDecisionReason"] = person_text or model_text
    else:
        specific["permissionDecision"] = "deny"
        specific["permissionDecisionReason"] = model_text or person_text
        if kind == STOP:
            answer["continue"] = False
            answer["stopReason"] = person_text or model_text
    if person_text and kind != ASK:
        answer["systemMessage"] = person_text
    if kind == TELL and not model_text:
        del answer["hookSpecificOutput"]
    return jsonio.dumps(answer)


def sync(book, call):
    """Bring the book up to date with the session's files; False when there is no transcript."""
    main = call.transcript_path
    if not main or not call.session_id:
        return False
    entry = _read(book, call, main, call.agent)
    ended = call.tool_input if call.event == MODEL else None  # after a subagent: its id
    if isinstance(ended, str):
        deadline = time.monotonic() + SUBAGENT_END_WAIT_S
        while not text_loops.answered(book.state, ended) and time.monotonic() < deadline:
            time.sleep(0.01)
            _read(book, call, main, ended)
        text_loops.note(book.state, ended, None)  # its run of answers ended with it
    if call.prompt_id and entry.get("prompt") != call.prompt_id:
        # The person's new prompt (a Stop hook's continuation keeps the id): the answers read
        # up to here were given before it, and a run of the same answer starts again. (A
        # session's first call: only its prompt tells that what was read came before.)
        if "prompt" in entry or call.event == PROMPT:
            text_loops.reset(book.state)
        entry["prompt"] = call.prompt_id
    return True


def _read(book, call, main, agent):
    """Read what the session's files gained (agent's file looked at whatever its age); the main
    file's entry."""
    files = book.state["files"]
    folder = fs.dirname(main)
    subagents = fs.join(folder, call.session_id, "subagents")
    for path, found in _subagent_files(book.state.setdefault("folders", {}), subagents):
        follow(book, path, {"agent": found})
    if _old_layout(files.get(main)):
        for path, found in _sibling_files(folder, call.session_id, book):
            follow(book, path, {"agent": found})
    entry = main_entry(book, main)
    read_all(book, main, lambda entry: _Reader(book, entry), agent_file, agent)
    return entry


def _subagent_files(seen, folder, depth=0):
    """(path, agent id) of the agent files under folder, three folders deep at most.

    A folder whose modification time is the one seen when it was last listed, and at least a
    second old (a file made within the same clock tick would not change it), is not listed
    again: its files are followed already; its subfolders are still looked into.
    """
    try:
        stamp = fs.stat(folder).st_mtime_ns
    except OSError:
        seen.pop(folder, None)
        return []
    known = seen.get(folder)
    found = []
    if isinstance(known, list) and len(known) == 2 and known[0] == stamp:
        subfolders = known[1]
    else:
        try:
            entries = list(fs.scandir(folder))
        except OSError:
            return []
        subfolders = []
        for item in entries:
            name = item.name
            if name.startswith("agent-") and name.endswith(".jsonl"):
                found.append((item.path, name[6:-6]))
            elif depth < 3 and item.is_dir(follow_symlinks=False):
                subfolders.append(item.path)
        if time.time_ns() - stamp > 10**9:
            seen[folder] = [stamp, subfolders]
        else:
            seen.pop(folder, None)
    for subfolder in subfolders if isinstance(subfolders, list) else ():
        if isinstance(subfolder, str):
            found.extend(_subagent_files(seen, subfolder, depth + 1))
    return found


def _old_layout(main_entry):
    """Sibling agent files exist only before 2.1.2; unknown versions are looked at too."""
    version = (main_entry or {}).get("ver")
    if not isinstance(version, str):
        return True
    try:
        parts = tuple(int(part) for part in version.split(".")[:3])
    except ValueError:
        return True
    return parts < (2, 1, 2)


def _sibling_files(folder, session_id, book):
    """(path, agent id) of the agent files beside the transcript that are this session's, looked
    for when the folder changed (2.0.28 to 2.1.1 wrote them there, for every session)."""
    found = []
    for name in listed(book, folder) or ():
        if not (name.startswith("agent-") and name.endswith(".jsonl")):
            continue
        path = fs.join(folder, name)
        if not followed(book, path) and _first_session_id(path) != session_id:
            follow(book, path, {"foreign": True})
            continue
        found.append((path, name[6:-6]))
    return found


def _first_session_id(path):
    try:
        record = jsonio.loads(first_line(path))
        return record.get("sessionId") if isinstance(record, dict) else None
    except (OSError, ValueError):
        return None
