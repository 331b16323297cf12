"""The configuration's files read as outside input: a file too large, not UTF-8 or not one JSON
object is a problem line; a key given twice takes the value that guards more; the user file's
last valid numbers are kept (REMEMBERED) so that a file that breaks cannot lift its limits."""

from . import fs, jsonio
from .config_values import (
    DEFAULTS,
    PREFIX,
    TEAM_PROJECT,
    TEAM_TEXTS,
    default_state_dir,
    invalid_line,
    number,
    shown_value,
    tighter_value,
)

# A config file is a few lines; a larger one is not read further. Every call reads the files,
# so this bounds what a hostile one costs it (about 15 ms at worst).
MAX_FILE_BYTES = 64 << 10
REMEMBERED = "config.last-good.json"  # the user file's last valid numbers, in the state dir
_NAMED_KEYS = 5  # keys a problem line names one by one, per file and kind of problem
_LONG_DIGITS = 100  # an integer literal this long that json cannot read is only a bad value
_KNOWN_FILE_KEYS = (
    *DEFAULTS,
    *TEAM_TEXTS,
    TEAM_PROJECT,
    "team_fail_closed",
    "state_dir",
    "off",
    "interrupt",
    "notify_url",
    "plan",
)
# A flag's value that guards more, when a file gives it twice (_merge).
_GUARDING_FLAG = {"off": False, "interrupt": True, "team_fail_closed": True}
_FILE_TYPE, _REGULAR = 0o170000, 0o100000  # st_mode's file type bits, and a regular file's


class LongInteger:
    """An integer in a file too long for int() to read (over 4,300 digits since Python 3.11,
    the security releases of 3.9 and 3.10 included): no setting's value, but no reason to drop
    the rest of the file. Its repr is what a problem line shows (config_values.shown_value)."""

    def __init__(self, digits):
        self.digits = digits

    def __repr__(self):
        return f"an integer of {self.digits} digits"


def read_file(path, problems):
    """(settings, mtime): the members of the JSON object in path, duplicate keys merged (see
    _merge) and unknown keys noted; {} when there is no file. settings is None, with the
    reason noted, when the file cannot be used at all: not a regular file, larger than
    MAX_FILE_BYTES, not UTF-8, not one JSON object (nesting too deep for the parser included)."""
    try:
        data, mtime = _read_bytes(path)
    except FileNotFoundError:
        return {}, None
    except OSError as error:
        problems.append(f"{path}: cannot be read ({error.strerror or error}); ignored")
        return None, None
    if len(data) > MAX_FILE_BYTES:
        problems.append(
            f"{path}: larger than {MAX_FILE_BYTES >> 10} KiB, read no further than that; ignored"
        )
        return None, mtime
    try:
        pairs = _members(data.decode("utf-8-sig"))
    except UnicodeDecodeError as error:
        problems.append(f"{path}: not valid UTF-8 (byte {error.start}); ignored")
        return None, mtime
    except ValueError as error:
        problems.append(f"{path}: {error}; ignored")
        return None, mtime
    settings = _merge(pairs, path, problems)
    unknown = [key for key in settings if key not in _KNOWN_FILE_KEYS]
    _note_keys(problems, path, unknown, "unknown key {} ignored", "more unknown keys ignored")
    return settings, mtime


def _note_keys(problems, path, keys, saying, rest):
    """A problem line for each of the first few keys, one for the rest: a file of thousands of
    keys must not make thousands of lines (the state keeps them, the log writes them)."""
    for key in keys[:_NAMED_KEYS]:
        problems.append(f"{path}: " + saying.format(shown_value(key)))
    if len(keys) > _NAMED_KEYS:
        problems.append(f"{path}: {len(keys) - _NAMED_KEYS} {rest}")


def _read_bytes(path):
    """(the file's first MAX_FILE_BYTES + 1 bytes, its mtime in ns). Opened without waiting
    and read only if it is a regular file: a FIFO in its place would wait for a writer, a
    link to /dev/zero never end."""
    fd = fs.open(path, fs.O_RDONLY | fs.O_NONBLOCK)
    try:
        info = fs.fstat(fd)
        if info.st_mode & _FILE_TYPE != _REGULAR:
            raise OSError("not a regular file")
        chunks, size = [], 0
        while size <= MAX_FILE_BYTES:
            chunk = fs.read(fd, MAX_FILE_BYTES + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks), info.st_mtime_ns
    finally:
        fs.close(fd)


def _members(text):
    """(key, value) for each member of the one JSON object text holds, in order, a key given
    twice twice (json.loads keeps the last silently); ValueError saying why when text is not
    one JSON object."""
    try:
        return _walk(text)
    except ValueError:
        try:
            value = jsonio.loads(text)
        except ValueError as error:  # json's precise error
            raise ValueError(f"not valid JSON ({error})") from None
        if isinstance(value, dict):
            raise  # pragma: no cover - what json reads as an object, _walk does too
        raise ValueError(f"must hold a JSON object, not {type(value).__name__}") from None


