"""What one Claude API response cost, from the usage object a host wrote in its transcript.

The guard's total has to equal Claude Code's own ``total_cost_usd``, so these rules follow the
cost code of Claude Code 2.1.328 (read from its binary), not the price page: where the two differ
(Sonnet 4/4.5 long context, unknown models) the table says so. The rates are data
(``prices.json``, read by pricing.py); this module only applies them. token_pricer prices counts
in OpenAI's shape by these rules or OpenAI's, for the hosts that serve both kinds of model.
"""

from .calls import MOST, count
from .openai_prices import openai_pricer
from .pricing import _dict, _load, _plain, _resolve

_ITERATION_KEYS = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)


# ---------------------------------------------------------------------------------------------
# Reading outside data: usage may be any JSON


def _is_count(value):
    """Claude Code's own test for an iteration field: a finite number >= 0 (and the guard's:
    no more than MOST)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return value == value and 0 <= value <= MOST


def _counts(first, second, third):
    """Whether three values are what count() keeps as they are (ints from 0 to MOST): the
    usual case, told in one test instead of three calls."""
    return (
        first.__class__ is second.__class__ is third.__class__ is int
        and first >= 0
        and second >= 0
        and third >= 0
        and first + second + third <= MOST
    )


# ---------------------------------------------------------------------------------------------
# Claude


def _cache_split(usage):
    """(total writes, 1h writes, 5m writes) the way Claude Code reads them."""
    breakdown = usage.get("cache_creation")
    five = hour = None
    if breakdown.__class__ is dict:
        five = breakdown.get("ephemeral_5m_input_tokens")
        hour = breakdown.get("ephemeral_1h_input_tokens")
    total = usage.get("cache_creation_input_tokens")
    if not _counts(five, hour, total):
        five, hour, total = count(five), count(hour), count(total)
    if total == 0:
        # Claude Code fills a missing total from the breakdown as it accumulates the stream.
        total = five + hour
    return total, min(hour, total), min(five, total - min(hour, total))


def _claude_part(rates, part):
    """Picodollars for one request's tokens (no geo premium, no web search)."""
    base = rates["base"]
    long = rates["long"]
    inp = part.get("input_tokens")
    out = part.get("output_tokens")
    read = part.get("cache_read_input_tokens")
    if not _counts(inp, out, read):
        inp, out, read = count(inp), count(out), count(read)
    write, hour, _ = _cache_split(part)
    table = base
    if long is not None and inp + read + write > long[0]:
        table = long[1]
    p_in, p_out, p_5m, p_1h, p_read = table
    return inp * p_in + out * p_out + read * p_read + hour * p_1h + (write - hour) * p_5m


def _claude_iterations(usage):
    """Per-iteration parts when Claude Code would price them one by one, else None."""
    iterations = usage.get("iterations")
    if not isinstance(iterations, list):
        return None
    parts = [it for it in iterations if isinstance(it, dict) and it.get("type") == "message"]
    if not parts:
        return None
    for key in _ITERATION_KEYS:
        if not all(_is_count(it.get(key)) for it in parts):
            return None
        top = usage.get(key)
        if sum(it[key] for it in parts) != (0 if top is None else top):
            return None
    # The 1h writes the top level reports beyond what the iterations claim go to the first
    # iterations with room for them.
    spare = max(0, _cache_split(usage)[1] - sum(_cache_split(it)[1] for it in parts))
    out = []
    for it in parts:
        write, hour, five = _cache_split(it)
        extra = min(spare, write - five - hour)
        spare -= extra
        part = dict(it)
        part["cache_creation_input_tokens"] = write
        part["cache_creation"] = {
            "ephemeral_1h_input_tokens": hour + extra,
            "ephemeral_5m_input_tokens": five,
        }
        out.append(part)
    return out


def _claude_tokens(table, model, usage, speed, split_iterations=True):
    """(picodollars before the geo premium, known) for one model's share of a response."""
    if (
        isinstance(model, str) and model in table["zero"]
    ):  # Claude Code's local placeholder, "<synthetic>"
        return 0, True
    rates, known = _resolve(table, model, prefix_match=True)
    if speed == "fast" and rates["fast"] is not None:
        rates = {"base": rates["fast"], "long": None}
    parts = None
    if split_iterations and rates["long"] is not None:
        parts = _claude_iterations(usage)
    if parts:
        return sum(_claude_part(rates, part) for part in parts), known
    return _claude_part(rates, usage), known


