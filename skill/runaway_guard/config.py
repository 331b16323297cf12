"""Configuration: defaults, then the user's file, then the environment; a project may only tighten.

A repository must not be able to switch off the guard that protects its user's money, so the
project file `.runaway-guard.json` can lower caps and thresholds but never raise or remove them.
Nor can it name the team, the person or the servers their spend is published to (team.py): those
come from the user's file or the environment only.

Every file and variable is outside input, the agent's or a cloned repository's: a number out of
its range, a file too large, not UTF-8 or not one JSON object is a problem line (in hook.log and
the status), and the guard goes on with the rest. None of it may loosen a limit: a user file
that breaks keeps its last valid values (config_file.user_file), a project file's are ignored.
"""

import sys

from . import fs
from .config_values import (
    DEFAULTS,
    NOTIFY_VARIABLE,
    PREFIX,
    PROJECT_FILE,
    TEAM_PROJECT,
    TEAM_TEXTS,
    default_state_dir,
    invalid_line,
    is_label,
    number,
    shown_value,
    tighter_value,
    user_config_path,
)

_USER_ONLY = ("team_refresh_s",)  # numbers a project file may not set at all


# types.SimpleNamespace, not imported: a class of the guard's own costs each call about 67k
# instructions to create (bench/README.md), an instance of this one nothing of the kind.
_Namespace = type(sys.implementation)


def _settings(values, state_dir, off, problems, sources, user_path, interrupt):
    """The effective limits (values: one for each of DEFAULTS), where they came from, and what
    was wrong with the inputs."""
    return _Namespace(
        **values,
        plan=frozenset(),  # the hosts the person runs on a plan (plans.setting)
        # Team budgets: all None (and team_fail_closed False) unless a team is fully configured.
        team=None,
        user=None,
        pushgateway_url=None,
        prometheus_url=None,
        team_fail_closed=False,
        team_project=None,  # the project's label in the team's figures (team.py)
        environ=None,  # the call's environment, kept when a team is configured
        state_dir=state_dir,
        off=off,
        problems=problems,
        sources=sources,
        user_path=user_path,
        # Whether a stop may also interrupt the host's run out of band (Codex: Ctrl-C to
        # `codex exec`, Esc to its TUI in tmux); off, a stop is only the refusal.
        interrupt=interrupt,
        notify_urls=(),  # where warnings and stops are sent (notify.py)
    )


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


def _may_exist(path):
    """False only where path is surely missing: then the file reader (config_file.py) need not
    load, and the reader's own open finds what else may be wrong."""
    try:
        fs.stat(path)
    except FileNotFoundError:
        return False
    except (OSError, ValueError):
        pass
    return True


def load(cwd=None, environ=fs.environ):
    """The effective configuration for a call made in cwd."""
    problems = []
    values = dict(DEFAULTS)
    sources = dict.fromkeys(DEFAULTS, "default")

    user_path = user_config_path(environ)
    user = {}
    if _may_exist(user_path):
        from . import config_file

        user = config_file.user_file(
            user_path, environ, values=values, sources=sources, problems=problems
        )

    for key in DEFAULTS:
        name = PREFIX + key.upper()
        raw = environ.get(name)
        if raw is None or raw == "":
            continue
        value = number(key, raw)
        if value is None:
            problems.append(invalid_line(name, key, raw))
        else:
            values[key], sources[key] = value, "environment"

    project = {}
    project_path = _find_project_file(cwd)
    if project_path:
        from . import config_file

        project = config_file.read_file(project_path, problems)[0] or {}
        for key in ("off", "state_dir", "notify_url", "plan", *TEAM_TEXTS):
            if key in project:
                problems.append(f"{project_path}: {key} can only be set by the user; ignored")
        for key in DEFAULTS:
            if key not in project:
                continue
            if key in _USER_ONLY:
                problems.append(f"{project_path}: {key} can only be set by the user; ignored")
                continue
            value = number(key, project[key])
            if value is None:
                problems.append(invalid_line(f"{project_path}: {key}", key, project[key]))
                continue
            tighter = tighter_value(key, values[key], value)
            if tighter != values[key]:
                values[key], sources[key] = tighter, "project"
            elif value != values[key]:
                problems.append(
                    f"{project_path}: {key}={shown_value(project[key])} would loosen the limit; "
                    "a project file can only tighten"
                )

    interrupt = _interrupt(
        user,
        user_path,
        environ=environ,
        project_path=project_path,
        project=project,
        problems=problems,
    )
    state_dir = (
        environ.get(PREFIX + "STATE_DIR")
        or _user_state_dir(user, user_path, problems)
        or default_state_dir(environ)
    )
    off = environ.get(PREFIX + "OFF", "") == "1" or _user_off(user, user_path, problems)
    settings = _settings(
        values, fs.expanduser(state_dir), off, problems, sources, user_path, interrupt
    )
    if environ.get(PREFIX + "TEAM") or user.get("team"):
        from . import config_team

        config_team.team(
            settings, user, project=project, environ=environ, problems=problems, user_path=user_path
        )
    settings.team_project = _team_project(
        environ, project, project_path=project_path, problems=problems
    )
    if environ.get(NOTIFY_VARIABLE) or user.get("notify_url"):
        from . import config_team

        settings.notify_urls = config_team.notify_urls(
            user, environ, user_path=user_path, problems=problems
        )
    if environ.get(PREFIX + "PLAN") or "plan" in user:
        from . import plans

        settings.plan = plans.setting(user, user_path, environ=environ, problems=problems)
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
            f"{where}={shown_value(raw)} is not valid (use 1 to 64 of A-Z a-z 0-9 . _ -); ignored"
        )
    return None


def _user_state_dir(user, path, problems):
    value = user.get("state_dir")
    if value is None or (isinstance(value, str) and 0 < len(value) <= 4096 and "\0" not in value):
        return value
    problems.append(f"{path}: state_dir={shown_value(value)} is not a folder's path; ignored")
    return None


def _user_off(user, path, problems):
    """Whether the user's file turns the guard off: `"off": true`, nothing else."""
    value = user.get("off", False)
    if not isinstance(value, bool):
        problems.append(f"{path}: off={shown_value(value)} is not true or false; ignored")
    return value is True


def _interrupt(user, user_path, environ, project_path, project, problems):
    """On unless the person turned it off (`interrupt: false`, RUNAWAY_GUARD_INTERRUPT=0); a
    project may turn it back on, never off."""
    interrupt = True
    if "interrupt" in user:
        if isinstance(user["interrupt"], bool):
            interrupt = user["interrupt"]
        else:
            shown = shown_value(user["interrupt"])
            problems.append(f"{user_path}: interrupt={shown} is not true or false")
    raw = environ.get(PREFIX + "INTERRUPT")
    if raw in ("0", "1"):
        interrupt = raw == "1"
    elif raw:
        problems.append(f"{PREFIX}INTERRUPT={shown_value(raw)} is not 0 or 1; ignored")
    wanted = project.get("interrupt")
    if wanted is True:
        interrupt = True
    elif wanted is False and interrupt:
        problems.append(
            f"{project_path}: interrupt=false would loosen the guard; a project file can only "
            "tighten"
        )
    elif "interrupt" in project and not isinstance(wanted, bool):
        problems.append(
            f"{project_path}: interrupt={shown_value(wanted)} is not true or false; ignored"
        )
    return interrupt
