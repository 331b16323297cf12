"""The benchmark's sessions: one small generator per host, writing its session files as that host
does, record shapes and key order included (Claude Code 2.1.328, Codex 0.169, Copilot CLI
1.0.102, from the fixtures in tests/fixtures/).

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
import sys
import time

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


# -- Claude Code --------------------------------------------------------------------------------


class ClaudeWriter:
    """One Claude Code transcript file: responses of several rows, results, and what surrounds
    them (hook progress, attachments, file snapshots, API request logs), keys in 2.1.328's order."""

    SESSION = "b3a1c0de-0000-4000-8000-00000000beef"
    VERSION = "2.1.328"

    def __init__(self, rng, cwd, agent=None):
        self.rng, self.cwd, self.agent = rng, cwd, agent
        self.n = 0
        self.parent = None
        self.when = None  # a fixed time for appended records (today), else a counter

    def _uuid(self):
        self.n += 1
        return f"{self.n:08x}-{len(self.agent or ''):04x}-4000-8000-{self.n:012x}"

    def _tail(self, record, uuid):
        record.update(
            uuid=uuid,
            timestamp=self.when or stamp(self.n),
            userType="external",
            entrypoint="cli",
            cwd=self.cwd,
            sessionId=self.SESSION,
            version=self.VERSION,
            gitBranch="main",
        )
        self.parent = uuid
        return dumps(record)

    def _head(self):
        record = {"parentUuid": self.parent, "isSidechain": self.agent is not None}
        if self.agent:
            record["agentId"] = self.agent
        return record

    def usage(self, out):
        rng = self.rng
        return {
            "input_tokens": rng.randint(1, 8),
            "cache_creation_input_tokens": rng.randint(0, 4000),
            "cache_read_input_tokens": rng.randint(10_000, 150_000),
            "cache_creation": {
                "ephemeral_5m_input_tokens": 0,
                "ephemeral_1h_input_tokens": rng.randint(0, 4000),
            },
            "output_tokens": out,
            "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
            "service_tier": "standard",
            "inference_geo": "",
            "iterations": [],
            "speed": "standard",
        }

    def assistant(self, msg, model, block, usage, request):
        record = self._head()
        record["message"] = {
            "id": msg,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [block],
            "stop_reason": "tool_use" if block["type"] == "tool_use" else None,
            "stop_sequence": None,
            "usage": usage,
        }
        record.update(requestId=request, requestedModel=model, type="assistant")
        return self._tail(record, self._uuid())

    def api_request(self, request, model):
        return dumps(
            {
                "type": "api-request",
                "sessionId": self.SESSION,
                "id": request,
                "timestamp": self.when or stamp(self.n),
                "version": self.VERSION,
                "querySource": "repl_main_thread" if not self.agent else "agent",
                "params": {"model": model, "max_tokens": 32000, "thinking": {"type": "enabled"}},
                "requestDigest": f"{self.rng.getrandbits(128):032x}",
            }
        )

    def response(self, index, tool_id, command):
        """One API response: a thinking row, a text row, the tool_use row, one per content
        block, each with the response's final usage (as 2.1.328 writes them)."""
        rng = self.rng
        msg = f"msg_01{self.TAG}{index:016d}{self.agent or ''}"
        request = f"req_01{self.TAG}{index:016d}{self.agent or ''}"
        model = "claude-sonnet-4-6" if self.agent else "claude-opus-4-8"
        rows = [self.api_request(request, model)] if self.REQUEST_LOGS else []
        usage = self.usage(rng.randint(*self.OUTPUT))
        thinking_share, thinking_size, signature_size = self.THINKING
        if rng.random() < thinking_share:
            thinking = {
                "type": "thinking",
                "thinking": body(rng, *thinking_size),
                "signature": "Eq" + "A" * rng.randint(*signature_size),
            }
            rows.append(self.assistant(msg, model, thinking, usage, request))
        text_share, text_size = self.TEXT_BLOCK
        if rng.random() < text_share:
            text = {"type": "text", "text": body(rng, *text_size)}
            rows.append(self.assistant(msg, model, text, usage, request))
        block = {"type": "tool_use", "id": tool_id, "name": "Bash", "input": command}
        rows.append(self.assistant(msg, model, block, usage, request))
        return rows

    def result(self, tool_id, output, error=False):
        record = self._head()
        record.update(promptId="p-0001", type="user")
        block = {"tool_use_id": tool_id, "type": "tool_result", "content": output}
        if error:
            block["is_error"] = True
        record["message"] = {"role": "user", "content": [block]}
        source = self.parent
        uuid = self._uuid()
        record["toolUseResult"] = {
            "stdout": output,
            "stderr": "",
            "interrupted": False,
            "isImage": False,
        }
        record["sourceToolAssistantUUID"] = source
        return self._tail(record, uuid)

    def attachment(self):
        record = self._head()
        record["attachment"] = {
            "type": "edited_text_file",
            "filename": f"{self.cwd}/src/module.py",
            "snippet": body(self.rng, *self.SNIPPET),
        }
        record["type"] = "attachment"
        return self._tail(record, self._uuid())

    def snapshot(self):
        self.n += 1
        backups = {
            f"src/file{i}.py": {
                "backupFileName": f"{self.n:08x}@v{i}",
                "version": i,
                "backupTime": "2026-11-30T10:00:00.000Z",
            }
            for i in range(self.rng.randint(1, 12))
        }
        return dumps(
            {
                "type": "file-history-snapshot",
                "messageId": f"{self.n:08x}-snap",
                "snapshot": {
                    "messageId": f"{self.n:08x}-snap",
                    "trackedFileBackups": backups,
                    "timestamp": "2026-11-30T10:00:00.000Z",
                },
                "isSnapshotUpdate": False,
            }
        )

    # a turn's shape: its ids' tag, a tool result's size (a big one's share and size), and
    # every how many turns an attachment and a file snapshot come
    TAG, RESULT, BIG_SHARE, BIG = "Bench", (300, 12_000), 0.02, (100_000, 300_000)
    ATTACH_EVERY, SNAPSHOT_EVERY, SNIPPET = 5, 7, (500, 4000)
    # a response's: API request logs, its output tokens, the share of responses with a thinking
    # block (its size, its signature's) and with a text block (its size)
    REQUEST_LOGS, OUTPUT = True, (40, 2500)
    THINKING, TEXT_BLOCK = (0.7, (200, 3000), (300, 1200)), (0.3, (50, 800))

    def turn(self, index):
        """One tool call's worth of lines, in the order Claude Code writes them."""
        rng = self.rng
        tool_id = f"toolu_01{self.TAG}{index:016d}{self.agent or ''}"
        command = {"command": f"pytest -q tests/test_{index % 97}.py", "description": "Run tests"}
        lines = self.response(index, tool_id, command)
        big = rng.random() < self.BIG_SHARE
        output = body(rng, *self.BIG) if big else body(rng, *self.RESULT)
        lines.append(self.result(tool_id, output, error=rng.random() < 0.1))
        if index % self.ATTACH_EVERY == 0:
            lines.append(self.attachment())
        if index % self.SNAPSHOT_EVERY == 0:
            lines.append(self.snapshot())
        return lines


