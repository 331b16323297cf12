"""Claude Code: PreToolUse payloads, its answers, and `<project>/<session>.jsonl` transcripts.

Subagents live in `<session>/subagents/**/agent-<id>.jsonl` (2.1.2 and later), in sibling
`agent-<id>.jsonl` files (2.0.28 to 2.1.1), or as `isSidechain` records in the main file (older).
One API response is written as one record per content block, each repeating the response's
usage, the early ones with a placeholder output count: it is priced once, by message id, at the
largest output count seen.
"""

import time

from .. import claude_prices, estimate, fs, jsonio, text_loops
from ..calls import (
    MODEL,
    NOT_JSON,
    PROMPT,
    Call,
    count,
    fingerprint,
    ignore,
    text,
    tool_name,
)
from ..decisions import ASK, DENY, REFUSAL_PREFIX, STOP, TELL
from ..jsonio import HEAD, head_types, type_at
from . import hook_entry
from ._files import (
    LONG,
    agent_file,
    each_line,
    first_line,
    follow,
    followed,
    listed,
    local_day,
    main_entry,
    read_all,
)
from ._turns import EVENTS, answering_turn, render_stop, turn_call

NAME = "claude"
LABEL = "Claude Code"
RUNGS = frozenset({TELL, DENY, ASK, STOP})
TOOLS = {"Task": "Agent", "MultiEdit": "Edit"}
# Each call is written to the transcript before the hook runs, a little late (a write queue
# flushed every 100 ms; seen on 2.1.332): the guard may wait for it (hook._catch_up).
WRITES_CALLS = True
# After a subagent's end (PostToolUse of its Agent call) its last answer, which may be the one
# that crossed a cap, can still be in that queue: the hook waits at most this long for it.
SUBAGENT_END_WAIT_S = 0.3

INSTALL = {
    "home": ("CLAUDE_CONFIG_DIR", ".claude"),
    "user": {"settings": "settings.json", "skills": "skills"},
    "project": {"settings": ".claude/settings.local.json", "skills": ".claude/skills"},
    "binaries": ("claude",),
    # UserPromptSubmit and Stop: spend with no tool call (a past cap refuses a new prompt, and
    # a turn another Stop hook keeps going ends there). PostToolUse of the Agent tool (Task
    # before 2.1.x): after a subagent's end, before the main thread's next request, where
    # `continue: false` ends the run (SubagentStop's only ends the subagent: seen on 2.1.332).
    "entry": hook_entry(*EVENTS, "PostToolUse", matchers={"PostToolUse": "Agent|Task"}),
    # Claude Code's own rules: its file tools (Edit covers Write, MultiEdit and NotebookEdit)
    # ask before they change the guard's folders, even where the hook cannot run.
    "guard_rules": {"list": ("permissions", "ask"), "rule": "Edit({path}/**)"},
    # The guard's line under the prompt where the person has no status line of their own.
    "status_line": {"key": "statusLine"},
    "after_install": (
        "Claude Code: restart it (or open /hooks) so it loads the hook; in a folder you have not "
        "trusted yet, accept the trust prompt first.",
    ),
    "after_install_project": (
        "{settings_name} was written by the installer, so git does not ignore it automatically: "
        "add .claude/settings.local.json and .claude/skills/runaway-guard/ to .gitignore (they "
        "hold paths of this machine).",
    ),
    "after_uninstall": "Restart Claude Code (or open /hooks) so it drops the hook.",
    # The repository is a marketplace of one plugin carrying the skill and the hook entry above
    # (installer/manifests.py writes these files from this data and SKILL.md's frontmatter).
    "plugin": {
        "manifests": {
            ".claude-plugin/marketplace.json": {
                "name": "{name}",
                "owner": {"name": "{author}"},
                "metadata": {"description": "{description}"},
                "plugins": [{"name": "{name}", "source": "./", "description": "{description}"}],
            },
            ".claude-plugin/plugin.json": {
                "name": "{name}",
                "version": "{version}",
                "description": "{description}",
                "author": {"name": "{author}"},
                "license": "{license}",
                "skills": ["./"],  # the plugin's root is the skill folder
                "hooks": "{hooks}",
            },
        },
        "root": "${CLAUDE_PLUGIN_ROOT}",
        # enabledPlugins in these files switch `<name>@<marketplace>` on (user, then project)
        "enabled_in": {
            "user": ("settings.json",),
            "project": (".claude/settings.json", ".claude/settings.local.json"),
        },
        "id": "{name}@{name}",
        "install": ("claude plugin marketplace add {source}", "claude plugin install {id}"),
        "uninstall": ("claude plugin uninstall {id}", "claude plugin marketplace remove {name}"),
    },
}

