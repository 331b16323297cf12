"""OpenAI Chat Completions (``POST /v1/chat/completions``) for the scripted model server.

``render(step, request)`` turns one scripted step into the server-sent events of one streamed
response (``stream: true``): ``chat.completion.chunk`` objects, one ``data:`` line each, then
``data: [DONE]``. ``completion(step, request)`` is the same response as one ``chat.completion``
object (``stream`` false or absent). Clients built on the OpenAI SDK or on the AI SDK's
``openai-compatible`` provider (OpenCode, Qwen Code, Copilot CLI's BYOK providers) read both.

A step is a dict (every key optional, but a step should have calls or text):

``tool_calls`` (alias ``calls``)
    list of calls, streamed as one response (several = parallel calls). Each call is
    ``{"name": ..., "arguments": {...}}`` (optional ``id``; ``arguments`` may also be a raw JSON
    string, sent as is), or the shortcut ``{"shell": "<command line>"}``. A call named ``shell``
    (or ``Bash``/``bash``, or no name) that the request does not offer under that name means "the
    shell tool the client offers": the first of ``SHELL_TOOLS`` found in the request's ``tools``
    (``bash`` in OpenCode and Copilot CLI, ``run_shell_command`` in Qwen Code ...), with the
    command in its ``command`` argument. Whatever the tool's JSON schema marks ``required`` and
    the call leaves out is filled in when it is a string (``description`` in OpenCode's bash:
    the command line itself), so a scripted call stays short.
``text``
    assistant text (``delta.content``); sent before the calls when both are given.
``reasoning``
    reasoning text, streamed first as ``delta.reasoning_content`` (the field DeepSeek, Qwen and
    the AI SDK's openai-compatible provider read).
``usage``
    ``{"input_tokens", "cached_tokens", "output_tokens", "reasoning_tokens"}`` (aliases:
    ``prompt_tokens``, ``cached_input_tokens``/``cache_read_input_tokens``,
    ``completion_tokens``, ``reasoning_output_tokens``). OpenAI semantics: input includes the
    cached part, output includes reasoning; ``total_tokens`` is input + output unless given.
    Sent as the last chunk (``choices: []``) when the request asks for it
    (``stream_options.include_usage``), as OpenAI does; ``usage_mode`` overrides that:
    ``"chunk"`` (always a separate usage chunk), ``"final"`` (on the chunk carrying
    ``finish_reason``, as some compatible servers do) or ``"none"``.
``finish_reason``
    default ``"tool_calls"`` when there are calls, else ``"stop"``.
``model``, ``id``
    echoed in every chunk (defaults: the request's ``model``, a fresh ``chatcmpl-…``).
``delay``
    seconds the server waits before it answers (the time a real model takes to think).
``error``
    ``{"status": 429, "message": ..., "type": ...}``: answer this HTTP error instead.

``delay`` and ``error`` are applied by the server (``scripted_model``); ``render`` and
``completion`` ignore them. Standard library only; Python 3.9 syntax.
"""

import itertools
import json
import time

from responses_sse import scripted_call

__all__ = [
    "SHELL_TOOLS",
    "completion",
    "error_body",
    "parse_sse",
    "render",
    "shell_tool",
    "tool_messages",
    "usage_object",
]

# The shell tools of the clients that speak this API, in lookup order.
SHELL_TOOLS = ("bash", "run_shell_command", "shell", "Bash", "powershell")
_SHELL_ALIASES = ("shell", "Bash", "bash", None, "")

_counter = itertools.count(1)


def _next_id(prefix):
    return f"{prefix}{int(time.time() * 1000):012x}{next(_counter) % 10000:04d}"


def _functions(request):
    """Map every offered function name to its JSON schema (``parameters``)."""
    out = {}
    for tool in (request or {}).get("tools") or []:
        if not isinstance(tool, dict):
            continue
        function = tool.get("function") if isinstance(tool.get("function"), dict) else tool
        name = function.get("name")
        if isinstance(name, str):
            params = function.get("parameters")
            out[name] = params if isinstance(params, dict) else {}
    return out


def shell_tool(request):
    """The name of the shell tool the request offers (``bash`` when it offers none)."""
    names = _functions(request)
    for candidate in SHELL_TOOLS:
        if candidate in names:
            return candidate
    return "bash"


def _fill_required(schema, arguments, command):
    required = schema.get("required") if isinstance(schema, dict) else None
    properties = schema.get("properties") if isinstance(schema, dict) else None
    for key in required or ():
        if key in arguments:
            continue
        spec = (properties or {}).get(key) or {}
        if spec.get("type") == "string":
            arguments[key] = command if isinstance(command, str) else key
    return arguments


def _resolve_call(call, request):
    """Return (name, arguments as a JSON string, call id) for one scripted call."""
    name, arguments, call_id = scripted_call(call)
    call_id = call_id or _next_id("call_")
    functions = _functions(request)
    if name in _SHELL_ALIASES and name not in functions:
        name = shell_tool(request)
        if isinstance(arguments, dict):
            arguments = dict(arguments)
            command = arguments.pop("cmd", None) or arguments.get("command")
            if isinstance(command, list):
                command = " ".join(command)
            arguments["command"] = command
    if isinstance(arguments, dict):
        command = arguments.get("command")
        arguments = _fill_required(functions.get(name), dict(arguments), command)
        arguments = json.dumps(arguments)
    return name, str(arguments), call_id


