"""The Gemini API (``generativelanguage`` v1beta) for the scripted model server.

Gemini CLI 0.61.0 (through ``@google/genai``) sends every agent turn as
``POST /v1beta/models/<model>:streamGenerateContent?alt=sse`` and utility calls (the ``auto``
router's classifier, loop checks, summaries) as ``POST …/<model>:generateContent``; it may also
ask ``…:countTokens``. ``render_stream(step, request, model)`` turns one scripted step into the
server-sent events of one streamed response (``data: {json}\\r\\n\\r\\n`` per chunk, the way the
real API frames them); ``render_json`` gives the one-object answer of ``generateContent``.

The CLI records, per model response, the ``usageMetadata`` of the *last* chunk that carried one
(``geminiChat.processStreamResponse``): ``promptTokenCount`` (cached part included),
``candidatesTokenCount``, ``cachedContentTokenCount``, ``thoughtsTokenCount``,
``toolUsePromptTokenCount``, ``totalTokenCount``. So the final chunk always carries the scripted
usage; earlier chunks carry only the prompt count (as the real API does), unless the step says
``"partial_usage": False``.

A step is a dict (every key optional, but a step should have calls or text):

``calls``
    list of calls: ``{"name": ..., "args": {...}}`` (optional ``id``), or the shortcut
    ``{"shell": "<command line>"}`` (Gemini CLI's ``run_shell_command`` with ``command``).
``text``
    the model's text (after the calls in the response, split over ``chunks`` chunks).
``thought``
    a thought summary (a ``{"text": ..., "thought": true}`` part, sent first).
``usage``
    the scripted usage: API names (``promptTokenCount`` …) or the short names ``prompt``
    (alias ``input``), ``output``, ``cached``, ``thoughts``, ``tool``; see ``usage_metadata``.
``model``
    ``modelVersion`` echoed in every chunk (default: the model in the request path).
``finish``
    ``finishReason`` of the last chunk (default ``"STOP"``; ``None`` sends none).
``chunks``
    how many chunks the text is split into (default 2).
``error``
    ``{"status": 429, "message": ..., "status_text": "RESOURCE_EXHAUSTED"}``: answer an error.
``id``
    the ``responseId`` (default: a fresh one).

Standard library only; Python 3.9 syntax.
"""

import itertools
import json
import time

__all__ = [
    "SHELL_TOOL",
    "contents",
    "first_user_text",
    "function_responses",
    "is_gemini_path",
    "last_user_text",
    "model_of",
    "parse_sse",
    "render_json",
    "render_stream",
    "tool_names",
    "usage_metadata",
]

SHELL_TOOL = "run_shell_command"
DEFAULT_USAGE = {"prompt": 100, "output": 10}
FINAL_TEXT = "Done."

_counter = itertools.count(1)


def _next_id(prefix):
    return f"{prefix}{int(time.time() * 1000):x}{next(_counter) % 100000:05d}"


# ---------------------------------------------------------------------------------------------
# requests


def is_gemini_path(path):
    """Which Gemini API method a request path asks for: ``"stream"``, ``"generate"``,
    ``"count"``, or None."""
    if ":streamGenerateContent" in path:
        return "stream"
    if ":generateContent" in path:
        return "generate"
    if ":countTokens" in path:
        return "count"
    return None


def model_of(path):
    """The model of ``/v1beta/models/<model>:<method>`` (None if the path has none)."""
    head = path.rsplit(":", 1)[0]
    if "/models/" not in head:
        return None
    return head.rsplit("/models/", 1)[1] or None


def contents(body):
    """The request's ``contents`` list (dict entries only)."""
    items = (body or {}).get("contents") if isinstance(body, dict) else None
    return [c for c in items or [] if isinstance(c, dict)]


def _parts(content):
    return [p for p in content.get("parts") or [] if isinstance(p, dict)]


def _text_of(content):
    texts = [p.get("text") for p in _parts(content) if not p.get("thought")]
    return "\n".join(t for t in texts if isinstance(t, str))


def _user_texts(body):
    return [
        _text_of(c)
        for c in contents(body)
        if c.get("role") == "user" and any("text" in p for p in _parts(c))
    ]


def first_user_text(body):
    """The text of the first user content that has text (a subagent's is its task)."""
    texts = _user_texts(body)
    return texts[0] if texts else ""


def last_user_text(body):
    """The text of the last user content that has text."""
    texts = _user_texts(body)
    return texts[-1] if texts else ""


def function_responses(body, last_only=True):
    """The ``functionResponse`` objects in the request: those of the last content (the results
    the model is being shown now), or every one in the history."""
    found = contents(body)
    if last_only:
        found = found[-1:]
    out = []
    for content in found:
        out += [p["functionResponse"] for p in _parts(content) if "functionResponse" in p]
    return out


def tool_names(body):
    """Names of the function declarations the request offers."""
    names = []
    for tool in (body or {}).get("tools") or []:
        if isinstance(tool, dict):
            for decl in tool.get("functionDeclarations") or []:
                if isinstance(decl, dict) and decl.get("name"):
                    names.append(decl["name"])
    return names


# ---------------------------------------------------------------------------------------------
# responses

