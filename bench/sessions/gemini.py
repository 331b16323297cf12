"""The benchmark's session of Gemini CLI's chat files."""

from ._common import Transcripts, body, dumps, host, now_stamp, stamp


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