@host("claude")
class Claude(Transcripts):
    """`<project>/<session>.jsonl` and `<session>/subagents/agent-<id>.jsonl`."""

    MAIN = ("transcripts", f"{ClaudeWriter.SESSION}.jsonl")
    SUBAGENTS = ("transcripts", ClaudeWriter.SESSION, "subagents")
    AGENT, AGENT_FILE, SEED, SUB_SEED = "a{:016x}", "agent-{}.jsonl", 1, 100

    def writer(self, rng, project, agent=None):
        return ClaudeWriter(rng, project, agent)

    def outcome(self, writer, previous, step):
        return [writer.result(previous, f"step {step}\n" + body(writer.rng, 200, 3000))]

    def call(self, writer, index, step):
        tool_id = f"toolu_01Steady{index:016d}"
        payload = {
            "session_id": ClaudeWriter.SESSION,
            "permission_mode": "default",
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": f"echo {step}", "description": "Echo"},
            "tool_use_id": tool_id,
        }
        return tool_id, writer.response(index, tool_id, {"command": f"echo {step}"}), payload


class ClaudeRealWriter(ClaudeWriter):
    """Claude Code's record mix as published sessions show it (issue 31: 1.1 to 3.0 KB a line,
    against 6.1 for ClaudeWriter): a response's text and tool-use blocks on separate lines, a
    short thinking block now and then, tool results of a few KB (a large one rarely), an
    attachment every few records, no API request logs."""

    TAG, RESULT, BIG_SHARE, BIG = "Real", (100, 4_000), 0.01, (20_000, 60_000)
    ATTACH_EVERY, SNAPSHOT_EVERY, SNIPPET = 3, 9, (100, 1200)
    REQUEST_LOGS, OUTPUT = False, (40, 1200)
    THINKING, TEXT_BLOCK = (0.2, (100, 1200), (200, 600)), (0.6, (40, 600))


@host("claude-real")
class ClaudeReal(Claude):
    """Claude Code's session in the real record mix (ClaudeRealWriter): not a host of its own,
    measured with `--hosts claude-real` (its rows are Claude Code's calls)."""

    def writer(self, rng, project, agent=None):
        return ClaudeRealWriter(rng, project, agent)


# -- Codex --------------------------------------------------------------------------------------

# The usage fields Codex writes, in its order: the reader's own list.
sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "skill")
)
from runaway_guard.hosts.codex.rollout import _USAGE_FIELDS as _CODEX_USAGE  # noqa: E402


