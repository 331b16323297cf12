"""The team's fields and refusals for status.py (report.py): the figures as a hook call
sees them, and whether a refresh is due (status.py starts one, as a hook call would)."""

import time

from ..money import PICO, money
from . import (
    _closed,
    _detail,
    _shown_url,
    _start,
    _unchecked,
    _unusable,
    due,
    figures,
    periods,
    raise_text,
    read_cache,
)


def report(settings, state, now=None):
    """(fields for status.py --json, what the team's caps refuse) for one session."""
    from .. import log

    now = time.time() if now is None else now
    capped = settings.team_monthly_usd > 0 or settings.person_daily_usd > 0
    cache = None if settings.team_error else read_cache(settings.state_dir)
    seen = figures(settings, state, cache=cache, now=now)
    if settings.team_error:
        why = shown_error = _unusable(settings)
    else:
        starts = settings.environ is not None and due(settings, cache, now)
        not_started = _start(settings) if starts else None
        why = not_started or _unchecked(settings, seen, now)
        shown_error = not_started or (seen["error"] and log.redact(seen["error"]))
    known = seen["known"]
    fields = {
        "team_spend_usd": seen["team"] / PICO if known["team"] else None,
        "team_cap_usd": settings.team_monthly_usd or None,
        "person_spend_usd": seen["person"] / PICO if known["person"] else None,
        "person_cap_usd": settings.person_daily_usd or None,
        "team_refreshed_at": seen["refreshed_at"],
        "team_stale_since": seen["stale_since"],
        "team": {
            "name": settings.team,
            "user": settings.user,
            "month": periods(now)[0],
            "day": periods(now)[1],
            "machine": (cache or {}).get("machine"),
            "error": shown_error,
            "warning": seen["warning"] and log.redact(seen["warning"]),
            "fail_closed": settings.team_fail_closed,
            "refresh_s": settings.team_refresh_s,
            "pushgateway_url": _shown_url(settings.pushgateway_url),
            "prometheus_url": _shown_url(settings.prometheus_url),
            "team_cap_source": settings.sources["team_monthly_usd"],
            "person_cap_source": settings.sources["person_daily_usd"],
            "raise_team_cap": raise_text(settings, "team_monthly_usd"),
            "raise_person_cap": raise_text(settings, "person_daily_usd"),
        },
    }
    refusing = []
    for scope, cap, name in (
        ("team", settings.team_monthly_usd, f"the team {settings.team}'s spend this month"),
        ("person", settings.person_daily_usd, f"{settings.user}'s spend today"),
    ):
        if cap > 0 and seen[scope] >= round(cap * PICO):
            whose = "the team's" if scope == "team" else f"{settings.user}'s"
            detail = _detail(seen, scope, whose=f"{whose} machines", now=now)
            refusing.append(
                {
                    "wire": scope,
                    "agent": None,
                    "why": f"{name} {money(seen[scope] / PICO)} reached its cap of "
                    f"{money(cap)}{detail}",
                }
            )
    if settings.team_fail_closed and capped and why:
        refusing.append(
            {"wire": "team", "agent": None, "why": _closed(settings, why)["person_text"]}
        )
    return fields, refusing
