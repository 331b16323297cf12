"""A status reads what the host wrote last (how-it-decides.md), on every host and session-file
format: asked after a run's last response, with no hook call after it, it counts that response.

Each case is a recorded session whose one file is cut just before its last priced response:
a hook call reads the cut session, the host writes the rest, and a status (sessions.refresh)
must then show what a fresh read of the whole session shows."""

import pytest
from recorded_sessions import CASES, pieces, synced, write
from runaway_guard.sessions import refresh


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_status_after_the_last_response_reports_it(tmp_path, case):
    host, session, _, files, cut = CASES[case]
    whole = synced(tmp_path / "whole", case)["spend"]["total"]
    units = pieces(files[cut][1])
    # the longest part of the file whose read misses a response: it ends before the last one
    cut_at = next(
        k
        for k in range(len(units) - 1, 0, -1)
        if synced(tmp_path / f"cut{k}", case, k)["spend"]["total"] < whole
    )
    root = tmp_path / f"cut{cut_at}"  # the hook's read of the cut session is in its state
    path, fixture = files[cut]
    write(root / path, fixture, units, grown_from=cut_at)  # the host writes the rest
    state = refresh(str(root / "state"), host, session)
    assert state["spend"] == synced(tmp_path / "fresh", case)["spend"]
    assert state["spend"]["total"] == whole
