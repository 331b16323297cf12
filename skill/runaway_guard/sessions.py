"""Finding the session a status call is about, and bringing its state up to date.

The guard writes one state file per session (`<state_dir>/sessions/<host>/<id>.json`, see
ledger.py) and reads the host's files only at tool calls; a status call reads what the host
wrote since (a run's last response, Claude Code's end-of-run cost record) before it reports.
"""

import os

from . import controls, hosts, ledger, state_file
from .calls import Call


class StatusError(Exception):
    """Bad usage or an unknown session: status.py prints the message and exits 2."""


def project_root(cwd):
    """The git root above cwd, else cwd itself."""
    directory = os.path.abspath(cwd)
    probe = directory
    for _ in range(64):
        if os.path.exists(os.path.join(probe, ".git")):
            return probe
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    return directory


def _inside(path, root):
    if not isinstance(path, str) or not path:
        return False
    for candidate, base in ((path, root), (os.path.realpath(path), os.path.realpath(root))):
        try:
            if os.path.commonpath([os.path.abspath(candidate), base]) == base:
                return True
        except ValueError:
            continue
    return False


def all_sessions(state_dir):
    """Every session state the guard has written: [(path, state)], any host."""
    found = []
    root = os.path.join(state_dir, "sessions")
    try:
        hosts = sorted(os.listdir(root))
    except OSError:
        return found
    for host in hosts:
        folder = os.path.join(root, host)
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            path = os.path.join(folder, name)
            if name.endswith(state_file.STATE):
                state = state_file.read_state(path)
            elif name.endswith(".json") and name[: -len(".json")] + state_file.STATE not in names:
                state = state_file.read_json(path)  # an earlier version's, until its next call
            else:
                continue
            if state and isinstance(state.get("session_id"), str):
                state.setdefault("host", host)
                found.append((path, state))
    return found


def last_seen(state):
    """When the guard last saw the session (0 when unknown)."""
    value = state.get("seen")
    return value if isinstance(value, (int, float)) else 0.0


def find_session(state_dir, session=None, cwd=None):
    """(path, state) of the named session, or of the one the guard saw last in cwd's project.

    session may be an id, `host:id`, or the unique start of an id (as `--today` prints it).
    """
    sessions = all_sessions(state_dir)
    if session:
        host = None
        if ":" in session and session.split(":", 1)[0] in hosts.NAMES:
            host, session = session.split(":", 1)
        pool = [item for item in sessions if host in (None, item[1].get("host"))]
        exact = [item for item in pool if item[1]["session_id"] == session]
        matches = exact or [item for item in pool if item[1]["session_id"].startswith(session)]
        if not matches:
            raise StatusError(
                f"runaway-guard has no session {session!r} in {state_dir}.\n"
                f"List today's sessions with: {controls.status_command()} --today"
            )
        ids = {(item[1].get("host"), item[1]["session_id"]) for item in matches}
        if len(ids) > 1 and not exact:
            names = ", ".join(f"{h}:{i}" for h, i in sorted(ids))
            raise StatusError(f"{session!r} matches more than one session: {names}")
        return max(matches, key=lambda item: last_seen(item[1]))
    if not sessions:
        from . import setup_hint

        raise StatusError(
            f"runaway-guard has not seen any session yet (state in {state_dir}): its hook "
            "records a session at its first tool call.\n" + setup_hint.advice(cwd or os.getcwd())
        )
    root = project_root(cwd or os.getcwd())
    here = [item for item in sessions if _inside(item[1].get("cwd"), root)]
    return max(here or sessions, key=lambda item: last_seen(item[1]))


def refresh(state_dir, host, session_id, then=None, at_once=False):
    """The session's state after reading what its host wrote since the guard's last call.

    The guard reads at tool calls, so it has not yet seen a run's final response, nor Claude
    Code's end-of-run cost record that settles a compaction estimate: a status asked right
    after a run reads them first, so it shows what the host itself would. then(state) runs
    before the state is saved; at_once: a lock held elsewhere raises TimeoutError at once
    (a hook call that holds its own session's lock must not wait on another's).
    """
    book = ledger.Ledger(state_dir, host, session_id)
    if at_once:
        book.lock = state_file.Lock(book.lock.path, attempt=_at_once)
    with book:
        book.sweep = True  # every file, the dormant ones too
        main = _main_file(book.state)
        if main and host in hosts.NAMES:
            call = Call(host, book.state["session_id"], transcript_path=main)
            hosts.load(host).sync(book, call)
        if then is not None:
            then(book.state)
        return book.state


def _at_once(fd):
    if state_file.try_lock(fd):
        return True
    os.close(fd)
    raise TimeoutError("the session's state is locked by another call")


def _main_file(state):
    """The main agent's session file: among the files followed line by line or, for a host
    version that rewrites one whole file (Gemini CLI's legacy session-*.json), among those."""
    for kind in ("files", "legacy"):
        entries = state.get(kind)
        for path, entry in entries.items() if isinstance(entries, dict) else ():
            if isinstance(entry, dict) and entry.get("agent") == "main":
                return path
    return None
