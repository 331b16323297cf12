"""The refresh: a detached process (child) or status.py --team-sync (sync) publishes this
machine's totals, reads the other machines' sums and writes the cache, one round at a time
(refresh)."""

import sys
import time

from .. import config, fs, jsonio, state_file
from . import (
    DEADLINE,
    GRACE,
    VERSION,
    _await,
    _int,
    _shown_url,
    _try_flock,
    _unusable,
    awaited_path,
    cache_path,
    folder,
    periods,
    private_folder,
    read_cache,
    servers,
)
from .metrics import _is_group, exposition, group_path
from .servers import _error_text, read_sums
from .totals import machine_id, machine_totals

LINGER_S = 600.0  # the longest a refresh process lives (then a hook starts the next one)


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
        from .. import log

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
            servers._request("DELETE", settings.pushgateway_url + path, ends=ends)
        except Exception as error:
            if getattr(error, "code", None) != 404:
                cache["orphans"].append(path)
                errors.append(f"removing the old group: {_error_text(error)}")
    from ..projects import labelled_months

    labelled = labelled_months(settings.state_dir, month)
    body = exposition(month, cache["day"], cache["mine_month"], cache["mine_day"], labelled)
    body = body.encode()
    try:
        servers._request("PUT", settings.pushgateway_url + group, body, ends=ends)
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
