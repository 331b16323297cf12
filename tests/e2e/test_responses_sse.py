"""render() yields well-formed Responses API SSE with the scripted usage (no CLI needed)."""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import responses_sse

CODEX_REQUEST = {
    "model": "gpt-5.5",
    "tools": [
        {"type": "function", "name": "exec_command", "parameters": {"properties": {"cmd": {}}}},
        {"type": "function", "name": "write_stdin", "parameters": {}},
        {"type": "custom", "name": "apply_patch"},
        {
            "type": "namespace",
            "name": "collaboration",
            "tools": [{"type": "function", "name": "spawn_agent", "parameters": {}}],
        },
    ],
}

USAGE = {"input_tokens": 1500, "cached_tokens": 1200, "output_tokens": 300, "reasoning_tokens": 128}


def _parse(step, request=CODEX_REQUEST):
    chunks = responses_sse.render(step, request)
    assert chunks and all(isinstance(c, bytes) for c in chunks)
    for chunk in chunks:  # one complete event per chunk
        text = chunk.decode("utf-8")
        assert text.startswith("event: ") and text.endswith("\n\n")
        assert text.count("\n\n") == 1
    events = responses_sse.parse_sse(chunks)
    for kind, data in events:
        assert data["type"] == kind
    seqs = [data["sequence_number"] for _, data in events]
    assert seqs == list(range(len(events)))
    return events


def _items(events):
    return [data["item"] for kind, data in events if kind == "response.output_item.done"]


def test_shell_call_with_usage():
    events = _parse({"tool_calls": [{"shell": "ls /x"}], "usage": USAGE, "reasoning": "think"})
    kinds = [k for k, _ in events]
    assert kinds[0] == "response.created"
    assert kinds[-1] == "response.completed"
    assert kinds.count("response.output_item.added") == kinds.count("response.output_item.done")
    reasoning, call = _items(events)
    assert reasoning["type"] == "reasoning"
    assert reasoning["summary"][0]["text"] == "think"
    assert call["type"] == "function_call"
    assert call["name"] == "exec_command"
    assert json.loads(call["arguments"]) == {"cmd": "ls /x"}
    assert call["call_id"].startswith("call_")
    response = events[-1][1]["response"]
    assert response["status"] == "completed"
    assert response["id"] == events[0][1]["response"]["id"]
    assert response["output"] == [reasoning, call]
    assert response["usage"] == {
        "input_tokens": 1500,
        "input_tokens_details": {"cached_tokens": 1200},
        "output_tokens": 300,
        "output_tokens_details": {"reasoning_tokens": 128},
        "total_tokens": 1800,
    }


def test_bash_alias_and_shell_tool_variants():
    step = {"tool_calls": [{"name": "Bash", "arguments": {"command": "false"}}]}
    (call,) = _items(_parse(step))
    assert (call["name"], json.loads(call["arguments"])) == ("exec_command", {"cmd": "false"})
    legacy = {"tools": [{"type": "function", "name": "shell"}]}
    (call,) = _items(_parse({"tool_calls": [{"shell": "pwd"}]}, legacy))
    assert call["name"] == "shell"
    assert json.loads(call["arguments"]) == {"command": ["bash", "-lc", "pwd"]}


def test_parallel_calls_namespace_custom_and_text():
    step = {
        "id": "resp_fixed",
        "model": "gpt-5.1-codex-max",
        "tool_calls": [
            {"name": "spawn_agent", "arguments": {"task_name": "w", "message": "go"}},
            {"name": "apply_patch", "arguments": "*** Begin Patch\n*** End Patch\n"},
            {"shell": "echo a", "call_id": "call_given"},
        ],
        "text": "working on it",
        "usage": {"input_tokens": 10, "cached_input_tokens": 4, "output_tokens": 2},
    }
    events = _parse(step)
    spawn, patch, shell, message = _items(events)
    assert spawn["namespace"] == "collaboration"
    assert spawn["name"] == "spawn_agent"
    assert patch["type"] == "custom_tool_call"
    assert patch["input"].startswith("*** Begin Patch")
    assert shell["call_id"] == "call_given"
    assert len({spawn["call_id"], patch["call_id"], shell["call_id"]}) == 3
    assert message["type"] == "message"
    part = {"type": "output_text", "text": "working on it", "annotations": []}
    assert message["content"][0] == part
    response = events[-1][1]["response"]
    assert (response["id"], response["model"]) == ("resp_fixed", "gpt-5.1-codex-max")
    assert response["usage"]["input_tokens_details"]["cached_tokens"] == 4
    assert response["usage"]["output_tokens_details"]["reasoning_tokens"] == 0
    assert response["usage"]["total_tokens"] == 12


def test_final_text_only_and_empty_usage():
    events = _parse({"text": "done"}, {})
    (message,) = _items(events)
    assert message["role"] == "assistant"
    deltas = [d["delta"] for k, d in events if k == "response.output_text.delta"]
    assert deltas == ["done"]
    assert events[-1][1]["response"]["usage"]["total_tokens"] == 0
