"""The cap as a ceiling (issue 26) in the real Claude Code and Codex CLIs, offline.

Scripted models that ignore refusals, with responses of 5 % to 30 % of the cap whose usage grows
the way a cached session's does (each request reads from the cache what the last one saw and
wrote): the run ends at or below its cap when the estimate's error is below the margin left, and
never above it by more than that error. And a session that calls no tool: re-prompted past its
cap it is refused at the next prompt, and another plugin's Stop hook that keeps the turn going
does not carry it past the cap. Each test prints the final spend, the cap and the estimate's
errors (pytest -s shows them).

RUNAWAY_GUARD_E2E_BEFORE=<checkout> installs the guard from another checkout (the one before
this change) to see the same scenarios end above their caps.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import harness
import pytest
from claude_host import config_dir
from harness import slow_all
from scripted_model import ScriptedModel, bash, text, usage
from test_claude_code import Claude

pytestmark = pytest.mark.e2e

BEFORE = os.environ.get("RUNAWAY_GUARD_E2E_BEFORE")
if BEFORE:
    harness.INSTALLER = Path(BEFORE) / "installer" / "install.py"

# Sonnet 4.6: $3 input, $3.75 5-minute cache write, $0.30 cache read, $15 output per MTok.
RATES = {"input": 3e-6, "write": 3.75e-6, "read": 0.3e-6, "output": 15e-6}


def growing(steps, first_read, grow, out):
    """Usage objects of a cached session: request k reads what k-1 read and wrote, and writes
    its own new input (the tool result and the previous output: grow tokens)."""
    return [usage(5, out, cache_read=first_read + k * grow, cache_5m=grow) for k in range(steps)]


def cost(u) -> float:
    return (
        u["input_tokens"] * RATES["input"]
        + u["cache_creation_input_tokens"] * RATES["write"]
        + u["cache_read_input_tokens"] * RATES["read"]
        + u["output_tokens"] * RATES["output"]
    )


def estimate_errors(usages, priced=cost, read=None, price=None) -> list:
    """What the guard's estimate of each next response missed it by ($): the guard's own
    estimator, fed the responses one by one. read(usage) -> (context, cached) as the host's
    reader gives them (Claude Code's by default); price: the model's pricer."""
    from runaway_guard import claude_prices, estimate

    price = price or claude_prices.token_pricer("claude-sonnet-4-6", True)
    state, errors = {}, []
    for key, u in enumerate(usages):
        if key:
            errors.append(priced(u) - estimate.next_cost(state, "main") / 1e12)
        context, cached = (read or claude_counts)(u)
        estimate.note(state, "main", key, 0, u["output_tokens"], (context, cached, price))
    return errors


def claude_counts(u):
    cached = u["cache_read_input_tokens"] + u["cache_creation_input_tokens"]
    return cached + u["input_tokens"], cached


def report(name, total, cap, errors):
    worst = max((abs(e) for e in errors), default=0.0)
    print(
        f"\n{name}: final spend ${total:.4f} of a ${cap:.2f} cap "
        f"({'at or below' if total <= cap + 1e-9 else 'ABOVE'}); estimate error: worst "
        f"${worst:.4f}, each {[round(e, 4) for e in errors]}"
    )
    return worst


@pytest.mark.parametrize(
    "cap, first_read, grow, out",
    [
        (1.00, 60_000, 8_000, 1_500),  # responses of 5 % to 9 % of the cap
        (0.60, 100_000, 20_000, 3_000),  # 20 % to 30 %
    ],
)
def test_claude_code_ends_at_or_below_its_cap(tmp_path, cap, first_read, grow, out):
    claude = Claude(tmp_path, max_usd=cap)
    usages = growing(24, first_read, grow, out)
    steps = [bash(f"echo {n} >> ran.txt", "Step", usage=u) for n, u in enumerate(usages)]
    with ScriptedModel({"anthropic": slow_all([*steps, text("Done.")])}) as model:
        run = claude.run(model)
    total = run.result["total_cost_usd"]
    requests = len(model.api_requests())
    errors = estimate_errors(usages[: requests + 1])
    worst = report(f"Claude Code, {requests} responses", total, cap, errors)
    assert total <= cap + worst
    if worst < min(cost(u) for u in usages):  # the margin: the smallest response
        assert total <= cap
    assert claude.status(run.session_id)["blocked"]["wire"] == "session"


KEEP_GOING = (
    "import json, sys; json.load(sys.stdin); "
    'print(json.dumps({"decision": "block", "reason": "Keep going: say more."}))'
)


def keep_going_hook(claude) -> None:
    """A Stop hook beside the guard's that always asks the turn to go on (as several
    published plugins do)."""
    settings = config_dir(claude.person.home) / "settings.json"
    data = json.loads(settings.read_text())
    command = f"{sys.executable} -c '{KEEP_GOING}'"
    hook = {"hooks": [{"type": "command", "command": command, "timeout": 30}]}
    data["hooks"].setdefault("Stop", []).insert(0, hook)
    settings.write_text(json.dumps(data))


def test_claude_code_text_only_session_is_held_at_its_cap(tmp_path):
    """No tool is ever called: a Stop hook keeps each turn going and the person re-prompts
    with --resume. The guard ends the kept turn and refuses the prompt that would cross the
    cap."""
    cap = 0.60
    claude = Claude(tmp_path, max_usd=cap)
    keep_going_hook(claude)
    usages = growing(40, 100_000, 20_000, 3_000)
    answers = [text(f"Answer {n}.", usage=u) for n, u in enumerate(usages)]
    with ScriptedModel({"anthropic": slow_all(answers)}) as model:
        first = claude.run(model, "Tell me.")
        totals = [first.result["total_cost_usd"]]
        session = first.session_id
        resumed = []
        for n in range(3):
            run = claude.run(model, f"Go on {n}.", extra_args=("--resume", session))
            resumed.append(run)
            totals.append(run.result.get("total_cost_usd"))
        requests = len(model.api_requests())
    spent = sum(cost(u) for u in usages[:requests])  # Claude Code's totals are per process
    errors = estimate_errors(usages[: requests + 1])
    worst = report(f"Claude Code text only, {requests} responses", spent, cap, errors)
    print("runs:", [(r.result.get("terminal_reason"), r.result.get("result")) for r in resumed])
    assert spent <= cap + worst
    # the kept turn was ended by the guard's continue:false at the response before the cap,
    # though the other Stop hook asked it to go on (Claude Code stops after 8 such blocks)
    assert requests == 3 and totals[0] == pytest.approx(spent, abs=1e-9)
    assert claude.status(session)["blocked"]["wire"] == "session"
    for run in resumed:  # each new prompt refused with the reason and the next step
        assert "would cross the session spend cap" in run.result["result"], run.result
        assert "--raise-cap" in run.result["result"]


# -- Codex -------------------------------------------------------------------------------------

# gpt-5.5: $5 input, $0.50 cached input, $30 output per MTok
CODEX_RATES = {"input": 5e-6, "cached": 0.5e-6, "output": 30e-6}


def codex_usages(steps, first, grow, out):
    """Request k sends what k-1 sent and got, plus grow tokens; all but the new part cached."""
    return [
        {
            "input_tokens": first + k * grow,
            "cached_tokens": first + k * grow - grow,
            "output_tokens": out,
        }
        for k in range(steps)
    ]


def openai_cost(u) -> float:
    cached = u["cached_tokens"]
    return (
        (u["input_tokens"] - cached) * CODEX_RATES["input"]
        + cached * CODEX_RATES["cached"]
        + u["output_tokens"] * CODEX_RATES["output"]
    )


def codex_estimate_errors(usages) -> list:
    from runaway_guard import openai_prices

    def read(u):
        return u["input_tokens"], u["cached_tokens"]

    return estimate_errors(usages, openai_cost, read, openai_prices.openai_pricer("gpt-5.5"))


@pytest.mark.parametrize(
    "cap, first, grow, out",
    [
        (2.00, 100_000, 10_000, 2_000),  # responses of 8 % to 10 % of the cap
        (1.00, 150_000, 30_000, 4_000),  # 26 % to 30 %
    ],
)
def test_codex_ends_at_or_below_its_cap(tmp_path, cap, first, grow, out):
    from test_codex import IGNORES, Codex, Script, serve, sh

    usages = codex_usages(30, first, grow, out)
    steps = [sh(f"echo {n} >> ran.txt", u) for n, u in enumerate(usages)]
    with ScriptedModel(serve(Script(steps, IGNORES))) as model:
        codex = Codex(tmp_path, model.url, max_usd=cap)
        run = codex.run()
        requests = len(model.api_requests("openai"))
    spent = codex.status(run.thread_id)["spend_usd"]
    errors = codex_estimate_errors(usages[: requests + 1])
    worst = report(f"Codex, {requests} responses", spent, cap, errors)
    assert spent <= cap + worst
    if worst < min(openai_cost(u) for u in usages):
        assert spent <= cap
    assert codex.status(run.thread_id)["blocked"]["wire"] == "session"


def test_codex_text_only_session_is_held_at_its_cap(tmp_path):
    """Text answers only; a Stop hook beside the guard's keeps each turn going, and the person
    resumes the session (codex exec resume). The guard ends the turn and refuses the prompt
    that would cross the cap."""
    from test_codex import Codex, serve

    cap = 1.00
    usages = iter(codex_usages(60, 150_000, 30_000, 4_000))
    with ScriptedModel(serve(lambda body: {"text": "More.", "usage": next(usages)}, 60)) as model:
        codex = Codex(tmp_path, model.url, max_usd=cap)
        hooks = json.loads((codex.home.path / "hooks.json").read_text())
        command = f"{sys.executable} -c '{KEEP_GOING}'"
        keep = {"hooks": [{"type": "command", "command": command, "timeout": 30}]}
        hooks["hooks"].setdefault("Stop", []).insert(0, keep)
        (codex.home.path / "hooks.json").write_text(json.dumps(hooks))
        first = codex.run("Tell me.")
        resumed = [codex.run(f"Go on {n}.", resume=first.thread_id) for n in range(2)]
        requests = len(model.api_requests("openai"))
    served = codex_usages(requests + 1, 150_000, 30_000, 4_000)
    spent = sum(openai_cost(u) for u in served[:requests])
    errors = codex_estimate_errors(served)
    worst = report(f"Codex text only, {requests} responses", spent, cap, errors)
    assert spent <= cap + worst
    # the other Stop hook's block continued the first turn once; at the second answer the
    # guard's continue:false ended it (Codex 0.171.0: it outranks the block); each resumed
    # prompt was refused before any request
    assert requests == 2
    assert codex.status(first.thread_id)["blocked"]["wire"] == "session"
    for run in resumed:
        assert run.returncode == 0 and '"output_tokens":0' in run.stdout, run.stdout[-2000:]


def test_a_new_prompt_after_a_loop_stop_goes_through(tmp_path):
    """The prompt hook refuses only past a cap: a run the loop wire ended takes the person's
    next prompt (Claude Code's UserPromptSubmit carries the new prompt's id, which starts the
    count anew)."""
    claude = Claude(tmp_path)
    loop = [bash("echo x >> ran.txt; echo same", "Again", usage=usage(50, 10))] * 8
    with ScriptedModel({"anthropic": slow_all([*loop, text("Stopped.")])}) as model:
        first = claude.run(model)
        assert claude.status(first.session_id)["blocked"]["wire"] == "loop"
        model.steps["anthropic"] = [text("Here is another way.")]
        again = claude.run(model, "Try another way.", extra_args=("--resume", first.session_id))
    assert again.result["result"] == "Here is another way.", again.result
