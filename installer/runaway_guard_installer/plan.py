"""What installing or uninstalling changes for one target, shown (--dry-run) or applied, and
what the person must do next."""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from . import owned_file, permission_rules, status_line
from .hook_list import (
    Merge,
    hook_command,
    merge_install,
    merge_uninstall,
    sh_quote,
)
from .settings_file import (
    Loaded,
    Refused,
    check_writable,
    dump_settings,
    load_settings,
    write_atomic,
)
from .skill_folder import (
    copy_skill,
    keep_reason,
    plan_copy,
    remove_skill,
)
from .targets import Target, home_dir


@dataclass
class Plan:
    target: Target
    loaded: Loaded
    merge: Merge
    new_bytes: bytes | None  # None: the settings file is not written (or removed: see delete)
    copy_lines: list[str]
    delete: bool = False  # uninstall of a file the guard owns


def make_plan(
    target: Target, source: Path, python: str, uninstall: bool, env: Mapping[str, str]
) -> Plan:
    if target.entry["kind"] == "owned-file":
        return _owned_plan(target, source, python, uninstall)
    loaded = load_settings(target.settings, target.entry["events"])
    if uninstall:
        merge = merge_uninstall(loaded.obj, target.entry)
    else:
        command = hook_command(python, target.skill_dir, target.entry)
        merge = merge_install(loaded.obj, target.entry, command)
    _guard_rules(target, merge, uninstall, env)
    _status_line(target, merge, uninstall, python)
    changed = merge.action in ("added", "updated", "removed")
    new_bytes = dump_settings(merge.obj, loaded.bom) if changed else None
    if new_bytes is not None:
        check_writable(target.settings)
    return Plan(target, loaded, merge, new_bytes, _copy_lines(target, source, uninstall))


def _guard_rules(target: Target, merge: Merge, uninstall: bool, env: Mapping[str, str]) -> None:
    """The host's permission rules for the guard's folders, added or taken out with the hook."""
    spec = target.host.INSTALL.get("guard_rules")
    if not spec:
        return
    folders = permission_rules.guarded_folders(target.skill_dir, env)
    wanted = permission_rules.rules(spec, folders, home_dir(env))
    if uninstall:
        merge.obj, changed = permission_rules.remove(merge.obj, spec, wanted)
        if changed and merge.action == "absent":
            merge.action = "removed"
        return
    merge.obj, changed, notes = permission_rules.add(merge.obj, spec, wanted)
    merge.notes += notes
    if changed:
        where = ".".join(spec["list"])
        merge.notes.append(
            f"{target.host.LABEL} asks before its file tools change the guard's folders: "
            f"{', '.join(wanted)} added to {where} in {target.settings} (--uninstall takes "
            "them out; to drop them by hand, delete those lines)."
        )
        if merge.action == "unchanged":
            merge.action = "updated"


def _status_line(target: Target, merge: Merge, uninstall: bool, python: str) -> None:
    """The guard's status line, added with the hook where the person has none (status_line)."""
    spec = target.host.INSTALL.get("status_line")
    if not spec:
        return
    if uninstall:
        merge.obj, changed = status_line.remove(merge.obj, spec)
        if changed and merge.action == "absent":
            merge.action = "removed"
        return
    wanted = status_line.command(python, target.skill_dir)
    merge.obj, changed, notes = status_line.add(merge.obj, spec, wanted)
    merge.notes += notes
    if changed and merge.action == "unchanged":
        merge.action = "updated"


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
