"""One short line for a host's status line: `status.py --statusline`.

The host runs the command after each message and shows its first line under the prompt (Claude
Code passes `session_id`, `transcript_path`, `cwd` and `workspace` on stdin). It runs as often as
the hook, so it reads only the guard's own state: the session's state file and the day file,
never the host's session files; status.py brings the state up to date, this never does.
Whatever stdin holds, it prints one line or nothing.
"""

import time

from . import config, day_totals, fs, hosts, jsonio, state_file
from .money import money, raised_cap, usd

MAX_INPUT = 1 << 20
NAME = "guard"  # the line's first word: which tool is speaking


def main():
    """`guard.py --statusline` (what the installer writes: guard.py is three statements to
    compile, status.py a hundred) and `status.py --statusline`: one line or nothing, exit 0,
    whatever stdin holds (a traceback would show in the host's status line)."""
    try:
        import sys

        text = line(sys.stdin.buffer.read(MAX_INPUT + 1))
        if text:
            sys.stdout.write(text + "\n")
            sys.stdout.flush()
    except BaseException:
        pass
    fs._exit(0)


def line(data, environ=fs.environ, host=None):
    """The line for the status line payload in data (bytes), or '' when it names no session."""
    if len(data) > MAX_INPUT:
        return ""
    try:
        payload = jsonio.loads(data)
    except ValueError:
        return ""
    if not isinstance(payload, dict):
        return ""
    session_id = payload.get("session_id") or payload.get("sessionId")
    if not isinstance(session_id, str) or not session_id or len(session_id) > 512:
        return ""
    settings = config.load(_cwd(payload), environ)
    if settings.off:
        return f"{NAME}: off"
    state = _state(settings.state_dir, session_id, host)
    spend = _pico(state.get("spend", {}).get("total") if state else 0)
    cap = raised_cap(state.get("cap_usd")) if state else None
    cap = settings.max_usd if cap is None else cap
    parts = [f"{NAME} {money(usd(spend))}" + (f" / {money(cap)}" if cap else "")]
    day_file = day_totals.daily_path(settings.state_dir, _today())
    daily = day_totals.day_total(state_file.read_json(day_file) or {})
    if state:  # the day file may lag this session's own figure (hook._daily_spend)
        days = state.get("spend", {}).get("day")
        daily = max(daily, _pico(days.get(_today()) if isinstance(days, dict) else 0))
    if settings.daily_usd or daily:
        today = f"today {money(usd(daily))}"
        parts.append(today + (f" / {money(settings.daily_usd)}" if settings.daily_usd else ""))
    project = _project_day(state)
    if settings.project_daily_usd and project is not None:
        parts.append(f"project {money(usd(project))} / {money(settings.project_daily_usd)}")
    parts.append(_standing(state))
    return " · ".join(parts)


def _project_day(state):
    """The project's spend today as the guard's last call of this session summed it
    (projects.track), or None when the state has no project."""
    record = state.get("project") if state else None
    totals = record.get("totals") if isinstance(record, dict) else None
    return _pico(totals.get("day")) if isinstance(totals, dict) else None


def _standing(state):
    """ok, warned, stopped: <wire> (or off) as the guard's last call left the session."""
    if not state:
        return "ok"
    if state.get("off") is True:
        return "off for this session"
    blocked = state.get("blocked")
    if isinstance(blocked, dict):
        wire = blocked.get("wire")
        return f"stopped: {wire if isinstance(wire, str) else 'unknown'}"[:60]
    warned = state.get("warned")  # a wire's cap once warned about (a project's: in a dict)
    return "warned" if isinstance(warned, dict) and any(warned.values()) else "ok"


def _state(state_dir, session_id, host):
    """The session's state: the named host's, else the first host's that has one (a status line
    payload does not name its host)."""
    for name in (host,) if host else hosts.NAMES:
        path = state_file.session_paths(state_dir, name, session_id)[1] + state_file.STATE
        state = state_file.read_state(path)
        if state:
            return state
    return None


def _cwd(payload):
    workspace = payload.get("workspace")
    cwd = workspace.get("current_dir") if isinstance(workspace, dict) else None
    cwd = cwd if isinstance(cwd, str) else payload.get("cwd")
    return cwd if isinstance(cwd, str) and cwd and "\0" not in cwd else None


def _pico(value):
    return value if type(value) is int and value > 0 else 0


def _today():
    return time.strftime("%Y-%m-%d")
