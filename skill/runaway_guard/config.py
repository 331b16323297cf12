"""Configuration: defaults, then the user's file, then the environment; a project may only tighten.

A repository must not be able to switch off the guard that protects its user's money, so the
project file `.runaway-guard.json` can lower caps and thresholds but never raise or remove them.
Nor can it name the team, the person or the servers their spend is published to (team.py): those
come from the user's file or the environment only.

Every file and variable is outside input, the agent's or a cloned repository's: a number out of
its range, a file too large, not UTF-8 or not one JSON object is a problem line (in hook.log and
the status), and the guard goes on with the rest. None of it may loosen a limit: a user file
that breaks keeps its last valid values (_user_file), a project file's are ignored.
"""

from . import fs, jsonio
from .money import MAX_USD

PREFIX = "RUNAWAY_GUARD_"
PROJECT_FILE = ".runaway-guard.json"
# A config file is a few lines; a larger one is not read further. Every call reads the files,
# so this bounds what a hostile one costs it (about 15 ms at worst).
MAX_FILE_BYTES = 64 << 10
REMEMBERED = "config.last-good.json"  # the user file's last valid numbers, in the state dir
MAX_COUNT = 1_000_000

DEFAULTS = {
    "max_usd": 25.0,
    "warn_at": 0.8,
    "daily_usd": 0.0,
    "max_failures": 5,
    "max_repeats": 5,
    "team_monthly_usd": 0.0,
    "person_daily_usd": 0.0,
    "team_refresh_s": 20.0,
    "project_daily_usd": 0.0,
    "project_weekly_usd": 0.0,
    "project_monthly_usd": 0.0,
    "max_session_hours": 0.0,
    "max_autonomous_minutes": 0.0,
    "max_window_share": 0.0,  # of a plan's usage window (plans.py)
}
# Caps where 0 means "no cap": tightening a 0 means setting one.
_CAPS = (
    "max_usd",
    "daily_usd",
    "team_monthly_usd",
    "person_daily_usd",
    "project_daily_usd",
    "project_weekly_usd",
    "project_monthly_usd",
    "max_window_share",
)
_TIMES = ("max_session_hours", "max_autonomous_minutes")  # 0 means none, as for a cap
_COUNTS = ("max_failures", "max_repeats")
_USER_ONLY = ("team_refresh_s",)  # numbers a project file may not set at all
# What each number takes, (lowest, highest, how to say it): anything else, huge, infinite,
# NaN, negative or not a number, is ignored with a problem line. The bounds keep every sum
# finite: a cap in picodollars (money.PICO) stays far inside a float's range.
_USD = f"give USD from 0 (no cap) to {MAX_USD:,}"
_RANGES = {
    **dict.fromkeys(_CAPS, (0, MAX_USD, _USD)),
    "warn_at": (0, 1, "give a share above 0, at most 1"),
    **dict.fromkeys(_COUNTS, (1, MAX_COUNT, f"give a whole number from 1 to {MAX_COUNT:,}")),
    "team_refresh_s": (1, 3600, "give seconds from 1 to 3600"),
    "max_session_hours": (0, 8760, "give hours from 0 (none) to 8760"),
    "max_autonomous_minutes": (0, 525600, "give minutes from 0 (none) to 525600"),
    "max_window_share": (0, 1, "give a share from 0 (no cap) to 1"),
}
_NAMED_KEYS = 5  # keys a problem line names one by one, per file and kind of problem
_LONG_DIGITS = 100  # an integer literal this long that json cannot read is only a bad value
# Team budgets (team.py): who and where, from the user's file or the environment only.
TEAM_TEXTS = ("team", "user", "pushgateway_url", "prometheus_url")
# The project's label in the team's published figures (team.py): a name, not a limit, so the
# project's own file may set it too.
TEAM_PROJECT = "team_project"
_KNOWN_FILE_KEYS = (
    *DEFAULTS,
    *TEAM_TEXTS,
    TEAM_PROJECT,
    "team_fail_closed",
    "state_dir",
    "off",
    "interrupt",
    "notify_url",
    "plan",
)
# Where a warning or a stop is sent (notify.py): from the user's file or the environment only.
NOTIFY_VARIABLE = PREFIX + "NOTIFY_URL"
NOTIFY_PREFIXES = ("ntfy+", "slack+", "discord+", "teams+", "json+")
MAX_NOTIFY_URLS = 8
# A flag's value that guards more, when a file gives it twice (_merge).
_GUARDING_FLAG = {"off": False, "interrupt": True, "team_fail_closed": True}
_FILE_TYPE, _REGULAR = 0o170000, 0o100000  # st_mode's file type bits, and a regular file's
_LABEL = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")


