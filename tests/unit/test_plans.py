"""Plans (plans.py): the plan setting, the usage windows Codex records in a rollout, the window
cap on the ladder, the dollar caps lifted on a plan, and what status shows."""

import json

import pytest
from guard_env import ROOT, fuzz
from hypothesis import given
from hypothesis import strategies as st
from runaway_guard import config, hook, ledger, plans, report
from runaway_guard.calls import Call
from runaway_guard.decisions import DENY, STOP, TELL
from runaway_guard.hosts import codex

FIXTURE = ROOT / "tests" / "fixtures" / "codex" / "plan"
ROLLOUT = next(FIXTURE.rglob("rollout-*.jsonl"))
SESSION = ROLLOUT.stem[-36:]
RESETS = 1796536640  # the 5-hour window's reset, as recorded
BEFORE_RESET = RESETS - 3600


def rollout_lines():
    return ROLLOUT.read_bytes().splitlines(keepends=True)


def synced(tmp_path, lines):
    """The state after one sync of a rollout holding lines."""
    path = tmp_path / "sessions" / ROLLOUT.name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(lines))
    with ledger.Ledger(str(tmp_path / "state"), "codex", SESSION) as book:
        codex.sync(book, Call("codex", SESSION, transcript_path=str(path)))
        return book.state


def windows_after(tmp_path, lines):
    return {key: w["used_share"] for key, w in plans.current(synced(tmp_path, lines), BEFORE_RESET)}


def test_the_windows_are_those_of_the_newest_token_count_read(tmp_path):
    lines = rollout_lines()
    counts = [i for i, line in enumerate(lines) if b'"token_count"' in line]
    assert len(counts) == 5
    assert windows_after(tmp_path / "a", lines[: counts[2] + 1]) == {
        "codex:primary": 0.6,
        "codex:secondary": 0.12,
    }
    whole = synced(tmp_path / "b", lines)["plan_windows"]
    assert whole["windows"]["codex:primary"] == {
        "used_share": 1.0,
        "window_minutes": 300,
        "resets_at": RESETS,
    }
    assert whole["seen_at"].startswith("2026-12-06T")


def test_a_window_past_its_reset_is_not_shown_nor_capped(tmp_path):
    state = synced(tmp_path, rollout_lines())
    assert [key for key, _ in plans.current(state, RESETS)] == ["codex:secondary"]


def test_a_rollout_without_windows_records_none(tmp_path):
    """An API-key session: rate_limits with null windows and no plan type."""
    usage = ROOT / "tests" / "fixtures" / "codex" / "usage"
    rollout = next(usage.rglob("rollout-*.jsonl"))
    assert b'"rate_limits"' in rollout.read_bytes()
    state = synced(tmp_path, rollout.read_bytes().splitlines(keepends=True))
    assert "plan_windows" not in state


class Settings:
    def __init__(self, share, warn_at=0.8):
        self.max_window_share, self.warn_at, self.plan = share, warn_at, frozenset()


def state_at(primary):
    return {"plan_windows": {"windows": {"codex:primary": {"used_share": primary}}}}


@pytest.mark.parametrize(
    ("used", "tool", "kind"),
    [(0.5, "Bash", None), (0.57, "Bash", TELL), (0.57, "Agent", DENY), (0.7, "Bash", STOP)],
)
def test_the_window_cap_is_a_rung_of_the_ladder(used, tool, kind):
    decision = plans.window_wire(state_at(used), Settings(0.7), tool, {}, BEFORE_RESET)
    assert (decision and decision["kind"]) == kind
    if decision:
        assert decision["wire"] == "window" and "plan's" in decision["model_text"]


def test_told_once_per_cap():
    warned = {}
    assert plans.window_wire(state_at(0.6), Settings(0.7), "Bash", warned, 0)["kind"] == TELL
    assert plans.window_wire(state_at(0.65), Settings(0.7), "Bash", warned, 0) is None


def test_no_cap_no_wire():
    assert plans.window_wire(state_at(1.0), Settings(0.0), "Bash", {}, 0) is None


@pytest.mark.parametrize(
    ("raw", "hosts", "problem"),
    [
        ("codex", {"codex"}, False),
        ("codex, Claude", {"codex", "claude"}, False),
        ("all", None, False),  # every host
        ("none", set(), False),
        ("chatgpt", set(), True),
        (",", set(), True),
    ],
)
def test_the_plan_setting(tmp_path, raw, hosts, problem):
    from runaway_guard.hosts import NAMES

    settings = config.load(str(tmp_path), {"HOME": str(tmp_path), "RUNAWAY_GUARD_PLAN": raw})
    assert settings.plan == (set(NAMES) if hosts is None else hosts)
    assert any("RUNAWAY_GUARD_PLAN" in p for p in settings.problems) == problem


