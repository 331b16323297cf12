"""Configuration: defaults, then the user's file, then the environment; a project may only tighten.

A repository must not be able to switch off the guard that protects its user's money, so the
project file `.runaway-guard.json` can lower caps and thresholds but never raise or remove them.
Nor can it name the team, the person or the servers their spend is published to (team.py): those
come from the user's file or the environment only.
"""

from . import fs, jsonio

PREFIX = "RUNAWAY_GUARD_"
PROJECT_FILE = ".runaway-guard.json"

DEFAULTS = {
    "max_usd": 25.0,
    "warn_at": 0.8,
    "daily_usd": 0.0,
    "max_failures": 5,
    "max_repeats": 5,
    "team_monthly_usd": 0.0,
    "person_daily_usd": 0.0,
    "team_refresh_s": 20.0,
}
# Caps where 0 means "no cap": tightening a 0 means setting one.
_CAPS = ("max_usd", "daily_usd", "team_monthly_usd", "person_daily_usd")
_COUNTS = ("max_failures", "max_repeats")
_USER_ONLY = ("team_refresh_s",)  # numbers a project file may not set at all
# Team budgets (team.py): who and where, from the user's file or the environment only.
TEAM_TEXTS = ("team", "user", "pushgateway_url", "prometheus_url")
_KNOWN_FILE_KEYS = (*DEFAULTS, *TEAM_TEXTS, "team_fail_closed", "state_dir", "off", "interrupt")
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
        # Team budgets: all None (and team_fail_closed False) unless a team is fully configured.
        self.team = self.user = self.pushgateway_url = self.prometheus_url = None
        self.team_fail_closed = False
        self.environ = None  # the call's environment, kept when a team is configured
        self.state_dir = state_dir
        self.off = off
        self.problems = problems
        self.sources = sources
        self.user_path = user_path
        # Whether a stop may also interrupt the host's run out of band (Codex: Ctrl-C to
        # `codex exec`, Esc to its TUI in tmux); off, a stop is only the refusal.
        self.interrupt = interrupt


def user_config_path(environ=fs.environ):
    base = environ.get("XDG_CONFIG_HOME") or fs.join(_home(environ), ".config")
    return fs.join(base, "runaway-guard", "config.json")


def default_state_dir(environ=fs.environ):
    base = environ.get("XDG_STATE_HOME") or fs.join(_home(environ), ".local", "state")
    return fs.join(base, "runaway-guard")


def _home(environ):
    return environ.get("HOME") or fs.expanduser("~")


def _number(key, value):
    """A valid setting value, or None. Booleans are not numbers here."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if not isinstance(value, (int, float)) or value != value or value < 0:
        return None
    if value == float("inf"):
        return None
    if key == "warn_at":
        return float(value) if 0 < value <= 1 else None
    if key in _COUNTS:
        return int(value) if value >= 1 and value == int(value) else None
    if key == "team_refresh_s":
        return float(value) if 1 <= value <= 3600 else None
    return float(value)


def _read_file(path, problems):
    """The settings object in a JSON file; {} with a problem noted when it is unusable."""
    try:
        with open(path, "rb") as handle:
            data = jsonio.loads(handle.read().decode("utf-8-sig"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as error:
        problems.append(f"{path}: not valid JSON ({error}); using the other settings")
        return {}
    if not isinstance(data, dict):
        problems.append(f"{path}: must hold a JSON object; ignored")
        return {}
    for key in data:
        if key not in _KNOWN_FILE_KEYS:
            problems.append(f"{path}: unknown key {key!r} ignored")
    return data


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
    if key in _CAPS:
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
    user = _read_file(user_path, problems)
    for key in DEFAULTS:
        if key in user:
            value = _number(key, user[key])
            if value is None:
                problems.append(f"{user_path}: {key}={user[key]!r} is not valid; ignored")
            else:
                values[key], sources[key] = value, "user"

    for key in DEFAULTS:
        raw = environ.get(PREFIX + key.upper())
        if raw is None or raw == "":
            continue
        value = _number(key, raw)
        if value is None:
            problems.append(f"{PREFIX}{key.upper()}={raw!r} is not valid; ignored")
        else:
            values[key], sources[key] = value, "environment"

    project = {}
    project_path = _find_project_file(cwd)
    if project_path:
        project = _read_file(project_path, problems)
        for key in ("off", "state_dir", *TEAM_TEXTS):
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
                problems.append(f"{project_path}: {key}={project[key]!r} is not valid; ignored")
                continue
            tighter = _tighter(key, values[key], value)
            if tighter != values[key]:
                values[key], sources[key] = tighter, "project"
            elif value != values[key]:
                problems.append(
                    f"{project_path}: {key}={project[key]!r} would loosen the limit; "
                    "a project file can only tighten"
                )

    interrupt = _interrupt(user, user_path, environ, project_path, project, problems)
    state_dir = environ.get(PREFIX + "STATE_DIR") or user.get("state_dir")
    if not isinstance(state_dir, str) or not state_dir:
        state_dir = default_state_dir(environ)
    off = environ.get(PREFIX + "OFF", "") == "1" or user.get("off") is True
    settings = Config(
        values, fs.expanduser(state_dir), off, problems, sources, user_path, interrupt
    )
    if environ.get(PREFIX + "TEAM") or user.get("team"):
        _team(settings, user, project, environ, problems, user_path)
    return settings


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
            problems.append(f"{user_path}: interrupt={user['interrupt']!r} is not true or false")
    raw = environ.get(PREFIX + "INTERRUPT")
    if raw in ("0", "1"):
        interrupt = raw == "1"
    elif raw:
        problems.append(f"{PREFIX}INTERRUPT={raw!r} is not 0 or 1; ignored")
    wanted = project.get("interrupt")
    if wanted is True:
        interrupt = True
    elif wanted is False and interrupt:
        problems.append(
            f"{project_path}: interrupt=false would loosen the guard; a project file can only "
            "tighten"
        )
    elif "interrupt" in project and not isinstance(wanted, bool):
        problems.append(f"{project_path}: interrupt={wanted!r} is not true or false; ignored")
    return interrupt
