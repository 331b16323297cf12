"""Pricing: hand-computed responses for every rule, the table's integrity, and properties.

Expected values are written in USD per million tokens x tokens, i.e. picodollars = rate * tokens *
1e6, so each example can be checked by hand against prices.json.
"""

import json
import marshal
import math
import os
import re
import shutil
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "skill"))

from runaway_guard import (  # noqa: E402
    claude_prices,
    gemini_prices,
    openai_prices,
    pricing,
    unlisted_models,
)
from runaway_guard.claude_prices import claude_cost  # noqa: E402
from runaway_guard.money import usd  # noqa: E402
from runaway_guard.openai_prices import openai_cost  # noqa: E402
from runaway_guard.unlisted_models import normalize_model  # noqa: E402

PRICES = json.loads((ROOT / "skill" / "runaway_guard" / "prices.json").read_text())
CLAUDE = PRICES["claude"]["models"]
OPENAI = PRICES["openai"]["models"]
CATALOG = ROOT / "tests" / "fixtures" / "claude" / "price-catalog-2.1.328.json"


def pico(usd_amount):
    """Exact picodollars of a USD amount written as a decimal literal."""
    return round(usd_amount * 10**12)


def mtok(rate, tokens):
    """Picodollars of `tokens` at `rate` USD per million tokens."""
    return round(rate * 10**6) * tokens


# ----------------------------------------------------------------------------------------------
# Worked examples from the research notes


def test_research_worked_example_opus_4_8_one_hour_write():
    # A response priced once (Opus 4.8, 1-hour write at $10 per million): ~ $0.0529.
    usage = {
        "input_tokens": 4,
        "cache_creation_input_tokens": 1843,
        "cache_read_input_tokens": 48210,
        "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 1843},
        "output_tokens": 412,
        "output_tokens_details": {"thinking_tokens": 268},
        "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
        "service_tier": "standard",
        "inference_geo": "global",
    }
    cost, known = claude_cost("claude-opus-4-8", usage)
    assert known
    assert cost == mtok(5, 4) + mtok(10, 1843) + mtok(0.5, 48210) + mtok(25, 412)
    assert cost == 52_855_000_000
    assert usd(cost) == pytest.approx(0.052855)


def test_ccusage_claude_session():
    # ccusage 20.0.24 printed totalCost 0.2412 for these two responses.
    sonnet = {
        "input_tokens": 1200,
        "output_tokens": 800,
        "cache_creation_input_tokens": 30000,
        "cache_read_input_tokens": 0,
        "cache_creation": {"ephemeral_5m_input_tokens": 10000, "ephemeral_1h_input_tokens": 20000},
    }
    opus = {
        "input_tokens": 500,
        "output_tokens": 2000,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 31200,
    }
    a, known_a = claude_cost("claude-sonnet-4-5-20250929", sonnet)
    b, known_b = claude_cost("claude-opus-4-6", opus)
    assert known_a and known_b
    assert a == pico(0.1731)
    assert b == pico(0.0681)
    assert a + b == pico(0.2412)


def test_ccusage_codex_session():
    # B.3: two token_count events of gpt-5.1-codex-max, ccusage costUSD 0.1725.
    first = {"input_tokens": 50000, "cached_input_tokens": 10000, "output_tokens": 5000}
    second = {"input_tokens": 70000, "cached_input_tokens": 50000, "output_tokens": 4000}
    a, _ = openai_cost("gpt-5.1-codex-max", first)
    b, _ = openai_cost("gpt-5.1-codex-max", second)
    assert a == mtok(1.25, 40000) + mtok(0.125, 10000) + mtok(10, 5000)
    assert a + b == pico(0.1725)


def test_ccusage_codex_cache_write():
    # B.3 table: gpt-5.6-sol, 100K input incl. 20K cached + 30K cache write, 1K out = $0.378.
    usage = {
        "input_tokens": 100000,
        "cached_input_tokens": 20000,
        "cache_write_input_tokens": 30000,
        "output_tokens": 1000,
    }
    assert openai_cost("gpt-5.6-sol", usage) == (pico(0.378), True)


def test_ccusage_codex_long_context_whole_request():
    # B.1: 400K input on gpt-5.4 = $2.00 (all of it at $5).
    assert openai_cost("gpt-5.4", {"input_tokens": 400000}) == (pico(2.0), True)


def test_ccusage_codex_priority():
    # B.1: gpt-5.5 with priority = 2.5x.
    usage = {"input_tokens": 100000, "cached_input_tokens": 40000, "output_tokens": 3000}
    standard, _ = openai_cost("gpt-5.5", usage)
    assert openai_cost("gpt-5.5", usage, "priority")[0] * 2 == standard * 5
    assert openai_cost("gpt-5.5", usage, "fast") == openai_cost("gpt-5.5", usage, "priority")


def test_ccusage_fast_mode_multipliers():
    # B.3 table: Opus 4.6 fast 100K input $3.00 (6x), Opus 4.8 fast $1.00 (2x).
    usage = {"input_tokens": 100000, "speed": "fast"}
    assert claude_cost("claude-opus-4-6", usage) == (pico(3.0), True)
    assert claude_cost("claude-opus-4-8", usage) == (pico(1.0), True)


# ----------------------------------------------------------------------------------------------
# Claude rules (as Claude Code 2.1.328 applies them)


def test_input_output_read_and_five_minute_writes():
    usage = {
        "input_tokens": 10,
        "output_tokens": 20,
        "cache_read_input_tokens": 30,
        "cache_creation_input_tokens": 40,
    }
    expected = mtok(3, 10) + mtok(15, 20) + mtok(0.3, 30) + mtok(3.75, 40)
    assert claude_cost("claude-sonnet-4-6", usage) == (expected, True)


def test_writes_without_breakdown_are_five_minute():
    usage = {"cache_creation_input_tokens": 1000, "cache_creation": {}}
    assert claude_cost("claude-haiku-4-5", usage)[0] == mtok(1.25, 1000)


