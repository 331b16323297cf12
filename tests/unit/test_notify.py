"""Notifications: a warning and a stop reach the person's URLs once each, in each URL's format,
from a detached sender the hook never waits on."""

import json
import socket
import time

import pytest
from guard_env import fuzz
from http_receiver import Receiver
from hypothesis import given
from hypothesis import strategies as st
from runaway_guard import config, notify
from test_status import Claude, World


@pytest.fixture
def world(tmp_path):
    return World(tmp_path)


@pytest.fixture
def receiver():
    server = Receiver()
    yield server
    server.close()


def formats_env(receiver):
    urls = [
        f"ntfy+{receiver.url}/guard-topic",
        f"slack+{receiver.url}/services/T0/B0/secret",
        f"discord+{receiver.url}/api/webhooks/1/secret",
        f"teams+{receiver.url}/workflows/secret",
        f"{receiver.url}/plain",
    ]
    return {"RUNAWAY_GUARD_NOTIFY_URL": " ".join(urls[:2]) + "," + ",".join(urls[2:])}


def test_warning_and_stop_reach_every_format_once(world, receiver):
    session = Claude(world, world.project("proj"), "s-notify")
    # A warning at half the cap: $1.10 of $2 with about $0.69 next is still under the ceiling.
    env = {"RUNAWAY_GUARD_MAX_USD": "2", "RUNAWAY_GUARD_WARN_AT": "0.5", **formats_env(receiver)}
    session.call(**env)  # $0.55: nothing to say
    time.sleep(0.5)
    assert receiver.received == []
    session.call(**env)  # $1.10 of 2: the warning
    warnings = receiver.wait(5)
    session.call(**env)  # the next response would cross the cap: the stop
    session.call(**env)  # stopped again: no second message
    got = receiver.wait(10)
    time.sleep(1)
    assert len(got) == 10, [item[0] for item in got]
    by_path = {}
    for path, headers, data in got:
        by_path.setdefault(path, []).append((headers, data))
    assert sorted(by_path) == sorted(
        [
            "/guard-topic",
            "/services/T0/B0/secret",
            "/api/webhooks/1/secret",
            "/workflows/secret",
            "/plain",
        ]
    )
    assert all(len(items) == 2 for items in by_path.values())
    first, second = by_path["/guard-topic"]
    assert first[0]["Title"] == "runaway-guard warns: session (Claude Code)"
    assert second[0]["Title"] == "runaway-guard stopped: session (Claude Code)"
    assert b"$1.10 of $2.00" in first[1] and b"--raise-cap <USD>" in second[1]
    assert b"s-notify" in second[1] and str(session.project).encode() in second[1]
    slack = json.loads(by_path["/services/T0/B0/secret"][1][1])
    assert slack["text"].startswith("*runaway-guard stopped: session")
    discord = json.loads(by_path["/api/webhooks/1/secret"][1][1])
    assert discord["content"].startswith("**runaway-guard stopped")
    teams = json.loads(by_path["/workflows/secret"][1][1])
    card = teams["attachments"][0]["content"]
    assert card["type"] == "AdaptiveCard" and "stopped" in card["body"][0]["text"]
    plain = json.loads(by_path["/plain"][1][1])
    assert plain["event"] == "stop" and plain["wire"] == "session"
    assert plain["session_id"] == "s-notify" and plain["host"] == "claude"
    assert plain["command"].endswith("--session claude:s-notify --raise-cap <USD>")
    assert len(warnings) >= 5
    assert world.state("claude", "s-notify")["notified"] == ["warning:session", "stop:session"]


def test_a_hanging_or_refusing_url_costs_the_hook_nothing(world):
    hanging = socket.socket()
    hanging.bind(("127.0.0.1", 0))
    hanging.listen(8)  # accepts, never answers
    refused = socket.socket()
    refused.bind(("127.0.0.1", 0))  # bound, not listening: refuses
    urls = [
        f"http://127.0.0.1:{hanging.getsockname()[1]}/hang/secret-token",
        f"slack+http://127.0.0.1:{refused.getsockname()[1]}/services/secret-token",
    ]
    session = Claude(world, world.project("proj"), "s-hang")
    env = {"RUNAWAY_GUARD_MAX_USD": "0.5", "RUNAWAY_GUARD_NOTIFY_URL": " ".join(urls)}
    started = time.monotonic()
    _, answer = session.call(**env)  # over the cap at once: a stop, and its notification
    took = time.monotonic() - started
    assert answer["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert took < 5  # the sender may try for a minute; the hook does not wait for it
    log = world.state_dir / "hook.log"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and "attempt 1 of 4" not in _text(log):
        time.sleep(0.1)
    text = _text(log)
    assert f"slack http://127.0.0.1:{refused.getsockname()[1]}/***: attempt 1 of 4" in text
    assert "secret-token" not in text
    hanging.close()
    refused.close()


def _text(path):
    return path.read_text() if path.exists() else ""


def bash_call(session, tool_use_id):
    """Claude Code's payload for `ls`, run in-process (world.run)."""
    return {
        "session_id": session.session,
        "transcript_path": str(session.transcript),
        "cwd": str(session.project),
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "ls"},
        "tool_use_id": tool_use_id,
    }


