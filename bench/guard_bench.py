#!/usr/bin/env python3
"""How much one tool call pays for runaway-guard: steady state, cold first call, peak memory.

    python3 bench/guard_bench.py [--sizes 100,500] [--calls 30] [--quick]

Generates (once; reused while the sizes match) Claude Code and Codex sessions under
bench/.data/ in the shapes both hosts write: a main transcript of each size with 36 subagent
files beside it (Claude Code: `<session>/subagents/agent-<id>.jsonl`; Codex: subagent rollouts
in the same day folder, their `session_meta.session_id` the root's). Then, with this
interpreter (sys.executable) and the hook command's form (`python -I -S guard.py`), it measures:

- bare: `python -c pass` and `python -I -S -c pass` (the floor every hook pays);
- cold: the first call on the whole session with no state (the page cache is warm: the files
  were just written or read, as a live session's are);
- steady: one call after the host wrote what it writes before the hook runs (the previous call's
  outcome, then the response making this call, with its usage), the state warm; the median of
  --calls calls;
- late: the same records written only 50 ms after the hook started, as Claude Code does (it
  flushes every 100 ms) when the model answers at once: the guard waits for them;
- peak memory: ru_maxrss of each guard process alone (os.wait4 gives one child's usage);
- steady with a team configured (RUNAWAY_GUARD_TEAM and both server URLs, team and person caps
  set, the team's figures cached: the hook reads them and starts no refresh while they are
  fresh), interleaved call by call with the steady calls without, against a stand-in for the
  Pushgateway and Prometheus on 127.0.0.1; its ratio to the steady call without a team.

It prints a table with ratios against both bare forms and PASS/FAIL against the targets
(steady, with or without a team, <= 1.5x bare `python -c pass`; a team adds <= 10 % to the
steady call; late <= the write + 50 ms; cold <= 1.5 s for 100 MB, <= 6 s for 500 MB; peak
memory <= 64 MB). It always exits 0: it is a report. Standard library only.
"""

import argparse
import http.server
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
GUARD = os.path.join(ROOT, "skill", "guard.py")
DATA = os.path.join(HERE, ".data")
SUBAGENTS = 36
SUBAGENT_SHARE = 0.01  # each subagent file is 1% of the main transcript's size
GEN_VERSION = 3  # bump when the generators change: old data is regenerated
MB = 1 << 20

STEADY_FACTOR = 1.5
TEAM_FACTOR = 1.1  # a team configured, against the same steady call without
COLD_LIMIT = {100: 1.5, 500: 6.0}
MEMORY_LIMIT_MB = 64
# The late calls: the host writes the call LATE_S after its hook started; the guard must answer
# within LATE_MARGIN_S of that write.
LATE_S, LATE_CALLS, LATE_MARGIN_S = 0.05, 10, 0.05

# -- text for bodies: deterministic, cheap to slice --------------------------------------------

_rng = random.Random(1234)
_WORDS = [
    "def",
    "return",
    "self",
    "import",
    "from",
    "the",
    "file",
    "line",
    "error",
    "test",
    "value",
    "path",
    "state",
    "read",
    "write",
    "guard",
    "json",
    "usage",
    "token",
    "model",
    "agent",
    "call",
    "result",
    "output",
    "input",
    "cache",
    "request",
    "response",
    "session",
    "tool",
    "if",
    "else",
    "for",
    "while",
    "try",
    "except",
    "class",
    "with",
    "open",
    "close",
    "os",
    "sys",
    "time",
    "None",
    "True",
    "False",
]
TEXT = " ".join(_rng.choice(_WORDS) for _ in range(200_000))
TEXT_LINES = TEXT.replace(" self ", "\n    self ").replace(" def ", "\n\ndef ")


def body(rng, low, high, text=TEXT_LINES):
    size = rng.randint(low, high)
    start = rng.randrange(0, len(text) - size - 1)
    return text[start : start + size]


def stamp(n):
    return f"2026-11-30T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d}.000Z"


def dumps(record):
    return json.dumps(record, separators=(",", ":"))


# -- Claude Code --------------------------------------------------------------------------------

CLAUDE_SESSION = "b3a1c0de-0000-4000-8000-00000000beef"
CLAUDE_VERSION = "2.1.328"