def test_one_hour_writes_are_taken_from_the_total():
    # Claude Code: 1h = min(ephemeral_1h, total); the rest of the total at the 5m rate, whatever
    # ephemeral_5m says.
    usage = {
        "cache_creation_input_tokens": 1000,
        "cache_creation": {"ephemeral_5m_input_tokens": 100, "ephemeral_1h_input_tokens": 300},
    }
    assert claude_cost("claude-opus-4-5", usage)[0] == mtok(10, 300) + mtok(6.25, 700)


def test_one_hour_writes_are_clamped_to_the_total():
    # Not max(total, 5m + 1h): a breakdown larger than the total is cut to the total.
    usage = {
        "cache_creation_input_tokens": 500,
        "cache_creation": {"ephemeral_5m_input_tokens": 400, "ephemeral_1h_input_tokens": 800},
    }
    assert claude_cost("claude-opus-4-5", usage)[0] == mtok(10, 500)


def test_missing_total_is_filled_from_the_breakdown():
    # Older builds wrote cache_creation_input_tokens 0 with the writes only in the breakdown; the
    # way Claude Code accumulates the stream, the total becomes 5m + 1h.
    usage = {
        "cache_creation_input_tokens": 0,
        "cache_creation": {"ephemeral_5m_input_tokens": 200, "ephemeral_1h_input_tokens": 300},
    }
    assert claude_cost("claude-opus-4-5", usage)[0] == mtok(10, 300) + mtok(6.25, 200)


def test_long_prompt_tier_prices_the_whole_request():
    # Haiku 5.5: above 100,000 prompt tokens (input + cache read + cache write) every token of the
    # request, output included, is billed at the tier rates.
    below = {
        "input_tokens": 40000,
        "cache_read_input_tokens": 50000,
        "cache_creation_input_tokens": 10000,
        "output_tokens": 1000,
    }
    assert claude_cost("claude-haiku-5-5", below)[0] == (
        mtok(0.1, 40000) + mtok(0.01, 50000) + mtok(0.125, 10000) + mtok(0.5, 1000)
    )
    above = dict(below, input_tokens=40001)
    assert claude_cost("claude-haiku-5-5", above)[0] == (
        mtok(0.5, 40001) + mtok(0.05, 50000) + mtok(0.625, 10000) + mtok(2.5, 1000)
    )


def test_long_prompt_tier_one_hour_rate():
    usage = {
        "input_tokens": 1,
        "cache_creation_input_tokens": 100000,
        "cache_creation": {"ephemeral_1h_input_tokens": 100000},
    }
    assert claude_cost("claude-haiku-5-5", usage)[0] == mtok(0.5, 1) + mtok(1, 100000)


def test_sonnet_4_5_has_no_long_context_premium_in_claude_code():
    # Anthropic bills Sonnet 4/4.5 1M-beta requests above 200K at 2x, but Claude Code 2.1.328's
    # catalog has no tier for them, and the guard matches Claude Code: 300K cache read = $0.09
    # (ccusage says $0.12, the invoice $0.18).
    usage = {"cache_read_input_tokens": 300000}
    assert claude_cost("claude-sonnet-4-5-20250929", usage)[0] == pico(0.09)
    assert claude_cost("claude-sonnet-4-20250514", usage)[0] == pico(0.09)


def test_fast_mode_rates_match_claude_codes_fast_tables():
    # The fast tables hard-coded in Claude Code 2.1.328 (input/output/5m/1h/read).
    tables = {
        "claude-opus-4-6": (30, 150, 37.5, 60, 3),
        "claude-opus-4-7": (30, 150, 37.5, 60, 3),
        "claude-opus-4-8": (10, 50, 12.5, 20, 1),
        "claude-opus-5": (10, 50, 12.5, 20, 1),
        "claude-opus-5-5": (8, 40, 10, 16, 0.4),
        "claude-fable-5-2": (16, 80, 20, 32, 0.4),
        "claude-mythos-5-2": (16, 80, 20, 32, 0.4),
    }
    for model, (p_in, p_out, p_5m, p_1h, p_read) in tables.items():
        usage = {
            "speed": "fast",
            "input_tokens": 1,
            "output_tokens": 10,
            "cache_creation_input_tokens": 1100,
            "cache_creation": {"ephemeral_1h_input_tokens": 1000},
            "cache_read_input_tokens": 10000,
        }
        expected = mtok(p_in, 1) + mtok(p_out, 10) + mtok(p_5m, 100) + mtok(p_1h, 1000)
        expected += mtok(p_read, 10000)
        assert claude_cost(model, usage) == (expected, True), model


def test_fast_mode_on_a_model_without_fast_rates_is_standard():
    usage = {"input_tokens": 1000, "output_tokens": 100}
    assert claude_cost("claude-sonnet-5", dict(usage, speed="fast")) == claude_cost(
        "claude-sonnet-5", usage
    )
    # "speed" must be exactly "fast".
    assert claude_cost("claude-opus-4-6", dict(usage, speed="FAST")) == claude_cost(
        "claude-opus-4-6", usage
    )


def test_web_search_is_a_cent_each():
    usage = {"server_tool_use": {"web_search_requests": 3, "web_fetch_requests": 9}}
    assert claude_cost("claude-sonnet-4-6", usage) == (pico(0.03), True)


def test_us_inference_is_ten_percent_on_tokens_not_on_searches():
    usage = {
        "input_tokens": 1000000,
        "output_tokens": 1000,
        "inference_geo": "us",
        "server_tool_use": {"web_search_requests": 2},
    }
    tokens = mtok(5, 1000000) + mtok(25, 1000)
    assert claude_cost("claude-opus-4-8", usage)[0] == tokens * 11 // 10 + pico(0.02)
    assert claude_cost("claude-opus-4-8", dict(usage, inference_geo="global"))[0] == (
        tokens + pico(0.02)
    )


def test_us_inference_rounds_once_per_response():
    # 1 input token of Haiku 3.5 = 800,000 pico; 1.1x = 880,000. 3 tokens of Haiku 5.5 input at
    # 100,000 pico = 300,000 -> 330,000. An odd total rounds half up.
    usage = {"input_tokens": 3, "inference_geo": "us"}
    assert claude_cost("claude-haiku-5-5", usage)[0] == 330000
    usage = {"cache_read_input_tokens": 1, "output_tokens": 0, "inference_geo": "us"}
    assert claude_cost("claude-haiku-5-5", usage)[0] == 11000  # 10,000 pico x 1.1


