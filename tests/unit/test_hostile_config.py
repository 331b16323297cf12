"""Configuration as hostile input: the user's file, a project's file, the environment and
status.py's --raise-cap, each fed every class of bad value (references/threat-model.md).

A bad value is an "ignored" problem line naming where it was and the rest applies; a user file
that cannot be used, or one of its values, gives way to the last valid values that file held,
never to a looser default; a project file still only tightens; and nothing of it makes the
guard fail open or lets a refused session's next call pass.
"""

import json
import os
import subprocess
import sys
import threading

import pytest
from claude_records import assistant, pre_tool_use, result, usage
from guard_env import GuardEnv, fuzz, jsonl
from hypothesis import given
from hypothesis import strategies as st
from runaway_guard import config, config_file, config_values, control_actions, ledger
from runaway_guard.money import MAX_USD

USER_CAP = 1.0
SPENT_USD = 6.0  # 400,000 output tokens of Sonnet 4.6: past the user's $1
DEEP = "[" * 20_000 + "]" * 20_000  # past any parser's recursion, inside the size limit
LIMIT = config_file.MAX_FILE_BYTES
NUMBER_KEYS = tuple(config.DEFAULTS)
# Each class of bad value for a number setting: as JSON text in a file, as an environment value.
BAD_VALUES = {
    "huge": ("1e300", "1e300"),
    "just past the range": ("1000000001", "1000000001"),
    "infinite": ("Infinity", "inf"),
    "NaN": ("NaN", "nan"),
    "negative": ("-1", "-1"),
    "5000-digit integer": ("9" * 5000, "9" * 5000),
    "a bool": ("true", "true"),
    "a string that is no number": ('"lots"', "lots"),
    "a list": ("[1]", "[1]"),
    "an object": ('{"usd": 1}', '{"usd": 1}'),
    "null": ("null", "null"),
}


@pytest.fixture
def places(tmp_path):
    """(environment, the user's file, a project) in a private HOME."""
    home = tmp_path / "home"
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    environ = {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "RUNAWAY_GUARD_STATE_DIR": str(tmp_path / "state"),
    }
    return environ, home / ".config" / "runaway-guard" / "config.json", project


def write(path, content):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


def members(**values):
    """A JSON object's text from members given as JSON texts (so any literal can be one)."""
    return "{" + ", ".join(f'"{key}": {text}' for key, text in values.items()) + "}"


def problems_of(settings):
    return "\n".join(settings.problems)


# -- one bad value: named, ignored, the rest applies


@pytest.mark.parametrize("bad", BAD_VALUES)
def test_a_bad_number_in_the_user_file_is_named_and_the_rest_applies(places, bad):
    environ, user, project = places
    for key in NUMBER_KEYS:
        others = {"max_failures": "3"} if key != "max_failures" else {"max_repeats": "3"}
        write(user, members(**{key: BAD_VALUES[bad][0]}, **others))
        fresh = {**environ, "RUNAWAY_GUARD_STATE_DIR": environ["RUNAWAY_GUARD_STATE_DIR"] + key}
        settings = config.load(str(project), fresh)
        assert f"{user}: {key}=" in problems_of(settings)
        assert "is not valid (give " in problems_of(settings)
        assert getattr(settings, key) == config.DEFAULTS[key]  # no valid value kept yet
        assert settings.max_failures == 3 or settings.max_repeats == 3


@pytest.mark.parametrize("bad", BAD_VALUES)
def test_a_bad_number_in_the_project_file_is_named_and_the_rest_applies(places, bad):
    environ, user, project = places
    write(user, members(max_usd="10", daily_usd="20"))
    for key in ("max_usd", "daily_usd", "warn_at", "max_failures", "person_daily_usd"):
        tighter = {"max_repeats": "2"}
        write(project / ".runaway-guard.json", members(**{key: BAD_VALUES[bad][0]}, **tighter))
        settings = config.load(str(project), environ)
        assert f"{project / '.runaway-guard.json'}: {key}=" in problems_of(settings)
        assert (settings.max_usd, settings.daily_usd, settings.max_repeats) == (10, 20, 2)


