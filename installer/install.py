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
import difflib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

SOURCE_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(SOURCE_ROOT / "skill"))

from runaway_guard import hosts  # noqa: E402
from runaway_guard_installer import owned_file, plugin_route  # noqa: E402
from runaway_guard_installer.check import check_command, default_python, resolve_python  # noqa: E402
from runaway_guard_installer.hook_list import (  # noqa: E402
    Merge,
    guard_positions,
    handler_at,
    hook_command,
    is_guard_handler,
    merge_install,
    merge_uninstall,
    sh_quote,
)
from runaway_guard_installer.settings_file import (  # noqa: E402
    InstallError,
    Loaded,
    Refused,
    check_writable,
    dump_settings,
    load_settings,
    write_atomic,
)
from runaway_guard_installer.skill_folder import (  # noqa: E402
    SKILL_NAME,
    check_source,
    copy_skill,
    keep_reason,
    plan_copy,
    remove_skill,
)

EXIT_OK, EXIT_ERROR, EXIT_REFUSED = 0, 1, 2
INSTALLABLE = tuple(sorted(name for name in hosts.NAMES if hosts.load(name).INSTALL))


# --------------------------------------------------------------------------- where


@dataclass
class Target:
    host: ModuleType
    scope: str
    settings: Path
    skill_dir: Path
    project: Path | None = None

    @property
    def entry(self) -> dict[str, Any]:
        return self.host.INSTALL["entry"]


def home_dir(env: Mapping[str, str]) -> Path:
    home = env.get("HOME")
    return Path(home) if home else Path(os.path.expanduser("~"))


def host_home(spec: dict[str, Any], env: Mapping[str, str]) -> Path:
    """The host's user folder: its variable, else its default under HOME (then a subfolder)."""
    variable, default, *sub = spec["home"]
    base = env.get(variable) or str(home_dir(env) / default)
    return Path(os.path.abspath(os.path.expanduser(base)), *sub)