def test_us_inference_applies_to_any_model_that_reports_it():
    # Claude Code multiplies whenever usage says "us", whatever the model.
    usage = {"input_tokens": 1000, "inference_geo": "us"}
    assert claude_cost("claude-haiku-4-5", usage)[0] == mtok(1, 1000) * 11 // 10


def test_iterations_are_priced_one_by_one_on_a_model_with_a_long_tier():
    # Two 60K-token iterations of one Haiku 5.5 response: the top level is above the 100K
    # threshold, each iteration is not, and Claude Code prices them one by one.
    iteration = {
        "type": "message",
        "input_tokens": 60000,
        "output_tokens": 100,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 0,
    }
    usage = {
        "input_tokens": 120000,
        "output_tokens": 200,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 0,
        "iterations": [iteration, dict(iteration), {"type": "compaction", "input_tokens": 9}],
    }
    assert claude_cost("claude-haiku-5-5", usage)[0] == mtok(0.1, 120000) + mtok(0.5, 200)
    # When the iterations do not add up to the totals, the whole response is one request.
    usage["output_tokens"] = 201
    assert claude_cost("claude-haiku-5-5", usage)[0] == mtok(0.5, 120000) + mtok(2.5, 201)


def test_iterations_spare_one_hour_writes_go_to_the_first_with_room():
    first = {
        "type": "message",
        "input_tokens": 1,
        "output_tokens": 0,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 100,
    }
    second = dict(first, cache_creation_input_tokens=300)
    usage = {
        "input_tokens": 2,
        "output_tokens": 0,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 400,
        "cache_creation": {"ephemeral_1h_input_tokens": 250},
        "iterations": [first, second],
    }
    # 250 1h writes: 100 fill the first iteration, 150 go to the second.
    expected = mtok(0.1, 2) + mtok(0.2, 250) + mtok(0.125, 150)
    assert claude_cost("claude-haiku-5-5", usage)[0] == expected


def test_iterations_ignored_on_models_without_a_long_tier():
    usage = {
        "input_tokens": 10,
        "output_tokens": 10,
        "iterations": [{"type": "message", "input_tokens": 10, "output_tokens": 10}],
    }
    assert claude_cost("claude-opus-4-5", usage)[0] == mtok(5, 10) + mtok(25, 10)


def test_advisor_iterations_are_added_at_their_own_model():
    usage = {
        "input_tokens": 100,
        "output_tokens": 10,
        "inference_geo": "us",
        "server_tool_use": {"web_search_requests": 1},
        "iterations": [
            {"type": "message", "input_tokens": 100, "output_tokens": 10},
            {
                "type": "advisor_message",
                "model": "claude-opus-5-5",
                "input_tokens": 1000,
                "output_tokens": 50,
                "cache_read_input_tokens": 2000,
                "cache_creation_input_tokens": 0,
            },
        ],
    }
    main = mtok(2, 100) + mtok(10, 10)
    advisor = mtok(4, 1000) + mtok(20, 50) + mtok(0.2, 2000)
    assert claude_cost("claude-sonnet-5-5", usage) == (
        (main + advisor) * 11 // 10 + pico(0.01),
        True,
    )


def test_fallback_iterations_replace_the_primary_price():
    usage = {
        "input_tokens": 5000,
        "output_tokens": 300,
        "cache_creation_input_tokens": 100,
        "cache_creation": {"ephemeral_1h_input_tokens": 100},
        "iterations": [
            {"type": "message", "input_tokens": 5000, "output_tokens": 0},
            {
                "type": "fallback_message",
                "model": "claude-sonnet-4-6",
                "input_tokens": 5000,
                "output_tokens": 300,
                "cache_creation_input_tokens": 100,
            },
        ],
    }
    # Fallback hops are priced with their writes at the 5-minute rate.
    expected = mtok(3, 5000) + mtok(15, 300) + mtok(3.75, 100)
    assert claude_cost("claude-fable-5-2", usage) == (expected, True)


def test_synthetic_messages_cost_nothing():
    assert claude_cost("<synthetic>", {"input_tokens": 1000, "output_tokens": 1000}) == (0, True)


@pytest.mark.parametrize(
    "model",
    [
        "claude-opus-4-1-20250805",
        "claude-opus-4-1@20250805",
        "us.anthropic.claude-opus-4-1-20250805-v1:0",
        "global.anthropic.claude-opus-4-1-20250805-v1:0",
        "anthropic/claude-opus-4-1",
        "bedrock/eu.anthropic.claude-opus-4-1-20250805-v1:0",
        "Claude-Opus-4-1",
        "claude-opus-4.1",
        "claude-opus-4-1[1m]",
    ],
)
def test_provider_spellings_price_like_the_first_party_id(model):
    """Priced as the model, and said to be: the id is not the table's as written."""
    usage = {"input_tokens": 1000}
    listed = model == "claude-opus-4-1-20250805"  # the table lists this id as written
    assert claude_cost(model, usage) == (mtok(15, 1000), True if listed else "claude-opus-4-1")


def test_dated_ids_and_aliases():
    usage = {"input_tokens": 1}
    assert claude_cost("claude-opus-4-20250514", usage) == (mtok(15, 1), True)
    assert claude_cost("claude-4-opus-20250514", usage) == (mtok(15, 1), True)
    assert claude_cost("claude-sonnet-4-20250514", usage) == (mtok(3, 1), True)
    assert claude_cost("claude-3-5-haiku-20241022", usage) == (mtok(0.8, 1), True)
    assert claude_cost("claude-opus-4-6-20260205", usage) == (mtok(5, 1), True)
    # A suffix Claude Code still maps to the model (not a further version number), said to be
    # priced as that model: the status names the id (issue 31, a proxy's -thinking).
    assert claude_cost("claude-opus-4-6-preview", usage) == (mtok(5, 1), "claude-opus-4-6")
    assert claude_cost("claude-opus-4-6-thinking", usage) == (mtok(5, 1), "claude-opus-4-6")


