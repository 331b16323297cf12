"""The benchmark's session of Copilot CLI 1.0.102's events.jsonl."""

import os
import random
import time

from ._common import MB, appender, body, dumps, host, stamp, stepping, write_until


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
