"""One call as the guard sees it, whichever host sent it: each host module builds it."""

from . import jsonio

SPAWN_TOOLS = frozenset({"Agent"})

# What a payload announces: a tool about to run, a tool that ran, a model request about to be
# sent, a new prompt from the person, or the end of an agent's turn (the host may report there
# what the turn used: sync books it, nothing is decided).
TOOL, RESULT, MODEL, PROMPT, END = "tool", "result", "model", "prompt", "end"


def text(value):
    """A non-empty string from outside data, else None."""
    return value if isinstance(value, str) and value else None


def path(value):
    """A path (or a session id, which the readers make paths of) from outside data: a non-empty
    string the system calls take, else None. They refuse a NUL byte (ValueError) and a lone
    surrogate, which JSON's `\\ud800` spells (UnicodeEncodeError)."""
    if not isinstance(value, str) or not value or "\x00" in value:
        return None
    if not value.isascii():
        try:
            value.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            return None
    return value


# No response uses this many tokens (a quadrillion: $150M of output at $150 per million), nor
# does a session's running total; OpenCode's millisecond timestamps stay far below it too.
MOST = 10**15


# What the readers passed over in this call (a line that is not JSON, a count that is not one),
# each named once: hosts._files.say_ignored writes them to hook.log, once a session.
ignored = []
NOT_JSON = "a line that is not JSON"


def ignore(what):
    """Note that the readers passed over what (see ignored)."""
    if what not in ignored:
        ignored.append(what)


def count(value):
    """A token count (or a time in milliseconds) from outside data: a whole number from 0 to
    MOST, else 0. Absent (None) is 0; a hostile count (negative, not finite, a bool, a string,
    a list, a number of thousands of digits) is worth nothing too, and noted (ignore): the
    record's other counts still count, and a sum of counts can never reach a size a float
    cannot hold (the dollars status shows)."""
    if type(value) is int:  # JSON's integers, the usual case (a bool's type is bool)
        if 0 < value <= MOST:
            return value
        if value == 0:
            return 0
    elif type(value) is float:
        if 0 <= value <= MOST:  # neither NaN nor infinite
            return int(value)
    elif value is None:
        return 0
    ignore("a count that is not a whole number from 0 to 10**15")
    return 0


# Two primes below 2**30: CPython divides a long by one machine digit fastest.
_PRIMES = ((1 << 30) - 35, (1 << 30) - 41)


def fingerprint(value):
    """A short stable hash of any JSON value: the guard keeps hashes, never transcript text.

    The text's bytes as one number modulo two 30-bit primes: two texts one byte apart never
    share one (the trailing 1 keeps trailing zero bytes apart). No zlib or hashlib, whose
    import costs a call 0.3-0.5 ms where they are shared libraries (pyenv's builds)."""
    if not isinstance(value, (bytes, str)):
        value = canonical(value)
    if isinstance(value, str):
        value = value.encode("utf-8", "replace")
    number = int.from_bytes(value + b"\x01", "little")
    return "".join(format(number % prime, "08x") for prime in _PRIMES)


def canonical(value):
    """jsonio.dumps(value, sort_keys=True) of a value from outside data; where it is nested
    nearly as deep as jsonio.loads reads (read higher up the stack than it is written here),
    a text that tells values apart as well, written without recursion."""
    try:
        return jsonio.dumps(value, sort_keys=True)
    except RecursionError:
        from .deep_values import flat  # rare: its class would cost every call 67k instructions

        return flat(value)


class Call:
    """One hook call, with only the fields the guard relies on, type-checked by the host."""

    __slots__ = (
        "agent",
        "cwd",
        "event",
        "failed",
        "host",
        "model",
        "outcome",
        "prompt_id",
        "session_id",
        "tool",
        "tool_input",
        "tool_use_id",
        "transcript_path",
    )

    def __init__(self, host, session_id, **fields):
        self.host = host
        self.session_id = path(session_id)
        self.event = fields.get("event", TOOL)
        self.transcript_path = path(fields.get("transcript_path"))
        self.cwd = path(fields.get("cwd"))
        self.agent = text(fields.get("agent")) or "main"
        self.tool = fields.get("tool") or ""
        self.tool_input = fields.get("tool_input")
        self.tool_use_id = text(fields.get("tool_use_id"))
        self.model = text(fields.get("model"))
        # Changes when the person sends a new prompt: that is the person's decision to go on.
        self.prompt_id = text(fields.get("prompt_id"))
        # For a RESULT: whether the tool failed, and a hash of what it returned.
        self.failed = bool(fields.get("failed"))
        self.outcome = fields.get("outcome")

    @property
    def command(self):
        """The shell command of a shell call, else None."""
        if self.tool != "Bash" or not isinstance(self.tool_input, dict):
            return None
        command = self.tool_input.get("command", self.tool_input.get("cmd"))
        if isinstance(command, list):
            command = " ".join(part for part in command if isinstance(part, str))
        return command if isinstance(command, str) else None


def tool_name(name, aliases):
    """The guard's name for a host's tool (Bash, Edit, Write, Agent, ...)."""
    if not isinstance(name, str):
        return ""
    return aliases.get(name, name)