class CodexWriter:
    """One Codex rollout: session_meta, turn_context, calls, usage records, outputs."""

    ROOT = "01a22a39-0000-7000-8000-00000000beef"

    def __init__(self, rng, cwd, thread, root, model="gpt-5.5"):
        self.rng, self.cwd, self.thread, self.root, self.model = rng, cwd, thread, root, model
        self.ordinal = 0
        self.total = dict.fromkeys(_CODEX_USAGE, 0)
        self.turn_id = f"{thread[:-4]}t000"
        self.when = None

    def _line(self, kind, payload):
        self.ordinal += 1
        return dumps(
            {
                "timestamp": self.when or stamp(self.ordinal),
                "ordinal": self.ordinal,
                "type": kind,
                "payload": payload,
            }
        )

    def meta(self):
        payload = {
            "account_scoped": True,
            "session_id": self.root,
            "id": self.thread,
            "timestamp": "2026-11-30T00:00:00.000Z",
            "cwd": self.cwd,
            "originator": "codex_cli_rs",
            "cli_version": "0.169.0",
            "source": "cli" if self.thread == self.root else {"subagent": {}},
            "model_provider": "openai",
            "base_instructions": {"text": TEXT[:20_000]},
        }
        if self.thread != self.root:
            payload["parent_thread_id"] = self.root
        return self._line("session_meta", payload)

    def turn_context(self, index):
        self.turn_id = f"{self.thread[:-8]}{index:08x}"
        return self._line(
            "turn_context",
            {
                "turn_id": self.turn_id,
                "cwd": self.cwd,
                "approval_policy": "on-request",
                "model": self.model,
                "effort": "medium",
                "summary": "auto",
                "sandbox_policy": {"type": "workspace-write"},
            },
        )

    def call(self, index, call_id, command, output, exit_code):
        head = self.call_head(index, call_id, command)
        return head + self.call_tail(index, call_id, command, output, exit_code)

    def call_head(self, index, call_id, command):
        """What Codex writes before it runs the call's hook: the response and its usage."""
        rng = self.rng
        lines = [self.turn_context(index)] if index % 20 == 0 else []
        reasoning = {
            "type": "reasoning",
            "summary": [],
            "encrypted_content": "gAAAA" + "B" * rng.randint(500, 4000),
        }
        lines.append(self._line("response_item", reasoning))
        function_call = {
            "type": "function_call",
            "status": "completed",
            "name": "exec_command",
            "arguments": json.dumps({"cmd": command}),
            "call_id": call_id,
        }
        lines.append(self._line("response_item", function_call))
        usage = {
            "input_tokens": rng.randint(5_000, 150_000),
            "output_tokens": rng.randint(20, 3000),
        }
        usage["cached_input_tokens"] = usage["input_tokens"] * 9 // 10
        usage["cache_write_input_tokens"] = 0
        usage["reasoning_output_tokens"] = usage["output_tokens"] // 2
        usage["total_tokens"] = usage["input_tokens"] + usage["output_tokens"]
        usage = {key: usage[key] for key in _CODEX_USAGE}
        for key, value in usage.items():
            self.total[key] += value
        record = {
            "thread_id": self.thread,
            "turn_id": self.turn_id,
            "session_id": self.root,
            "response_id": f"resp_{self.thread[-12:]}{index:012d}",
            "usage": usage,
        }
        lines.append(self._line("token_usage_record", record))
        self.last_usage = usage
        return lines

    def call_tail(self, index, call_id, command, output, exit_code):
        """What Codex writes once the call ran: its outcome and the running token count."""
        lines = []
        item = {
            "type": "CommandExecution",
            "id": call_id,
            "command": ["/bin/bash", "-lc", command],
            "cwd": "file://" + self.cwd,
            "status": "completed" if exit_code == 0 else "failed",
            "aggregated_output": output,
            "exit_code": exit_code,
        }
        completed = {
            "type": "item_completed",
            "thread_id": self.thread,
            "turn_id": self.turn_id,
            "item": item,
        }
        lines.append(self._line("event_msg", completed))
        text = (
            f"Chunk ID: {index:06x}\nWall time: 0.1000 seconds\nProcess exited with code "
            f"{exit_code}\nOriginal token count: 99\nOutput:\n{output}"
        )
        result = {"type": "function_call_output", "call_id": call_id, "output": text}
        lines.append(self._line("response_item", result))
        info = {
            "total_token_usage": dict(self.total),
            "last_token_usage": self.last_usage,
            "model_context_window": 258400,
        }
        count = {
            "type": "token_count",
            "info": info,
            "rate_limits": {"limit_id": "codex", "primary": None, "secondary": None},
        }
        lines.append(self._line("event_msg", count))
        return lines

    def turn(self, index):
        rng = self.rng
        big = rng.random() < 0.02
        output = body(rng, 100_000, 300_000) if big else body(rng, 300, 12_000)
        call_id = f"call_{self.thread[-12:]}{index:012d}"
        return self.call(
            index, call_id, f"pytest -q t{index % 97}", output, int(rng.random() < 0.1)
        )


