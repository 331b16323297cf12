"""No credential in what the guard writes or shows: hook.log, the problem lists (the config's
and the state's), status.py's JSON and text, the team's errors, whatever the URL's shape.

The team's server side of it (redirects, the cache's files) is in test_team.py.
"""

import json
import string

import pytest
from claude_records import pre_tool_use
from guard_env import fuzz, jsonl
from hypothesis import given
from hypothesis import strategies as st
from runaway_guard import config, hook, log, render, report, state_file, team
from runaway_guard.team import refresher
from test_team import FakeServers, environ_for

SECRET = "Zq7sekrit"


@pytest.fixture(autouse=True)
def no_refresh_process(monkeypatch):
    """A refresh the hook or the status would start runs nowhere: what it shows is checked."""
    monkeypatch.setattr(team, "_spawn", lambda *args: None)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://ci:pw@host:9091/x", "http://ci:***@host:9091/x"),
        ("http://ci:p/w#x?y@host", "http://ci:***@host"),
        ("https://ci:p@w:x@host", "https://ci:***@host"),
        ("http://ci:pa ss@host", "http://ci:***@host"),
        ("http://TOKEN@host", "http://***@host"),  # a lone user part may be a token
        ("ci:pw@host", "ci:***@host"),  # no scheme
        ("http:/ci:pw@host", "http:***@host"),  # a scheme cut short
        ("http://host/p?token=1#frag", "http://host/p?***"),
        ("http://[::1]:9091/x", "http://[::1]:9091/x"),
        ("http://host", "http://host"),
    ],
)
def test_redact_url_hides_the_password_whatever_the_shape(url, shown):
    assert log.redact_url(url) == shown
    assert log.redact_url(shown) == shown  # what is shown once stays as it is


def test_redact_finds_every_url_in_a_line():
    line = (
        "RUNAWAY_GUARD_PUSHGATEWAY_URL='http://ci:p w@gw:9091' is not valid (give an http:// "
        "or https:// URL); Prometheus https://ci:s3@prom/x?t=abc: HTTP 500"
    )
    assert log.redact(line) == (
        "RUNAWAY_GUARD_PUSHGATEWAY_URL='http://ci:***@gw:9091' is not valid (give an http:// "
        "or https:// URL); Prometheus https://ci:***@prom/x?*** HTTP 500"  # a query runs to a space
    )
    assert log.redact("no url, an address bob@example.com") == "no url, an address bob@example.com"


def test_every_log_line_is_redacted(guard_env):
    log.append(str(guard_env.state_dir), "team", f"refresh failed: http://ci:{SECRET}@h down")
    text = (guard_env.state_dir / "hook.log").read_text()
    assert SECRET not in text and "http://ci:***@h down" in text


def test_an_invalid_team_url_is_shown_without_its_password(guard_env):
    env = {
        **guard_env.env,
        "RUNAWAY_GUARD_TEAM": "acme",
        "RUNAWAY_GUARD_PUSHGATEWAY_URL": f"http://ci:{SECRET} x@gw",  # a space: invalid
        "RUNAWAY_GUARD_PROMETHEUS_URL": f"http://ci:a/{SECRET}@prom",  # an unencoded /
    }
    settings = config.load(None, env)
    assert settings.team is None
    problems = " ".join(settings.problems)
    assert SECRET not in problems
    assert "'http://ci:***@gw'" in problems and "'http://ci:***@prom'" in problems
    assert "%2F" in problems  # what to do about it


def test_a_password_with_a_slash_is_refused_not_sent_to_the_wrong_host(guard_env):
    """Unencoded, urllib would take `ci:a` for the host and port and send the rest as a path;
    percent-encoded, the password goes whole, as basic auth."""
    servers = FakeServers()
    try:
        env = environ_for(guard_env, servers.url.replace("//", "//ci:a/b@"))
        problems = config.load(None, env).problems
        assert any("RUNAWAY_GUARD_PUSHGATEWAY_URL" in p and "%2F" in p for p in problems)
        settings = config.load(
            None, environ_for(guard_env, servers.url.replace("//", "//ci:a%2Fb@"))
        )
        assert refresher.refresh(settings)["error"] is None
        assert {r[3]["Authorization"] for r in servers.requests} == {"Basic Y2k6YS9i"}  # ci:a/b
    finally:
        servers.close()


