"""What one OpenAI response cost (Codex's token counts), by the table's rates (pricing.py)."""

from .calls import count
from .pricing import _dict, _load, _resolve


def openai_cost(model: str, usage: dict, service_tier=None) -> tuple:
    """(picodollars, known) for one Codex response (``last_token_usage`` or a delta of totals).

    Codex counts cached and cache-written tokens inside ``input_tokens`` and reasoning inside
    ``output_tokens``, so only the uncached remainder is billed at the input rate.
    """
    return openai_usage_pricer(model, service_tier)(usage)


def openai_usage_pricer(model: str, service_tier=None):
    """price(usage) -> (picodollars, known): openai_cost of one model and tier, looked up once
    (a first read prices thousands of responses)."""
    price = openai_pricer(model, service_tier)

    def priced(usage):
        usage = _dict(usage)
        inp = count(usage.get("input_tokens"))
        cached = min(count(usage.get("cached_input_tokens")), inp)
        written = min(count(usage.get("cache_write_input_tokens")), inp - cached)
        return price(inp, cached, written, count(usage.get("output_tokens")))

    return priced


def openai_pricer(model: str, service_tier=None):
    """price(input, cached, written, output) -> (picodollars, known): openai_cost of one model
    and tier for counts already read (cached and written within input). A reader pricing
    thousands of responses looks the model up once."""
    rates, known = _resolve(_load("openai"), model, prefix_match=False)
    priority = isinstance(service_tier, str) and service_tier.lower() in _load("priority_tiers")
    standard = rates["priority"] if priority else rates["std"]
    above, longer = rates["long"] or (None, None)
    if priority:
        longer = rates["priority_long"]

    def price(inp, cached, written, out):
        long = above is not None and inp > above
        p_in, p_cached, p_out, p_write = longer if long else standard
        picodollars = (inp - cached - written) * p_in + cached * p_cached + written * p_write
        return picodollars + out * p_out, known

    return price