class Config:
    """The effective limits, where they came from, and what was wrong with the inputs."""

    def __init__(self, values, state_dir, off, problems, sources, user_path, interrupt=True):
        self.max_usd = values["max_usd"]
        self.warn_at = values["warn_at"]
        self.daily_usd = values["daily_usd"]
        self.max_failures = values["max_failures"]
        self.max_repeats = values["max_repeats"]
        self.team_monthly_usd = values["team_monthly_usd"]
        self.person_daily_usd = values["person_daily_usd"]
        self.team_refresh_s = values["team_refresh_s"]
        self.project_daily_usd = values["project_daily_usd"]
        self.project_weekly_usd = values["project_weekly_usd"]
        self.project_monthly_usd = values["project_monthly_usd"]
        self.max_session_hours = values["max_session_hours"]
        self.max_autonomous_minutes = values["max_autonomous_minutes"]
        self.max_window_share = values["max_window_share"]
        self.plan = frozenset()  # the hosts the person runs on a plan (plans.setting)
        # Team budgets: all None (and team_fail_closed False) unless a team is fully configured.
        self.team = self.user = self.pushgateway_url = self.prometheus_url = None
        self.team_fail_closed = False
        self.team_project = None  # the project's label in the team's figures (team.py)
        self.environ = None  # the call's environment, kept when a team is configured
        self.state_dir = state_dir
        self.off = off
        self.problems = problems
        self.sources = sources
        self.user_path = user_path
        # Whether a stop may also interrupt the host's run out of band (Codex: Ctrl-C to
        # `codex exec`, Esc to its TUI in tmux); off, a stop is only the refusal.
        self.interrupt = interrupt
        self.notify_urls = ()  # where warnings and stops are sent (notify.py)


def user_config_path(environ=fs.environ):
    base = environ.get("XDG_CONFIG_HOME") or fs.join(_home(environ), ".config")
    return fs.join(base, "runaway-guard", "config.json")


def default_state_dir(environ=fs.environ):
    base = environ.get("XDG_STATE_HOME") or fs.join(_home(environ), ".local", "state")
    return fs.join(base, "runaway-guard")


def _home(environ):
    return environ.get("HOME") or fs.expanduser("~")


def _number(key, value):
    """The setting's value when it is a number in the setting's range (in a file a JSON number
    or a string holding one, as the environment gives them), else None. Booleans are not
    numbers here. The range is checked before any conversion: an integer of thousands of digits
    has no float, and NaN fails every comparison."""
    if isinstance(value, str):
        try:
            value = float(value.strip())  # thousands of digits: inf, out of range
        except ValueError:
            return None
    elif isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    low, high, _ = _RANGES[key]
    if not low <= value <= high or (key == "warn_at" and value == 0):
        return None
    if key in _COUNTS:
        return int(value) if value == int(value) else None
    return float(value) + 0.0  # -0.0 is 0


def _invalid(name, key, value):
    """The problem line for a number setting's value that is not valid: name is where it was
    given (a file's path and key, or a variable)."""
    return f"{name}={_shown(value)} is not valid ({_RANGES[key][2]}); ignored"


