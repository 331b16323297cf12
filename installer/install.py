#!/usr/bin/env python3
"""Install runaway-guard into the hosts: copy the skill, merge the hook entry (or write the
guard's own file), each as the host's module says (skill/runaway_guard/hosts/<host>.py INSTALL).

    python3 installer/install.py --host NAME|all [--scope user|project] [--project DIR]
                                 [--dry-run] [--uninstall] [--check] [--python PATH]

Why it writes what it writes (interpreter, flags, timeout, merge rules, refusals, exit codes):
installer/README.md.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType

SOURCE_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(SOURCE_ROOT / "skill"))

from runaway_guard import hosts  # noqa: E402
from runaway_guard_installer.check import check_target, default_python, resolve_python  # noqa: E402
from runaway_guard_installer.plan import apply_plan, diff_text, make_plan, next_steps  # noqa: E402
from runaway_guard_installer.settings_file import (  # noqa: E402
    InstallError,
    Refused,
)
from runaway_guard_installer.skill_folder import (  # noqa: E402
    check_source,
)
from runaway_guard_installer.targets import Target, found_on_machine, locate, plugged, plugin_note  # noqa: E402

EXIT_OK, EXIT_ERROR, EXIT_REFUSED = 0, 1, 2
INSTALLABLE = tuple(sorted(name for name in hosts.NAMES if hosts.load(name).INSTALL))


def run_install(
    targets: Sequence[Target], args: argparse.Namespace, env: Mapping[str, str], out
) -> int:
    source = Path(args.source)
    if not args.uninstall:
        check_source(source)
        targets = _without_plugged(targets, env, out)
    plans = [make_plan(t, source, args.python, args.uninstall, env) for t in targets]  # may refuse
    for plan in plans:
        print(f"== {plan.target.host.LABEL} ({plan.target.scope} scope)", file=out)
        for note in plan.merge.notes:
            print(f"note: {note}", file=out)
        if args.dry_run:
            print(diff_text(plan) or f"{plan.target.settings}: no change\n", file=out, end="")
            if plan.copy_lines:
                print(f"skill folder {plan.target.skill_dir}:", file=out)
                for line in plan.copy_lines:
                    print(f"  {line}", file=out)
            else:
                print(f"skill folder {plan.target.skill_dir}: no change", file=out)
            continue
        for line in apply_plan(plan, source, args.uninstall):
            print(line, file=out)
    if args.dry_run:
        print("\nDry run: nothing was written.", file=out)
    elif not args.uninstall and plans:
        for line in next_steps(plans):
            print(line, file=out)
    else:
        for plan in plans:
            if plan.merge.action == "removed":
                print(plan.target.host.INSTALL["after_uninstall"], file=out)
            where = plugged(plan.target, env)
            if where:
                print(plugin_note(plan.target, where, "it stays."), file=out)
    return EXIT_OK


def _without_plugged(targets: Sequence[Target], env: Mapping[str, str], out) -> list[Target]:
    """The targets whose host does not already run the guard as its plugin; a note for others
    (both would run the guard on every call)."""
    kept = []
    for target in targets:
        where = plugged(target, env)
        if not where:
            kept.append(target)
            continue
        print(f"== {target.host.LABEL} ({target.scope} scope)", file=out)
        print(f"note: {plugin_note(target, where, 'no second hook was added.')}", file=out)
    return kept


# --------------------------------------------------------------------------- main


def run_check(targets: Sequence[Target], env: Mapping[str, str], out) -> int:
    results = [check_target(t, env, out) for t in targets]
    return EXIT_OK if all(results) else EXIT_ERROR


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="install.py",
        description="Install runaway-guard's hook into the coding agents on this machine.",
    )
    parser.add_argument(
        "--host",
        required=True,
        choices=(*INSTALLABLE, "all"),
        help="one host, or all: every host found on this machine",
    )
    parser.add_argument("--scope", default="user", choices=("user", "project"))
    parser.add_argument("--project", help="project folder (default: git root of the cwd)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--uninstall", action="store_true", help="remove the hook and the skill")
    mode.add_argument("--check", action="store_true", help="verify the installed hook can run")
    parser.add_argument("--dry-run", action="store_true", help="show what would change")
    parser.add_argument(
        "--python",
        default=default_python(),
        help="interpreter written into the hook command (default: this one, absolute path)",
    )
    parser.add_argument("--source", default=str(SOURCE_ROOT), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.project and args.scope != "project":
        parser.error("--project only applies with --scope project")
    if args.check and args.dry_run:
        parser.error("--check writes nothing anyway; drop --dry-run")
    return args


def python_ok(python: str) -> str | None:
    """An error message when `python` cannot run the guard (missing, or older than 3.9)."""
    found = resolve_python(python)
    if found is None:
        return f"--python {python}: not found or not executable."
    try:
        proc = subprocess.run(
            [found, "-c", "import sys; sys.exit(sys.version_info < (3, 9))"],
            capture_output=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"--python {python}: cannot be run ({exc})."
    if proc.returncode != 0:
        return f"--python {python}: the guard needs Python 3.9 or newer."
    return None


def chosen_hosts(name: str, env: Mapping[str, str], out) -> list[ModuleType]:
    if name != "all":
        return [hosts.load(name)]
    found = [hosts.load(n) for n in INSTALLABLE if found_on_machine(hosts.load(n), env)]
    missing = [hosts.load(n).LABEL for n in INSTALLABLE if hosts.load(n) not in found]
    print(f"Hosts found on this machine: {', '.join(h.LABEL for h in found) or 'none'}", file=out)
    if missing:
        print(f"Not found (skipped): {', '.join(missing)}", file=out)
    return found


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None, out=None) -> int:
    out = out or sys.stdout
    env = os.environ if env is None else env
    try:
        args = parse_args(argv)
    except SystemExit as exc:  # argparse: 2 on bad usage, 0 on --help
        return int(exc.code or 0)
    project = Path(args.project) if args.project else None
    if project is not None and not project.is_dir():
        print(f"install.py: --project {project}: no such folder.", file=sys.stderr)
        return EXIT_REFUSED
    if "/" in args.python or os.sep in args.python:
        args.python = os.path.abspath(args.python)
    chosen = chosen_hosts(args.host, env, out)
    if not chosen:  # nothing went wrong, there is nothing to guard: say so and how to go on
        print(
            "No coding agent found on this machine (looked for each host's folder, its "
            "variable and its CLI on PATH): nothing was installed. Install one first, or name "
            f"it to install the guard for it anyway: --host {'|'.join(INSTALLABLE)}.",
            file=out,
        )
        return EXIT_ERROR if args.check else EXIT_OK
    targets = [locate(host, args.scope, project, env) for host in chosen]
    try:
        if args.check:
            return run_check(targets, env, out)
        if not args.uninstall and args.python != default_python():
            problem = python_ok(args.python)
            if problem:
                print(f"install.py: {problem}", file=sys.stderr)
                return EXIT_REFUSED
        return run_install(targets, args, env, out)
    except Refused as exc:
        print(f"install.py: refused: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    except InstallError as exc:
        print(f"install.py: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except OSError as exc:
        print(f"install.py: {exc}. Nothing else was changed after this point.", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
