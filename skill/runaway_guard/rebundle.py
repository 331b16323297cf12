"""A module's bundle written afresh: the module imported the usual way, noting which of this
package's modules ran, then their .pyc files put in one file for the next calls
(__init__.py). Only a call whose bundle is missing, damaged or stale comes here."""

import marshal
import sys

from . import FORMAT, MAGIC, PACKAGE, ROOT

try:
    from posix import getpid, remove, replace, stat
except ImportError:  # Windows
    from nt import getpid, remove, replace, stat


def import_and_write(name, path, loaded_here):
    """Import name; write its bundle at path where every module of the package this process
    loaded before is in loaded_here (loaded through load()), so that the bundle holds all
    the modules a call through guard.py needs, not what a test process lacked."""
    before = _package_modules()
    specs = _import(name)
    if before <= loaded_here:
        _write(path, specs)
    loaded_here.update(_package_modules() - before)


def _package_modules():
    return {name for name in sys.modules if name.partition(".")[0] == PACKAGE}


class _Noting:
    """A finder first in sys.meta_path that lets the others find this package's modules and
    notes, for each one whose code comes from a .pyc, when it has finished running."""

    def __init__(self):
        self.finished = []

    def find_spec(self, name, path=None, target=None):
        if not name.startswith(PACKAGE + "."):
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None) if finder is not self else None
            spec = find(name, path, target) if find else None
            if spec is not None:
                break
        else:
            return None
        if spec.cached and spec.origin and spec.origin.startswith(ROOT):
            spec.loader = _Loader(spec, self.finished)
        return spec


class _Loader:
    def __init__(self, spec, finished):
        self.loader, self.spec, self.finished = spec.loader, spec, finished

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        self.finished.append(self.spec)


def _import(name):
    """Import name as usual; the specs of the modules it ran, in the order they finished."""
    noting = _Noting()
    sys.meta_path.insert(0, noting)
    try:
        __import__(name)
    finally:
        sys.meta_path.remove(noting)
    return noting.finished


def _write(path, specs):
    """Write the bundle from the modules' .pyc files, if each is the one of its source now (the
    cache may not be writable, the .pyc left stale). Fails quietly: the next call imports."""
    if path is None or not specs:
        return
    entries = []
    try:
        for spec in specs:
            with open(spec.cached, "rb") as handle:
                data = handle.read()
            source = stat(spec.origin)
            stamp = (int(source.st_mtime) & 0xFFFFFFFF, source.st_size & 0xFFFFFFFF)
            header = MAGIC + bytes(4) + b"".join(part.to_bytes(4, "little") for part in stamp)
            if data[:16] != header:
                return  # a hash-checked .pyc (its flags set), or one older than its source
            is_package = spec.submodule_search_locations is not None
            file = spec.origin[len(ROOT) :]
            entries.append((spec.name, file, is_package, *stamp, marshal.loads(data[16:])))
    except (OSError, ValueError, EOFError, TypeError):
        return
    temp = f"{path}.{getpid()}.tmp"
    try:
        with open(temp, "wb") as handle:
            handle.write(marshal.dumps((FORMAT, MAGIC, entries)))
        replace(temp, path)
    except OSError:
        try:
            remove(temp)
        except OSError:
            pass