def _rollout_name(second, thread):
    return f"rollout-2026-11-30T10-{second // 60:02d}-{second % 60:02d}-{thread}.jsonl"


@host("codex")
class Codex:
    """`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`: the root's, one per subagent (their
    session_meta names the root), and a few of other sessions in the same day folder."""

    subagent_files = True

    def make(self, folder, size_mb, subagents):
        project = os.path.join(folder, "project")
        day = os.path.join(folder, "home", "sessions", "2026", "11", "30")
        os.makedirs(project, exist_ok=True)
        os.makedirs(day, exist_ok=True)
        root = CodexWriter.ROOT
        main = os.path.join(day, _rollout_name(0, root))
        writer = CodexWriter(random.Random(2), project, root, root)

        def lines_of(writer):
            def make_lines(index):
                head = [writer.meta(), writer.turn_context(0)] if index == 0 else []
                return head + writer.turn(index)

            return make_lines

        write_until(main, size_mb * MB, lines_of(writer))

        def subagent(number):
            thread = f"01a22a39-{number:04x}-7000-8000-{number:012x}"
            sub = CodexWriter(random.Random(200 + number), project, thread, root)
            return os.path.join(day, _rollout_name(1 + number, thread)), lines_of(sub)

        files = [main, *write_subagents(size_mb, subagents, subagent)]
        for number in range(4):  # other sessions' rollouts in the same day folder
            thread = f"01a22a39-ffff-7000-8000-{number:012x}"
            other = CodexWriter(random.Random(300 + number), project, thread, thread)
            path = os.path.join(day, _rollout_name(3000 + number, thread))
            append_lines(path, [other.meta(), *other.turn(0)])
        return {
            "files": files,
            "cwd": project,
            "ordinal": writer.ordinal,
            "total": writer.total,
            "env": {"CODEX_HOME": os.path.join(folder, "home")},
        }

    def __init__(self):
        self.writer = self.previous = None

    def step(self, info, step):
        root = CodexWriter.ROOT
        if self.writer is None:
            self.writer = CodexWriter(random.Random(20_000), info["cwd"], root, root)
            self.writer.ordinal = info["ordinal"]
            self.writer.total = dict(info["total"])
        writer = self.writer
        writer.when = now_stamp()
        index = 10_000_000 + step
        call_id = f"call_steady{index:012d}"
        lines = []
        if self.previous:
            done = f"echo {step - 1}"
            lines += writer.call_tail(index - 1, self.previous, done, f"step {step - 1}\n", 0)
        lines += writer.call_head(index, call_id, f"echo {step}")
        self.previous = call_id
        payload = {
            "session_id": root,
            "turn_id": f"{root[:-8]}00000000",
            "transcript_path": info["files"][0],
            "cwd": info["cwd"],
            "hook_event_name": "PreToolUse",
            "model": "gpt-5.5",
            "permission_mode": "default",
            "tool_name": "Bash",
            "tool_input": {"command": f"echo {step}"},
            "tool_use_id": call_id,
        }
        return appender(info["files"][0], lines), payload


# -- Copilot CLI --------------------------------------------------------------------------------


