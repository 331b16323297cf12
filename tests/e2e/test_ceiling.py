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


def estimate_errors(usages) -> list:
    """What the guard's estimate of each next response missed it by ($): the guard's own
    estimator, fed the responses one by one."""
    sys.path.insert(0, str(harness.ROOT / "skill"))
    from runaway_guard import estimate, pricing

    state, errors = {}, []
    price = pricing.token_pricer("claude-sonnet-4-6", True)
    for key, u in enumerate(usages):
        if key:
            errors.append(cost(u) - estimate.next_cost(state, "main") / 1e12)
        cached = u["cache_read_input_tokens"] + u["cache_creation_input_tokens"]
        context = cached + u["input_tokens"]
        estimate.note(state, "main", key, 0, u["output_tokens"], (context, cached, price))
    return errors


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
    status = claude.status(session)
    spent = status["spend_usd"]
    errors = estimate_errors(usages[: requests + 1])
    worst = report(f"Claude Code text only, {requests} responses", spent, cap, errors)
    print("runs:", [(r.result.get("terminal_reason"), r.result.get("result")) for r in resumed])
    assert spent <= cap + worst
    # the kept turn was ended by the guard before the cap, not by the other hook's cap of blocks
    assert status["blocked"]["wire"] == "session"
    last = resumed[-1]
    assert "runaway-guard" in json.dumps(last.result), last.result
