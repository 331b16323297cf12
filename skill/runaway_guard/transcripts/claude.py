"""Claude Code transcripts: `<project>/<session>.jsonl` and its subagents' files.

Subagents live in `<session>/subagents/**/agent-<id>.jsonl` (2.1.2 and later), in sibling
`agent-<id>.jsonl` files (2.0.28 to 2.1.1), or as `isSidechain` records in the main file (older).
One API response is written as one record per content block, each repeating the response's
usage, the early ones with a placeholder output count: it is priced once, by message id, at the
largest output count seen.
"""

import os

from .. import jsonio, pricing
from . import GUARD_MARK, fingerprint, first_line, local_day, number, read_file

_REJECTED = (
    "The user doesn't want to proceed",
    "The user doesn't want to take this action",
    "[Request interrupted by user",
)


def sync(ledger, call):
    """Bring the ledger up to date with the session's files; False when there is no transcript."""
    main = call.transcript_path
    if not main or not call.session_id:
        return False
    files = ledger.state["files"]
    folder = os.path.dirname(main)
    # Subagents first: a cost-state record in the main file totals them too (see reconcile).
    targets = _subagent_files(os.path.join(folder, call.session_id, "subagents"))
    if _old_layout(files.get(main)):
        targets.extend(_sibling_files(folder, call.session_id, files))
    targets.append((main, "main"))
    for path, agent in targets:
        entry = files.get(path)
        if entry is None:
            entry = files[path] = {"agent": agent}
        if entry.get("foreign"):
            continue
        reader = _Reader(ledger, entry)
        try:
            read_file(ledger, path, entry, reader.line)
        except FileNotFoundError:
            if path != main:
                del files[path]  # what it held stays counted in the ledger
        except OSError:
            if path == main:
                raise
            # a subagent file that cannot be read (not a regular file, no permission): the
            # others still count, and this one is tried again next call
    return True


def _subagent_files(folder, depth=0):
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    found = []
    for item in entries:
        name = item.name
        if name.startswith("agent-") and name.endswith(".jsonl"):
            found.append((item.path, name[6:-6]))
        elif depth < 3 and item.is_dir(follow_symlinks=False):
            found.extend(_subagent_files(item.path, depth + 1))
    return found


def _old_layout(main_entry):
    """Sibling agent files exist only before 2.1.2; unknown versions are looked at too."""
    version = (main_entry or {}).get("ver")
    if not isinstance(version, str):
        return True
    try:
        parts = tuple(int(part) for part in version.split(".")[:3])
    except ValueError:
        return True
    return parts < (2, 1, 2)


def _sibling_files(folder, session_id, files):
    try:
        names = [name for name in os.listdir(folder) if name.startswith("agent-")]
    except OSError:
        return []
    found = []
    for name in names:
        if not name.endswith(".jsonl"):
            continue
        path = os.path.join(folder, name)
        if path not in files and _first_session_id(path) != session_id:
            files[path] = {"foreign": True}
            continue
        found.append((path, name[6:-6]))
    return found


def _first_session_id(path):
    try:
        record = jsonio.loads(first_line(path))
        return record.get("sessionId") if isinstance(record, dict) else None
    except (OSError, ValueError):
        return None


def _guard_refusal(text):
    """The guard's own refusal as Claude Code records it (2.1.328): a deny reads
    `PreToolUse:<Tool> hook error: <reason>`, an ask turned down in print mode is the reason."""
    if text.startswith(GUARD_MARK):
        return True
    head = text[:300]
    return head.startswith("PreToolUse:") and f"hook error: {GUARD_MARK}" in head


def _result_text(content):
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and isinstance(block.get("text"), str):
                return block["text"]
    return ""


