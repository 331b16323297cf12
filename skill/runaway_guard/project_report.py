"""Project spend as the status command shows it: one session's project (`project` of
status --json) and every project's month by branch (status --month). Apart from projects.py,
which every hook call loads: only the status command reads them."""

import time

from . import state_file
from .money import usd
from .projects import (
    CAP_KEYS,
    PERIODS,
    branch,
    day_total,
    file_name,
    locate,
    month_days,
    period_totals,
)


def status(state, settings, state_dir, now=None):
    """status.py's `project` object for a session's state; None outside any project."""
    record = state.get("project")
    cwd = state.get("cwd")
    if not isinstance(record, dict) or not isinstance(record.get("path"), str):
        if not isinstance(cwd, str) or not cwd:
            return None
        path, head = locate(cwd)
        record = {"path": path, "head": head, "file": file_name(path)}
    head = record.get("head")
    local = time.localtime(time.time() if now is None else now)
    totals = period_totals(
        state_dir, {**record, "days": {}, "dirty": []}, key="", local=local, write=False
    )
    caps = {period: getattr(settings, CAP_KEYS[period]) or None for period in PERIODS}
    return {
        "path": record["path"],
        "branch": branch(head if isinstance(head, str) else None) or None,
        "day_usd": usd(totals["day"]),
        "week_usd": usd(totals["week"]),
        "month_usd": usd(totals["month"]),
        "daily_cap_usd": caps["day"],
        "weekly_cap_usd": caps["week"],
        "monthly_cap_usd": caps["month"],
    }


def month_rows(state_dir, month):
    """Every project's spend in a month (YYYY-MM), by branch: status.py --month."""
    import os

    folder = os.path.join(state_dir, "projects")
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        names = []
    projects = []
    for name in names:
        data = state_file.read_json(os.path.join(folder, name, f"{month}.json"))
        days = month_days(data)
        if not days:
            continue
        branches = {}
        for shares in days.values():
            for branch_name, sessions in shares.items():
                branches[branch_name] = branches.get(branch_name, 0) + day_total(
                    {branch_name: sessions}
                )
        path = data.get("path") if isinstance(data.get("path"), str) else name
        projects.append(
            {
                "path": path,
                "month_usd": usd(sum(branches.values())),
                "branches": {
                    branch_name: usd(picodollars)
                    for branch_name, picodollars in sorted(
                        branches.items(), key=lambda item: -item[1]
                    )
                },
            }
        )
    projects.sort(key=lambda row: -row["month_usd"])
    return {
        "month": month,
        "spend_usd": sum(row["month_usd"] for row in projects),
        "projects": projects,
    }