class ClaudeWriter:
    """Writes one Claude Code transcript file: responses, results, and the records around them."""

    def __init__(self, rng, cwd, agent=None):
        self.rng = rng
        self.cwd = cwd
        self.agent = agent
        self.n = 0
        self.parent = None

    def _base(self, kind):
        self.n += 1
        uuid = f"{self.n:08x}-{len(self.agent or ''):04x}-4000-8000-{self.n:012x}"
        record = {
            "parentUuid": self.parent,
            "isSidechain": self.agent is not None,
            "type": kind,
            "uuid": uuid,
            "timestamp": stamp(self.n),
            "userType": "external",
            "entrypoint": "cli",
            "cwd": self.cwd,
            "sessionId": CLAUDE_SESSION,
            "version": CLAUDE_VERSION,
            "gitBranch": "main",
        }
        if self.agent:
            record["agentId"] = self.agent
        self.parent = uuid
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
        record = self._base("assistant")
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
        record["requestId"] = request
        return dumps(record)

    def response(self, index, tool_id, command):
        """One API response: a thinking row (placeholder output count) and a tool_use row."""
        rng = self.rng
        msg = f"msg_01Bench{index:016d}{self.agent or ''}"
        request = f"req_01Bench{index:016d}{self.agent or ''}"
        model = "claude-sonnet-4-6" if self.agent else "claude-opus-4-8"
        usage = self.usage(rng.randint(1, 30))
        rows = []
        if rng.random() < 0.7:
            thinking = {
                "type": "thinking",
                "thinking": body(rng, 200, 3000),
                "signature": "Eq" + "A" * rng.randint(300, 1200),
            }
            rows.append(self.assistant(msg, model, thinking, usage, request))
        if rng.random() < 0.3:
            text = {"type": "text", "text": body(rng, 50, 800)}
            rows.append(self.assistant(msg, model, text, usage, request))
        final = dict(usage, output_tokens=rng.randint(40, 2500))
        block = {"type": "tool_use", "id": tool_id, "name": "Bash", "input": command}
        rows.append(self.assistant(msg, model, block, final, request))
        return rows

    def result(self, tool_id, output, error=False):
        record = self._base("user")
        block = {"tool_use_id": tool_id, "type": "tool_result", "content": output}
        if error:
            block["is_error"] = True
        record["message"] = {"role": "user", "content": [block]}
        record["toolUseResult"] = {
            "stdout": output,
            "stderr": "",
            "interrupted": False,
            "isImage": False,
        }
        record["sourceToolAssistantUUID"] = self.parent
        return dumps(record)

    def progress(self, tool_id):
        record = self._base("progress")
        record["data"] = {
            "type": "hook_progress",
            "hookEvent": "PreToolUse",
            "hookName": "PreToolUse:Bash",
            "command": "'/usr/bin/python3' -I -S '/home/u/.claude/skills/runaway-guard/skill/"
            "guard.py' || true",
        }
        record["parentToolUseID"] = tool_id
        record["toolUseID"] = tool_id
        return dumps(record)

    def attachment(self):
        record = self._base("attachment")
        record["attachment"] = {
            "type": "edited_text_file",
            "filename": f"{self.cwd}/src/module.py",
            "snippet": body(self.rng, 500, 4000),
        }
        return dumps(record)

    def snapshot(self):
        self.n += 1
        return dumps(
            {
                "type": "file-history-snapshot",
                "messageId": f"{self.n:08x}-snap",
                "snapshot": {
                    "messageId": f"{self.n:08x}-snap",
                    "trackedFileBackups": {
                        f"src/file{i}.py": {
                            "backupFileName": f"{self.n:08x}@v{i}",
                            "version": i,
                            "backupTime": "2026-11-30T10:00:00.000Z",
                        }
                        for i in range(self.rng.randint(1, 12))
                    },
                    "timestamp": "2026-11-30T10:00:00.000Z",
                },
                "isSnapshotUpdate": False,
            }
        )

    def turn(self, index):
        """One tool call's worth of lines, in the order Claude Code writes them."""
        rng = self.rng
        tool_id = f"toolu_01Bench{index:016d}{self.agent or ''}"
        command = {"command": f"pytest -q tests/test_{index % 97}.py", "description": "Run tests"}
        lines = self.response(index, tool_id, command)
        lines.append(self.progress(tool_id))
        lines.append(self.progress(tool_id))
        big = rng.random() < 0.02
        output = body(rng, 100_000, 300_000) if big else body(rng, 300, 12_000)
        lines.append(self.result(tool_id, output, error=rng.random() < 0.1))
        if index % 5 == 0:
            lines.append(self.attachment())
        if index % 7 == 0:
            lines.append(self.snapshot())
        return lines


