"""Reading Copilot CLI's events.jsonl: each response's usage and price, the calls each
preToolUse's hook.start lists (pending until a hook claims one), each call's outcome, and the
person's prompts and the answers without tool calls."""

from ... import claude_prices, jsonio, text_loops
from ...calls import NOT_JSON, count, fingerprint, ignore
from ...estimate import LAST_COST
from .._files import local_day

PENDING_KEEP = 128
_CREDIT_PICO = 10  # 1 AI credit = $0.01 = 10**10 picodollars = 10**9 nano-AI units

_REFUSED = ("denied",)  # refused before it ran: by a hook (the guard's) or with nobody to approve
_STOPPED = ("rejected", "aborted", "cancelled", "interrupted")  # a person said no or stopped it


def shell_outcome(text):
    """A fingerprint of a tool result without Copilot's `<shellId: N …>` line (N grows every
    call, so two identical results would never look alike)."""
    if not isinstance(text, str):
        return fingerprint(text)
    lines = [line for line in text.split("\n") if not line.startswith("<shellId: ")]
    return fingerprint("\n".join(lines))


def _price(usage):
    """(model, picodollars, known) of one usage record.

    Billed by GitHub, the record's `copilotUsage.totalNanoAiu` is what Copilot charged (1 AI
    credit = $0.01, 10**9 nano units; not verified here: it needs a GitHub account). Under the
    person's own key (`isByok`, `cost` 0) the tokens are priced with the table.
    """
    model = usage.get("model")
    if not isinstance(model, str):
        model = "gpt-unknown"
    nano = _charged(usage)
    if nano:
        return model, round(nano * _CREDIT_PICO), True
    inp = count(usage.get("inputTokens"))
    cached = min(count(usage.get("cacheReadTokens")), inp)
    written = min(count(usage.get("cacheWriteTokens")), inp - cached)
    out = count(usage.get("outputTokens"))
    return (model, *claude_prices.token_pricer(model)(inp, cached, written, out))


def _charged(usage):
    """The nano AI units GitHub charged for a response (0 under the person's own key)."""
    if usage.get("isByok") is True:
        return 0
    charged = usage.get("copilotUsage")
    return count(charged.get("totalNanoAiu") if isinstance(charged, dict) else None)


def _ahead(usage, model):
    """What estimate.note needs of a response: its tokens and the table's pricer where the
    tokens are priced (the person's own key), else GitHub's charge again (LAST_COST)."""
    if _charged(usage):
        return LAST_COST
    inp = count(usage.get("inputTokens"))
    cached = count(usage.get("cacheReadTokens")) + count(usage.get("cacheWriteTokens"))
    return inp, min(cached, inp), claude_prices.token_pricer(model)


# Copilot writes each event's type first ({"type":"…","data":{…}…}): a line is judged by its
# head, and only the events below are decoded. A type is ASCII, so JSON never escapes it.
_TYPE_FIRST = b'{"type":"'
_USAGE = b'{"type":"session.usage_record"'
_HOOK_START = b'{"type":"hook.start"'
_COMPLETE = b'{"type":"tool.execution_complete"'
_PROMPT = b'{"type":"user.message"'
_ANSWER = b'{"type":"assistant.message"'
_READ = (_USAGE, _HOOK_START, _COMPLETE, _PROMPT, _ANSWER)  # their types' first letters differ
_NO_TOOLS = b'"toolRequests":[]'  # an answer without tool calls (decoded for its text)
_COMPLETE_ID = _COMPLETE + b',"data":{"toolCallId":"'


def _lists_only(hook_start, call_id):
    """Whether call_id (bytes) is the only call a hook.start line could list.

    In a line without escapes every `"` starts or ends a string, so each "id" key shows as
    `"id"`: there must be one with call_id's value and at most one more, the event's own id,
    which is a member of the outermost object when the first `}` after it ends the line. (A
    line that is not valid JSON lists no call at all.)"""
    if 0x5C in hook_start:  # a backslash (its number: a bytes operand is tried as one first)
        return False
    listed = hook_start.find(b'"id":"' + call_id + b'"')
    ids = hook_start.count(b'"id"')
    if listed < 0 or ids > 2:
        return False
    own = hook_start.rfind(b'"id"')
    return ids == 1 or (own != listed and hook_start.find(b"}", own) == len(hook_start) - 1)


