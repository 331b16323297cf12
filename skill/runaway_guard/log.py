"""The guard's own log: its errors go here, never into a blocked call.

No credential is written: every line passes redact() first, a backstop for the sources that
show a URL (config's problems, the team's errors, status), which hide it with redact_url.
"""

import time

from . import fs

LOG_NAME = "hook.log"
MAX_BYTES = 1 << 20
HIDDEN = "***"
_QUOTES = "'\"`"
_SCHEME = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")


def append(state_dir, kind, text):
    """Append one line to hook.log; a log that cannot be written is silently skipped."""
    try:
        fs.makedirs(state_dir, 0o700)
        path = fs.join(state_dir, LOG_NAME)
        try:
            if fs.getsize(path) > MAX_BYTES:
                fs.replace(path, path + ".1")
        except OSError:
            pass
        text = redact(" ".join(str(text).split()))  # before the cut: it may fall inside a URL
        line = f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {kind} {text[:2000]}\n"
        fd = fs.open(path, fs.O_WRONLY | fs.O_CREAT_NOFOLLOW | fs.O_APPEND, 0o600)
        try:
            fs.write(fd, line.encode("utf-8", "replace"))
        finally:
            fs.close(fd)
    except Exception:
        pass


def redact_url(url):
    """url fit to show, whatever its shape: the password becomes *** (the whole user part when it
    has no password: it may be a token), and so does any query or fragment (a team URL may not
    have one, and in others they carry tokens). The credentials are all between the scheme and
    the URL's last @, so a password holding / # ? @ : or spaces is hidden whole."""
    scheme, sep, rest = url.partition("://")
    if not (scheme[:1].isalpha() and set(scheme) <= _SCHEME):
        scheme, sep, rest = "", "", url  # no scheme: that :// is in the password
    return scheme + sep + _hide(rest, whole=True)


def redact(text):
    """text with the credentials and queries of every URL in it hidden, as redact_url does.
    Where a URL ends is not known in free text: its credentials run to the last @ before the
    next URL or the line's end (so a password with spaces is hidden too), its query to the
    first space or quote."""
    if "://" not in text:
        return text
    import re

    lines = []
    for line in text.split("\n"):
        starts = [match.start() for match in re.finditer(r"[A-Za-z][A-Za-z0-9+.-]*://", line)]
        pieces = [line[: starts[0]] if starts else line]
        for start, end in zip(starts, [*starts[1:], len(line)]):
            scheme, sep, rest = line[start:end].partition("://")
            pieces.append(scheme + sep + _hide(rest, whole=False))
        lines.append("".join(pieces))
    return "\n".join(lines)


def _hide(rest, whole):
    """rest (a URL after its scheme) with its credentials and its query or fragment hidden;
    whole: rest is the URL to its end (else the part after the credentials ends at a space or
    a quote)."""
    start = 0
    at = rest.rfind("@")
    if at >= 0:
        user, colon, _ = rest[:at].partition(":")
        shown = f"{user}:{HIDDEN}" if colon else HIDDEN
        rest = shown + rest[at:]
        start = len(shown) + 1
    end = len(rest)
    if not whole:
        end = next((i for i in range(start, end) if rest[i].isspace() or rest[i] in _QUOTES), end)
    marks = [cut for cut in (rest.find("?", start, end), rest.find("#", start, end)) if cut >= 0]
    if marks:
        rest = rest[: min(marks) + 1] + HIDDEN + rest[end:]
    return rest
