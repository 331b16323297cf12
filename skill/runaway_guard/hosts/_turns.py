"""The events that are no tool call, as Claude Code and Codex send them: a prompt of the person
(UserPromptSubmit) and a turn's end (Stop). Spend goes on with no tool call (long answers,
another plugin's Stop hook that keeps the turn going, a person re-prompting past the cap): here
the guard refuses the prompt or ends the turn when a cap is reached or the next request would
cross it. Claude Code also sends PostToolUse where the guard asks for it (after a subagent's
end: its Agent tool), the one point between a subagent's last response and the main thread's
next request."""

from .. import jsonio
from ..calls import END, MODEL, PROMPT, Call
from ..decisions import REFUSAL_PREFIX, STOP

EVENTS = ("PreToolUse", "UserPromptSubmit", "Stop")
FIRED = {"UserPromptSubmit": PROMPT, "Stop": END, "PostToolUse": MODEL}
# A stop of one agent's own wires ended that agent (a subagent's: the main thread goes on and
# its own calls are judged); after a subagent's end only what holds the session ends the run.
_AGENTS_OWN = ("failure", "loop")
_event = [EVENTS[0]]  # the event of the payload being answered (render_stop answers per event)


def turn_call(host, payload, prompt_key):
    """(whether the payload is no PreToolUse, its Call): a UserPromptSubmit's or Stop's Call,
    None for an event the guard is not installed for; (False, None) for a PreToolUse, which
    the host reads itself. prompt_key names the field that changes with each prompt."""
    event = payload.get("hook_event_name", EVENTS[0])
    _event[0] = event if isinstance(event, str) else ""
    if _event[0] == EVENTS[0]:
        return False, None
    if _event[0] not in FIRED:
        return True, None
    call = Call(
        host,
        payload.get("session_id"),
        event=FIRED[_event[0]],
        transcript_path=payload.get("transcript_path"),
        cwd=payload.get("cwd"),
        agent=payload.get("agent_id"),
        prompt_id=payload.get(prompt_key),
    )
    return True, call


def answering_turn():
    """Whether the payload answered is a UserPromptSubmit or Stop (render_stop answers it)."""
    return _event[0] in FIRED


def render_stop(decision):
    """A new prompt refused (`decision: block`: the host drops it, starts no turn and shows the
    reason), or a turn ended (`continue: false`; never `decision: block` at Stop, which asks
    the host to go on, nor at PostToolUse, which only tells the model). Anything short of a
    stop is not said: these events have no rungs."""
    if not decision or decision["kind"] != STOP:
        return ""
    if _event[0] == "PostToolUse" and decision.get("wire") in _AGENTS_OWN:
        return ""
    reason = decision.get("person_text") or decision.get("model_text") or REFUSAL_PREFIX
    if _event[0] == "UserPromptSubmit":
        return jsonio.dumps({"decision": "block", "reason": reason})
    return jsonio.dumps({"continue": False, "stopReason": reason, "systemMessage": reason})