def _shown(value):
    """A value as a problem line shows it: short, whatever it is."""
    if isinstance(value, _LongInteger):
        return f"an integer of {value.digits} digits"
    if isinstance(value, int) and value.bit_length() > 64:  # repr refuses over 4,300 digits
        return f"an integer of about {value.bit_length() * 3 // 10} digits"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class _LongInteger:
    """An integer in a file too long for int() to read (over 4,300 digits since Python 3.11,
    the security releases of 3.9 and 3.10 included): no setting's value, but no reason to drop
    the rest of the file."""

    def __init__(self, digits):
        self.digits = digits


def _read_file(path, problems):
    """(settings, mtime): the members of the JSON object in path, duplicate keys merged (see
    _merge) and unknown keys noted; {} when there is no file. settings is None, with the
    reason noted, when the file cannot be used at all: not a regular file, larger than
    MAX_FILE_BYTES, not UTF-8, not one JSON object (nesting too deep for the parser included)."""
    try:
        data, mtime = _read_bytes(path)
    except FileNotFoundError:
        return {}, None
    except OSError as error:
        problems.append(f"{path}: cannot be read ({error.strerror or error}); ignored")
        return None, None
    if len(data) > MAX_FILE_BYTES:
        problems.append(
            f"{path}: larger than {MAX_FILE_BYTES >> 10} KiB, read no further than that; ignored"
        )
        return None, mtime
    try:
        pairs = _members(data.decode("utf-8-sig"))
    except UnicodeDecodeError as error:
        problems.append(f"{path}: not valid UTF-8 (byte {error.start}); ignored")
        return None, mtime
    except ValueError as error:
        problems.append(f"{path}: {error}; ignored")
        return None, mtime
    settings = _merge(pairs, path, problems)
    unknown = [key for key in settings if key not in _KNOWN_FILE_KEYS]
    _note_keys(problems, path, unknown, "unknown key {} ignored", "more unknown keys ignored")
    return settings, mtime


def _note_keys(problems, path, keys, saying, rest):
    """A problem line for each of the first few keys, one for the rest: a file of thousands of
    keys must not make thousands of lines (the state keeps them, the log writes them)."""
    for key in keys[:_NAMED_KEYS]:
        problems.append(f"{path}: " + saying.format(_shown(key)))
    if len(keys) > _NAMED_KEYS:
        problems.append(f"{path}: {len(keys) - _NAMED_KEYS} {rest}")


def _read_bytes(path):
    """(the file's first MAX_FILE_BYTES + 1 bytes, its mtime in ns). Opened without waiting
    and read only if it is a regular file: a FIFO in its place would wait for a writer, a
    link to /dev/zero never end."""
    fd = fs.open(path, fs.O_RDONLY | fs.O_NONBLOCK)
    try:
        info = fs.fstat(fd)
        if info.st_mode & _FILE_TYPE != _REGULAR:
            raise OSError("not a regular file")
        chunks, size = [], 0
        while size <= MAX_FILE_BYTES:
            chunk = fs.read(fd, MAX_FILE_BYTES + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks), info.st_mtime_ns
    finally:
        fs.close(fd)


def _members(text):
    """(key, value) for each member of the one JSON object text holds, in order, a key given
    twice twice (json.loads keeps the last silently); ValueError saying why when text is not
    one JSON object."""
    try:
        return _walk(text)
    except ValueError:
        try:
            value = jsonio.loads(text)
        except ValueError as error:  # json's precise error
            raise ValueError(f"not valid JSON ({error})") from None
        if isinstance(value, dict):
            raise  # pragma: no cover - what json reads as an object, _walk does too
        raise ValueError(f"must hold a JSON object, not {type(value).__name__}") from None


def _walk(text):
    pairs = []
    pos = _space(text, 0)
    if text[pos : pos + 1] != "{":
        raise ValueError("not an object")
    pos = _space(text, pos + 1)
    closed = text[pos : pos + 1] == "}"
    while not closed:
        if text[pos : pos + 1] != '"':
            raise ValueError(f"no key at {pos}")
        key, pos = jsonio.value_at(text, pos)
        pos = _space(text, pos)
        if text[pos : pos + 1] != ":":
            raise ValueError(f"no ':' at {pos}")
        value, pos = _value(text, _space(text, pos + 1))
        pairs.append((key, value))
        pos = _space(text, pos)
        closed = text[pos : pos + 1] == "}"
        if not closed:
            if text[pos : pos + 1] != ",":
                raise ValueError(f"no ',' at {pos}")
            pos = _space(text, pos + 1)
    if _space(text, pos + 1) != len(text):
        raise ValueError(f"extra data after {pos}")
    return pairs


