"""The hook's modules run from one file each call, not imported one by one.

An import costs a hook call about 0.1 ms a module before the module's own code runs (finders, a
stat, the .pyc's read and checks: ~270k instructions), and a call needs a dozen for the hook and
four for its host. A bundle holds the compiled code the import system keeps in `__pycache__`
for one module and every module of this package it runs, in the order they finish, in one file
beside the .pyc files. It is used only while each source has the mtime and size its code was
compiled from (the import system's own check of a .pyc); otherwise the modules are imported as
usual and the bundle is written again from their .pyc files. bench/README.md has the figures.
"""

import marshal
import sys

try:
    from posix import getpid, remove, replace, stat
except ImportError:  # Windows
    from nt import getpid, remove, replace, stat

FORMAT = 1
PACKAGE = __name__.rpartition(".")[0]
_ROOT = __file__[: max(__file__.rfind("/"), __file__.rfind("\\")) + 1]  # the package's folder
_BOOT = sys.modules.get("_frozen_importlib_external")
_MAGIC = getattr(_BOOT, "MAGIC_NUMBER", None)  # None: no .pyc files to bundle (not CPython)
_TAG = sys.implementation.cache_tag
_CODE = type((lambda: None).__code__)
# This package's modules this process loaded through load() (from a bundle or imported by it):
# a bundle is written only where every module of the package loaded before is one of them, so
# that it holds all the modules a call through guard.py needs, not what a test process lacked.
_loaded_here = {PACKAGE, __name__}


def load(name):
    """The module `name` of this package, with what it imports, from its bundle when fresh."""
    module = sys.modules.get(name)
    if module is not None:
        return module
    path = bundle_path(name)
    if path is None or not _run(path):
        before = _package_modules()
        specs = _import(name)
        if before <= _loaded_here:
            _write(path, specs)
        _loaded_here.update(_package_modules() - before)
    return sys.modules[name]


def _package_modules():
    return {name for name in sys.modules if name.partition(".")[0] == PACKAGE}


def bundle_path(name):
    if _MAGIC is None or _TAG is None:
        return None
    return f"{_ROOT}__pycache__{_ROOT[-1]}{name[len(PACKAGE) + 1 :]}.{_TAG}.bundle"


def _run(path):
    """Run the bundle's modules; False (nothing run) where it is missing, damaged or stale."""
    try:
        with open(path, "rb") as handle:
            form, magic, entries = marshal.loads(handle.read())
        if form != FORMAT or magic != _MAGIC:
            return False
        for _, file, _, mtime, size, code in entries:
            found = stat(_ROOT + file)
            if int(found.st_mtime) & 0xFFFFFFFF != mtime or found.st_size & 0xFFFFFFFF != size:
                return False
            if type(code) is not _CODE:
                return False
    except (OSError, ValueError, EOFError, TypeError):
        return False
    fix_filename = sys.modules["_imp"]._fix_co_filename
    new_module = type(sys)
    ready = []
    for name, file, is_package, _, _, code in entries:
        if name in sys.modules:
            continue
        module = new_module(name)
        module.__file__ = _ROOT + file
        module.__package__ = name if is_package else name.rpartition(".")[0]
        if is_package:
            module.__path__ = [module.__file__[: -len("__init__.py") - 1]]
        fix_filename(code, module.__file__)
        ready.append((module, code))
    for module, _ in ready:  # each module sees the others, as during an import
        sys.modules[module.__name__] = module
    try:
        for module, code in ready:
            exec(code, module.__dict__)
            parent, _, child = module.__name__.rpartition(".")
            setattr(sys.modules[parent], child, module)
    except BaseException:
        for module, _ in ready:
            sys.modules.pop(module.__name__, None)
        raise
    _loaded_here.update(module.__name__ for module, _ in ready)
    return True


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
        if spec.cached and spec.origin and spec.origin.startswith(_ROOT):
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
            header = _MAGIC + bytes(4) + b"".join(part.to_bytes(4, "little") for part in stamp)
            if data[:16] != header:
                return  # a hash-checked .pyc (its flags set), or one older than its source
            is_package = spec.submodule_search_locations is not None
            file = spec.origin[len(_ROOT) :]
            entries.append((spec.name, file, is_package, *stamp, marshal.loads(data[16:])))
    except (OSError, ValueError, EOFError, TypeError):
        return
    temp = f"{path}.{getpid()}.tmp"
    try:
        with open(temp, "wb") as handle:
            handle.write(marshal.dumps((FORMAT, _MAGIC, entries)))
        replace(temp, path)
    except OSError:
        try:
            remove(temp)
        except OSError:
            pass