def write_until(path, target, make_lines):
    """Append generated lines to path until it holds at least target bytes."""
    written = 0
    index = 0
    with open(path, "w", encoding="utf-8") as handle:
        while written < target:
            chunk = []
            for _ in range(20):
                chunk.extend(make_lines(index))
                index += 1
            text = "\n".join(chunk) + "\n"
            handle.write(text)
            written += len(text)
    return index


def make_claude(folder, size_mb):
    project = os.path.join(folder, "project")
    transcripts = os.path.join(folder, "transcripts")
    os.makedirs(project, exist_ok=True)
    os.makedirs(transcripts, exist_ok=True)
    main = os.path.join(transcripts, f"{CLAUDE_SESSION}.jsonl")
    writer = ClaudeWriter(random.Random(1), project)
    write_until(main, size_mb * MB, writer.turn)
    subagents = os.path.join(transcripts, CLAUDE_SESSION, "subagents")
    os.makedirs(subagents, exist_ok=True)
    for number in range(SUBAGENTS):
        agent = f"a{number:016x}"
        sub = ClaudeWriter(random.Random(100 + number), project, agent)
        path = os.path.join(subagents, f"agent-{agent}.jsonl")
        write_until(path, int(size_mb * MB * SUBAGENT_SHARE), sub.turn)
    return {"main": main, "cwd": project, "session": CLAUDE_SESSION, "writer_n": writer.n}


class ClaudeSteps:
    """Tool calls as Claude Code writes them: the previous call's result, then the response that
    makes the new call (its rows and the hook's progress record); and the new call's payload."""

    def __init__(self, info):
        self.info = info
        self.previous = None

    def next(self, step):
        info = self.info
        writer = ClaudeWriter(random.Random(10_000 + step), info["cwd"])
        writer.n = info["writer_n"] + 10 * step
        index = 10_000_000 + step
        tool_id = f"toolu_01Steady{index:016d}"
        lines = []
        if self.previous:
            output = f"step {step}\n" + body(writer.rng, 200, 3000)
            lines.append(writer.result(self.previous, output))
        lines += writer.response(index, tool_id, {"command": f"echo {step}"})
        lines.append(writer.progress(tool_id))
        self.previous = tool_id
        payload = {
            "session_id": info["session"],
            "transcript_path": info["main"],
            "cwd": info["cwd"],
            "permission_mode": "default",
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": f"echo {step}", "description": "Echo"},
            "tool_use_id": tool_id,
        }
        return lines, payload


# -- Codex --------------------------------------------------------------------------------------

CODEX_ROOT = "01a22a39-0000-7000-8000-00000000beef"
BASE_INSTRUCTIONS = TEXT[:20_000]