class _Unhashed:
    """A pending call's arguments until the read ends: on a long read most calls are done or
    pushed out of the pending calls before then, and their fingerprints are never needed."""

    __slots__ = ("args",)

    def __init__(self, args):
        self.args = args


class _Reader:
    """Turns events.jsonl lines into ledger entries, pending calls and the person's prompts.

    A preToolUse's hook.start is held undecoded until the next event that touches the pending
    calls: when that is the completion of the one call it can list, it is dropped (the call
    would be added and ended at once); otherwise it is read first. On a long read that spares
    decoding almost every hook.start."""

    def __init__(self, book, entry, mine):
        self.book = book
        self.entry = entry
        self.pending = mine["pending"]
        self.held = None  # a hook.start line (a copy) not read yet
        self.answers = 0  # the responses this read found

    def __call__(self, raw):
        self.line(raw)

    def lines(self, data, start, stop):
        """Each whole line of data[start:stop], as line() would take it, but judged by its head
        first: an event that is not read is passed over, one that is goes to its handler without
        the byte tests, and a call's completion while no call waits for its outcome is read from
        its head alone (it only ends the call). A line whose type does not come first is read
        whole (line())."""
        find = data.find
        starts = data.startswith
        expecting = self.book.expecting
        while start < stop:
            end = find(b"\n", start, stop)
            if end < 0:
                end = stop
            if starts(_READ, start):
                first = data[start + 9]  # the type's first letter tells the four apart
                if first == _USAGE[9]:
                    self._decoded(data[start:end], self._usage)
                elif first == _COMPLETE[9]:
                    if expecting() or not self._ended(data, start, end):
                        self._release()
                        self._decoded(data[start:end], self._complete)
                elif first == _HOOK_START[9]:
                    if find(b'"preToolUse"', start, end) >= 0:
                        self._release()
                        self._hold(data[start:end])
                elif first == _ANSWER[9]:
                    self._answer(data[start:end])
                else:
                    self._decoded(data[start:end], self._prompt)
            elif end > start and not starts(_TYPE_FIRST, start):
                self.line(data[start:end])
            start = end + 1

    def _ended(self, data, start, end):
        """Ends the call whose completion data[start:end] is, from the id its head names (the
        hook.start held back is dropped when that was its one call, read first otherwise);
        False when the head does not name it plainly (the line is then decoded)."""
        if not data.startswith(_COMPLETE_ID, start):
            return False
        begin = start + len(_COMPLETE_ID)
        close = data.find(b'"', begin, end)
        if close < 0:
            return False
        call_id = data[begin:close]
        if not call_id.isascii() or 0x5C in call_id:
            return False
        held = self.held
        if held is not None:
            self.held = None
            if not _lists_only(held, call_id):
                self._decoded(held, self._hook_start)
        self.pending.pop(call_id.decode("ascii"), None)
        return True

    def _hold(self, raw):
        """Hold a hook.start while a call it adds could push none out of the pending calls."""
        if len(self.pending) < PENDING_KEEP:
            self.held = raw
        else:
            self._decoded(raw, self._hook_start)

    def _release(self):
        """Read the hook.start held back, before anything else touches the pending calls."""
        held = self.held
        if held is not None:
            self.held = None
            self._decoded(held, self._hook_start)

    def line(self, raw):
        self._release()
        if b'"session.usage_record"' in raw:
            handler = self._usage
        elif b'"hook.start"' in raw and b'"preToolUse"' in raw:
            handler = self._hook_start
        elif b'"tool.execution_complete"' in raw:
            handler = self._complete
        elif b'"user.message"' in raw:
            handler = self._prompt
        elif b'"assistant.message"' in raw:
            self._answer(raw)
            return
        else:
            return
        self._decoded(raw, handler)

    @staticmethod
    def _decoded(raw, handler):
        try:
            record = jsonio.loads(raw)
        except ValueError:
            ignore(NOT_JSON)
            return
        if isinstance(record, dict) and isinstance(record.get("data"), dict):
            handler(record, record["data"])

    def flush(self):
        """Once the read ended: the hook.start held back read, and the arguments of the calls
        still pending fingerprinted."""
        self._release()
        for item in self.pending.values():
            if isinstance(item[1], _Unhashed):
                item[1] = fingerprint(item[1].args)

    def _usage(self, record, data):
        usage = data.get("usage")
        if record.get("type") != "session.usage_record" or not isinstance(usage, dict):
            return
        key = usage.get("apiCallId")
        if not key:
            accounting = usage.get("accounting")
            key = accounting.get("usageId") if isinstance(accounting, dict) else None
            key = key or record.get("id")
        if not isinstance(key, str) or not key:
            return
        parent = usage.get("parentToolCallId")
        agent = parent if isinstance(parent, str) and parent else "main"
        model, picodollars, known = _price(usage)
        out = count(usage.get("outputTokens"))
        day = local_day(record.get("timestamp"))
        self.book.usage(
            key,
            agent,
            model,
            picodollars=picodollars,
            known_model=known,
            output=out,
            day=day,
            ahead=_ahead(usage, model),
        )

    def _hook_start(self, record, data):
        hook_input = data.get("input")
        if record.get("type") != "hook.start" or data.get("hookType") != "preToolUse":
            return
        if not isinstance(hook_input, dict):
            return
        parent = data.get("parentToolCallId")
        agent = parent if isinstance(parent, str) and parent else "main"
        pending = self.pending
        made = hook_input.get("toolCalls")
        for item in made if isinstance(made, list) else ():
            if isinstance(item, dict) and isinstance(item.get("id"), str):
                pending.setdefault(item["id"], [agent, _Unhashed(item.get("args")), []])
        while len(pending) > PENDING_KEEP:
            del pending[next(iter(pending))]

    def _complete(self, record, data):
        call_id = data.get("toolCallId")
        if record.get("type") != "tool.execution_complete" or not isinstance(call_id, str):
            return
        self.pending.pop(call_id, None)
        if not self.book.expecting():
            return
        error = data.get("error") if isinstance(data.get("error"), dict) else None
        result = data.get("result") if isinstance(data.get("result"), dict) else {}
        shell = data.get("shellExecution")
        code = shell.get("exitCode") if isinstance(shell, dict) else None
        if error is not None:
            kind = error.get("code")
            status = "guard" if kind in _REFUSED else "reset" if kind in _STOPPED else "fail"
            digest = fingerprint(error.get("message"))
        else:
            failed = data.get("success") is False or (code is not None and code != 0)
            status = "fail" if failed else "ok"
            digest = shell_outcome(result.get("content"))
        self.book.result(call_id, status, digest)

    def _answer(self, raw):
        """A response: its text when it called no tool (text_loops), read only then."""
        self.answers += 1
        if _NO_TOOLS not in raw:
            return text_loops.note(self.book.state, self._agent_of(raw), None)
        self._decoded(raw, self._text_answer)

    @staticmethod
    def _agent_of(raw):
        at = raw.find(b'"parentToolCallId":"')
        return (
            "main" if at < 0 else raw[at + 20 : raw.find(b'"', at + 20)].decode("utf-8", "replace")
        )

    def _text_answer(self, record, data):
        if record.get("type") != "assistant.message":
            return
        parent = data.get("parentToolCallId")
        agent = parent if isinstance(parent, str) and parent else "main"
        content = data.get("content")
        text_loops.note(self.book.state, agent, content if isinstance(content, str) else "")

    def _prompt(self, record, data):
        """The person's prompt (not a subagent's task, not an autopilot continuation)."""
        if record.get("type") != "user.message" or "source" in data or "parentToolCallId" in data:
            return
        if data.get("isAutopilotContinuation"):
            return
        if isinstance(data.get("interactionId"), str):
            self.entry["prompt"] = data["interactionId"]
            text_loops.reset(self.book.state)
