"""OpenAI Responses API streaming (SSE) for the scripted model server.

``render(step, request)`` turns one scripted step into the server-sent events of one model
response, the way ``POST /v1/responses`` streams them: ``response.created``, then for every output
item ``response.output_item.added`` … ``response.output_item.done``, then ``response.completed``
carrying ``usage``. Codex 0.169 builds its history from ``output_item.done`` and its token counts
from ``response.completed.response.usage``.

A step is a dict (every key optional, but a step should have calls or text):

``tool_calls`` (alias ``calls``)
    list of calls. Each call is ``{"name": ..., "arguments": {...}}`` (optional ``call_id``), or
    the shortcut ``{"shell": "<command line>"}``. The names ``shell``, ``Bash`` and ``bash`` (and
    a call with no name) mean "the shell tool Codex offers": it is looked up in the request's
    ``tools`` (``exec_command`` with ``cmd``, ``shell_command`` with ``command``, or ``shell`` with
    an argv ``command``) and the arguments are adapted (``{"command": "ls"}`` becomes
    ``{"cmd": "ls"}`` for ``exec_command``). A tool the request offers as ``"type": "custom"``
    (Codex's ``apply_patch``) becomes a ``custom_tool_call`` whose ``input`` is the string
    ``arguments`` (or ``arguments["input"]``). Any other name is sent as is; a name that Codex
    offers inside a namespace (``{"type": "namespace"}`` tool, e.g. the multi-agent tools) gets
    the ``namespace`` field set on the call item.
``text``
    a final assistant message (may come together with calls, after them in the output).
``reasoning``
    a reasoning summary text; emitted first as a ``reasoning`` item.
``usage``
    ``{"input_tokens", "cached_tokens", "output_tokens", "reasoning_tokens"}``; aliases
    ``cached_input_tokens`` / ``cache_read_input_tokens`` and ``reasoning_output_tokens`` are
    accepted. ``input_tokens`` includes the cached part, ``output_tokens`` includes reasoning
    (OpenAI semantics). ``total_tokens`` is input + output unless given.
``model``
    the model name echoed in the response (default: the request's ``model``).
``id``
    the response id (default: a fresh ``resp_…``).

Standard library only; Python 3.9 syntax.
"""

import itertools
import json
import time

__all__ = ["SHELL_ALIASES", "parse_sse", "render", "scripted_call", "shell_tool", "usage_object"]

SHELL_ALIASES = ("shell", "Bash", "bash", None, "")

_counter = itertools.count(1)


def _next_id(prefix):
    return f"{prefix}_{int(time.time() * 1000):012x}{next(_counter) % 10000:04d}"


def _tools(request):
    tools = (request or {}).get("tools") or []
    return [t for t in tools if isinstance(t, dict)]


def _custom_tools(request):
    """Names of the freeform ("custom") tools offered, e.g. Codex's ``apply_patch``."""
    return {t.get("name") for t in _tools(request) if t.get("type") == "custom"}


def _tool_names(request):
    """Map every offered tool name to its namespace (None for top-level tools)."""
    names = {}
    for tool in _tools(request):
        if tool.get("type") == "namespace":
            for sub in tool.get("tools") or []:
                if isinstance(sub, dict) and sub.get("name"):
                    names.setdefault(sub["name"], tool.get("name"))
        elif tool.get("name"):
            names[tool["name"]] = None
    return names


def shell_tool(request):
    """The name of the shell tool the request offers (exec_command, shell_command or shell)."""
    names = _tool_names(request)
    for candidate in ("exec_command", "shell_command", "shell", "local_shell"):
        if candidate in names:
            return candidate
    return "exec_command"


def _shell_arguments(tool, arguments):
    args = dict(arguments or {})
    command = args.pop("cmd", None)
    if command is None:
        command = args.pop("command", None)
    if isinstance(command, list):
        command = " ".join(command)
    if tool == "exec_command":
        args["cmd"] = command
    elif tool == "shell":
        args["command"] = ["bash", "-lc", command]
    else:  # shell_command / local_shell
        args["command"] = command
    return args


def scripted_call(call):
    """(name, arguments, call id or None) of one scripted call, whichever API renders it:
    ``{"name", "arguments"}`` (or ``"input"``), or the shortcut ``{"shell": "<command line>"}``
    (name ``shell``, arguments ``{"command": ...}``); the id is ``call_id`` or ``id``."""
    call_id = call.get("call_id") or call.get("id")
    if "shell" in call and "name" not in call:
        return "shell", {"command": call["shell"]}, call_id
    arguments = call.get("arguments")
    if arguments is None:
        arguments = call.get("input") or {}
    return call.get("name"), arguments, call_id


def _resolve_call(call, request):
    """Return (name, namespace, arguments dict, call_id) for one scripted call."""
    name, arguments, call_id = scripted_call(call)
    call_id = call_id or _next_id("call")
    names = _tool_names(request)
    if name in SHELL_ALIASES and name not in names:
        name = shell_tool(request)
        arguments = _shell_arguments(name, arguments)
    elif name == "shell" and name in names:
        arguments = _shell_arguments(name, arguments)
    namespace = call.get("namespace", names.get(name))
    return name, namespace, arguments, call_id


def usage_object(usage):
    """The Responses API ``usage`` object for the scripted numbers."""
    usage = usage or {}
    input_tokens = int(usage.get("input_tokens", 0))
    cached = usage.get("cached_tokens")
    if cached is None:
        cached = usage.get("cached_input_tokens", usage.get("cache_read_input_tokens", 0))
    output_tokens = int(usage.get("output_tokens", 0))
    reasoning = usage.get("reasoning_tokens", usage.get("reasoning_output_tokens", 0))
    total = usage.get("total_tokens")
    if total is None:
        total = input_tokens + output_tokens
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": int(cached)},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": int(reasoning)},
        "total_tokens": int(total),
    }


