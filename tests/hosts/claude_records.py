"""Claude Code transcript records in the shapes 2.1.x writes (real ones: tests/fixtures/claude)."""

import itertools

_ids = itertools.count(1)


def usage(inp=3, out=10, cw5=0, cw1h=0, read=0, **extra):
    value = {
        "input_tokens": inp,
        "cache_creation_input_tokens": cw5 + cw1h,
        "cache_read_input_tokens": read,
        "cache_creation": {"ephemeral_5m_input_tokens": cw5, "ephemeral_1h_input_tokens": cw1h},
        "output_tokens": out,
        "service_tier": "standard",
    }
    value.update(extra)
    return value


def assistant(msg_id, model="claude-sonnet-4-6", tool=None, use=None, stop="tool_use", **rest):
    block = (
        {"type": "tool_use", "id": tool[0], "name": tool[1], "input": tool[2]}
        if tool
        else {"type": "text", "text": "ok"}
    )
    record = {
        "type": "assistant",
        "uuid": f"u{next(_ids)}",
        "timestamp": "2026-11-30T10:00:00.000Z",
        "requestId": f"req_{msg_id}",
        "sessionId": "s1",
        "version": "2.1.328",
        "isSidechain": False,
        "message": {
            "id": msg_id,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [block],
            "stop_reason": stop,
            "usage": use or usage(),
        },
    }
    record.update(rest)
    return record


def result(tool_use_id, content="done", error=False, **rest):
    block = {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}
    if error:
        block["is_error"] = True
    record = {
        "type": "user",
        "uuid": f"u{next(_ids)}",
        "timestamp": "2026-11-30T10:00:01.000Z",
        "sessionId": "s1",
        "version": "2.1.328",
        "message": {"role": "user", "content": [block]},
    }
    record.update(rest)
    return record


def pre_tool_use(transcript, tool_use_id, tool="Bash", tool_input=None, session="s1", **extra):
    payload = {
        "session_id": session,
        "transcript_path": str(transcript),
        "cwd": "/tmp",
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": tool_input if tool_input is not None else {"command": "ls"},
        "tool_use_id": tool_use_id,
    }
    payload.update(extra)
    return payload
