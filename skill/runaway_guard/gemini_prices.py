"""What one Gemini CLI response cost, by the table's rates (pricing.py)."""

from .calls import MOST, count
from .pricing import _dict, _load, _resolve


def gemini_cost(model: str, tokens: dict) -> tuple:
    """(picodollars, known) for one response as Gemini CLI records it (``tokens`` of a session
    record: input includes cached, thoughts bill as output, tool-use prompt tokens as input).

    The long-context rates apply to the whole request when its prompt (``input``) is above the
    model's threshold.
    """
    price, known = gemini_pricer(model)
    return price(_dict(tokens))[0], known


def gemini_pricer(model: str) -> tuple:
    """(price, known): price(tokens) -> (picodollars, output and thoughts) of gemini_cost for a
    tokens dict, the model looked up once: a reader prices thousands of its responses."""
    rates, known = _resolve(_load("gemini"), model, prefix_match=False)
    above, longer = rates["long"] or (None, None)
    base = rates["base"]

    def price(tokens):
        get = tokens.get
        inp, cached, tool = get("input", 0), get("cached", 0), get("tool", 0)
        out, thoughts = get("output", 0), get("thoughts", 0)
        # what count makes of each, in one test when all are ints (a bool's type is bool)
        if (
            not type(inp) is type(cached) is type(tool) is type(out) is type(thoughts) is int
            or (inp < 0 or cached < 0 or tool < 0 or out < 0 or thoughts < 0)
            or inp + cached + tool + out + thoughts > MOST
        ):
            inp, cached, tool, out, thoughts = map(count, (inp, cached, tool, out, thoughts))
        if cached > inp:
            cached = inp
        out += thoughts
        p_in, p_cached, p_out = longer if above is not None and inp > above else base
        return (inp - cached + tool) * p_in + cached * p_cached + out * p_out, out

    return price, known