def _value(text, pos):
    """(value, end) of the JSON value at text[pos]; an integer too long to read is a
    _LongInteger."""
    try:
        return jsonio.value_at(text, pos)
    except ValueError:
        end = pos + (text[pos : pos + 1] == "-")
        while end < len(text) and "0" <= text[end] <= "9":
            end += 1
        if end - pos < _LONG_DIGITS:
            raise
        return _LongInteger(end - pos), end


def _space(text, pos):
    """Where the JSON whitespace from text[pos] on ends."""
    end = len(text)
    while pos < end and text[pos] in " \t\n\r":
        pos += 1
    return pos


def _merge(pairs, path, problems):
    """The settings of a file whose keys may come twice. JSON readers disagree on which value
    a repeated key has (json.loads keeps the last), so the guard takes the one that guards
    more: the tightest number, off only if every `off` says so, interrupt and
    team_fail_closed if any says so, and for text JSON's last."""
    settings, repeated = {}, {}
    for key, value in pairs:
        if key not in settings:
            settings[key] = value
            continue
        repeated[key] = True
        earlier = settings[key]
        if key in DEFAULTS:
            old, new = _number(key, earlier), _number(key, value)
            if new is None or (old is not None and _tighter(key, old, new) == old):
                value = earlier
        elif key in _GUARDING_FLAG and earlier is _GUARDING_FLAG[key]:
            value = earlier
        settings[key] = value
    _note_keys(
        problems,
        path,
        list(repeated),
        "{} is given more than once; the value that guards more applies",
        "more keys given more than once",
    )
    return settings


def _remembered_path(environ):
    """Where the user file's last valid numbers are kept: the state dir the environment or the
    default names, not the file's own `state_dir`, which a broken file no longer says."""
    return fs.join(environ.get(PREFIX + "STATE_DIR") or default_state_dir(environ), REMEMBERED)


def _remembered(path):
    """The numbers _remember kept, each checked again; {} when there are none."""
    try:
        data, _ = _read_bytes(path)
        kept = jsonio.loads(data)
    except (OSError, ValueError):
        return {}
    if not isinstance(kept, dict):
        return {}
    numbers = {key: _number(key, kept.get(key)) for key in DEFAULTS}
    return {key: value for key, value in numbers.items() if value is not None}


def _remember(path, numbers, mtime):
    """Keep the numbers the user file gives, stamped with its mtime (so a call whose file is
    unchanged finds the stamp equal and writes nothing); best effort."""
    temp = f"{path}.{fs.getpid()}.tmp"
    try:
        fs.makedirs(fs.dirname(path), 0o700)
        fd = fs.open(temp, fs.O_WRONLY | fs.O_CREAT | fs.O_EXCL, 0o600)
        try:
            fs.write(fd, jsonio.dumps(numbers, sort_keys=True).encode())
        finally:
            fs.close(fd)
        fs.utime(temp, ns=(mtime, mtime))
        fs.replace(temp, path)
    except OSError:
        try:
            fs.remove(temp)
        except OSError:
            pass


def _stamp(path):
    try:
        return fs.stat(path).st_mtime_ns
    except (OSError, ValueError):
        return None


def _find_project_file(cwd):
    """The nearest .runaway-guard.json from cwd up to the repository root."""
    if not cwd:
        return None
    directory = fs.abspath(cwd)
    for _ in range(64):
        candidate = fs.join(directory, PROJECT_FILE)
        if fs.isfile(candidate):
            return candidate
        if fs.exists(fs.join(directory, ".git")):
            return None
        parent = fs.dirname(directory)
        if parent == directory:
            return None
        directory = parent
    return None


