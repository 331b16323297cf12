"""What every host's session-file reader shares.

A reader finds the session's files (main thread and subagents), reads what was appended since
the last call, and reports priced responses and tool outcomes to the book. Only lines that can
matter are parsed: a cheap byte test comes before any JSON decoding.
"""

import time

from .. import fs, jsonio, tail
from ..calls import ignored
from ..state_file import DORMANT

_day_cache = {}
# A line longer than this is judged first by the type its head names (jsonio.head_types):
# below it, the byte tests of the whole line cost less than the walk.
LONG = 1024
# A subagent file its host has not written for QUIET_S seconds is dormant: read_all looks at it
# once every SWEEP_S seconds, not every call, unless its agent makes the call (bench/README.md,
# many subagents). What it gains is booked at most SWEEP_S seconds late.
QUIET_S = 60.0
SWEEP_S = 1.0


def local_day(timestamp):
    """The local calendar day of an ISO-8601 UTC timestamp ('' when unreadable)."""
    if not isinstance(timestamp, str) or len(timestamp) < 13:
        return time.strftime("%Y-%m-%d")
    hour = timestamp[:13]
    day = _day_cache.get(hour)
    if day is None:
        try:
            year, month, mday = int(hour[0:4]), int(hour[5:7]), int(hour[8:10])
            epoch = _days_from_civil(year, month, mday) * 86400 + int(hour[11:13]) * 3600
            day = time.strftime("%Y-%m-%d", time.localtime(epoch))
        except (ValueError, OverflowError, OSError):
            day = time.strftime("%Y-%m-%d")
        _day_cache[hour] = day
    return day


def _days_from_civil(year, month, day):
    """Days since 1970-01-01 of a proleptic Gregorian date (avoids importing datetime)."""
    year -= month <= 2
    era = year // 400
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def read_file(book, path, entry, on_line):
    """Read what path gained since entry's cursor; a rewritten file is re-read whole. Notes on
    the book when a line holds the call being judged (book.watch)."""
    if book.watch and not book.watched:
        on_line = _Watching(book, on_line)
    tail.read_new(path, entry, on_line, book.load_known)


class _Watching:
    """Passes whole lines on to a handler (see tail.read_new), noting on the book when they hold
    the call being judged: one search of each run of lines, not one of each line."""

    def __init__(self, book, handler):
        self.book = book
        self.handler = handler
        self.handle = getattr(handler, "lines", None) or tail.split_lines(handler)

    def __call__(self, raw):  # for a caller that hands lines one by one
        if not self.book.watched and self.book.watch in raw:
            self.book.watched = True
        self.handler(raw)

    def lines(self, data, start, stop):
        book = self.book
        if not book.watched and data.find(book.watch, start, stop) >= 0:
            book.watched = True
        self.handle(data, start, stop)


def each_line(data, start, stop, line, passed_over):
    """line(raw) for each non-empty line of data[start:stop] (see tail.read_new) that
    passed_over(data, start, end) does not claim: a reader's whole-block handler, which can judge
    a line by its head (jsonio.head_types) without copying or scanning the rest of it."""
    find = data.find
    while start < stop:
        end = find(b"\n", start, stop)
        if end < 0:
            end = stop
        if end > start and not passed_over(data, start, end):
            line(data[start:end])
        start = end + 1


