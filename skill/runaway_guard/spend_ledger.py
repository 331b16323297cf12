"""The spend ledger: each priced response booked once, corrected when a later row of it
carries more, and the session's totals by model, agent and day (the Ledger's part that spends).

`<id>.ledger` (ledger.py) is its source of truth; the state keeps the totals and the recent
responses, which a later row can still correct without reading the whole ledger. Each function
taking self is a method of ledger.Ledger, which binds it (self is the Ledger, with the fields
its __init__ and _load set).
"""

import time

from . import estimate, jsonio

# Responses whose usage may still be corrected by a later row of the same response: an agent
# writes one response's rows before its next response (within seconds), so its last one is
# kept while it books responses (for ACTIVE seconds after its last), and the last RECENT across
# all agents for good measure ("side", reconcile()'s booking, is always kept). state["recent"]
# is the one place that says a response was counted (besides the ledger file, load_known).
RECENT = 16
ACTIVE = 3600.0


def load_known(self):
    """Every response the ledger has counted, last correction wins; for re-reads (which
    look up every response they read)."""
    if self.known is not None:
        return
    known = {}
    try:
        with open(self.ledger_path, "rb") as handle:
            for line in handle:
                try:
                    entry = jsonio.loads(line)
                except ValueError:
                    continue
                if _valid_entry(entry):
                    known[entry[0]] = entry
    except OSError:
        pass
    self.known = known


# -- spend


def usage(self, key, agent, model, *, picodollars, known_model, output, day, ahead=None, rank=None):
    """Count one API response, or correct it: of two rows of one response, the one of higher
    rank (its output count, unless a correction gives its own), then price, counts. ahead:
    what estimate.note needs to estimate the agent's next request (None: a correction).
    Whether it was counted (and ahead noted): False when it was already."""
    rank = output if rank is None else rank
    recent = self.state["recent"]
    old = recent.get(key)
    if old is None and self.known is not None:
        old = self.known.get(key)
    if old is not None:
        if (rank, picodollars) <= (old[2], old[1]):
            return False  # an earlier row of a response counted (or a stale correction)
        self._book(old, -1)
    entry = [key, picodollars, rank, model, agent, day]
    self._book(entry, 1)
    self._active[agent] = self._now
    if self.known is not None:
        self.known[key] = entry
    recent.pop(key, None)
    recent[key] = entry
    if len(recent) > self._trim_at:
        self._trim_recent()
    self._appended.append(jsonio.dumps(entry) + "\n")
    if known_model is not True:  # not in the table as written (pricing._resolve)
        self._unlisted(model, known_model)
    if ahead is not None:
        estimate.note(self.state, agent, key, picodollars, output, ahead)
    return True


def _unlisted(self, model, known_model):
    """Name a model id the table lacks as written, and what it was priced as: a listed
    model's key, or "ceiling" (the dearest rates of its family)."""
    if model not in self.state["unpriced"]:
        self.state["unpriced"].append(model)
    priced_as = self.state.get("priced_as")
    if not isinstance(priced_as, dict):
        priced_as = self.state["priced_as"] = {}
    priced_as[model] = known_model if isinstance(known_model, str) else "ceiling"


# -- requests the host bills but does not write as responses (compaction, side requests)


def estimate_unwritten(self, key, model, picodollars, day):
    """Count an estimate for a billed request the transcript does not show (a compaction)."""
    side = self.state.setdefault("side", {"est": {}, "host": 0})
    if key in side["est"]:
        return
    side["est"][key] = model
    self.usage(
        "est:" + key, "main", model, picodollars=picodollars, known_model=True, output=0, day=day
    )


def reconcile(self, host_total, model, day):
    """Take the host's own session total: estimates give way to what it billed.

    What the transcripts priced stays as it is; the difference, when positive, is booked to
    the main thread (under its current model) as the requests the transcript never showed.
    A host figure below ours (a model we price higher than the host) changes nothing.
    """
    side = self.state.setdefault("side", {"est": {}, "host": 0})
    stamp = time.time_ns() // 1000  # corrections must outrank every earlier one
    for key, estimated_model in side["est"].items():
        self.usage(
            "est:" + key,
            "main",
            estimated_model,
            picodollars=0,
            known_model=True,
            output=0,
            day=day,
            rank=stamp,
        )
    side["est"] = {}
    extra = max(0, host_total - (self.state["spend"]["total"] - side["host"]))
    if extra != side["host"]:
        side["host"] = extra
        self.usage(
            "side",
            "main",
            model,
            picodollars=extra,
            known_model=True,
            output=0,
            day=day,
            rank=stamp,
        )


def remembers(self, key):
    """Whether a response is among the recent ones (a later row can correct it without the
    whole ledger)."""
    return key in self.state["recent"]


def _trim_recent(self):
    """Keep the last response of each agent active in the last ACTIVE seconds, the last
    RECENT of all, and "side"."""
    active = self._active
    since = self._now - ACTIVE
    for agent, seen in list(active.items()):
        if not (isinstance(seen, (int, float)) and seen >= since):
            del active[agent]
    recent = self.state["recent"]
    if len(recent) <= RECENT:
        return
    kept, agents = [], set()
    for key in reversed(recent):
        entry = recent[key]
        agent = entry[4] if isinstance(entry, list) and len(entry) == 6 else None
        last = agent not in agents and agent in active
        if len(kept) < RECENT or last or key == "side":
            kept.append(key)
            agents.add(agent)
    if len(kept) < len(recent):
        self.state["recent"] = {key: recent[key] for key in reversed(kept)}
    self._stale = False
    self._trim_at = trim_after(len(kept))


def _book(self, entry, sign):
    _, picodollars, _, model, agent, day = entry
    picodollars *= sign
    spend = self.state["spend"]
    spend["total"] += picodollars
    for totals, name in ((spend["model"], model), (spend["agent"], agent), (spend["day"], day)):
        value = totals.get(name, 0) + picodollars
        if value:
            totals[name] = value
        else:
            totals.pop(name, None)


def trim_after(kept):
    """How many recent responses a long read lets accumulate before it trims (a trim looks at
    each one)."""
    return max(2 * kept, kept + RECENT)


# More than any response costs or any session spends ($10**15): a ledger line past it is not
# one the guard wrote, and a sum of such lines could not be shown in dollars (a float).
MOST_PICO = 10**27


def _valid_entry(entry):
    """Whether a ledger line is [key, picodollars, output, model, agent, day] as usage() writes
    it: amounts whole numbers (not bools) from 0 to MOST_PICO. Any other line is ignored: one
    that takes money away (negative) or cannot be summed and shown is no entry of the guard's."""
    return (
        isinstance(entry, list)
        and len(entry) == 6
        and isinstance(entry[0], str)
        and type(entry[1]) is int
        and type(entry[2]) is int
        and 0 <= entry[1] <= MOST_PICO
        and 0 <= entry[2] <= MOST_PICO
        and all(isinstance(item, str) for item in entry[3:])
    )
