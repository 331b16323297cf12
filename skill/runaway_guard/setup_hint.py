"""What status.py says when the guard has recorded no session: most often its hook is not
installed for the host this skill folder belongs to (a skill copied into a skills folder guards
nothing until the hook is in the host's settings). Cold path: status only.

The skill folder ships the installer (installer/ beside skill/), whose presence module knows
each host's settings and plugins; a copy without it gets the route through a clone.
"""

import os
import sys


def skill_root():
    """The skill folder: the one holding SKILL.md, skill/ and installer/."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def advice(cwd, environ=None, only_missing=False):
    """One or two sentences: installed or not for this folder's host, and what to run.
    only_missing: '' unless this folder belongs to a host for which the hook is not installed."""
    root = skill_root()
    installer = os.path.join(root, "installer")
    if not os.path.isfile(os.path.join(installer, "install.py")):
        if only_missing:
            return ""
        return (
            f"This copy of the skill ({root}) has no installer/ folder, so it cannot install its "
            "hook: with the person's consent, clone the runaway-guard repository and run "
            "python3 installer/install.py --host <the coding agent you run in> from the clone."
        )
    try:
        from pathlib import Path

        from . import hosts

        if installer not in sys.path:
            sys.path.insert(0, installer)
        from runaway_guard_installer import presence

        modules = [hosts.load(name) for name in hosts.NAMES]
        modules = [host for host in modules if host.INSTALL]
        env = os.environ if environ is None else environ
        if only_missing:
            return presence.missing(Path(root), modules, env, Path(cwd))
        return presence.advice(Path(root), modules, env, Path(cwd))
    except Exception as error:  # a hint must never hide the status's own message
        if only_missing:
            return ""
        return (
            f"(could not tell whether the hook is installed: {error}) With the person's consent, "
            f"install it: python3 {os.path.join(installer, 'install.py')} --host <host>"
        )
