"""The events that are no tool call, as Claude Code and Codex send them: a prompt of the person
(UserPromptSubmit) and a turn's end (Stop). Spend goes on with no tool call (long answers,
another plugin's Stop hook that keeps the turn going, a person re-prompting past the cap): here
the guard refuses the prompt or ends the turn when a cap is reached or the next request would
cross it."""

from .. import jsonio
from ..calls import END, PROMPT, Call
from ..decisions import REFUSAL_PREFIX, STOP

EVENTS = ("PreToolUse", "UserPromptSubmit", "Stop")
FIRED = {"UserPromptSubmit": PROMPT, "Stop": END}


def fired_call(host, payload, event, prompt_id):
    """The Call of a UserPromptSubmit or Stop payload."""
    return Call(
        host,
        payload.get("session_id"),
        event=FIRED[event],
        transcript_path=payload.get("transcript_path"),
        cwd=payload.get("cwd"),
        prompt_id=prompt_id,
    )


def render_stop(event, decision):
    """A new prompt refused (`decision: block`: the host drops it, starts no turn and shows the
    reason), or a turn ended (`continue: false`; never `decision: block` at Stop, which asks
    the host to go on). Anything short of a stop is not said: these events have no rungs."""
    if not decision or decision["kind"] != STOP:
        return ""
    reason = decision.get("person") or decision.get("model") or REFUSAL_PREFIX
    if event == "UserPromptSubmit":
        return jsonio.dumps({"decision": "block", "reason": reason})
    return jsonio.dumps({"continue": False, "stopReason": reason, "systemMessage": reason})
