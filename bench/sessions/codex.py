"""The benchmark's session of Codex 0.169's rollouts."""

import json
import os
import random
import sys

from ._common import (
    MB,
    ROOT,
    TEXT,
    append_lines,
    appender,
    body,
    dumps,
    host,
    now_stamp,
    stamp,
    write_subagents,
    write_until,
)

# The usage fields Codex writes, in its order: the reader's own list.
sys.path.insert(0, os.path.join(ROOT, "skill"))
from runaway_guard.hosts.codex.rollout import _USAGE_FIELDS as _CODEX_USAGE


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