@pytest.mark.parametrize("bad", BAD_VALUES)
def test_a_bad_number_in_the_environment_is_named_and_ignored(places, bad):
    environ, user, project = places
    write(user, members(max_usd="10"))
    for key in NUMBER_KEYS:
        name = config.PREFIX + key.upper()
        settings = config.load(str(project), {**environ, name: BAD_VALUES[bad][1]})
        assert f"{name}=" in problems_of(settings) and "is not valid" in problems_of(settings)
        assert getattr(settings, key) == (10 if key == "max_usd" else config.DEFAULTS[key])


def test_each_number_has_its_range_and_its_bounds_are_in_it(places):
    environ, user, project = places
    inside = {
        "max_usd": (0, MAX_USD),
        "warn_at": (1e-9, 1),
        "max_failures": (1, config_values.MAX_COUNT),
        "team_refresh_s": (1, 3600),
    }
    outside = {
        "max_usd": (-1e-9, MAX_USD + 1, 1e10),
        "warn_at": (0, 1.0000001),
        "max_failures": (0, config_values.MAX_COUNT + 1, 2.5),
        "team_refresh_s": (0.5, 3601),
    }
    for key, values in inside.items():
        for value in values:
            write(user, json.dumps({key: value}))
            settings = config.load(str(project), environ)
            assert getattr(settings, key) == value and settings.problems == []
    for key, values in outside.items():
        for value in values:
            write(user, json.dumps({key: value}))
            assert f"{key}={value!r} is not valid" in problems_of(config.load(None, environ))
    write(user, '{"max_usd": -0.0}')
    assert str(config.load(None, environ).max_usd) == "0.0"  # no cap, shown without a sign
    write(user, '{"max_usd": "40"}')  # a string holding a number, as the environment gives it
    assert config.load(None, environ).max_usd == 40


def test_a_long_value_is_shown_short(places):
    environ, user, _ = places
    write(user, members(max_usd='"' + "x" * 5000 + '"', daily_usd="9" * 5000))
    settings = config.load(None, {**environ, "RUNAWAY_GUARD_WARN_AT": "7" * 5000})
    assert max(len(problem) for problem in settings.problems) < 300
    assert "daily_usd=an integer of 5000 digits is not valid" in problems_of(settings)


# -- a file that cannot be used as a whole


FILE_CLASSES = {
    "deep nesting": (DEEP, "not valid JSON (JSON nested too deep to read)"),
    "deep nesting in a value": (members(max_usd="2", daily_usd=DEEP), "nested too deep"),
    "oversized": (members(max_usd="2") + " " * LIMIT, "larger than 64 KiB, read no further"),
    "invalid UTF-8": (b'{"max_usd": 2, "team": "caf\xe9"}', "not valid UTF-8 (byte 27)"),
    "a list at the top": ("[1, 2]", "must hold a JSON object, not list"),
    "a string at the top": ('"max_usd"', "must hold a JSON object, not str"),
    "not JSON": ('{"max_usd": 2,', "not valid JSON ("),
    "a 5000-digit integer inside a value": (members(max_usd="[" + "9" * 5000 + "]"), "digits"),
}


@pytest.mark.parametrize("case", FILE_CLASSES)
def test_an_unusable_user_file_keeps_its_last_valid_values(places, case):
    environ, user, project = places
    content, why = FILE_CLASSES[case]
    write(user, content)
    settings = config.load(str(project), environ)  # no valid values seen yet: the defaults
    assert settings.max_usd == 25 and why in problems_of(settings)

    write(user, members(max_usd="1", max_failures="3"))
    assert config.load(str(project), environ).max_usd == 1
    write(user, content)
    settings = config.load(str(project), environ)
    assert (settings.max_usd, settings.max_failures) == (1, 3)
    assert settings.sources["max_usd"] == "user"
    text = problems_of(settings)
    assert f"{user}: " in text and why in text
    assert "the last valid values it gave hold: max_usd=1, max_failures=3" in text