def test_unknown_claude_model_is_priced_at_its_family_ceiling():
    usage = {"input_tokens": 1000, "output_tokens": 1000}
    # Opus 4.9 is no Opus 4: it is unknown, priced like the dearest Opus (Opus 4/4.1, 15/75).
    assert claude_cost("claude-opus-4-9", usage) == (mtok(15, 1000) + mtok(75, 1000), False)
    assert claude_cost("claude-sonnet-7", usage) == (mtok(3, 1000) + mtok(15, 1000), False)
    assert claude_cost("claude-haiku-6", usage) == (mtok(1, 1000) + mtok(5, 1000), False)
    assert claude_cost("claude-fable-6", usage) == (mtok(10, 1000) + mtok(50, 1000), False)
    # Fast: the dearest fast rate of the family (Opus 4.6 at 30/150).
    fast = dict(usage, speed="fast")
    assert claude_cost("claude-opus-9", fast) == (mtok(30, 1000) + mtok(150, 1000), False)


def test_id_of_no_family_is_priced_at_the_dearest_of_all():
    usage = {"input_tokens": 1000, "output_tokens": 1000}
    expected = (mtok(15, 1000) + mtok(75, 1000), False)
    assert claude_cost("some-proxy-model", usage) == expected
    assert claude_cost(None, usage) == expected
    assert claude_cost("", usage) == expected


def test_malformed_usage_counts_as_zero():
    assert claude_cost("claude-opus-4-5", None) == (0, True)
    assert claude_cost("claude-opus-4-5", []) == (0, True)
    usage = {
        "input_tokens": "100",
        "output_tokens": -5,
        "cache_read_input_tokens": True,
        "cache_creation_input_tokens": None,
        "cache_creation": "x",
        "server_tool_use": [1],
        "iterations": "no",
    }
    assert claude_cost("claude-opus-4-5", usage) == (0, True)
    assert claude_cost("claude-opus-4-5", {"input_tokens": 10.0}) == (mtok(5, 10), True)
    assert claude_cost("claude-opus-4-5", {"input_tokens": float("nan")}) == (0, True)


# ----------------------------------------------------------------------------------------------
# Codex rules


def test_codex_no_cache_write_price_means_input_price():
    usage = {"input_tokens": 1000, "cache_write_input_tokens": 400, "output_tokens": 10}
    assert openai_cost("gpt-5.4", usage) == (mtok(2.5, 1000) + mtok(15, 10), True)


def test_codex_cached_is_capped_at_input():
    usage = {"input_tokens": 100, "cached_input_tokens": 500, "cache_write_input_tokens": 50}
    assert openai_cost("gpt-5", usage) == (mtok(0.125, 100), True)


def test_codex_long_context_threshold_is_strict_and_on_input_only():
    at = {"input_tokens": 272000, "cached_input_tokens": 72000, "output_tokens": 1000}
    assert openai_cost("gpt-5.5", at)[0] == mtok(5, 200000) + mtok(0.5, 72000) + mtok(30, 1000)
    above = dict(at, input_tokens=272001)
    assert openai_cost("gpt-5.5", above)[0] == (mtok(10, 200001) + mtok(1, 72000) + mtok(45, 1000))


def test_codex_priority_above_long_context():
    usage = {"input_tokens": 300000, "cached_input_tokens": 100000, "output_tokens": 1000}
    # gpt-5.4 priority 5/0.5/30, long context 2x input and cached, 1.5x output.
    assert openai_cost("gpt-5.4", usage, "priority")[0] == (
        mtok(10, 200000) + mtok(1, 100000) + mtok(45, 1000)
    )


def test_codex_priority_write_scales_like_input():
    usage = {"input_tokens": 1000, "cache_write_input_tokens": 1000}
    assert openai_cost("gpt-5.6-sol", usage, "priority")[0] == mtok(10, 1000)


def test_codex_priority_without_priority_rates_is_double():
    usage = {"input_tokens": 1000, "output_tokens": 100}
    standard, _ = openai_cost("gpt-5.1-codex", usage)
    assert openai_cost("gpt-5.1-codex", usage, "priority")[0] == 2 * standard
    assert openai_cost("gpt-5.1-codex", usage, "flex")[0] == standard
    assert openai_cost("gpt-5.1-codex", usage, 7)[0] == standard


def test_codex_model_spellings():
    usage = {"input_tokens": 1000}
    assert openai_cost("gpt-5-2025-08-07", usage) == openai_cost("gpt-5", usage)
    assert openai_cost("openai/gpt-5.4", usage) == (openai_cost("gpt-5.4", usage)[0], "gpt-5.4")
    assert openai_cost("gpt-5.3-codex-spark", usage) == openai_cost("gpt-5.3-codex", usage)
    assert openai_cost("gpt-5.6", usage) == openai_cost("gpt-5.6-sol", usage)
    # No prefix matching for OpenAI: gpt-5-pro is not gpt-5.
    assert openai_cost("gpt-5-pro", usage)[1] is False


def test_codex_unknown_models():
    usage = {"input_tokens": 1000, "output_tokens": 1000}
    # Dearest gpt: gpt-6-astra 10/50.
    assert openai_cost("gpt-7-nova", usage) == (mtok(10, 1000) + mtok(50, 1000), False)
    assert openai_cost("o9", usage) == (mtok(2, 1000) + mtok(8, 1000), False)
    assert openai_cost("codex-auto-review", usage)[1] is False
    assert openai_cost(None, None) == (0, False)


