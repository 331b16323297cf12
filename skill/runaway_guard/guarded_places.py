"""Whether a shell command or a file tool reaches the guard's own places: its state folder, the
user's config folder, the skill's own folder (guard.py, status.py, this package) and a project's
`.runaway-guard.json`. Writing there, deleting there or setting a RUNAWAY_GUARD_ variable could
loosen a limit, so such a call is the person's decision; reading there is not.

Only imported once controls.classify's cheap test found a call that names the guard, its folders
or a status.py (or runs in one of those folders): the common call never comes here. The shell is
read as a shell reads it (shell_words.py), enough for the spellings an agent uses: quotes, `~`,
`$HOME`, `${XDG_CONFIG_HOME}` and the other variables, `cd` before a relative path,
redirections, here documents, pipes into an interpreter, `$(…)`. Whatever it cannot follow (a
variable it does not know, a command substitution) counts against the call when the command also
names a guarded place.
"""

from . import fs
from .config_values import PREFIX as SETTING
from .config_values import PROJECT_FILE
from .control_words import LOOSEN, LOOSENING_FLAGS, STATUS, STATUS_SCRIPT, patched_files
from .shell_words import _NAME_CHARS, parse

PLAIN_FLAGS = ("--json", "--today", "--month", "--help", "-h")
MAX_DEPTH = 8  # nested `$(…)` and `sh -c` deeper than this count as loosening
# A longer command is not read word by word (64 KiB take about 0.4 s): it loosens when it names
# a guarded folder, a guard variable or a project file anywhere.
MAX_READ = 64 << 10


def _words(text):
    return frozenset(text.split())


# Commands that only read what they are given (their output goes to stdout or a redirection,
# judged on its own); a few are readers unless an option makes them write (_writes_anyway).
READERS = _words(
    "cat tac less more head tail ls dir stat file wc du df tree find grep egrep fgrep rg ag "
    "ack jq diff cmp comm md5sum sha1sum sha256sum sha512sum shasum cksum b2sum xxd hexdump od "
    "strings realpath readlink basename dirname echo printf test [ [[ true false : cd pushd popd "
    "pwd which type printenv column cut tr nl fold bat sort sed for case esac in do done then "
    "else elif fi if while until { } ! read exit return"
)
# Words before the command proper: `sudo rm …` removes as much as `rm …` does.
WRAPPERS = _words(
    "sudo doas env command builtin exec nohup nice ionice time timeout stdbuf setsid unbuffer "
    "chronic caffeinate then else do if elif while until ! {"
)
# Interpreters and anything that runs text as code: what the code does cannot be read here.
CODE_RUNNERS = _words(
    "node nodejs deno bun perl ruby php lua Rscript osascript awk gawk mawk nawk sh bash zsh "
    "dash ksh fish csh tcsh eval source . xargs parallel watch"
)
SHELLS = _words("sh bash zsh dash ksh eval")
# Commands that change what they are given a parent folder of: `rm -rf ~/.local/state`.
REMOVERS = _words("rm rmdir mv unlink shred trash trash-put chmod chown chgrp chattr")
# Commands that apply a patch from their input (Codex's model runs `apply_patch <<'EOF'`).
PATCHERS = _words("apply_patch applypatch patch")
# Commands whose last word (or -t DIR) is what they write; the rest is only read.
COPIERS = _words("cp install rsync scp")
_FIND_ACTIONS = ("-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fls")
_GLOB = "*?["


