"""Project budgets: one project's spend per day, week and month, every session and host.

A project is the git top-level folder of the session's working folder (the folder itself
outside git), found by walking up from the working folder with stat calls only (no `git`
process on the hook path) and kept in the session's state; a worktree's `.git` is a file that
names its git folder, where its HEAD is. The branch is read from HEAD whenever the session's
spend has grown: what the session spent since its last call is the branch's it is on now.

Each project has one small file a month (`projects/<project>/<YYYY-MM>.json`) that maps each
day to each branch's sessions and their spend that day in picodollars, written under a lock
like the day file (day_totals.daily_spend): a day, a week (Monday to Sunday, local time, which may
reach into the month before) and a month are sums over at most two files. Their contents are
outside input like the rest: a share that is not a whole number above zero counts nothing.
"""

import time

from . import fs, jsonio, state_file
from .calls import fingerprint
from .wires import spend_wire

WRITE_EVERY_S = 30  # no project cap: this session's shares are written at most this often
KEEP_DAYS = 40  # the session's own day shares kept in its state (a month and a week back)
HEAD_BYTES = 4096
SETTLE_MOST = 16  # the project's other sessions a new session reads again (_settle_others)
_DIR, _FILE, _TYPE = 0o040000, 0o100000, 0o170000
PERIODS = ("day", "week", "month")
CAP_KEYS = {
    "day": "project_daily_usd",
    "week": "project_weekly_usd",
    "month": "project_monthly_usd",
}


def locate(cwd):
    """(project folder, path of its HEAD or None): the nearest folder above cwd with a `.git`
    (a folder, or a worktree's file `gitdir: <path>`), else cwd itself without a HEAD."""
    start = fs.abspath(cwd)
    directory = start
    for _ in range(128):
        dot_git = fs.join(directory, ".git")
        try:
            kind = fs.stat(dot_git).st_mode & _TYPE
        except (OSError, ValueError):
            kind = None
        if kind == _DIR:
            return directory, fs.join(dot_git, "HEAD")
        if kind == _FILE:
            return directory, _worktree_head(directory, dot_git)
        parent = fs.dirname(directory)
        if parent == directory:
            break
        directory = parent
    return start, None


def _worktree_head(directory, dot_git):
    """A worktree's (or submodule's) HEAD: `gitdir: <path>` in its .git file, relative to it."""
    text = _small_text(dot_git)
    if text is None or not text.startswith("gitdir:"):
        return None
    target = text[len("gitdir:") :].strip()
    if not target or "\0" in target:
        return None
    return fs.join(fs.abspath(fs.join(directory, target)), "HEAD")


def _small_text(path):
    try:
        fd = fs.open(path, fs.O_RDONLY | fs.O_NONBLOCK)
    except (OSError, ValueError):
        return None
    try:
        data = fs.read(fd, HEAD_BYTES)
    except OSError:
        return None
    finally:
        fs.close(fd)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def branch(head):
    """The branch HEAD names; `detached@<sha>` for a detached HEAD; '' when unknown."""
    text = _small_text(head) if head else None
    if not text:
        return ""
    text = text.strip()
    if text.startswith("ref:"):
        ref = text[4:].strip()
        name = ref[len("refs/heads/") :] if ref.startswith("refs/heads/") else ref
        return name[:200] if name.isprintable() else ""
    sha = text[:12]
    return f"detached@{sha}" if sha.isalnum() else ""


def file_name(path):
    """The project's folder in the state dir: its base name (readable) and a hash of the path."""
    base = fs.basename(path.rstrip("/")) or "root"
    return f"{state_file.safe_name(base)[:40]}-{fingerprint(path)}"


def month_path(state_dir, name, month):
    return fs.join(state_dir, "projects", name, f"{month}.json")


def week_days(day_tuple):
    """The local dates (YYYY-MM-DD) from this week's Monday to the given day, from a
    time.struct_time; noon of each day steps over a DST change's missing or doubled hour."""
    noon = time.mktime((*day_tuple[:3], 12, 0, 0, 0, 0, -1))
    return [
        time.strftime("%Y-%m-%d", time.localtime(noon - back * 86400))
        for back in range(day_tuple.tm_wday, -1, -1)
    ]