# ----------------------------------------------------------------------------------------------
# normalize_model


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("claude-opus-4-6[1m]", "claude-opus-4-6"),
        ("claude-sonnet-4-5@20250929", "claude-sonnet-4-5"),
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5"),
        ("anthropic.claude-3-5-haiku-20241022-v1:0", "claude-3-5-haiku"),
        ("anthropic/claude-opus-4-8", "claude-opus-4-8"),
        ("openrouter/openai/gpt-5.1-codex", "gpt-5.1-codex"),
        ("gpt-5-2025-08-07", "gpt-5"),
        ("claude-opus-4.5", "claude-opus-4-5"),
        ("gpt-5.5", "gpt-5.5"),
        ("codex-mini-latest", "codex-mini-latest"),
        ("claude-3-5-sonnet-latest", "claude-3-5-sonnet"),
        ("  Claude-Haiku-4-5  ", "claude-haiku-4-5"),
        ("<synthetic>", "<synthetic>"),
    ],
)
def test_normalize_model(raw, expected):
    assert normalize_model(raw) == expected


def test_normalize_model_non_strings():
    assert normalize_model(None) == ""
    assert normalize_model(42) == ""


# ----------------------------------------------------------------------------------------------
# The table itself

CLAUDE_RATES = ("input", "output", "cache_write_5m", "cache_write_1h", "cache_read")
OPENAI_RATES = ("input", "cached_input", "output", "cache_write")

# Anthropic's rule: a cache read costs 0.1x input, except these.
READ_RATIO = {
    "claude-fable-5-1": 0.025,
    "claude-mythos-5-1": 0.025,
    "claude-fable-5-2": 0.025,
    "claude-mythos-5-2": 0.025,
    "claude-opus-5-5": 0.05,
    "claude-sonnet-5-5": 0.05,
    "claude-3-haiku": 0.12,  # Anthropic's Claude 3 Haiku prices: $0.25 in, $0.03 read
}
WRITE_RATIO = {"claude-3-haiku": 1.2}  # $0.30 5m write


def is_rate(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0


def whole_picodollars(rate):
    return abs(rate * 10**6 - round(rate * 10**6)) < 1e-6


def test_table_header():
    assert PRICES["as_of"] == "2026-11-30"
    assert PRICES["sources"]
    assert PRICES["claude"]["rules"]["web_search_usd_per_request"] == 0.01
    assert PRICES["claude"]["rules"]["inference_geo_us_multiplier"] == 1.1


@pytest.mark.parametrize("key", sorted(CLAUDE))
def test_claude_model_fields_and_ratios(key):
    entry = CLAUDE[key]
    for field in CLAUDE_RATES:
        assert is_rate(entry[field]), field
        assert whole_picodollars(entry[field]), field
    assert isinstance(entry["us_geo"], bool)
    for name in [key, *entry.get("ids", []), *entry.get("aliases", [])]:
        assert pricing._load("claude")["lookup"][normalize_model(name)] == key, name
    p_in = entry["input"]
    assert entry["cache_write_5m"] == pytest.approx(WRITE_RATIO.get(key, 1.25) * p_in)
    assert entry["cache_write_1h"] == pytest.approx(2 * p_in)
    assert entry["cache_read"] == pytest.approx(READ_RATIO.get(key, 0.1) * p_in)
    assert entry["output"] == pytest.approx(5 * p_in)
    tier = entry.get("long_prompt")
    if tier:
        assert isinstance(tier["above_prompt_tokens"], int) and tier["above_prompt_tokens"] > 0
        for field in CLAUDE_RATES:
            assert is_rate(tier[field]) and tier[field] >= entry[field], field
    if "fast_multiplier" in entry:
        assert is_rate(entry["fast_multiplier"]) and entry["fast_multiplier"] >= 1


def test_us_geo_from_4_6_on():
    older = {
        "claude-3-haiku",
        "claude-3-opus",
        "claude-3-5-haiku",
        "claude-3-5-sonnet",
        "claude-3-7-sonnet",
        "claude-opus-4-0",
        "claude-opus-4-1",
        "claude-sonnet-4-0",
        "claude-sonnet-4-5",
        "claude-haiku-4-5",
        "claude-opus-4-5",
    }
    for key, entry in CLAUDE.items():
        assert entry["us_geo"] is (key not in older), key


@pytest.mark.parametrize("key", sorted(OPENAI))
def test_openai_model_fields_and_ratios(key):
    entry = OPENAI[key]
    for field in OPENAI_RATES:
        assert entry[field] is None or is_rate(entry[field]), field
    for field in ("input", "cached_input", "output"):
        assert entry[field] is not None and whole_picodollars(entry[field]), field
    if entry["cache_write"] is not None:
        assert entry["cache_write"] == pytest.approx(1.25 * entry["input"])
    assert entry["cached_input"] <= entry["input"]
    tier = entry.get("long_context")
    if tier:
        assert tier["above_input_tokens"] == 272000
        assert tier["input"] == pytest.approx(2 * entry["input"])
        assert tier["cached_input"] == pytest.approx(2 * entry["cached_input"])
        assert tier["output"] == pytest.approx(1.5 * entry["output"])
        if entry["cache_write"] is not None:
            assert tier["cache_write"] == pytest.approx(2 * entry["cache_write"])
    priority = entry.get("priority")
    if priority:
        for field in ("input", "cached_input", "output"):
            assert priority[field] >= entry[field], field
        ratio = priority["input"] / entry["input"]
        assert priority["cached_input"] == pytest.approx(ratio * entry["cached_input"])
        assert priority["output"] == pytest.approx(ratio * entry["output"])
    for name in [key, *entry.get("ids", []), *entry.get("aliases", [])]:
        assert pricing._load("openai")["lookup"][normalize_model(name)] == key, name


def test_every_model_has_a_family():
    for host in ("claude", "openai"):
        patterns = [re.compile(p) for p in PRICES[host]["families"].values()]
        for key in PRICES[host]["models"]:
            assert any(p.search(key) for p in patterns), key


def test_family_ceilings_are_derived_not_written():
    # The dearest model of each family is computed from the table, never stored in it.
    text = (ROOT / "skill" / "runaway_guard" / "prices.json").read_text()
    assert "ceiling_rates" not in text and "dearest_model" not in text
    opus = unlisted_models.slow_paths(pricing._load("claude"))["ceilings"]["claude-opus"]
    assert opus["base"] == pricing._load("claude")["models"]["claude-opus-4-1"]["base"]


def test_matches_claude_codes_bundled_catalog():
    catalog = json.loads(CATALOG.read_text())
    if "catalog" in catalog and isinstance(catalog["catalog"], dict):
        catalog = catalog["catalog"]
    tiers = catalog.get("pricing_tiers") or {}
    models = catalog.get("models")
    if isinstance(models, dict):  # {id: pricing} instead of the binary's list of entries
        models = [{"id": key, "pricing": value} for key, value in models.items()]
    assert isinstance(tiers, dict) and isinstance(models, list), "unrecognised catalog layout"
    for model in models:
        pricing_entry = model.get("pricing")
        if isinstance(pricing_entry, str):
            pricing_entry = tiers[pricing_entry]
        if not pricing_entry:
            continue
        ours = CLAUDE[model["id"]]
        for field in CLAUDE_RATES:
            assert ours[field] == pricing_entry[field], (model["id"], field)
        assert pricing_entry.get("web_search", 0.01) == 0.01
        assert ours.get("long_prompt") == pricing_entry.get("long_prompt"), model["id"]


# ----------------------------------------------------------------------------------------------
# Properties

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**12), max_value=10**12)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)
USAGE_KEYS = [
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
    "cached_input_tokens",
    "cache_write_input_tokens",
    "speed",
    "inference_geo",
]
counts = st.integers(min_value=0, max_value=2 * 10**6) | st.floats(min_value=0, max_value=1e6)
field_values = counts | json_values | st.sampled_from(["fast", "us", "global", "message"])
iteration = st.fixed_dictionaries(
    {"type": st.sampled_from(["message", "advisor_message", "fallback_message", "other"])},
    optional={
        "model": st.sampled_from(["claude-opus-4-8", "claude-haiku-5-5", "nope"]) | json_values,
        **{key: field_values for key in USAGE_KEYS[:4]},
        "cache_creation": json_values
        | st.fixed_dictionaries(
            {},
            optional={"ephemeral_5m_input_tokens": counts, "ephemeral_1h_input_tokens": counts},
        ),
    },
)
usage_dicts = st.one_of(
    json_values,
    st.dictionaries(st.sampled_from(USAGE_KEYS) | st.text(max_size=6), field_values, max_size=8),
    st.fixed_dictionaries(
        {},
        optional={
            **{key: field_values for key in USAGE_KEYS},
            "cache_creation": json_values
            | st.fixed_dictionaries(
                {},
                optional={
                    "ephemeral_5m_input_tokens": field_values,
                    "ephemeral_1h_input_tokens": field_values,
                },
            ),
            "server_tool_use": json_values
            | st.fixed_dictionaries({}, optional={"web_search_requests": field_values}),
            "iterations": json_values | st.lists(iteration | json_values, max_size=4),
        },
    ),
)
known_claude = sorted(CLAUDE)
known_openai = sorted(OPENAI)
model_names = (
    st.sampled_from(known_claude + known_openai + ["<synthetic>", "claude-opus-9", "gpt-9"])
    | st.text(max_size=30)
    | json_values
)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(
    model=model_names, usage=usage_dicts, tier=json_values | st.sampled_from(["priority", "fast"])
)
def test_never_raises_never_negative(model, usage, tier):
    for cost, known in (claude_cost(model, usage), openai_cost(model, usage, tier)):
        assert isinstance(cost, int) and cost >= 0
        assert isinstance(known, bool)