def test_the_hook_without_a_decision_starts_no_sender(world, receiver, monkeypatch):
    started = []
    monkeypatch.setattr("runaway_guard.detached.start", lambda *a, **k: started.append(a))
    session = Claude(world, world.project("proj"), "s-quiet")
    assert world.run(bash_call(session, "toolu_1"), **formats_env(receiver)) == ""
    from runaway_guard import hook

    hook.finish()
    assert started == []


def test_events_once_per_session_and_kind():
    state = {}
    warn = {"kind": "tell", "wire": "session", "person_text": "p", "model_text": "m"}
    stop = {"kind": "stop", "wire": "session", "person_text": "p", "model_text": "m"}
    assert notify.due(state, warn) == "warning:session"
    assert notify.due(state, warn) is None
    assert notify.due(state, stop) == "stop:session"
    assert notify.due(state, dict(stop, kind="deny", wire="daily")) == "stop:daily"
    assert notify.due(state, dict(warn, wire="failure")) is None  # the agent's own note
    assert notify.due(state, dict(stop, kind="deny", wire="loop")) is None  # a first refusal
    assert notify.due(state, dict(stop, wire="loop")) == "stop:loop"
    assert notify.due(state, dict(stop, wire="setup")) is None
    assert notify.due({"notified": "junk"}, stop) == "stop:session"


@pytest.mark.parametrize(
    "url, kind",
    [
        ("https://ntfy.sh/my-topic", "ntfy"),
        ("https://ntfy.example.org/t", "ntfy"),
        ("https://hooks.slack.com/services/T/B/x", "slack"),
        ("https://discord.com/api/webhooks/1/x", "discord"),
        ("https://acme.webhook.office.com/webhookb2/x", "teams"),
        ("https://prod-1.westus.logic.azure.com/workflows/x?sig=y", "teams"),
        ("https://example.org/hook", "json"),
        ("discord+https://proxy.example.org/x", "discord"),
    ],
)
def test_the_format_comes_from_the_url_or_its_prefix(url, kind):
    assert notify.style(url)[0] == kind
    assert "x" not in notify.shown(url).partition("://")[2].partition("/")[2]


def test_only_the_user_sets_where_notifications_go(world):
    project = world.project("proj")
    (project / ".runaway-guard.json").write_text(
        json.dumps({"notify_url": "https://attacker.example/x"})
    )
    world.config(notify_url=["https://ntfy.sh/mine", "ftp://bad/secret-path"])
    settings = config.load(str(project), world.env)
    assert settings.notify_urls == ("https://ntfy.sh/mine",)
    text = "\n".join(settings.problems)
    assert "notify_url can only be set by the user" in text
    assert "is not an http:// or https:// URL" in text and "secret-path" not in text
    env = {**world.env, "RUNAWAY_GUARD_NOTIFY_URL": "https://a.example/1, https://b.example/2"}
    assert config.load(None, env).notify_urls == ("https://a.example/1", "https://b.example/2")


@fuzz(200)
@given(
    st.one_of(
        st.text(max_size=80),
        st.lists(st.text(max_size=30), max_size=4),
        st.integers(),
        st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
    )
)
def test_any_notify_url_value_is_a_url_list_or_a_problem(tmp_path_factory, value):
    world = World(tmp_path_factory.mktemp("notify"))
    world.config(notify_url=value)
    settings = config.load(None, world.env)
    assert isinstance(settings.notify_urls, tuple)
    for url in settings.notify_urls:
        assert "://" in url and url.isprintable() and " " not in url


def test_a_warning_the_host_cannot_pass_on_still_reaches_the_person(world, monkeypatch):
    """Qwen Code drops a note (no TELL rung): the warning is sent all the same."""
    from runaway_guard import hook, jsonio
    from runaway_guard.hosts import claude

    sent = []
    monkeypatch.setattr(claude, "RUNGS", frozenset({"deny", "ask", "stop"}))
    monkeypatch.setattr(
        "runaway_guard.detached.start", lambda *a, **k: sent.append(jsonio.loads(k["data"]))
    )
    session = Claude(world, world.project("proj"), "s-unsaid")
    env = {
        "RUNAWAY_GUARD_MAX_USD": "2",
        "RUNAWAY_GUARD_WARN_AT": "0.5",
        "RUNAWAY_GUARD_NOTIFY_URL": "https://ntfy.sh/x",
    }
    for number in (1, 2):
        tool_use_id = f"toolu_{number}"
        session.respond(tool=(tool_use_id, "Bash", {"command": "ls"}))
        assert (
            world.run(bash_call(session, tool_use_id), **env) == ""
        )  # $1.10 of 2 at the second: nothing said
        hook.finish()
    assert [item["message"]["event"] for item in sent] == ["warning"]
    assert sent[0]["message"]["title"] == "runaway-guard warns: session (Claude Code)"
