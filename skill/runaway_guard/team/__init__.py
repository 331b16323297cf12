"""Team budgets on Prometheus: a monthly cap for a team and a daily cap per person, summed over
every machine of the team (laptops and CI runners alike).

Publishing. Each machine publishes its own running totals for the current month and day,
derived from its exact local ledger (the session states under <state_dir>/sessions, which hold
every priced response's spend per day), to a Prometheus Pushgateway, in one PUT of its whole
group /metrics/job/runaway_guard/team/<team>/user/<user>/machine/<id>. A PUT replaces what the
group held, so a retry, a crash, a restarted gateway or a repeated push never counts a dollar
twice. Every machine owns its group: its id is random, made once in its state dir (hostnames and
/etc/machine-id are shared by containers and cloned VMs). The sessions of all seven hosts on
one machine are one total. Only numbers and these labels leave the machine: no text, prompt, path,
key or message id.

Reading. One query to Prometheus gives the other machines' sums (`machine!="<id>"`): the team's
month and the person's day. The figures the wires use are those plus this machine's own totals
(exact, read locally) plus what this session spent since they were read, so this machine's own
spend is never late by a scrape.

The hook never waits on the network. It reads cache.json, which only the refresh writes
(atomically), and when that is older than the refresh interval it starts one detached refresh:
stdio on /dev/null, a session of its own, no descriptor of the host's; a lock file (flock),
held while it refreshes, makes it the only one. Servers out of reach: the cache keeps the last
figures and says since when they are stale; the guard fails open (the local caps still hold),
unless team_fail_closed (for CI) asks it to refuse instead, and the hooks retry with a backoff.
Fail-closed also refuses while the figures cannot be known otherwise: a refresh that cannot be
started, one that has not ended in time (the awaited mark), figures long unread with none under
way, team settings that cannot work (_unchecked). While the machine's sessions keep changing,
the refresh stays and refreshes once an interval, so a session's last spend is published even
when no call follows it.

What the servers answer is input: every request has an overall deadline, an answer a size
limit, a sum must be finite and not negative, a redirect is an error (it would carry the
credentials elsewhere). No URL is shown with its password (log.redact_url).

This package is imported only when a team is configured. A hook call imports this module
only: the figures from the cache, the rungs and starting a refresh. The rest runs in the
refresh or for status.py: refresher.py (the detached refresh: its loop, one round, sync),
servers.py (the requests; urllib only there), totals.py (this machine's totals from its
ledgers), metrics.py (the names, paths, text format and query the servers see) and
status.py (status.py's fields).
"""

import time

from .. import fs, state_file, wires
from ..decisions import STOP
from ..money import PICO

VERSION = 1
DEADLINE = 20  # one refresh ends its process after this many seconds, whatever happens
GRACE = 5.0  # seconds a refresh process may take to start and to write what it found
MAX_BACKOFF = 600.0  # the longest wait between attempts while the servers are out of reach
URGENT_GAP = 2.0  # a session near a team cap publishes its spend this soon


def folder(state_dir):
    return fs.join(state_dir, "team")


def private_folder(state_dir):
    """The team folder, made 0700 where it is not; refused when it is a link or another user's
    (its files are made 0600, without following links)."""
    path = folder(state_dir)
    state_file.private_dir(path)
    info = fs.lstat(path)
    if info.st_mode & 0o170000 != 0o040000 or (fs.getuid and info.st_uid != fs.getuid()):
        raise OSError(f"{path} is a link or another user's: remove it, the guard makes it again")
    if info.st_mode & 0o077:
        fs.chmod(path, 0o700)
    return path


def cache_path(state_dir):
    return fs.join(folder(state_dir), "cache.json")


def periods(now):
    """The month and day a spend at time now belongs to: local calendar, as the ledger's."""
    local = time.localtime(now)
    return time.strftime("%Y-%m", local), time.strftime("%Y-%m-%d", local)


