"""The benchmark's session of OpenCode's database."""

import json
import os
import random
import time

from ._common import MB, ROOT, body, host

_OPENCODE_SCHEMA = os.path.join(ROOT, "tests", "fixtures", "opencode", "schema.sql")
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
