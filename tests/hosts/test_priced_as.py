"""Every model id the price table lacks as written is named in the status (`unpriced_models`),
with the listed model it was priced as (`priced_as`), on every host: a proxy's
`claude-opus-4-6-thinking` priced as claude-opus-4-6 is said to be (issue 31)."""

import json
import re

import pytest
from guard_env import ROOT
from recorded_sessions import CASES, FIXTURES, synced
from runaway_guard import hook, ledger, pricing, report

# case: (where the session writes a model id, its spelling in its place, the table it is looked
# up in): a Claude id with a suffix Claude Code maps to the model (by prefix), an OpenAI or
# Gemini id behind a provider's path.
CLAUDE_ID = r'("(?:requestedModel|model)":")(claude-[^"]+)"'
OPENAI_ID = r'("model":")(gpt-[^"]+)"'
GEMINI_ID = r'("model": ?")(gemini-[^"]+)"'
THINKING = "{}-thinking".format
OPENAI_PATH = "openai/{}".format
SPELLINGS = {
    "claude-jsonl": (CLAUDE_ID, THINKING, "claude"),
    "claude-subagent": (CLAUDE_ID, THINKING, "claude"),
    "codex-rollout": (OPENAI_ID, OPENAI_PATH, "openai"),
    "copilot-events": (OPENAI_ID, OPENAI_PATH, "openai"),
    "qwen-chats": (OPENAI_ID, OPENAI_PATH, "openai"),
    "gemini-jsonl": (GEMINI_ID, "models/{}".format, "gemini"),
    "gemini-whole-file": (GEMINI_ID, "models/{}".format, "gemini"),
    # OpenCode stored no cost: its tokens are priced by the table, the id as the step names it
    "opencode-sqlite-unpriced": (
        r'("modelID":")(scripted-unpriced)"',
        lambda _: "openai/gpt-5",
        "openai",
    ),
}


def originals(case, pattern):
    """The model ids the case's files write where the pattern finds them."""
    found = set()
    for _, fixture in CASES[case][3]:
        text = (FIXTURES / fixture).read_text()
        found.update(match.group(2) for match in re.finditer(pattern, text))
    return found


def status_of(root, state):
    return report.build(str(root / "state.json"), state, str(root / "state"), environ={})


@pytest.mark.parametrize("case", sorted(SPELLINGS))
def test_an_id_not_listed_as_written_is_named_with_what_it_was_priced_as(tmp_path, case):
    pattern, spell, table = SPELLINGS[case]
    lookup = pricing._load(table)["lookup"]

    def spelled(text):
        return re.sub(pattern, lambda found: f'{found.group(1)}{spell(found.group(2))}"', text)

    plain = synced(tmp_path / "plain", case)
    state = synced(tmp_path / "spelled", case, spelled=spelled)
    # each model the session priced, as it is spelled now: what it is priced as
    expected = {
        priced.replace(model, spell(model)): lookup.get(model.lower())
        or lookup.get(spell(model).split("/")[-1], "ceiling")  # still unknown: a ceiling
        for priced in plain["spend"]["model"]
        for model in originals(case, pattern)
        if model in priced
    }
    assert expected
    status = status_of(tmp_path / "spelled", state)
    assert set(expected) <= set(status["unpriced_models"])
    assert {model: status["priced_as"][model] for model in expected} == expected
    assert not set(expected) & set(status_of(tmp_path / "plain", plain)["unpriced_models"])
    if case != "opencode-sqlite-unpriced":  # priced at the same rates: the same spend
        assert state["spend"]["total"] == plain["spend"]["total"]


def test_cursor_names_an_id_priced_as_a_listed_model(tmp_path):
    stop = json.loads(
        (ROOT / "tests/fixtures/cursor/mulmoterminal-2026.09/hook_inputs.jsonl")
        .read_text()
        .splitlines()[0]
    )
    env = {"RUNAWAY_GUARD_STATE_DIR": str(tmp_path / "state"), "HOME": str(tmp_path)}
    for model in ("openai/gpt-5", "default"):
        hook.run(json.dumps(dict(stop, model=model, generation_id=model)).encode(), env)
    with ledger.Ledger(str(tmp_path / "state"), "cursor", stop["conversation_id"]) as book:
        status = status_of(tmp_path, book.state)
    assert status["unpriced_models"] == ["openai/gpt-5", "default"]
    assert status["priced_as"] == {"openai/gpt-5": "gpt-5", "default": "ceiling"}