def track(state, call, settings, now=None, settle=True):
    """This session's project and its spend: the state's `project` record brought up to date,
    its shares written to the month file when due; with a project cap, the project's totals
    ({day, week, month} in picodollars, every session) kept in it for the wires. None without
    a working folder."""
    record = state.get("project")
    cwd = call.cwd or state.get("cwd")
    if not cwd:
        return None
    spend_days = state["spend"]["day"]
    first = not isinstance(record, dict)
    if first or record.get("cwd") != cwd:
        record = _moved(record, cwd, spend_days)
        state["project"] = record
    if record.get("label") != settings.team_project:
        record["label"] = settings.team_project
        record["dirty"] = list(record["dirty"]) or [time.strftime("%Y-%m-%d")]
    now = time.time() if now is None else now
    local = time.localtime(now)
    today = time.strftime("%Y-%m-%d", local)
    _attribute(record, spend_days, today=today, now=now)
    capped = any(getattr(settings, key) > 0 for key in CAP_KEYS.values())
    if first and capped and settle:
        _settle_others(settings, record, key=f"{call.host}:{call.session_id}", today=today)
    at = record["written"]
    due = bool(record["dirty"]) and (capped or not 0 <= now - at < WRITE_EVERY_S)
    if not capped and not due:
        record["totals"] = None
        return None
    key = f"{call.host}:{call.session_id}"
    try:
        totals = period_totals(settings.state_dir, record, key=key, local=local, write=due)
    except (OSError, TimeoutError) as error:  # judged all the same; written next call
        from . import log

        log.append(settings.state_dir, "unsaved", f"the project file: {error}")
        totals = period_totals(settings.state_dir, record, key=key, local=local, write=False)
    else:
        if due:
            record["dirty"] = []
            record["written"] = now
    record["totals"] = totals if capped else None
    return record["totals"]


def _settle_others(settings, record, key, today):
    """A new session under a project cap: first read what the project's other sessions of
    today wrote after their last hook call (a run's last answer comes after its last tool
    call, so `claude -p` in a loop would leave each run's last answer out) and write their
    shares. Once per session, at most SETTLE_MOST sessions; one whose state is locked (by a
    call of its own) is left as it is."""
    from . import hosts, log, sessions
    from .calls import Call

    path = month_path(settings.state_dir, record["file"], today[:7])
    shares = month_days(state_file.read_json(path)).get(today, {})
    others = sorted({other for found in shares.values() for other in found} - {key})
    for other in others[:SETTLE_MOST]:
        host, _, session_id = other.partition(":")
        if host not in hosts.NAMES or not session_id:
            continue  # a file's key is outside input: never a path, never a made-up session
        if not fs.isfile(
            state_file.session_paths(settings.state_dir, host, session_id)[1] + state_file.STATE
        ):
            continue

        def settle(state, host=host, session_id=session_id):
            track(state, Call(host, session_id), settings, settle=False)

        try:
            sessions.refresh(settings.state_dir, host, session_id, then=settle, at_once=True)
        except (OSError, TimeoutError, ValueError, sessions.StatusError) as error:
            log.append(settings.state_dir, "project", f"{other} not read again: {error}")


def _moved(record, cwd, spend_days):
    """The record for a session in a new working folder. In another project, what the session
    spent so far stays its old project's (the base), and only what it spends from now on is the
    new one's."""
    path, head = locate(cwd)
    if isinstance(record, dict) and record.get("path") == path:
        return {**record, "cwd": cwd, "head": head}
    return {
        "cwd": cwd,
        "path": path,
        "head": head,
        "file": file_name(path),
        "base": dict(spend_days) if isinstance(record, dict) else {},
        "days": {},
        "dirty": [],
        "branch": "",
        "written": 0.0,
        "totals": None,
    }


def _attribute(record, spend_days, today, now):
    """Give the session's spend each day that its day shares do not hold yet to the branch it is
    on now (HEAD is read only then), marking the day to be written. Days older than KEEP_DAYS
    are dropped from the state."""
    days, base, dirty = record["days"], record["base"], record["dirty"]
    cutoff = time.strftime("%Y-%m-%d", time.localtime(now - KEEP_DAYS * 86400))
    looked = False
    for day, picodollars in spend_days.items():
        if day < cutoff or day > today:
            continue
        shares = days.setdefault(day, {})
        delta = picodollars - base.get(day, 0) - sum(shares.values())
        if delta:
            if not looked:
                record["branch"] = branch(record["head"])
                looked = True
            name = record["branch"]
            shares[name] = shares.get(name, 0) + delta
            if day not in dirty:
                dirty.append(day)
    for old in [day for day in days if day < cutoff]:
        del days[old]
        base.pop(old, None)