# -- any URL, anywhere it is shown ----------------------------------------------------------------

# A password of marked words between the characters that cut a URL short: a word of it seen
# anywhere is a leak, whole or in part.
CUTTING = ["/", "#", "?", " ", "'", '"', "\\", "://", "\t", "é"]
KEPT = ["@", ":", "%", "%2F", "!", "$"]  # a URL with these stays valid
separators = st.sampled_from(KEPT) | st.sampled_from(CUTTING + KEPT)
passwords = st.lists(
    st.tuples(separators, st.text(string.ascii_lowercase, max_size=3)),
    min_size=1,
    max_size=5,
).map(lambda parts: "".join(f"{sep}Zq{i}x{tail}" for i, (sep, tail) in enumerate(parts)))
url_shapes = st.tuples(
    st.sampled_from(["http://", "https://", "", "ftp://", "http:/", "HTTP://"]),
    st.sampled_from(["ci:", ":", "c i:", "ci::", ""]),  # "": the password is a lone token
    passwords,
    # Without an @ a URL holds no credentials: what follows a colon there is a port or a path.
    st.sampled_from(["@127.0.0.1:9", "@127.0.0.1:9/base", "@[::1]:9", "@h:x", "@", "@@h"]),
)


def leaks(text, password):
    words = [word for word in password.split("Zq")[1:]]
    return [f"Zq{word[:2]}" for word in words if f"Zq{word[:2]}" in text]


@given(shape=url_shapes, where=st.sampled_from(["pushgateway_url", "prometheus_url"]))
@fuzz(150)
def test_no_password_is_shown_anywhere_whatever_the_url(tmp_path_factory, shape, where):
    from guard_env import GuardEnv

    guard_env = GuardEnv(tmp_path_factory.mktemp("secrets"))
    scheme, user, password, host = shape
    password = password if user else password.replace(":", "")  # a token: no user part
    url = f"{scheme}{user}{password}{host}"
    good = "http://127.0.0.1:9"
    env = {
        **guard_env.env,
        "USER": "alice",
        "RUNAWAY_GUARD_TEAM": "acme",
        "RUNAWAY_GUARD_PUSHGATEWAY_URL": good,
        "RUNAWAY_GUARD_PROMETHEUS_URL": good,
        "RUNAWAY_GUARD_TEAM_MONTHLY_USD": "5",
        "RUNAWAY_GUARD_TEAM_FAIL_CLOSED": "1",
        f"RUNAWAY_GUARD_{where.upper()}": url,
    }
    shown = []
    settings = config.load(None, env)
    shown += settings.problems
    # The hook: its problem lines go to hook.log and the state.
    transcript = jsonl(guard_env.root / "t.jsonl", [])
    shown.append(
        hook.run(json.dumps(pre_tool_use(transcript, "toolu_1", session="s")).encode(), env)
    )
    if settings.team:  # a valid URL: what a refresh that fails records (a port nobody serves)
        cache = refresher.refresh(settings)
        shown.append(cache["error"] or "")
        shown += [json.dumps(d) for d in team.decisions(settings, {"spend": {}}, "Bash", {})]
    logged = guard_env.state_dir / "hook.log"
    shown.append(logged.read_text() if logged.exists() else "")
    path = str(guard_env.state_dir / "sessions" / "claude" / "s.state")
    state = state_file.read_state(path)
    shown += state.get("problems") or []
    status = report.build(path, state, str(guard_env.state_dir), env)
    shown += [report.to_json(status), render.render(status)]
    assert not leaks("\n".join(shown), password), (url, shown)


def test_a_state_saved_by_an_older_version_shows_no_password(guard_env):
    """Its problem list may hold a URL whole: status redacts what it shows."""
    transcript = jsonl(guard_env.root / "t.jsonl", [])
    guard_env.run(pre_tool_use(transcript, "toolu_1", session="s"))
    path = str(guard_env.state_dir / "sessions" / "claude" / "s.state")
    state = state_file.read_state(path)
    state["problems"] = [f"RUNAWAY_GUARD_PUSHGATEWAY_URL='http://ci:{SECRET}@gw x' is not valid"]
    status = report.build(path, state, str(guard_env.state_dir), guard_env.env)
    assert SECRET not in report.to_json(status) + render.render(status)
