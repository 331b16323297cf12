"""What the servers see: the metric names, this machine's group path, its body in Prometheus'
text format and the one query of the four sums."""

from .. import config
from ..money import PICO

JOB = "runaway_guard"
MONTH_METRIC = "runaway_guard_month_spend_usd"
DAY_METRIC = "runaway_guard_day_spend_usd"
# This machine's month per project label (`team_project`), beside the two above: a metric of
# its own, so every query of the month and day totals stays as it was.
PROJECT_METRIC = "runaway_guard_project_month_spend_usd"


def usd_text(picodollars):
    """Picodollars as an exact decimal, for the text format."""
    sign = "-" if picodollars < 0 else ""
    picodollars = abs(picodollars)
    return f"{sign}{picodollars // PICO}.{picodollars % PICO:012d}"


def exposition(month, day, month_picodollars, day_picodollars, projects=None):
    """The group's body in Prometheus' text format (the grouping labels come from the path);
    projects: {label: picodollars} of the month, for the projects a team labelled."""
    labelled = "".join(
        f'{PROJECT_METRIC}{{month="{month}",project="{label}"}} {usd_text(picodollars)}\n'
        for label, picodollars in sorted((projects or {}).items())
    )
    if labelled:
        labelled = (
            f"# HELP {PROJECT_METRIC} This machine's runaway-guard total for the month in one "
            "project.\n"
            f"# TYPE {PROJECT_METRIC} gauge\n{labelled}"
        )
    return labelled + (
        f"# HELP {MONTH_METRIC} This machine's runaway-guard ledger total for the month.\n"
        f"# TYPE {MONTH_METRIC} gauge\n"
        f'{MONTH_METRIC}{{month="{month}"}} {usd_text(month_picodollars)}\n'
        f"# HELP {DAY_METRIC} This machine's runaway-guard ledger total for the day.\n"
        f"# TYPE {DAY_METRIC} gauge\n"
        f'{DAY_METRIC}{{day="{day}"}} {usd_text(day_picodollars)}\n'
    )


def group_path(team, user, machine):
    return f"/metrics/job/{JOB}/team/{team}/user/{user}/machine/{machine}"


PARTS = ("team_others", "team_mine", "person_others", "person_mine")


def query_text(team, user, machine, month, day):
    """One PromQL query for four sums: the team's month and the person's day, for the other
    machines and for this one as Prometheus sees it."""
    parts = []
    for metric, match, period in (
        (MONTH_METRIC, f'team="{team}",month="{month}"', "team"),
        (DAY_METRIC, f'team="{team}",user="{user}",day="{day}"', "person"),
    ):
        for side, op in (("others", "!="), ("mine", "=")):
            total = f'sum({metric}{{{match},machine{op}"{machine}"}})'
            parts.append(f'label_replace({total},"part","{period}_{side}","","")')
    return " or ".join(parts)


def _is_group(path):
    """Whether path is one of this module's group paths (the cache's are read back: a path of
    another shape would send the credentials elsewhere, `@host` appended to the URL)."""
    parts = path.split("/") if isinstance(path, str) else []
    names = ["", "metrics", "job", JOB, "team", None, "user", None, "machine", None]
    return len(parts) == len(names) and all(
        config.is_label(part) if name is None else part == name for part, name in zip(parts, names)
    )