class CopilotWriter:
    """`events.jsonl`: per call a hook.start with its id, the call's start and completion, and
    per response an assistant message and a usage record; subagents' records in the same file."""

    SESSION = "7d2d0e8d-0000-4000-8000-00000000beef"

    def __init__(self, rng, cwd):
        self.rng, self.cwd = rng, cwd
        self.n = 0
        self.when = None

    def _line(self, kind, data, **rest):
        self.n += 1
        record = {"type": kind, "data": data, **rest}
        record.update(
            id=f"{self.n:08x}-0000-4000-8000-{self.n:012x}",
            timestamp=self.when or stamp(self.n),
            parentId=f"{self.n - 1:08x}-0000-4000-8000-{self.n - 1:012x}",
        )
        return dumps(record)

    def turn(self, index, agent=None, call_id=None, command=None, output=None):
        rng = self.rng
        call_id = call_id or f"call_{index:016x}{agent or ''}"
        command = command or {"command": f"pytest -q t{index % 97}", "description": "tests"}
        if output is None:
            big = rng.random() < 0.02
            output = body(rng, 100_000, 300_000) if big else body(rng, 300, 12_000)
        api_call = f"chatcmpl-{index:016x}{agent or ''}"
        extra = {"agentId": agent} if agent else {}
        parent = {"parentToolCallId": f"call_task{agent}"} if agent else {}
        message = {
            "messageId": f"m{index:016x}",
            "model": "gpt-5.5",
            "content": body(rng, 0, 600),
            "toolRequests": [
                {"toolCallId": call_id, "name": "bash", "arguments": command, "type": "function"}
            ],
            "interactionId": "i-0001",
            "turnId": str(index),
            "apiCallId": api_call,
            **parent,
        }
        inp = rng.randint(5_000, 150_000)
        usage = {
            "model": "gpt-5.5",
            "inputTokens": inp,
            "outputTokens": rng.randint(20, 3000),
            "cacheReadTokens": inp * 9 // 10,
            "cacheWriteTokens": 0,
            "reasoningTokens": 0,
            "cost": 0.0,
            "duration": 20,
            "initiator": "user",
            "isByok": True,
            "apiCallId": api_call,
            "accounting": {"sourceSessionId": self.SESSION, "usageId": api_call},
            "numToolCalls": 1,
            **parent,
        }
        hook_input = {
            "sessionId": self.SESSION,
            "cwd": self.cwd,
            "toolCalls": [{"id": call_id, "name": "bash", "args": command}],
        }
        hook = {"hookInvocationId": f"h{index:016x}", "hookType": "preToolUse", "input": hook_input}
        complete = {
            "toolCallId": call_id,
            "model": "gpt-5.5",
            "interactionId": "i-0001",
            "shellExecution": {"exitCode": int(rng.random() < 0.1)},
            "success": True,
            "result": {"content": output + "\n<shellId: 0 completed with exit code 0>"},
            **parent,
        }
        return [
            self._line("assistant.turn_start", {"turnId": str(index), "interactionId": "i-0001"}),
            self._line("assistant.message", message, **extra),
            self._line("session.usage_record", {"usage": usage}, **extra),
            self._line("hook.start", dict(hook, **parent), **extra),
            self._line("hook.end", {"hookInvocationId": hook["hookInvocationId"]}, **extra),
            self._line("tool.execution_start", {"toolCallId": call_id, **parent}, **extra),
            self._line("tool.execution_complete", complete, **extra),
            self._line("assistant.turn_end", {"turnId": str(index)}, **extra),
        ]


@host("copilot")
class Copilot:
    """`$COPILOT_HOME/session-state/<session>/events.jsonl`, subagents' records in it too (a
    subagent writes no file of its own: `subagents` of them take turns with the main agent)."""

    subagent_files = False

    def make(self, folder, size_mb, subagents):
        project = os.path.join(folder, "project")
        home = os.path.join(folder, "home")
        events = os.path.join(home, "session-state", CopilotWriter.SESSION, "events.jsonl")
        os.makedirs(project, exist_ok=True)
        os.makedirs(os.path.dirname(events), exist_ok=True)
        writer = CopilotWriter(random.Random(3), project)

        def make_lines(index):
            agent = f"{index % (subagents + 1):04x}" if subagents and index % 3 else None
            return writer.turn(index, agent=agent if agent != "0000" else None)

        write_until(events, size_mb * MB, make_lines)
        return {"files": [events], "cwd": project, "n": writer.n, "env": {"COPILOT_HOME": home}}

    def __init__(self):
        self.previous = None

    def step(self, info, step):
        writer, index = stepping(
            CopilotWriter(random.Random(30_000 + step), info["cwd"]), info, step
        )
        command = {"command": f"echo {step}", "description": "echo"}
        lines = []
        if self.previous:
            done = {"command": f"echo {step - 1}", "description": "echo"}
            turn = writer.turn(index - 1, call_id=self.previous, command=done, output=f"{step}\n")
            lines += turn[-2:]  # the previous call's completion and the end of its turn
        call_id = f"call_steady{index:012d}"
        # this call's response, its usage and its hook.start, as Copilot writes them before the
        # hook runs
        lines += writer.turn(index, call_id=call_id, command=command)[:4]
        self.previous = call_id
        payload = {
            "sessionId": CopilotWriter.SESSION,
            "timestamp": int(time.time() * 1000),
            "cwd": info["cwd"],
            "toolName": "bash",
            "toolArgs": command,
        }
        return appender(info["files"][0], lines), payload


# -- Gemini CLI ---------------------------------------------------------------------------------