@settings(max_examples=200)
@given(st.text(max_size=40) | st.sampled_from(known_claude + known_openai))
def test_normalize_model_idempotent(name):
    once = normalize_model(name)
    assert normalize_model(once) == once


claude_usage = st.fixed_dictionaries(
    {
        "input_tokens": st.integers(0, 400000),
        "output_tokens": st.integers(0, 100000),
        "cache_read_input_tokens": st.integers(0, 400000),
        "five": st.integers(0, 200000),
        "hour": st.integers(0, 200000),
        "extra": st.integers(0, 200000),
        "searches": st.integers(0, 20),
        "speed": st.sampled_from([None, "fast", "standard"]),
        "geo": st.sampled_from([None, "us", "global"]),
    }
)


def build_claude_usage(parts):
    """A consistent usage object: the total of writes covers the breakdown."""
    usage = {
        "input_tokens": parts["input_tokens"],
        "output_tokens": parts["output_tokens"],
        "cache_read_input_tokens": parts["cache_read_input_tokens"],
        "cache_creation_input_tokens": parts["five"] + parts["hour"] + parts["extra"],
        "cache_creation": {
            "ephemeral_5m_input_tokens": parts["five"],
            "ephemeral_1h_input_tokens": parts["hour"],
        },
        "server_tool_use": {"web_search_requests": parts["searches"]},
    }
    if parts["speed"]:
        usage["speed"] = parts["speed"]
    if parts["geo"]:
        usage["inference_geo"] = parts["geo"]
    return usage


GROWING = ("input_tokens", "output_tokens", "cache_read_input_tokens", "five", "hour", "extra")


@settings(max_examples=300)
@given(
    model=st.sampled_from([*known_claude, "claude-opus-9", "mystery"]),
    parts=claude_usage,
    field=st.sampled_from([*GROWING, "searches"]),
    more=st.integers(1, 150000),
)
def test_claude_monotone_in_each_count(model, parts, field, more):
    before, _ = claude_cost(model, build_claude_usage(parts))
    after, _ = claude_cost(model, build_claude_usage(dict(parts, **{field: parts[field] + more})))
    assert after >= before


codex_usage = st.fixed_dictionaries(
    {
        "uncached": st.integers(0, 400000),
        "cached": st.integers(0, 400000),
        "written": st.integers(0, 100000),
        "output": st.integers(0, 100000),
    }
)


def build_codex_usage(parts):
    return {
        "input_tokens": parts["uncached"] + parts["cached"] + parts["written"],
        "cached_input_tokens": parts["cached"],
        "cache_write_input_tokens": parts["written"],
        "output_tokens": parts["output"],
    }