def _tighter(key, current, proposed):
    if key in _CAPS or key in _TIMES:
        if proposed == 0:
            return current
        return proposed if current == 0 else min(current, proposed)
    return min(current, proposed)


def load(cwd=None, environ=fs.environ):
    """The effective configuration for a call made in cwd."""
    problems = []
    values = dict(DEFAULTS)
    sources = dict.fromkeys(DEFAULTS, "default")

    user_path = user_config_path(environ)
    user = _user_file(user_path, environ, values, sources, problems)

    for key in DEFAULTS:
        name = PREFIX + key.upper()
        raw = environ.get(name)
        if raw is None or raw == "":
            continue
        value = _number(key, raw)
        if value is None:
            problems.append(_invalid(name, key, raw))
        else:
            values[key], sources[key] = value, "environment"

    project = {}
    project_path = _find_project_file(cwd)
    if project_path:
        project = _read_file(project_path, problems)[0] or {}
        for key in ("off", "state_dir", "notify_url", "plan", *TEAM_TEXTS):
            if key in project:
                problems.append(f"{project_path}: {key} can only be set by the user; ignored")
        for key in DEFAULTS:
            if key not in project:
                continue
            if key in _USER_ONLY:
                problems.append(f"{project_path}: {key} can only be set by the user; ignored")
                continue
            value = _number(key, project[key])
            if value is None:
                problems.append(_invalid(f"{project_path}: {key}", key, project[key]))
                continue
            tighter = _tighter(key, values[key], value)
            if tighter != values[key]:
                values[key], sources[key] = tighter, "project"
            elif value != values[key]:
                problems.append(
                    f"{project_path}: {key}={_shown(project[key])} would loosen the limit; "
                    "a project file can only tighten"
                )

    interrupt = _interrupt(user, user_path, environ, project_path, project, problems)
    state_dir = (
        environ.get(PREFIX + "STATE_DIR")
        or _user_state_dir(user, user_path, problems)
        or default_state_dir(environ)
    )
    off = environ.get(PREFIX + "OFF", "") == "1" or _user_off(user, user_path, problems)
    settings = Config(
        values, fs.expanduser(state_dir), off, problems, sources, user_path, interrupt
    )
    if environ.get(PREFIX + "TEAM") or user.get("team"):
        _team(settings, user, project, environ, problems, user_path)
    settings.team_project = _team_project(environ, project, project_path, problems)
    if environ.get(NOTIFY_VARIABLE) or user.get("notify_url"):
        settings.notify_urls = _notify_urls(user, environ, user_path, problems)
    if environ.get(PREFIX + "PLAN") or "plan" in user:
        from . import plans

        settings.plan = plans.setting(user, user_path, environ, problems)
    return settings


def _team_project(environ, project, project_path, problems):
    """The project's label for the team's figures: the project file's, else the environment's
    (a CI job's); None when none is set or it is not a label. (A user file's would name every
    project alike.)"""
    for raw, where in (
        (project.get(TEAM_PROJECT), f"{project_path}: {TEAM_PROJECT}"),
        (environ.get(PREFIX + TEAM_PROJECT.upper()), PREFIX + TEAM_PROJECT.upper()),
    ):
        if raw is None or raw == "":
            continue
        if isinstance(raw, str) and is_label(raw.strip()):
            return raw.strip()
        problems.append(
            f"{where}={_shown(raw)} is not valid (use 1 to 64 of A-Z a-z 0-9 . _ -); ignored"
        )
    return None


