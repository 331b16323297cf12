"""The scripted model speaks valid Chat Completions, streamed and whole (no CLI needed)."""

from __future__ import annotations

import http.client
import json
import time
from urllib.parse import urlsplit

import chat_completions
from scripted_model import ScriptedModel

# the shape of OpenCode 1.18.33's bash tool (AI SDK openai-compatible provider)
OPENCODE_REQUEST = {
    "model": "mock-model",
    "stream": True,
    "stream_options": {"include_usage": True},
    "tools": [
        {
            "type": "function",
            "function": {
                "name": "bash",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "command": {"type": "string"},
                        "timeout": {"type": "number"},
                        "description": {"type": "string"},
                    },
                    "required": ["command", "description"],
                },
            },
        },
        {"type": "function", "function": {"name": "task", "parameters": {"type": "object"}}},
    ],
}
QWEN_REQUEST = {
    "model": "qwen3-coder-plus",
    "tools": [{"type": "function", "function": {"name": "run_shell_command", "parameters": {}}}],
}
USAGE = {"input_tokens": 1000, "cached_tokens": 200, "output_tokens": 50, "reasoning_tokens": 10}


def assemble(payloads: list) -> dict:
    """Rebuild the message and usage the way an SDK client does."""
    message = {"content": "", "reasoning": "", "tool_calls": {}}
    out = {"message": message, "finish_reason": None, "usage": None, "ids": set()}
    for payload in payloads:
        assert payload["object"] == "chat.completion.chunk"
        out["ids"].add(payload["id"])
        if payload.get("usage"):
            out["usage"] = payload["usage"]
        for choice in payload["choices"]:
            delta = choice["delta"]
            message["content"] += delta.get("content") or ""
            message["reasoning"] += delta.get("reasoning_content") or ""
            for call in delta.get("tool_calls") or []:
                slot = message["tool_calls"].setdefault(call["index"], {"arguments": ""})
                if "id" in call:
                    slot.update(id=call["id"], name=call["function"]["name"])
                slot["arguments"] += call["function"].get("arguments", "")
            if choice["finish_reason"]:
                out["finish_reason"] = choice["finish_reason"]
    return out


def test_shell_shortcut_fills_the_required_description_and_sends_usage_last():
    step = {"tool_calls": [{"shell": "false"}], "usage": USAGE, "reasoning": "hmm", "text": "ok"}
    payloads = chat_completions.parse_sse(chat_completions.render(step, OPENCODE_REQUEST))
    got = assemble(payloads)
    assert len(got["ids"]) == 1
    assert got["message"]["content"] == "ok"
    assert got["message"]["reasoning"] == "hmm"
    (call,) = got["message"]["tool_calls"].values()
    assert call["name"] == "bash"
    assert json.loads(call["arguments"]) == {"command": "false", "description": "false"}
    assert call["id"].startswith("call_")
    assert got["finish_reason"] == "tool_calls"
    assert payloads[-1]["choices"] == []
    assert payloads[-1]["usage"] == {
        "prompt_tokens": 1000,
        "completion_tokens": 50,
        "total_tokens": 1050,
        "prompt_tokens_details": {"cached_tokens": 200},
        "completion_tokens_details": {"reasoning_tokens": 10},
    }


def test_parallel_calls_named_tools_and_other_shell_tools():
    step = {
        "tool_calls": [
            {"name": "task", "arguments": {"prompt": "go"}, "id": "call_given"},
            {"name": "bash", "arguments": {"command": "ls", "description": "list"}},
            {"name": "edit", "arguments": '{"raw": 1}'},
        ]
    }
    got = assemble(chat_completions.parse_sse(chat_completions.render(step, OPENCODE_REQUEST)))
    task, bash, edit = (got["message"]["tool_calls"][i] for i in range(3))
    assert (task["id"], task["name"], json.loads(task["arguments"])) == (
        "call_given",
        "task",
        {"prompt": "go"},
    )
    assert json.loads(bash["arguments"]) == {"command": "ls", "description": "list"}
    assert edit["arguments"] == '{"raw": 1}'
    assert len({task["id"], bash["id"], edit["id"]}) == 3
    qwen = chat_completions.render({"calls": [{"shell": "pwd"}]}, QWEN_REQUEST)
    (call,) = assemble(chat_completions.parse_sse(qwen))["message"]["tool_calls"].values()
    assert (call["name"], json.loads(call["arguments"])) == (
        "run_shell_command",
        {"command": "pwd"},
    )