class GeminiWriter:
    """One Gemini CLI chat file: each model message once when it is answered, and again whole
    once its tool call ran (with the call's result); `$set` lines between them."""

    SESSION = "d72b7869-0000-4000-8000-00000000beef"

    def __init__(self, rng, agent=None):
        self.rng, self.agent = rng, agent
        self.n = 0
        self.when = None

    def header(self):
        kind = "subagent" if self.agent else "main"
        return dumps(
            {
                "sessionId": self.SESSION,
                "projectHash": "860bccfb1105b325f47b9686b4e8d75b0a37ec08631e6c172cc570082ecc",
                "startTime": "2026-11-30T00:00:00.000Z",
                "lastUpdated": "2026-11-30T00:00:00.000Z",
                "kind": kind,
            }
        )

    def message(self, index):
        rng = self.rng
        self.n += 1
        inp = rng.randint(5_000, 150_000)
        return {
            "id": f"{index:016x}{self.agent or ''}",
            "timestamp": self.when or stamp(self.n),
            "type": "gemini",
            "content": body(rng, 0, 400),
            "thoughts": [],
            "tokens": {
                "input": inp,
                "output": rng.randint(20, 3000),
                "cached": inp * 9 // 10,
                "thoughts": rng.randint(0, 500),
                "tool": 0,
                "total": inp,
            },
            "model": "gemini-2.5-pro" if not self.agent else "gemini-2.5-flash",
        }

    def answered(self, message, call_id, command):
        return dumps(dict(message, toolCalls=[self.tool_call(call_id, command, None)]))

    def tool_call(self, call_id, command, output):
        call = {
            "id": call_id,
            "name": "run_shell_command",
            "args": {"command": command},
            "status": "executing" if output is None else "success",
            "timestamp": self.when or stamp(self.n),
            # a shell call that ran is described by its command; only one that never ran
            # (refused, invalid) carries the tool's own description, 1.2 KB (the fixtures)
            "description": command,
        }
        if output is not None:
            text = f"Command: {command}\nOutput: {output}"  # Gemini writes no "Exit Code: 0"
            response = {"id": call_id, "name": "run_shell_command", "response": {"output": text}}
            call["result"] = [{"functionResponse": response}]
            call["resultDisplay"] = output
        return call

    def set_updated(self):
        return dumps({"$set": {"lastUpdated": self.when or stamp(self.n)}})

    def turn(self, index, call_id=None, command=None, output=None):
        rng = self.rng
        call_id = call_id or f"run_shell_command_{index:016x}{self.agent or ''}"
        command = command or f"pytest -q t{index % 97}"
        if output is None:
            big = rng.random() < 0.02
            output = body(rng, 100_000, 300_000) if big else body(rng, 300, 12_000)
        message = self.message(index)
        done = dict(message, toolCalls=[self.tool_call(call_id, command, output)])
        return [dumps(message), self.set_updated(), dumps(done), self.set_updated()]


@host("gemini")
class Gemini(Transcripts):
    """`~/.gemini/tmp/<project>/chats/session-<time>-<id8>.jsonl`, and a subagent's
    `chats/<session id>/<agent id>.jsonl`."""

    CHATS = ("home", ".gemini", "tmp", "project", "chats")
    MAIN = (*CHATS, f"session-2026-11-30T00-00-{GeminiWriter.SESSION[:8]}.jsonl")
    SUBAGENTS = (*CHATS, GeminiWriter.SESSION)
    AGENT, AGENT_FILE, SEED, SUB_SEED = "a{:08x}-0000-4000-8000-000000000000", "{}.jsonl", 4, 400
    version = 1  # a call's description is its command

    def writer(self, rng, project, agent=None):
        return GeminiWriter(rng, agent)

    def turns(self, writer):
        def make_lines(index):
            return ([writer.header()] if index == 0 else []) + writer.turn(index)

        return make_lines

    def outcome(self, writer, previous, step):
        message, call_id, command = previous
        done = dict(message, toolCalls=[writer.tool_call(call_id, command, f"{step}\n")])
        return [dumps(done), writer.set_updated()]

    def call(self, writer, index, step):
        message = writer.message(index)
        call_id, command = f"run_shell_command_steady_{index}", f"echo {step}"
        lines = [dumps(message), writer.set_updated(), writer.answered(message, call_id, command)]
        payload = {
            "session_id": GeminiWriter.SESSION,
            "hook_event_name": "BeforeTool",
            "timestamp": now_stamp(),
            "tool_name": "run_shell_command",
            "tool_input": {"command": command},
        }
        return (message, call_id, command), lines, payload


# -- Qwen Code ----------------------------------------------------------------------------------


