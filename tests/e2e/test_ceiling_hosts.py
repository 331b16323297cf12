"""The cap as a ceiling (issue 26) on the other hosts whose stop ends the run, offline: Gemini
CLI (`BeforeModel`), Qwen Code (`UserPromptSubmit`, fired before every model request), Copilot
CLI (`preToolUse`, then SIGINT: the next request is never sent) and OpenCode (the plugin's
`chat.params`).

Scripted models that ignore refusals and answer at once, with responses of 5 % to 30 % of the
cap whose usage grows the way a cached session's does (each request reads from the cache what
the last one sent, and sends `grow` new tokens): the run ends at or below its cap when the
estimate's error is below the margin left, and never above it by more than that error. Each
test prints the final spend (the responses served, priced by hand), the cap and the estimate's
errors (pytest -s shows them); RUNAWAY_GUARD_E2E_BEFORE=<checkout> installs another checkout's
guard, as in test_ceiling.py.
"""

from __future__ import annotations

import pytest
from scripted_model import ScriptedModel
from test_ceiling import report

pytestmark = pytest.mark.e2e


def growing(steps, first, grow, out):
    """OpenAI-style usage of a cached session: request k sends what k-1 sent and got, plus grow
    new tokens; all but the new part is read from the cache."""
    return [
        {"input_tokens": first + k * grow, "cached_tokens": first + (k - 1) * grow, "output": out}
        for k in range(steps)
    ]


def openai_cost(rates, u) -> float:
    """Tokens x rates ($ per MTok: input, cached input, output), input including the cached."""
    fresh_rate, cached_rate, out_rate = rates
    fresh = u["input_tokens"] - u["cached_tokens"]
    return (fresh * fresh_rate + u["cached_tokens"] * cached_rate + u["output"] * out_rate) / 1e6


def estimate_errors(responses) -> list:
    """What the guard's estimate of each next response missed it by ($): its own estimator fed
    the responses one by one, each as (cost $, output tokens, what the host's reader gives
    estimate.note: (context, cached, pricer) or LAST_COST)."""
    from runaway_guard import estimate

    state, errors = {}, []
    for key, (usd, out, ahead) in enumerate(responses):
        if key:
            errors.append(usd - estimate.next_cost(state, "main") / 1e12)
        estimate.note(state, "main", key, round(usd * 1e12), out, ahead)
    return errors


def judge(host, requests, cap, errors, costs, status):
    """Print the run's figures; the ceiling's promise: never above the cap by more than the
    worst estimate error, and at or below it when that error is below the margin (the smallest
    response)."""
    served = costs[:requests]
    total = sum(served)
    sizes = f"responses of {min(served) / cap:.0%} to {max(served) / cap:.0%} of the cap"
    worst = report(f"{host}, {requests} {sizes}", total, cap, errors)
    assert total <= cap + worst + 1e-9
    if worst < min(costs):
        assert total <= cap + 1e-9
    assert status["blocked"]["wire"] == "session", status["blocked"]


def token_errors(rates, price, usages, requests):
    """The responses' costs, and the estimate's errors where the host's reader gives it their
    tokens (Gemini CLI, Qwen Code, Copilot CLI under the person's key); price: the model's
    pricer in OpenAI's shape."""
    costs = [openai_cost(rates, u) for u in usages]
    served = [
        (c, u["output"], (u["input_tokens"], u["cached_tokens"], price))
        for c, u in zip(costs, usages)
    ]
    return costs, estimate_errors(served[: requests + 1])


# -- Gemini CLI --------------------------------------------------------------------------------

# gemini-2.5-flash: $0.30 input, $0.03 cached input, $2.50 output per MTok
GEMINI_RATES = (0.30, 0.03, 2.50)


@pytest.mark.parametrize(
    "cap, first, grow, out",
    [
        (0.20, 100_000, 10_000, 2_000),  # $0.0116 to $0.014
        (0.09, 150_000, 30_000, 4_000),  # $0.0226 to $0.0262
    ],
)
def test_gemini_cli_ends_at_or_below_its_cap(tmp_path, cap, first, grow, out):
    from runaway_guard.hosts.gemini.chats import _pricers
    from test_gemini_cli import FLASH, Gemini, sh

    usages = growing(30, first, grow, out)
    tokens = [
        {"prompt": u["input_tokens"], "cached": u["cached_tokens"], "output": u["output"]}
        for u in usages
    ]
    steps = [sh(f"echo {n} >> ran.txt", t) for n, t in enumerate(tokens)]
    with ScriptedModel({"gemini": steps}) as model:
        gemini = Gemini(tmp_path, model.url, max_usd=cap)
        run = gemini.run()
        requests = len(model.api_requests("gemini"))
    costs, errors = token_errors(GEMINI_RATES, _pricers(FLASH)[2], usages, requests)
    status = gemini.status(run.session_id)
    judge("Gemini CLI", requests, cap, errors, costs, status)