class CodexWriter:
    """Writes one Codex rollout: session_meta, turn_context, calls, usage records, outputs."""

    def __init__(self, rng, cwd, thread, root, model="gpt-5.5"):
        self.rng = rng
        self.cwd = cwd
        self.thread = thread
        self.root = root
        self.model = model
        self.ordinal = 0
        self.total = dict.fromkeys(
            (
                "input_tokens",
                "cached_input_tokens",
                "cache_write_input_tokens",
                "output_tokens",
                "reasoning_output_tokens",
                "total_tokens",
            ),
            0,
        )
        self.turn_id = f"{thread[:-4]}t000"

    def _line(self, kind, payload):
        self.ordinal += 1
        return dumps(
            {
                "timestamp": stamp(self.ordinal),
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
            "base_instructions": {"text": BASE_INSTRUCTIONS},
        }
        if self.thread != self.root:
            payload["parent_thread_id"] = self.root
        return [self._line("session_meta", payload)]

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
        return self.call_head(index, call_id, command) + self.call_tail(
            index, call_id, command, output, exit_code
        )

    def call_head(self, index, call_id, command):
        """What Codex writes before it runs the call's hook: the response and its usage."""
        rng = self.rng
        lines = []
        if index % 20 == 0:
            lines.append(self.turn_context(index))
        lines.append(
            self._line(
                "response_item",
                {
                    "type": "reasoning",
                    "summary": [],
                    "encrypted_content": "gAAAA" + "B" * rng.randint(500, 4000),
                },
            )
        )
        lines.append(
            self._line(
                "response_item",
                {
                    "type": "function_call",
                    "status": "completed",
                    "name": "exec_command",
                    "arguments": json.dumps({"cmd": command}),
                    "call_id": call_id,
                },
            )
        )
        usage = {
            "input_tokens": rng.randint(5_000, 150_000),
            "cached_input_tokens": 0,
            "cache_write_input_tokens": 0,
            "output_tokens": rng.randint(20, 3000),
            "reasoning_output_tokens": 0,
        }
        usage["cached_input_tokens"] = usage["input_tokens"] * 9 // 10
        usage["reasoning_output_tokens"] = usage["output_tokens"] // 2
        usage["total_tokens"] = usage["input_tokens"] + usage["output_tokens"]
        for key, value in usage.items():
            self.total[key] += value
        self.last_usage = usage
        lines.append(
            self._line(
                "token_usage_record",
                {
                    "thread_id": self.thread,
                    "turn_id": self.turn_id,
                    "session_id": self.root,
                    "response_id": f"resp_{self.thread[-12:]}{index:012d}",
                    "usage": usage,
                    "thread_token_usage": dict(self.total),
                },
            )
        )
        return lines

    def call_tail(self, index, call_id, command, output, exit_code):
        """What Codex writes once the call ran: its outcome and the running token count."""
        lines = []
        lines.append(
            self._line(
                "event_msg",
                {
                    "type": "item_completed",
                    "thread_id": self.thread,
                    "turn_id": self.turn_id,
                    "item": {
                        "type": "CommandExecution",
                        "id": call_id,
                        "command": ["/bin/bash", "-lc", command],
                        "cwd": "file://" + self.cwd,
                        "status": "completed" if exit_code == 0 else "failed",
                        "aggregated_output": output,
                        "exit_code": exit_code,
                    },
                },
            )
        )
        lines.append(
            self._line(
                "response_item",
                {
                    "type": "function_call_output",
                    "call_id": call_id,
                    "output": f"Chunk ID: {index:06x}\nWall time: 0.1000 seconds\n"
                    f"Process exited with code {exit_code}\nOriginal token count: 99\n"
                    f"Output:\n{output}",
                },
            )
        )
        lines.append(
            self._line(
                "event_msg",
                {
                    "type": "token_count",
                    "info": {
                        "total_token_usage": dict(self.total),
                        "last_token_usage": self.last_usage,
                        "model_context_window": 258400,
                    },
                    "rate_limits": {"limit_id": "codex", "primary": None, "secondary": None},
                },
            )
        )
        return lines

    def turn(self, index):
        rng = self.rng
        big = rng.random() < 0.02
        output = body(rng, 100_000, 300_000) if big else body(rng, 300, 12_000)
        call_id = f"call_{self.thread[-12:]}{index:012d}"
        return self.call(
            index, call_id, f"pytest -q t{index % 97}", output, int(rng.random() < 0.1)
        )


def rollout_name(second, thread):
    return f"rollout-2026-11-30T10-00-{second:02d}-{thread}.jsonl"


def make_codex(folder, size_mb):
    project = os.path.join(folder, "project")
    day = os.path.join(folder, "home", "sessions", "2026", "11", "30")
    os.makedirs(project, exist_ok=True)
    os.makedirs(day, exist_ok=True)
    main = os.path.join(day, rollout_name(0, CODEX_ROOT))
    writer = CodexWriter(random.Random(2), project, CODEX_ROOT, CODEX_ROOT)

    def main_lines(index):
        head = [*writer.meta(), writer.turn_context(0)] if index == 0 else []
        return head + writer.turn(index)

    write_until(main, size_mb * MB, main_lines)
    for number in range(SUBAGENTS):
        thread = f"01a22a39-{number:04x}-7000-8000-0000000000{number:02x}"
        sub = CodexWriter(random.Random(200 + number), project, thread, CODEX_ROOT)

        def sub_lines(index, sub=sub):
            head = [*sub.meta(), sub.turn_context(0)] if index == 0 else []
            return head + sub.turn(index)

        path = os.path.join(day, rollout_name(1 + number, thread))
        write_until(path, int(size_mb * MB * SUBAGENT_SHARE), sub_lines)
    for number in range(4):  # other sessions' rollouts in the same day folder
        thread = f"01a22a39-ffff-7000-8000-0000000000{number:02x}"
        other = CodexWriter(random.Random(300 + number), project, thread, thread)
        with open(os.path.join(day, rollout_name(50 + number, thread)), "w") as handle:
            handle.write("\n".join(other.meta() + other.turn(0)) + "\n")
    return {"main": main, "cwd": project, "session": CODEX_ROOT, "ordinal": writer.ordinal}


class CodexSteps:
    """Tool calls as Codex writes them: the previous call's outcome, then the response with the
    new call and its usage (Codex writes these before the hook runs); and the call's payload."""

    def __init__(self, info):
        self.info = info
        self.writer = CodexWriter(random.Random(20_000), info["cwd"], CODEX_ROOT, CODEX_ROOT)
        self.writer.ordinal = info["ordinal"]
        self.previous = None

    def next(self, step):
        writer = self.writer
        index = 10_000_000 + step
        call_id = f"call_steady{index:012d}"
        lines = []
        if self.previous:
            done = f"echo {step - 1}"
            lines += writer.call_tail(index - 1, self.previous, done, f"step {step - 1}\n", 0)
        lines += writer.call_head(index, call_id, f"echo {step}")
        self.previous = call_id
        payload = {
            "session_id": CODEX_ROOT,
            "turn_id": f"{CODEX_ROOT[:-8]}00000000",
            "transcript_path": self.info["main"],
            "cwd": self.info["cwd"],
            "hook_event_name": "PreToolUse",
            "model": "gpt-5.5",
            "permission_mode": "default",
            "tool_name": "Bash",
            "tool_input": {"command": f"echo {step}"},
            "tool_use_id": call_id,
        }
        return lines, payload


HOSTS = {"claude": (make_claude, ClaudeSteps), "codex": (make_codex, CodexSteps)}


# -- data on disk, reused ----------------------------------------------------------------------


def files_of(info):
    if "claude" in info["main"]:
        folder = os.path.join(os.path.dirname(info["main"]), info["session"], "subagents")
    else:
        folder = os.path.dirname(info["main"])
    extra = sorted(os.path.join(folder, n) for n in os.listdir(folder))
    return [info["main"]] + [p for p in extra if p != info["main"]]


def session_data(host, size_mb):
    """The generated session of this host and size: made once, then reused (appends undone)."""
    folder = os.path.join(DATA, f"{host}-{size_mb}mb")
    meta_path = os.path.join(folder, "meta.json")
    info = None
    try:
        with open(meta_path) as handle:
            info = json.load(handle)
        if info.get("gen") != GEN_VERSION:
            info = None
        else:
            for path, size in info["sizes"].items():
                if os.path.getsize(path) < size:
                    info = None
                    break
    except (OSError, ValueError):
        info = None
    if info is None:
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        print(f"generating {host} {size_mb} MB session in {folder} ...", flush=True)
        started = time.monotonic()
        info = HOSTS[host][0](folder, size_mb)
        info["gen"] = GEN_VERSION
        info["sizes"] = {path: os.path.getsize(path) for path in files_of(info)}
        with open(meta_path, "w") as handle:
            json.dump(info, handle)
        print(f"  done in {time.monotonic() - started:.1f} s", flush=True)
    for path, size in info["sizes"].items():
        if os.path.getsize(path) != size:
            os.truncate(path, size)  # undo a previous run's steady-state appends
    return info


def warm_cache(info):
    """Read every file once so the cold call measures the guard, not the disk."""
    for path in info["sizes"]:
        with open(path, "rb") as handle:
            while handle.read(16 * MB):
                pass


# -- running one process alone ------------------------------------------------------------------


# The child is started by a small launcher, not by this process: on Linux a child's ru_maxrss
# starts at the RSS of the process that forked it (exec keeps the high-water mark), so forking
# from this big process would report this process's size. The launcher (python -I -S, ~8 MB)
# forks, execs the command, feeds its stdin, and reports the child's own wall time and
# os.wait4 usage.
LAUNCHER = r"""
import os, sys, time
data = sys.stdin.buffer.read()
out = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
err = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
argv = sys.argv[3:]
read_end, write_end = os.pipe()
started = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.dup2(read_end, 0)
    os.dup2(out, 1)
    os.dup2(err, 2)
    os.close(write_end)
    os.execv(argv[0], argv)
os.close(read_end)
try:
    os.write(write_end, data)
except BrokenPipeError:
    pass
os.close(write_end)
_, status, usage = os.wait4(pid, 0)
elapsed = time.perf_counter() - started
code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -os.WTERMSIG(status)
print(elapsed, usage.ru_maxrss, code)
"""


def run_alone(argv, data=b"", env=None):
    """(wall seconds, peak RSS in MB, exit code, stdout, stderr) of one child process alone."""
    out_path = os.path.join(DATA, "child.out")
    err_path = os.path.join(DATA, "child.err")
    launcher = [sys.executable, "-I", "-S", "-c", LAUNCHER, out_path, err_path, *argv]
    done = subprocess.run(launcher, input=data, capture_output=True, env=env, check=True)
    elapsed, maxrss, code = done.stdout.split()
    with open(out_path, "rb") as handle:
        out = handle.read()
    with open(err_path, "rb") as handle:
        err = handle.read()
    # ru_maxrss is in KiB on Linux, in bytes on macOS.
    rss_mb = int(maxrss) / (MB if sys.platform == "darwin" else 1024)
    return float(elapsed), rss_mb, int(code), out, err


def bare(flags, runs):
    """(median wall seconds, peak RSS in MB) of an interpreter that does nothing."""
    results = [run_alone([sys.executable, *flags, "-c", "pass"]) for _ in range(runs)]
    return statistics.median(r[0] for r in results), max(r[1] for r in results)


def guard_env(state_dir, home):
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": home,
        "XDG_CONFIG_HOME": os.path.join(home, ".config"),
        "RUNAWAY_GUARD_STATE_DIR": state_dir,
        "RUNAWAY_GUARD_MAX_USD": "0",  # the common path: no cap hit, no answer
    }


