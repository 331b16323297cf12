"""Money: sums are kept in integer picodollars (exact); dollars only for display and JSON."""

PICO = 10**12
# The largest cap any setting or control takes: beyond any real budget, and a cap's
# picodollars (1e21) stay exact integers far inside a float's range.
MAX_USD = 10**9


def usd(picodollars):
    return picodollars / PICO


def money(value):
    """Dollars as a person reads them ('none' for no cap)."""
    if value is None:
        return "none"
    return f"${value:,.2f}"


def raised_cap(value):
    """A session's raised cap as its state holds it (status.py --raise-cap), or None when it
    holds none that is a number of USD from 0 up. An earlier version took any amount, 1e300
    too: the person meant no practical limit, so above MAX_USD it is MAX_USD."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        return None
    return min(value, MAX_USD)


def suggest_cap(cap, spent):
    """A round cap comfortably above what is spent, to offer the person."""
    import math  # only here: a hook call that offers no cap does not pay for the import

    base = max(cap or 0, spent)
    return max(math.ceil(base * 1.5), math.floor(spent) + 5, 5)