_SHORT = {
    "prompt": "promptTokenCount",
    "input": "promptTokenCount",
    "output": "candidatesTokenCount",
    "cached": "cachedContentTokenCount",
    "thoughts": "thoughtsTokenCount",
    "tool": "toolUsePromptTokenCount",
}


def usage_metadata(usage=None):
    """The ``usageMetadata`` object for the scripted numbers.

    ``promptTokenCount`` includes the cached part; ``totalTokenCount`` is prompt + candidates +
    thoughts + tool-use prompt unless given. Zero counts other than prompt and candidates are
    left out, as the real API leaves them out.
    """
    usage = dict(DEFAULT_USAGE if usage is None else usage)
    meta = {}
    for key, value in usage.items():
        meta[_SHORT.get(key, key)] = int(value)
    meta.setdefault("promptTokenCount", 0)
    meta.setdefault("candidatesTokenCount", 0)
    for key in ("cachedContentTokenCount", "thoughtsTokenCount", "toolUsePromptTokenCount"):
        if not meta.get(key):
            meta.pop(key, None)
    meta.setdefault(
        "totalTokenCount",
        meta["promptTokenCount"]
        + meta["candidatesTokenCount"]
        + meta.get("thoughtsTokenCount", 0)
        + meta.get("toolUsePromptTokenCount", 0),
    )
    return meta


def _call_part(call):
    call = dict(call)
    if "shell" in call and "name" not in call:
        call = {"name": SHELL_TOOL, "args": {"command": call["shell"]}}
    fc = {"name": call["name"], "args": dict(call.get("args") or {})}
    if call.get("id"):
        fc["id"] = call["id"]
    part = {"functionCall": fc}
    if call.get("thoughtSignature"):
        part["thoughtSignature"] = call["thoughtSignature"]
    return part


def _split(text, n):
    if not text or n <= 1:
        return [text]
    size = max(1, -(-len(text) // n))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _chunk_parts(step):
    """The parts of each streamed chunk, in order."""
    chunks = []
    if step.get("thought"):
        chunks.append([{"text": step["thought"], "thought": True}])
    calls = [_call_part(c) for c in step.get("calls") or []]
    if calls:
        chunks.append(calls)
    text = step.get("text")
    if text is None and not calls:
        text = FINAL_TEXT
    if text is not None:
        chunks += [[{"text": piece}] for piece in _split(text, int(step.get("chunks", 2)))]
    return chunks or [[{"text": ""}]]


def render_stream(step, request=None, model=None):
    """The SSE chunks (a list of ``bytes``) of one streamed response."""
    step = step or {}
    model = step.get("model") or model or "gemini-2.5-flash"
    resp_id = step.get("id") or _next_id("resp")
    usage = usage_metadata(step.get("usage"))
    partial = {"promptTokenCount": usage["promptTokenCount"]}
    partial["totalTokenCount"] = usage["promptTokenCount"]
    chunk_parts = _chunk_parts(step)
    out = []
    for index, parts in enumerate(chunk_parts):
        last = index == len(chunk_parts) - 1
        candidate = {"content": {"role": "model", "parts": parts}, "index": 0}
        chunk = {"candidates": [candidate]}
        if last:
            finish = step.get("finish", "STOP")
            if finish:
                candidate["finishReason"] = finish
            chunk["usageMetadata"] = usage
        elif step.get("partial_usage", True):
            chunk["usageMetadata"] = partial
        chunk["modelVersion"] = model
        chunk["responseId"] = resp_id
        out.append(b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\r\n\r\n")
    return out


def render_json(step, request=None, model=None):
    """The ``generateContent`` answer: every part in one candidate, the usage, the model."""
    step = step or {}
    parts = [p for chunk in _chunk_parts(dict(step, chunks=1)) for p in chunk]
    candidate = {"content": {"role": "model", "parts": parts}, "index": 0}
    if step.get("finish", "STOP"):
        candidate["finishReason"] = step.get("finish", "STOP")
    return {
        "candidates": [candidate],
        "usageMetadata": usage_metadata(step.get("usage")),
        "modelVersion": step.get("model") or model or "gemini-2.5-flash",
        "responseId": step.get("id") or _next_id("resp"),
    }


def error_body(error):
    """``(status, body)`` of a Google API error."""
    status = int(error.get("status", 500))
    detail = {
        "code": status,
        "message": error.get("message", "scripted error"),
        "status": error.get("status_text", "INTERNAL"),
    }
    return status, {"error": detail}


def parse_sse(chunks):
    """Parse ``data:`` SSE bytes (a list of chunks or one bytes object) into a list of dicts."""
    if isinstance(chunks, (bytes, bytearray)):
        chunks = [bytes(chunks)]
    text = b"".join(chunks).decode("utf-8").replace("\r\n", "\n")
    out = []
    for block in text.split("\n\n"):
        if not block.strip():
            continue
        data = []
        for line in block.split("\n"):
            if not line.startswith("data:"):
                raise ValueError(f"not an SSE data line: {line!r}")
            data.append(line[len("data:") :].strip())
        out.append(json.loads("\n".join(data)))
    return out
