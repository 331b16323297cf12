"""Pricing a model the table does not list as written (pricing.py looks an id up as written,
and without its date): its spelling normalised, a Claude id by its longest known prefix, else
the ceiling of its family, never cheaper than any of the family's models (Claude Code's rule
for an unknown model). Imported only for such an id: its regular expressions cost `re`.
"""

_SUFFIXES = (
    r"-v\d+(?::\d+)?$",  # Bedrock -v1:0, -v2
    r":\d+$",  # Bedrock :0 without -vN
    r"@\d{8}$",  # Vertex @20250514
    r"-\d{8}$",  # Anthropic -20250514
    r"-\d{4}-\d{2}-\d{2}$",  # OpenAI -2025-08-07
)
_regexes = None


def _patterns():
    """Compiled on first use, for ids not in the table as written: `re` and these patterns cost
    a call 27M instructions, as much as the interpreter's own start."""
    global _regexes
    if _regexes is None:
        import re

        _regexes = {
            "suffixes": [re.compile(pattern) for pattern in _SUFFIXES],
            "claude_suffixes": [re.compile(r"-(?:fast|latest)$")],
            "provider": re.compile(r"^(?:[a-z0-9-]+\.)?anthropic\."),
            "context": re.compile(r"\[\d+m\]"),
            "dotted": re.compile(r"(claude-(?:[a-z]+-)?\d{1,2})\.(?=\d)"),
        }
    return _regexes


def normalize_model(model: str) -> str:
    """One spelling per model, whichever provider or context flag wrote the id.

    Idempotent (the suffix stripping runs to a fixed point), so ids can be normalised again safely.
    """
    if not isinstance(model, str):
        return ""
    patterns = _patterns()
    name = patterns["context"].sub("", model.strip().lower())
    name = name.rsplit("/", 1)[-1].strip()
    name = patterns["provider"].sub("", name)
    if name.startswith("claude-"):
        name = patterns["dotted"].sub(r"\1-", name)
    while True:
        before = name
        for pattern in patterns["suffixes"]:
            name = pattern.sub("", name)
        if name.startswith("claude-"):
            for pattern in patterns["claude_suffixes"]:
                name = pattern.sub("", name)
        if name == before:
            return name


def find_rates(table, model, prefix_match):
    """(rates, known) of a model id not in the table as written (pricing._find_rates)."""
    slow_paths(table)
    name = normalize_model(model)
    key = table["normalized"].get(name)
    if key is None and prefix_match and name:
        key = _claude_prefix(table["normalized"], name)
    if key is not None:
        return table["models"][key], key  # priced as a listed model: said so (ledger.usage)
    family = _family_of(table["families"], name)
    return table["ceilings"].get(family, table["ceilings"][None]), False


def _ceiling(*rate_tuples):
    return tuple(max(values) for values in zip(*rate_tuples))


def _long_ceiling(models, base):
    """The long-prompt tier of a ceiling: from the lowest threshold of ``models``, every rate the
    highest any of them charges there (None when no model has a long tier above ``base``)."""
    tiers = [m["long"] for m in models if m["long"]]
    if not tiers:
        return None
    above = min(threshold for threshold, _ in tiers)
    rates = _ceiling(
        *(_ceiling(m["base"], m["long"][1]) if m["long"] else m["base"] for m in models)
    )
    return (above, rates) if rates != base else None


def _claude_ceiling(models):
    """Never cheaper than any of ``models`` for any usage (the unknown-model rule)."""
    base = _ceiling(*(m["base"] for m in models))
    long = _long_ceiling(models, base)
    # In fast mode a model without a fast table keeps its standard price, long tier included.
    fast_parts = []
    for m in models:
        if m["fast"]:
            fast_parts.append(m["fast"])
        elif m["long"]:
            fast_parts.append(_ceiling(m["base"], m["long"][1]))
        else:
            fast_parts.append(m["base"])
    return {"base": base, "long": long, "fast": _ceiling(*fast_parts)}


def _gemini_ceiling(models):
    base = _ceiling(*(m["base"] for m in models))
    return {"base": base, "long": _long_ceiling(models, base)}


def _openai_ceiling(models):
    std = _ceiling(*(m["std"] for m in models))
    priority = _ceiling(*(m["priority"] for m in models))
    tiers = [m["long"] for m in models if m["long"]]
    long = priority_long = None
    if tiers:
        above = min(threshold for threshold, _ in tiers)
        rates = _ceiling(
            *(_ceiling(m["std"], m["long"][1]) if m["long"] else m["std"] for m in models)
        )
        prio = _ceiling(
            *(
                _ceiling(m["priority"], m["priority_long"]) if m["long"] else m["priority"]
                for m in models
            )
        )
        long = (above, rates)
        priority_long = prio
    return {"std": std, "long": long, "priority": priority, "priority_long": priority_long}


_CEILINGS = {"claude": _claude_ceiling, "openai": _openai_ceiling, "gemini": _gemini_ceiling}


def slow_paths(table):
    """Normalised ids and family ceilings: built only when an id is not in the table as written."""
    if table["families"] is None:
        import re

        table["normalized"] = {normalize_model(name): key for name, key in table["lookup"].items()}
        families = [(name, re.compile(p)) for name, p in table["section"]["families"].items()]
        members = {}
        every = table["models"].every()
        for key, rates in every.items():
            members.setdefault(_family_of(families, key), []).append(rates)
        ceiling = _CEILINGS[table["rules"]]
        ceilings = {family: ceiling(group) for family, group in members.items() if family}
        ceilings[None] = ceiling(list(every.values()))
        table["families"], table["ceilings"] = families, ceilings
    return table


def _family_of(families, name):
    for family, pattern in families:
        if pattern.search(name):
            return family
    return None


def _claude_prefix(lookup, name):
    # Claude Code maps e.g. "claude-opus-4-6-preview" to claude-opus-4-6, but never a further
    # version number: "claude-opus-4-9" is not claude-opus-4.
    best = None
    for known in lookup:
        if name.startswith(known + "-"):
            rest = name[len(known) + 1 :].split("-", 1)[0]
            if rest.isdigit() and len(rest) <= 2:
                continue
            if best is None or len(known) > len(best):
                best = known
    return lookup[best] if best else None
