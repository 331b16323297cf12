"""The session's ledger and state: what was spent, per response, and how each agent's calls went.

A session's files in the state dir, all private to the user:
- `<id>.state`, small and rewritten atomically under a lock on every call: read cursors, spend
  totals, the last responses (whose usage can still grow), and the wires' counters. It holds
  JSON's kinds of data, written with `marshal` (format 4, which every Python 3 reads): a call
  reads and writes it in a third of the time JSON takes (bench/README.md). The file has two
  slots, written in turn in place (see SLOTS); a reader takes the newer whole one, so a call
  killed mid-write leaves the state before it, as a rename would. A state is rebuilt from the
  ledger when it is unreadable; the JSON `<id>.json` of earlier versions is read once;
- `<id>.<part>.<n>`, a part of the state that a call seldom needs, kept in a file of its own
  (Ledger.part): read only by the calls that need it, written anew (n + 1) only when it
  changes, before the state that names it, and removed once that state is written;
- `<id>.ledger`, append-only, one line per priced response (and per later correction): the
  source of truth for spend. It is read only when a transcript was rewritten or the state was
  lost, so that a re-read neither counts a response twice nor drops one counted before.
Money is kept in integer picodollars so sums and corrections are exact.
"""

import marshal
import time

from . import estimate, fs, jsonio

VERSION = 1
STATE = ".state"  # a session's state file: <id>.state
MARSHAL_FORMAT = 4
# The state file: SLOTS, each slot's size (4 bytes), then two slots of that size. A slot holds
# its number (8 bytes), its data's length (4) and seal (8, see _seal), then the marshal data.
# A call writes the slot the newer one is not, in place: a rename over the state made ext4
# write the new file out at once (auto_da_alloc), 0.2-0.3 ms a call (bench/README.md). A torn
# slot fails its seal. SLOTS is no marshal type code: an earlier version rebuilds the state.
SLOTS = b"RGs2"
SLOT_HEAD = 20
SLOTS_WRITTEN = b"s"  # in a session's lock file: its state was written in slots (Ledger._load)
PAGE = 4096
DORMANT = "dormant"  # a part (Ledger.part): the dormant subagent files' entries (hosts/_files.py)
PARTS = (DORMANT,)
# Responses whose usage may still be corrected by a later row of the same response: an agent
# writes one response's rows before its next response (within seconds), so its last one is
# kept while it books responses (for ACTIVE seconds after its last), and the last RECENT across
# all agents for good measure ("side", reconcile()'s booking, is always kept). Those but the
# last RECENT are kept between calls as one JSON text, older than those in "recent" ("parked":
# [how many, text]): with many subagents, marshal loads and writes one text in a fraction of
# the time of a list for each. A call decodes them only to correct one of them, or to trim.
RECENT = 16
ACTIVE = 3600.0
PRUNE_AFTER = 30 * 86400.0  # a session's state unseen this long is deleted (its ledger too)
PRUNE_EVERY = 86400.0  # looked for at most once a day: one stat per call otherwise
LOCK_WAIT = 10.0
BURN_STEP, BURN_KEEP = 60.0, 64  # one spend sample a minute at most, the last hour or so
HIST = 24  # the finished calls an agent's wires keep (their loops' window)

_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")


class UnsafeFolder(Exception):
    """A state folder someone else could plant or swap files in: the guard keeps nothing there
    and fails open, saying so in hook.log (not an OSError: Ledger does not judge from it)."""


def private_dir(path):
    """path, a folder of this user's that no one else can write to (made 0700 if missing)."""
    fs.makedirs(path, 0o700)
    if fs.getuid is not None:  # Windows: no owners or modes to check
        found = fs.stat(path)
        if found.st_uid != fs.getuid() or found.st_mode & 0o022:
            raise UnsafeFolder(
                f"{path} belongs to user {found.st_uid} with mode {found.st_mode & 0o777:o}: "
                "another user could write the guard's state there, so the guard keeps none and "
                f"lets calls through. Make it yours alone (chmod 700 {path}; chown it to you), "
                "or set RUNAWAY_GUARD_STATE_DIR to a folder of your own"
            )
    return path


