"""The session's ledger and state: what was spent, per response, and how each agent's calls went.

A session's files in the state dir, all private to the user:
- `<id>.state`, the session state (state_file.py: format, slots, lock), rebuilt from the
  ledger when it is unreadable; the JSON `<id>.json` of earlier versions is read once;
- `<id>.<part>.<n>`, a part of the state that a call seldom needs, kept in a file of its own
  (Ledger.part): read only by the calls that need it, written anew (n + 1) only when it
  changes, before the state that names it, and removed once that state is written;
- `<id>.ledger`, append-only, one line per priced response (and per later correction): the
  source of truth for spend (spend_ledger.py). It is read only when a transcript was rewritten
  or the state was lost, so that a re-read neither counts a response twice nor drops one
  counted before.
Money is kept in integer picodollars so sums and corrections are exact. The Ledger is the
session's state loaded under its lock; what it books is spend_ledger.py's (responses) and
agent_book.py's (calls and their outcomes), whose functions it binds as its methods.
"""

import marshal
import time

from . import agent_book, fs, jsonio, spend_ledger
from .spend_ledger import ACTIVE, RECENT, trim_after
from .state_file import (
    MARSHAL_FORMAT,
    SLOTS_WRITTEN,
    STATE,
    Lock,
    append_lines,
    private_dir,
    read_json,
    read_slots,
    session_paths,
    write_all,
    write_state,
)

VERSION = 1
PRUNE_AFTER = 30 * 86400.0  # a session's state unseen this long is deleted (its ledger too)
PRUNE_EVERY = 86400.0  # looked for at most once a day: one stat per call otherwise
BURN_STEP, BURN_KEEP = 60.0, 64  # one spend sample a minute at most, the last hour or so


def new_state(host, session_id):
    return {
        "v": VERSION,
        "host": host,
        "session_id": session_id,
        "cwd": None,
        "started": time.time(),
        "seen": 0.0,
        "files": {},
        "spend": {"total": 0, "model": {}, "agent": {}, "day": {}},
        "unpriced": [],
        "recent": {},
        "agents": {},
        "denied": [],
        "answers": {},
        "prompt": None,
        "blocked": None,
        "cap_usd": None,
        "off": False,
        "warned": {},
        "daily_written": {},
        # and the keys set later by their owners: state_schema.py names every one
    }