def read_cache(state_dir):
    cache = state_file.read_json(cache_path(state_dir))
    return cache if cache and cache.get("v") == VERSION else None


def _int(value):
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _amount(value):
    """A sum of spend from the cache: an int of picodollars, never negative (None: not one)."""
    value = _int(value)
    return value if value is not None and value >= 0 else None


def _month_day(spend_days, month, day):
    """A session's spend in picodollars this month and this day, from its ledger's days."""
    month_total = day_total = 0
    if isinstance(spend_days, dict):
        prefix = month + "-"
        for name, picodollars in spend_days.items():
            if isinstance(picodollars, int) and isinstance(name, str) and name.startswith(prefix):
                month_total += picodollars
                if name == day:
                    day_total = picodollars
    return month_total, day_total


# -- the hook's side: figures from the cache, the rungs, starting a refresh ---------------------


def figures(settings, state, cache, now):
    """What this call sees: the team's month and the person's day in picodollars (until they are
    known, this session's own: a floor), with the cache's times and error."""
    month, day = periods(now)
    result = {
        "team": None,
        "person": None,
        "known": {"team": False, "person": False},
        "delta": 0,
        "refreshed_at": None,
        "stale_since": None,
        "error": None,
        "warning": None,
    }
    spend = state.get("spend") if isinstance(state.get("spend"), dict) else {}
    now_month, now_day = _month_day(spend.get("day"), month, day)
    # Until the figures are known, this session's own spend is what the team has spent at least.
    result["team"], result["person"] = now_month, now_day
    if not cache or (cache.get("team"), cache.get("user")) != (settings.team, settings.user):
        return result
    for key in ("stale_since", "error", "warning"):
        result[key] = cache.get(key)
    result["refreshed_at"] = cache.get("fetched_at")
    sessions = cache.get("sessions")
    key = f"{state.get('host')}:{state.get('session_id')}"
    base = sessions.get(key) if isinstance(sessions, dict) else None
    if not (isinstance(base, list) and len(base) == 2 and all(_int(v) is not None for v in base)):
        started = state.get("started")
        snapshot = cache.get("snapshot_at")
        if isinstance(started, (int, float)) and isinstance(snapshot, (int, float)):
            # Not in the snapshot: new since (all of its spend is new), or idle long before it
            # (its spend is in the published total; what it adds now shows at the next refresh).
            base = [0, 0] if started >= snapshot else [now_month, now_day]
        else:
            base = [now_month, now_day]
    for scope, period, now_value, index in (
        ("team", "month", now_month, 0),
        ("person", "day", now_day, 1),
    ):
        if cache.get(period) != (month if period == "month" else day):
            continue  # a figure of last month (or yesterday) says nothing about this one
        others, mine = _amount(cache.get("others_" + period)), _amount(cache.get("mine_" + period))
        if mine is None:
            continue
        delta = now_value - base[index]
        # Without the others': this machine's. Never less than this session's own spend.
        result[scope] = max((others or 0) + mine + delta, now_value)
        result["known"][scope] = others is not None
        if scope == "team":
            result["delta"] = delta
    return result


def due(settings, cache, now, urgent=False):
    """Whether this call should start a refresh (the lock still makes it the only one)."""
    if not cache or (cache.get("team"), cache.get("user")) != (settings.team, settings.user):
        return True
    stamps = [cache.get(key) for key in ("fetched_at", "attempted_at")]
    last = max([stamp for stamp in stamps if isinstance(stamp, (int, float))] or [0])
    gap = settings.team_refresh_s
    failures = _int(cache.get("failures")) or 0
    if failures and not settings.team_fail_closed:
        gap = min(gap * 2 ** min(failures, 12), max(MAX_BACKOFF, gap))
    elif urgent or cache.get("day") != periods(now)[1]:
        gap = min(gap, URGENT_GAP)
    return not 0 <= now - last < gap


