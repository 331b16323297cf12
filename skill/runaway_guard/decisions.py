"""Decisions, weakest first: what the guard wants the host to do with a call.

A decision is a dict: {"kind": TELL|DENY|ASK|STOP, "wire": name, "model_text": what the model
is told, "person_text": what the person is told}. Each host answers only some kinds (its
RUNGS); `fit` turns a decision into the strongest one the host can express.
"""

TELL, DENY, ASK, STOP = "tell", "deny", "ask", "stop"
STRENGTH = {None: 0, TELL: 1, DENY: 2, ASK: 3, STOP: 4}

# Every reason the guard gives starts with this: its refusals are recognised in any transcript.
REFUSAL_PREFIX = "runaway-guard:"

# For the person, once per session, when a second install of the guard answers the same call.
TWICE = (
    "runaway-guard: two of its hooks run on every tool call here (two installs, such as the "
    "plugin and the installer's hook, or user and project scope). Each call is counted once; "
    "remove one install to save the second run."
)


def fit(decision, rungs):
    """The decision as the host can answer it: a host that cannot ask or end the run refuses."""
    if not decision or decision["kind"] in rungs:
        return decision
    if decision["kind"] == TELL or DENY not in rungs:
        return None
    return dict(decision, kind=DENY)