def find_project_root(start: Path) -> Path:
    """The git repository root containing `start` (a `.git` folder or file), else `start`."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return start


def locate(host: ModuleType, scope: str, project: Path | None, env: Mapping[str, str]) -> Target:
    spec = host.INSTALL
    if scope == "user":
        base = host_home(spec, env)
        user = spec["user"]
        return Target(host, scope, base / user["settings"], base / user["skills"] / SKILL_NAME)
    root = Path(os.path.abspath(project)) if project else find_project_root(Path.cwd())
    here = spec["project"]
    return Target(host, scope, root / here["settings"], root / here["skills"] / SKILL_NAME, root)


def plugged(target: Target, env: Mapping[str, str]) -> list[str]:
    """Where the host shows runaway-guard installed through its own command (its plugin or
    extension): for every project (user scope), or also for this project (project scope)."""
    spec = target.host.INSTALL
    return plugin_route.find(spec.get("plugin"), host_home(spec, env), target.project)


def plugin_note(target: Target, where: list[str], verb: str) -> str:
    spec = target.host.INSTALL["plugin"]
    label = f"{target.host.LABEL}'s {spec.get('called', 'plugin')}"
    undo = " then ".join(f"`{c}`" for c in plugin_route.commands(spec, "uninstall", ""))
    return (
        f"runaway-guard is installed as {label} ({'; '.join(where)}): {verb} The "
        f"installer's hook is the faster route (README, Speed); to switch, run {undo}, then "
        "this installer again."
    )


def found_on_machine(host: ModuleType, env: Mapping[str, str]) -> bool:
    """A host is in use here when its variable is set, its folder exists or its CLI is on PATH."""
    spec = host.INSTALL
    # A variable of the host's own (CODEX_HOME) says it is used; a shared one (XDG_CONFIG_HOME,
    # with the host's subfolder under it) does not.
    own_variable = len(spec["home"]) == 2 and env.get(spec["home"][0])
    if own_variable or host_home(spec, env).is_dir():
        return True
    return any(which(binary, env) for binary in spec.get("binaries", ()))


def which(name: str, env: Mapping[str, str]) -> str | None:
    return shutil.which(name, path=env.get("PATH", ""))


# --------------------------------------------------------------------------- plan and apply


@dataclass
class Plan:
    target: Target
    loaded: Loaded
    merge: Merge
    new_bytes: bytes | None  # None: the settings file is not written (or removed: see delete)
    copy_lines: list[str]
    delete: bool = False  # uninstall of a file the guard owns


def make_plan(target: Target, source: Path, python: str, uninstall: bool) -> Plan:
    if target.entry["kind"] == "owned-file":
        return _owned_plan(target, source, python, uninstall)
    loaded = load_settings(target.settings, target.entry["events"])
    if uninstall:
        merge = merge_uninstall(loaded.obj, target.entry)
    else:
        command = hook_command(python, target.skill_dir, target.entry)
        merge = merge_install(loaded.obj, target.entry, command)
    changed = merge.action in ("added", "updated", "removed")
    new_bytes = dump_settings(merge.obj, loaded.bom) if changed else None
    if new_bytes is not None:
        check_writable(target.settings)
    return Plan(target, loaded, merge, new_bytes, _copy_lines(target, source, uninstall))


def _owned_plan(target: Target, source: Path, python: str, uninstall: bool) -> Plan:
    path = target.settings
    raw = path.read_bytes() if path.is_file() else None
    if raw is not None and not owned_file.is_ours(raw):
        raise Refused(
            f"{path}: exists and is not runaway-guard's file, so it was left untouched. Move it "
            "away (or remove it) and run the installer again."
        )
    loaded = Loaded(path, raw is not None, raw or b"")
    copy_lines = _copy_lines(target, source, uninstall)
    if uninstall:
        action = "removed" if raw is not None else "absent"
        return Plan(target, loaded, Merge({}, action), None, copy_lines, delete=raw is not None)
    guard = target.skill_dir.as_posix() + "/skill/guard.py"
    command = hook_command(python, target.skill_dir, target.entry)
    wanted = owned_file.render(target.entry, command, python, guard, source)
    action = "unchanged" if raw == wanted else "updated" if raw is not None else "added"
    new_bytes = None if action == "unchanged" else wanted
    if new_bytes is not None:
        check_writable(path)
    return Plan(target, loaded, Merge({}, action), new_bytes, copy_lines)


def _copy_lines(target: Target, source: Path, uninstall: bool) -> list[str]:
    if not uninstall:
        return plan_copy(source, target.skill_dir)
    removable = target.skill_dir.is_dir() and not keep_reason(source, target.skill_dir)
    return [f"- {target.skill_dir} (the whole folder)"] if removable else []


def diff_text(plan: Plan) -> str:
    if plan.new_bytes is None and not plan.delete:
        return ""
    old = plan.loaded.raw.decode("utf-8", "replace").lstrip("\ufeff")
    new = (plan.new_bytes or b"").decode("utf-8").lstrip("\ufeff")
    name = str(plan.target.settings)
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=name if plan.loaded.exists else "/dev/null",
        tofile="/dev/null" if plan.delete else name,
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def apply_plan(plan: Plan, source: Path, uninstall: bool) -> list[str]:
    target, out = plan.target, []
    if not uninstall:  # the guard must exist before the hook points at it
        out.append(copy_skill(source, target.skill_dir))
    if plan.delete:
        target.settings.unlink()
        out.append(f"removed {target.settings}")
    elif plan.new_bytes is not None:
        expected = plan.loaded.raw if plan.loaded.exists else None
        backup = write_atomic(target.settings, plan.new_bytes, expected)
        verb = {"added": "added to", "updated": "updated in", "removed": "removed from"}
        out.append(f"hook {verb[plan.merge.action]} {target.settings}")
        if backup:
            out.append(f"previous file saved as {backup}")
    elif uninstall:
        out.append(f"no runaway-guard hook in {target.settings}")
    else:
        out.append(f"hook already in place in {target.settings} (file not touched)")
    if uninstall:
        out.append(remove_skill(source, target.skill_dir))
    return out


# --------------------------------------------------------------------------- report


def next_steps(plans: Sequence[Plan]) -> list[str]:
    lines = ["", "Next steps:"]
    for plan in plans:
        target, spec = plan.target, plan.target.host.INSTALL
        status = target.skill_dir / "skill" / "status.py"
        changed = plan.merge.action in ("added", "updated")
        values = {
            "settings": target.settings,
            "settings_name": target.settings.name,
            "project": target.project,
            "changed": " (it is new or changed, so it asks again)" if changed else "",
        }
        notes = list(spec["after_install"])
        if target.scope == "project":
            notes += spec.get("after_install_project", ())
        for index, note in enumerate(notes):
            lines.append(("- " if index == 0 else "  ") + note.format(**values))
        lines.append(f"  Status: python3 {sh_quote(str(status))}")
    lines += [
        "- Spending cap (default $25 a session): set RUNAWAY_GUARD_MAX_USD, or write "
        '{"max_usd": 25} to ~/.config/runaway-guard/config.json.',
        "- Check later that the hook can still run: python3 installer/install.py --check "
        "--host ... (same --scope/--project).",
    ]
    return lines


def run_install(
    targets: Sequence[Target], args: argparse.Namespace, env: Mapping[str, str], out
) -> int:
    source = Path(args.source)
    if not args.uninstall:
        check_source(source)
        targets = _without_plugged(targets, env, out)
    plans = [make_plan(t, source, args.python, args.uninstall) for t in targets]  # may refuse
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


# --------------------------------------------------------------------------- check


def check_target(target: Target, env: Mapping[str, str], out) -> bool:
    print(f"== {target.host.LABEL} ({target.scope} scope): {target.settings}", file=out)
    entry = target.entry
    where = plugged(target, env)
    if where:
        called = target.host.INSTALL["plugin"].get("called", "plugin")
        for place in where:
            print(f"runaway-guard runs as {target.host.LABEL}'s {called}: {place}", file=out)
        if not _hook_present(target):
            print(f"ok: the {called} runs the guard (the installer hook is not there).", file=out)
            return True
        print(
            f"warning: the installer's hook and the {called} both run the guard on every call "
            "(each call is counted once, at twice the cost): uninstall one of them.",
            file=out,
        )
    if entry["kind"] == "owned-file":
        return _check_owned(target, env, out)
    loaded = load_settings(target.settings, entry["events"])
    if not loaded.exists:
        print(f"FAIL: {target.settings} does not exist: the guard is not installed.", file=out)
        return False
    if loaded.bom:
        print(
            "warning: the file starts with a UTF-8 byte-order mark; a strict JSON reader may "
            "reject it. Save it as UTF-8 without BOM.",
            file=out,
        )
    ok = True
    for event in entry["events"]:
        positions = guard_positions(loaded.obj, event, entry["grouped"])
        if not positions:
            print(f"FAIL: no runaway-guard hook in {event}: run the installer again.", file=out)
            ok = False
        for position in positions:
            handler = handler_at(loaded.obj, event, position)
            command = _guard_value(handler)
            print(f"hook in {event}: {command}", file=out)
            ok = check_command(command, env, out) and ok
            note = getattr(target.host, "check_note", None)
            if note:
                group = loaded.obj["hooks"][event][position[0]]
                print(note(target.settings, handler, position, group, env), file=out)
    return ok


def _hook_present(target: Target) -> bool:
    """Whether the installer's hook is in the target's settings (or its own file exists)."""
    entry = target.entry
    if entry["kind"] == "owned-file":
        return target.settings.is_file() and owned_file.is_ours(target.settings.read_bytes())
    obj = load_settings(target.settings, entry["events"]).obj
    return any(guard_positions(obj, event, entry["grouped"]) for event in entry["events"])


def _check_owned(target: Target, env: Mapping[str, str], out) -> bool:
    path = target.settings
    raw = path.read_bytes() if path.is_file() else None
    if raw is None or not owned_file.is_ours(raw):
        print(f"FAIL: no runaway-guard file at {path}: run the installer again.", file=out)
        return False
    if "template" not in target.entry:
        values = owned_file.filled_values(target.entry, raw, target.skill_dir)
        if values is None:
            guard = target.skill_dir / "skill" / "guard.py"
            ok = guard.is_file()
            print(f"{'ok' if ok else 'FAIL'}: {guard} {'exists' if ok else 'is gone'}.", file=out)
            return ok
        command = f"{sh_quote(values['python'])} -I -S {sh_quote(values['guard'])}"
        print(f"runs: {command}", file=out)
        return check_command(command, env, out)
    handlers = []
    _collect_handlers(json.loads(raw), handlers)
    return all(check_command(_guard_value(handler), env, out) for handler in handlers)


def _collect_handlers(value: Any, found: list) -> None:
    if isinstance(value, dict):
        if is_guard_handler(value):
            found.append(value)
        for item in value.values():
            _collect_handlers(item, found)
    elif isinstance(value, list):
        for item in value:
            _collect_handlers(item, found)


def _guard_value(handler: dict[str, Any]) -> str:
    """The handler's value that runs the guard (its `command`, or Copilot's `bash`)."""
    return next(v for v in handler.values() if isinstance(v, str) and "guard.py" in v)


def run_check(targets: Sequence[Target], env: Mapping[str, str], out) -> int:
    results = [check_target(t, env, out) for t in targets]
    return EXIT_OK if all(results) else EXIT_ERROR


# --------------------------------------------------------------------------- main


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
    if not chosen:
        print(
            "install.py: no coding agent found on this machine (looked for each host's folder "
            f"and CLI). Name one: --host {'|'.join(INSTALLABLE)}.",
            file=sys.stderr,
        )
        return EXIT_REFUSED
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
