"""The benchmark's session of Claude Code 2.1.328's transcripts, and claude-real: the same host
in the record mix published sessions show."""

from ._common import Transcripts, body, dumps, host, stamp


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