class Ledger:
    """One session's state, loaded under its lock. Use as a context manager.

    unsaved_ok: a hook call, whose decision must go out even when the state cannot be locked or
    saved (see unsaved); elsewhere (the person's controls) that failure raises."""

    def __init__(self, state_dir, host, session_id, unsaved_ok=False):
        self.state_dir = state_dir
        self.host = host
        self.session_id = session_id
        folder, base = session_paths(state_dir, host, session_id)
        self.folder = folder
        self.base = base
        self.state_path = base + STATE
        self.legacy_path = base + ".json"  # the state as versions before STATE wrote it
        self.ledger_path = base + ".ledger"
        self.lock = Lock(base + ".lock")
        self.state = None
        self.known = None  # the whole ledger, loaded only for a re-read
        self._appended = []
        self._pending_owner = {}
        self._trim_at = 2 * RECENT
        self._stale = False
        self._legacy = False
        self._now = round(time.time())
        self._active = None  # state["active"]: agent -> when it last booked a response
        # The quoted id of the call being judged, and whether a line read so far holds it
        # (the host has written the call itself: see hook._catch_up).
        self.watch = None
        self.watched = False
        self.sweep = False  # look at every file this call, the dormant ones too (a status)
        self._parts = {}  # the parts (see part()) read or set this call
        self._changed_parts = set()
        self._place = None  # where the state was read (read_slots), so the next slot is known
        self._older = False  # an earlier version shares the session: write what it reads
        # Why this call's state could not be saved (an OSError or TimeoutError), or None: the
        # decision made from it is given all the same (hook.run logs it).
        self.unsaved = None
        self._unsaved_ok = unsaved_ok

    def __enter__(self):
        try:
            private_dir(self.state_dir)
            private_dir(self.folder)
            self.lock.__enter__()
        except (OSError, TimeoutError) as error:
            if not self._unsaved_ok:
                raise
            # No lock to be had (a read-only or full disk, a folder that cannot be made, a lock
            # held past LOCK_WAIT): judge from the state as it stands, and save nothing.
            self.unsaved, self.lock = error, None
            self._load()
            return self
        try:
            self._load()
        except BaseException:
            self.lock.__exit__()
            raise
        return self

    def __exit__(self, exc_type, exc, tb):
        if self.lock is None:
            return  # judged without the lock: nothing to save or release
        try:
            if exc_type is None:
                try:
                    self.save()
                except (OSError, TimeoutError) as error:  # the slot before still holds
                    if not self._unsaved_ok:
                        raise
                    self.unsaved = error
            elif not _refused_write(exc):
                # A state this call could not work with is rebuilt from the ledger next time.
                try:
                    fs.remove(self.state_path)
                except OSError:
                    pass
        finally:
            self.lock.__exit__()
        if exc_type is None and self.unsaved is None:
            prune_if_due(self.state_dir)

    # -- loading and saving

    def _load(self):
        state, self._place = read_slots(self.state_path)
        # One marshal value where this version wrote slots (SLOTS_WRITTEN in the lock file): an
        # earlier version installed beside it (user and project scope) replaced them, and would
        # rebuild the state from the ledger on each of its calls if they came back.
        self._older = (
            state is not None
            and self._place is None
            and self.lock is not None
            and fs.fstat(self.lock.fd).st_size
        )
        if state is None and fs.exists(self.legacy_path):
            self._legacy = True  # an earlier version's: read once, then replaced
            state = read_json(self.legacy_path)
        if (
            state is None
            or state.get("v") != VERSION
            or not _well_formed(state)
            or ("parked" in state and not _unparked(state))
        ):
            state = self._rebuild()
        self.state = state
        for agent, record in state["agents"].items():
            for tool_use_id, _ in record["pending"]:
                self._pending_owner[tool_use_id] = agent
        if not isinstance(state.get("active"), dict):
            state["active"] = {}
        self._active = active = state["active"]
        try:  # min() in C: a loop in Python cost 0.1M instructions a call at 200 agents
            stale = min(active.values(), default=self._now) < self._now - ACTIVE
        except TypeError:  # not a number: trimmed away
            stale = True
        self._stale = stale  # an agent went quiet for ACTIVE: trim before saving
        self._trim_at = trim_after(len(state["recent"]))

    def _rebuild(self):
        """A fresh state whose spend is the ledger's, with every transcript to be re-read."""
        state = new_state(self.host, self.session_id)
        self.state = state
        if fs.exists(self.ledger_path):
            self.load_known()
            for entry in self.known.values():
                self._book(entry, 1)
            # What reconcile() booked for requests no transcript shows, so it can correct it.
            side = self.known.get("side")
            estimates = {
                key[4:]: entry[3]
                for key, entry in self.known.items()
                if key.startswith("est:") and entry[1]
            }
            state["side"] = {"est": estimates, "host": side[1] if side else 0}
        return state

    def save(self):
        state = self.state
        now = state["seen"] = time.time()
        # Spend samples for status.py's forecast (the ledger itself has no timestamps).
        burn = state.get("burn")
        if not isinstance(burn, list):
            burn = state["burn"] = []
        last = burn[-1] if burn else None
        if not (isinstance(last, list) and last and isinstance(last[0], (int, float))):
            last = [0.0]
        if now - last[0] >= BURN_STEP:
            burn.append([round(now, 1), state["spend"]["total"]])
            del burn[:-BURN_KEEP]
        if self._appended:
            append_lines(self.ledger_path, "".join(self._appended).encode())
            self._appended = []
        # a trim keeps at most RECENT + one per active agent: trim once RECENT more built up
        if len(state["recent"]) > 2 * RECENT + len(self._active) or self._stale:
            self._trim_recent()
        replaced = self._write_parts()
        write_state(self.state_path, state, self._place, self._older)
        if self._place is None and fs.lockf is not None and not self._older:  # slots written anew
            fs.write(self.lock.fd, SLOTS_WRITTEN)  # at its start: the file was just opened
        for path in replaced:
            try:
                fs.remove(path)
            except OSError:
                pass
        if self._legacy:
            try:
                fs.remove(self.legacy_path)
            except OSError:
                pass
            self._legacy = False

    # -- the parts of the state kept in files of their own

    def part(self, name):
        """A part of the state kept in `<id>.<name>.<n>` (None when there is none), read once a
        call and only by the calls that ask: a large value that seldom changes costs the other
        calls nothing, where in the state every call would read and write it. A part the state
        names that cannot be read raises: the call fails open and the state is rebuilt."""
        if name not in self._parts:
            number = self.state.get("parts", {}).get(name)
            self._parts[name] = _read_part(self._part_path(name, number)) if number else None
        return self._parts[name]

    def set_part(self, name, value):
        """value (JSON's kinds of data) as the part, written when saved."""
        self._parts[name] = value
        self._changed_parts.add(name)

    def _part_path(self, name, number):
        return f"{self.base}.{name}.{number}"

    def _write_parts(self):
        """Each changed part in a new file (n + 1: no rename over a file, which on ext4 starts
        writing it out at once), before the state that names it; the files they replace, to
        remove once that state is written. A call killed midway leaves a state that names whole
        files; after a power cut a part may be unreadable, and the state is rebuilt."""
        if not self._changed_parts:
            return []
        parts = self.state.setdefault("parts", {})
        replaced = []
        for name in self._changed_parts:
            number = parts.get(name, 0)
            if number:
                replaced.append(self._part_path(name, number))
            fd = fs.open(
                self._part_path(name, number + 1),
                fs.O_WRONLY | fs.O_CREAT_NOFOLLOW | fs.O_TRUNC,
                0o600,
            )
            try:
                write_all(fd, marshal.dumps(self._parts[name], MARSHAL_FORMAT))
            finally:
                fs.close(fd)
            parts[name] = number + 1
        self._changed_parts = set()
        return replaced

    # -- spend (spend_ledger.py). The methods of spend_ledger.py and agent_book.py are their
    # modules' functions, bound here: two mixin classes cost every hook call 0.15M instructions
    # to make (type creation), 3% of what the guard adds to the interpreter's start.

    load_known = spend_ledger.load_known
    usage = spend_ledger.usage
    _unlisted = spend_ledger._unlisted
    estimate_unwritten = spend_ledger.estimate_unwritten
    reconcile = spend_ledger.reconcile
    remembers = spend_ledger.remembers
    _trim_recent = spend_ledger._trim_recent
    _book = spend_ledger._book

    # -- calls and their outcomes (agent_book.py)

    agent = agent_book.agent
    expecting = agent_book.expecting
    waiting_for = agent_book.waiting_for
    waited = agent_book.waited
    call = agent_book.call
    result = agent_book.result
    outcome = agent_book.outcome
    complete_unseen = agent_book.complete_unseen
    remember_refusal = agent_book.remember_refusal


