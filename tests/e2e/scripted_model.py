"""A scripted model server for the end-to-end tests (stdlib only).

Serves the Anthropic Messages API (``POST /v1/messages``, streaming SSE or plain JSON), the
OpenAI Responses API (``POST /v1/responses``, rendered by ``responses_sse.render``) and the
OpenAI Chat Completions API (``POST /v1/chat/completions``, rendered by ``chat_completions``) and
the Gemini API (``POST /v1beta/models/<m>:streamGenerateContent`` / ``:generateContent`` /
``:countTokens``, rendered by ``gemini_api``) on 127.0.0.1, so the real host CLIs (Claude Code,
Codex, OpenCode, Gemini CLI ...) can run offline against a script::

    with ScriptedModel({"anthropic": [...], "openai": [...], "chat": [...]}) as model:
        run_cli(base_url=model.url)
        model.requests  # every request: {"method", "path", "query", "headers", "body"}

Each API request pops the next step of its list. A step is a dict, or a callable
``(body) -> step`` (to react to the request's content; ``body`` is the decoded JSON request
body, for every API). When the list is empty, a plain final text with a small usage is answered
(``"<api>_default"`` replaces it). The lists: ``"anthropic"``, ``"openai"``, ``"chat"``,
``"gemini"`` (streamed agent turns) and ``"gemini_utility"`` (``generateContent``: Gemini CLI's
router and other utility calls; by default answered with the router's JSON choosing flash).

A scenario may also carry ``"<api>_route"`` (``"anthropic_route"``, ``"gemini_route"``): a callable
``(body) -> step | None`` consulted *before* the list; when it returns a step, that step is
answered and the list is left alone. Use it for side requests (Claude Code sends title
generation, compaction summaries, subagent requests ... through the same endpoint); the
predicates ``is_side_request``, ``is_compaction_request``, ``system_text`` help there.

Anthropic step keys (all optional)::

    content       [{"type": "text", "text": ...},
                   {"type": "thinking", "thinking": ..., "signature": ...},
                   {"type": "tool_use", "name": ..., "input": {...}, "id": "toolu_..."}]
    text          shorthand for content=[{"type": "text", "text": text}]
    stop_reason   default "tool_use" when a tool_use block is present, else "end_turn"
    model         the model echoed in message_start (default: the request's model)
    usage         the final usage object, sent verbatim in message_delta (and, with
                  output_tokens replaced by the placeholder, in message_start)
    start_output_tokens   placeholder output_tokens in message_start (default 1)
    start_usage   the message_start usage verbatim (overrides the derived one)
    delta_delay   seconds to sleep between the last content_block_stop and message_delta
                  (lets Claude Code flush rows that still carry the placeholder)
    id            the message id (default msg_01... counter)
    error         {"status": 529, "type": "overloaded_error", "message": "..."}: answer an error

OpenAI steps are passed to ``responses_sse.render(step, request)`` unchanged (see that module).
Chat steps are rendered by ``chat_completions`` (streamed or whole, as the request asks); the
server itself honours their ``delay`` and ``error`` keys (see that module). Gemini steps are
rendered by ``gemini_api.render_stream`` / ``render_json`` (see that module).
"""

from __future__ import annotations

import copy
import itertools
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

DEFAULT_USAGE = {
    "input_tokens": 10,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
    "output_tokens": 5,
}

FINAL_TEXT = "Done."
APIS = ("anthropic", "openai", "chat", "gemini", "gemini_utility")
# Gemini CLI's `auto` router asks for {"reasoning", "model_choice"} as JSON text.
ROUTER_CHOICE = '{"reasoning": "scripted", "model_choice": "flash"}'

_ids = itertools.count(1)


def _next_id(prefix: str) -> str:
    return f"{prefix}_01Scripted{next(_ids):012d}"


# ---------------------------------------------------------------------------------------------
# request predicates (for scenario routing)


def request_body(request) -> dict:
    """The JSON body, given either the body itself or a ``model.requests`` entry."""
    if isinstance(request, dict) and "path" in request and "method" in request:
        body = request.get("body")
        return body if isinstance(body, dict) else {}
    return request if isinstance(request, dict) else {}


def system_text(request: dict) -> str:
    """The system prompt of an Anthropic request as one string."""
    system = request_body(request).get("system")
    if isinstance(system, str):
        return system
    if isinstance(system, list):
        return "\n".join(b.get("text", "") for b in system if isinstance(b, dict))
    return ""


def tool_names(request: dict) -> list:
    return [t.get("name") for t in request_body(request).get("tools") or []]


def _user_text(request: dict, last: bool) -> str:
    messages = request_body(request).get("messages") or []
    for message in reversed(messages) if last else messages:
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        return _texts(content)
    return ""


def last_user_text(request: dict) -> str:
    """The text of the last user message (strings and text blocks)."""
    return _user_text(request, last=True)