# -- Qwen Code ---------------------------------------------------------------------------------

# gpt-4.1: $2 input, $0.50 cached input, $8 output per MTok
GPT_41 = (2.0, 0.5, 8.0)
OPENAI_SCENARIOS = [
    (0.20, 20_000, 2_000, 500),  # $0.017 to $0.02 on gpt-4.1
    (0.20, 60_000, 6_000, 1_500),  # $0.051 to $0.06
]


def chat_usage(u) -> dict:
    return {
        "input_tokens": u["input_tokens"],
        "cached_tokens": u["cached_tokens"],
        "output_tokens": u["output"],
    }


def gpt_41_errors(usages, requests):
    from runaway_guard import claude_prices

    return token_errors(GPT_41, claude_prices.token_pricer("gpt-4.1", False), usages, requests)


@pytest.mark.parametrize("cap, first, grow, out", OPENAI_SCENARIOS)
def test_qwen_code_ends_at_or_below_its_cap(tmp_path, cap, first, grow, out):
    from test_qwen_code import Qwen, final, sh

    usages = growing(30, first, grow, out)
    steps = [sh(f"echo {n} >> ran.txt", f"step {n}", chat_usage(u)) for n, u in enumerate(usages)]
    with ScriptedModel({"chat": steps, "chat_default": final()}) as model:
        qwen = Qwen(tmp_path, model.url, max_usd=cap)
        run = qwen.run()
        requests = len(model.api_requests("chat"))
    costs, errors = gpt_41_errors(usages, requests)
    status = qwen.status(run.session_id)
    judge("Qwen Code", requests, cap, errors, costs, status)


# -- Copilot CLI -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cap, first, grow, out",
    [
        OPENAI_SCENARIOS[0],
        # Copilot CLI compacts a BYOK gpt-4.1 session near its 64,000-token limit: kept below
        (0.16, 30_000, 3_000, 3_000),  # $0.0435 to $0.048
    ],
)
def test_copilot_cli_ends_at_or_below_its_cap(tmp_path, cap, first, grow, out):
    from test_copilot_cli import Copilot, sh

    usages = growing(30, first, grow, out)
    # Copilot writes its events file late: the model answers after 0.2 s (test_copilot_cli.py)
    steps = [sh(f"echo {n} >> ran.txt", chat_usage(u), delay=0.2) for n, u in enumerate(usages)]
    with ScriptedModel({"chat": steps}) as model:
        copilot = Copilot(tmp_path, max_usd=cap)
        run = copilot.run(model)
        requests = len(model.api_requests("chat"))
    costs, errors = gpt_41_errors(usages, requests)
    status = copilot.status(run.session_id)
    judge("Copilot CLI", requests, cap, errors, costs, status)
    assert run.aborted


# -- OpenCode ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cap, first, grow, out",
    [
        (0.25, 20_000, 2_000, 500),  # $0.019 to $0.022 at OpenCode's $3 / $0.30 / $15
        (0.20, 60_000, 6_000, 1_500),  # $0.057 to $0.066
    ],
)
def test_opencode_ends_at_or_below_its_cap(tmp_path, cap, first, grow, out):
    from opencode_host import COST
    from runaway_guard.estimate import LAST_COST
    from test_opencode import OpenCode, agent_requests, serve, sh

    usages = growing(30, first, grow, out)
    steps = [sh(f"echo {n} >> ran.txt", chat_usage(u)) for n, u in enumerate(usages)]
    with ScriptedModel(serve(steps)) as model:
        opencode = OpenCode(tmp_path, model.url, max_usd=cap)
        run = opencode.run()
        requests = len(agent_requests(model))
    rates = (COST["input"], COST["cache_read"], COST["output"])
    costs = [openai_cost(rates, u) for u in usages]
    errors = estimate_errors(
        [(c, u["output"], LAST_COST) for c, u in zip(costs, usages)][: requests + 1]
    )
    status = opencode.status(run.session_id)
    judge("OpenCode", requests, cap, errors, costs, status)
    assert run.store.cost(run.session_id) == pytest.approx(sum(costs[:requests]), abs=1e-6)