def _notify_urls(user, environ, user_path, problems):
    """The URLs a warning or a stop is sent to: the environment's, else the user's file's (a
    text or a list of texts), split at spaces and commas. One that is not an http(s) URL, with
    a prefix of NOTIFY_PREFIXES or none, is a problem line showing it without its secrets."""
    raw, where = environ.get(NOTIFY_VARIABLE), NOTIFY_VARIABLE
    if not raw:
        raw, where = user.get("notify_url"), f"{user_path}: notify_url"
    texts = raw if isinstance(raw, list) else [raw]
    if not all(isinstance(text, str) for text in texts):
        problems.append(f"{where} is not a URL or a list of URLs; ignored")
        return ()
    urls = []
    for url in " ".join(texts).replace(",", " ").split():
        bare = url.split("+", 1)[1] if url.startswith(NOTIFY_PREFIXES) else url
        host = bare.partition("://")[2].partition("/")[0].rpartition("@")[2]
        if bare.startswith(("http://", "https://")) and host and url.isprintable():
            urls.append(url)
        else:
            from . import notify

            problems.append(
                f"{where}: {notify.shown(url)[:200]!r} is not an http:// or https:// URL "
                f"(a prefix {', '.join(NOTIFY_PREFIXES)} may choose the format); ignored"
            )
    if len(urls) > MAX_NOTIFY_URLS:
        problems.append(f"{where}: more than {MAX_NOTIFY_URLS} URLs; the first are used")
    return tuple(urls[:MAX_NOTIFY_URLS])


def _user_file(path, environ, values, sources, problems):
    """The user's file: its numbers into values, and its settings ({} when it has none or
    cannot be used) for the rest. A value, or a whole file, that cannot be used gives way to
    the last valid one the file held (_remember), never to a default that may be looser: a
    broken file must not lift the limits its person set."""
    user, mtime = _read_file(path, problems)
    numbers, invalid = {}, []
    for key in DEFAULTS:
        if user and key in user:
            value = _number(key, user[key])
            if value is None:
                problems.append(_invalid(f"{path}: {key}", key, user[key]))
                invalid.append(key)
            else:
                numbers[key] = value
    kept_path = _remembered_path(environ)
    if user is None or invalid:
        kept = _remembered(kept_path)
        held = {key: kept[key] for key in (kept if user is None else invalid) if key in kept}
        if held:
            numbers.update(held)
            shown = ", ".join(f"{key}={value:g}" for key, value in held.items())
            problems.append(
                f"{path}: until it is fixed, the last valid values it gave hold: {shown}"
            )
    if user is not None and mtime is not None and mtime != _stamp(kept_path):
        _remember(kept_path, numbers, mtime)
    for key, value in numbers.items():
        values[key], sources[key] = value, "user"
    return user or {}


def _user_state_dir(user, path, problems):
    value = user.get("state_dir")
    if value is None or (isinstance(value, str) and 0 < len(value) <= 4096 and "\0" not in value):
        return value
    problems.append(f"{path}: state_dir={_shown(value)} is not a folder's path; ignored")
    return None


def _user_off(user, path, problems):
    """Whether the user's file turns the guard off: `"off": true`, nothing else."""
    value = user.get("off", False)
    if not isinstance(value, bool):
        problems.append(f"{path}: off={_shown(value)} is not true or false; ignored")
    return value is True


def _team(settings, user, project, environ, problems, user_path):
    """The team settings, each from the environment or else the user's file; only a complete
    and valid set (team, both URLs) switches team budgets on. A URL is shown with its password
    hidden, valid or not. A team named with a set that cannot work turns team budgets off,
    unless team_fail_closed asks to refuse then: settings.team_error says why, and team.py
    refuses every call with it."""
    settings.team_error = None
    texts = {}
    for key in TEAM_TEXTS:
        raw, where = environ.get(PREFIX + key.upper()), PREFIX + key.upper()
        if not raw:
            raw, where = user.get(key), f"{user_path}: {key}"
        if raw is None or raw == "":
            continue
        value = raw.strip() if isinstance(raw, str) else None
        if key in ("team", "user"):
            hint = None if is_label(value) else "use 1 to 64 of A-Z a-z 0-9 . _ -, not . or .."
            shown = raw
        else:
            hint = _url_problem(value)
            from . import log

            shown = log.redact_url(raw) if isinstance(raw, str) else f"a {type(raw).__name__}"
        if hint is None:
            texts[key] = value.rstrip("/") if key.endswith("_url") else value
        else:
            problems.append(f"{where}={shown!r} is not valid ({hint}); ignored")
    raw = environ.get(PREFIX + "TEAM_FAIL_CLOSED")
    closed = raw.strip().lower() in ("1", "true", "yes") if raw else user.get("team_fail_closed")
    closed = closed is True or project.get("team_fail_closed") is True
    missing = [key for key in ("team", "pushgateway_url", "prometheus_url") if key not in texts]
    if missing:
        names = " and ".join(PREFIX + key.upper() for key in missing)
        if not closed:
            if "team" not in missing:
                problems.append(f"team budgets are off: no valid {names}")
            return
        settings.team_error = f"no valid {names}"
        problems.append(
            f"team budgets cannot work (no valid {names}) and team_fail_closed asks to refuse "
            "then: every tool call is refused until they are fixed"
        )
    settings.team = texts.get("team") or "(invalid)"
    settings.environ = environ  # the team's refresh is started with (part of) it
    settings.user = texts.get("user") or login_name(environ)
    settings.pushgateway_url = texts.get("pushgateway_url")
    settings.prometheus_url = texts.get("prometheus_url")
    settings.team_fail_closed = closed


