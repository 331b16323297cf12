"""The benchmark's session of Qwen Code's chat files."""

from ._common import Transcripts, body, dumps, host, now_stamp, stamp


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
