"""What one API response cost, from the usage object a host wrote in its transcript.

The guard's total has to equal Claude Code's own ``total_cost_usd``, so the Claude rules follow the
cost code of Claude Code 2.1.328 (read from its binary), not the price page: where the two differ
(Sonnet 4/4.5 long context, unknown models) the table says so. The rates are data
(``prices.json``); this module only applies them.

Money is counted in picodollars (USD x 1e12) as ints: every rate in the table is a whole number of
picodollars per token, so a response costs an exact integer, rounded at most once (the 1.1x US
inference premium), and a session total is an exact sum.
"""

from . import fs, jsonio
from .calls import MOST, count

_PICO_PER_MTOK_USD = 10**6  # $1 per million tokens = 1e6 picodollars per token

_CLAUDE_FIELDS = ("input", "output", "cache_write_5m", "cache_write_1h", "cache_read")
_OPENAI_FIELDS = ("input", "cached_input", "output", "cache_write")
_GEMINI_FIELDS = ("input", "cached_input", "output")
_ITERATION_KEYS = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)

_tables = None  # the parts of the table built so far (_load), and "": its sections


# ---------------------------------------------------------------------------------------------
# Loading the table


def _pico(rate) -> int:
    """USD per MTok -> picodollars per token (exact for rates of up to 6 decimals)."""
    if isinstance(rate, bool) or not isinstance(rate, (int, float)):
        raise ValueError(f"price is not a number: {rate!r}")
    return round(rate * _PICO_PER_MTOK_USD)


def _rates(entry, fields, fallback=None):
    out = []
    for field in fields:
        value = entry.get(field)
        if value is None and fallback is not None:
            out.append(fallback)
        else:
            out.append(_pico(value))
    return tuple(out)


def _claude_model(entry):
    base = _rates(entry, _CLAUDE_FIELDS)
    long = None
    tier = entry.get("long_prompt")
    if tier:
        long = (int(tier["above_prompt_tokens"]), _rates(tier, _CLAUDE_FIELDS))
    fast = None
    if entry.get("fast_multiplier"):
        multiplier = entry["fast_multiplier"]
        fast = tuple(round(rate * multiplier) for rate in base)
    return {"base": base, "long": long, "fast": fast}


def _gemini_model(entry):
    tier = entry.get("long_context")
    long = (int(tier["above_prompt_tokens"]), _rates(tier, _GEMINI_FIELDS)) if tier else None
    return {"base": _rates(entry, _GEMINI_FIELDS), "long": long}


def _openai_table(entry):
    # No cached or cache-write price: those tokens are plain input.
    return _rates(entry, _OPENAI_FIELDS, fallback=_pico(entry["input"]))


