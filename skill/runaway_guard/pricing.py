"""The dated price table (``prices.json``): read, built into each model's rates, and a model id
resolved to its rates. The rules that apply them are each family's own module (claude_prices,
openai_prices, gemini_prices): a host loads only those it prices by.

Money is counted in picodollars (USD x 1e12) as ints: every rate in the table is a whole number of
picodollars per token, so a response costs an exact integer, rounded at most once (the 1.1x US
inference premium), and a session total is an exact sum.
"""

from . import fs, jsonio

_PICO_PER_MTOK_USD = 10**6  # $1 per million tokens = 1e6 picodollars per token

_CLAUDE_FIELDS = ("input", "output", "cache_write_5m", "cache_write_1h", "cache_read")
_OPENAI_FIELDS = ("input", "cached_input", "output", "cache_write")
_GEMINI_FIELDS = ("input", "cached_input", "output")

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