class QwenWriter:
    """One Qwen Code chat file: per response an `api_response` telemetry record and the
    assistant record with its function call; per call its tool_result."""

    SESSION = "0edd9bc4-0000-4000-8000-00000000beef"

    def __init__(self, rng, cwd, agent=None):
        self.rng, self.cwd, self.agent = rng, cwd, agent
        self.n = 0
        self.parent = None
        self.when = None

    def _record(self, kind, rest):
        self.n += 1
        uuid = f"{self.n:08x}-{len(self.agent or ''):04x}-4000-8000-{self.n:012x}"
        record = {
            "uuid": uuid,
            "parentUuid": self.parent,
            "sessionId": self.SESSION,
            "timestamp": self.when or stamp(self.n),
            "type": kind,
            "provenance": kind,
            "cwd": self.cwd,
            "version": "0.24.4",
            **rest,
        }
        self.parent = uuid
        return dumps(record)

    def response(self, index, call_id, command, agent=None):
        rng = self.rng
        inp = rng.randint(5_000, 150_000)
        out = rng.randint(20, 3000)
        event = {
            "event.name": "qwen-code.api_response",
            "event.timestamp": self.when or stamp(self.n),
            "response_id": f"chatcmpl-{index:016x}{agent or ''}",
            "model": "gpt-4.1-2025-04-14",
            "status_code": 200,
            "duration_ms": 678,
            "input_token_count": inp,
            "output_token_count": out,
            "cached_content_token_count": inp * 9 // 10,
            "thoughts_token_count": 0,
            "total_token_count": inp + out,
            "prompt_id": f"{self.SESSION}########0",
            "auth_type": "openai",
        }
        if agent:
            event["subagent_id"] = agent
        telemetry = {"subtype": "ui_telemetry", "systemPayload": {"uiEvent": event}}
        call = {"id": call_id, "name": "run_shell_command", "args": {"command": command}}
        assistant = {
            "model": "gpt-4.1",
            "message": {
                "role": "model",
                "parts": [{"text": body(rng, 0, 600)}, {"functionCall": call}],
            },
            "usageMetadata": {
                "promptTokenCount": inp,
                "candidatesTokenCount": out,
                "thoughtsTokenCount": 0,
                "totalTokenCount": inp + out,
                "cachedContentTokenCount": inp * 9 // 10,
            },
            "contextWindowSize": 131072,
        }
        return [self._record("system", telemetry), self._record("assistant", assistant)]

    def result(self, call_id, command, output):
        text = f"Command: {command}\nOutput: {output}\nExit Code: 0"
        response = {"id": call_id, "name": "run_shell_command", "response": {"output": text}}
        display = {"type": "shell_result", "exitCode": 0, "outcome": "completed", "output": output}
        rest = {
            "message": {"role": "user", "parts": [{"functionResponse": response}]},
            "toolCallResult": {"callId": call_id, "status": "success", "resultDisplay": display},
        }
        return self._record("tool_result", rest)

    def turn(self, index):
        rng = self.rng
        call_id = f"call_{index:016x}{self.agent or ''}"
        big = rng.random() < 0.02
        output = body(rng, 100_000, 300_000) if big else body(rng, 300, 12_000)
        command = f"pytest -q t{index % 97}"
        return [*self.response(index, call_id, command), self.result(call_id, command, output)]


@host("qwen")
class Qwen(Transcripts):
    """`~/.qwen/projects/<slug>/chats/<session>.jsonl` (every response's telemetry, the
    subagents' too) and `<slug>/subagents/<session>/agent-<id>.jsonl`."""

    MAIN = ("home", ".qwen", "projects", "-project", "chats", f"{QwenWriter.SESSION}.jsonl")
    SUBAGENTS = ("home", ".qwen", "projects", "-project", "subagents", QwenWriter.SESSION)
    AGENT, AGENT_FILE = "general-purpose-call_{:012x}", "agent-{}.jsonl"
    SEED, SUB_SEED = 5, 500

    def writer(self, rng, project, agent=None):
        return QwenWriter(rng, project, agent)

    def outcome(self, writer, previous, step):
        return [writer.result(previous, f"echo {step - 1}", f"{step}\n")]

    def call(self, writer, index, step):
        call_id = f"call_steady{index:012d}"
        payload = {
            "session_id": QwenWriter.SESSION,
            "hook_event_name": "PreToolUse",
            "timestamp": now_stamp(),
            "permission_mode": "yolo",
            "prompt_id": f"{QwenWriter.SESSION}########0",
            "tool_name": "run_shell_command",
            "tool_input": {"command": f"echo {step}"},
            "tool_use_id": f"toolu_{index}",
            "tool_call_id": call_id,
        }
        return call_id, writer.response(index, call_id, f"echo {step}"), payload


# -- OpenCode -----------------------------------------------------------------------------------

_OPENCODE_SCHEMA = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    *("tests", "fixtures", "opencode", "schema.sql"),
)
_OPENCODE_INSERT = {
    "message": "INSERT INTO message (id, session_id, time_created, time_updated, data)"
    " VALUES (?, ?, ?, ?, ?)",
    "part": "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data)"
    " VALUES (?, ?, ?, ?, ?, ?)",
}


