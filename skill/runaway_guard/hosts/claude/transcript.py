"""Reading Claude Code's transcripts: the reader of their lines, each response's usage and
model, each tool call's outcome, compaction and Claude Code's own running total.

One API response is written as one record per content block, each repeating the response's
usage, the early ones with a placeholder output count: it is priced once, by message id, at the
largest output count seen.
"""

from ... import claude_prices, estimate, jsonio, text_loops
from ...calls import NOT_JSON, count, fingerprint, ignore
from ...decisions import REFUSAL_PREFIX
from ...jsonio import HEAD, head_types, type_at
from .._files import LONG, each_line, local_day

_REJECTED = (
    "The user doesn't want to proceed",
    "The user doesn't want to take this action",
    "[Request interrupted by user",
)


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
        self.book = book
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
        for agent, (key, picodollars, out, model, context, cached) in self.estimates.items():
            # Noting the same response again changes nothing but the estimate it now makes.
            ahead = (context, cached, claude_prices.token_pricer(model, True))
            estimate.note(self.book.state, agent, key, picodollars, out, ahead)
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
        picodollars, known = price(message["usage"])
        paused = message.get("pausedResponses")
        if isinstance(paused, list):
            # Segments before a pause limit are billed on their own; the row's usage is the rest.
            for segment in paused:
                if isinstance(segment, dict) and isinstance(segment.get("usage"), dict):
                    picodollars += price(segment["usage"])[0]
        usage = message["usage"]
        cached = count(usage.get("cache_read_input_tokens")) + count(
            usage.get("cache_creation_input_tokens")
        )
        context = count(usage.get("input_tokens")) + cached
        day = local_day(record.get("timestamp"))
        # a file read again from its start (rewritten) brings answers text_loops has counted
        counted = self.book.known is not None and key in self.book.known
        if self.book.usage(
            key,
            agent,
            model,
            picodollars=picodollars,
            known_model=known,
            output=out,
            day=day,
            ahead=(context, cached, None),
        ):
            self.estimates[agent] = (key, picodollars, out, model, context, cached)
        if agent == "main":
            self.entry["model"] = model
        # Every row carries the response's stop reason (2.1.328 and later; a row written before
        # the response ended has none): `tool_use` when it called a tool, else its text is an
        # answer without tools, counted by text_loops.
        reason = message.get("stop_reason")
        if isinstance(reason, str) and not counted:
            said = None if reason == "tool_use" else "\n".join(self.said)
            text_loops.note(self.book.state, agent, said, key)

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
            return not self.book.expecting()  # a tool result, most of a session's bytes
        kind = head_types(data, start, end)[0]
        return kind is not None and (
            kind not in _COUNTED
            or (kind == "user" and not self.book.expecting())
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
                self.book.expecting()
                and raw.find(b'"tool_result"') >= 0
                and self.book.waiting_for(raw)
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
        picodollars = claude_prices.claude_cost(model, usage)[0]
        self.book.estimate_unwritten(key, model, picodollars, local_day(record.get("timestamp")))

    def _cost_state(self, record):
        """Claude Code's own running total: written when it saves its cost ledger (each run's end,
        /clear), it includes the requests no transcript shows."""
        total = record.get("totalCostUSD")
        if self.agent != "main" or isinstance(total, bool) or not isinstance(total, (int, float)):
            return
        if 0 <= total < 1e9:
            model = self.entry.get("model") or "claude-opus"
            self.book.reconcile(round(total * 10**12), model, local_day(record.get("timestamp")))

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
            self.book.result(tool_use_id, status, fingerprint(body))