def safe_name(text):
    """A file name for an id that came from outside: never a path, never hidden."""
    name = "".join(c if c in _SAFE else "_" for c in text[:120]).lstrip(".")
    if name != text or not name:
        import zlib

        name = f"{name[:100]}-{zlib.crc32(text.encode('utf-8', 'replace')):08x}"
    return name


def write_atomic(path, data):
    """Replace path with data in one step, so readers never see a torn file (nor a link
    followed)."""
    temp = f"{path}.{fs.getpid()}.tmp"
    fd = fs.open(temp, fs.O_WRONLY | fs.O_CREAT_NOFOLLOW | fs.O_TRUNC, 0o600)
    try:
        try:
            write_all(fd, data)
        finally:
            fs.close(fd)
        fs.replace(temp, path)
    except BaseException:
        try:
            fs.remove(temp)  # a full disk must not be filled further by leftovers
        except OSError:
            pass
        raise


def append_lines(path, data):
    """Append data (whole lines) to path. A line an earlier append left cut short (a full disk)
    is ended first, so that the two never merge into one unreadable line; an append that fails
    is cut back off, as far as the disk lets it."""
    fd = fs.open(path, fs.O_RDWR | fs.O_CREAT_NOFOLLOW | fs.O_APPEND, 0o600)
    try:
        size = fs.fstat(fd).st_size
        if size:
            fs.lseek(fd, size - 1, fs.SEEK_SET)  # O_APPEND: the write goes to the end all the same
            if fs.read(fd, 1) != b"\n":
                data = b"\n" + data
        try:
            write_all(fd, data)
        except OSError:
            try:
                fs.ftruncate(fd, size)
            except OSError:
                pass
            raise
    finally:
        fs.close(fd)


def write_all(fd, data):
    """fs.write until every byte is written (a short write happens as a disk fills up)."""
    view = memoryview(data)
    while view:
        view = view[fs.write(fd, view) :]


def read_json(path):
    """The JSON object in path, or None when it is missing or unusable."""
    try:
        with open(path, "rb") as handle:
            data = jsonio.loads(handle.read())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _read_part(path):
    with open(path, "rb") as handle:
        return marshal.loads(handle.read())


def read_state(path):
    """The session state in path (see the module's docstring), or None when it is missing or
    unusable. For readers without the lock: one whose read met two writes sees no whole slot,
    and reads again."""
    for attempt in range(3):
        if attempt:
            time.sleep(0.001)
        state, place = read_slots(path)
        if state is not None or place is None:
            return state
    return None