def _read_part(path):
    with open(path, "rb") as handle:
        return marshal.loads(handle.read())


def _refused_write(error):
    """Whether error is the disk refusing a write (full, over quota, read-only), or a lock
    not had in time: the state is as usable as before, and is kept."""
    import errno

    return isinstance(error, TimeoutError) or getattr(error, "errno", None) in (
        errno.ENOSPC,
        errno.EDQUOT,
        errno.EROFS,
    )


def _well_formed(state):
    """Cheap shape check: a state written by another version or damaged is rebuilt."""
    try:
        spend = state["spend"]
        return (
            isinstance(state["files"], dict)
            and isinstance(spend["total"], int)
            and all(isinstance(spend[key], dict) for key in ("model", "agent", "day"))
            and isinstance(state["recent"], dict)
            and isinstance(state.get("parts", {}), dict)
            and isinstance(state["agents"], dict)
            and all(
                isinstance(record, dict)
                and isinstance(record.get("pending"), list)
                and isinstance(record.get("hist"), list)
                for record in state["agents"].values()
            )
            and isinstance(state["denied"], list)
            and isinstance(state["answers"], dict)
        )
    except (KeyError, TypeError):
        return False


def _unparked(state):
    """Whether the older recent responses an earlier version kept as one JSON text ("parked":
    [count, text]) could be put back in front of the others; if not, the state is rebuilt."""
    parked = state.pop("parked")
    if not (isinstance(parked, list) and len(parked) == 2 and isinstance(parked[1], str)):
        return False
    try:
        entries = jsonio.loads(parked[1])
    except ValueError:
        return False
    if not (
        isinstance(entries, list)
        and all(
            isinstance(entry, list) and entry and isinstance(entry[0], str) for entry in entries
        )
    ):
        return False
    recent = {entry[0]: entry for entry in entries}
    recent.update(state["recent"])
    state["recent"] = recent
    return True


def prune_if_due(state_dir, now=None):
    """Delete what the guard keeps of sessions unseen for PRUNE_AFTER, and old daily files.

    Looked for at most once every PRUNE_EVERY: a call otherwise pays one stat of the marker
    file, whose time says when the last look was. The call that finds it due touches it first,
    so parallel calls do not prune too; the deleting is prune.py's, imported only then. Returns
    how many sessions were deleted.
    """
    now = time.time() if now is None else now
    marker = fs.join(state_dir, ".pruned")  # not among the sessions' folders
    try:
        if 0 <= now - fs.stat(marker).st_mtime < PRUNE_EVERY:
            return 0
    except OSError:
        pass
    try:
        fs.close(fs.open(marker, fs.O_WRONLY | fs.O_CREAT_NOFOLLOW, 0o600))
        fs.utime(marker, (now, now))
    except OSError:
        return 0
    from . import prune

    return prune.unseen_since(state_dir, now - PRUNE_AFTER)
