"""Loops without tool calls: an agent that answers the same text turn after turn.

Copilot CLI's autopilot sends "keep working" after every answer that calls no tool, and a model
can answer it with the same words each time: no tool call, so the loop wire never sees it. A
host's reader gives each response of an agent here (note): the text of one without tool calls,
None for one with them. The agent's run of answers whose text is the same once normalised
(case and white space; an empty answer is "no new text" too) is kept as a hash and a count,
never the text. A person's prompt ends every run (reset). At max_repeats answers in a row the
wire stops the run: with no tool call to refuse, ending it is the one rung left.
"""

from .calls import fingerprint
from .decisions import STOP


def note(state, agent, text, key=None):
    """Count one response of agent: text without tool calls, None with them.

    key: the response's id, for a reader that may see one response in two reads (its rows
    written a little apart): an answer noted again counts in place of the first time. Nothing
    is kept of a response with tool calls (most of them): the state stays small."""
    loops = state.setdefault("text_loops", {})
    seen = loops.get(agent)
    if text is None:
        loops.pop(agent, None)
        return
    if key is not None and isinstance(seen, list) and seen[2:] == [key]:
        seen = [seen[0], seen[1] - 1] if seen[1] > 1 else None
    digest = fingerprint(" ".join(text.lower().split()))
    count = seen[1] + 1 if isinstance(seen, list) and seen[0] == digest else 1
    loops[agent] = [digest, count] if key is None else [digest, count, key]


def answered(state, agent):
    """Whether the last response of agent noted was an answer without tools."""
    return agent in state.get("text_loops", ())


def reset(state):
    """The person wrote: every agent's run of answers starts again."""
    state.pop("text_loops", None)


def wires(state, limit):
    """A stop for the first agent whose same answer came limit times in a row, else []."""
    loops = state.get("text_loops")
    if not loops:
        return []
    for agent, seen in loops.items():
        count = seen[1]
        if count >= limit:
            who = "the agent" if agent == "main" else f"subagent {agent}"
            return [
                {
                    "kind": STOP,
                    "wire": "loop",
                    "model_text": (
                        f"runaway-guard: {who} gave the same answer {count} times in a row "
                        "without calling a tool. Stop and tell the user what is blocking you."
                    ),
                    "person_text": f"runaway-guard stopped the run: {who} answered the same text "
                    f"{count} times in a row without a tool call (limit {limit}).",
                }
            ]
    return []