def read_all(book, main, reader, named=None, agent=None):
    """Read every file the book follows for this session, the main file last (its records may
    total the others); reader(entry) gives the line handler for one file (see tail.read_new),
    whose flush(), if it has one, is called once the file is read. The calling agent's file
    (named tells which file is agent's) is looked at on every call.

    A main file not written yet is read next call. A subagent file that vanished is dropped
    (what it held stays counted); one that cannot be read (not a regular file, no permission)
    is tried again next call while the others still count. So is a main file that cannot be
    read (a payload's path to a folder, a FIFO, /dev/zero): the call is judged on what was read
    before, and hook.log says so once.

    Every file's entry is a dict (entries); the dormant files' entries (QUIET_S) are kept apart
    (see _sweep).
    """
    state = book.state
    files = entries(state)
    now = time.time()
    swept = state.get("swept")
    sweep = (
        book.sweep
        or swept is None
        or not 0 <= now - swept < SWEEP_S
        or (agent not in (None, "main") and not _awake(files, main, agent, named))
    )
    if sweep:
        dormant = _sweep(book, now)
    paths = [path for path, entry in files.items() if path != main and not entry.get("foreign")]
    if main in files:
        paths.append(main)
    stat = fs.stat
    falling = []  # on a sweep, the subagent files not written for QUIET_S
    for path in paths:
        entry = files[path]
        try:
            info = stat(path)
            if sweep and entry.get("agent") != "main" and now - info.st_mtime >= QUIET_S:
                falling.append(path)  # read all the same if it changed: not seen yet
            if info.st_size == entry.get("off") and info.st_ino == entry.get("ino"):
                continue  # nothing new: the one stat is all a quiet file costs
            if named is not None and "agent" not in entry:
                entry["agent"] = named(path)  # left out of a dormant entry's rest (_rest)
            handler = reader(entry)
            read_file(book, path, entry, handler)
            flush = getattr(handler, "flush", None)
            if flush is not None:
                flush()  # what a reader held back until the end of what it read
        except FileNotFoundError:
            if path != main:
                del files[path]
        except OSError as error:
            if path == main and not entry.get("unread"):
                entry["unread"] = True
                _unreadable(book, error)
    if falling:
        _fall(book, falling, dormant, named)
    if ignored:
        say_ignored(book)


def say_ignored(book):
    """Say in hook.log, once per session, what the readers passed over (calls.ignored): the
    guard judged the call on the rest."""
    if not book.state.get("ignored"):
        book.state["ignored"] = True
        from .. import log

        log.append(
            book.state_dir,
            "ignored",
            f"{book.host} {book.session_id}: passed over {'; '.join(ignored)} in what the host"
            " wrote (judged on the rest; said once a session)",
        )
    del ignored[:]


def _unreadable(book, error):
    """The hook.log line for a session's main file the guard cannot read."""
    from .. import log

    log.append(
        book.state_dir,
        "ignored",
        f"{book.host} {book.session_id}: cannot read its session file ({error}); judged on what"
        " was read before, until it can be read",
    )


def _sweep(book, now):
    """Look at the dormant files: one that changed, vanished or cannot be read goes back among
    the others (read_all reads it this call). They are a part of the state in a file of its own
    (Ledger.part), {"index": {folder: {name: [off, ino]}}, "rests": {folder: {name: the rest of
    the packed entry}}}, the folder's name ending in its separator: a call between sweeps reads
    none of it, and it is written again only when a file wakes or falls asleep. The dormant
    files, for _fall."""
    dormant = book.part(DORMANT) or {"index": {}, "rests": {}}
    index, rests = _mapping(dormant["index"]), _mapping(dormant["rests"])
    woken = [
        (folder, name)
        for folder, names in index.items()
        for name, (off, ino) in names.items()
        if not _unchanged(folder + name, off, ino)
    ]
    if woken:
        dormant = _wake(book, index, rests, woken)
    book.state["swept"] = now
    return dormant


def _wake(book, index, rests, woken):
    """The (folder, name) files back among the others, and the dormant files left."""
    for folder, name in woken:
        off, ino = index[folder].pop(name)
        book.state["files"][folder + name] = _entry(off, ino, rests[folder].pop(name))
    dormant = {"index": _pruned(index), "rests": _pruned(rests)}
    book.set_part(DORMANT, dormant)
    return dormant


def _fall(book, paths, dormant, named):
    """Put the files' entries among the dormant ones."""
    files = book.state["files"]
    index, rests = dormant["index"], dormant["rests"]
    for path in paths:
        entry = files.pop(path, None)
        if entry is not None:  # not gone
            folder, name = _split(path)
            index.setdefault(folder, {})[name] = [entry.get("off"), entry.get("ino")]
            rests.setdefault(folder, {})[name] = _rest(path, entry, named)
    book.set_part(DORMANT, {"index": index, "rests": rests})


def _mapping(value):
    """{folder: {name: value}} from the dormant files' part."""
    if not (isinstance(value, dict) and all(isinstance(n, dict) for n in value.values())):
        raise TypeError("the state's dormant files are not a mapping of mappings")
    return value


def _split(path):
    """(folder, name) of a path, the folder ending in its separator."""
    cut = max(path.rfind("/"), path.rfind(fs.sep)) + 1
    return path[:cut], path[cut:]


def _pruned(mapping):
    return {folder: names for folder, names in mapping.items() if names}


def _unchanged(path, off, ino):
    try:
        info = fs.stat(path)
    except OSError:
        return False
    return info.st_size == off and info.st_ino == ino


