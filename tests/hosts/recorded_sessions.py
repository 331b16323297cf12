"""Recorded sessions of every host and session-file format, written into a test's folder as the
host leaves them, a file cut at some unit of writing, and read by one sync."""

import json
import sqlite3

from guard_env import ROOT
from runaway_guard import hosts, ledger
from runaway_guard.calls import Call

FIXTURES = ROOT / "tests" / "fixtures"
CLAUDE = "ce26ac75-a0c0-4c5a-8200-1f2adcf4b202"
CLAUDE_MAIN = f"claude/models/{CLAUDE}.jsonl"
# another session's subagent, moved in: the main file does not repeat its responses
CLAUDE_AGENT = (
    "claude/unknown_model/432b0714-a2a3-4c17-8a88-ebe8c20fb628/subagents/"
    "agent-aee17223fa2a4913d.jsonl"
)
CODEX = "01a22a38-91d0-7293-85db-b43b7d644b14"
CODEX_ROLLOUT = f"sessions/2026/11/30/rollout-2026-11-30T02-11-20-{CODEX}.jsonl"
GEMINI = "68bf06a6-bd2e-40aa-99eb-201703a33f64"
GEMINI_LEGACY = "4b71bf35-5eb8-4360-bf72-a66246256866"
COPILOT = "c7ea40f4-6e62-4820-b3b6-b4d3f81c7607"
QWEN = "0edd9bc4-1e55-427e-8434-952fa712334e"
OPENCODE = "ses_dcce470a5ffeRUyMlMi7lSgbPM"
OPENCODE_UNPRICED = "ses_dcce45649ffemfEGXUQR5yPHU2"  # a provider that stores no cost

# name: (host, session id, the main file, [(its path, its fixture)], the file cut (an index))
CASES = {
    "claude-jsonl": ("claude", CLAUDE, f"{CLAUDE}.jsonl", [(f"{CLAUDE}.jsonl", CLAUDE_MAIN)], 0),
    "claude-subagent": (
        "claude",
        CLAUDE,
        f"{CLAUDE}.jsonl",
        [
            (f"{CLAUDE}.jsonl", CLAUDE_MAIN),
            (f"{CLAUDE}/subagents/agent-aee17223fa2a4913d.jsonl", CLAUDE_AGENT),
        ],
        1,
    ),
    "codex-rollout": (
        "codex",
        CODEX,
        CODEX_ROLLOUT,
        [(CODEX_ROLLOUT, f"codex/usage/{CODEX_ROLLOUT}")],
        0,
    ),
    "gemini-jsonl": (
        "gemini",
        GEMINI,
        "chats/session-2026-12-01T19-42-68bf06a6.jsonl",
        [
            (
                "chats/session-2026-12-01T19-42-68bf06a6.jsonl",
                "gemini/failures/chats/session-2026-12-01T19-42-68bf06a6.jsonl",
            )
        ],
        0,
    ),
    "gemini-whole-file": (
        "gemini",
        GEMINI_LEGACY,
        "chats/session-2026-12-01T19-44-4b71bf35.json",
        [
            (
                "chats/session-2026-12-01T19-44-4b71bf35.json",
                "gemini/legacy/chats/session-2026-12-01T19-44-4b71bf35.json",
            )
        ],
        0,
    ),
    "copilot-events": (
        "copilot",
        COPILOT,
        f"session-state/{COPILOT}/events.jsonl",
        [
            (
                f"session-state/{COPILOT}/events.jsonl",
                f"copilot/basic/session-state/{COPILOT}/events.jsonl",
            )
        ],
        0,
    ),
    "qwen-chats": (
        "qwen",
        QWEN,
        f"projects/proj/chats/{QWEN}.jsonl",
        [(f"projects/proj/chats/{QWEN}.jsonl", f"qwen/usage/chats/{QWEN}.jsonl")],
        0,
    ),
    "opencode-sqlite": (
        "opencode",
        OPENCODE,
        "opencode.db",
        [("opencode.db", "opencode/failures/opencode.sql")],
        0,
    ),
    "opencode-sqlite-unpriced": (
        "opencode",
        OPENCODE_UNPRICED,
        "opencode.db",
        [("opencode.db", "opencode/unpriced/opencode.sql")],
        0,
    ),
}


def pieces(fixture):
    """The fixture's units of writing: a JSONL file's lines, a whole-file session's messages,
    an SQL dump's statements (one a line)."""
    source = FIXTURES / fixture
    if source.suffix == ".json":
        return json.loads(source.read_text())["messages"]
    return source.read_bytes().splitlines(keepends=True)


def write(path, fixture, units, grown_from=None, spelled=None):
    """The file at path as the host leaves it after writing units (a database grows in place
    by the statements past grown_from; a whole-file session is rewritten whole)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    spelled = spelled or (lambda text: text)
    if fixture.endswith(".sql"):
        with sqlite3.connect(path) as db:
            if grown_from is None:
                db.executescript((FIXTURES / "opencode" / "schema.sql").read_text())
            db.executescript(spelled(b"".join(units[grown_from or 0 :]).decode()))
        db.close()
    elif fixture.endswith(".json"):
        whole = json.loads((FIXTURES / fixture).read_text())
        path.write_text(spelled(json.dumps({**whole, "messages": units})))
    else:
        path.write_text(spelled(b"".join(units).decode()))


def synced(root, case, cut_at=None, spelled=None):
    """The state one sync reads from the session written under root, its file cut at cut_at,
    each file's text passed through spelled (a model id written otherwise) first."""
    host, session, main, files, cut = CASES[case]
    for index, (path, fixture) in enumerate(files):
        units = pieces(fixture)
        write(root / path, fixture, units[:cut_at] if index == cut else units, spelled=spelled)
    with ledger.Ledger(str(root / "state"), host, session) as book:
        hosts.load(host).sync(book, Call(host, session, transcript_path=str(root / main)))
        return book.state