def is_label(value):
    """A team or user name: a label value and a path segment of the Pushgateway's group URL."""
    return bool(value) and len(value) <= 64 and set(value) <= _LABEL and value not in (".", "..")


def _url_problem(value):
    """What is wrong with a team URL (None: nothing). A password's / ? # must be percent-encoded:
    unencoded, they end the host part, and urllib would send the rest of the password as a path
    to the wrong host."""
    if not value or not value.startswith(("http://", "https://")):
        return "give an http:// or https:// URL"
    if " " in value or not value.isprintable():
        return "no spaces or control characters"
    rest = value.partition("://")[2]
    authority_end = min([i for i in map(rest.find, "/?#") if i >= 0] or [len(rest)])
    if "@" in rest[authority_end:]:
        return "a / ? or # in the password must be percent-encoded: %2F %3F %23 (and at signs %40)"
    if "?" in rest or "#" in rest:
        return "no query or fragment: the guard adds the API's paths to the URL"
    host = rest[:authority_end].rpartition("@")[2]
    port = host.rpartition("]")[2] if host.startswith("[") else host
    port = port.partition(":")[2] if ":" in port else None
    if port is not None and not (0 < len(port) <= 5 and set(port) <= set("0123456789")):
        return "give the port as a number"
    if not host or host[0] == ":":
        return "give the host"
    if port is not None and int(port) > 65535:
        return "give a port up to 65535"
    return None


def login_name(environ=fs.environ):
    """The person's login name as a label: LOGNAME/USER, else the password database."""
    name = environ.get("LOGNAME") or environ.get("USER") or environ.get("USERNAME") or ""
    if not name:
        try:
            import pwd

            name = pwd.getpwuid(fs.getuid()).pw_name
        except (ImportError, KeyError, AttributeError):
            name = "unknown"
    label = "".join(c if c in _LABEL else "_" for c in name[:64])
    return label if is_label(label) else "unknown"


def _interrupt(user, user_path, environ, project_path, project, problems):
    """On unless the person turned it off (`interrupt: false`, RUNAWAY_GUARD_INTERRUPT=0); a
    project may turn it back on, never off."""
    interrupt = True
    if "interrupt" in user:
        if isinstance(user["interrupt"], bool):
            interrupt = user["interrupt"]
        else:
            shown = _shown(user["interrupt"])
            problems.append(f"{user_path}: interrupt={shown} is not true or false")
    raw = environ.get(PREFIX + "INTERRUPT")
    if raw in ("0", "1"):
        interrupt = raw == "1"
    elif raw:
        problems.append(f"{PREFIX}INTERRUPT={_shown(raw)} is not 0 or 1; ignored")
    wanted = project.get("interrupt")
    if wanted is True:
        interrupt = True
    elif wanted is False and interrupt:
        problems.append(
            f"{project_path}: interrupt=false would loosen the guard; a project file can only "
            "tighten"
        )
    elif "interrupt" in project and not isinstance(wanted, bool):
        problems.append(f"{project_path}: interrupt={_shown(wanted)} is not true or false; ignored")
    return interrupt
