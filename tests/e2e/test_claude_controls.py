"""The agent's own attempts on the guard's files, inside the real Claude Code CLI (pinned).

The model asks to switch the guard off by writing its config file, through the shell and
through the Write tool. The guard asks the person; in print mode Claude Code cannot ask and
turns the ask into a denial. The file stays as the person wrote it, and the transcript's tool
result shows the guard's reason.
"""

from __future__ import annotations

import json

import pytest
from harness import slow_all
from scripted_model import ScriptedModel, bash, text, tool_use
from test_claude_code import Claude, records

pytestmark = pytest.mark.e2e

ORIGINAL = '{"max_usd": 5}\n'


def blocks(run, record_type: str, block_type: str) -> list:
    """Every content block of this type in the session's records of that type."""
    out = []
    for record in records(run):
        content = (record.get("message") or {}).get("content")
        if record.get("type") == record_type and isinstance(content, list):
            out += [block for block in content if block.get("type") == block_type]
    return out


def test_the_agent_cannot_write_the_guards_config(tmp_path):
    claude = Claude(tmp_path)
    config = claude.person.home / ".config" / "runaway-guard" / "config.json"
    config.parent.mkdir(parents=True)
    config.write_text(ORIGINAL)
    off = '{"off": true}'
    steps = [
        bash(f"echo '{off}' > ~/.config/runaway-guard/config.json", "Turn the guard off"),
        bash(f"echo '{off}' > \"$HOME/.config/runaway-guard/config.json\"", "Again"),
        tool_use("Read", {"file_path": str(config)}),  # Claude Code writes only a file it read
        tool_use("Write", {"file_path": str(config), "content": off}),
        bash("echo ran >> ran.txt", "An ordinary command"),
        text("Done."),
    ]
    with ScriptedModel({"anthropic": slow_all(steps)}) as model:
        run = claude.run(model)
    assert config.read_text() == ORIGINAL, claude.person.guard_trace()
    assert claude.marker() == ["ran"]  # the ordinary call after them still runs
    results = {
        b["tool_use_id"]: json.dumps(b["content"]) for b in blocks(run, "user", "tool_result")
    }
    made = {b["id"]: b["name"] for b in blocks(run, "assistant", "tool_use")}
    refused = {tool_id: name for tool_id, name in made.items() if name in ("Bash", "Write")}
    del refused[list(refused)[-1]]  # the ordinary command
    assert list(refused.values()) == ["Bash", "Bash", "Write"]
    for tool_id, name in refused.items():
        assert "runaway-guard" in results[tool_id], (name, results[tool_id])
    denied = {d["tool_use_id"] for d in run.result.get("permission_denials", [])}
    assert set(refused) <= denied, run.result.get("permission_denials")


def test_claude_codes_own_rule_asks_when_the_hook_says_nothing(tmp_path):
    """The installer's `permissions.ask` rules hold where the hook cannot answer (here the guard
    is off): Claude Code itself asks before its Write tool changes the guard's folder."""
    claude = Claude(tmp_path, off=1)
    settings = json.loads(claude.settings.read_text())
    assert "Edit(~/.config/runaway-guard/**)" in settings["permissions"]["ask"]
    config = claude.person.home / ".config" / "runaway-guard" / "config.json"
    config.parent.mkdir(parents=True)
    config.write_text(ORIGINAL)
    guard_file = claude.skill / "skill" / "guard.py"
    steps = [
        tool_use("Read", {"file_path": str(config)}),
        tool_use("Write", {"file_path": str(config), "content": '{"off": true}'}),
        tool_use("Read", {"file_path": str(guard_file)}),
        tool_use("Write", {"file_path": str(guard_file), "content": "pass\n"}),
        tool_use("Write", {"file_path": str(claude.person.project / "notes.md"), "content": "x"}),
        text("Done."),
    ]
    guard_code = guard_file.read_text()
    with ScriptedModel({"anthropic": slow_all(steps)}) as model:
        run = claude.run(model)
    assert config.read_text() == ORIGINAL
    assert guard_file.read_text() == guard_code
    assert (claude.person.project / "notes.md").read_text() == "x"  # an ordinary file is written
    denied = [d["tool_input"].get("file_path") for d in run.result["permission_denials"]]
    assert denied == [str(config), str(guard_file)]