class Places:
    """The guarded folders, normalized, and how each ends (`.config/runaway-guard`): a word
    holding that tail names the folder whatever came before it (`$(echo ~)/.config/…`)."""

    def __init__(self, state_dir, config_dir, skill_dir, environ):
        self.environ = environ
        self.home = environ.get("HOME") or fs.expanduser("~")
        self.state_dir = fs.abspath(fs.expanduser(state_dir))
        self.folders = (self.state_dir, fs.abspath(config_dir), fs.abspath(skill_dir))
        self.tails = tuple(
            folder[folder.rfind("/", 0, folder.rfind("/")) + 1 :] for folder in self.folders
        )
        self.own_status = fs.join(self.folders[2], STATUS_SCRIPT)

    def variable(self, name, cwd):
        """A variable's value as the agent's shell most likely has it; None: not known."""
        if name == "PWD":
            return cwd
        value = self.environ.get(name)
        if value:
            return value
        defaults = {
            "HOME": self.home,
            "XDG_CONFIG_HOME": fs.join(self.home, ".config"),
            "XDG_STATE_HOME": fs.join(self.home, ".local", "state"),
            SETTING + "STATE_DIR": self.state_dir,
        }
        return defaults.get(name)

    def holds(self, path, parents=False):
        """Whether path is a guarded folder or inside one (or, with parents, holds one)."""
        for folder in self.folders:
            if path == folder or path.startswith(folder + "/"):
                return True
            if parents and (folder.startswith(path + "/") or path == "/"):
                return True
        return False

    def named_by(self, word, cwd, parents=False):
        """Whether a word, as a path from cwd (or its part after `=`), reaches a guarded place."""
        if any(tail in word for tail in self.tails):
            return True
        for part in (word, word.partition("=")[2]):
            if not part or (part is word and part.startswith("-")):
                continue
            cut = min((part.find(mark) for mark in _GLOB if mark in part), default=-1)
            if cut >= 0:
                part = part[:cut]
            if part.startswith("/"):
                path = fs.abspath(part)
            elif cwd is not None:
                path = fs.abspath(fs.join(cwd, part))
            else:
                continue
            if self.holds(path, parents):
                return True
            if cut >= 0 and any(folder.startswith(path) for folder in self.folders):
                return True  # a pattern that can match a guarded folder: ~/.config/r*
            if fs.basename(path) == PROJECT_FILE:
                return True
        return False

    def mentioned_in(self, text):
        """Whether code or a here document mentions the guard at all: what it does is unknown."""
        return "runaway" in text or "RUNAWAY" in text or self.names_folder(text)

    def names_folder(self, text):
        return any(folder in text for folder in self.folders) or any(
            tail in text for tail in self.tails
        )


def classify(command, cwd, places, depth=0):
    """LOOSEN when the command would write, delete or move a guarded place or set a guard
    variable; STATUS for a plain call of the guard's own status.py; else None."""
    if depth > MAX_DEPTH:
        return LOOSEN
    if len(command) > MAX_READ:
        named = places.names_folder(command) or SETTING in command or PROJECT_FILE in command
        return LOOSEN if named else None
    commands, nested = parse(command, places, cwd)
    for text in nested:
        if classify(text, cwd, places, depth + 1) == LOOSEN:
            return LOOSEN
    if _loosens(commands, cwd, places, depth):
        return LOOSEN
    if not nested and _plain_status(commands, cwd, places):
        return STATUS
    return None


