"""The person's controls: status calls always pass; loosening a limit is the person's decision.

An agent may run `status.py` to answer "what has this cost?", and nothing the guard has refused
stands in its way. Raising a cap, clearing a stop or turning the guard off must come from the
person: where the host can ask, the guard asks them; where it cannot, it refuses and gives the
agent the exact command for the person to run in their own terminal.
"""

from . import fs
from .config_values import PROJECT_FILE
from .control_words import LOOSEN, LOOSENING_FLAGS, STATUS_SCRIPT, patched_files

# The skill's own folder: guard.py, status.py and this package. Editing it switches the guard off.
SKILL_DIR = fs.dirname(fs.dirname(fs.abspath(__file__)))
# Where a file tool names the file it writes, deletes or moves, by host: Claude Code, Cursor,
# Gemini CLI and Qwen Code say file_path, Copilot CLI path, OpenCode filePath; notebooks and
# MCP file servers add the others.
PATH_KEYS = (
    "file_path",
    "path",
    "filePath",
    "notebook_path",
    "target_file",
    "absolute_path",
    "source",
    "destination",
)
# Where a patch tool has its patch: Codex's apply_patch (command), OpenCode's patch (patchText).
PATCH_KEYS = ("command", "patchText", "patch", "input")
# A tool outside the hosts' maps (an MCP file server's) that changes files, by its name.
_CHANGING_NAMES = ("write", "edit", "delete", "remove", "move", "rename", "patch", "create")


def sh_quote(text):
    """As shlex.quote (which would import re): quoted for a POSIX shell when it must be."""
    if text and all(char.isalnum() or char in "@%+=:,./-_" for char in text):
        return text
    return "'" + text.replace("'", "'\"'\"'") + "'"


def status_command():
    """The status script as a shell command for a person to run."""
    return f"python3 {sh_quote(fs.join(SKILL_DIR, STATUS_SCRIPT))}"


def classify(call, state_dir, config_path, environ=None):
    """STATUS for a plain call of this guard's status.py, LOOSEN for a call that would loosen a
    limit (write, delete or move the guard's state, config or skill folder, set one of its
    variables, run status.py --raise-cap/--clear/--off), else None.

    The common call costs a few substring tests: only a command that names the guard, one of its
    folders or a status.py (or runs inside one of them) is read word by word (guarded_places)."""
    cwd = call.cwd
    command = call.command
    if command is not None:
        if not (_may_reach(command, state_dir) or _works_in(cwd, state_dir)):
            return None
        return _read_command(command, cwd, state_dir, config_path, environ)
    tool = call.tool
    if not isinstance(call.tool_input, dict) or not (
        tool in ("Edit", "Write") or _changes_files(tool)
    ):
        return None
    guarded = (fs.abspath(state_dir), fs.dirname(config_path), SKILL_DIR)
    for key in PATH_KEYS:
        target = call.tool_input.get(key)
        if isinstance(target, str) and target and _inside(_resolve(target, cwd, environ), guarded):
            return LOOSEN
    for key in PATCH_KEYS:
        patch = call.tool_input.get(key)
        if isinstance(patch, str) and _patch_reaches(patch, cwd, state_dir, guarded, environ):
            return LOOSEN
    return None


def _may_reach(text, state_dir):
    """The cheap test: could this text name the guard's places or a status.py at all?"""
    return (
        "runaway" in text
        or "RUNAWAY" in text
        or STATUS_SCRIPT in text
        or state_dir in text
        or SKILL_DIR in text
        or ".local/state" in text  # rm -rf ~/.local/state takes the state folder with it
    )


def _works_in(cwd, state_dir):
    """Whether the call runs in a folder that may be the guard's (then `rm -rf .` reaches it)."""
    return bool(cwd) and ("runaway" in cwd or cwd.startswith((state_dir, SKILL_DIR)))


def _changes_files(tool):
    if not isinstance(tool, str) or tool in ("Bash", "Read", "Agent"):
        return False
    name = tool.lower()
    return any(word in name for word in _CHANGING_NAMES)


def _resolve(target, cwd, environ):
    """The absolute path a file tool's target names (`~` as the agent's home)."""
    if target[:1] == "~" and target[1:2] in ("", "/"):
        target = (environ or fs.environ).get("HOME", "") + target[1:]
    if target[:1] != "/":
        target = fs.join(cwd or fs.getcwd(), target)
    return fs.abspath(target)


def _inside(path, guarded):
    """In a guarded folder, or a project's .runaway-guard.json (rewriting it can loosen)."""
    for folder in guarded:
        if path == folder or path.startswith(folder + "/"):
            return True
    return fs.basename(path) == PROJECT_FILE


def _patch_reaches(patch, cwd, state_dir, guarded, environ):
    if not (_may_reach(patch, state_dir) or _works_in(cwd, state_dir)):
        return False
    return any(_inside(_resolve(path, cwd, environ), guarded) for path in patched_files(patch))


def describe(call):
    """The call in a few words, for the person asked about it: the command, or the tool and
    the file it aims at."""
    if call.command is not None:
        return call.command
    tool_input = call.tool_input if isinstance(call.tool_input, dict) else {}
    targets = [tool_input.get(key) for key in PATH_KEYS]
    for key in PATCH_KEYS:
        if isinstance(tool_input.get(key), str):
            targets += patched_files(tool_input[key])
    named = [target for target in targets if isinstance(target, str) and target]
    return f"{call.tool} {' '.join(named)}".strip()


def _read_command(command, cwd, state_dir, config_path, environ):
    """The cold path: the command read word by word (guarded_places)."""
    from . import guarded_places

    places = guarded_places.Places(
        state_dir, fs.dirname(config_path), SKILL_DIR, environ or fs.environ
    )
    if STATUS_SCRIPT in command and any(flag in command for flag in LOOSENING_FLAGS):
        return LOOSEN  # however it is spelt, piped or fed through xargs
    return guarded_places.classify(command, cwd or fs.getcwd(), places)