@pytest.mark.parametrize("case", FILE_CLASSES)
def test_an_unusable_project_file_is_ignored_and_the_users_limits_hold(places, case):
    environ, user, project = places
    content, why = FILE_CLASSES[case]
    write(user, members(max_usd="1", daily_usd="5"))
    write(project / ".runaway-guard.json", content)
    settings = config.load(str(project / "src"), environ)
    assert (settings.max_usd, settings.daily_usd) == (1, 5)
    assert f"{project / '.runaway-guard.json'}: " in problems_of(settings)
    assert why in problems_of(settings)


def test_a_bad_user_value_keeps_the_last_valid_one_of_that_key(places):
    environ, user, project = places
    write(user, members(max_usd="1", daily_usd="4"))
    config.load(str(project), environ)
    write(user, members(max_usd="NaN", daily_usd="9"))
    settings = config.load(str(project), environ)
    assert (settings.max_usd, settings.daily_usd) == (1, 9)  # the valid change applies
    assert "max_usd=nan is not valid" in problems_of(settings)
    assert "the last valid values it gave hold: max_usd=1" in problems_of(settings)
    # Fixed, the file's values apply again; a key taken out is the default again.
    write(user, members(max_usd="40"))
    settings = config.load(str(project), environ)
    assert (settings.max_usd, settings.daily_usd, settings.problems) == (40, 0, [])
    write(user, "[]")
    assert config.load(str(project), environ).max_usd == 40


def test_the_last_valid_values_are_kept_once_per_change_of_the_file(places):
    environ, user, project = places
    kept = os.path.join(environ["RUNAWAY_GUARD_STATE_DIR"], config_file.REMEMBERED)
    write(user, members(max_usd="1"))
    config.load(str(project), environ)
    first = os.stat(kept)
    with open(kept) as handle:
        assert json.loads(handle.read()) == {"max_usd": 1.0}
    assert first.st_mtime_ns == os.stat(user).st_mtime_ns and first.st_mode & 0o777 == 0o600
    config.load(str(project), environ)
    assert os.stat(kept).st_ino == first.st_ino  # an unchanged file: nothing written
    # What is kept is checked again when it is used.
    write(user, "{")
    with open(kept, "w") as handle:
        handle.write('{"max_usd": 1e300, "daily_usd": 3}')
    assert (config.load(None, environ).max_usd, config.load(None, environ).daily_usd) == (25, 3)


def test_a_user_file_that_is_no_regular_file_is_not_waited_for(places):
    environ, user, project = places
    user.parent.mkdir(parents=True)
    os.mkfifo(user)
    found = []
    reader = threading.Thread(target=lambda: found.append(config.load(str(project), environ)))
    reader.start()
    reader.join(10)
    if reader.is_alive():  # release the reader before failing
        open(user, "w").close()
        pytest.fail("config.load waited for a writer on a FIFO")
    assert f"{user}: cannot be read (not a regular file); ignored" in problems_of(found[0])


@pytest.mark.parametrize("where", ["user", "project"])
def test_a_key_given_twice_takes_the_value_that_guards_more(places, where):
    environ, user, project = places
    path = user if where == "user" else project / ".runaway-guard.json"
    if where == "project":
        write(user, members(max_usd="30"))
    for pairs, expected in (
        ('"max_usd": 2, "max_usd": 20', 2),
        ('"max_usd": 20, "max_usd": 2', 2),
        ('"max_usd": 2, "max_usd": 0', 2),  # 0 is no cap: the looser
        ('"max_usd": 2, "max_usd": NaN', 2),
        ('"max_usd": 2, "max_\\u0075sd": 2000', 2),  # an escape spells the same key
    ):
        write(path, "{" + pairs + "}")
        settings = config.load(str(project), environ)
        assert settings.max_usd == expected, pairs
        assert "'max_usd' is given more than once; the value that guards more" in (
            problems_of(settings)
        )
    write(path, '{"interrupt": true, "interrupt": false, "team_fail_closed": true}')
    assert config.load(str(project), environ).interrupt is True
    if where == "user":
        write(path, '{"off": true, "off": false}')
        assert config.load(str(project), environ).off is False
        write(path, '{"off": false, "off": true}')
        assert config.load(str(project), environ).off is False


