"""Qwen Code: Claude-shaped hooks with its own tool names, and `chats/<session>.jsonl` files.

Seen on 0.24.4 (tests/fixtures/qwen/README.md):

- PreToolUse carries `tool_call_id`, the model's own call id that the chat file records; its
  `tool_use_id` is made up by Qwen and recorded nowhere. UserPromptSubmit fires before every
  model request of a run (`"prompt": ""` for the continuations after tool results).
- Answers: a PreToolUse deny is honoured (the reason goes to the model); `ask` asks the person
  in the interactive UI and is a deny in `-p`; `continue: false` and additionalContext are
  ignored there. The run ends only when UserPromptSubmit answers `continue: false`: a STOP
  refuses the call, and the next request of the run is not sent.
- Every model response, the subagents' included, appends a `qwen-code.api_response` telemetry
  record to the main chat file: the served model, the API's response id and the token counts
  (input includes cached input, output includes reasoning), usually on disk before the hook of
  the call it made, under load a moment later (then the next UserPromptSubmit sees it).
- Outcomes come from PostToolUse / PostToolUseFailure (neither fires for a refused call); the
  `tool_result` records (a subagent's in `../subagents/<session>/agent-<agent id>.jsonl`) tell
  the guard's own refusals and the person's interruptions apart.
"""

from .. import claude_prices, fs, jsonio
from ..calls import MODEL, NOT_JSON, RESULT, Call, canonical, count, fingerprint, ignore, tool_name
from ..decisions import ASK, DENY, REFUSAL_PREFIX, STOP
from ..jsonio import head_types
from . import hook_entry
from ._files import LONG, agent_file, each_line, follow, listed, local_day, read_all

NAME = "qwen"
LABEL = "Qwen Code"
RUNGS = frozenset({DENY, ASK, STOP})
TOOLS = {
    "run_shell_command": "Bash",
    "edit": "Edit",
    "notebook_edit": "Edit",
    "write_file": "Write",
    "read_file": "Read",
    "agent": "Agent",
}

INSTALL = {
    "home": {"variable": "QWEN_HOME", "default": ".qwen"},
    "user": {"settings": "settings.json", "skills": "skills"},
    "project": {"settings": ".qwen/settings.json", "skills": ".qwen/skills"},
    "binaries": ("qwen",),
    # UserPromptSubmit fires before every model request: its answer is the only one that ends a
    # run. PostToolUse/PostToolUseFailure report each outcome as the call ends: the chat file
    # may get it a moment later. No matcher: every tool (a group without one matches all).
    "entry": hook_entry("PreToolUse", "UserPromptSubmit", "PostToolUse", "PostToolUseFailure"),
    # Qwen Code's own rules, in Claude Code's syntax: Edit covers edit, write_file and
    # notebook_edit; they ask before those change the guard's folders.
    "guard_rules": {"list": ("permissions", "ask"), "rule": "Edit({path}/**)"},
    # Its statusLine runs a command with the session_id on stdin, as Claude Code's does.
    "status_line": {"key": "statusLine"},
    "after_install": (
        "Qwen Code: the hook applies from its next session, in every folder (trusted or not).",
    ),
    "after_install_project": (
        "{settings_name} now holds paths of this machine: keep it out of git if the project "
        "commits .qwen/.",
    ),
    "after_uninstall": "Qwen Code drops the hook from its next session.",
}

# Arguments that label a call for the person without changing what it does: a call that differs
# only in them is the same call to the loop wire (Qwen's own loop detector compares them too, so
# a model that rewords the label every time gets past it, but not past the guard).
_LABELS = {"run_shell_command": ("description",)}


def call(payload):
    event = payload.get("hook_event_name")
    if event not in ("PreToolUse", "UserPromptSubmit", "PostToolUse", "PostToolUseFailure"):
        return None
    session = payload.get("session_id")
    common = {
        "transcript_path": payload.get("transcript_path"),
        "cwd": payload.get("cwd"),
        "prompt_id": payload.get("prompt_id"),
    }
    if event == "UserPromptSubmit":
        # Before a model request (the person's prompt or a continuation): only a stop matters.
        return Call(NAME, session, event=MODEL, **common)
    # the model's own call id, the one the chat file records (Qwen's tool_use_id is its own)
    common["tool_use_id"] = payload.get("tool_call_id") or payload.get("tool_use_id")
    common["agent"] = payload.get("agent_id")
    if event != "PreToolUse":
        failed = event == "PostToolUseFailure" and payload.get("is_interrupt") is not True
        outcome = _reported_outcome(event, payload)
        return Call(NAME, session, event=RESULT, failed=failed, outcome=outcome, **common)
    raw_tool = payload.get("tool_name")
    tool_input = payload.get("tool_input")
    labels = _LABELS.get(raw_tool) if isinstance(raw_tool, str) else None
    if labels and isinstance(tool_input, dict):
        tool_input = {key: value for key, value in tool_input.items() if key not in labels}
    return Call(NAME, session, tool=tool_name(raw_tool, TOOLS), tool_input=tool_input, **common)


def render(decision):
    """One answer that means the same at PreToolUse and at UserPromptSubmit: PreToolUse reads
    the decision and ignores `continue`; UserPromptSubmit reads `continue` alone."""
    if not decision:
        return ""
    kind = decision["kind"]
    model_text = decision.get("model_text") or decision.get("person_text") or REFUSAL_PREFIX
    person_text = decision.get("person_text") or model_text
    if kind == ASK:
        # Shown to the person in the approval prompt; without one (-p) the model reads it.
        specific = {"permissionDecision": "ask", "permissionDecisionReason": person_text}
    else:
        specific = {"permissionDecision": "deny", "permissionDecisionReason": model_text}
    answer = {"hookSpecificOutput": dict(hookEventName="PreToolUse", **specific)}
    if kind == STOP:
        answer["continue"] = False
        answer["stopReason"] = person_text
    return jsonio.dumps(answer)