def test_usage_follows_include_usage_unless_the_step_says_otherwise():
    plain = {"model": "m", "stream": True}
    payloads = chat_completions.parse_sse(chat_completions.render({"text": "hi"}, plain))
    assert all("usage" not in p for p in payloads)
    assert assemble(payloads)["finish_reason"] == "stop"
    final = {
        "text": "hi",
        "usage": {"prompt_tokens": 7, "completion_tokens": 3},
        "usage_mode": "final",
    }
    payloads = chat_completions.parse_sse(chat_completions.render(final, plain))
    assert payloads[-1]["choices"][0]["finish_reason"] == "stop"
    assert payloads[-1]["usage"]["total_tokens"] == 10
    none = dict(final, usage_mode="none")
    assert (
        "usage"
        not in chat_completions.parse_sse(chat_completions.render(none, OPENCODE_REQUEST))[-1]
    )


def test_whole_completion_and_tool_messages():
    step = {"tool_calls": [{"shell": "ls"}], "text": "look", "usage": USAGE, "model": "other"}
    body = chat_completions.completion(step, OPENCODE_REQUEST)
    assert body["object"] == "chat.completion" and body["model"] == "other"
    (choice,) = body["choices"]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] == "look"
    assert choice["message"]["tool_calls"][0]["function"]["name"] == "bash"
    assert body["usage"]["prompt_tokens_details"]["cached_tokens"] == 200
    request = {
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "tool", "tool_call_id": "call_1", "content": "out"},
            {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "x"}]},
        ]
    }
    assert chat_completions.tool_messages(request) == [("call_1", "out"), ("call_2", "x")]


def _post(url: str, body: dict):
    split = urlsplit(url)
    conn = http.client.HTTPConnection(split.hostname, split.port, timeout=10)
    conn.request(
        "POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"}
    )
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, resp.getheader("Content-Type"), data


def test_server_routes_chat_requests_with_delay_error_route_and_default():
    scenario = {
        "chat": [
            {"tool_calls": [{"shell": "false"}], "usage": USAGE, "delay": 0.3},
            {"error": {"status": 429, "message": "slow down", "type": "rate_limit"}},
        ],
        "chat_route": lambda body: {"text": "a title"} if not body.get("tools") else None,
    }
    with ScriptedModel(scenario) as model:
        started = time.monotonic()
        status, kind, data = _post(model.url, OPENCODE_REQUEST)
        assert time.monotonic() - started >= 0.3
        assert (status, kind.split(";")[0]) == (200, "text/event-stream")
        got = assemble(chat_completions.parse_sse(data))
        assert got["usage"]["completion_tokens"] == 50
        status, _, data = _post(model.url, {"model": "m", "messages": [], "stream": False})
        assert json.loads(data)["choices"][0]["message"]["content"] == "a title"
        status, _, data = _post(model.url, OPENCODE_REQUEST)
        assert status == 429 and json.loads(data)["error"]["message"] == "slow down"
        status, _, data = _post(model.url, OPENCODE_REQUEST)
        assert assemble(chat_completions.parse_sse(data))["message"]["content"] == "Done."
        requests = model.api_requests("chat")
    assert len(requests) == 4
    assert [bool(r.get("routed")) for r in requests] == [False, True, False, False]
    assert requests[0]["body"]["stream_options"] == {"include_usage": True}
