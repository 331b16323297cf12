"""The scripted model server speaks valid Anthropic Messages SSE (no CLI needed)."""

from __future__ import annotations

import http.client
import json
from urllib.parse import urlsplit

from scripted_model import ScriptedModel, bash, route_by_marker, text, usage


def _post(url: str, path: str, body: dict):
    split = urlsplit(url)
    conn = http.client.HTTPConnection(split.hostname, split.port, timeout=10)
    conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    resp = conn.getresponse()
    data = resp.read()
    headers = dict(resp.getheaders())
    conn.close()
    return resp.status, headers, data


def _parse_sse(data: bytes) -> list:
    events = []
    for frame in data.decode().split("\n\n"):
        if not frame.strip():
            continue
        fields = dict(line.split(": ", 1) for line in frame.splitlines())
        payload = json.loads(fields["data"])
        assert payload["type"] == fields["event"]
        events.append(payload)
    return events


def _assemble(events: list) -> dict:
    """Rebuild the message the way an SDK client does."""
    assert events[0]["type"] == "message_start"
    assert events[-1]["type"] == "message_stop"
    message = dict(events[0]["message"])
    blocks: dict = {}
    partial: dict = {}
    for e in events[1:-1]:
        if e["type"] == "content_block_start":
            blocks[e["index"]] = dict(e["content_block"])
        elif e["type"] == "content_block_delta":
            block, delta = blocks[e["index"]], e["delta"]
            if delta["type"] == "text_delta":
                block["text"] += delta["text"]
            elif delta["type"] == "thinking_delta":
                block["thinking"] += delta["thinking"]
            elif delta["type"] == "signature_delta":
                block["signature"] = delta["signature"]
            elif delta["type"] == "input_json_delta":
                partial[e["index"]] = partial.get(e["index"], "") + delta["partial_json"]
        elif e["type"] == "content_block_stop":
            if e["index"] in partial:
                blocks[e["index"]]["input"] = json.loads(partial.pop(e["index"]))
        elif e["type"] == "message_delta":
            message.update(e["delta"])
            message["usage"] = e["usage"]
    message["content"] = [blocks[i] for i in sorted(blocks)]
    return message


def test_streams_a_valid_anthropic_response():
    final = usage(4, 412, cache_read=48210, cache_1h=1843, web_search=3, inference_geo="us")
    final["speed"] = "fast"
    step = {
        "content": [
            {"type": "thinking", "thinking": "Let me run the tests."},
            {"type": "text", "text": "Running the tests now."},
            {"type": "tool_use", "name": "Bash", "input": {"command": "pytest -x", "timeout": 5}},
        ],
        "model": "claude-opus-4-8",
        "usage": final,
        "start_output_tokens": 3,
    }
    with ScriptedModel({"anthropic": [step]}) as model:
        status, headers, data = _post(
            model.url,
            "/v1/messages?beta=true",
            {"model": "claude-opus-4-8", "stream": True, "messages": [], "max_tokens": 10},
        )
        assert model.requests[0]["path"] == "/v1/messages"
        assert model.requests[0]["query"] == {"beta": "true"}
        assert model.requests[0]["body"]["model"] == "claude-opus-4-8"
    assert status == 200
    assert headers["Content-Type"].startswith("text/event-stream")
    assert headers["request-id"].startswith("req_")
    events = _parse_sse(data)
    kinds = [e["type"] for e in events]
    assert kinds[:2] == ["message_start", "ping"]
    assert kinds[-2:] == ["message_delta", "message_stop"]
    start_usage = events[0]["message"]["usage"]
    assert start_usage["output_tokens"] == 3  # the placeholder
    assert start_usage["cache_read_input_tokens"] == 48210
    assert events[0]["message"]["stop_reason"] is None
    message = _assemble(events)
    assert message["model"] == "claude-opus-4-8"
    assert message["id"].startswith("msg_")
    assert message["stop_reason"] == "tool_use"
    assert message["usage"] == final
    thinking, said, call = message["content"]
    assert thinking["thinking"] == "Let me run the tests." and thinking["signature"]
    assert said == {"type": "text", "text": "Running the tests now."}
    assert call["name"] == "Bash" and call["id"].startswith("toolu_")
    assert call["input"] == {"command": "pytest -x", "timeout": 5}


def test_steps_run_out_into_a_final_text_and_non_streaming_works():
    with ScriptedModel({"anthropic": [bash("false")]}) as model:
        _, _, first = _post(model.url, "/v1/messages", {"model": "m", "stream": True})
        status, _, second = _post(model.url, "/v1/messages", {"model": "claude-haiku-4-5"})
    assert _assemble(_parse_sse(first))["content"][0]["input"] == {"command": "false"}
    assert status == 200
    message = json.loads(second)
    assert message["model"] == "claude-haiku-4-5"
    assert message["stop_reason"] == "end_turn"
    assert message["content"][0]["type"] == "text"


def test_routes_callables_probes_and_errors():
    def by_model(body):
        return text(f"answer for {body['model']}")

    route = route_by_marker({"SUB-1": [text("from the subagent")]})
    scenario = {
        "anthropic": [by_model, {"error": {"status": 529, "type": "overloaded_error"}}],
        "anthropic_route": route,
    }
    with ScriptedModel(scenario) as model:
        sub_body = {"model": "s", "messages": [{"role": "user", "content": "SUB-1: go"}]}
        _, _, sub = _post(model.url, "/v1/messages", sub_body)
        _, _, main = _post(model.url, "/v1/messages", {"model": "opus", "messages": []})
        status, _, _ = _post(model.url, "/v1/messages", {"model": "opus", "messages": []})
        _, _, counted = _post(model.url, "/v1/messages/count_tokens", {"messages": []})
        _, _, unknown = _post(model.url, "/v1/nothing", {})
        assert [r["path"] for r in model.unknown] == ["/v1/nothing"]
        assert len(model.api_requests()) == 3
    assert json.loads(sub)["content"][0]["text"] == "from the subagent"
    assert json.loads(main)["content"][0]["text"] == "answer for opus"
    assert status == 529
    assert json.loads(counted)["input_tokens"] >= 1
    assert json.loads(unknown)["type"] == "error"


def test_responses_route_uses_the_codex_renderer():
    seen = []

    def step(body):
        seen.append(body["model"])
        return {"text": "hello", "usage": {"input_tokens": 10, "output_tokens": 2}}

    with ScriptedModel({"openai": [step]}) as model:
        status, headers, data = _post(
            model.url, "/v1/responses", {"model": "gpt-5.5", "stream": True, "input": []}
        )
    assert status == 200
    assert headers["Content-Type"].startswith("text/event-stream")
    assert seen == ["gpt-5.5"]
    kinds = [json.loads(f.split("data: ", 1)[1])["type"] for f in data.decode().split("\n\n") if f]
    assert kinds[0] == "response.created"
    assert kinds[-1] == "response.completed"
