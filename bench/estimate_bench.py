"""How far the next request's estimate (skill/runaway_guard/estimate.py) is from what the next
response really cost, over every host's recorded sessions (tests/fixtures/<host>/).

Each session file is read by its host's own reader into a ledger, as the hook does; before a
response of an agent is booked, the estimate the state then holds for that agent is what the
guard would have added to the spend at the last point before that request. Printed per host and
model: the responses compared, the median and worst error in dollars and in percent of the real
cost, and how many responses cost more than their estimate (those are the ones that can carry a
session past its cap) with the largest such shortfall. The first response of an agent has no
estimate (the guard adds nothing then) and is not counted: a model whose recorded sessions hold
one response each (Cursor's hook payloads) is listed with none.

    python3 bench/estimate_bench.py
"""

import json
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "skill"))

from runaway_guard import estimate, hosts, ledger  # noqa: E402
from runaway_guard.calls import Call  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"


def sessions(work):
    """(host, session id, the file a hook call names) of every recorded session."""
    for path in sorted((FIXTURES / "claude").glob("**/*.jsonl")):
        main = not path.name.startswith("agent-") and "subagents" not in path.parts
        if main and path.name != "hook_inputs.jsonl":
            yield "claude", path.stem, path
    for path in sorted((FIXTURES / "codex").glob("**/rollout-*.jsonl")):
        yield "codex", path.stem[-36:], path
    for path in sorted((FIXTURES / "gemini").glob("**/chats/session-*.json*")):
        yield "gemini", path.stem, path
    for path in sorted((FIXTURES / "qwen").glob("**/chats/*.jsonl")):
        yield "qwen", path.stem, path
    for path in sorted((FIXTURES / "copilot").glob("**/events.jsonl")):
        yield "copilot", path.parent.name, path
    for path in sorted((FIXTURES / "cursor").glob("*/hook_inputs.jsonl")):
        # no session file: each stop hook's payload carries one response's tokens
        stops = {}
        for line in path.read_text().splitlines():
            payload = json.loads(line)
            if payload.get("hook_event_name") == "stop":
                stops.setdefault(payload.get("conversation_id"), []).append(payload)
        for session, payloads in stops.items():
            yield "cursor", session, payloads
    for dump in sorted((FIXTURES / "opencode").glob("*/opencode.sql")):
        database = work / f"{dump.parent.name}.db"
        with sqlite3.connect(database) as db:
            db.executescript((dump.parent.parent / "schema.sql").read_text() + dump.read_text())
            roots = db.execute("select id from session where parent_id is null").fetchall()
        for (root,) in roots:
            yield "opencode", root, database


def calls(reader, session, source, work):
    """The hook calls that read a session: one naming a copy of its file, or (Cursor) one per
    recorded stop payload."""
    if isinstance(source, list):
        return [reader.call(payload) for payload in source]
    copy = work / "files" / reader.NAME / source.relative_to(source.anchor)
    if source.parent != work:
        shutil.copytree(source.parent, copy.parent, dirs_exist_ok=True)
    else:
        copy = source
    return [Call(reader.NAME, session, transcript_path=str(copy))]


def measure():
    """{(host, model): [(estimate, real) in picodollars]} over every session."""
    guesses = {}  # response key: (host, model, the estimate before it, or None)
    real = {}  # response key: what it cost, once all its rows are read
    original = ledger.Ledger.usage

    def usage(book, key, agent, model, picodollars, known_model, out, day, ahead=None):
        if ahead is not None and key not in guesses:
            agents = book.state.get("ahead", {})
            guess = estimate.next_cost(book.state, agent) if agent in agents else None
            guesses[key] = (book.host, model, guess)
        original(book, key, agent, model, picodollars, known_model, out, day, ahead)
        if ahead is not None:
            real[key] = picodollars

    ledger.Ledger.usage = usage
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        for host, session, source in sessions(work):
            reader = hosts.load(host)
            book = ledger.Ledger(str(work / "state"), host, f"{session}-{len(guesses)}")
            with book:
                for call in calls(reader, session, source, work):
                    reader.sync(book, call)
    ledger.Ledger.usage = original
    pairs = {}
    for key, (host, model, guess) in guesses.items():
        pairs.setdefault((host, model), [])
        if guess is not None:
            pairs[host, model].append((guess, real[key]))
    return pairs


def row(label, errors):
    """One line: responses, |error| median and worst ($, %), and how many were under."""
    dollars = sorted(abs(g - r) / 1e12 for g, r in errors)
    shares = sorted(abs(g - r) / r * 100 for g, r in errors if r > 0) or [0.0]
    under = [r - g for g, r in errors if g < r]
    return (
        f"{label:36} {len(errors):5} {dollars[len(dollars) // 2]:9.4f} {dollars[-1]:9.4f} "
        f"{shares[len(shares) // 2]:7.1f}% {shares[-1]:7.1f}% {len(under):5} "
        f"{max(under, default=0) / 1e12:9.4f}"
    )


def main():
    pairs = measure()
    print(
        f"{'host / model':36} {'resp':>5} {'median $':>9} {'worst $':>9} {'median':>8} "
        f"{'worst':>8} {'under':>5} {'worst under $':>9}"
    )
    every = []
    for (host, model), errors in sorted(pairs.items()):
        if not errors:  # each of its sessions recorded one response: nothing estimated it
            print(f"{host + ' ' + model:36} {0:5}  (no response with an earlier one)")
            continue
        print(row(f"{host} {model}", errors))
        every += errors
    if every:
        print(row("all", every))


if __name__ == "__main__":
    main()