@settings(max_examples=300)
@given(
    model=st.sampled_from([*known_openai, "gpt-9", "mystery"]),
    parts=codex_usage,
    field=st.sampled_from(["uncached", "cached", "written", "output"]),
    more=st.integers(1, 300000),
    tier=st.sampled_from([None, "priority", "flex"]),
)
def test_codex_monotone_in_each_count(model, parts, field, more, tier):
    before, _ = openai_cost(model, build_codex_usage(parts), tier)
    after, _ = openai_cost(
        model, build_codex_usage(dict(parts, **{field: parts[field] + more})), tier
    )
    assert after >= before


def family_members(host, family):
    pattern = re.compile(PRICES[host]["families"][family])
    return [key for key in PRICES[host]["models"] if pattern.search(key)]


CLAUDE_UNKNOWN = {
    "claude-opus": "claude-opus-9",
    "claude-sonnet": "claude-sonnet-9",
    "claude-haiku": "claude-haiku-9",
    "claude-fable": "claude-fable-9",
    "claude-mythos": "claude-mythos-9",
}
OPENAI_UNKNOWN = {"gpt": "gpt-9-zeta", "o": "o9-max", "codex-mini": "codex-mini-2"}


@settings(max_examples=300)
@given(family=st.sampled_from(sorted(CLAUDE_UNKNOWN)), parts=claude_usage)
def test_unknown_claude_model_never_cheaper_than_its_family(family, parts):
    usage = build_claude_usage(parts)
    ceiling, known = claude_cost(CLAUDE_UNKNOWN[family], usage)
    assert not known
    for member in family_members("claude", family):
        assert ceiling >= claude_cost(member, usage)[0], member
    # ... and an id of no family never cheaper than any Claude model.
    anything, _ = claude_cost("mystery-model", usage)
    assert all(anything >= claude_cost(key, usage)[0] for key in CLAUDE)


@settings(max_examples=300)
@given(
    family=st.sampled_from(sorted(OPENAI_UNKNOWN)),
    parts=codex_usage,
    tier=st.sampled_from([None, "priority", "fast", "flex"]),
)
def test_unknown_openai_model_never_cheaper_than_its_family(family, parts, tier):
    usage = build_codex_usage(parts)
    ceiling, known = openai_cost(OPENAI_UNKNOWN[family], usage, tier)
    assert not known
    for member in family_members("openai", family):
        assert ceiling >= openai_cost(member, usage, tier)[0], member
    anything, _ = openai_cost("mystery-model", usage, tier)
    assert all(anything >= openai_cost(key, usage, tier)[0] for key in OPENAI)


def test_usd():
    assert usd(pico(0.1731)) == pytest.approx(0.1731)
    assert math.isclose(usd(10**12), 1.0)


def test_table_loads_lazily_and_once(monkeypatch):
    monkeypatch.setattr(pricing, "_tables", None)
    opened = []
    real_open = open

    def counting_open(path, *args, **kwargs):
        if os.fspath(path).endswith(("prices.json", ".sections")):
            opened.append(path)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr("builtins.open", counting_open)
    assert opened == []
    claude_cost("claude-opus-4-5", {"input_tokens": 1})
    assert 1 <= len(opened) <= 2  # its marshalled copy, or the JSON when the copy is stale
    first = len(opened)
    openai_cost("gpt-5", {"input_tokens": 1})
    assert len(opened) == first


@pytest.mark.parametrize("suffix", ["-2025-04-14", "-20250514"])
def test_a_dated_id_is_found_without_the_slow_path(suffix, monkeypatch):
    """A dated id (Qwen Code's telemetry records the served model so) resolves as
    normalize_model would, without importing `re` on the hook's path."""
    for host in ("claude", "openai"):
        table = pricing._load(host)
        slow = unlisted_models.slow_paths(table)["normalized"]
        for name in list(table["lookup"]):
            if pricing._undated(name + suffix) is None:
                continue
            dated = (name + suffix).upper() if name.startswith("gpt") else name + suffix
            expected = slow.get(normalize_model(dated))
            if expected is None:
                continue
            assert (
                pricing._resolve(table, dated, host == "claude")[0] is table["models"][expected]
            ), dated
    assert pricing._undated("gpt-4.1-2025-04-14") == "gpt-4.1"
    assert pricing._undated("us.anthropic.claude-opus-4-1-20250805") is None
    assert pricing._undated("gpt-4.1-2025-4-14") is None


def test_the_table_is_read_from_its_marshalled_copy_until_the_json_changes(tmp_path):
    def as_of(path):
        return pricing._section(pricing._read_table(str(path)), "as_of")

    table = tmp_path / "prices.json"
    shutil.copy(pricing._price_file(), table)
    sections = pricing._read_table(str(table))
    cache = tmp_path / "__pycache__" / f"prices.{sys.implementation.cache_tag}.sections"
    data = json.loads(table.read_text())
    assert cache.exists() and {key: pricing._section(sections, key) for key in data} == data
    stamp, copy = marshal.loads(cache.read_bytes())
    assert all(isinstance(value, bytes) for value in copy.values())  # each unmarshalled on use
    cache.write_bytes(marshal.dumps((stamp, {**copy, "as_of": marshal.dumps("from the copy")})))
    assert as_of(table) == "from the copy"
    table.write_text(json.dumps({**data, "as_of": "2099-01-01"}))  # an upgrade: a new table
    assert as_of(table) == "2099-01-01"
    cache.write_bytes(b"\x00garbage")
    assert as_of(table) == "2099-01-01"
    other = tmp_path / "read-only"
    other.mkdir()
    (other / "__pycache__").write_text("")  # no folder can be made there: the JSON every time
    shutil.copy(table, other / "prices.json")
    assert as_of(other / "prices.json") == "2099-01-01"