_REJECTED = (
    "The user doesn't want to proceed",
    "The user doesn't want to take this action",
    "[Request interrupted by user",
)


def call(payload):
    turn, fired = turn_call(NAME, payload, "prompt_id")
    if turn:
        if fired is not None and fired.event == MODEL:  # PostToolUse of a finished subagent
            response = payload.get("tool_response")
            if isinstance(response, dict) and response.get("status") == "completed":
                fired.tool_input = text(response.get("agentId"))  # sync waits for its answer
        return fired
    return Call(
        NAME,
        payload.get("session_id"),
        transcript_path=payload.get("transcript_path"),
        cwd=payload.get("cwd"),
        agent=payload.get("agent_id"),
        tool=tool_name(payload.get("tool_name"), TOOLS),
        tool_input=payload.get("tool_input"),
        tool_use_id=payload.get("tool_use_id"),
        model=payload.get("model"),
        prompt_id=payload.get("prompt_id"),
    )


def render(decision):
    """PreToolUse's answer: the reason for the model, a systemMessage for the person; at a
    prompt or a turn's end only a stop is said (render_stop)."""
    if answering_turn():
        return render_stop(decision)
    if not decision:
        return ""
    kind = decision["kind"]
    model_text = decision.get("model") or ""
    person_text = decision.get("person") or ""
    specific = {"hookEventName": "PreToolUse"}
    answer = {"hookSpecificOutput": specific}
    if kind == TELL:
        specific["additionalContext"] = model_text
    elif kind == ASK:
        specific["permissionDecision"] = "ask"
        # An ask's reason is shown to the person, who decides.
        specific["permissionDecisionReason"] = person_text or model_text
    else:
        specific["permissionDecision"] = "deny"
        specific["permissionDecisionReason"] = model_text or person_text
        if kind == STOP:
            answer["continue"] = False
            answer["stopReason"] = person_text or model_text
    if person_text and kind != ASK:
        answer["systemMessage"] = person_text
    if kind == TELL and not model_text:
        del answer["hookSpecificOutput"]
    return jsonio.dumps(answer)


def sync(book, call):
    """Bring the book up to date with the session's files; False when there is no transcript."""
    main = call.transcript_path
    if not main or not call.session_id:
        return False
    entry = _read(book, call, main, call.agent)
    ended = call.tool_input if call.event == MODEL else None  # after a subagent: its id
    if isinstance(ended, str):
        deadline = time.monotonic() + SUBAGENT_END_WAIT_S
        while not text_loops.answered(book.state, ended) and time.monotonic() < deadline:
            time.sleep(0.01)
            _read(book, call, main, ended)
        text_loops.note(book.state, ended, None)  # its run of answers ended with it
    if call.prompt_id and entry.get("prompt") != call.prompt_id:
        # The person's new prompt (a Stop hook's continuation keeps the id): the answers read
        # up to here were given before it, and a run of the same answer starts again. (A
        # session's first call: only its prompt tells that what was read came before.)
        if "prompt" in entry or call.event == PROMPT:
            text_loops.reset(book.state)
        entry["prompt"] = call.prompt_id
    return True


def _read(book, call, main, agent):
    """Read what the session's files gained (agent's file looked at whatever its age); the main
    file's entry."""
    files = book.state["files"]
    folder = fs.dirname(main)
    subagents = fs.join(folder, call.session_id, "subagents")
    for path, found in _subagent_files(book.state.setdefault("folders", {}), subagents):
        follow(book, path, {"agent": found})
    if _old_layout(files.get(main)):
        for path, found in _sibling_files(folder, call.session_id, book):
            follow(book, path, {"agent": found})
    entry = main_entry(book, main)
    read_all(book, main, lambda entry: _Reader(book, entry), agent_file, agent)
    return entry