@host("opencode")
class OpenCode:
    """OpenCode 1.18's SQLite database (its tables and indexes from
    tests/fixtures/opencode/schema.sql): a root session and `subagents` child sessions; per
    model step an assistant message with its cost and tokens, and its parts (step-start, the
    tool call with its output, step-finish). The guard is run as the plugin runs it
    (bench/opencode_plugin_bench.py times the plugin)."""

    subagent_files = False
    version = 1  # made with OpenCode's indexes
    ROOT = "ses_root"

    @staticmethod
    def _step_rows(rng, index, session, clock, call_id, command, output):
        tokens = {
            "input": rng.randint(5_000, 150_000),
            "output": rng.randint(20, 3000),
            "reasoning": rng.randint(0, 500),
            "cache": {"read": rng.randint(0, 100_000), "write": 0},
        }
        message = {
            "role": "assistant",
            "cost": round(rng.uniform(0.001, 0.2), 6),
            "tokens": tokens,
            "modelID": "claude-sonnet-4-6",
            "providerID": "anthropic",
            "time": {"created": clock, "completed": clock + 500},
        }
        state = {
            "status": "completed",
            "input": {"command": command},
            "output": output,
            "metadata": {"exit": 0, "output": output},
        }
        tool = {"type": "tool", "tool": "bash", "callID": call_id, "state": state}
        parts = [{"type": "step-start"}, tool, {"type": "step-finish", "tokens": tokens}]
        msg = f"msg_{index:012d}"
        rows = [("message", (msg, session, clock, clock + 500, json.dumps(message)))]
        for number, part in enumerate(parts):
            row = (f"prt_{index:012d}_{number}", msg, session, clock, clock + 500, json.dumps(part))
            rows.append(("part", row))
        return rows

    def make(self, folder, size_mb, subagents):
        import sqlite3

        project = os.path.join(folder, "project")
        os.makedirs(project, exist_ok=True)
        path = os.path.join(folder, "opencode.db")
        db = sqlite3.connect(path)
        with open(_OPENCODE_SCHEMA, encoding="utf-8") as handle:
            db.executescript(handle.read())
        db.execute("PRAGMA journal_mode = WAL")
        sessions = [self.ROOT] + [f"ses_child{number:04d}" for number in range(subagents)]
        for session in sessions:
            db.execute(
                "INSERT INTO session (id, project_id, parent_id, slug, directory, title,"
                " version, time_created, time_updated)"
                " VALUES (?, 'global', ?, 's', ?, 't', '1.18.33', 1, 1)",
                (session, None if session == self.ROOT else self.ROOT, project),
            )
        rng = random.Random(6)
        clock, index, written = 1796153274877, 0, 0
        while written < size_mb * MB:
            rows = []
            for _ in range(50):
                clock += 700
                session = sessions[0 if index % 3 or not subagents else 1 + index % subagents]
                big = rng.random() < 0.02
                output = body(rng, 100_000, 300_000) if big else body(rng, 300, 12_000)
                command = f"pytest -q t{index % 97}"
                rows += self._step_rows(
                    rng, index, session, clock, f"call_{index}", command, output
                )
                index += 1
            for table, row in rows:
                db.execute(_OPENCODE_INSERT[table], row)
                written += len(row[-1])
            db.commit()
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.close()
        return {"files": [path], "cwd": project, "clock": clock, "env": {}}

    def __init__(self):
        self.previous = None
        self.db = None  # OpenCode keeps its database open all session: its WAL index stays

    def step(self, info, step):
        import sqlite3

        rng = random.Random(60_000 + step)
        index = 10_000_000 + step
        clock = int(time.time() * 1000)
        call_id, command = f"call_steady{index}", f"echo {step}"
        rows = self._step_rows(rng, index, self.ROOT, clock, call_id, command, f"{step}\n")
        previous, self.previous = self.previous, call_id
        path = info["files"][0]

        def write():
            if self.db is None:
                self.db = sqlite3.connect(path, timeout=5, check_same_thread=False)
            # this step's message; its tool part (the previous call's, finished) comes with the
            # next step: OpenCode writes a call's part once it ran
            self.db.execute(_OPENCODE_INSERT["message"], rows[0][1])
            if previous:
                part = rows[2][1]
                data = json.loads(part[-1])
                data["callID"] = previous
                self.db.execute(_OPENCODE_INSERT["part"], (*part[:-1], json.dumps(data)))
            self.db.commit()

        payload = {
            "runaway_guard_plugin": "opencode",
            "hook_event_name": "tool.execute.before",
            "session_id": self.ROOT,
            "agent_session_id": self.ROOT,
            "prompt_id": None,
            "cwd": info["cwd"],
            "database": path,
            "tool_name": "bash",
            "tool_input": {"command": command},
            "call_id": call_id,
        }
        return write, payload

    @staticmethod
    def undo(info):
        import sqlite3

        db = sqlite3.connect(info["files"][0], timeout=5)
        try:
            db.execute("DELETE FROM message WHERE id >= 'msg_000010000000'")
            db.execute("DELETE FROM part WHERE id >= 'prt_000010000000'")
            db.commit()
        finally:
            db.close()
