"""runaway-guard: the runtime package the hook and the status command import, and guard.py's
main. The hook's modules run from one file each call, not imported one by one, and this module
loads them: it is the one module of the package the import system finds on a hook call.

An import costs a hook call 0.3M instructions a module before the module's own code runs
(finders, a stat, the .pyc's read and checks), 0.6M for the first of a folder (its listing),
and a call needs a dozen for the hook and four for its host. A bundle holds the compiled code
the import system keeps in `__pycache__` for one module and every module of this package it
runs, in the order they finish, in one file beside the .pyc files. It is used only while each
source has the mtime and size its code was compiled from (the import system's own check of a
.pyc); otherwise the modules are imported as usual and the bundle is written again from their
.pyc files (rebundle.py). bench/README.md has the figures.
"""

import gc
import marshal
import sys

try:
    from posix import stat
except ImportError:  # Windows
    from nt import stat

FORMAT = 1
PACKAGE = __name__
ROOT = __file__[: max(__file__.rfind("/"), __file__.rfind("\\")) + 1]  # the package's folder
_BOOT = sys.modules.get("_frozen_importlib_external")
MAGIC = getattr(_BOOT, "MAGIC_NUMBER", None)  # None: no .pyc files to bundle (not CPython)
_TAG = sys.implementation.cache_tag
_CODE = type((lambda: None).__code__)
# This package's modules this process loaded through load() (from a bundle or imported by it),
# for rebundle.py, which writes a bundle only where every module loaded before is one of them.
_loaded_here = {PACKAGE, f"{PACKAGE}.rebundle"}


def main():
    """guard.py's: the hook, with --serve the served guard, with --self-check self_check.py."""
    # A call allocates code and records that it frees itself, not cycles: collecting every
    # 700 objects cost a steady call 1% of its instructions (callgrind), a first read up to 2%.
    gc.set_threshold(100_000)
    try:
        run = load(f"{PACKAGE}.hook").main if len(sys.argv) < 2 else _command(sys.argv[1:])
    except BaseException:  # a broken install fails open: exit 0, nothing printed, hook.log says why
        try:
            from self_check import failed  # beside guard.py; it never returns
        except BaseException:
            sys.exit(0)
        failed()
    run()


def _command(args):
    if args[0] == "--self-check":
        from self_check import main as self_check

        return self_check
    if args == ["--statusline"]:  # a host's status line: status.py --statusline, cheaper
        return load(f"{PACKAGE}.statusline").main
    return load(f"{PACKAGE}.serve" if args == ["--serve"] else f"{PACKAGE}.hook").main


def load(name):
    """The module `name` of this package, with what it imports, from its bundle when fresh."""
    module = sys.modules.get(name)
    if module is not None:
        return module
    path = bundle_path(name)
    if path is None or not _run(path):
        from . import rebundle

        rebundle.import_and_write(name, path, _loaded_here)
    return sys.modules[name]


def bundle_path(name):
    if MAGIC is None or _TAG is None:
        return None
    return f"{ROOT}__pycache__{ROOT[-1]}{name[len(PACKAGE) + 1 :]}.{_TAG}.bundle"


def _run(path):
    """Run the bundle's modules; False (nothing run) where it is missing, damaged or stale."""
    try:
        with open(path, "rb") as handle:
            form, magic, entries = marshal.loads(handle.read())
        if form != FORMAT or magic != MAGIC:
            return False
        for _, file, _, mtime, size, code in entries:
            found = stat(ROOT + file)
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
        module.__file__ = ROOT + file
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