def _subagent_files(seen, folder, depth=0):
    """(path, agent id) of the agent files under folder, three folders deep at most.

    A folder whose modification time is the one seen when it was last listed, and at least a
    second old (a file made within the same clock tick would not change it), is not listed
    again: its files are followed already; its subfolders are still looked into.
    """
    try:
        stamp = fs.stat(folder).st_mtime_ns
    except OSError:
        seen.pop(folder, None)
        return []
    known = seen.get(folder)
    found = []
    if isinstance(known, list) and len(known) == 2 and known[0] == stamp:
        subfolders = known[1]
    else:
        try:
            entries = list(fs.scandir(folder))
        except OSError:
            return []
        subfolders = []
        for item in entries:
            name = item.name
            if name.startswith("agent-") and name.endswith(".jsonl"):
                found.append((item.path, name[6:-6]))
            elif depth < 3 and item.is_dir(follow_symlinks=False):
                subfolders.append(item.path)
        if time.time_ns() - stamp > 10**9:
            seen[folder] = [stamp, subfolders]
        else:
            seen.pop(folder, None)
    for subfolder in subfolders if isinstance(subfolders, list) else ():
        if isinstance(subfolder, str):
            found.extend(_subagent_files(seen, subfolder, depth + 1))
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


def _sibling_files(folder, session_id, book):
    """(path, agent id) of the agent files beside the transcript that are this session's, looked
    for when the folder changed (2.0.28 to 2.1.1 wrote them there, for every session)."""
    found = []
    for name in listed(book, folder) or ():
        if not (name.startswith("agent-") and name.endswith(".jsonl")):
            continue
        path = fs.join(folder, name)
        if not followed(book, path) and _first_session_id(path) != session_id:
            follow(book, path, {"foreign": True})
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
    if text.startswith(REFUSAL_PREFIX):
        return True
    head = text[:300]
    return head.startswith("PreToolUse:") and f"hook error: {REFUSAL_PREFIX}" in head


def _result_text(content):
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and isinstance(block.get("text"), str):
                return block["text"]
    return ""


def _parent_end(raw):
    """Where the value of a record's leading parentUuid ends, or -1 (a string with an escape)."""
    if raw.startswith(b'{"parentUuid":"'):
        end = raw.find(b'"', 15)
        return end + 1 if end > 0 and raw[end - 1] != 0x5C else -1
    return 18 if raw.startswith(b'{"parentUuid":null') else -1


def _row_shape(raw, record, message, file_agent):
    """(head, usage, requestedModel member) of a response's row as bytes, which its other rows
    repeat (see _Reader._repeats); None when the row is not laid out as Claude Code writes one.

    The head runs from after parentUuid's value to the content array's `[`: the record's members
    before the message, then the message's, its id first and its model among them, with no
    object among them (in the main file, isSidechain false first). The usage runs from the last
    `"usage"` key, with no other after the head, to the `}` before the record's last: when the
    message's usage is not in the head, it is that key, and the bytes hold its value and the
    end of the message."""
    begin = _parent_end(raw)
    end = raw.find(b',"content":[', begin) + 12
    usage_at = raw.rfind(b'"usage":')
    close = raw.rfind(b"}", 0, raw.rfind(b"}")) + 1
    if begin < 0 or not 12 <= end <= usage_at < close:
        return None
    head = raw[begin:end]
    inner = head.find(b',"message":{"id":"')
    if (
        inner < 0
        or head.count(b"{") != 1
        or head.find(b',"model":"', inner) < 0
        or (file_agent == "main" and not head.startswith(b',"isSidechain":false,'))
        or raw.find(b'"usage"', end, usage_at) >= 0
        or message.get("pausedResponses") is not None
    ):
        return None
    requested = record.get("requestedModel")
    if isinstance(requested, str):
        requested = b',"requestedModel":' + jsonio.dumps(requested).encode()
    elif requested is not None:
        return None
    return head, raw[usage_at:close], requested


# Only these records change the ledger; any other type is passed over unread (a long line is
# judged by the type its head names: see lines()).
_COUNTED = frozenset({"assistant", "user", "system", "cost-state"})


