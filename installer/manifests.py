#!/usr/bin/env python3
"""Write (or --check) the plugin and extension manifests from the host modules and SKILL.md.

    python3 installer/manifests.py           # rewrite the files that differ
    python3 installer/manifests.py --check   # exit 1 and name them when any differs

Which files, and where each fact comes from: installer/runaway_guard_installer/manifests.py.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

SOURCE_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(SOURCE_ROOT / "skill"))

from runaway_guard import hosts  # noqa: E402
from runaway_guard_installer import manifests  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="manifests.py", description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if stale")
    args = parser.parse_args(argv)
    modules = [hosts.load(name) for name in hosts.NAMES]
    if args.check:
        stale = manifests.stale(SOURCE_ROOT, modules)
        for path in stale:
            print(f"{path}: differs from the host modules and SKILL.md", file=sys.stderr)
        if stale:
            print("Run: python3 installer/manifests.py", file=sys.stderr)
        return 1 if stale else 0
    for path in manifests.write(SOURCE_ROOT, modules):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
