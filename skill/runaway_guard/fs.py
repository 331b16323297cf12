"""The operating-system calls the hook makes, from `posix` rather than `os`.

The interpreter loads `posix` before any code runs; `import os` costs a call 1.2–1.3 ms more
(its environ mapping imports `_collections_abc`), a tenth of the interpreter's own start on
every tool call (bench/README.md). The names are those of `os` and `os.path`, so code reads the
same; where there is no `posix` (Windows) they are `os`'s own.
"""

import sys

SEEK_SET = 0

try:
    from posix import (  # noqa: F401 (names for the other modules)
        F_TLOCK,
        O_APPEND,
        O_CREAT,
        O_EXCL,
        O_NOFOLLOW,
        O_NONBLOCK,
        O_RDONLY,
        O_RDWR,
        O_TRUNC,
        O_WRONLY,
        _exit,
        chmod,
        close,
        fstat,
        ftruncate,
        getcwd,
        getpid,
        getppid,
        getuid,
        kill,
        listdir,
        lockf,
        lseek,
        lstat,
        mkdir,
        open,
        read,
        readlink,
        readv,
        remove,
        replace,
        scandir,
        stat,
        urandom,
        utime,
        write,
    )
except ImportError:  # Windows: os itself (no advisory locks there: see ledger.Lock)
    from os import (  # noqa: F401
        O_APPEND,
        O_CREAT,
        O_EXCL,
        O_RDONLY,
        O_RDWR,
        O_TRUNC,
        O_WRONLY,
        _exit,
        chmod,
        close,
        environ,
        fstat,
        ftruncate,
        getcwd,
        getpid,
        getppid,
        kill,
        listdir,
        lseek,
        lstat,
        mkdir,
        open,
        read,
        readlink,
        remove,
        replace,
        scandir,
        stat,
        urandom,
        utime,
        write,
    )
    from os.path import abspath, basename, dirname, exists, expanduser, isdir, isfile, join

    F_TLOCK = lockf = getuid = None
    O_NONBLOCK = O_NOFOLLOW = 0
    sep = "\\"

    def makedirs(path, mode=0o777):
        import os

        os.makedirs(path, mode, exist_ok=True)

else:
    sep = "/"
    _S_IFMT, _S_IFDIR, _S_IFREG = 0o170000, 0o040000, 0o100000

    if "os" in sys.modules:  # the status command and the tests: the live mapping
        environ = sys.modules["os"].environ
    else:
        from posix import environ as _bytes_environ

        _encoding = sys.getfilesystemencoding()
        environ = {
            key.decode(_encoding, "surrogateescape"): value.decode(_encoding, "surrogateescape")
            for key, value in _bytes_environ.items()
        }

    def join(path, *parts):
        for part in parts:
            if part.startswith("/"):
                path = part
            elif not path or path.endswith("/"):
                path += part
            else:
                path += "/" + part
        return path

    def dirname(path):
        head = path[: path.rfind("/") + 1]
        if head and head != "/" * len(head):
            head = head.rstrip("/")
        return head

    def basename(path):
        return path[path.rfind("/") + 1 :]

    def abspath(path):
        if not path.startswith("/"):
            path = join(getcwd(), path)
        kept = []
        for part in path.split("/"):
            if part == ".." and kept:
                kept.pop()
            elif part and part not in (".", ".."):
                kept.append(part)
        return "/" + "/".join(kept)

    def expanduser(path):
        home = environ.get("HOME")
        if path[:1] != "~":
            return path
        if not home or path[1:2] not in ("", "/"):  # ~user, or no HOME: the password file
            import os.path

            return os.path.expanduser(path)
        return (home.rstrip("/") + path[1:]) or "/"

    def _mode(path):
        try:
            return stat(path).st_mode & _S_IFMT
        except (OSError, ValueError):
            return None

    def isdir(path):
        return _mode(path) == _S_IFDIR

    def isfile(path):
        return _mode(path) == _S_IFREG

    def exists(path):
        return _mode(path) is not None

    def makedirs(path, mode=0o777):
        """os.makedirs(path, mode, exist_ok=True): mode for the last folder only, as there."""
        try:
            mkdir(path, mode)
        except FileExistsError:
            if not isdir(path):
                raise
        except FileNotFoundError:
            parent = dirname(path)
            if not parent or parent == path:
                raise
            makedirs(parent)
            makedirs(path, mode)


# Every file the guard creates: a link planted where one of its files goes is not followed.
O_CREAT_NOFOLLOW = O_CREAT | O_NOFOLLOW


def getsize(path):
    return stat(path).st_size


def realpath(path):
    """os.path.realpath, for the rare call that needs it (it imports os)."""
    import os.path

    return os.path.realpath(path)
