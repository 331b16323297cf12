"""What each setting takes: its default, its range, the value that guards more, how a bad
value is shown; where the user's files are; what a team or user name may be. Shared by the
configuration's reader (config.py) and the readers of its files (config_file.py) and its team
and notify settings (config_team.py)."""

from . import fs
from .money import MAX_USD

PREFIX = "RUNAWAY_GUARD_"
PROJECT_FILE = ".runaway-guard.json"
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
# Team budgets (team.py): who and where, from the user's file or the environment only.
TEAM_TEXTS = ("team", "user", "pushgateway_url", "prometheus_url")
# The project's label in the team's published figures (team.py): a name, not a limit, so the
# project's own file may set it too.
TEAM_PROJECT = "team_project"
# Where a warning or a stop is sent (notify.py): from the user's file or the environment only.
NOTIFY_VARIABLE = PREFIX + "NOTIFY_URL"
# The characters a team, user or project label may hold (is_label).
LABEL_TEXT = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")


def user_config_path(environ=fs.environ):
    base = environ.get("XDG_CONFIG_HOME") or fs.join(_home(environ), ".config")
    return fs.join(base, "runaway-guard", "config.json")


def default_state_dir(environ=fs.environ):
    base = environ.get("XDG_STATE_HOME") or fs.join(_home(environ), ".local", "state")
    return fs.join(base, "runaway-guard")


def _home(environ):
    return environ.get("HOME") or fs.expanduser("~")


def number(key, value):
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


def invalid_line(name, key, value):
    """The problem line for a number setting's value that is not valid: name is where it was
    given (a file's path and key, or a variable)."""
    return f"{name}={shown_value(value)} is not valid ({_RANGES[key][2]}); ignored"


def shown_value(value):
    """A value as a problem line shows it: short, whatever it is."""
    if isinstance(value, int) and value.bit_length() > 64:  # repr refuses over 4,300 digits
        return f"an integer of about {value.bit_length() * 3 // 10} digits"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def tighter_value(key, current, proposed):
    if key in _CAPS or key in _TIMES:
        if proposed == 0:
            return current
        return proposed if current == 0 else min(current, proposed)
    return min(current, proposed)


def is_label(value):
    """A team or user name: a label value and a path segment of the Pushgateway's group URL."""
    return (
        bool(value) and len(value) <= 64 and set(value) <= LABEL_TEXT and value not in (".", "..")
    )