class _Reader:
    """Turns one file's new lines into ledger entries."""

    def __init__(self, book, entry):
        self.ledger = book
        self.entry = entry
        self.agent = entry["agent"]
        # The row of the response being read that has the most output so far: a response's
        # rows come one after another, so it is priced once, when the next response (or
        # anything that needs the total) comes, or when the read ends.
        self.held = None
        # The bytes a repeated row of the held response matches (see _repeats), or None.
        self.shape = None
        # The text blocks of the held response's rows (text_loops: an answer without tools).
        self.said = []
        # agent -> estimate.note's arguments for its last response counted in this read: only
        # its estimate of the next request is kept, so the others are noted without one (see
        # _book) and it is noted again, whole, when the read ends (flush).
        self.estimates = {}

    def __call__(self, raw):
        self.line(raw)

    def flush(self):
        """Count the response held back, and estimate each agent's next request."""
        self._book()
        for agent, (key, pusd, out, model, context, cached) in self.estimates.items():
            # Noting the same response again changes nothing but the estimate it now makes.
            ahead = (context, cached, claude_prices.token_pricer(model, True))
            estimate.note(self.ledger.state, agent, key, pusd, out, ahead)
        self.estimates.clear()

    def _book(self):
        """Price and count the response held back, if any. Its next request is estimated
        without a price (estimate.note keeps the history all the same): a cold read counts
        thousands of responses, and only the last of each agent's estimate is kept."""
        held = self.held
        if held is None:
            return
        self.held = self.shape = None
        key, out, agent, model, record, message = held
        price = claude_prices.claude_pricer(model)
        pusd, known = price(message["usage"])
        paused = message.get("pausedResponses")
        if isinstance(paused, list):
            # Segments before a pause limit are billed on their own; the row's usage is the rest.
            for segment in paused:
                if isinstance(segment, dict) and isinstance(segment.get("usage"), dict):
                    pusd += price(segment["usage"])[0]
        usage = message["usage"]
        cached = count(usage.get("cache_read_input_tokens")) + count(
            usage.get("cache_creation_input_tokens")
        )
        context = count(usage.get("input_tokens")) + cached
        day = local_day(record.get("timestamp"))
        # a file read again from its start (rewritten) brings answers text_loops has counted
        counted = self.ledger.known is not None and key in self.ledger.known
        if self.ledger.usage(key, agent, model, pusd, known, out, day, (context, cached, None)):
            self.estimates[agent] = (key, pusd, out, model, context, cached)
        if agent == "main":
            self.entry["model"] = model
        # Every row carries the response's stop reason (2.1.328 and later; a row written before
        # the response ended has none): `tool_use` when it called a tool, else its text is an
        # answer without tools, counted by text_loops.
        reason = message.get("stop_reason")
        if isinstance(reason, str) and not counted:
            said = None if reason == "tool_use" else "\n".join(self.said)
            text_loops.note(self.ledger.state, agent, said, key)

    def lines(self, data, start, stop):
        """Each whole line of data[start:stop], as line() would take it, but a long line
        (tool results, mostly: most of a session's bytes) whose head names a type that cannot
        change the ledger is passed over without copying or scanning the rest of it."""
        each_line(data, start, stop, self.line, self._passed_over)

    def _passed_over(self, data, start, end):
        if end - start <= LONG or "ver" not in self.entry:
            return False
        key = type_at(data, start, end)
        if key < 0:
            return False  # no type in the head (a response's row, an attachment)
        if data.startswith(b'"type":"user"', key, min(end, start + HEAD)):
            return not self.ledger.expecting()  # a tool result, most of a session's bytes
        kind = head_types(data, start, end)[0]
        return kind is not None and (
            kind not in _COUNTED
            or (kind == "user" and not self.ledger.expecting())
            or (kind == "system" and data.find(b'"compact_boundary"', start, end) < 0)
        )

    def line(self, raw):
        # Most lines are tool results nobody waits for, progress, attachments, snapshots, and
        # each byte test scans the whole line: the tests that need no scan come first. A
        # response's usage ends its row: looked for from the end.
        usage_at = raw.rfind(b'"usage"')
        if usage_at >= 0 and self.shape is not None and self._repeats(raw, usage_at):
            return
        wanted = (
            usage_at >= 0
            or (
                self.ledger.expecting()
                and raw.find(b'"tool_result"') >= 0
                and self.ledger.waiting_for(raw)
            )
            or raw.find(b'"compact_boundary"') >= 0
            or raw.find(b'"cost-state"') >= 0
            or ("ver" not in self.entry and raw.find(b'"version"') >= 0)
        )
        if not wanted:
            return
        try:
            record = jsonio.loads(raw)
        except ValueError:
            ignore(NOT_JSON)
            return
        if not isinstance(record, dict):
            return
        if "ver" not in self.entry and isinstance(record.get("version"), str):
            self.entry["ver"] = record["version"]
        kind = record.get("type")
        if kind == "cost-state":
            self._book()
            self._cost_state(record)
            return
        if kind == "system" and record.get("subtype") == "compact_boundary":
            self._book()
            self._compaction(record)
            return
        message = record.get("message")
        if not isinstance(message, dict):
            return
        if kind == "assistant":
            self._response(record, message, raw)
        elif kind == "user":
            self._results(message.get("content"))

    def _response(self, record, message, raw):
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
        out = count(usage.get("output_tokens"))
        held = self.held
        if held is None or held[0] != key:
            self._book()
            self.said = []
        content = message.get("content")
        for block in content if isinstance(content, list) else ():
            if isinstance(block, dict) and block.get("type") == "text":
                said = block.get("text")
                self.said.append(said if isinstance(said, str) else "")
        if held is not None and held[0] == key:
            if out < held[1]:
                return  # an earlier row of this response: a placeholder output count
            if out == held[1]:
                same = held[2] == agent and held[3] == model and held[5]["usage"] == usage
                if same and held[5].get("pausedResponses") == message.get("pausedResponses"):
                    return  # another row of the response with the same usage (2.1.x)
                self._book()  # a tie: each is priced, the ledger keeps the dearer
        self.held = (key, out, agent, model, record, message)
        # The rows of an answer without tools are read whole: their text counts (text_loops).
        reason = message.get("stop_reason")
        quiet = isinstance(reason, str) and reason != "tool_use"
        if "ver" in self.entry and key == message.get("id") and not quiet:
            self.shape = _row_shape(raw, record, message, self.agent)

    def _repeats(self, raw, usage_at):
        """Whether raw is another row of the held response that _response would pass over, told
        from its bytes alone: the held row's head and usage (see _row_shape), and after them
        the record's own members, of an assistant, with the model requested.

        Rows are taken as JSON.stringify writes them: each key once, spelled without escapes.
        A row that is not JSON is passed over either way. In one that is, the message opens in
        the head; its usage, if it has one, is in the head, the held row's, or else, with no
        other `"usage"` after the head, the one at usage_at (the last): the bytes from there are
        the held row's, from its message's usage key to past the message's end, so they mean
        the same. After them, one `}`: no object opens there, nor is one open but the record,
        and an array holds no keys, so the keys found there are the record's.
        """
        head, usage, requested = self.shape
        begin = _parent_end(raw)
        start = begin + len(head)
        close = usage_at + len(usage)
        if (
            begin < 0
            or not raw.startswith(head, begin)
            or not raw.startswith(usage, usage_at)
            or raw.count(b"}", close) != 1
            or raw.find(b',"type":"assistant"', close) < 0
            or raw.find(b'"usage"', start, usage_at) >= 0
            or raw.find(b'"pausedResponses"', start, usage_at) >= 0
        ):
            return False
        if requested is None:
            return raw.find(b'"requestedModel"', close) < 0
        return raw.find(requested, close) >= 0

    def _compaction(self, record):
        """Compaction is billed but not written as a response: estimate it from its size until a
        cost-state record brings Claude Code's own figure. The summary request is the thread's
        own (same system, tools and messages, with their cache_control; the instruction added
        to the last message: seen on 2.1.332), so its prompt (preTokens) is read from the cache
        the previous request wrote; its summary is output, about the context it leaves
        (postTokens). how-it-decides.md says how far this can be off."""
        meta = record.get("compactMetadata")
        key = record.get("uuid")
        if not isinstance(meta, dict) or not isinstance(key, str) or self.agent != "main":
            return
        model = self.entry.get("model") or "claude-opus"
        usage = {
            "cache_read_input_tokens": count(meta.get("preTokens")),
            "output_tokens": count(meta.get("postTokens")),
        }
        pusd = claude_prices.claude_cost(model, usage)[0]
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
