"""The benchmark's sessions: one small generator per host (a module each in bench/sessions/),
writing its session files as that host does, record shapes and key order included (Claude Code
2.1.328, Codex 0.169, Copilot CLI 1.0.102, from the fixtures in tests/fixtures/). What the
generators share is here.

A generator is a class registered in GENERATORS under the host's NAME, with:

- subagent_files: whether each subagent writes a file of its own;
- make(folder, size_mb, subagents) -> info: write a session of about size_mb MB (the main file;
  each of `subagents` subagent files is 1 % of it) under folder; info is a JSON-able dict with
  at least "files" (every file written, the main one first) and "env" (what the hook's
  environment needs besides the state dir, e.g. a host's home);
- step(info, n) -> (write, payload): write() writes what the host writes before the hook of
  its n-th call runs (the previous call's outcome, then the response that makes this call, with
  its usage), and payload is the hook payload of that call. The bench calls write() at once or
  late. Records carry today's time, so each call also updates the day's spend. A generator
  remembers its previous call: one instance per series of calls;
- undo(info), optional: take back what the steps wrote (default: truncate each file to its
  size when made).

Standard library only; deterministic (seeded) except for the time of appended records.
"""

import json
import os
import random
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repo
MB = 1 << 20
SUBAGENT_SHARE = 0.01  # each subagent file is 1 % of the main file
GENERATORS = {}

_rng = random.Random(1234)
_WORDS = (
    *("def", "return", "self", "import", "from", "the", "file", "line", "error", "test"),
    *("value", "path", "state", "read", "write", "guard", "json", "usage", "token", "model"),
    *("agent", "call", "result", "output", "input", "cache", "request", "response"),
    *("session", "tool", "if", "else", "for", "while", "try", "except", "class", "with"),
    *("open", "close", "os", "sys", "time", "None", "True", "False"),
)
TEXT = " ".join(_rng.choice(_WORDS) for _ in range(200_000))
TEXT = TEXT.replace(" self ", "\n    self ").replace(" def ", "\n\ndef ")


def body(rng, low, high):
    size = rng.randint(low, high)
    start = rng.randrange(0, len(TEXT) - size - 1)
    return TEXT[start : start + size]


WRITTEN = 1796040000  # 2026-11-30T12:00:00Z, the day the records are stamped with (stamp)


def stamp(n):
    return f"2026-11-30T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d}.000Z"


def now_stamp():
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())


def dumps(record):
    return json.dumps(record, separators=(",", ":"))


def write_until(path, target, make_lines):
    """Write generated lines to path until it holds at least target bytes; the turns written."""
    written = index = 0
    with open(path, "w", encoding="utf-8") as handle:
        while written < target:
            text = "\n".join(make_lines(index)) + "\n"
            handle.write(text)
            written += len(text)
            index += 1
    return index


def layout(folder, main, subagents):
    """(project folder, main file, subagents' folder) under folder, the folders made; main and
    subagents are paths relative to folder, as tuples of names."""
    project = os.path.join(folder, "project")
    main = os.path.join(folder, *main)
    subagents = os.path.join(folder, *subagents)
    for path in (project, os.path.dirname(main), subagents):
        os.makedirs(path, exist_ok=True)
    return project, main, subagents


def stepping(writer, info, step):
    """The writer set up for step `step` of a series: numbered after the session's records,
    stamped now; and the index of the step's records."""
    writer.n = info["n"] + 20 * step
    writer.when = now_stamp()
    return writer, 10_000_000 + step


def date_subagents(info):
    """Date the subagents' files as the session's records are: a steady call of the bench finds
    them unchanged, as it finds a real session's subagents that finished. The guard looks at a
    file not written for a minute once a second, not every call (hosts/_files.py)."""
    for path in info["files"][1:]:
        os.utime(path, (WRITTEN, WRITTEN))


def write_subagents(size_mb, subagents, subagent):
    """Each subagent's file, 1 % of the main file: subagent(number) -> (path, make_lines)."""
    paths = []
    for number in range(subagents):
        path, make_lines = subagent(number)
        write_until(path, int(size_mb * MB * SUBAGENT_SHARE), make_lines)
        paths.append(path)
    return paths


def append_lines(path, lines):
    with open(path, "a", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")


def appender(path, lines):
    return lambda: append_lines(path, lines)


def host(name):
    def register(cls):
        GENERATORS[name] = cls
        cls.name = name
        return cls

    return register


class Transcripts:
    """A host that writes a main file and one file per subagent: the layout and writer are
    class attributes (paths relative to the session's folder, as tuples of names)."""

    subagent_files = True
    MAIN = SUBAGENTS = ()
    AGENT = AGENT_FILE = "{}"
    SEED = SUB_SEED = 0

    def __init__(self):
        self.previous = None

    def writer(self, rng, project, agent=None):
        raise NotImplementedError

    def turns(self, writer):
        """The function write_until calls for each turn of a file."""
        return writer.turn

    def step(self, info, step):
        writer, index = stepping(
            self.writer(random.Random(self.SEED * 10_000 + step), info["cwd"]), info, step
        )
        lines = self.outcome(writer, self.previous, step) if self.previous else []
        self.previous, call_lines, payload = self.call(writer, index, step)
        payload.update(transcript_path=info["files"][0], cwd=info["cwd"])
        return appender(info["files"][0], lines + call_lines), payload

    def outcome(self, writer, previous, step):
        """The lines that end the previous call (previous is what call() returned for it)."""
        raise NotImplementedError

    def call(self, writer, index, step):
        """(what outcome() needs later, the lines of the response making the call, its payload
        without transcript_path and cwd)."""
        raise NotImplementedError

    def make(self, folder, size_mb, subagents):
        project, main, subs = layout(folder, self.MAIN, self.SUBAGENTS)
        writer = self.writer(random.Random(self.SEED), project)
        write_until(main, size_mb * MB, self.turns(writer))

        def subagent(number):
            agent = self.AGENT.format(number)
            sub = self.writer(random.Random(self.SUB_SEED + number), project, agent)
            return os.path.join(subs, self.AGENT_FILE.format(agent)), self.turns(sub)

        files = [main, *write_subagents(size_mb, subagents, subagent)]
        return {"files": files, "cwd": project, "n": writer.n, "env": {}}