def _texts(content) -> str:
    blocks = content or []
    return "\n".join(
        b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text"
    )


def first_user_text(request: dict) -> str:
    """The text of the first user message (a subagent's first message is its task prompt)."""
    return _user_text(request, last=False)


def route_by_marker(queues: dict, where=first_user_text):
    """A route (see ``ScriptedModel``) that answers a request from ``queues[marker]`` when
    ``marker`` occurs in ``where(request)`` (by default the first user message: put a marker in a
    subagent's prompt to script that subagent separately). Falls through (None) when no marker
    matches or that queue is empty."""
    queues = {k: list(v) for k, v in queues.items()}
    lock = threading.Lock()

    def route(request):
        haystack = where(request)
        for marker, queue in queues.items():
            if marker in haystack:
                with lock:
                    step = queue.pop(0) if queue else None
                if callable(step):
                    step = step(request)
                if step is not None:
                    return dict(step, route=marker)
        return None

    route.queues = queues
    return route


def is_compaction_request(request: dict) -> bool:
    """Claude Code's summarisation request (auto-compact or /compact). In 2.1.328 it is an
    ordinary request of the thread (same model, same tools) whose last user message ends with
    "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools. ... Your task is to create a
    detailed summary of the conversation so far ..."."""
    text = last_user_text(request)
    return "create a detailed summary of the conversation" in text or (
        "Respond with TEXT ONLY" in text and "<summary>" in text
    )


def is_side_request(request: dict) -> bool:
    """A request that is not a turn of an agent loop: no tools offered (title generation,
    session naming, summaries...)."""
    return not request_body(request).get("tools")


# ---------------------------------------------------------------------------------------------
# Anthropic rendering


def _sse(event: str, data: dict) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def _blocks(step: dict) -> list:
    if "content" in step:
        return step["content"]
    return [{"type": "text", "text": step.get("text", FINAL_TEXT)}]


def _stop_reason(step: dict, blocks: list) -> str:
    if step.get("stop_reason"):
        return step["stop_reason"]
    return "tool_use" if any(b.get("type") == "tool_use" for b in blocks) else "end_turn"


def _final_blocks(blocks: list) -> list:
    out = []
    for b in blocks:
        b = dict(b)
        if b.get("type") == "tool_use":
            b.setdefault("id", _next_id("toolu"))
            b.setdefault("input", {})
        elif b.get("type") == "thinking":
            b.setdefault("signature", "c2NyaXB0ZWQ=")
        out.append(b)
    return out