def _walk(text):
    pairs = []
    pos = _space(text, 0)
    if text[pos : pos + 1] != "{":
        raise ValueError("not an object")
    pos = _space(text, pos + 1)
    closed = text[pos : pos + 1] == "}"
    while not closed:
        if text[pos : pos + 1] != '"':
            raise ValueError(f"no key at {pos}")
        key, pos = jsonio.value_at(text, pos)
        pos = _space(text, pos)
        if text[pos : pos + 1] != ":":
            raise ValueError(f"no ':' at {pos}")
        value, pos = _value(text, _space(text, pos + 1))
        pairs.append((key, value))
        pos = _space(text, pos)
        closed = text[pos : pos + 1] == "}"
        if not closed:
            if text[pos : pos + 1] != ",":
                raise ValueError(f"no ',' at {pos}")
            pos = _space(text, pos + 1)
    if _space(text, pos + 1) != len(text):
        raise ValueError(f"extra data after {pos}")
    return pairs


def _value(text, pos):
    """(value, end) of the JSON value at text[pos]; an integer too long to read is a
    LongInteger."""
    try:
        return jsonio.value_at(text, pos)
    except ValueError:
        end = pos + (text[pos : pos + 1] == "-")
        while end < len(text) and "0" <= text[end] <= "9":
            end += 1
        if end - pos < _LONG_DIGITS:
            raise
        return LongInteger(end - pos), end


def _space(text, pos):
    """Where the JSON whitespace from text[pos] on ends."""
    end = len(text)
    while pos < end and text[pos] in " \t\n\r":
        pos += 1
    return pos


def _merge(pairs, path, problems):
    """The settings of a file whose keys may come twice. JSON readers disagree on which value
    a repeated key has (json.loads keeps the last), so the guard takes the one that guards
    more: the tightest number, off only if every `off` says so, interrupt and
    team_fail_closed if any says so, and for text JSON's last."""
    settings, repeated = {}, {}
    for key, value in pairs:
        if key not in settings:
            settings[key] = value
            continue
        repeated[key] = True
        earlier = settings[key]
        if key in DEFAULTS:
            old, new = number(key, earlier), number(key, value)
            if new is None or (old is not None and tighter_value(key, old, new) == old):
                value = earlier
        elif key in _GUARDING_FLAG and earlier is _GUARDING_FLAG[key]:
            value = earlier
        settings[key] = value
    _note_keys(
        problems,
        path,
        list(repeated),
        "{} is given more than once; the value that guards more applies",
        "more keys given more than once",
    )
    return settings


def _remembered_path(environ):
    """Where the user file's last valid numbers are kept: the state dir the environment or the
    default names, not the file's own `state_dir`, which a broken file no longer says."""
    return fs.join(environ.get(PREFIX + "STATE_DIR") or default_state_dir(environ), REMEMBERED)


def _remembered(path):
    """The numbers _remember kept, each checked again; {} when there are none."""
    try:
        data, _ = _read_bytes(path)
        kept = jsonio.loads(data)
    except (OSError, ValueError):
        return {}
    if not isinstance(kept, dict):
        return {}
    numbers = {key: number(key, kept.get(key)) for key in DEFAULTS}
    return {key: value for key, value in numbers.items() if value is not None}


def _remember(path, numbers, mtime):
    """Keep the numbers the user file gives, stamped with its mtime (so a call whose file is
    unchanged finds the stamp equal and writes nothing); best effort."""
    temp = f"{path}.{fs.getpid()}.tmp"
    try:
        fs.makedirs(fs.dirname(path), 0o700)
        fd = fs.open(temp, fs.O_WRONLY | fs.O_CREAT | fs.O_EXCL, 0o600)
        try:
            fs.write(fd, jsonio.dumps(numbers, sort_keys=True).encode())
        finally:
            fs.close(fd)
        fs.utime(temp, ns=(mtime, mtime))
        fs.replace(temp, path)
    except OSError:
        try:
            fs.remove(temp)
        except OSError:
            pass


def _stamp(path):
    try:
        return fs.stat(path).st_mtime_ns
    except (OSError, ValueError):
        return None


def user_file(path, environ, values, sources, problems):
    """The user's file: its numbers into values, and its settings ({} when it has none or
    cannot be used) for the rest. A value, or a whole file, that cannot be used gives way to
    the last valid one the file held (_remember), never to a default that may be looser: a
    broken file must not lift the limits its person set."""
    user, mtime = read_file(path, problems)
    numbers, invalid = {}, []
    for key in DEFAULTS:
        if user and key in user:
            value = number(key, user[key])
            if value is None:
                problems.append(invalid_line(f"{path}: {key}", key, user[key]))
                invalid.append(key)
            else:
                numbers[key] = value
    kept_path = _remembered_path(environ)
    if user is None or invalid:
        kept = _remembered(kept_path)
        held = {key: kept[key] for key in (kept if user is None else invalid) if key in kept}
        if held:
            numbers.update(held)
            shown = ", ".join(f"{key}={value:g}" for key, value in held.items())
            problems.append(
                f"{path}: until it is fixed, the last valid values it gave hold: {shown}"
            )
    if user is not None and mtime is not None and mtime != _stamp(kept_path):
        _remember(kept_path, numbers, mtime)
    for key, value in numbers.items():
        values[key], sources[key] = value, "user"
    return user or {}
