"""The team's and the notifications' settings (team.py, notify.py): who the person is and
which servers their spend and warnings go to, each from the environment or else the user's file;
a value that cannot work is a problem line, with any password in it hidden."""

from . import fs
from .config_values import LABEL_TEXT, NOTIFY_VARIABLE, PREFIX, TEAM_TEXTS, is_label

# Where a warning or a stop is sent (notify.py): from the user's file or the environment only.
NOTIFY_PREFIXES = ("ntfy+", "slack+", "discord+", "teams+", "json+")
MAX_NOTIFY_URLS = 8


def notify_urls(user, environ, user_path, problems):
    """The URLs a warning or a stop is sent to: the environment's, else the user's file's (a
    text or a list of texts), split at spaces and commas. One that is not an http(s) URL, with
    a prefix of NOTIFY_PREFIXES or none, is a problem line showing it without its secrets."""
    raw, where = environ.get(NOTIFY_VARIABLE), NOTIFY_VARIABLE
    if not raw:
        raw, where = user.get("notify_url"), f"{user_path}: notify_url"
    texts = raw if isinstance(raw, list) else [raw]
    if not all(isinstance(text, str) for text in texts):
        problems.append(f"{where} is not a URL or a list of URLs; ignored")
        return ()
    urls = []
    for url in " ".join(texts).replace(",", " ").split():
        bare = url.split("+", 1)[1] if url.startswith(NOTIFY_PREFIXES) else url
        host = bare.partition("://")[2].partition("/")[0].rpartition("@")[2]
        if bare.startswith(("http://", "https://")) and host and url.isprintable():
            urls.append(url)
        else:
            from . import notify

            problems.append(
                f"{where}: {notify.shown(url)[:200]!r} is not an http:// or https:// URL "
                f"(a prefix {', '.join(NOTIFY_PREFIXES)} may choose the format); ignored"
            )
    if len(urls) > MAX_NOTIFY_URLS:
        problems.append(f"{where}: more than {MAX_NOTIFY_URLS} URLs; the first are used")
    return tuple(urls[:MAX_NOTIFY_URLS])


def team(settings, user, project, environ, problems, user_path):
    """The team settings, each from the environment or else the user's file; only a complete
    and valid set (team, both URLs) switches team budgets on. A URL is shown with its password
    hidden, valid or not. A team named with a set that cannot work turns team budgets off,
    unless team_fail_closed asks to refuse then: settings.team_error says why, and team.py
    refuses every call with it."""
    settings.team_error = None
    texts = {}
    for key in TEAM_TEXTS:
        raw, where = environ.get(PREFIX + key.upper()), PREFIX + key.upper()
        if not raw:
            raw, where = user.get(key), f"{user_path}: {key}"
        if raw is None or raw == "":
            continue
        value = raw.strip() if isinstance(raw, str) else None
        if key in ("team", "user"):
            hint = None if is_label(value) else "use 1 to 64 of A-Z a-z 0-9 . _ -, not . or .."
            shown = raw
        else:
            hint = url_problem(value)
            from . import log

            shown = log.redact_url(raw) if isinstance(raw, str) else f"a {type(raw).__name__}"
        if hint is None:
            texts[key] = value.rstrip("/") if key.endswith("_url") else value
        else:
            problems.append(f"{where}={shown!r} is not valid ({hint}); ignored")
    raw = environ.get(PREFIX + "TEAM_FAIL_CLOSED")
    closed = raw.strip().lower() in ("1", "true", "yes") if raw else user.get("team_fail_closed")
    closed = closed is True or project.get("team_fail_closed") is True
    missing = [key for key in ("team", "pushgateway_url", "prometheus_url") if key not in texts]
    if missing:
        names = " and ".join(PREFIX + key.upper() for key in missing)
        if not closed:
            if "team" not in missing:
                problems.append(f"team budgets are off: no valid {names}")
            return
        settings.team_error = f"no valid {names}"
        problems.append(
            f"team budgets cannot work (no valid {names}) and team_fail_closed asks to refuse "
            "then: every tool call is refused until they are fixed"
        )
    settings.team = texts.get("team") or "(invalid)"
    settings.environ = environ  # the team's refresh is started with (part of) it
    settings.user = texts.get("user") or login_name(environ)
    settings.pushgateway_url = texts.get("pushgateway_url")
    settings.prometheus_url = texts.get("prometheus_url")
    settings.team_fail_closed = closed


def url_problem(value):
    """What is wrong with a team URL (None: nothing). A password's / ? # must be percent-encoded:
    unencoded, they end the host part, and urllib would send the rest of the password as a path
    to the wrong host."""
    if not value or not value.startswith(("http://", "https://")):
        return "give an http:// or https:// URL"
    if " " in value or not value.isprintable():
        return "no spaces or control characters"
    rest = value.partition("://")[2]
    authority_end = min([i for i in map(rest.find, "/?#") if i >= 0] or [len(rest)])
    if "@" in rest[authority_end:]:
        return "a / ? or # in the password must be percent-encoded: %2F %3F %23 (and at signs %40)"
    if "?" in rest or "#" in rest:
        return "no query or fragment: the guard adds the API's paths to the URL"
    host = rest[:authority_end].rpartition("@")[2]
    port = host.rpartition("]")[2] if host.startswith("[") else host
    port = port.partition(":")[2] if ":" in port else None
    if port is not None and not (0 < len(port) <= 5 and set(port) <= set("0123456789")):
        return "give the port as a number"
    if not host or host[0] == ":":
        return "give the host"
    if port is not None and int(port) > 65535:
        return "give a port up to 65535"
    return None


def login_name(environ=fs.environ):
    """The person's login name as a label: LOGNAME/USER, else the password database."""
    name = environ.get("LOGNAME") or environ.get("USER") or environ.get("USERNAME") or ""
    if not name:
        try:
            import pwd

            name = pwd.getpwuid(fs.getuid()).pw_name
        except (ImportError, KeyError, AttributeError):
            name = "unknown"
    label = "".join(c if c in LABEL_TEXT else "_" for c in name[:64])
    return label if is_label(label) else "unknown"
