"""Telling the person when the guard acts, where they are not looking: the desktop, a phone.

At a spend warning and at a stop (a cap, or a failure or loop run ended), once per session and
event (the state's `notified`), the hook hands the message to a detached sender (detached.py)
and goes on: it never waits on it, and the sender's failures are only lines in hook.log, the
URLs shown without their secrets. The sender posts to the desktop's notification service
(Linux: freedesktop's over D-Bus with `notify-send` or `gdbus`; macOS: `osascript`, written but
untested here) and to each URL the person set (RUNAWAY_GUARD_NOTIFY_URL), in the format its
host expects: ntfy, Slack, Discord, Teams, else plain JSON (prefix `ntfy+` ... `json+` to
choose). Only a call whose decision is a warning or a stop gets here: the steady call does not.
"""

import time

from .decisions import STOP, TELL

# Wires that count an agent's own calls: their notes and first refusals are the agent's to
# handle, only the end of its run is the person's news. Every other wire is a budget.
COUNTING = ("failure", "loop")
QUIET = ("setup", "control")  # a second install, a loosening the person is asked about anyway
ATTEMPTS = 4  # per URL: the first and three retries, after 2, 4 and 8 s
TIMEOUT_S = 10
APP = "runaway-guard"


def event(decision):
    """The event a decision is news of ('warning:<wire>', 'stop:<wire>'), or None."""
    kind, wire = decision.get("kind"), decision.get("wire")
    if wire in QUIET or not isinstance(wire, str):
        return None
    if kind == TELL:
        return None if wire in COUNTING else f"warning:{wire}"
    if kind == STOP or wire not in COUNTING:
        return f"stop:{wire}"
    return None


def due(state, decision):
    """The event to send for this decision, once per session and event (remembered in the
    state), else None."""
    news = event(decision)
    if news is None:
        return None
    sent = state.get("notified")
    if not isinstance(sent, list):
        sent = state["notified"] = []
    if news in sent:
        return None
    sent.append(news)
    return news


def send(news, decision, call, settings, environ):
    """Start the sender for this event, where there is anywhere to send it."""
    desktop = desktop_kind(environ)
    if not settings.notify_urls and not desktop:
        return
    from . import detached, jsonio

    message = compose(news, decision, call)
    state_dir = settings.state_dir
    data = {"message": message, "urls": list(settings.notify_urls), "desktop": desktop}
    data["state_dir"] = state_dir  # where the sender logs what failed
    more = ("DBUS_SESSION_BUS_ADDRESS", "DISPLAY", "WAYLAND_DISPLAY", "XDG_RUNTIME_DIR")
    try:
        detached.start(
            "notify",
            (),
            environ=environ,
            state_dir=state_dir,
            data=jsonio.dumps(data).encode(),
            more=more,
        )
    except OSError as error:  # no interpreter to start, no process left: the call goes on
        from . import log

        log.append(state_dir, "notify", f"the sender could not start: {_reason(error)}")


def desktop_kind(environ):
    """'freedesktop' where a session bus is reachable, 'macos' on a Mac, else None."""
    import sys

    if sys.platform == "darwin":
        return "macos"
    if environ.get("DBUS_SESSION_BUS_ADDRESS"):
        return "freedesktop"
    return None


