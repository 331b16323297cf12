"""Reading Codex's rollouts: finding a session's files (the day folders, the subagents' files
naming the root), and the reader of their lines: each response's usage and model, and each
tool call's outcome."""

import time

from ... import fs, jsonio, openai_prices
from ...calls import NOT_JSON, canonical, count, fingerprint, ignore
from ...decisions import REFUSAL_PREFIX
from ...jsonio import HEAD, head_types, type_at
from .._files import (
    LONG,
    each_line,
    first_line,
    follow,
    followed,
    list_again,
    listed,
    local_day,
)

_USAGE_FIELDS = (
    "input_tokens",
    "cached_input_tokens",
    "cache_write_input_tokens",
    "output_tokens",
    "reasoning_output_tokens",
    "total_tokens",
)
_VOLATILE = ("Chunk ID:", "Wall time:", "Original token count:")
_BLOCKED = ("Command blocked by PreToolUse hook:", "Tool call blocked by PreToolUse hook:")
_TOOL_ERRORS = ("unsupported call:", "write_stdin failed:", "unable to locate")


def _day_folders(folder):
    """The main rollout's day folder, and today's (a subagent spawned after midnight writes its
    rollout into the new day's folder; local and UTC days both, as either may name it)."""
    folders = [folder]
    day = folder.replace(fs.sep, "/").split("/")[-3:]
    if len(day) == 3 and all(part.isdigit() for part in day):
        sessions = fs.dirname(fs.dirname(fs.dirname(folder)))
        for today in {time.strftime("%Y/%m/%d"), time.strftime("%Y/%m/%d", time.gmtime())}:
            candidate = fs.join(sessions, *today.split("/"))
            if candidate != folder and fs.isdir(candidate):
                folders.append(candidate)
    return folders


def _discover(book, folder, since, root_id):
    """Register the folder's rollouts of this session, looked for when the folder changed."""
    for name in listed(book, folder) or ():
        item_path = fs.join(folder, name)
        if not name.startswith("rollout-") or name < since or followed(book, item_path):
            continue
        meta = _session_meta(item_path)
        if meta is None:
            list_again(book, folder)  # its first line is not written yet: look again next call
        elif meta.get("session_id") == root_id:
            agent = "main" if meta.get("id") == root_id else str(meta.get("id"))
            follow(book, item_path, {"agent": agent})
        else:
            follow(book, item_path, {"foreign": True})


def _session_meta(path):
    """The first line's session_meta payload; None while that line is incomplete."""
    try:
        first = first_line(path)
    except OSError:
        return {}
    if not first.endswith(b"\n"):
        return None
    try:
        record = jsonio.loads(first)
    except ValueError:
        return {}
    if isinstance(record, dict) and record.get("type") == "session_meta":
        payload = record.get("payload")
        return payload if isinstance(payload, dict) else {}
    return {}


def _usage(raw):
    raw = raw if isinstance(raw, dict) else {}
    return {field: count(raw.get(field)) for field in _USAGE_FIELDS}


def _output_text(output):
    if isinstance(output, str):
        return output
    return canonical(output)


def outcome(text):
    """('ok' | 'fail', fingerprint) of a tool output, ignoring its per-run header lines."""
    if text.startswith('{"output":'):
        structured = _structured_outcome(text)
        if structured:
            return structured
    lines = [line for line in text.split("\n") if not line.startswith(_VOLATILE)]
    status = "ok"
    for line in lines[:8]:
        for marker in ("Process exited with code ", "Exit code: ", "Exit code "):
            if line.startswith(marker):
                code = line[len(marker) :].strip()
                status = "ok" if code == "0" else "fail"
    if text.startswith(_BLOCKED):
        own = any(text.startswith(f"{blocked} {REFUSAL_PREFIX}") for blocked in _BLOCKED)
        status = "guard" if own else "fail"
    elif text.startswith(_TOOL_ERRORS):
        status = "fail"
    return status, fingerprint("\n".join(lines))


def _structured_outcome(text):
    """Older Codex builds wrote a shell call's output as JSON with its exit code in metadata."""
    try:
        value = jsonio.loads(text)
    except ValueError:
        value = None
    metadata = value.get("metadata") if isinstance(value, dict) else None
    if not isinstance(metadata, dict) or "exit_code" not in metadata:
        return None  # not that shape after all: judged as plain text
    code = metadata["exit_code"]
    return ("ok" if code == 0 else "fail"), fingerprint(value.get("output"))


_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})
_EVENTS = frozenset({"token_count", "thread_settings_applied"})  # the events read
# (tuples: a slice of the read buffer is a bytearray, which no set can hold)
_EVENT_NAMES = tuple(name.encode() for name in _EVENTS)
_OUTPUT_NAMES = tuple(name.encode() for name in _OUTPUTS)
# A record's type and its payload's as Codex writes them, one right after the other.
_ITEM = b'"type":"response_item","payload":{"type":"'
_EVENT = b'"type":"event_msg","payload":{"type":"'


def _passed_by_shape(data, start, end, expecting):
    """Whether a line is passed over, read from a head shaped as Codex writes it (the payload's
    type right after the record's); None for any other head, which head_types reads. Decides as
    head_types(data, start, end, "payload") would lead to, in fewer steps."""
    key = type_at(data, start, end)
    if key < 0:
        return False  # head_types reads no type either
    stop = start + HEAD if end - start > HEAD else end
    if data.startswith(_ITEM, key, stop):
        if not expecting:
            return True
        begin, names = key + len(_ITEM), _OUTPUT_NAMES
    elif data.startswith(_EVENT, key, stop):
        begin, names = key + len(_EVENT), _EVENT_NAMES
    else:
        return None
    close = data.find(b'"', begin, stop)
    if close < 0:
        return None
    inner = data[begin:close]
    return None if 0x5C in inner else inner not in names