def _loosens(commands, cwd, places, depth):
    named = _names_anything(commands, cwd, places)
    mentioned = named or _names_anything(commands, cwd, places, code=True)
    for command in commands:
        words = command.words
        verb_at = _verb_index(words)
        verb = fs.basename(words[verb_at]) if verb_at < len(words) else ""
        for target in command.writes:
            if places.named_by(target, cwd) or (named and target in command.opaque):
                return True
        if any(_sets_guard_variable(word, index < verb_at) for index, word in enumerate(words)):
            return True
        if verb in ("cd", "pushd"):
            cwd = _moved(words[verb_at + 1 :], cwd, places)
            continue
        if _is_status(words, verb_at):
            if _status_flags_loosen(words[verb_at:]):
                return True
            continue
        if verb in PATCHERS or (verb == "git" and "apply" in words[verb_at + 1 :]):
            for body in command.here:
                if any(places.named_by(path, cwd) for path in patched_files(body)):
                    return True
        shell_texts = _shell_texts(words[verb_at:], command.here) if verb in SHELLS else []
        for body in shell_texts:
            if classify(body, cwd, places, depth + 1) == LOOSEN:
                return True
        runs_code = verb in CODE_RUNNERS or verb.startswith(("python", "pypy"))
        if runs_code and mentioned and not shell_texts:
            return True  # what the code does with a guarded place cannot be read here
        if verb in READERS and not _writes_anyway(verb, words[verb_at + 1 :]):
            continue
        args = words[verb_at + 1 :]
        if cwd is not None and places.holds(cwd):
            return True  # it works inside a folder of the guard's
        if named and (cwd is None or command.opaque):
            return True  # on something unknown, in a command line that names the guard
        if cwd is None and any(places.mentioned_in(word) for word in args):
            return True
        if verb in COPIERS:
            args = _destination(args)
        parents = verb in REMOVERS or verb == "find"
        if any(places.named_by(word, cwd, parents) for word in args):
            return True
        if any(SETTING in word for word in args):
            return True  # unset RUNAWAY_GUARD_MAX_USD, env -u …
    return False


def _names_anything(commands, cwd, places, code=False):
    """Whether a word, a here document or a redirection of the command line names a guarded
    place (what an unknown word in it is then judged by); with code, also whether inline code
    or a here document mentions the guard at all (what an interpreter in it is judged by)."""
    for command in commands:
        words = command.words
        verb_at = _verb_index(words)
        status = _is_status(words, verb_at)
        for index, word in enumerate(words):
            if status and index == _script_index(words, verb_at):
                continue
            if places.named_by(word, cwd):
                return True
            if code and _is_code(word) and places.mentioned_in(word):
                return True
        texts = command.here
        if any(places.mentioned_in(text) if code else places.names_folder(text) for text in texts):
            return True
        if any(places.named_by(target, cwd) for target in command.writes):
            return True
        if verb_at < len(words) and fs.basename(words[verb_at]) in ("cd", "pushd"):
            cwd = _moved(words[verb_at + 1 :], cwd, places)
    return False


def _is_code(word):
    return any(mark in word for mark in " ;()'\"\n$`{=")


def _verb_index(words):
    """Where the command proper starts: after assignments and wrappers (`sudo -u x`, `env A=1`,
    `timeout 5`)."""
    index = 0
    while index < len(words):
        word = words[index]
        if _assignment_name(word) is not None:
            index += 1
            continue
        name = fs.basename(word)
        if name not in WRAPPERS:
            return index
        index += 1
        while index < len(words) and words[index].startswith("-"):
            index += 2 if words[index] in ("-u", "-g", "-n", "-p", "-C", "-o", "-e") else 1
        if name == "timeout" and index < len(words):
            index += 1  # its duration
    return index


def _assignment_name(word):
    name, equals, _ = word.partition("=")
    if equals and name and not name[0].isdigit() and set(name) <= _NAME_CHARS:
        return name
    return None


def _sets_guard_variable(word, before_verb):
    """RUNAWAY_GUARD_MAX_USD=500 before a command (a nested agent's limits), or as a word
    anywhere (`export …`, `echo 'export …=1' >> ~/.bashrc`)."""
    at = word.find(SETTING)
    if at < 0:
        return False
    rest = word[at + len(SETTING) :]
    name_end = next((i for i, char in enumerate(rest) if char not in _NAME_CHARS), len(rest))
    return before_verb or rest[name_end : name_end + 1] == "="


def _moved(args, cwd, places):
    """The folder after `cd ARGS` from cwd; None when it cannot be known."""
    args = [arg for arg in args if arg not in ("-L", "-P", "--")]
    if not args:
        return places.home
    target = args[0]
    if target == "-" or (cwd is None and not target.startswith("/")):
        return None
    return fs.abspath(fs.join(cwd or "/", target))


