"""A cold read prices and books tens of thousands of Claude Code responses (issue 31): its
shortcuts, a model's rates looked up once and applied to the tokens alone
(claude_prices.claude_pricer) and each agent's next request estimated once a read
(transcript._Reader.flush), must give to the picodollar what pricing every response in full
gives."""

import itertools

import pytest
from claude_records import assistant, usage
from guard_env import fuzz, jsonl
from hypothesis import given
from hypothesis import strategies as st
from runaway_guard import calls, claude_prices, ledger
from runaway_guard.hosts import claude
from runaway_guard.hosts.claude.transcript import _Reader
from test_ledger import FakeCall, sync_once

# Listed, with a long-prompt tier, with a fast rate, priced as another, at a ceiling, free.
MODELS = [
    "claude-opus-4-8",
    "claude-haiku-5-5",
    "claude-opus-4-6",
    "claude-sonnet-4-6-20250929",
    "claude-opus-4-6-thinking",
    "claude-nova-9",
    "<synthetic>",
]
COUNTS = st.one_of(
    st.integers(0, 300_000),
    st.integers(0, 300_000),
    st.sampled_from([None, 0, -1, 2.5, 7.0, True, "7", [], 10**16, float("nan"), float("inf")]),
)
COUNT_KEYS = ("input_tokens", "output_tokens", "cache_read_input_tokens")
BREAKDOWN = st.fixed_dictionaries(
    {},
    optional={"ephemeral_5m_input_tokens": COUNTS, "ephemeral_1h_input_tokens": COUNTS},
)
ITERATION = st.fixed_dictionaries(
    {"type": st.sampled_from(["message", "advisor_message", "fallback_message", "other"])},
    optional={
        "model": st.sampled_from(MODELS),
        "cache_creation_input_tokens": COUNTS,
        "cache_creation": BREAKDOWN,
        **{key: COUNTS for key in COUNT_KEYS},
    },
)
USAGES = st.fixed_dictionaries(
    {},
    optional={
        "cache_creation_input_tokens": COUNTS,
        "cache_creation": st.one_of(BREAKDOWN, st.sampled_from([None, [], "x"])),
        "speed": st.sampled_from(["fast", "standard", None, 1]),
        "inference_geo": st.sampled_from(["us", "", "eu", None]),
        "server_tool_use": st.one_of(
            st.fixed_dictionaries({}, optional={"web_search_requests": COUNTS}), st.just("x")
        ),
        "iterations": st.one_of(st.just([]), st.just("x"), st.lists(ITERATION, max_size=3)),
        **{key: COUNTS for key in COUNT_KEYS},
    },
)


@fuzz(600)
@given(st.sampled_from(MODELS), st.one_of(USAGES, st.sampled_from([None, [], "x"])))
def test_a_models_pricer_gives_what_claude_cost_does(model, used):
    """The same picodollars and the same model's standing, and the same values noted as passed
    over (calls.ignored), whatever the usage holds."""
    del calls.ignored[:]
    expected = claude_prices.claude_cost(model, used)
    noted = list(calls.ignored)
    del calls.ignored[:]
    assert claude_prices.claude_pricer(model)(used) == expected
    assert calls.ignored == noted
    del calls.ignored[:]


_uuids = itertools.count(1)


@st.composite
def transcript(draw):
    """Claude Code's records of a few agents (sidechains in the main file): each response as one
    to three rows, the early ones with a placeholder output count, now and then a tool result,
    a compaction or Claude Code's own total."""
    records = []
    for number in range(draw(st.integers(1, 14))):
        agent = draw(st.sampled_from([None, None, "ag1", "ag2"]))
        side = {"isSidechain": True, "agentId": agent} if agent else {}
        model = draw(st.sampled_from(MODELS[:4]))
        full = usage(
            inp=draw(st.integers(0, 50)),
            out=draw(st.integers(0, 3000)),
            cw5=draw(st.integers(0, 5000)),
            cw1h=draw(st.sampled_from([0, 0, 2000])),
            read=draw(st.integers(0, 250_000)),
        )
        rows = draw(st.integers(1, 3))
        for row in range(rows):
            use = full if row == rows - 1 else dict(full, output_tokens=1)
            records.append(assistant(f"m{number}", model=model, use=use, **side))
        extra = draw(st.sampled_from(["", "", "", "result", "compaction", "cost"]))
        if extra == "result":
            records.append(
                {
                    "type": "user",
                    "uuid": f"r{next(_uuids)}",
                    "message": {"role": "user", "content": [{"type": "tool_result"}]},
                }
            )
        elif extra == "compaction":
            meta = {"preTokens": draw(st.integers(0, 10**5)), "postTokens": 900}
            records.append(
                {
                    "type": "system",
                    "subtype": "compact_boundary",
                    "uuid": f"c{next(_uuids)}",
                    "timestamp": "2026-11-30T10:00:00.000Z",
                    "compactMetadata": meta,
                }
            )
        elif extra == "cost":
            total = draw(st.floats(0, 50, allow_nan=False))
            records.append({"type": "cost-state", "totalCostUSD": total})
    return records


class _Priced:
    """A book that prices every response's estimate of the next request, as reads did before
    they priced only each agent's last."""

    def __init__(self, book):
        self.book = book

    def __getattr__(self, name):
        return getattr(self.book, name)

    def usage(self, key, agent, model, *, ahead=None, **counted):
        if ahead is not None and ahead[2] is None:
            ahead = (ahead[0], ahead[1], claude_prices.token_pricer(model, True))
        return self.book.usage(key, agent, model, ahead=ahead, **counted)


class _Plain(_Reader):
    def __init__(self, book, entry):
        super().__init__(_Priced(book), entry)


def _read(folder, records, reader):
    main = jsonl(folder / "s1.jsonl", records)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(claude, "_Reader", reader)  # sync's _read finds it there
        sync_once(folder / "state", "claude", FakeCall("claude", "s1", main))
    with ledger.Ledger(str(folder / "state"), "claude", "s1") as book:
        keys = ("spend", "ahead", "recent", "unpriced", "priced_as")
        state = {key: book.state.get(key) for key in keys}
    # a reconciliation's entry is stamped with the time it was made (ledger.reconcile)
    state["recent"] = {key: entry[:2] + entry[3:] for key, entry in state["recent"].items()}
    return state


@fuzz(80)
@given(transcript())
def test_a_read_estimates_what_estimating_every_response_does(tmp_path_factory, records):
    """The state after a read is the same, its estimates of each agent's next request too."""
    fast = _read(tmp_path_factory.mktemp("fast"), records, _Reader)
    assert fast == _read(tmp_path_factory.mktemp("plain"), records, _Plain)
