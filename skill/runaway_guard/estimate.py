"""What an agent's next model request will cost: the cap holds as a ceiling, not a tripwire.

The guard sees a response's cost only once it is billed. So at every point where it can still
keep the next request from being sent, it adds this estimate to the spend and stops when the sum
would cross a cap. The estimate is worked out when a response is booked (its pricer is at hand
then), so a hook call only reads one number from the state.

The next request of an agent reads from the cache what its last one saw (its whole input side:
fresh input, cache reads and cache writes), writes to the cache what the last one wrote as output
(it comes back as input), and writes about as much output as the agent's recent responses (their
median). What the host adds since (a tool's result) is not known before the tool runs and is left
out. A host that gives no token counts estimates the last response's cost again.
references/how-it-decides.md says the same for people.
"""

OUTPUTS_KEPT = 5  # the recent output counts whose median estimates the next output
LAST_COST = (None, None)  # note's ahead for a host without token counts: the last cost again


def note(state, agent, key, pusd, out, ahead):
    """After a response (key) of agent is booked: its next request's estimate, in the state.

    ahead is (context, price) where the host counts tokens: context is the response's whole
    input side, price(input, cached, written, output) -> (picodollars, known) the model's
    pricer in OpenAI's shape (cached and written within input); or (None, None): the next
    costs what this one did. state["ahead"][agent] = [key, estimate, recent outputs]."""
    agents = state.get("ahead")
    if not isinstance(agents, dict):
        agents = state["ahead"] = {}
    record = agents.get(agent)
    if not (isinstance(record, list) and len(record) == 3 and isinstance(record[2], list)):
        record = agents[agent] = [None, 0, []]
    outs = record[2]
    if record[0] == key and outs:
        outs[-1] = out  # a later row of the same response, with more output
    else:
        outs.append(out)
        del outs[:-OUTPUTS_KEPT]
    record[0] = key
    context, price = ahead
    if price is None or not isinstance(context, int) or context <= 0:
        record[1] = pusd
        return
    record[1] = price(context + out, context, out, median(outs))[0]


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
    if isinstance(record, list) and len(record) == 3:
        value = record[1]
        if isinstance(value, int) and value > 0:
            return value
    return 0