def test_the_user_files_other_settings_are_checked_too(places, tmp_path):
    environ = {k: v for k, v in places[0].items() if k != "RUNAWAY_GUARD_STATE_DIR"}
    user, project = places[1], places[2]
    for bad in ('"\\u0000x"', '""', '"' + "a" * 5000 + '"', "[]", "1e300"):
        write(user, members(state_dir=bad, off='"true"'))
        settings = config.load(str(project), environ)
        assert settings.state_dir == config.default_state_dir(environ)
        assert settings.off is False
        assert "state_dir=" in problems_of(settings) and "off='true' is not true or false" in (
            problems_of(settings)
        )


# -- through the guard: the call it refused stays refused, nothing fails open


def refused_session(root):
    """A GuardEnv whose user caps a session at $1, and a Claude Code session $6 in: its calls
    are refused. (env, transcript, project)"""
    env = GuardEnv(root)
    project = root / "proj"
    (project / ".git").mkdir(parents=True, exist_ok=True)
    transcript = jsonl(
        root / "t" / "s1.jsonl", [assistant("m1", use=usage(out=400_000)), result("toolu_0")]
    )
    env.config(max_usd=USER_CAP)
    return env, transcript, project


def decision(env, transcript, project, tool_use_id, session="s1", **extra_env):
    """The permission decision of one call (None when it passes), and hook.log's lines. The
    call runs in-process: where guard.py would fail open, this raises."""
    payload = pre_tool_use(transcript, tool_use_id, cwd=str(project), session=session)
    answer = env.answer(payload, **extra_env)
    log = env.state_dir / "hook.log"
    lines = log.read_text().splitlines() if log.exists() else []
    return (answer or {}).get("hookSpecificOutput", {}).get("permissionDecision"), lines


def test_a_project_files_huge_daily_cap_no_longer_lets_every_call_through(tmp_path):
    env, transcript, project = refused_session(tmp_path)
    assert decision(env, transcript, project, "toolu_1")[0] == "deny"
    write(project / ".runaway-guard.json", '{"daily_usd": 1e300}')
    kind, lines = decision(env, transcript, project, "toolu_2")
    assert kind == "deny"
    assert not [line for line in lines if " fail-open " in line]
    assert any(" config " in line and "daily_usd=1e+300 is not valid" in line for line in lines)


def test_a_state_holding_an_earlier_versions_huge_or_broken_cap(tmp_path):
    env, transcript, project = refused_session(tmp_path)
    decision(env, transcript, project, "toolu_1")
    for n, (cap, expected) in enumerate(
        ((1e300, None), (float("inf"), None), ("40", "deny"), (-5.0, "deny"))
    ):
        with ledger.Ledger(str(env.state_dir), "claude", "s1") as book:
            book.state["cap_usd"] = cap
            book.state["blocked"] = None
        kind, lines = decision(env, transcript, project, f"toolu_cap{n}")
        assert kind == expected, cap  # above the range: no practical cap; not a cap: the user's
        assert not [line for line in lines if " fail-open " in line]