class _Reader:
    """Turns one file's new lines into ledger entries."""

    def __init__(self, ledger, entry):
        self.ledger = ledger
        self.entry = entry
        self.agent = entry["agent"]

    def line(self, raw):
        # Most lines are tool results nobody waits for, progress, attachments, snapshots, and
        # each byte test scans the whole line: the tests that need no scan come first.
        wanted = (
            b'"usage"' in raw
            or (
                self.ledger.expecting() and b'"tool_result"' in raw and self.ledger.waiting_for(raw)
            )
            or b'"compact_boundary"' in raw
            or b'"cost-state"' in raw
            or ("ver" not in self.entry and b'"version"' in raw)
        )
        if not wanted:
            return
        try:
            record = jsonio.loads(raw)
        except ValueError:
            return
        if not isinstance(record, dict):
            return
        if "ver" not in self.entry and isinstance(record.get("version"), str):
            self.entry["ver"] = record["version"]
        kind = record.get("type")
        if kind == "cost-state":
            self._cost_state(record)
            return
        if kind == "system" and record.get("subtype") == "compact_boundary":
            self._compaction(record)
            return
        message = record.get("message")
        if not isinstance(message, dict):
            return
        if kind == "assistant":
            self._response(record, message)
        elif kind == "user":
            self._results(message.get("content"))

    def _response(self, record, message):
        usage = message.get("usage")
        model = message.get("model")
        if not isinstance(usage, dict) or record.get("isApiErrorMessage"):
            return
        if not isinstance(model, str) or model == "<synthetic>":
            return
        requested = record.get("requestedModel")
        if isinstance(requested, str) and requested:
            model = requested  # Claude Code prices the model it asked for (seen on 2.1.328)
        key = message.get("id") or record.get("requestId")
        if not isinstance(key, str) or not key:
            return
        agent = self.agent
        if agent == "main" and record.get("isSidechain") is True:
            sidechain_agent = record.get("agentId")
            if isinstance(sidechain_agent, str) and sidechain_agent:
                agent = sidechain_agent
        pusd, known = pricing.claude_cost(model, usage)
        paused = message.get("pausedResponses")
        if isinstance(paused, list):
            # Segments before a pause limit are billed on their own; the row's usage is the rest.
            for segment in paused:
                if isinstance(segment, dict) and isinstance(segment.get("usage"), dict):
                    pusd += pricing.claude_cost(model, segment["usage"])[0]
        out = number(usage.get("output_tokens"))
        self.ledger.usage(key, agent, model, pusd, known, out, local_day(record.get("timestamp")))
        if agent == "main":
            self.entry["model"] = model

    def _compaction(self, record):
        """Compaction is billed but not written as a response: estimate it from its size until a
        cost-state record brings Claude Code's own figure."""
        meta = record.get("compactMetadata")
        key = record.get("uuid")
        if not isinstance(meta, dict) or not isinstance(key, str) or self.agent != "main":
            return
        model = self.entry.get("model") or "claude-opus"
        usage = {
            "input_tokens": number(meta.get("preTokens")),
            "output_tokens": number(meta.get("postTokens")),
        }
        pusd = pricing.claude_cost(model, usage)[0]
        self.ledger.estimate_unwritten(key, model, pusd, local_day(record.get("timestamp")))

    def _cost_state(self, record):
        """Claude Code's own running total: written when it saves its cost ledger (each run's end,
        /clear), it includes the requests no transcript shows."""
        total = record.get("totalCostUSD")
        if self.agent != "main" or isinstance(total, bool) or not isinstance(total, (int, float)):
            return
        if 0 <= total < 1e9:
            model = self.entry.get("model") or "claude-opus"
            self.ledger.reconcile(round(total * 10**12), model, local_day(record.get("timestamp")))

    def _results(self, content):
        if not isinstance(content, list):
            return
        for block in content:
            if not isinstance(block, dict) or block.get("type") != "tool_result":
                continue
            tool_use_id = block.get("tool_use_id")
            if not isinstance(tool_use_id, str):
                continue
            body = block.get("content")
            if block.get("is_error") is True:
                text = _result_text(body)
                if text.startswith(_REJECTED):
                    status = "reset"
                elif _guard_refusal(text):
                    status = "guard"
                else:
                    status = "fail"
            else:
                status = "ok"
            self.ledger.result(tool_use_id, status, fingerprint(body))