def _writes_anyway(verb, args):
    """A reader told to write: `sed -i`, `find -delete`/`-exec`, `sort -o`."""
    if verb == "sed":
        return any(
            arg.startswith("--in-place") or (arg[:1] == "-" and arg[1:2] != "-" and "i" in arg)
            for arg in args
        )
    if verb == "find":
        return any(arg in _FIND_ACTIONS for arg in args)
    if verb == "sort":
        return any(arg == "-o" or arg.startswith("--output") for arg in args)
    return False


def _destination(args):
    """What a copy writes: -t DIR / --target-directory=DIR, else its last word."""
    for index, arg in enumerate(args):
        if arg in ("-t", "--target-directory") and index + 1 < len(args):
            return [args[index + 1]]
        if arg.startswith("--target-directory="):
            return [arg]
    operands = [arg for arg in args if not arg.startswith("-")]
    return operands[-1:]


def _shell_texts(words, here):
    """What a shell runs: its -c text (or eval's words), or a here document it reads."""
    if fs.basename(words[0]) == "eval":
        return [" ".join(words[1:])]
    for index, word in enumerate(words[1:], 1):
        if word.startswith("-") and "c" in word and index + 1 < len(words):
            return [words[index + 1]]
    return list(here)


# -- status.py


def _script_index(words, verb_at):
    """Where the script is in `[python3 [-u]] …/status.py`, else -1 (`python3 -c CODE` and
    `-m MODULE` run no script)."""
    if verb_at >= len(words):
        return -1
    if fs.basename(words[verb_at]).startswith("python"):
        index = verb_at + 1
        while index < len(words) and words[index].startswith("-"):
            if words[index] in ("-c", "-m") or words[index] == "-":
                return -1
            index += 2 if words[index] in ("-W", "-X") else 1
        return index if index < len(words) else -1
    return verb_at


def _is_status(words, verb_at):
    index = _script_index(words, verb_at)
    return index >= 0 and fs.basename(words[index]) == STATUS_SCRIPT


def _status_flags_loosen(words):
    """--raise-cap, --clear, --off, or a prefix argparse takes for one (`--r`, `--of`)."""
    for word in words:
        flag = word.partition("=")[0]
        if len(flag) > 2 and any(loosening.startswith(flag) for loosening in LOOSENING_FLAGS):
            return True
    return False


def _plain_status(commands, cwd, places):
    """Only `[cd DIR &&] [python3] <this guard's status.py> [--json|--today|--month [YYYY-MM]|
    --session ID]`."""
    if commands and commands[0].words[:1] == ["cd"] and commands[0].op in ("&&", ";", "\n"):
        first = commands[0]
        if first.writes or first.here or first.opaque:
            return False
        cwd = _moved(first.words[1:], cwd, places)
        commands = commands[1:]
    if len(commands) != 1 or cwd is None:
        return False
    command = commands[0]
    words = command.words
    index = _script_index(words, 0)
    if index < 0 or index > 1 or fs.basename(words[index]) != STATUS_SCRIPT:
        return False
    if command.here or command.op not in (None, ";", "\n"):
        return False
    if any(target != "/dev/null" for target in command.writes):
        return False
    if words[index] in command.opaque or not _plain_flags(words[index + 1 :]):
        return False
    return _same_file(fs.join(cwd, words[index]), places.own_status)


def _plain_flags(args):
    expect_value = False
    for before, word in zip(["", *args], args):
        if expect_value:
            expect_value = False
        elif word == "--session":
            expect_value = True
        elif before == "--month" and _is_month(word):
            continue  # --month's optional YYYY-MM
        elif word not in PLAIN_FLAGS and not word.startswith(("--session=", "--month=")):
            return False
    return not expect_value


def _is_month(word):
    return len(word) == 7 and word[4] == "-" and word.replace("-", "", 1).isdigit()


def _same_file(path, own):
    """Whether path is the guard's own status.py once links are resolved (a cloned repo's
    status.py, or a link to it, is not)."""
    import os.path

    return os.path.realpath(path) == os.path.realpath(own)
