"""The wires: failure runs, loops and spend, each escalating on a ladder.

Per agent (the main thread or one subagent): tell the model when a wire is one step from firing;
at the threshold refuse the call with a reason that says what to do instead; if the agent goes on
regardless, hand the call to the person (`ask`), then end the turn. Spend is per session and per
day: a warning at a share of the cap (no new subagents from then on), at the cap the call is
refused and the turn ended. references/how-it-decides.md says the same for people.
"""

from .calls import SPAWN_TOOLS
from .decisions import ASK, DENY, STOP, STRENGTH, TELL
from .money import PICO, money, usd

LOOP_PERIODS = (1, 2, 3, 4)


def loop_repeats(hist, call_hash):
    """How many times the latest pattern of calls repeated, if the new call continues it.

    hist holds [call hash, outcome hash] pairs of finished calls. A pattern is one call, or a
    cycle of up to four, repeated with the same outcomes each time: a call whose result keeps
    changing (polling, re-running tests after an edit) breaks the pattern and is progress.
    """
    best = 0
    size = len(hist)
    for period in LOOP_PERIODS:
        if size < period or hist[size - period][0] != call_hash:
            continue
        run = period
        while run < size and hist[size - 1 - run] == hist[size - 1 - run + period]:
            run += 1
        best = max(best, run // period)
    return best


def _ladder(record, wire, firing):
    """The rung of a firing wire: refuse, then ask the person, then end the turn."""
    refs = record.setdefault("ref", {})
    if not firing:
        refs.pop(wire, None)
        return None
    count = refs.get(wire, 0)
    refs[wire] = count + 1
    return DENY if count == 0 else ASK if count == 1 else STOP


def _count_wire(record, wire, count, limit, texts):
    """A counting wire: a note one step before the limit, the ladder from the limit on.

    texts(count) gives (reason for the model, message for the person, note for the model).
    """
    kind = _ladder(record, wire, count >= limit)
    if kind:
        model, person, _ = texts(count)
        return {"kind": kind, "wire": wire, "model_text": model, "person_text": person}
    if count == limit - 1 and count > 0:
        return {"kind": TELL, "wire": wire, "model_text": texts(count)[2]}
    return None


def failure_wire(record, limit):
    def texts(fails):
        return (
            f"runaway-guard: {fails} tool calls in a row have failed. Stop retrying. Read the "
            "last error, say what is blocking you, and change approach or ask the user for help "
            "instead of trying again.",
            f"runaway-guard: this agent's last {fails} tool calls failed in a row (limit {limit}).",
            f"runaway-guard: {fails} tool calls in a row have failed. One more failure and "
            "further calls will be refused. Step back and rethink the approach.",
        )

    return _count_wire(record, "failure", count=record["fails"], limit=limit, texts=texts)


def loop_wire(record, call_hash, limit):
    def texts(repeats):
        return (
            f"runaway-guard: this exact call already ran {repeats} times with the same result; "
            "running it again will not change anything. Do something different: change the "
            "input, try another approach, or ask the user.",
            "runaway-guard: the agent is repeating the same call with the same result "
            f"({repeats} times, limit {limit}).",
            f"runaway-guard: this exact call already ran {repeats} times with the same result. "
            "Repeating it again will be refused; try something different.",
        )

    return _count_wire(
        record, "loop", count=loop_repeats(record["hist"], call_hash), limit=limit, texts=texts
    )


def spend_wire(
    spent_pico,
    cap,
    warn_at,
    warned,
    scope,
    tool,
    how_to_raise,
    name=None,
    raiser="they",
    detail="",
    ahead=0,
):
    """Spend (picodollars) against a cap in USD, compared exactly in picodollars; warned
    remembers the cap already warned about. scope names the wire (session, daily, team, person);
    name says whose cap it is in the texts, raiser who can raise it, detail what the figure
    covers; ahead is the next request's estimate (estimate.py): the cap is a ceiling, the run
    stops before the response that would cross it."""
    if cap <= 0:
        return None
    if name is None:
        name = "session" if scope == "session" else "daily"
    spent = usd(spent_pico)
    cap_pico = round(cap * PICO)
    if spent_pico < cap_pico < spent_pico + ahead:
        figures = f"{money(spent)} spent, about {money(usd(ahead))} next, cap {money(cap)}{detail}"
        return {
            "kind": STOP,
            "wire": scope,
            "model_text": (
                f"runaway-guard: the next response would cross the {name} spend cap: {figures}. "
                f"Stop now and tell the user; only {raiser} can raise the cap."
            ),
            "person_text": (
                f"runaway-guard stopped the agent: the next response would cross the {name} "
                f"spend cap: {figures}. To go on, raise it: {how_to_raise}"
            ),
        }
    if spent_pico >= cap_pico:
        return {
            "kind": STOP,
            "wire": scope,
            "model_text": (
                f"runaway-guard: the {name} spend cap is reached ({money(spent)} of "
                f"{money(cap)}{detail}). Stop now and tell the user; only {raiser} can raise "
                "the cap."
            ),
            "person_text": (
                f"runaway-guard stopped the agent: {name} spend {money(spent)} reached its cap "
                f"of {money(cap)}{detail}. To go on, raise it: {how_to_raise}"
            ),
        }
    if spent_pico < round(warn_at * cap * PICO):
        return None
    if tool in SPAWN_TOOLS:
        return {
            "kind": DENY,
            "wire": scope,
            "model_text": (
                f"runaway-guard: {money(spent)} of the {money(cap)} {name} cap is spent; no new "
                "subagents from here on. Finish the work in this thread or stop and report."
            ),
            "person_text": f"runaway-guard refused a new subagent: {name} spend {money(spent)} "
            f"of {money(cap)}.",
        }
    if warned.get(scope) == cap:
        return None
    warned[scope] = cap
    remaining = cap - spent
    return {
        "kind": TELL,
        "wire": scope,
        "model_text": (
            f"runaway-guard: {money(spent)} of the {money(cap)} {name} cap is spent, "
            f"{money(remaining)} left. Wrap up: finish the current step, avoid new subagents "
            "and large reads."
        ),
        "person_text": (
            f"runaway-guard: {name} spend {money(spent)} of {money(cap)} "
            f"({spent / cap:.0%}); {money(remaining)} left."
        ),
    }


def strongest(decisions):
    """One decision for the call: the strongest rung wins; tells are merged."""
    decisions = [decision for decision in decisions if decision]
    if not decisions:
        return None
    top = max(decisions, key=lambda decision: STRENGTH[decision["kind"]])
    if top["kind"] == TELL:
        return {
            "kind": TELL,
            "wire": top["wire"],
            "model_text": " ".join(d["model_text"] for d in decisions if d.get("model_text")),
            "person_text": " ".join(d["person_text"] for d in decisions if d.get("person_text")),
        }
    return top
