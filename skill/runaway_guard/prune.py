"""The day's prune (ledger.prune_if_due finds it due, once a day): what the guard keeps of the
sessions unseen since a cutoff, and the day files older than it, deleted. Imported only then."""

from . import fs
from .state_file import PARTS, STATE, try_lock


def unseen_since(state_dir, cutoff):
    """Delete every session's files and every day's whose newest is older than cutoff; how many
    sessions were deleted."""
    removed = 0
    for folder in _subfolders(fs.join(state_dir, "sessions")):
        removed += _prune_folder(folder, cutoff, ".lock")
    _prune_folder(fs.join(state_dir, "daily"), cutoff, ".json.lock")
    return removed


def _subfolders(root):
    try:
        return [item.path for item in fs.scandir(root) if item.is_dir(follow_symlinks=False)]
    except OSError:
        return []


def _base_name(name):
    """`<id>` of `<id>.state`, `.ledger`, `.lock`, `.json.lock` (a day's), `.json` (a day's, and
    an earlier version's state), `.<part>.<n>` (ledger.PARTS), and of what a call killed in the
    middle of a write leaves: `.state.<pid>.tmp`."""
    if name.endswith(".tmp"):
        name = name.rsplit(".", 2)[0]
    head, _, number = name.rpartition(".")
    if number.isdigit() and head.endswith(tuple("." + part for part in PARTS)):
        return head.rpartition(".")[0]
    for suffix in (".json.lock", STATE, ".json", ".ledger", ".lock"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _prune_folder(folder, cutoff, lock_suffix):
    """Delete each group of files of one base name (a session's state, ledger, lock and temp
    files; a day's file and lock) whose newest is older than cutoff, unless its lock is held."""
    groups = {}
    try:
        items = list(fs.scandir(folder))
    except OSError:
        return 0
    for item in items:
        if item.name.startswith("."):
            continue
        base = _base_name(item.name)
        try:
            if not item.is_file(follow_symlinks=False):
                continue
            mtime = item.stat(follow_symlinks=False).st_mtime
        except OSError:
            continue
        group = groups.setdefault(base, [0.0, []])
        group[0] = max(group[0], mtime)
        group[1].append(item.path)
    removed = 0
    for base, (newest, paths) in groups.items():
        if newest >= cutoff or not base:
            continue
        lock_path = fs.join(folder, base + lock_suffix)
        try:
            fd = fs.open(lock_path, fs.O_RDWR | fs.O_CREAT_NOFOLLOW, 0o600)
        except OSError:
            continue
        try:
            if not try_lock(fd):
                continue  # a call on this session is running right now
            for path in sorted(paths, key=lambda path: path == lock_path):
                try:
                    fs.remove(path)
                except OSError:
                    pass
            removed += 1
        finally:
            fs.close(fd)
    return removed