def claude_cost(model: str, usage: dict) -> tuple:
    """(picodollars, known) for one Claude API response, as Claude Code 2.1.328 prices it.

    ``known`` is as _resolve's, of the least known model in it (an advisor or fallback model
    inside it too): the status reports the response's model unless it is True.
    """
    table = _load("claude")
    usage = _dict(usage)
    speed = usage.get("speed")
    geo = usage.get("inference_geo") == "us"
    iterations = usage.get("iterations")
    iterations = (
        [it for it in iterations if isinstance(it, dict)]
        if isinstance(iterations, list) and iterations
        else ()
    )
    searches = count(_dict(usage.get("server_tool_use")).get("web_search_requests"))

    fallbacks = iterations and [
        it
        for it in iterations
        if it.get("type") == "fallback_message" and isinstance(it.get("model"), str)
    ]
    if fallbacks:
        # Served by the server-side refusal fallback: Claude Code prices each fallback hop at its
        # own model with its writes at the 5-minute rate, and not the refused primary.
        tokens, known = 0, True
        for hop in fallbacks:
            flat = {key: hop.get(key) for key in _ITERATION_KEYS}
            cost, hop_known = _claude_tokens(table, hop["model"], flat, speed, False)
            tokens += cost
            known = least_known(known, hop_known)
    else:
        tokens, known = _claude_tokens(table, model, usage, speed)

    for advisor in iterations:
        if advisor.get("type") != "advisor_message":
            continue
        advisor_usage = {key: advisor.get(key) for key in _ITERATION_KEYS}
        advisor_usage["cache_creation"] = advisor.get("cache_creation")
        cost, advisor_known = _claude_tokens(
            table, advisor.get("model"), advisor_usage, None, False
        )
        tokens += cost
        known = least_known(known, advisor_known)

    tenths = _load("geo_tenths") if geo else 10
    picodollars = (tokens * tenths + 5) // 10 + searches * _load("web_search")
    return picodollars, known


def claude_pricer(model):
    """price(usage) -> (picodollars, known): claude_cost of one model, looked up once (a cold
    read prices tens of thousands of responses of a model or two). A usage with no iterations,
    no fast speed, no US inference and no web search (what nearly every response is) is priced
    by its tokens alone; any other goes through claude_cost, which gives the same for these."""
    found = _load("claude_pricers").get(model) if isinstance(model, str) else None
    if found is not None:
        return found
    table = _load("claude")
    if isinstance(model, str) and model in table["zero"]:
        rates, known = None, True
    else:
        rates, known = _resolve(table, model, prefix_match=True)

    def price(usage):
        if usage.__class__ is not dict or _claude_special(usage):
            return claude_cost(model, usage)
        return (0 if rates is None else _claude_part(rates, usage)), known

    if isinstance(model, str):
        _load("claude_pricers")[model] = price
    return price


def _claude_special(usage):
    """Whether claude_cost prices a usage by more than its tokens at its model's rates:
    iterations (fallback, advisor or long-context parts), the fast speed, the US premium, web
    searches (anything but none or 0, so that a hostile count is noted there as before)."""
    iterations = usage.get("iterations")
    if iterations and iterations.__class__ is list:
        return True
    if usage.get("speed") == "fast" or usage.get("inference_geo") == "us":
        return True
    tools = usage.get("server_tool_use")
    if tools.__class__ is dict:
        searches = tools.get("web_search_requests")
        return not (searches is None or (searches.__class__ is int and searches == 0))
    return False


def least_known(first, second):
    """Of two models' known (_resolve): a ceiling's False, else a model priced as another's key."""
    if first is False or second is False:
        return False
    return second if first is True else first


# ---------------------------------------------------------------------------------------------
# Counts in OpenAI's shape, by Claude's rules or OpenAI's


def token_pricer(model: str, claude_rules=None):
    """price(input, cached, written, output) -> (picodollars, known) of one model, for counts in
    OpenAI's shape (cached and written within input), by Claude's rules or OpenAI's (None: by
    whether the id names a Claude model): how the hosts that serve both kinds price tokens.
    Made once per model: a session prices thousands of responses of the same few."""
    pricers = _load("pricers")
    price = pricers.get((model, claude_rules))
    if price is None:
        claude = claude_rules
        if claude is None:
            claude = _names_claude(model)
        price = _claude_pricer(model) if claude else openai_pricer(model)
        pricers[model, claude_rules] = price
    return price


def _names_claude(model):
    """Whether the id names a Claude model: holds `claude` and normalize_model spells it
    `claude…`. Normalising a plain id only cuts dates, versions, `-latest` or `-fast` off its
    end, each at a dash, and `claude` holds none: its own start tells, without normalize_model's
    `re`, which cost each call that priced a response as much as the interpreter's start (27M
    instructions) for the ids Copilot CLI records under a person's Anthropic key."""
    name = model.strip().lower()
    if "claude" not in name or _plain(name):
        return name.startswith("claude")
    from . import unlisted_models

    return unlisted_models.normalize_model(model).startswith("claude")


def _claude_pricer(model):
    priced = claude_pricer(model)

    def price(inp, cached, written, out):
        tokens = {
            "input_tokens": inp - cached - written,
            "cache_read_input_tokens": cached,
            "cache_creation_input_tokens": written,
            "output_tokens": out,
        }
        return priced(tokens)

    return price