def test_raise_cap_takes_at_most_the_range(tmp_path):
    from test_status import STATUS

    env, transcript, project = refused_session(tmp_path)
    decision(env, transcript, project, "toolu_1")
    state = {"host": "claude", "session_id": "s1"}
    for value in (1e300, float("inf"), float("nan"), MAX_USD + 1):
        code, message = control_actions.apply(str(env.state_dir), state, "raise-cap", value)
        assert code == 2 and "a cap can be at most $1,000,000,000.00" in message
    with ledger.Ledger(str(env.state_dir), "claude", "s1") as book:
        assert book.state["cap_usd"] is None
    for text in ("1e300", "inf", "1000000001", "9" * 5000):
        done = subprocess.run(
            [sys.executable, str(STATUS), "--session", "s1", "--raise-cap", text],
            capture_output=True,
            text=True,
            env=env.env,
            timeout=60,
            check=False,
        )
        assert done.returncode == 2, done.stdout
        assert "above 0 and at most 1,000,000,000" in done.stderr and len(done.stderr) < 300
    assert decision(env, transcript, project, "toolu_2")[0] == "deny"
    code, _ = control_actions.apply(str(env.state_dir), state, "raise-cap", float(MAX_USD))
    assert code == 0 and decision(env, transcript, project, "toolu_3")[0] is None


# -- the property: no single hostile change lets a refused call through or crashes the guard


def letters():
    """Text that is no number at all (float() takes 'nan' and 'inf', out of range anyway)."""
    return st.text(alphabet="abcdefinty xyz!-_", min_size=0, max_size=12)


HUGE = st.one_of(
    st.floats(min_value=MAX_USD + 1, allow_infinity=False),
    st.integers(min_value=MAX_USD + 1, max_value=10**300),
)
NEGATIVE = st.one_of(st.floats(max_value=-1e-300, allow_infinity=False), st.integers(max_value=-1))
WRONG_TYPE = st.one_of(
    st.booleans(),
    st.none(),
    letters(),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(letters(), st.integers(), max_size=2),
)


@st.composite
def bad_value(draw, for_env):
    """(class, JSON text or environment value) of one bad value for a number setting."""
    kind = draw(
        st.sampled_from(
            ["huge", "infinite", "NaN", "negative", "digits", "deep", "oversized", "wrong type"]
        )
    )
    if kind == "huge":
        number = draw(HUGE)
    elif kind == "infinite":
        number = draw(st.sampled_from([float("inf"), float("-inf")]))
    elif kind == "NaN":
        number = float("nan")
    elif kind == "negative":
        number = draw(NEGATIVE)
    elif kind == "digits":
        text = draw(st.sampled_from(["", "-"])) + "9" * draw(st.integers(4301, 6000))
        return kind, text
    elif kind == "deep":
        depth = draw(st.integers(1000, 10_000))
        return kind, draw(st.sampled_from(["[", '{"a":'])) * depth
    elif kind == "oversized":
        return kind, '"' + "x" * (LIMIT + draw(st.integers(1, 1000))) + '"'
    else:
        value = draw(WRONG_TYPE)
        return kind, value if for_env and isinstance(value, str) else json.dumps(value)
    if for_env:
        return kind, str(number)
    return kind, json.dumps(number) if isinstance(number, int) else repr(number).replace(
        "inf", "Infinity"
    ).replace("nan", "NaN")


FILE_KEYS = (*NUMBER_KEYS, "off", "interrupt", "team_fail_closed", "state_dir", "mystery")
ENV_NAMES = (*(config.PREFIX + key.upper() for key in NUMBER_KEYS), "RUNAWAY_GUARD_OFF")