class _Reader:
    def __init__(self, book, entry, root_id, windows=None):
        self.book = book
        self.entry = entry
        self.root_id = root_id
        self.windows = windows if windows is not None else [None]
        # (model, tier), its openai_usage_pricer and openai_pricer (the next request's)
        self.priced_as = self.pricer = self.tokens_pricer = None

    def __call__(self, raw):
        self.line(raw)

    def lines(self, data, start, stop):
        """Each whole line of data[start:stop], as line() would take it, but a long line whose
        head names a record that cannot matter (a response item while no call waits for its
        output, an event other than those read) is passed over unread."""
        each_line(data, start, stop, self.line, self._passed_over)

    def _passed_over(self, data, start, end):
        if end - start <= LONG:
            return False
        passed = _passed_by_shape(data, start, end, self.book.expecting())
        if passed is not None:
            return passed
        kind, inner = head_types(data, start, end, "payload")
        if kind == "response_item":
            return not self.book.expecting() or (inner is not None and inner not in _OUTPUTS)
        return kind == "event_msg" and inner is not None and inner not in _EVENTS

    def line(self, raw):
        # find, not `in`: a bytes operand of `in` is tried as an int first, an exception a test
        find = raw.find
        if find(b'"token_usage_record"') >= 0:
            handler = self._usage_record
        elif find(b'"token_count"') >= 0:
            if find(b'"used_percent"') >= 0 or find(b'"plan_type":"') >= 0:
                self.windows[0] = raw  # read once the files are (plans.record_codex)
            if self.entry.get("records"):
                return
            handler = self._token_count
        elif find(b'"turn_context"') >= 0 or find(b'"thread_settings_applied"') >= 0:
            handler = self._settings
        elif find(b'"session_meta"') >= 0:
            if "thread" in self.entry:
                return  # a fork's copy of its parent's meta
            handler = self._meta
        elif self.book.expecting() and find(b"_output") >= 0 and self.book.waiting_for(raw):
            handler = self._output
        else:
            return
        try:
            record = jsonio.loads(raw)
        except ValueError:
            ignore(NOT_JSON)
            return
        if isinstance(record, dict) and isinstance(record.get("payload"), dict):
            handler(record, record["payload"])

    def _meta(self, record, payload):
        if record.get("type") == "session_meta" and isinstance(payload.get("id"), str):
            self.entry["thread"] = payload["id"]

    def _settings(self, record, payload):
        if (
            record.get("type") != "turn_context"
            and payload.get("type") != "thread_settings_applied"
        ):
            return
        settings = payload.get("thread_settings")
        source = settings if isinstance(settings, dict) else payload
        if isinstance(source.get("model"), str):
            self.entry["model"] = source["model"]
        if isinstance(source.get("service_tier"), str):
            self.entry["tier"] = source["service_tier"]

    def _price(self, key, usage, timestamp):
        """Book one response; usage as Codex writes it (the pricer reads its counts as _usage
        does: a first read prices thousands of records, each read once)."""
        usage = usage if isinstance(usage, dict) else {}
        model = self.entry.get("model") or "gpt-unknown"
        tier = self.entry.get("tier")
        if self.priced_as != (model, tier):
            self.priced_as = (model, tier)
            self.pricer = openai_prices.openai_usage_pricer(model, tier)
            self.tokens_pricer = openai_prices.openai_pricer(model, tier)
        picodollars, known = self.pricer(usage)
        self.book.usage(
            key,
            self.entry["agent"],
            model,
            picodollars=picodollars,
            known_model=known,
            output=count(usage.get("output_tokens")),
            day=local_day(timestamp),
            ahead=(
                count(usage.get("input_tokens")),
                count(usage.get("cached_input_tokens"))
                + count(usage.get("cache_write_input_tokens")),
                self.tokens_pricer,
            ),
        )

    def _usage_record(self, record, payload):
        if record.get("type") != "token_usage_record":
            return
        thread = payload.get("thread_id")
        own = self.entry.get("thread")
        if not isinstance(thread, str) or (own and thread != own):
            return  # a copy of another thread's record
        response = payload.get("response_id")
        if not isinstance(response, str):
            return
        self.entry["records"] = True
        self._price(f"{thread}:{response}", payload.get("usage"), record.get("timestamp"))

    def _token_count(self, record, payload):
        if payload.get("type") != "token_count" or not isinstance(payload.get("info"), dict):
            return
        info = payload["info"]
        total = _usage(info.get("total_token_usage"))
        last = self.entry.get("total")
        if last and total["total_tokens"] == last["total_tokens"] and total == last:
            return  # a re-emit with unchanged totals
        if last and all(total[f] >= last[f] for f in _USAGE_FIELDS):
            usage = {f: total[f] - last[f] for f in _USAGE_FIELDS}
        else:
            usage = _usage(info.get("last_token_usage")) if last else total
        self.entry["total"] = total
        thread = self.entry.get("thread") or "?"
        self._price(
            f"{thread}:t{total['total_tokens']}:{total['output_tokens']}",
            usage,
            record.get("timestamp"),
        )

    def _output(self, record, payload):
        if payload.get("type") not in ("function_call_output", "custom_tool_call_output"):
            return
        call_id = payload.get("call_id")
        if not isinstance(call_id, str):
            return
        status, digest = outcome(_output_text(payload.get("output")))
        self.book.result(call_id, status, digest)