def decisions(settings, state, tool, warned, now=None, ahead=0):
    """The team's and the person's rungs on the spend ladder for this call (ahead: the next
    request's estimate, picodollars); starts a refresh when the cached figures are due (never
    waits for it)."""
    now = time.time() if now is None else now
    capped = settings.team_monthly_usd > 0 or settings.person_daily_usd > 0
    if settings.team_error:  # unusable settings, and fail-closed asks to refuse then
        return [_closed(settings, _unusable(settings))] if capped else []
    cache = read_cache(settings.state_dir)
    seen = figures(settings, state, cache=cache, now=now)
    warn = settings.warn_at
    near = any(
        figure is not None and cap > 0 and figure >= warn * cap * PICO
        for figure, cap in (
            (seen["team"], settings.team_monthly_usd),
            (seen["person"], settings.person_daily_usd),
        )
    )
    not_started = None
    if due(settings, cache, now, urgent=near and seen["delta"] > 0):
        not_started = _start(settings, state.get("host"), state.get("session_id"))
        if not_started:
            from .. import log

            log.append(settings.state_dir, "team", not_started)
    found = []
    for scope, cap_key, name, raiser, whose in (
        (
            "team",
            "team_monthly_usd",
            f"monthly team ({settings.team})",
            "the team's budget owner",
            "the team's machines",
        ),
        (
            "person",
            "person_daily_usd",
            f"daily per-person ({settings.user})",
            "the user or the team's budget owner",
            f"{settings.user}'s machines today",
        ),
    ):
        if seen[scope] is not None:
            found.append(
                wires.spend_wire(
                    seen[scope],
                    getattr(settings, cap_key),
                    warn_at=warn,
                    warned=warned,
                    scope=scope,
                    tool=tool,
                    how_to_raise=raise_text(settings, cap_key),
                    name=name,
                    raiser=raiser,
                    detail=_detail(seen, scope, whose=whose, now=now),
                    ahead=ahead,
                )
            )
    if settings.team_fail_closed and capped:
        why = not_started or _unchecked(settings, seen, now)
        if why:
            found.append(_closed(settings, why))
    return found


def _start(settings, host=None, session_id=None):
    """start_refresh; what kept it from starting one (None: started, or one runs)."""
    try:
        start_refresh(settings, host, session_id)
    except Exception as error:
        return f"the team refresh could not be started ({type(error).__name__}: {error})"
    return None


def _unchecked(settings, seen, now):
    """Why the team's figures count as unknown (None: they are known): a refresh failed; one
    started has not ended in time (it could not run, or it was killed); or no refresh read
    them for longer than a lingering one takes, and none is under way."""
    if seen["error"]:
        since = seen["stale_since"]
        when = _clock(since) if isinstance(since, (int, float)) else "now"
        return f"the team servers are out of reach since {when} ({seen['error']})"
    try:
        awaited = fs.stat(awaited_path(settings.state_dir)).st_mtime
    except OSError:
        awaited = None
    if awaited is not None:
        if now - awaited <= DEADLINE + GRACE:
            return None  # a refresh is under way: the last figures stand until it ends
        return f"the team refresh started at {_clock(awaited)} has not ended (see hook.log)"
    refreshed = seen["refreshed_at"]
    if isinstance(refreshed, (int, float)):
        if 0 <= now - refreshed <= settings.team_refresh_s + 2 * DEADLINE + GRACE:
            return None
        return f"the team's figures were last read at {_clock(refreshed)}"
    return "the team's figures were never read"


def _clock(moment):
    return time.strftime("%H:%M:%S", time.localtime(moment))


def _unusable(settings):
    return f"the team settings are not usable ({settings.team_error}; see status.py)"


def _detail(seen, scope, whose, now):
    """What a figure covers, for the texts."""
    refreshed = seen["refreshed_at"]
    if not seen["known"][scope] or not isinstance(refreshed, (int, float)):
        return ", this machine's spend: the other machines' is not known yet"
    return f", all of {whose}, as of {_clock(refreshed)}, {max(int(now - refreshed), 0)} s ago"


