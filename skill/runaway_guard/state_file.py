"""The state file's format and the files around it: slots, seal, lock, paths, atomic writes.

A session's state is `<id>.state` in the state dir (ledger.py says what else a session keeps),
small and rewritten under a lock on every call: read cursors, spend totals, the last responses
(whose usage can still grow), and the wires' counters. It holds JSON's kinds of data, written
with `marshal` (format 4, which every Python 3 reads): a call reads and writes it in a third of
the time JSON takes (bench/README.md). The file has two slots, written in turn in place (see
SLOTS); a reader takes the newer whole one, so a call killed mid-write leaves the state before
it, as a rename would. A part of the state that a call seldom needs is kept in `<id>.<part>.<n>`
(PARTS, ledger.Ledger.part).
"""

import marshal
import time

from . import fs, jsonio

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
LOCK_WAIT = 10.0

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


def session_paths(state_dir, host, session_id):
    folder = fs.join(state_dir, "sessions", host)
    base = fs.join(folder, safe_name(session_id))
    return folder, base
