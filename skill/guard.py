#!/usr/bin/env python3
"""runaway-guard's hook for every host: the hook's JSON on stdin, nothing or one answer out,
exit 0 whatever happens (runaway_guard.hook.main); with --serve, one answer a line for each
payload a line, for a plugin that keeps the guard running (runaway_guard.serve); with
--self-check, one whole decision checked (self_check.py, which also writes hook.log's `dead` line
when the package cannot load). The rest is in runaway_guard/__init__.py: the interpreter
compiles this file on every call (about 50k instructions a statement), where the package's
modules come compiled."""

import sys

try:  # __file__ is absolute (3.9+); no os.path, whose import costs a call 1 ms (fs.py)
    sys.path.insert(0, __file__[: max(__file__.rfind("/"), __file__.rfind("\\")) + 1])
    from runaway_guard import main
except BaseException:  # a broken install fails open: exit 0, nothing printed, hook.log says why
    __import__("self_check").failed()
main()