def _chunks(text: str, n: int = 3) -> list:
    if not text:
        return [""]
    size = max(1, -(-len(text) // n))
    return [text[i : i + size] for i in range(0, len(text), size)]


def anthropic_message(step: dict, request: dict) -> dict:
    """The complete (non-streaming) message a step describes."""
    body = request_body(request)
    blocks = _final_blocks(_blocks(step))
    usage = copy.deepcopy(step.get("usage") or DEFAULT_USAGE)
    return {
        "id": step.get("id") or _next_id("msg"),
        "type": "message",
        "role": "assistant",
        "model": step.get("model") or body.get("model") or "claude-sonnet-4-6",
        "content": blocks,
        "stop_reason": _stop_reason(step, blocks),
        "stop_sequence": None,
        "usage": usage,
    }


def anthropic_events(step: dict, request: dict):
    """Yield ``(delay_seconds, sse_bytes)`` for a streamed response."""
    message = anthropic_message(step, request)
    final_usage = message["usage"]
    start_usage = step.get("start_usage")
    if start_usage is None:
        start_usage = copy.deepcopy(final_usage)
        start_usage["output_tokens"] = step.get("start_output_tokens", 1)
    start = dict(message, content=[], stop_reason=None, usage=start_usage)
    yield 0, _sse("message_start", {"type": "message_start", "message": start})
    yield 0, _sse("ping", {"type": "ping"})
    for index, block in enumerate(message["content"]):
        kind = block.get("type")
        if kind == "text":
            head = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": t} for t in _chunks(block.get("text", ""))]
        elif kind == "thinking":
            head = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [
                {"type": "thinking_delta", "thinking": t}
                for t in _chunks(block.get("thinking", ""))
            ]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        elif kind == "tool_use":
            head = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            raw = json.dumps(block.get("input", {}))
            deltas = [{"type": "input_json_delta", "partial_json": t} for t in _chunks(raw)]
        else:  # anything else (server_tool_use, web_search_tool_result ...): sent whole
            head, deltas = block, []
        yield (
            0,
            _sse(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": head},
            ),
        )
        for delta in deltas:
            yield (
                0,
                _sse(
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": delta},
                ),
            )
        yield 0, _sse("content_block_stop", {"type": "content_block_stop", "index": index})
    delta = {
        "type": "message_delta",
        "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
        "usage": final_usage,
    }
    yield float(step.get("delta_delay", 0)), _sse("message_delta", delta)
    yield 0, _sse("message_stop", {"type": "message_stop"})


# ---------------------------------------------------------------------------------------------
# the server


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "scripted-model/1"

    def log_message(self, format, *args):  # quiet
        if self.server.owner.verbose:
            sys.stderr.write("scripted-model: " + (format % args) + "\n")

    # -- plumbing

    def _read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return raw.decode("utf-8", "replace")

    def _record(self, body) -> dict:
        split = urlsplit(self.path)
        request = {
            "method": self.command,
            "path": split.path,
            "query": {k: v[-1] for k, v in parse_qs(split.query).items()},
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "body": body,
            "time": time.time(),
        }
        with self.server.owner.lock:
            self.server.owner.requests.append(request)
        return request

    def _json(self, status: int, payload, extra_headers=None):
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (extra_headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _stream(self, chunks, extra_headers=None):
        """Send (delay, bytes) pairs as a chunked text/event-stream."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        for k, v in (extra_headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        try:
            for delay, chunk in chunks:
                if delay:
                    time.sleep(delay)
                if not chunk:
                    continue
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _not_found(self, request):
        self.server.owner.unknown.append(request)
        error = {"type": "not_found_error", "message": request["path"]}
        self._json(404, {"type": "error", "error": error})

    # -- verbs

    def do_HEAD(self):
        self._record(None)
        self._json(200, {})

    def do_GET(self):
        request = self._record(None)
        path = request["path"]
        if path.rstrip("/").endswith("/models"):
            self._json(200, self.server.owner.models_listing())
        elif path.startswith("/v1/models/"):
            model_id = path.rsplit("/", 1)[-1]
            self._json(200, {"type": "model", "id": model_id, "display_name": model_id})
        elif path in ("/", "/health", "/v1"):
            self._json(200, {"ok": True})
        else:
            self._not_found(request)

    def do_POST(self):
        request = self._record(self._read_body())
        path = request["path"]
        owner = self.server.owner
        if path.endswith("/messages/count_tokens"):
            body = request["body"] or {}
            size = len(json.dumps(body.get("messages", ""))) + len(json.dumps(body.get("system")))
            self._json(200, {"input_tokens": max(1, size // 4)})
        elif path.endswith("/messages"):
            step = owner.next_step("anthropic", request)
            request["step"] = step
            self._anthropic(step, request)
        elif path.endswith("/responses"):
            step = owner.next_step("openai", request)
            request["step"] = step
            self._openai(step, request)
        elif path.endswith("/chat/completions"):
            step = owner.next_step("chat", request)
            request["step"] = step
            self._chat(step, request)
        elif ":" in path.rsplit("/", 1)[-1]:
            self._gemini(request)
        else:
            self._not_found(request)

    # -- APIs

    def _anthropic(self, step: dict, request: dict):
        headers = {"request-id": _next_id("req")}
        error = step.get("error")
        if error:
            detail = {"type": error.get("type", "api_error"), "message": error.get("message", "")}
            payload = {"type": "error", "error": detail}
            self._json(int(error.get("status", 500)), payload, headers)
            return
        body = request.get("body") or {}
        if isinstance(body, dict) and body.get("stream"):
            self._stream(anthropic_events(step, request), headers)
        else:
            self._json(200, anthropic_message(step, request), headers)

    def _openai(self, step: dict, request: dict):
        _sibling_path()
        from responses_sse import render  # written by the Codex side; imported lazily

        chunks = render(step, request_body(request))
        # a step's own headers too: Codex reads its plan's usage windows from x-codex-* ones
        headers = {"x-request-id": _next_id("req"), **step.get("headers", {})}
        self._stream(((0, c) for c in chunks), headers)

    def _chat(self, step: dict, request: dict):
        _sibling_path()
        import chat_completions

        if step.get("delay"):
            time.sleep(float(step["delay"]))
        headers = {"x-request-id": _next_id("req")}
        error = step.get("error")
        if error:
            payload = chat_completions.error_body(error)
            self._json(int(error.get("status", 500)), payload, headers)
            return
        body = request_body(request)
        if body.get("stream"):
            chunks = chat_completions.render(step, body)
            self._stream(((0, c) for c in chunks), headers)
        else:
            self._json(200, chat_completions.completion(step, body), headers)

    def _gemini(self, request: dict):
        api = _gemini_api()
        method = api.is_gemini_path(request["path"])
        if method is None:
            self._not_found(request)
            return
        body = request_body(request)
        if method == "count":
            self._json(200, {"totalTokens": max(1, len(json.dumps(body)) // 4)})
            return
        name = "gemini" if method == "stream" else "gemini_utility"
        step = self.server.owner.next_step(name, request)
        request["step"] = step
        if step.get("error"):
            self._json(*api.error_body(step["error"]))
            return
        model = api.model_of(request["path"])
        if method == "stream":
            self._stream((0, c) for c in api.render_stream(step, body, model))
        else:
            self._json(200, api.render_json(step, body, model))


def _gemini_api():
    _sibling_path()
    import gemini_api

    return gemini_api


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # A CLI that drops a stream it no longer wants (Gemini CLI's loop detector) is normal.
        if not isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            super().handle_error(request, client_address)


def _sibling_path():
    here = str(Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.insert(0, here)


class ScriptedModel:
    """Context manager around the scripted HTTP server; see the module docstring."""

    def __init__(self, scenario=None, *, verbose: bool = False, models=None):
        scenario = dict(scenario or {})
        self.steps = {api: list(scenario.get(api) or []) for api in APIS}
        self.routes = {api: scenario.get(f"{api}_route") for api in APIS}
        defaults = {api: {"text": FINAL_TEXT} for api in APIS}
        defaults["gemini_utility"] = {"text": ROUTER_CHOICE}
        self.fallback = {api: scenario.get(f"{api}_default") or defaults[api] for api in APIS}
        self.models = list(models or [])
        self.requests: list = []
        self.unknown: list = []
        self.lock = threading.Lock()
        self.verbose = verbose
        self._server = None
        self._thread = None

    # -- scenario

    def next_step(self, api: str, request: dict) -> dict:
        """The step answering ``request`` (a ``self.requests`` entry); callables get the body."""
        body = request_body(request)
        route = self.routes.get(api)
        if route is not None:
            routed = route(body)
            if routed is not None:
                request["routed"] = True
                return routed
        with self.lock:
            step = self.steps[api].pop(0) if self.steps[api] else None
        if callable(step):
            step = step(body)
        if step is None:
            fallback = self.fallback[api]
            step = fallback(body) if callable(fallback) else fallback
        return step

    def remaining(self, api: str = "anthropic") -> int:
        return len(self.steps[api])

    def api_requests(self, api: str = "anthropic") -> list:
        if api.startswith("gemini"):
            want = ":streamGenerateContent" if api == "gemini" else ":generateContent"
            return [r for r in self.requests if r["method"] == "POST" and want in r["path"]]
        suffix = {"anthropic": "/messages", "chat": "/chat/completions"}.get(api, "/responses")
        return [r for r in self.requests if r["method"] == "POST" and r["path"].endswith(suffix)]

    def models_listing(self) -> dict:
        ids = self.models or ["claude-opus-4-8", "claude-sonnet-4-6", "claude-haiku-4-5"]
        # the Anthropic listing, with the keys an OpenAI client reads ("object", "owned_by")
        data = [
            {
                "type": "model",
                "id": m,
                "display_name": m,
                "created_at": "2026-01-01T00:00:00Z",
                "object": "model",
                "created": 1767225600,
                "owned_by": "scripted",
            }
            for m in ids
        ]
        listing = {"data": data, "has_more": False, "first_id": ids[0], "last_id": ids[-1]}
        return dict(listing, object="list")

    # -- lifecycle

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> ScriptedModel:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.owner = self
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> ScriptedModel:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


# ---------------------------------------------------------------------------------------------
# helpers for writing scenarios


def usage(
    input_tokens: int = 10,
    output_tokens: int = 5,
    cache_read: int = 0,
    cache_5m: int = 0,
    cache_1h: int = 0,
    web_search: int = 0,
    service_tier: str = "standard",
    inference_geo=None,
    speed=None,
) -> dict:
    """A usage object in the real API's shape."""
    u = {
        "input_tokens": input_tokens,
        "cache_creation_input_tokens": cache_5m + cache_1h,
        "cache_read_input_tokens": cache_read,
        "cache_creation": {
            "ephemeral_5m_input_tokens": cache_5m,
            "ephemeral_1h_input_tokens": cache_1h,
        },
        "output_tokens": output_tokens,
        "server_tool_use": {"web_search_requests": web_search, "web_fetch_requests": 0},
        "service_tier": service_tier,
    }
    if inference_geo is not None:
        u["inference_geo"] = inference_geo
    if speed is not None:
        u["speed"] = speed
    return u


def tool_use(name: str, tool_input: dict, **step) -> dict:
    """A step that calls one tool."""
    return dict(step, content=[{"type": "tool_use", "name": name, "input": tool_input}])


def bash(command: str, description: str = "", **step) -> dict:
    tool_input = {"command": command}
    if description:
        tool_input["description"] = description
    return tool_use("Bash", tool_input, **step)


def text(message: str, **step) -> dict:
    return dict(step, content=[{"type": "text", "text": message}])


if __name__ == "__main__":  # manual probing: run a server that answers the default step
    with ScriptedModel({}, verbose=True) as m:
        print(m.url, flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
