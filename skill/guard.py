#!/usr/bin/env python3
"""runaway-guard's hook for every host: the hook's JSON on stdin, nothing or one answer out,
exit 0 whatever happens (runaway_guard.hook.main); with --serve, one answer a line for each
payload a line, for a plugin that keeps the guard running (runaway_guard.serve). Kept small:
the interpreter compiles this file on every call, where the package's modules come compiled
(runaway_guard/bundle.py)."""

import sys

try:  # __file__ is absolute (3.9+); no os.path, whose import costs a call 1 ms (fs.py)
    import gc

    # A call allocates code and records that it frees itself, not cycles: collecting every
    # 700 objects cost a steady call 1% of its instructions (callgrind), a first read up to 2%.
    gc.set_threshold(100_000)
    sys.path.insert(0, __file__[: max(__file__.rfind("/"), __file__.rfind("\\")) + 1])
    from runaway_guard.bundle import load

    main = load("runaway_guard.serve" if sys.argv[1:] == ["--serve"] else "runaway_guard.hook").main
except BaseException:  # a broken install fails open: nothing printed, exit 0
    sys.exit(0)
main()