def usage_object(usage):
    """The Chat Completions ``usage`` object for the scripted numbers (see the module doc)."""
    usage = usage or {}

    def pick(*keys):
        for key in keys:
            if usage.get(key) is not None:
                return int(usage[key])
        return 0

    prompt = pick("input_tokens", "prompt_tokens")
    cached = pick("cached_tokens", "cached_input_tokens", "cache_read_input_tokens")
    completion_tokens = pick("output_tokens", "completion_tokens")
    reasoning = pick("reasoning_tokens", "reasoning_output_tokens")
    total = usage.get("total_tokens")
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion_tokens,
        "total_tokens": int(total) if total is not None else prompt + completion_tokens,
        "prompt_tokens_details": {"cached_tokens": cached},
        "completion_tokens_details": {"reasoning_tokens": reasoning},
    }


def _calls(step):
    calls = step.get("tool_calls")
    if calls is None:
        calls = step.get("calls") or []
    return calls


def _finish_reason(step, calls):
    return step.get("finish_reason") or ("tool_calls" if calls else "stop")


def _usage_mode(step, request):
    mode = step.get("usage_mode")
    if mode in ("chunk", "final", "none"):
        return mode
    options = request.get("stream_options") or {}
    return "chunk" if isinstance(options, dict) and options.get("include_usage") else "none"


def _data(payload):
    return b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"


def _pieces(text, n=3):
    if not text:
        return [text]
    size = max(1, -(-len(text) // n))
    return [text[i : i + size] for i in range(0, len(text), size)]


def render(step, request):
    """The SSE chunks (a list of ``bytes``, one ``data:`` event each) of one streamed response."""
    step = step or {}
    request = request or {}
    head = {
        "id": step.get("id") or _next_id("chatcmpl-"),
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": step.get("model") or request.get("model") or "gpt-4.1",
        "system_fingerprint": "fp_scripted",
    }
    chunks = []

    def emit(delta, finish=None, **extra):
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        chunks.append(_data(dict(head, choices=[choice], **extra)))

    emit({"role": "assistant", "content": ""})
    if step.get("reasoning"):
        for piece in _pieces(step["reasoning"]):
            emit({"reasoning_content": piece})
    if step.get("text"):
        for piece in _pieces(step["text"]):
            emit({"content": piece})
    calls = _calls(step)
    for index, call in enumerate(calls):
        name, arguments, call_id = _resolve_call(call, request)
        opening = {"name": name, "arguments": ""}
        emit(
            {
                "tool_calls": [
                    {"index": index, "id": call_id, "type": "function", "function": opening}
                ]
            }
        )
        for piece in _pieces(arguments):
            emit({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    mode = _usage_mode(step, request)
    usage = usage_object(step.get("usage"))
    if mode == "final":
        emit({}, _finish_reason(step, calls), usage=usage)
    else:
        emit({}, _finish_reason(step, calls))
    if mode == "chunk":
        chunks.append(_data(dict(head, choices=[], usage=usage)))
    chunks.append(b"data: [DONE]\n\n")
    return chunks


def completion(step, request):
    """The whole response as one ``chat.completion`` object (a non-streamed request)."""
    step = step or {}
    request = request or {}
    calls = []
    for call in _calls(step):
        name, arguments, call_id = _resolve_call(call, request)
        function = {"name": name, "arguments": arguments}
        calls.append({"id": call_id, "type": "function", "function": function})
    message = {"role": "assistant", "content": step.get("text") or None}
    if step.get("reasoning"):
        message["reasoning_content"] = step["reasoning"]
    if calls:
        message["tool_calls"] = calls
    choice = {"index": 0, "message": message, "logprobs": None}
    choice["finish_reason"] = _finish_reason(step, calls)
    return {
        "id": step.get("id") or _next_id("chatcmpl-"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": step.get("model") or request.get("model") or "gpt-4.1",
        "choices": [choice],
        "usage": usage_object(step.get("usage")),
    }


def error_body(error):
    """The OpenAI error object for a step's ``error``."""
    detail = {
        "message": error.get("message", "scripted error"),
        "type": error.get("type", "server_error"),
        "param": None,
        "code": error.get("code"),
    }
    return {"error": detail}


def tool_messages(request):
    """The ``role: tool`` messages of a request: ``[(tool_call_id, content text), ...]``."""
    out = []
    for message in (request or {}).get("messages") or []:
        if not isinstance(message, dict) or message.get("role") != "tool":
            continue
        content = message.get("content")
        if isinstance(content, list):
            content = "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
        out.append((message.get("tool_call_id"), content if isinstance(content, str) else ""))
    return out


def parse_sse(chunks):
    """Parse the chunks (a list, or one bytes object) into the JSON payloads; ``[DONE]`` ends
    the list and must be the last event."""
    if isinstance(chunks, (bytes, bytearray)):
        chunks = [bytes(chunks)]
    text = b"".join(chunks).decode("utf-8")
    payloads = []
    blocks = [b for b in text.split("\n\n") if b.strip()]
    for position, block in enumerate(blocks):
        lines = block.split("\n")
        if len(lines) != 1 or not lines[0].startswith("data: "):
            raise ValueError(f"not one SSE data line: {block!r}")
        data = lines[0][len("data: ") :]
        if data == "[DONE]":
            if position != len(blocks) - 1:
                raise ValueError("[DONE] before the end of the stream")
            return payloads
        payloads.append(json.loads(data))
    raise ValueError("stream without [DONE]")