def follow(book, path, entry):
    """Follow path from entry from now on, unless the book follows it already."""
    if not followed(book, path):
        book.state["files"][path] = entry


def main_entry(book, path):
    """The entry of the session's own file (a transcript, a database), made on first sight: it
    is never dormant, so it is looked up at once."""
    return book.state["files"].setdefault(path, {"agent": "main"})


def followed(book, path):
    """Whether the book follows path (a changed folder's file, Codex's calling rollout); a
    dormant one is woken: read_all looks at it this call."""
    files = book.state["files"]
    if path in files:
        return True
    dormant = book.part(DORMANT)
    if dormant:
        index, rests = _mapping(dormant["index"]), _mapping(dormant["rests"])
        folder, name = _split(path)
        if name in index.get(folder, ()):
            _wake(book, index, rests, [(folder, name)])
    return path in files


def _awake(files, main, agent, named):
    """Whether agent's file is among the files looked at every call (read before: a file just
    found is not)."""
    return any(
        path != main and "ino" in entry and named(path) == agent for path, entry in files.items()
    )


def entries(state):
    """state["files"], each followed file's entry, by path: a dict, the read cursor ("off",
    "ino", see tail.read_new) with what its host's reader keeps ("agent": "main" for the
    session's own file, "foreign" for another session's). A state of the version before kept
    a subagent's entry packed, [off, ino, the rest as JSON]: unpacked here (its agent, if left
    out, is put back when the file is next read)."""
    files = state["files"]
    if list in map(type, files.values()):
        for path, entry in files.items():
            if entry.__class__ is list:
                files[path] = _entry(*entry)
    return files


def main_path(state):
    """The path of the session's own file among the followed ones (None before it is known)."""
    return next((p for p, e in entries(state).items() if e.get("agent") == "main"), None)


def _rest(path, entry, named):
    """What a dormant file's part keeps of its entry beside off and ino, as JSON (its agent
    left out when named(path), the host's, tells it): marshal loads a text in a fraction of a
    dict's time, and a sweep needs only off and ino."""
    rest = dict(entry)
    rest.pop("off", None)
    rest.pop("ino", None)
    if named is not None and "agent" in rest and rest["agent"] == named(path):
        del rest["agent"]
    return jsonio.dumps(rest)


def _entry(off, ino, rest):
    """The entry of a dormant file woken (or of a state of the version before), from _rest's
    parts."""
    entry = jsonio.loads(rest)
    if off is not None:
        entry["off"] = off
    if ino is not None:
        entry["ino"] = ino
    return entry


def agent_file(path):
    """The agent an `agent-<id>.jsonl` file is named for (Claude Code's, Qwen Code's)."""
    return fs.basename(path)[6:-6]


def listing(seen, folder):
    """The names in folder, or None when it has not changed since it was last listed: its
    files are followed already (a file added or removed changes the folder's modification
    time). seen maps each folder to that time, kept only once it is a second old: a file made
    within the same clock tick as the listing would not change it."""
    try:
        stamp = fs.stat(folder).st_mtime_ns
    except OSError:
        seen.pop(folder, None)
        return None
    if seen.get(folder) == stamp:
        return None
    try:
        names = fs.listdir(folder)
    except OSError:
        return None
    if time.time_ns() - stamp > 10**9:
        seen[folder] = stamp
    else:
        seen.pop(folder, None)
    return names


def listed(book, folder):
    """listing(folder), with the folders' times in the book's state: a host reader's way to
    them (state["folders"] is this module's)."""
    return listing(book.state.setdefault("folders", {}), folder)


def list_again(book, folder):
    """Have folder listed again next call, changed or not (a file in it was not ready)."""
    book.state.get("folders", {}).pop(folder, None)


def first_line(path, limit=1 << 20):
    """The first line of a regular file, at most limit bytes; OSError for anything else.

    Opened non-blocking and checked before reading: a FIFO among the session's files would
    otherwise block the guard until the host's timeout kills it.
    """
    fd = fs.open(path, fs.O_RDONLY | fs.O_NONBLOCK)
    try:
        if not tail.regular(fs.fstat(fd).st_mode):
            raise OSError(f"not a regular file: {path}")
        data = b""
        while len(data) < limit and b"\n" not in data:
            block = fs.read(fd, min(1 << 16, limit - len(data)))
            if not block:
                break
            data += block
    finally:
        fs.close(fd)
    end = data.find(b"\n")
    return data if end < 0 else data[: end + 1]