def read_slots(path):
    """The state in path and where it was (slot size, slot, number), or None for either: a
    state of an earlier version (one marshal value) has no place, nor has a missing file; a
    file in slots with no usable state has (0, 1, 0)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return None, None
    if data[:4] != SLOTS:
        return _state(data), None
    size = int.from_bytes(data[4:8], "little")
    heads = [data[8 : 8 + SLOT_HEAD], data[8 + size : 8 + size + SLOT_HEAD]]
    numbers = [int.from_bytes(head[:8], "little") for head in heads]
    for slot in (0, 1) if numbers[0] > numbers[1] else (1, 0):
        head, start = heads[slot], 8 + slot * size + SLOT_HEAD
        body = data[start : start + int.from_bytes(head[8:12], "little")]
        if numbers[slot] and _seal(body) == head[12:]:  # 0: missing or zeroed; torn: the seal
            return _state(body), (size, slot, numbers[slot])
    return None, (0, 1, 0)


def _state(data):
    try:
        state = marshal.loads(data)
    except (ValueError, EOFError, TypeError):
        return None
    return state if isinstance(state, dict) else None


def _seal(data):
    """data as one number, hashed: modulo 2**61 - 1, the same in every process (only str and
    bytes hashes are salted), in C. calls.fingerprint's modulo two 30-bit primes took 3 times
    as long: 0.1 ms at 45 KB, where the rename this saves costs 0.3 ms."""
    return hash(int.from_bytes(data, "little")).to_bytes(8, "little")


def write_state(path, state, place=None, plain=False):
    """Write state into the slot after place (read_slots'), in place when it fits; else into a
    new file in slots (a rename) half as large again as it needs. plain: as one marshal value
    (a rename), for an earlier version beside this one (Ledger._load)."""
    data = marshal.dumps(state, MARSHAL_FORMAT)
    if plain:
        write_atomic(path, data)
        return
    size, slot, number = place or (0, 1, 0)
    slot, number = 1 - slot, number + 1
    head = number.to_bytes(8, "little") + len(data).to_bytes(4, "little")
    data = head + _seal(data) + data
    if len(data) <= size and fs.lockf is not None:  # in place only where the lock holds writers
        fd = fs.open(path, fs.O_WRONLY | fs.O_NOFOLLOW)
        try:
            fs.lseek(fd, 8 + slot * size, fs.SEEK_SET)
            write_all(fd, data)
        finally:
            fs.close(fd)
    else:
        size = (len(data) * 3 // 2 + PAGE - 1) // PAGE * PAGE
        write_atomic(path, SLOTS + size.to_bytes(4, "little") + data)


def try_lock(fd):
    """Whether this process now holds fd's file's lock: a POSIX record lock (lockf, from
    posix; flock would import fcntl, 0.3 ms a call where it is a shared library). The lock is
    the process's until it closes the file. Windows has no advisory locks: the guard runs
    unlocked there."""
    if fs.lockf is None:
        return True
    try:
        fs.lockf(fd, fs.F_TLOCK, 0)
        return True
    except (BlockingIOError, PermissionError):  # EAGAIN or EACCES: held by another process
        return False


class Lock:
    """An exclusive lock on a file, waited for a bounded time (parallel calls run at once)."""

    def __init__(self, path, attempt=try_lock):
        self.path = path
        self.attempt = attempt
        self.fd = None

    def __enter__(self):
        self.fd = fs.open(self.path, fs.O_RDWR | fs.O_CREAT_NOFOLLOW, 0o600)
        deadline = time.monotonic() + LOCK_WAIT
        while not self.attempt(self.fd):
            if time.monotonic() > deadline:
                fs.close(self.fd)
                raise TimeoutError(f"lock busy: {self.path}")
            time.sleep(0.003)
        return self

    def __exit__(self, *exc):
        fs.close(self.fd)  # closing releases the lock


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
        # and, once set: "ahead" (estimate.py: per agent, its next request's estimate)
    }


def session_paths(state_dir, host, session_id):
    folder = fs.join(state_dir, "sessions", host)
    base = fs.join(folder, safe_name(session_id))
    return folder, base


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
        if state is None or state.get("v") != VERSION or not _well_formed(state):
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
        self._trim_at = _trim_after(self._recent_count())

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

    def load_known(self):
        """Every response the ledger has counted, last correction wins; for re-reads (which
        look up every response they read: the parked ones are decoded once, not searched)."""
        if self.known is not None:
            return
        self._unpark()
        known = {}
        try:
            with open(self.ledger_path, "rb") as handle:
                for line in handle:
                    try:
                        entry = jsonio.loads(line)
                    except ValueError:
                        continue
                    if _valid_entry(entry):
                        known[entry[0]] = entry
        except OSError:
            pass
        self.known = known

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
        if self._recent_count() > 2 * RECENT + len(self._active) or self._stale:
            self._trim_recent()
        self._park()
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

    # -- spend

    def usage(self, key, agent, model, pusd, known_model, out, day, ahead=None):
        """Count one API response, or correct it when a later row carries more output; ahead:
        what estimate.note needs to estimate the agent's next request (None: a correction).
        Whether it was counted (and ahead noted): False when it was already."""
        recent = self.state["recent"]
        old = recent.get(key)
        if old is None and self._parked_holds(key):
            recent = self._unpark()
            old = recent.get(key)
        if old is None and self.known is not None:
            old = self.known.get(key)
        if old is not None:
            if (out, pusd) <= (old[2], old[1]):
                return False  # an earlier row of a response counted (or a stale correction)
            self._book(old, -1)
        entry = [key, pusd, out, model, agent, day]
        self._book(entry, 1)
        self._active[agent] = self._now
        if self.known is not None:
            self.known[key] = entry
        recent.pop(key, None)
        recent[key] = entry
        if self._recent_count() > self._trim_at:
            self._trim_recent()
        self._appended.append(jsonio.dumps(entry) + "\n")
        if known_model is not True:  # not in the table as written (pricing._resolve)
            self._unlisted(model, known_model)
        if ahead is not None:
            estimate.note(self.state, agent, key, pusd, out, ahead)
        return True

    def _unlisted(self, model, known_model):
        """Name a model id the table lacks as written, and what it was priced as: a listed
        model's key, or "ceiling" (the dearest rates of its family)."""
        if model not in self.state["unpriced"]:
            self.state["unpriced"].append(model)
        priced_as = self.state.get("priced_as")
        if not isinstance(priced_as, dict):
            priced_as = self.state["priced_as"] = {}
        priced_as[model] = known_model if isinstance(known_model, str) else "ceiling"

    # -- requests the host bills but does not write as responses (compaction, side requests)

    def estimate_unwritten(self, key, model, pusd, day):
        """Count an estimate for a billed request the transcript does not show (a compaction)."""
        side = self.state.setdefault("side", {"est": {}, "host": 0})
        if key in side["est"]:
            return
        side["est"][key] = model
        self.usage("est:" + key, "main", model, pusd, True, 0, day)

    def reconcile(self, host_total, model, day):
        """Take the host's own session total: estimates give way to what it billed.

        What the transcripts priced stays as it is; the difference, when positive, is booked to
        the main thread (under its current model) as the requests the transcript never showed.
        A host figure below ours (a model we price higher than the host) changes nothing.
        """
        side = self.state.setdefault("side", {"est": {}, "host": 0})
        stamp = time.time_ns() // 1000  # corrections must outrank every earlier one
        for key, estimated_model in side["est"].items():
            self.usage("est:" + key, "main", estimated_model, 0, True, stamp, day)
        side["est"] = {}
        extra = max(0, host_total - (self.state["spend"]["total"] - side["host"]))
        if extra != side["host"]:
            side["host"] = extra
            self.usage("side", "main", model, extra, True, stamp, day)

    def remembers(self, key):
        """Whether a response is among the recent ones (a later row can correct it without the
        whole ledger)."""
        return key in self.state["recent"] or self._parked_holds(key)

    def _recent_count(self):
        parked = self.state.get("parked")
        return len(self.state["recent"]) + (parked[0] if parked else 0)

    def _parked_holds(self, key):
        """Whether key is a parked response's: each entry's text starts `["<key>",`."""
        parked = self.state.get("parked")
        return parked is not None and f"[{jsonio.dumps(key)}," in parked[1]

    def _unpark(self):
        """The recent responses, the parked ones decoded back in front of the others."""
        state = self.state
        parked = state.pop("parked", None)
        if parked is not None:
            recent = {entry[0]: entry for entry in jsonio.loads(parked[1])}
            recent.update(state["recent"])
            state["recent"] = recent
        return state["recent"]

    def _park(self):
        """Park the recent responses but the last RECENT once there are twice as many."""
        state = self.state
        recent = state["recent"]
        if len(recent) < 2 * RECENT:
            return
        keys = list(recent)[:-RECENT]
        text = jsonio.dumps([recent.pop(key) for key in keys])
        parked = state.get("parked")
        if parked is not None:
            state["parked"] = [parked[0] + len(keys), f"{parked[1][:-1]},{text[1:]}"]
        else:
            state["parked"] = [len(keys), text]

    def _trim_recent(self):
        """Keep the last response of each agent active in the last ACTIVE seconds, the last
        RECENT of all, and "side"."""
        state = self.state
        self._unpark()
        active = self._active
        since = self._now - ACTIVE
        for agent, seen in list(active.items()):
            if not (isinstance(seen, (int, float)) and seen >= since):
                del active[agent]
        recent = state["recent"]
        if len(recent) <= RECENT:
            return
        kept, agents = [], set()
        for key in reversed(recent):
            entry = recent[key]
            agent = entry[4] if isinstance(entry, list) and len(entry) == 6 else None
            last = agent not in agents and agent in active
            if len(kept) < RECENT or last or key == "side":
                kept.append(key)
                agents.add(agent)
        if len(kept) < len(recent):
            self.state["recent"] = {key: recent[key] for key in reversed(kept)}
        self._stale = False
        self._trim_at = _trim_after(len(kept))

    def _book(self, entry, sign):
        _, pusd, _, model, agent, day = entry
        pusd *= sign
        spend = self.state["spend"]
        spend["total"] += pusd
        for totals, name in ((spend["model"], model), (spend["agent"], agent), (spend["day"], day)):
            value = totals.get(name, 0) + pusd
            if value:
                totals[name] = value
            else:
                totals.pop(name, None)

    # -- calls and their outcomes

    def agent(self, name):
        agents = self.state["agents"]
        record = agents.get(name)
        if record is None:
            record = agents[name] = {"fails": 0, "hist": [], "pending": [], "ref": {}, "asked": []}
        return record

    def expecting(self):
        """Whether any call still waits for its outcome (a test that costs no scan of a line)."""
        return bool(self._pending_owner)

    def waiting_for(self, raw):
        """Whether a raw line may hold the outcome of a call the wires are waiting for."""
        return any(tool_use_id.encode() in raw for tool_use_id in self._pending_owner)

    def waited(self):
        """The ids of the calls still waiting for their outcome, to look for in a host's rows."""
        return list(self._pending_owner)

    def call(self, agent, tool_use_id, call_hash):
        """Remember a call until its outcome shows up in the transcript."""
        record = self.agent(agent)
        if any(pending_hash == call_hash for _, pending_hash in record["pending"]):
            return False  # a parallel copy of a call still running: counted once
        record["pending"].append([tool_use_id, call_hash])
        self._pending_owner[tool_use_id] = agent
        del record["pending"][:-64]
        return True

    def result(self, tool_use_id, status, outcome):
        """An outcome read from a transcript: 'ok', 'fail', 'reset' (a person stepped in) or
        'guard' (a refusal by this guard, possibly installed twice)."""
        agent = self._pending_owner.pop(tool_use_id, None)
        if agent is None:
            return
        record = self.state["agents"][agent]
        call_hash = None
        for index, (pending_id, pending_hash) in enumerate(record["pending"]):
            if pending_id == tool_use_id:
                call_hash = pending_hash
                del record["pending"][index]
                break
        if status == "guard" or tool_use_id in self.state["denied"]:
            return  # the guard's own refusal: the call never ran
        if tool_use_id in record["asked"]:
            record["asked"].remove(tool_use_id)
            reset_agent(record)  # the person approved a call the guard asked about
        if status == "reset":
            reset_agent(record)
            return
        record["fails"] = record["fails"] + 1 if status == "fail" else 0
        record["hist"].append([call_hash, outcome])
        del record["hist"][:-HIST]

    def outcome(self, agent, tool_use_id, failed, outcome):
        """An outcome a post-tool hook reported (the host's files show it late, or never)."""
        if tool_use_id:
            reported = self.state.setdefault("reported", [])
            if tool_use_id in reported:
                return  # the same outcome reported through a second install
            reported.append(tool_use_id)
            del reported[:-64]
        if tool_use_id in self._pending_owner:
            self.result(tool_use_id, "fail" if failed else "ok", outcome)
            return
        if tool_use_id in self.state["denied"]:
            return  # the guard's own refusal: the call never ran
        record = self.agent(agent)
        hist = record["hist"]
        if hist and hist[-1][1] is None:
            hist[-1][1] = outcome
        record["fails"] = record["fails"] + 1 if failed else 0

    def complete_unseen(self, agent, call_hash):
        """With no transcript to read, a call is its own outcome: the loop wire still works."""
        record = self.agent(agent)
        record["hist"].append([call_hash, None])
        del record["hist"][:-HIST]

    def remember_refusal(self, agent, tool_use_id, asked):
        """A call the guard refused never ran; one it asked about ran only if the person agreed."""
        if not tool_use_id:
            return
        if asked:
            asked_ids = self.agent(agent)["asked"]
            asked_ids.append(tool_use_id)
            del asked_ids[:-16]
        else:
            denied = self.state["denied"]
            denied.append(tool_use_id)
            del denied[:-256]


def _trim_after(kept):
    """How many recent responses a long read lets accumulate before it trims (a trim looks at
    each one)."""
    return max(2 * kept, kept + RECENT)


def reset_agent(record):
    record["fails"] = 0
    record["hist"] = []
    record["ref"] = {}


def _refused_write(error):
    """Whether error is the disk refusing a write (full, over quota, read-only), or a lock
    not had in time: the state is as usable as before, and is kept."""
    import errno

    return isinstance(error, TimeoutError) or getattr(error, "errno", None) in (
        errno.ENOSPC,
        errno.EDQUOT,
        errno.EROFS,
    )


# More than any response costs or any session spends ($10**15): a ledger line past it is not
# one the guard wrote, and a sum of such lines could not be shown in dollars (a float).
MOST_PICO = 10**27


def _valid_entry(entry):
    """Whether a ledger line is [key, picodollars, output, model, agent, day] as usage() writes
    it: amounts whole numbers (not bools) from 0 to MOST_PICO. Any other line is ignored: one
    that takes money away (negative) or cannot be summed and shown is no entry of the guard's."""
    return (
        isinstance(entry, list)
        and len(entry) == 6
        and isinstance(entry[0], str)
        and type(entry[1]) is int
        and type(entry[2]) is int
        and 0 <= entry[1] <= MOST_PICO
        and 0 <= entry[2] <= MOST_PICO
        and all(isinstance(item, str) for item in entry[3:])
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
            and _pair(state.get("parked"), int, str)
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


def _pair(value, first, second):
    """Whether an optional part of the state is absent or a [first, second] pair."""
    return value is None or (
        isinstance(value, list)
        and len(value) == 2
        and isinstance(value[0], first)
        and isinstance(value[1], second)
    )


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


def daily_path(state_dir, day):
    return fs.join(state_dir, "daily", f"{day}.json")


def day_shares(state_dir, day):
    """Each session's spend on day, for status: the day file lists the day's sessions, and a
    session's own state has its current figure (without a daily cap the hook updates its share
    in the day file only every so often: hook._daily_spend)."""
    shares = read_json(daily_path(state_dir, day)) or {}
    for key, pusd in shares.items():
        if not isinstance(pusd, int) or ":" not in key:
            continue
        state = read_state(session_paths(state_dir, *key.split(":", 1))[1] + STATE) or {}
        spend = state.get("spend")
        days = spend.get("day") if isinstance(spend, dict) else None
        current = days.get(day) if isinstance(days, dict) else None
        if isinstance(current, int) and current > pusd:
            shares[key] = current
    return shares


def daily_spend(state_dir, day, session_key=None, session_pusd=None, write=True):
    """All sessions' spend on day, in picodollars; first records this session's share if given
    (write=False: counts it without writing, for when the file cannot be written).

    One small file per day maps each session to its spend that day, so a daily cap spans every
    session of every host without reading anyone else's transcripts.
    """
    path = daily_path(state_dir, day)
    if session_key is None or not write:
        shares = read_json(path) or {}
        if session_key is not None:
            shares[session_key] = session_pusd
    else:
        private_dir(fs.dirname(path))
        with Lock(path + ".lock"):
            shares = read_json(path) or {}
            if shares.get(session_key) != session_pusd:
                shares[session_key] = session_pusd
                write_atomic(path, jsonio.dumps(shares).encode())
    return day_total(shares)


def day_total(shares):
    """The sum of a day file's shares: whole picodollars above zero only (a share of another
    kind, or below zero, cannot lower the day's total)."""
    return sum(value for value in shares.values() if type(value) is int and value > 0)