# -- a team configured: a stand-in for the Pushgateway and Prometheus ----------------------------


class _TeamServers(http.server.BaseHTTPRequestHandler):
    """Accepts every push; every query answers "no spend on the other machines"."""

    def log_message(self, *args):
        pass

    def _answer(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = b""
        if self.command == "GET":
            body = b'{"status":"success","data":{"resultType":"vector","result":[]}}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_PUT = do_DELETE = _answer


def team_servers():
    """The stand-in's URL (one port answers for both servers)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _TeamServers)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}"


def team_env(env, url):
    return {
        **env,
        "RUNAWAY_GUARD_TEAM": "bench",
        "RUNAWAY_GUARD_USER": "bench",
        "RUNAWAY_GUARD_PUSHGATEWAY_URL": url,
        "RUNAWAY_GUARD_PROMETHEUS_URL": url,
        "RUNAWAY_GUARD_TEAM_MONTHLY_USD": "1000000",
        "RUNAWAY_GUARD_PERSON_DAILY_USD": "1000000",
    }


def check(result, what):
    _, _, code, out, err = result
    if code != 0 or err.strip():
        print(f"  ! {what}: exit {code}, stderr {err[-300:]!r}")
    if out.strip():
        json.loads(out)  # one valid answer, or nothing


def append(path, lines):
    with open(path, "a", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")


def bench_session(host, size_mb, calls, team_url, guard):
    info = session_data(host, size_mb)
    warm_cache(info)
    work = os.path.join(DATA, "run", f"{host}-{size_mb}")
    shutil.rmtree(work, ignore_errors=True)
    state_dir = os.path.join(work, "state")
    home = os.path.join(work, "home")
    os.makedirs(home)
    env = guard_env(state_dir, home)
    argv = [sys.executable, "-I", "-S", guard]
    steps = HOSTS[host][1](info)

    lines, payload = steps.next(0)
    append(info["main"], lines)
    cold = run_alone(argv, json.dumps(payload).encode(), env)
    check(cold, f"{host} {size_mb} MB cold")
    state = os.path.join(state_dir, "sessions", host)
    state_files = [n for n in os.listdir(state) if n.endswith(".json")]
    with open(os.path.join(state, state_files[0])) as handle:
        saved = json.load(handle)
    spend = saved["spend"]["total"] / 1e12

    # A team configured: its first call starts the refresh that fills the team's cache.
    with_team = team_env(env, team_url)
    lines, payload = steps.next(1)
    append(info["main"], lines)
    check(run_alone(argv, json.dumps(payload).encode(), with_team), "team first call")
    cache = os.path.join(state_dir, "team", "cache.json")
    deadline = time.monotonic() + 10
    while not os.path.exists(cache) and time.monotonic() < deadline:
        time.sleep(0.05)
    if not os.path.exists(cache):
        print(f"  ! {host} {size_mb} MB: the team's refresh wrote no cache")

    steady_times, steady_rss, team_times, team_rss = [], [], [], []
    for step in range(2, 2 * calls + 2):  # without a team and with one, call by call
        lines, payload = steps.next(step)
        append(info["main"], lines)
        teamed = step % 2
        result = run_alone(argv, json.dumps(payload).encode(), with_team if teamed else env)
        check(result, f"{host} {size_mb} MB steady{' with a team' if teamed else ''}")
        (team_times if teamed else steady_times).append(result[0])
        (team_rss if teamed else steady_rss).append(result[1])
    # late: the host writes the previous outcome and this call only LATE_S after the hook
    # started, as Claude Code does for a model that answers at once: the guard waits for them
    late_times = []
    for step in range(2 * calls + 2, 2 * calls + 2 + LATE_CALLS):
        lines, payload = steps.next(step)
        writer = threading.Timer(LATE_S, append, (info["main"], lines))
        writer.start()
        result = run_alone(argv, json.dumps(payload).encode(), env)
        writer.join()
        check(result, f"{host} {size_mb} MB late")
        late_times.append(result[0])
    total_bytes = sum(os.path.getsize(p) for p in info["sizes"])
    for path, size in info["sizes"].items():
        os.truncate(path, size)
    return {
        "host": host,
        "size": size_mb,
        "bytes": total_bytes,
        "files": len(info["sizes"]),
        "cold": cold[0],
        "cold_rss": cold[1],
        "steady": statistics.median(steady_times),
        "steady_rss": max(steady_rss),
        "late": statistics.median(late_times),
        "team": statistics.median(team_times),
        "team_rss": max(team_rss),
        # Each call with a team against the call without just before it: the machine's load
        # drifts less between two neighbouring calls than across the whole run.
        "team_ratio": statistics.median(t / p for t, p in zip(team_times, steady_times)),
        "spend": spend,
    }


# -- the report ---------------------------------------------------------------------------------


def verdict(ok):
    return "PASS" if ok else "FAIL"


def report(rows, plain, isolated, calls, guard=GUARD):
    (bare_plain, rss_plain), (bare_isolated, rss_isolated) = plain, isolated
    print()
    print(f"python: {sys.executable} ({sys.version.split()[0]}), guard: {guard}")
    print(
        f"bare `python -c pass`: {bare_plain * 1000:.1f} ms, {rss_plain:.1f} MB; "
        f"bare `python -I -S -c pass`: {bare_isolated * 1000:.1f} ms, {rss_isolated:.1f} MB "
        "(medians; a child's RSS is at least its launcher's, ~8 MB)"
    )
    print(f"steady = median of {calls} calls, each after one result + one response appended")
    print(
        f"team = median of {calls} steady calls with a team configured (its figures cached), "
        "interleaved with those"
    )
    print(
        f"late = median of {LATE_CALLS} calls whose result + response the host writes "
        f"{LATE_S * 1000:.0f} ms after the hook started (a model that answers at once)"
    )
    print()
    header = (
        f"| {'session':<20} | {'what':<7} | {'time':>9} | {'x bare':>6} | {'x bare -I -S':>12} "
        f"| {'peak RSS':>8} | {'target':<22} | {'result':<6} |"
    )
    print(header)
    print("|" + "|".join("-" * (len(part)) for part in header.split("|")[1:-1]) + "|")
    failures = 0
    for row in rows:
        name = f"{row['host']} {row['size']} MB+{row['files'] - 1}"
        limit = COLD_LIMIT.get(row["size"], row["size"] * 0.012)
        checks = [
            (
                "steady",
                row["steady"],
                row["steady_rss"],
                f"<= {STEADY_FACTOR}x bare, <= {MEMORY_LIMIT_MB} MB",
                row["steady"] <= STEADY_FACTOR * bare_plain
                and row["steady_rss"] <= MEMORY_LIMIT_MB,
            ),
            (
                "team",
                row["team"],
                row["team_rss"],
                f"<= {TEAM_FACTOR}x steady",
                row["team_ratio"] <= TEAM_FACTOR
                and row["team"] <= STEADY_FACTOR * bare_plain
                and row["team_rss"] <= MEMORY_LIMIT_MB,
            ),
            (
                "cold",
                row["cold"],
                row["cold_rss"],
                f"<= {limit:g} s, <= {MEMORY_LIMIT_MB} MB",
                row["cold"] <= limit and row["cold_rss"] <= MEMORY_LIMIT_MB,
            ),
            (
                "late",
                row["late"],
                row["steady_rss"],
                f"<= write + {LATE_MARGIN_S * 1000:.0f} ms",
                row["late"] <= LATE_S + LATE_MARGIN_S,
            ),
        ]
        for what, seconds, rss, target, ok in checks:
            failures += not ok
            shown = f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"
            print(
                f"| {name:<20} | {what:<7} | {shown:>9} | {seconds / bare_plain:>6.2f} "
                f"| {seconds / bare_isolated:>12.2f} | {rss:>5.1f} MB | {target:<22} "
                f"| {verdict(ok):<6} |"
            )
    print()
    for row in rows:
        print(
            f"{row['host']} {row['size']} MB: {row['bytes'] / MB:.0f} MB in {row['files']} files, "
            f"ledger total ${row['spend']:,.2f}; a team configured: steady "
            f"x{row['team_ratio']:.2f} (median of each call's ratio to the one before it); "
            f"a late call took {row['late'] * 1000:.1f} ms "
            f"(the host wrote at {LATE_S * 1000:.0f} ms)"
        )
    print()
    print("all targets met" if not failures else f"FAIL: {failures} row(s) missed a target")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100,500", help="main transcript sizes in MB")
    parser.add_argument("--calls", type=int, default=30, help="steady-state calls (>= 20)")
    parser.add_argument("--hosts", default="claude,codex")
    parser.add_argument("--quick", action="store_true", help="100 MB only, 20 calls")
    parser.add_argument("--guard", default=GUARD, help="the guard.py to measure (this tree's)")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",") if size]
    calls = max(20, args.calls)
    if args.quick:
        sizes, calls = [100], 20
    hosts = [host for host in args.hosts.split(",") if host in HOSTS]
    os.makedirs(DATA, exist_ok=True)
    infos = [(host, size) for size in sizes for host in hosts]
    for host, size in infos:
        session_data(host, size)  # generate first, so the timings below run back to back
    runs = max(20, calls)
    bare_plain, rss_plain = bare([], runs)
    bare_isolated, rss_isolated = bare(["-I", "-S"], runs)
    url = team_servers()
    rows = [bench_session(host, size, calls, url, args.guard) for host, size in infos]
    # Measure the floor again after the guard runs, and keep the lower: the stricter ratio.
    bare_plain = min(bare_plain, bare([], runs)[0])
    bare_isolated = min(bare_isolated, bare(["-I", "-S"], runs)[0])
    report(rows, (bare_plain, rss_plain), (bare_isolated, rss_isolated), calls, args.guard)
    return 0


if __name__ == "__main__":
    sys.exit(main())