def _scaled(rates, numerators, denominators):
    out = []
    for rate, num, den in zip(rates, numerators, denominators):
        out.append((rate * num + den // 2) // den if den else num)
    return tuple(out)


def _openai_model(entry, default_priority):
    std = _openai_table(entry)
    long = None
    tier = entry.get("long_context")
    if tier:
        long = (int(tier["above_input_tokens"]), _openai_table(tier))
    if entry.get("priority"):
        priority = _openai_table(entry["priority"])
        if entry["priority"].get("cache_write") is None:
            # A priority write costs what a standard write does, scaled like the input.
            priority = priority[:3] + _scaled(std[3:], priority[:1], std[:1])
    else:
        priority = tuple(round(rate * default_priority) for rate in std)
    priority_long = _scaled(priority, long[1], std) if long else None
    return {"std": std, "long": long, "priority": priority, "priority_long": priority_long}


class _Rates(dict):
    """Each model's rates, built from its entry when first asked for: a hook call prices one
    model or two, and building all of them cost it a third of a millisecond."""

    def __init__(self, entries, build):
        super().__init__()
        self.entries = entries
        self.build = build

    def __missing__(self, key):
        rates = self[key] = self.build(self.entries[key])
        return rates

    def every(self):
        """{key: rates} of every model in the table."""
        return {key: self[key] for key in self.entries}


def _host_table(section, build, rules):
    lookup = {}
    for key, entry in section["models"].items():
        for name in [key, *entry.get("ids", []), *entry.get("aliases", [])]:
            lookup[name.lower()] = key
    return {
        "models": _Rates(section["models"], build),
        "lookup": lookup,
        "section": section,
        "rules": rules,  # whose ceiling prices a model the table lacks (unlisted_models)
        "normalized": None,
        "families": None,
        "ceilings": None,
        "zero": {name.lower() for name in section.get("zero_cost_models", [])},
        "resolved": {},
    }


def _price_file():
    return fs.join(fs.dirname(fs.abspath(__file__)), "prices.json")


def _read_table(path):
    """prices.json's members, each marshalled (_section unmarshals one): from a marshalled copy
    beside the compiled modules when it is there and made from this very file (same mtime and
    size), else from the JSON, which makes the copy. Parsing the JSON costs each call that
    prices a response 0.2-0.3 ms; a call prices one host's responses, and unmarshalling every
    host's table too cost a Gemini CLI call 0.45M instructions more (callgrind), most of them
    the garbage collection its objects brought on. Where __pycache__ cannot be written, the
    JSON is parsed every time."""
    import marshal
    import sys

    info = fs.stat(path)
    stamp = (info.st_mtime_ns, info.st_size)
    tag = sys.implementation.cache_tag  # marshal's format is the interpreter's own
    cache = fs.join(fs.dirname(path), "__pycache__", f"prices.{tag}.sections")
    try:
        with open(cache, "rb") as handle:
            made_from, sections = marshal.loads(handle.read())
        if tuple(made_from) == stamp and isinstance(sections, dict):
            return sections
    except (OSError, ValueError, EOFError, TypeError):
        pass
    with open(path, "rb") as handle:
        sections = {key: marshal.dumps(value) for key, value in jsonio.loads(handle.read()).items()}
    try:
        from . import state_file

        fs.makedirs(fs.dirname(cache))
        state_file.write_atomic(cache, marshal.dumps((stamp, sections)))
    except (OSError, ValueError):
        pass
    return sections


def _section(sections, key):
    """One member of the table, unmarshalled (once) from _read_table's sections."""
    value = sections[key]
    if isinstance(value, bytes):
        import marshal

        value = sections[key] = marshal.loads(value)
    return value


def _load(part):
    """One part of the table (_PARTS: a host's rates, a rule), read and built on first use:
    the hook must start fast, and a call prices one host's responses."""
    global _tables
    if _tables is None:
        _tables = {"": _read_table(_price_file())}
    found = _tables.get(part)
    if found is None:
        found = _tables[part] = _PARTS[part](_tables[""])
    return found


def _openai_host(sections):
    section = _section(sections, "openai")
    default_priority = section["rules"].get("priority_default_multiplier", 2)
    model = lambda entry: _openai_model(entry, default_priority)  # noqa: E731
    return _host_table(section, model, "openai")


_PARTS = {
    "claude": lambda data: _host_table(_section(data, "claude"), _claude_model, "claude"),
    "openai": _openai_host,
    "gemini": lambda data: _host_table(_section(data, "gemini"), _gemini_model, "gemini"),
    "web_search": lambda data: (
        _pico(_section(data, "claude")["rules"]["web_search_usd_per_request"]) * 10**6
    ),
    "geo_tenths": lambda data: round(
        _section(data, "claude")["rules"]["inference_geo_us_multiplier"] * 10
    ),
    "priority_tiers": lambda data: set(
        _section(data, "openai")["rules"].get("priority_service_tiers", ["priority"])
    ),
    "pricers": lambda data: {},  # (model, Claude's rules) -> token_pricer's price
    "claude_pricers": lambda data: {},  # model -> claude_pricer's price
}


def _resolve(table, model, prefix_match):
    """(rates, known): the model's own rates, else the ceiling of its family; remembered per id
    (a session names a model or two, and reading one prices thousands of its responses).

    known is True for an id the table lists as written, the key of the listed model whose rates
    it was given for any other spelling (a date cut off, a provider's prefix, a longer Claude
    id), False at a ceiling: the status names every id that is not True (ledger.usage)."""
    if not isinstance(model, str):
        return _find_rates(table, model, prefix_match)
    found = table["resolved"].get(model)
    if found is None:
        found = table["resolved"][model] = _find_rates(table, model, prefix_match)
    return found


def _find_rates(table, model, prefix_match):
    key = table["lookup"].get(model) if isinstance(model, str) else None
    if key is not None:
        return table["models"][key], True
    key = table["lookup"].get(_undated(model)) if isinstance(model, str) else None
    if key is not None:
        return table["models"][key], key
    from . import unlisted_models

    return unlisted_models.find_rates(table, model, prefix_match)


def _undated(model):
    """The id without the date an API appends (`-2025-04-14`, `-20250514`), lowercase, for a
    plain id (no provider prefix, path, version or context flag): what normalize_model makes of
    it, without the regular expressions (`re` and its patterns: 27M instructions, a floor)."""
    name = model.lower()
    if not _plain(name):
        return None
    head, dash, date = name.rpartition("-")
    if len(date) == 8 and date.isdigit() and date.isascii():
        return head if dash else None
    parts = name.rsplit("-", 3)
    date = parts[1:]
    if [len(part) for part in date] == [4, 2, 2] and all(p.isdigit() and p.isascii() for p in date):
        return parts[0]
    return None


def _plain(name):
    """Whether a lowercase id has none of the provider prefix, path, version or context flag
    that normalize_model rewrites with regular expressions."""
    return not any(mark in name for mark in "/[@: ") and "anthropic." not in name


# ---------------------------------------------------------------------------------------------
# Reading outside data: usage may be any JSON


def _dict(value):
    return value if isinstance(value, dict) else {}


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
# Codex (OpenAI)


def codex_cost(model: str, usage: dict, service_tier=None) -> tuple:
    """(picodollars, known) for one Codex response (``last_token_usage`` or a delta of totals).

    Codex counts cached and cache-written tokens inside ``input_tokens`` and reasoning inside
    ``output_tokens``, so only the uncached remainder is billed at the input rate.
    """
    return codex_usage_pricer(model, service_tier)(usage)


def codex_usage_pricer(model: str, service_tier=None):
    """price(usage) -> (picodollars, known): codex_cost of one model and tier, looked up once
    (a first read prices thousands of responses)."""
    price = codex_pricer(model, service_tier)

    def priced(usage):
        usage = _dict(usage)
        inp = count(usage.get("input_tokens"))
        cached = min(count(usage.get("cached_input_tokens")), inp)
        written = min(count(usage.get("cache_write_input_tokens")), inp - cached)
        return price(inp, cached, written, count(usage.get("output_tokens")))

    return priced


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
        price = _claude_pricer(model) if claude else codex_pricer(model)
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


def codex_pricer(model: str, service_tier=None):
    """price(input, cached, written, output) -> (picodollars, known): codex_cost of one model
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


# ---------------------------------------------------------------------------------------------
# Gemini CLI


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