def compose(news, decision, call):
    """The message: what happened, where (machine, project, host and session), what to run to
    go on."""
    import socket

    from . import controls, hosts, sessions

    stopped = news.startswith("stop:")
    wire = news.partition(":")[2]
    label = getattr(hosts.load(call.host), "LABEL", call.host) if call.host in hosts.NAMES else ""
    project = sessions.project_root(call.cwd) if call.cwd else ""
    status = f"{controls.status_command()} --session {call.host}:{call.session_id}"
    if not stopped:
        go_on = f"see where it stands: {status}"
    elif wire == "session":
        go_on = f"to go on, raise the cap: {status} --raise-cap <USD>"
    elif wire in COUNTING:
        go_on = f"to go on, clear the stop: {status} --clear (or send a new prompt)"
    else:
        go_on = f"what to change is in the status: {status}"
    title = f"runaway-guard {'stopped' if stopped else 'warns'}: {wire} ({label or call.host})"
    text = decision.get("person_text") or decision.get("model_text") or title
    machine = socket.gethostname()
    where = f"on {machine}, in {project or 'no project'}, {label} session {call.session_id}"
    return {
        "event": "stop" if stopped else "warning",
        "wire": wire,
        "title": title,
        "text": f"{text}\n{where}\n{go_on}",
        "host": call.host,
        "machine": machine,
        "project": project,
        "session_id": call.session_id,
        "command": go_on.partition(": ")[2],
        "at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


# -- the sender: a detached process --------------------------------------------------------------


def child():
    """The detached sender's entry point: the message and where to send it on stdin."""
    import sys
    import threading

    from . import fs, jsonio

    try:
        job = jsonio.loads(sys.stdin.buffer.read(1 << 20))
        state_dir = job["state_dir"]
        targets = [(_desktop, job["desktop"])] if job.get("desktop") else []
        targets += [(_post, url) for url in job["urls"]]
        threads = [
            threading.Thread(target=_deliver, args=(how, where, job["message"], state_dir))
            for how, where in targets
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    except Exception as error:
        from . import log

        log.append(fs.environ.get("RUNAWAY_GUARD_STATE_DIR", "."), "notify", repr(error))
    fs._exit(0)


def _deliver(how, where, message, state_dir):
    """One target, retried with backoff; each failure a line in hook.log without secrets."""
    from . import log

    for attempt in range(ATTEMPTS):
        if attempt:
            time.sleep(2**attempt)
        try:
            how(where, message)
            return
        except Exception as error:
            place = shown(where) if how is _post else where
            log.append(
                state_dir,
                "notify",
                f"{place}: attempt {attempt + 1} of {ATTEMPTS} failed: {_reason(error)}",
            )


def shown(url):
    """url fit for a log line: its format, scheme and host. A webhook's secret is its path (a
    Slack or Discord token, an ntfy topic), so nothing after the host is shown."""
    kind, target = style(url)
    scheme, _, rest = target.partition("://")
    host = rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0].rpartition("@")[2]
    return f"{kind} {scheme}://{host}/***"


def _reason(error):
    return f"{type(error).__name__}: {error}"[:300]


def _desktop(kind, message):
    import shutil
    import subprocess

    if kind == "macos":  # untested here: no Mac in the test machines
        script = (
            "on run argv\n"
            "display notification (item 2 of argv) with title (item 1 of argv)\n"
            "end run"
        )
        argv = ["osascript", "-e", script, message["title"], message["text"]]
    elif shutil.which("notify-send"):
        argv = ["notify-send", "--app-name", APP, message["title"], message["text"]]
    elif shutil.which("gdbus"):
        argv = [
            "gdbus", "call", "--session",
            "--dest", "org.freedesktop.Notifications",
            "--object-path", "/org/freedesktop/Notifications",
            "--method", "org.freedesktop.Notifications.Notify",
            APP, "0", "", message["title"], message["text"], "[]", "{}", "-1",
        ]  # fmt: skip
    else:
        return  # a bus but no tool to reach it: nothing to say
    subprocess.run(
        argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=TIMEOUT_S, check=True
    )


def style(url):
    """(format, URL to post to): a prefix chooses the format, else the URL's host does."""
    from urllib.parse import urlsplit

    prefix, plus, rest = url.partition("+")
    if plus and prefix in ("ntfy", "slack", "discord", "teams", "json"):
        return prefix, rest
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if host == "ntfy.sh" or host.startswith("ntfy."):
        return "ntfy", url
    if host == "hooks.slack.com":
        return "slack", url
    if host in ("discord.com", "discordapp.com") and parts.path.startswith("/api/webhooks/"):
        return "discord", url
    if host.endswith((".webhook.office.com", ".logic.azure.com", ".powerplatform.com")):
        return "teams", url
    return "json", url


def body(kind, message):
    """(bytes, content type, extra headers) of the POST for a format."""
    from . import jsonio

    title, text = message["title"], message["text"]
    if kind == "ntfy":
        tags = "stop_sign" if message["event"] == "stop" else "warning"
        headers = {"Title": title.encode("ascii", "replace").decode(), "Tags": tags}
        return text.encode(), "text/plain; charset=utf-8", headers
    if kind == "slack":
        shape = {"text": f"*{title}*\n{text}"}
    elif kind == "discord":
        shape = {"content": f"**{title}**\n{text}"[:2000]}
    elif kind == "teams":  # Workflows' "post when a webhook request is received", and connectors
        card = {
            "type": "AdaptiveCard",
            "version": "1.4",
            "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
            "body": [
                {"type": "TextBlock", "text": title, "weight": "Bolder", "wrap": True},
                {"type": "TextBlock", "text": text, "wrap": True},
            ],
        }
        shape = {
            "type": "message",
            "attachments": [
                {"contentType": "application/vnd.microsoft.card.adaptive", "content": card}
            ],
        }
    else:
        shape = message
    return jsonio.dumps(shape).encode(), "application/json", {}


def _post(url, message):
    from urllib.request import Request, urlopen

    kind, target = style(url)
    data, content_type, headers = body(kind, message)
    request = Request(target, data=data, method="POST")
    request.add_header("Content-Type", content_type)
    request.add_header("User-Agent", APP)
    for name, value in headers.items():
        request.add_header(name, value)
    with urlopen(request, timeout=TIMEOUT_S) as answer:  # an HTTP error status raises
        answer.read(1 << 16)
