"""What an agent's next model request will cost: the cap holds as a ceiling, not a tripwire.

The guard sees a response's cost only once it is billed. So at every point where it can still
keep the next request from being sent, it adds this estimate to the spend and stops when the sum
would cross a cap. The estimate is worked out when a response is booked (its pricer is at hand
then), so a hook call only reads one number from the state.

The next request of an agent reads from the cache what its last one saw (its whole input side:
fresh input, cache reads and cache writes), writes to the cache what the last one wrote as output
(it comes back as input) and what is added since (a tool's result, a prompt: not known before the
tool runs, so the median of what the agent's recent requests grew by beyond that output), and
writes about as much output as the agent's recent responses (their median). A host that gives no
token counts estimates the last response's cost again.
references/how-it-decides.md says the same for people.
"""

KEPT = 5  # the recent outputs (and additions) whose median estimates the next one
LAST_COST = (None, 0, None)
# An output count below this may be a placeholder of a response still being written: its output
# is taken to be the recent median (a short answer is overestimated by one output at most).
PLACEHOLDER = 16  # note's ahead for a host without token counts: the last cost again


def note(state, agent, key, picodollars, out, ahead):
    """After a response (key) of agent is booked: its next request's estimate, in the state.

    ahead is (context, cached, price) where the host counts tokens: context is the response's
    whole input side, cached what of it was read from or written to the cache (the next request
    reads that from the cache; the rest is written again, as a host that caches nothing pays
    for all of its input each time), price(input, cached, written, output) -> (picodollars,
    known) the model's pricer in OpenAI's shape (cached and written within input); or
    LAST_COST: the next costs what this one did. state["ahead"][agent] = [key, estimate,
    recent outputs, context, recent additions] (an addition: what a request's input grew by
    beyond the previous output, the tool results and prompts in between)."""
    agents = state.get("ahead")
    if not isinstance(agents, dict):
        agents = state["ahead"] = {}
    record = agents.get(agent)
    if not (
        isinstance(record, list)
        and len(record) == 5
        and isinstance(record[2], list)
        and isinstance(record[4], list)
    ):
        record = agents[agent] = [None, 0, [], 0, []]
    outs, added = record[2], record[4]
    context, cached, price = ahead
    if not isinstance(context, int) or context <= 0:
        context = 0
    if record[0] == key and outs:
        outs[-1] = out  # a later row of the same response, with more output
    else:
        if context and record[3] and outs and isinstance(record[3], int):
            added.append(max(0, context - record[3] - outs[-1]))
            del added[:-KEPT]
        outs.append(out)
        del outs[:-KEPT]
    record[0], record[3] = key, context
    if price is None or not context:
        record[1] = picodollars
        return
    cached = min(cached, context) if isinstance(cached, int) and cached > 0 else 0
    expected = median(outs)
    still = 0
    if out < PLACEHOLDER and len(outs) > 1:
        # a response still streaming (Claude Code writes its first rows with a placeholder
        # count): the output still to come is billed too before the next request is sent
        expected = median(outs[:-1])
        still = max(0, expected - out)
    written = context - cached + out + still + median(added)
    record[1] = price(cached + written, cached, written, expected + still)[0]


def median(values):
    """The middle of a few ints (the upper one of an even count): a response's size varies,
    one long answer must not set the next estimate."""
    ordered = sorted(value for value in values if isinstance(value, int) and value >= 0)
    return ordered[len(ordered) // 2] if ordered else 0


def next_cost(state, agent):
    """Picodollars the agent's next request is expected to cost (the main thread's when this
    agent has none yet: a new subagent starts smaller, the main thread's is an upper bound)."""
    agents = state.get("ahead")
    if not isinstance(agents, dict):
        return 0
    record = agents.get(agent) or agents.get("main")
    if isinstance(record, list) and len(record) == 5:
        value = record[1]
        if isinstance(value, int) and value > 0:
            return value
    return 0