@settings(max_examples=200, deadline=None)
@given(
    model=st.sampled_from(
        [
            "claude-sonnet-4-5",
            "us.anthropic.claude-opus-4-1-v1:0",
            "gpt-5",
            "gpt-4.1",
            "o3",
            "claude-some-future-model",
            "my-claude-proxy",
            "gemini-2.5-pro",
            "unknown",
        ]
    ),
    rules=st.sampled_from([None, True, False]),
    counts=st.tuples(*[st.integers(0, 3_000_000)] * 4),
)
def test_token_pricer_is_the_cost_of_the_same_counts(model, rules, counts):
    inp, cached, written, out = counts
    cached = min(cached, inp)
    written = min(written, inp - cached)
    price = claude_prices.token_pricer(model, rules)
    assert claude_prices.token_pricer(model, rules) is price  # made once per model
    claude = rules
    if claude is None:
        claude = normalize_model(model).startswith("claude")
    if claude:
        usage = {
            "input_tokens": inp - cached - written,
            "cache_read_input_tokens": cached,
            "cache_creation_input_tokens": written,
            "output_tokens": out,
        }
        expected = claude_cost(model, usage)
    else:
        usage = {
            "input_tokens": inp,
            "cached_input_tokens": cached,
            "cache_write_input_tokens": written,
            "output_tokens": out,
        }
        expected = openai_cost(model, usage)
    assert price(inp, cached, written, out) == expected


def recorded_models(value):
    """Every model id the recorded fixtures name (any key with "model" in it, not a note)."""
    if isinstance(value, dict):
        for key, item in value.items():
            if "model" in key.lower() and isinstance(item, str) and " " not in item:
                yield item
            yield from recorded_models(item)
    elif isinstance(value, list):
        for item in value:
            yield from recorded_models(item)


def fixture_models():
    found = set()
    for path in sorted((ROOT / "tests" / "fixtures").rglob("*.json*")):
        text = path.read_text(errors="replace")
        for line in [text] if path.suffix == ".json" else text.splitlines():
            try:
                found.update(recorded_models(json.loads(line)))
            except ValueError:
                pass
    return sorted(found)


FIXTURE_MODELS = fixture_models()
TABLE_IDS = sorted(
    {
        name
        for host in ("claude", "openai", "gemini")
        for key, entry in PRICES[host]["models"].items()
        for name in (key, *entry.get("ids", []), *entry.get("aliases", []))
    }
)
MADE_UP = ["claude", "claude-opus-9", "claude-sonnet-4-5-preview", "my-claude-proxy", "gpt-9-zeta"]
PREFIXES = ["anthropic.", "us.anthropic.", "anthropic/", "openrouter/anthropic/", "openai/"]
PREFIXES += ["google/", "vertex_ai/", "bedrock/", "azure/", "x-", "[1m]"]
SUFFIXES = ["-20250514", "-2025-08-07", "@20250514", "-2025051", "-v1:0", "-v2", ":0"]
SUFFIXES += ["-latest", "-fast", "-preview", "-9", "[1m]", "[200k]"]
PIECES = ["claude", "gpt", "-", "4", ".", "5", "20250514", "2025-08-07", "/", "anthropic."]
PIECES += ["@", ":", "v1", "[1m]", " ", "\t", "opus", "sonnet", "X"]


def maybe(options):
    """Half the time nothing: most ids a host writes are plain."""
    return st.just("") | st.sampled_from(options)


@st.composite
def model_ids(draw):
    """Ids as hosts write them: the table's, the fixtures', with a provider's prefix or path,
    a dotted version, a date, a Bedrock version, a context flag, another case, spaces around."""
    name = draw(st.sampled_from(TABLE_IDS + FIXTURE_MODELS + MADE_UP))
    if draw(st.booleans()):  # claude-sonnet-4.5, as Copilot's catalog and OpenRouter write it
        name = re.sub(r"(\d)-(\d)", r"\1.\2", name, count=1)
    name = draw(maybe(PREFIXES)) + name + draw(maybe(SUFFIXES))
    name = draw(st.sampled_from([name, name.upper(), name.title()]))
    return draw(maybe([" ", "\t"])) + name + draw(maybe([" ", "\n"]))


any_model_id = (
    model_ids() | st.lists(st.sampled_from(PIECES), max_size=8).map("".join) | st.text(max_size=30)
)


@settings(max_examples=1500, deadline=None)
@given(model=any_model_id, counts=st.tuples(*[st.integers(0, 600_000)] * 4))
@example(model="cla[1m]ude-sonnet-4", counts=(1000, 100, 10, 10))
@example(model="[1m]claude-sonnet-4", counts=(1000, 100, 10, 10))
@example(model="gpt-5-2025051", counts=(1000, 100, 10, 10))
def test_an_id_is_priced_as_the_normalising_path_prices_it(model, counts):
    """Whose rules price an id (Claude's or OpenAI's), told without normalize_model where its
    start cannot change, and each table's rates, looked up as written and without a date: the
    same as normalising every id (unlisted_models, and its `re`) gives."""
    claude = "claude" in model.lower() and normalize_model(model).startswith("claude")
    assert claude_prices._names_claude(model) == claude
    inp, cached, written, out = counts
    cached = min(cached, inp)
    written = min(written, inp - cached)
    slow = claude_prices._claude_pricer(model) if claude else openai_prices.openai_pricer(model)
    assert claude_prices.token_pricer(model)(inp, cached, written, out) == slow(
        inp, cached, written, out
    )
    for host in ("claude", "openai", "gemini"):
        table = pricing._load(host)
        prefix = host == "claude"
        rates, known = unlisted_models.find_rates(table, model, prefix)
        verbatim = model in table["lookup"]  # the table's names are lowercase
        expected = (rates, True if verbatim else known)
        assert pricing._find_rates(table, model, prefix) == expected, host


def test_a_call_reads_only_the_table_of_the_host_it_prices(monkeypatch):
    """Each host's part of the table is unmarshalled and built when first used."""
    monkeypatch.setattr(pricing, "_tables", None)
    gemini_prices.gemini_cost("gemini-2.5-pro", {"input": 1})
    sections = pricing._tables[""]
    assert sorted(key for key, value in sections.items() if not isinstance(value, bytes)) == [
        "gemini"
    ]
    assert sorted(pricing._tables) == ["", "gemini"]
    openai_cost("gpt-5", {"input_tokens": 1})
    assert sorted(pricing._tables) == ["", "gemini", "openai"]
