"""Money: sums are kept in integer picodollars (exact); dollars only for display and JSON."""

PICO = 10**12


def usd(picodollars):
    return picodollars / PICO


def money(value):
    """Dollars as a person reads them ('none' for no cap)."""
    if value is None:
        return "none"
    return f"${value:,.2f}"


def suggest_cap(cap, spent):
    """A round cap comfortably above what is spent, to offer the person."""
    import math  # only here: a hook call that offers no cap does not pay for the import

    base = max(cap or 0, spent)
    return max(math.ceil(base * 1.5), math.floor(spent) + 5, 5)