def _shown_url(url):
    from .. import log

    return url and log.redact_url(url)


def raise_text(settings, key):
    """Who can raise a team cap, and where it is set."""
    source = settings.sources.get(key)
    if source == "environment":
        return (
            f"ask whoever sets {settings_env(key)} for this machine (the team's admin: the "
            "host's managed settings or the CI job)"
        )
    if source == "project":
        return f"the project's .runaway-guard.json sets {key}; change it there"
    owner = " (agree it with the team's budget owner)" if key == "team_monthly_usd" else ""
    return f"set {key} in {settings.user_path}{owner}"


def settings_env(key):
    return "RUNAWAY_GUARD_" + key.upper()


def _closed(settings, why):
    """The refusal of fail-closed: why is what keeps the team's budget from being checked."""
    from .. import log

    why = log.redact(why)  # a cache written by an older version may hold a URL whole
    return {
        "kind": STOP,
        "wire": "team",
        "model_text": (
            f"runaway-guard: the team's budget cannot be checked ({why}), and this machine is "
            "set to refuse tool calls then. Stop now and tell the user."
        ),
        "person_text": (
            f"runaway-guard stopped the agent: the team budget of {settings.team} cannot be "
            f"checked: {why}. RUNAWAY_GUARD_TEAM_FAIL_CLOSED asks to refuse then. Make the "
            "servers reachable (or fix the team settings), or unset it."
        ),
    }


def awaited_path(state_dir):
    """A mark made when a refresh is started and none was awaited, removed when one ends: its
    time says since when one is awaited (_unchecked)."""
    return fs.join(folder(state_dir), "awaited")


def start_refresh(settings, host=None, session_id=None):
    """Start one detached refresh unless one runs; True when started. Never waits for it.

    Called with the session lock held: the refresh waits for that lock before it reads, so it
    sees what this call is about to save."""
    state_dir, environ = settings.state_dir, settings.environ
    path = fs.join(private_folder(state_dir), "refresh.lock")
    if fs.lockf is None:
        # Windows: a lock file created exclusively, removed by the refresh (or when old).
        try:
            if time.time() - fs.stat(path).st_mtime > DEADLINE + settings.team_refresh_s + 10:
                fs.remove(path)
        except OSError:
            pass
        try:
            fs.close(fs.open(path, fs.O_WRONLY | fs.O_CREAT | fs.O_EXCL, 0o600))
        except OSError:
            return False
        _await(state_dir)
        _spawn(state_dir, environ, None, (host, session_id))
        return True
    fd = fs.open(path, fs.O_RDWR | fs.O_CREAT_NOFOLLOW, 0o600)
    try:
        if not _try_flock(fd):
            return False  # a refresh is running
        _await(state_dir)
        _spawn(state_dir, environ, fd, (host, session_id))
        return True
    finally:
        fs.close(fd)  # the refresh holds the lock through its own copy until it exits


def _await(state_dir):
    """Make the awaited mark unless there is one: a refresh that never ends must not look new
    because the next call starts another."""
    try:
        fs.close(fs.open(awaited_path(state_dir), fs.O_WRONLY | fs.O_CREAT | fs.O_EXCL, 0o600))
    except FileExistsError:
        pass


def _try_flock(fd):
    """The refresh lock is a flock, not the sessions' record lock (state_file.try_lock): the
    refresh process inherits it with the descriptor, and a record lock is not inherited."""
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        return False


def _spawn(state_dir, environ, lock_fd, session):
    from .. import detached

    host, session_id = (item if isinstance(item, str) else "" for item in session)
    args = (str(lock_fd or -1), host, session_id)
    detached.start("team.refresher", args, environ=environ, state_dir=state_dir, pass_fd=lock_fd)
