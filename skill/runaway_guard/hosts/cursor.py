"""Cursor (IDE agent and `cursor-agent`): its hooks.json events, its answers, spend at `stop`.

Cursor could not be run here; everything below is from its documentation and from payloads
other projects recorded (tests/fixtures/cursor/README.md, with sources):

- `preToolUse` fires before every tool (Shell, Read, Write, StrReplace, Delete, Task, MCP:...)
  with `conversation_id`, `generation_id` (new with every message of the person),
  `tool_name`, `tool_input`, `tool_use_id`. Its answer is `permission` "allow" | "deny" with
  `user_message` / `agent_message`; "ask" is "accepted by the schema but not enforced" there,
  and no answer ends the run. The CLI blocks the call when the output is empty or has no
  `permission`, so "nothing to say" is `{"permission": "allow"}`: Cursor's staff state that
  hooks "can only deny actions", so an allow never grants what the person's own settings would
  have asked about.
- A shell call also fires `beforeShellExecution` when something is registered there. The
  guard counts and decides at `preToolUse` only (it fires for every tool): a
  `beforeShellExecution` is answered allow, which cannot undo a deny given at `preToolUse`.
- `postToolUse` (a Shell's `tool_output` is a JSON string with `exitCode`) and
  `postToolUseFailure` (`failure_type` error | timeout | permission_denied) give outcomes.
- Transcripts hold no usage. Only `stop` (once per agent turn, undocumented, cursor-agent
  2026.06 and later) carries `input_tokens`, `output_tokens`, `cache_read_tokens`,
  `cache_write_tokens` and `model` (often "default", Auto): spend is seen one turn late.
"""

from .. import claude_prices, jsonio, openai_prices
from ..calls import END, RESULT, Call, count, fingerprint, ignored, tool_name
from ..decisions import DENY
from ..estimate import LAST_COST
from . import hook_entry
from ._files import local_day, say_ignored

NAME = "cursor"
LABEL = "Cursor"
RUNGS = frozenset({DENY})
TOOLS = {
    "Shell": "Bash",
    "Write": "Write",
    "Delete": "Write",
    "StrReplace": "Edit",
    "Edit": "Edit",
    "MultiEdit": "Edit",
    "Read": "Read",
    "Task": "Agent",
}

# Only event names Cursor documents: one it does not know disables the whole hooks.json.
_EVENTS = ("preToolUse", "postToolUse", "postToolUseFailure", "stop")
INSTALL = {
    # Cursor reads no variable for its folder: always ~/.cursor.
    "home": {"variable": "", "default": ".cursor"},
    "user": {"settings": "hooks.json", "skills": "skills"},
    "project": {"settings": ".cursor/hooks.json", "skills": ".cursor/skills"},
    "binaries": ("cursor-agent", "cursor"),
    # The CLI blocks a call whose hook printed nothing: when the guard cannot even start, the
    # command itself answers allow.
    "entry": dict(
        hook_entry(*_EVENTS, grouped=False),
        new_file={"version": 1},
        fallback='{"permission":"allow"}',
    ),
    "after_install": (
        "Cursor: it reloads hooks.json by itself (Hooks tab in Customize shows them). The guard "
        "refuses calls but cannot end a turn, and sees spend only when a turn ends (the stop "
        "hook of cursor-agent 2026.06 or later): a cap is enforced one turn late.",
    ),
    "after_install_project": ("Project hooks run only in a trusted workspace.",),
    "after_uninstall": "Cursor drops the hook when it reloads hooks.json.",
}

# The events whose answer is a permission (the CLI blocks when it is missing).
_PERMISSION_EVENTS = frozenset(
    {"preToolUse", "beforeShellExecution", "beforeMCPExecution", "beforeReadFile", "subagentStart"}
)
# Claude Code's names, for the hooks Cursor runs from Claude's settings files.
_ALIASES = {
    "PreToolUse": "preToolUse",
    "PostToolUse": "postToolUse",
    "PostToolUseFailure": "postToolUseFailure",
    "Stop": "stop",
}
# What the current process answers (a hook process handles one payload): set by call().
_event = ["preToolUse"]