def _event(kind, payload):
    payload = dict(payload)
    payload["type"] = kind
    data = json.dumps(payload, separators=(",", ":"))
    return (f"event: {kind}\ndata: {data}\n\n").encode()


def _response(resp_id, model, status, output, usage=None):
    body = {
        "id": resp_id,
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "error": None,
        "incomplete_details": None,
    }
    if usage is not None:
        body["usage"] = usage
    return body


def render(step, request):
    """The SSE events (a list of ``bytes``, one per event) for one scripted model response."""
    step = step or {}
    request = request or {}
    resp_id = step.get("id") or _next_id("resp")
    model = step.get("model") or request.get("model") or "gpt-5.5"
    events = []
    seq = itertools.count()

    def emit(kind, payload):
        payload = dict(payload)
        payload["sequence_number"] = next(seq)
        events.append(_event(kind, payload))

    emit("response.created", {"response": _response(resp_id, model, "in_progress", [])})
    output = []

    def add_item(done_item, added_item, between=()):
        index = len(output)
        emit("response.output_item.added", {"output_index": index, "item": added_item})
        for kind, payload in between:
            payload = dict(payload)
            payload["output_index"] = index
            emit(kind, payload)
        emit("response.output_item.done", {"output_index": index, "item": done_item})
        output.append(done_item)

    reasoning = step.get("reasoning")
    if reasoning:
        rs_id = _next_id("rs")
        part = {"type": "summary_text", "text": reasoning}
        done = {"type": "reasoning", "id": rs_id, "summary": [part]}
        added = {"type": "reasoning", "id": rs_id, "summary": []}
        add_item(
            done,
            added,
            [
                (
                    "response.reasoning_summary_part.added",
                    {
                        "item_id": rs_id,
                        "summary_index": 0,
                        "part": {"type": "summary_text", "text": ""},
                    },
                ),
                (
                    "response.reasoning_summary_text.delta",
                    {"item_id": rs_id, "summary_index": 0, "delta": reasoning},
                ),
                (
                    "response.reasoning_summary_text.done",
                    {"item_id": rs_id, "summary_index": 0, "text": reasoning},
                ),
                (
                    "response.reasoning_summary_part.done",
                    {"item_id": rs_id, "summary_index": 0, "part": part},
                ),
            ],
        )

    calls = step.get("tool_calls")
    if calls is None:
        calls = step.get("calls") or []
    custom = _custom_tools(request)
    for call in calls:
        name, namespace, arguments, call_id = _resolve_call(call, request)
        fc_id = _next_id("fc" if name not in custom else "ctc")
        if name in custom:
            # freeform tool: the raw text goes in "input" (apply_patch: the patch text)
            if isinstance(arguments, dict):
                arguments = arguments.get("input", arguments.get("patch", ""))
            done = {
                "type": "custom_tool_call",
                "id": fc_id,
                "call_id": call_id,
                "name": name,
                "input": arguments,
                "status": "completed",
            }
            deltas = [
                ("response.custom_tool_call_input.delta", {"item_id": fc_id, "delta": arguments}),
                ("response.custom_tool_call_input.done", {"item_id": fc_id, "input": arguments}),
            ]
            add_item(done, dict(done, input="", status="in_progress"), deltas)
            continue
        text = arguments if isinstance(arguments, str) else json.dumps(arguments)
        done = {
            "type": "function_call",
            "id": fc_id,
            "call_id": call_id,
            "name": name,
            "arguments": text,
            "status": "completed",
        }
        if namespace:
            done["namespace"] = namespace
        added = dict(done, arguments="", status="in_progress")
        add_item(
            done,
            added,
            [
                ("response.function_call_arguments.delta", {"item_id": fc_id, "delta": text}),
                (
                    "response.function_call_arguments.done",
                    {"item_id": fc_id, "arguments": text},
                ),
            ],
        )

    text = step.get("text")
    if text is not None:
        msg_id = _next_id("msg")
        part = {"type": "output_text", "text": text, "annotations": []}
        done = {
            "type": "message",
            "id": msg_id,
            "role": "assistant",
            "status": "completed",
            "content": [part],
        }
        added = dict(done, content=[], status="in_progress")
        where = {"item_id": msg_id, "content_index": 0}
        add_item(
            done,
            added,
            [
                (
                    "response.content_part.added",
                    dict(where, part={"type": "output_text", "text": "", "annotations": []}),
                ),
                ("response.output_text.delta", dict(where, delta=text)),
                ("response.output_text.done", dict(where, text=text)),
                ("response.content_part.done", dict(where, part=part)),
            ],
        )

    usage = usage_object(step.get("usage"))
    emit("response.completed", {"response": _response(resp_id, model, "completed", output, usage)})
    return events


def parse_sse(chunks):
    """Parse SSE bytes (a list of chunks or one bytes object) into a list of (event, data dict)."""
    if isinstance(chunks, (bytes, bytearray)):
        chunks = [bytes(chunks)]
    text = b"".join(chunks).decode("utf-8")
    parsed = []
    for block in text.split("\n\n"):
        if not block.strip():
            continue
        kind, data = None, []
        for line in block.split("\n"):
            if line.startswith("event:"):
                kind = line[len("event:") :].strip()
            elif line.startswith("data:"):
                data.append(line[len("data:") :].strip())
            else:
                raise ValueError(f"not an SSE line: {line!r}")
        parsed.append((kind, json.loads("\n".join(data))))
    return parsed
