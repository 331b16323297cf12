"""Team budgets on Prometheus: a monthly cap for a team and a daily cap per person, summed over
every machine of the team (laptops and CI runners alike).

Publishing. Each machine publishes its own running totals for the current month and day,
derived from its exact local ledger (the session states under <state_dir>/sessions, which hold
every priced response's spend per day), to a Prometheus Pushgateway, in one PUT of its whole
group /metrics/job/runaway_guard/team/<team>/user/<user>/machine/<id>. A PUT replaces what the
group held, so a retry, a crash, a restarted gateway or a repeated push never counts a dollar
twice. Every machine owns its group: its id is random, made once in its state dir (hostnames and
/etc/machine-id are shared by containers and cloned VMs). Claude Code and Codex sessions of one
machine are one total. Only numbers and these labels leave the machine: no text, prompt, path,
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

This module is imported only when a team is configured; urllib only in the refresh.
"""

import sys
import time

from . import config, fs, jsonio, state_file, wires
from .decisions import STOP
from .money import PICO, money

VERSION = 1
JOB = "runaway_guard"
MONTH_METRIC = "runaway_guard_month_spend_usd"
DAY_METRIC = "runaway_guard_day_spend_usd"
# This machine's month per project label (`team_project`), beside the two above: a metric of
# its own, so every query of the month and day totals stays as it was.
PROJECT_METRIC = "runaway_guard_project_month_spend_usd"
TIMEOUT = 3.0  # seconds a socket may wait for one step of a request (connecting, a read)
REQUEST_S = 8.0  # seconds one request may take, its whole answer read (a server may trickle)
DEADLINE = 20  # one refresh ends its process after this many seconds, whatever happens
GRACE = 5.0  # seconds a refresh process may take to start and to write what it found
MAX_ANSWER = 1 << 20  # bytes: a longer answer is refused
MAX_BACKOFF = 600.0  # the longest wait between attempts while the servers are out of reach
URGENT_GAP = 2.0  # a session near a team cap publishes its spend this soon
LINGER_S = 600.0  # the longest a refresh process lives (then a hook starts the next one)
ACTIVE_S = 86400.0  # sessions written this recently are listed in the cache (see figures())


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
        for name, pusd in spend_days.items():
            if isinstance(pusd, int) and isinstance(name, str) and name.startswith(prefix):
                month_total += pusd
                if name == day:
                    day_total = pusd
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
    seen = figures(settings, state, cache, now)
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
            from . import log

            log.append(settings.state_dir, "team", not_started)
    found = []
    if seen["team"] is not None:
        found.append(
            wires.spend_wire(
                seen["team"],
                settings.team_monthly_usd,
                warn,
                warned,
                "team",
                tool,
                raise_text(settings, "team_monthly_usd"),
                name=f"monthly team ({settings.team})",
                raiser="the team's budget owner",
                detail=_detail(seen, "team", "the team's machines", now),
                ahead=ahead,
            )
        )
    if seen["person"] is not None:
        found.append(
            wires.spend_wire(
                seen["person"],
                settings.person_daily_usd,
                warn,
                warned,
                "person",
                tool,
                raise_text(settings, "person_daily_usd"),
                name=f"daily per-person ({settings.user})",
                raiser="the user or the team's budget owner",
                detail=_detail(seen, "person", f"{settings.user}'s machines today", now),
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


def report(settings, state, now=None):
    """(fields for status.py --json, what the team's caps refuse) for one session."""
    from . import log

    now = time.time() if now is None else now
    capped = settings.team_monthly_usd > 0 or settings.person_daily_usd > 0
    cache = None if settings.team_error else read_cache(settings.state_dir)
    seen = figures(settings, state, cache, now)
    if settings.team_error:
        why = shown_error = _unusable(settings)
    else:
        starts = settings.environ is not None and due(settings, cache, now)
        not_started = _start(settings) if starts else None
        why = not_started or _unchecked(settings, seen, now)
        shown_error = not_started or (seen["error"] and log.redact(seen["error"]))
    known = seen["known"]
    fields = {
        "team_spend_usd": seen["team"] / PICO if known["team"] else None,
        "team_cap_usd": settings.team_monthly_usd or None,
        "person_spend_usd": seen["person"] / PICO if known["person"] else None,
        "person_cap_usd": settings.person_daily_usd or None,
        "team_refreshed_at": seen["refreshed_at"],
        "team_stale_since": seen["stale_since"],
        "team": {
            "name": settings.team,
            "user": settings.user,
            "month": periods(now)[0],
            "day": periods(now)[1],
            "machine": (cache or {}).get("machine"),
            "error": shown_error,
            "warning": seen["warning"] and log.redact(seen["warning"]),
            "fail_closed": settings.team_fail_closed,
            "refresh_s": settings.team_refresh_s,
            "pushgateway_url": _shown_url(settings.pushgateway_url),
            "prometheus_url": _shown_url(settings.prometheus_url),
            "team_cap_source": settings.sources["team_monthly_usd"],
            "person_cap_source": settings.sources["person_daily_usd"],
            "raise_team_cap": raise_text(settings, "team_monthly_usd"),
            "raise_person_cap": raise_text(settings, "person_daily_usd"),
        },
    }
    refusing = []
    for scope, cap, name in (
        ("team", settings.team_monthly_usd, f"the team {settings.team}'s spend this month"),
        ("person", settings.person_daily_usd, f"{settings.user}'s spend today"),
    ):
        if cap > 0 and seen[scope] >= round(cap * PICO):
            whose = "the team's" if scope == "team" else f"{settings.user}'s"
            detail = _detail(seen, scope, f"{whose} machines", now)
            refusing.append(
                {
                    "wire": scope,
                    "agent": None,
                    "why": f"{name} {money(seen[scope] / PICO)} reached its cap of "
                    f"{money(cap)}{detail}",
                }
            )
    if settings.team_fail_closed and capped and why:
        refusing.append({"wire": "team", "agent": None, "why": _closed(settings, why)["person"]})
    return fields, refusing


def _shown_url(url):
    from . import log

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
    from . import log

    why = log.redact(why)  # a cache written by an older version may hold a URL whole
    return {
        "kind": STOP,
        "wire": "team",
        "model": (
            f"runaway-guard: the team's budget cannot be checked ({why}), and this machine is "
            "set to refuse tool calls then. Stop now and tell the user."
        ),
        "person": (
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
    from . import detached

    host, session_id = (item if isinstance(item, str) else "" for item in session)
    args = (str(lock_fd or -1), host, session_id)
    detached.start("team", args, environ, state_dir, pass_fd=lock_fd)


# -- the refresh: totals from the ledger, one PUT, one query, the cache ---------------------------


def child():
    """The detached refresh's entry point (argv: skill folder, lock fd, host, session id).

    It refreshes, then again every refresh interval while the machine's sessions keep changing
    (so a session's last spend is published even if no call follows it), and exits once they
    are quiet, a refresh failed (the hooks' backoff takes over) or it has lived LINGER_S."""
    try:
        import signal

        alarm = signal.alarm  # a server that accepts and never answers cannot keep it
    except (ImportError, AttributeError):
        alarm = None
    began = time.monotonic()
    if alarm:
        alarm(DEADLINE)  # the first refresh, the wait for the session's lock included
    settings = config.load(None, fs.environ)
    held = int(sys.argv[2]) if fs.lockf is not None and sys.argv[2:3] != ["-1"] else None
    lock = fs.join(folder(settings.state_dir), "refresh.lock")
    try:
        if settings.team:
            host, session_id = [*sys.argv[3:5], "", ""][:2]
            if host and session_id:  # what the call that started this saves, first
                _, base = state_file.session_paths(settings.state_dir, host, session_id)
                try:
                    with state_file.Lock(base + ".lock"):
                        pass
                except OSError:
                    pass
            ends = began + DEADLINE - GRACE
            while True:
                cache = refresh(settings, ends=ends)
                if alarm:
                    alarm(0)
                if cache["error"] or time.monotonic() - began > LINGER_S:
                    break
                if held is not None:
                    import fcntl

                    fcntl.flock(held, fcntl.LOCK_UN)  # asleep: a sync may refresh meanwhile
                time.sleep(settings.team_refresh_s)
                if fs.lockf is None:
                    fs.utime(lock)  # not stale: still running
                if not _changed_since(settings.state_dir, cache["snapshot_at"]):
                    break
                if held is not None and not _try_flock(held):
                    break  # another refresh runs
                latest = read_cache(settings.state_dir) or {}
                if latest.get("attempted_at") != cache["attempted_at"]:
                    break  # another refresh ran meanwhile: the next call starts one when due
                if alarm:
                    alarm(DEADLINE)
                ends = time.monotonic() + DEADLINE - GRACE
    except BaseException as error:
        from . import log

        log.append(settings.state_dir, "team", f"refresh failed: {type(error).__name__}: {error}")
    finally:
        if fs.lockf is None:
            try:
                fs.remove(lock)
            except OSError:
                pass
    fs._exit(0)


def _changed_since(state_dir, moment):
    """Whether any session state or ledger was written after moment."""
    root = fs.join(state_dir, "sessions")
    try:
        hosts = fs.listdir(root)
    except OSError:
        return False
    for host in hosts:
        try:
            entries = list(fs.scandir(fs.join(root, host)))
        except OSError:
            continue
        for entry in entries:
            if not entry.name.endswith((state_file.STATE, ".ledger")):
                continue
            try:
                if entry.stat().st_mtime > moment:
                    return True
            except OSError:
                continue
    return False


def sync(settings):
    """A refresh now, waited for (status.py --team-sync: CI's last step, debugging). It waits
    for a refresh in progress to end (its push must not land after this one's), not longer."""
    path = fs.join(private_folder(settings.state_dir), "refresh.lock")
    lock = state_file.Lock(path, attempt=_try_flock)
    try:
        lock.__enter__()
    except TimeoutError:
        lock = None
    try:
        _await(settings.state_dir)
        return refresh(settings)
    finally:
        if lock is not None:
            lock.__exit__()


def machine_id(state_dir):
    """This machine's id: random, made once in its state dir, never derived from the host."""
    path = fs.join(private_folder(state_dir), "machine")
    for _ in range(2):
        try:
            with open(path, encoding="ascii") as handle:
                value = handle.read().strip()
            if value and len(value) <= 32 and value.isascii() and value.isalnum():
                return value
            fs.remove(path)  # damaged: a new id (its old group is deleted at the next push)
        except (OSError, ValueError):
            pass
        try:
            fd = fs.open(path, fs.O_WRONLY | fs.O_CREAT | fs.O_EXCL, 0o600)
        except FileExistsError:
            continue  # another process made it first: read theirs
        try:
            state_file.write_all(fd, fs.urandom(6).hex().encode())
        finally:
            fs.close(fd)
    raise OSError(f"cannot make a machine id in {path}")


def machine_totals(state_dir, month, day, now):
    """(month, day, {host:session: [month, day]}) of every session in this state dir, in
    picodollars, from the session states (their ledger when a state is unreadable)."""
    local = time.localtime(now)
    month_start = time.mktime((local.tm_year, local.tm_mon, 1, 0, 0, 0, 0, 0, -1))
    month_total = day_total = 0
    sessions = {}
    root = fs.join(state_dir, "sessions")
    try:
        hosts = sorted(fs.listdir(root))
    except OSError:
        hosts = []
    for host in hosts:
        try:
            entries = list(fs.scandir(fs.join(root, host)))
        except OSError:
            continue
        stats = {}
        for entry in entries:
            try:
                stats[entry.name] = entry.stat().st_mtime
            except OSError:
                continue
        for name, mtime in stats.items():
            base, dot, kind = name.rpartition(".")
            if dot + kind not in (state_file.STATE, ".ledger") or mtime < month_start - 86400:
                continue  # written before the month began: none of its spend is this month's
            if kind == "ledger" and base + state_file.STATE in stats:
                continue
            path = fs.join(root, host, name)
            state = state_file.read_state(path) if kind != "ledger" else None
            spend = state.get("spend") if state else None
            if isinstance(spend, dict) and isinstance(spend.get("day"), dict):
                days = spend["day"]
                session_id = state.get("session_id")
            else:
                if kind != "ledger" and base + ".ledger" not in stats:
                    continue
                days, session_id = _ledger_days(fs.join(root, host, base + ".ledger")), None
            pair = _month_day(days, month, day)
            month_total += pair[0]
            day_total += pair[1]
            if isinstance(session_id, str) and mtime >= now - ACTIVE_S:
                sessions[f"{host}:{session_id}"] = list(pair)
    return month_total, day_total, sessions


def _ledger_days(path):
    """A session's spend per day from its append-only ledger: the last row of a key wins."""
    latest = {}
    try:
        with open(path, "rb") as handle:
            for line in handle:
                try:
                    entry = jsonio.loads(line)
                except ValueError:
                    continue
                if (
                    isinstance(entry, list)
                    and len(entry) == 6
                    and isinstance(entry[0], str)
                    and _int(entry[1]) is not None
                    and isinstance(entry[5], str)
                ):
                    latest[entry[0]] = (entry[5], entry[1])
    except OSError:
        return {}
    days = {}
    for name, pusd in latest.values():
        days[name] = days.get(name, 0) + pusd
    return days


def usd_text(pusd):
    """Picodollars as an exact decimal, for the text format."""
    sign = "-" if pusd < 0 else ""
    pusd = abs(pusd)
    return f"{sign}{pusd // PICO}.{pusd % PICO:012d}"


def exposition(month, day, month_pusd, day_pusd, projects=None):
    """The group's body in Prometheus' text format (the grouping labels come from the path);
    projects: {label: picodollars} of the month, for the projects a team labelled."""
    labelled = "".join(
        f'{PROJECT_METRIC}{{month="{month}",project="{label}"}} {usd_text(pusd)}\n'
        for label, pusd in sorted((projects or {}).items())
    )
    if labelled:
        labelled = (
            f"# HELP {PROJECT_METRIC} This machine's runaway-guard total for the month in one "
            "project.\n"
            f"# TYPE {PROJECT_METRIC} gauge\n{labelled}"
        )
    return labelled + (
        f"# HELP {MONTH_METRIC} This machine's runaway-guard ledger total for the month.\n"
        f"# TYPE {MONTH_METRIC} gauge\n"
        f'{MONTH_METRIC}{{month="{month}"}} {usd_text(month_pusd)}\n'
        f"# HELP {DAY_METRIC} This machine's runaway-guard ledger total for the day.\n"
        f"# TYPE {DAY_METRIC} gauge\n"
        f'{DAY_METRIC}{{day="{day}"}} {usd_text(day_pusd)}\n'
    )


def group_path(team, user, machine):
    return f"/metrics/job/{JOB}/team/{team}/user/{user}/machine/{machine}"


PARTS = ("team_others", "team_mine", "person_others", "person_mine")


def query_text(team, user, machine, month, day):
    """One PromQL query for four sums: the team's month and the person's day, for the other
    machines and for this one as Prometheus sees it."""
    parts = []
    for metric, match, period in (
        (MONTH_METRIC, f'team="{team}",month="{month}"', "team"),
        (DAY_METRIC, f'team="{team}",user="{user}",day="{day}"', "person"),
    ):
        for side, op in (("others", "!="), ("mine", "=")):
            total = f'sum({metric}{{{match},machine{op}"{machine}"}})'
            parts.append(f'label_replace({total},"part","{period}_{side}","","")')
    return " or ".join(parts)


def _request(method, url, body=None, ends=None):
    """One HTTP request; the response body. It takes REQUEST_S at most, and never past ends
    (time.monotonic()), whatever the server does: a server that trickles its answer a byte at a
    time stays under every socket timeout, and a name lookup has none."""
    import threading

    limit = REQUEST_S if ends is None else min(REQUEST_S, ends - time.monotonic())
    if limit <= 0:
        raise TimeoutError("no time left in this refresh for it")
    outcome = []

    def exchange():
        try:
            outcome.append(_exchange(method, url, body, min(TIMEOUT, limit)))
        except BaseException as error:
            outcome.append(error)

    worker = threading.Thread(target=exchange, daemon=True)  # left behind if it overruns
    worker.start()
    worker.join(limit)
    if not outcome:
        raise TimeoutError(f"no whole answer within {limit:.0f} s")
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return outcome[0]


def _exchange(method, url, body, timeout):
    """The request itself. Credentials in the URL go as basic auth, to that origin only: a
    redirect is not followed (urllib would send the Authorization header to wherever it
    points), it is an error that says where it pointed."""
    import urllib.parse
    import urllib.request

    split = urllib.parse.urlsplit(url)
    headers = {"User-Agent": "runaway-guard"}
    if split.username is not None:
        import base64

        user = urllib.parse.unquote(split.username)
        secret = urllib.parse.unquote(split.password or "")
        token = base64.b64encode(f"{user}:{secret}".encode()).decode()
        headers["Authorization"] = f"Basic {token}"
        url = urllib.parse.urlunsplit(split._replace(netloc=split.netloc.rpartition("@")[2]))
    if body is not None:
        headers["Content-Type"] = "text/plain; version=0.0.4; charset=utf-8"
    request = urllib.request.Request(url, data=body, method=method, headers=headers)
    with urllib.request.build_opener(_no_redirect()).open(request, timeout=timeout) as response:
        answer = response.read(MAX_ANSWER + 1)
    if len(answer) > MAX_ANSWER:
        raise ValueError(f"an answer longer than {MAX_ANSWER >> 20} MiB, ignored")
    return answer


def _no_redirect():
    import urllib.error
    import urllib.request

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, req, fp, code, msg, headers, newurl):
            from . import log

            fp.close()
            raise urllib.error.URLError(
                f"HTTP {code}, a redirect to {log.redact_url(newurl)}, not followed: "
                "set the URL it points to"
            )

    return NoRedirect


def _error_text(error):
    reason = getattr(error, "reason", None)
    code = getattr(error, "code", None)
    if code is not None:
        return f"HTTP {code}"
    return str(reason or error) or type(error).__name__


def read_sums(settings, machine, month, day, ends=None):
    """{part: picodollars} from Prometheus; a part no series matched is absent. Anything but
    Prometheus' vector of four finite sums of spend (never negative) is a ValueError: the
    whole answer is ignored, the error recorded."""
    import urllib.parse

    promql = query_text(settings.team, settings.user, machine, month, day)
    query = urllib.parse.urlencode({"query": promql})
    url = f"{settings.prometheus_url}/api/v1/query?{query}"
    answer = jsonio.loads(_request("GET", url, ends=ends))
    data = answer.get("data") if isinstance(answer, dict) else None
    if not isinstance(data, dict) or answer.get("status") != "success":
        error = answer.get("error") if isinstance(answer, dict) else None
        raise ValueError(f"no success: {str(error)[:200] if error else 'not its API answer'}")
    result = data.get("result")
    if not isinstance(result, list) or len(result) > len(PARTS):
        raise ValueError(f"not a vector of up to {len(PARTS)} sums")
    sums = {}
    for item in result:
        metric = item.get("metric") if isinstance(item, dict) else None
        part = metric.get("part") if isinstance(metric, dict) else None
        value = item.get("value") if isinstance(item, dict) else None
        if part not in PARTS or part in sums or not isinstance(value, list) or len(value) != 2:
            raise ValueError("a result that is not one of the sums asked for")
        sums[part] = _sum(part, value[1])
    return sums


def _sum(part, text):
    """One sum in picodollars from Prometheus' text of a sample value."""
    amount = float(text) if isinstance(text, str) and len(text) <= 40 else float("nan")
    if not 0 <= amount < 1e12:  # NaN fails too; a sum of spend is never negative
        raise ValueError(f"{str(text)[:40]!r} for {part}, not a sum of spend")
    return round(amount * PICO)


def refresh(settings, now=None, ends=None):
    """Publish this machine's totals, read the others', write the cache; the cache. Its
    requests end by ends (time.monotonic(); by default DEADLINE - GRACE from now)."""
    state_dir = settings.state_dir
    now = time.time() if now is None else now
    ends = time.monotonic() + DEADLINE - GRACE if ends is None else ends
    month, day = periods(now)
    old = read_cache(state_dir) or {}
    if (old.get("team"), old.get("user")) != (settings.team, settings.user):
        keep = {key: old[key] for key in ("group", "orphans", "pushed_at") if key in old}
        old = {**keep, "pushed_at": None}
    machine = machine_id(state_dir)
    mine_month, mine_day, sessions = machine_totals(state_dir, month, day, now)
    cache = {
        "v": VERSION,
        "team": settings.team,
        "user": settings.user,
        "machine": machine,
        "month": month,
        "day": day,
        "snapshot_at": now,
        "mine_month": mine_month,
        "mine_day": mine_day,
        "sessions": sessions,
        "attempted_at": now,
        "warning": None,
    }
    for key in ("fetched_at", "others_month", "others_day", "pushed_at", "stale_since"):
        cache[key] = old.get(key)
    cache["pushed_month"] = old.get("pushed_month")
    if old.get("month") != month:
        cache["others_month"] = None
    if old.get("day") != day:
        cache["others_day"] = None
    if settings.team_error:  # fail-closed with unusable settings: nothing to ask the servers
        errors = [_unusable(settings)]
    else:
        errors = _publish(settings, old, cache, ends) + _read(settings, cache, ends)
    if errors:
        cache["error"] = "; ".join(errors)
        cache["failures"] = (_int(old.get("failures")) or 0) + 1
        cache["stale_since"] = old.get("stale_since") if old.get("error") else now
    else:
        cache["error"] = None
        cache["failures"] = 0
        cache["stale_since"] = None
    private_folder(state_dir)
    state_file.write_atomic(cache_path(state_dir), jsonio.dumps(cache).encode())
    try:
        fs.remove(awaited_path(state_dir))  # what was awaited has come
    except FileNotFoundError:
        pass
    return cache


def _publish(settings, old, cache, ends):
    """PUT this machine's group (after deleting its old ones); the errors."""

    errors = []
    now, month = cache["snapshot_at"], cache["month"]
    group = group_path(settings.team, settings.user, cache["machine"])
    orphans = [path for path in old.get("orphans") or [] if _is_group(path)]
    if _is_group(old.get("group")) and old["group"] != group:
        orphans.append(old["group"])  # this machine's old group (another team or user name)
    cache["group"] = group
    cache["orphans"] = []
    for path in dict.fromkeys(orphans):
        if path == group:
            continue
        try:
            _request("DELETE", settings.pushgateway_url + path, ends=ends)
        except Exception as error:
            if getattr(error, "code", None) != 404:
                cache["orphans"].append(path)
                errors.append(f"removing the old group: {_error_text(error)}")
    from .projects import labelled_months

    labelled = labelled_months(settings.state_dir, month)
    body = exposition(month, cache["day"], cache["mine_month"], cache["mine_day"], labelled)
    body = body.encode()
    try:
        _request("PUT", settings.pushgateway_url + group, body, ends=ends)
        if old.get("pushed_month") != month or not cache["pushed_at"]:
            cache["pushed_at"] = now  # first push of this group this month
        cache["pushed_month"] = month
    except Exception as error:
        shown = _shown_url(settings.pushgateway_url)
        errors.append(f"Pushgateway {shown}: {_error_text(error)}")
    return errors


def _read(settings, cache, ends):
    """Read the other machines' sums into the cache; the errors."""

    shown = _shown_url(settings.prometheus_url)
    try:
        sums = read_sums(settings, cache["machine"], cache["month"], cache["day"], ends)
    except Exception as error:
        return [f"Prometheus {shown}: {_error_text(error)}"]
    now = cache["snapshot_at"]
    cache["others_month"] = sums.get("team_others", 0)
    cache["others_day"] = sums.get("person_others", 0)
    cache["fetched_at"] = now
    pushed_at = cache.get("pushed_at")
    late = max(2 * settings.team_refresh_s, 60.0)
    if "team_mine" not in sums and isinstance(pushed_at, float) and now - pushed_at > late:
        cache["warning"] = (
            f"Prometheus {shown} shows none of this machine's pushes: does it scrape the "
            "Pushgateway, with honor_labels: true?"
        )
    return []


def _is_group(path):
    """Whether path is one of this module's group paths (the cache's are read back: a path of
    another shape would send the credentials elsewhere, `@host` appended to the URL)."""
    parts = path.split("/") if isinstance(path, str) else []
    names = ["", "metrics", "job", JOB, "team", None, "user", None, "machine", None]
    return len(parts) == len(names) and all(
        config.is_label(part) if name is None else part == name for part, name in zip(parts, names)
    )