def period_totals(state_dir, record, key, local, write=True):
    """The project's totals for the day, week and month of `local`, this session's marked day
    shares counted (and, write=True, first written into their month files under the lock)."""
    week = week_days(local)
    dirty = record["dirty"]
    found = {}
    for month in sorted({day[:7] for day in dirty} | {day[:7] for day in week}):
        path = month_path(state_dir, record["file"], month)
        mine = [day for day in dirty if day[:7] == month]
        if mine and write:
            state_file.private_dir(fs.dirname(path))
            with state_file.Lock(path + ".lock"):
                days = _mine_in(month_days(state_file.read_json(path)), record, mine=mine, key=key)
                data = {"path": record["path"], "label": record.get("label"), "days": days}
                state_file.write_atomic(path, jsonio.dumps(data).encode())
        else:
            days = _mine_in(month_days(state_file.read_json(path)), record, mine=mine, key=key)
        found.update(days)
    today = week[-1]
    return {
        "day": day_total(found.get(today)),
        "week": sum(day_total(found.get(day)) for day in week),
        "month": sum(day_total(shares) for day, shares in found.items() if day[:7] == today[:7]),
    }


def _mine_in(days, record, mine, key):
    for day in mine:
        for name, picodollars in record["days"].get(day, {}).items():
            days.setdefault(day, {}).setdefault(name, {})[key] = picodollars
    return days


def month_days(data):
    """A month file's days, each {branch: {session: picodollars}}, with what is not of that
    shape left out (a hostile or torn file counts nothing of what it holds wrongly)."""
    days = data.get("days") if isinstance(data, dict) else None
    if not isinstance(days, dict):
        return {}
    kept = {}
    for day, branches in days.items():
        if isinstance(day, str) and len(day) == 10 and isinstance(branches, dict):
            kept[day] = {
                name: sessions
                for name, sessions in branches.items()
                if isinstance(name, str) and isinstance(sessions, dict)
            }
    return kept


def day_total(branches):
    """One day's spend over its branches and sessions: whole picodollars above zero only."""
    if not isinstance(branches, dict):
        return 0
    return sum(
        picodollars
        for sessions in branches.values()
        if isinstance(sessions, dict)
        for picodollars in sessions.values()
        if type(picodollars) is int and picodollars > 0
    )


def cap_wires(state, settings, tool, warned, ahead=0):
    """The project's caps against its spend and the agent's next request (ahead, estimate.py),
    on the spend ladder (wires.spend_wire): one decision a period whose cap is set."""
    record = state.get("project")
    totals = record.get("totals") if isinstance(record, dict) else None
    if not totals:
        return []
    found = []
    for period, word in (("day", "daily"), ("week", "weekly"), ("month", "monthly")):
        cap_key = CAP_KEYS[period]
        cap = getattr(settings, cap_key)
        if cap <= 0:
            continue
        found.append(
            spend_wire(
                totals[period],
                cap,
                warn_at=settings.warn_at,
                warned=warned.setdefault(f"project_{period}", {}) if warned is not None else {},
                scope="project",
                tool=tool,
                how_to_raise=f"set RUNAWAY_GUARD_{cap_key.upper()} or {cap_key} in "
                "~/.config/runaway-guard/config.json",
                name=f"project {record['path']} {word}",
                raiser="the user",
                detail=f", every session of this {period}",
                ahead=ahead,
            )
        )
    return found


def labelled_months(state_dir, month):
    """This machine's spend in a month per project label a team set (team/ publishes it):
    {label: picodollars}; files without a valid label are left out."""
    from .config import is_label

    folder = fs.join(state_dir, "projects")
    try:
        names = fs.listdir(folder)
    except OSError:
        return {}
    totals = {}
    for name in names:
        data = state_file.read_json(fs.join(folder, name, f"{month}.json"))
        label = data.get("label") if data else None
        if isinstance(label, str) and is_label(label):
            spent = sum(day_total(shares) for shares in month_days(data).values())
            totals[label] = totals.get(label, 0) + spent
    return totals