def test_a_project_file_cannot_put_its_user_on_a_plan(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".runaway-guard.json").write_text(json.dumps({"plan": "all"}))
    settings = config.load(str(tmp_path), {"HOME": str(tmp_path)})
    assert settings.plan == frozenset()
    assert any("plan can only be set by the user" in p for p in settings.problems)


def test_max_window_share_is_a_share_a_project_may_only_lower(tmp_path):
    env = {"HOME": str(tmp_path), "RUNAWAY_GUARD_MAX_WINDOW_SHARE": "0.9"}
    (tmp_path / ".git").mkdir()
    (tmp_path / ".runaway-guard.json").write_text(json.dumps({"max_window_share": 0.5}))
    assert config.load(str(tmp_path), env).max_window_share == 0.5
    bad = config.load(None, {**env, "RUNAWAY_GUARD_MAX_WINDOW_SHARE": "90"})
    assert bad.max_window_share == 0 and any("MAX_WINDOW_SHARE" in p for p in bad.problems)


KEYS = ["primary", "secondary", "used_percent", "window_minutes", "resets_at", "plan_type"]
values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from([*KEYS, "limit_id"]), inner, max_size=5)
    ),
    max_leaves=12,
)


@fuzz(200)
@given(limits=values)
def test_any_rate_limits_value_keeps_a_state_status_can_show(limits):
    """Hostile rate_limits: recorded or passed over, never an error, and what is kept is what
    status and the wire read."""
    line = json.dumps({"timestamp": "t", "payload": {"type": "token_count", "rate_limits": limits}})
    state = {"host": "codex"}
    plans.record_codex(state, line.encode())
    shown = plans.status(state, Settings(0.5), 0)["plan_windows"]
    for window in (shown or {}).get("windows", []):
        assert 0 <= window["used_share"] <= 1
    plans.window_wire(state, Settings(0.5), "Bash", {}, 0)


def test_on_a_plan_the_dollar_caps_do_not_apply_and_status_says_what_it_is_worth(tmp_path):
    """Past a $0.01 cap: stopped without a plan; on one, the call goes on (no window cap), and
    status shows the API-equivalent value beside the money paid (none) and the windows."""
    lines = rollout_lines()
    path = tmp_path / "sessions" / ROLLOUT.name
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(lines))
    call = {
        "session_id": SESSION,
        "transcript_path": str(path),
        "cwd": str(tmp_path),
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "echo next"},
        "tool_use_id": "call_next",
        "turn_id": "t",
        "model": "gpt-5.5",
    }
    env = {"HOME": str(tmp_path), "RUNAWAY_GUARD_MAX_USD": "0.01"}
    on_plan = {
        **env,
        "RUNAWAY_GUARD_STATE_DIR": str(tmp_path / "plan"),
        "RUNAWAY_GUARD_PLAN": "codex",
    }
    paying = {**env, "RUNAWAY_GUARD_STATE_DIR": str(tmp_path / "paying")}
    assert "spend cap is reached" in hook.run(json.dumps(call).encode(), paying)
    assert hook.run(json.dumps(call).encode(), on_plan) == ""
    with ledger.Ledger(str(tmp_path / "plan"), "codex", SESSION) as book:
        status = report.build(
            "s", book.state, str(tmp_path / "plan"), environ=on_plan, now=BEFORE_RESET
        )
    assert status["plan"] is True and status["paid_usd"] == 0 and status["spend_usd"] > 0.01
    assert status["refusing"] == []
    windows = status["plan_windows"]["windows"]
    assert [(w["window"], w["used_share"]) for w in windows] == [
        ("primary", 1.0),
        ("secondary", 0.12),
    ]


def test_status_says_the_window_cap_refuses(tmp_path):
    state = synced(tmp_path, rollout_lines())
    env = {"HOME": str(tmp_path), "RUNAWAY_GUARD_MAX_WINDOW_SHARE": "0.9"}
    status = report.build("s", state, str(tmp_path / "state"), environ=env, now=BEFORE_RESET)
    assert [entry["wire"] for entry in status["refusing"]] == ["window"]
    assert "100% of the plan's 5-hour window is used" in status["refusing"][0]["why"]
    after = report.build("s", state, str(tmp_path / "state"), environ=env, now=RESETS)
    assert after["refusing"] == []  # the 5-hour window reset; the weekly one is at 12 %