@st.composite
def hostile_change(draw):
    """(place, class, what to do): one hostile change to the user's file (its valid $1 cap
    stays in the baseline unless the change is to max_usd itself), the project's file, or one
    environment variable. No change is one of the person's own off switches or a larger cap
    they chose: a bad value for `off` is never `true`, a bad cap never a valid number."""
    place = draw(st.sampled_from(["user", "project", "env"]))
    if place == "env":
        name = draw(st.sampled_from(ENV_NAMES))
        kind, value = draw(bad_value(for_env=True))
        if kind in ("deep", "oversized"):
            value = value.strip('"')
        if draw(st.booleans()):  # invalid UTF-8 as the environment decodes it
            kind, value = "invalid UTF-8", value[:20] + draw(st.sampled_from(["\udcff", "\udcc3"]))
        return place, kind, {name: value}
    baseline = {"max_usd": "1"} if place == "user" else {}
    kind = draw(st.sampled_from(["value", "duplicate", "invalid UTF-8", "top level", "padded"]))
    if kind == "top level":
        text = draw(st.sampled_from(["[]", '"x"', "1", "null", "[" * 30_000, '{"a":' * 10_000]))
        return place, kind, text.encode()
    if kind == "duplicate":
        key = draw(st.sampled_from(["max_usd", "daily_usd", "max_failures", "off"]))
        looser = {"max_usd": "1000", "daily_usd": "0", "max_failures": "90", "off": "true"}[key]
        tight = {"max_usd": "1", "daily_usd": "0.5", "max_failures": "2", "off": "false"}[key]
        pairs = [(key, tight), (key, looser)]
        if draw(st.booleans()):
            pairs.reverse()
        if place == "project" and key == "off":
            pairs = [("max_usd", "0.5"), ("max_usd", "5000")]
        items = [(k, v) for k, v in baseline.items() if k != key] + pairs
        return place, kind, ("{" + ", ".join(f'"{k}": {v}' for k, v in items) + "}").encode()
    key = draw(st.sampled_from(FILE_KEYS))
    value_kind, value = draw(bad_value(for_env=False))
    if key == "off" and value == "true":
        value = "false"
    values = {**baseline, key: value}
    text = members(**values).encode()
    if kind == "invalid UTF-8":
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80"])) + text[at:]
    elif kind == "padded":  # past the size limit with nothing but whitespace
        text += b" " * (LIMIT + 1 - len(text) + draw(st.integers(0, 100)))
    else:
        kind = value_kind
    return place, kind, text


def test_no_hostile_change_lets_a_refused_call_through_or_crashes_the_guard(tmp_path):
    env, transcript, project = refused_session(tmp_path)
    # A second session in the same place that the guard allows: $0.01 of the $1 cap.
    allowed = jsonl(tmp_path / "t" / "s2.jsonl", [assistant("n1"), result("toolu_0")])
    user = env.home / ".config" / "runaway-guard" / "config.json"
    baseline = user.read_bytes()
    project_file = project / ".runaway-guard.json"
    assert decision(env, transcript, project, "toolu_first")[0] == "deny"
    assert decision(env, allowed, project, "toolu_first2", session="s2")[0] is None
    seen = {"cases": 0, "kinds": set()}

    @fuzz(300)
    @given(change=hostile_change())
    def case(change):
        place, kind, what = change
        seen["cases"] += 1
        seen["kinds"].add(kind)
        n = seen["cases"]
        extra = what if place == "env" else {}
        if place == "user":
            user.write_bytes(what)
        elif place == "project":
            project_file.write_bytes(what)
        try:
            refused, _ = decision(env, transcript, project, f"toolu_r{n}", **extra)
            assert refused == "deny", (place, kind, str(what)[:200])
            _, lines = decision(env, allowed, project, f"toolu_a{n}", session="s2", **extra)
            assert not [line for line in lines if " fail-open " in line]
        finally:
            user.write_bytes(baseline)
            if project_file.exists():
                project_file.unlink()

    case()
    assert seen["cases"] >= 300
    assert seen["kinds"] >= {
        *("huge", "infinite", "NaN", "negative", "digits", "deep", "oversized", "wrong type"),
        *("duplicate", "invalid UTF-8", "top level", "padded"),
    }


def test_a_file_of_thousands_of_keys_makes_a_few_problem_lines(places):
    environ, _, project = places
    many = ", ".join(f'"k{n}": 1, "k{n}": 2' for n in range(2000))
    write(project / ".runaway-guard.json", "{" + many + "}")
    settings = config.load(str(project), environ)
    assert len(settings.problems) == 2 * (config_file._NAMED_KEYS + 1)
    assert settings.problems[-1].endswith(": 1995 more unknown keys ignored")