def sync(book, call):
    """Bring the book up to date with the session's chat file and its subagents' files."""
    if not (call.transcript_path and call.session_id):
        return False
    # <project dir>/chats/<session>.jsonl and <project dir>/subagents/<session>/agent-<id>.jsonl
    project_dir = fs.dirname(fs.dirname(call.transcript_path))
    folder = fs.join(project_dir, "subagents", call.session_id)
    for name in listed(book, folder) or ():
        if name.startswith("agent-") and name.endswith(".jsonl"):
            follow(book, fs.join(folder, name), {"agent": name[6:-6]})
    follow(book, call.transcript_path, {"agent": "main"})
    read_all(book, call.transcript_path, lambda entry: _Reader(book, entry), agent_file, call.agent)
    return True


def price(model, input_tokens, cached, output_tokens):
    """(picodollars, known) of one response as Qwen records it: input includes cached input,
    output includes reasoning. Claude models (Qwen's Anthropic provider) count cache writes
    inside input with nothing to tell them apart: they are priced as plain input."""
    cached = min(cached, input_tokens)
    return _pricer(model)(input_tokens, cached, 0, output_tokens)


def _pricer(model):
    # not normalize_model: `re` and its patterns cost a call as much as the interpreter's start
    return claude_prices.token_pricer(model, "claude" in model.lower())


def _reported_outcome(event, payload):
    """The fingerprint of what a call returned, as its post-tool hook reports it (a shell result
    without the process group line, which names a process)."""
    if event == "PostToolUseFailure":
        text = payload.get("error")
    else:
        response = payload.get("tool_response")
        text = response.get("llmContent") if isinstance(response, dict) else response
    if isinstance(text, str):
        text = "\n".join(line for line in text.split("\n") if not line.startswith(_VOLATILE))
    return fingerprint(text if isinstance(text, str) else canonical(text))


_VOLATILE = ("Process Group PGID:", "Background PIDs:")


def recorded_status(record):
    """What a `tool_result` record says of a call the post-tool hooks never report: the guard's
    own refusal ('guard'), a call the person interrupted ('reset'); None for the others."""
    result = record.get("toolCallResult")
    result = result if isinstance(result, dict) else {}
    if result.get("status") == "cancelled":
        return "reset"
    if result.get("status") == "error" and result.get("errorType") == "execution_denied":
        display = result.get("resultDisplay")
        if isinstance(display, str) and display.startswith(REFUSAL_PREFIX):
            return "guard"
    return None


class _Reader:
    """Turns one file's new lines into ledger entries."""

    def __init__(self, book, entry):
        self.book = book
        self.entry = entry
        # The main file records every response, the subagents' included: a subagent's file
        # only tells the outcomes of calls still waited for.
        self.main = entry["agent"] == "main"

    def __call__(self, raw):
        self.line(raw)

    def lines(self, data, start, stop):
        """Each whole line of data[start:stop], as line() would take it, but a long line whose
        head names a record that cannot matter (tool results while no call waits, the model's
        own turns) is passed over unread, and a subagent's file while no call waits at all."""
        if self.main or self.book.expecting():
            each_line(data, start, stop, self.line, self._passed_over)

    def _passed_over(self, data, start, end):
        if end - start <= LONG:
            return False
        kind = head_types(data, start, end)[0]
        if kind == "tool_result":
            return not self.book.expecting()
        return kind is not None and kind != "system"

    def line(self, raw):
        if b'"qwen-code.api_response"' in raw:
            if not self.main:
                return
            handler = self._response
        elif self.book.expecting() and b'"tool_result"' in raw and self.book.waiting_for(raw):
            handler = self._result
        else:
            return
        try:
            record = jsonio.loads(raw)
        except ValueError:
            ignore(NOT_JSON)
            return
        if isinstance(record, dict):
            handler(record)

    def _response(self, record):
        if record.get("type") != "system":
            return  # telemetry is written as system records (ui_telemetry)
        payload = record.get("systemPayload")
        event = payload.get("uiEvent") if isinstance(payload, dict) else None
        if not isinstance(event, dict) or event.get("event.name") != "qwen-code.api_response":
            return
        model = event.get("model")
        if not isinstance(model, str) or not model:
            return
        key = event.get("response_id") or record.get("uuid")
        if not isinstance(key, str) or not key:
            return
        agent = event.get("subagent_id")
        agent = agent if isinstance(agent, str) and agent else "main"
        out = count(event.get("output_token_count"))
        picodollars, known = price(
            model,
            count(event.get("input_token_count")),
            count(event.get("cached_content_token_count")),
            out,
        )
        day = local_day(record.get("timestamp"))
        ahead = (
            count(event.get("input_token_count")),
            count(event.get("cached_content_token_count")),
            _pricer(model),
        )
        self.book.usage(
            key,
            agent,
            model,
            picodollars=picodollars,
            known_model=known,
            output=out,
            day=day,
            ahead=ahead,
        )

    def _result(self, record):
        if record.get("type") != "tool_result":
            return
        result = record.get("toolCallResult")
        call_id = result.get("callId") if isinstance(result, dict) else None
        status = recorded_status(record)
        if isinstance(call_id, str) and call_id and status:
            self.book.result(call_id, status, None)