def call(payload):
    event = payload.get("hook_event_name")
    if not isinstance(event, str):
        return None  # every documented payload names its event
    event = _ALIASES.get(event, event)
    _event[0] = event
    session = payload.get("conversation_id") or payload.get("session_id")
    common = {
        "transcript_path": payload.get("transcript_path"),
        "cwd": _cwd(payload),
        "prompt_id": payload.get("generation_id"),
        "model": payload.get("model"),
    }
    if event == "preToolUse":
        raw_tool = payload.get("tool_name")
        return Call(
            NAME,
            session,
            tool=tool_name(raw_tool, TOOLS),
            tool_input=_tool_input(raw_tool, payload.get("tool_input")),
            tool_use_id=payload.get("tool_use_id"),
            **common,
        )
    if event in ("postToolUse", "postToolUseFailure"):
        failed, outcome = _outcome(event, payload)
        return Call(
            NAME,
            session,
            event=RESULT,
            tool_use_id=payload.get("tool_use_id"),
            failed=failed,
            outcome=outcome,
            **common,
        )
    if event == "stop":
        usage = {key: count(payload.get(key)) for key in _TOKENS}
        model = payload.get("model")
        stop = Call(NAME, session, event=END, **common)
        if any(usage.values()) and isinstance(model, str) and model:
            loop = count(payload.get("loop_count"))
            stop.tool_input = {"usage": usage, "key": f"{stop.prompt_id}:{loop}"}
        return stop
    return None  # beforeShellExecution and the rest: counted at preToolUse, or nothing to do


def render(decision):
    """A permission for the events that need one, `{}` for the others."""
    if _event[0] not in _PERMISSION_EVENTS:
        # a prompt the person submits goes through (the cookbook's own allow)
        return '{"continue":true}' if _event[0] == "beforeSubmitPrompt" else "{}"
    if not decision:
        return '{"permission":"allow"}'
    model_text = decision.get("model_text") or decision.get("person_text") or ""
    person_text = decision.get("person_text") or model_text
    return jsonio.dumps(
        {
            "permission": "deny",
            "user_message": person_text,
            "agent_message": model_text,
            # the same refusal in Claude Code's words, for a hook Cursor runs from Claude's
            # settings (tokensave #188 answers both ways and is honoured by cursor-agent)
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": model_text,
            },
        }
    )


def sync(book, call):
    """No session file holds spend or outcomes: a stop's tokens are booked as they arrive."""
    if call.event == END and isinstance(call.tool_input, dict):
        usage = call.tool_input["usage"]
        picodollars, known = price(call.model, usage)
        book.usage(
            call.tool_input["key"],
            "main",
            call.model,
            picodollars=picodollars,
            known_model=known,
            output=usage["output_tokens"],
            day=local_day(None),
            ahead=LAST_COST,
        )
    if ignored:
        say_ignored(book)
    return False


_TOKENS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


def price(model, usage):
    """(picodollars, known) of one agent turn. Whether Cursor's `input_tokens` includes the
    cached tokens is disputed (tests/fixtures/cursor/README.md): they are counted on top of it,
    the dearer reading. "default" (Auto) and other ids not in the table are priced at the
    dearest model of either table and reported as unpriced."""
    inp, out = usage["input_tokens"], usage["output_tokens"]
    read, write = usage["cache_read_tokens"], usage["cache_write_tokens"]
    claude = claude_prices.claude_cost(
        model,
        {
            "input_tokens": inp,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": write,
            "output_tokens": out,
        },
    )
    if "claude" in model.lower() and claude[1]:
        return claude
    openai = openai_prices.openai_cost(
        model,
        {
            "input_tokens": inp + read + write,
            "cached_input_tokens": read,
            "cache_write_input_tokens": write,
            "output_tokens": out,
        },
    )
    if openai[1]:
        return openai
    return max(claude[0], openai[0]), False


def _cwd(payload):
    roots = payload.get("workspace_roots")
    if isinstance(roots, list) and roots and isinstance(roots[0], str):
        return roots[0]
    return payload.get("cwd")


def _tool_input(raw_tool, tool_input):
    """A Shell call is its command and folder: its timeout does not change what it does."""
    if raw_tool == "Shell" and isinstance(tool_input, dict):
        folder = tool_input.get("working_directory", tool_input.get("cwd"))
        return {"command": tool_input.get("command"), "cwd": folder or None}
    return tool_input


def _outcome(event, payload):
    """(failed, fingerprint) of a post-tool payload."""
    if event == "postToolUseFailure":
        # a call the person (or another hook) turned down, or interrupted, is no failure of the
        # agent's: it ends a failure run instead of extending it
        declined = payload.get("failure_type") == "permission_denied"
        failed = not declined and payload.get("is_interrupt") is not True
        return failed, fingerprint([payload.get("failure_type"), payload.get("error_message")])
    output = payload.get("tool_output")
    parsed = None
    if isinstance(output, str) and output.startswith("{"):
        try:
            parsed = jsonio.loads(output)
        except ValueError:
            parsed = None
    if isinstance(parsed, dict) and "exitCode" in parsed:
        code = parsed.get("exitCode")
        failed = not isinstance(code, bool) and isinstance(code, int) and code != 0
        return failed, fingerprint([parsed.get("output"), code])
    return False, fingerprint(output)
