"""Reading Gemini CLI's chat files: each response priced once by its message id, and each
finished tool call's outcome, worked out only for the last calls the wires keep."""

from ... import agent_book, gemini_prices
from ...calls import NOT_JSON, count, fingerprint, ignore, tool_name
from ...jsonio import head_types
from .._files import LONG, each_line, local_day
from .results import (
    TOOLS,
    _call_outcome,
    _cancelled,
    _cut_out,
    _decoded,
    _Long,
    _resolved,
    _result_text,
    _stable,
)

_FINISHED = ("success", "error", "cancelled")
# The calls booked whose outcomes wait for the wires at most (_work_out): the results they hold
# stay in memory until then.
_BATCH = 256
# Lines that change the message list or metadata, never a response or a call's outcome.
_CHANGES = (b'{"$set":', b'{"$rewindTo":')


def _keep(entry):
    """Keep the ids of the calls booked that may still come again, no others, so the state does
    not grow with the session: those of the message being written ("own": the CLI writes only its
    last message again, its calls possibly stamped anew) and those stamped with the last one
    booked ("tied": a file read again whole brings them back with that stamp); a call stamped
    earlier is skipped anyway. Both are the last ids booked (stamps never go back)."""
    booked = entry.get("calls", [])
    keep = min(max(entry.get("own", 0), entry.get("tied", len(booked))), 64)
    if len(booked) > keep:  # copied only when some go
        booked = booked[-keep:] if keep else []
    entry["calls"] = booked


def _settle(book):
    """Work out the hash and outcome of the calls the wires still keep (see _Later)."""
    record = book.state["agents"].get("main")
    for item in record["hist"] if record else ():
        if isinstance(item[0], _Later):
            item[:] = item[0].pair()


class _Later:
    """A finished call as the wires keep it, [call hash, outcome hash], worked out only once the
    read ends and only if it is still among the last calls they keep: a long session's outcomes
    are mostly pushed out by later ones, and hashing each result cost more than reading it."""

    __slots__ = ("args", "name", "text")

    def __init__(self, name, args, text):
        self.name, self.args, self.text = name, args, text

    def pair(self):
        call_hash = fingerprint([tool_name(self.name, TOOLS), self.args])
        text = self.text.whole() if isinstance(self.text, _Long) else self.text
        return [call_hash, fingerprint(_stable(text))]


def _pricers(model):
    """(price, known, next_price): gemini_prices.gemini_pricer's, and the same in OpenAI's shape for
    estimate.note (Gemini bills no cache writes: what is written is plain input)."""
    price, known = gemini_prices.gemini_pricer(model)

    def next_price(inp, cached, written, out):
        return price({"input": inp, "cached": cached, "output": out})[0], known

    return price, known, next_price


class _Reader:
    """Turns one session file's new lines into ledger entries."""

    def __init__(self, book, entry, finished):
        self.book = book
        self.entry = entry
        # (id, model, tokens, timestamp) of the response last priced: a message appended again
        # whole (its tool calls added) is not priced again.
        self.priced = None
        # The line of the message last read, up to where its calls would be added
        # (b'...,"toolCalls":['): a line that starts with it is that message again, with calls.
        self.again = None
        self.finished = finished  # the calls booked whose outcomes the wires have not had
        self.prices = {}  # model: _pricers(model)

    def __call__(self, raw):
        self.line(raw)

    def lines(self, data, start, stop):
        """Each whole line of data[start:stop], as line() would take it, but a line whose head
        shows it cannot count is passed over unread, and a message written again has only its
        calls read, where they are in data. data is read into again next: the outcomes of the
        calls finished are worked out (the texts the wires keep are copied out of it)."""
        each_line(data, start, stop, self.line, self._read_in_place)
        _work_out(self.book, self.finished)

    def _read_in_place(self, data, start, end):
        """Whether the line data[start:end] needs no more: $set and $rewindTo lines, long lines
        of another type than "gemini" (user messages carry every tool result again), once the
        header is read; and the message last read written again with its calls added, whose
        calls are read here."""
        if "start" not in self.entry:
            return False
        again = self.again
        if again is not None and data.startswith(again, start):
            return self._calls_again(data, start + len(again) - 1, end)
        if data.startswith(_CHANGES, start):
            return True
        if end - start <= LONG:
            return False
        kind = head_types(data, start, end)[0]
        return kind is not None and kind != "gemini"

    def _calls_again(self, data, begin, end):
        """The calls of the message last read, written again with them (data[begin] opens their
        array): the same record but for its calls, when the array ends where the line's object
        does (the message is priced already, its model is the same; its head names one type,
        "gemini", as line() reads it). False when not: line() reads it."""
        if data[end - 1] != 0x7D:  # }
            return False
        try:
            cut = _cut_out(data, begin, begin, end - 1)
        except ValueError:
            return False
        if cut is None or not isinstance(cut[0], list):
            return False
        self._calls(*cut)
        return True

    def line(self, raw):
        if raw.find(b'"gemini"') < 0 and not ("start" not in self.entry and b'"startTime"' in raw):
            return  # user messages, $set and $rewindTo lines: nothing to count
        try:
            record = _decoded(raw)
        except ValueError:
            ignore(NOT_JSON)
            return
        if not isinstance(record, dict):
            return
        if "start" not in self.entry and isinstance(record.get("startTime"), str):
            self.entry["start"] = record["startTime"]  # the header: this file's first run
        elif "$set" not in record and "$rewindTo" not in record:
            self.message(record, raw)

    def message(self, record, raw=b""):
        """A record of the message list (raw: its line, when it was read from one)."""
        if record.get("type") != "gemini":
            return
        # its head names one type, "gemini": as this line, the same with calls is read, not
        # passed over (head_types), and line() reads it whether the header is read or not
        again = raw.count(b'"type"') == 1 and raw.find(b'"type":"gemini"') > 0
        again = again and raw.endswith(b"}")
        self.again = raw[:-1] + b',"toolCalls":[' if again else None
        entry = self.entry
        model = record.get("model")
        if isinstance(model, str) and model:
            entry["model"] = model
        tokens = record.get("tokens")
        key = record.get("id")
        if isinstance(tokens, dict) and isinstance(key, str) and key:
            model = entry.get("model") or "gemini"
            stamp = record.get("timestamp")
            priced = (key, model, tokens, stamp)
            if priced != self.priced:
                self.priced = priced
                pricer = self.prices.get(model)
                if pricer is None:
                    pricer = self.prices[model] = _pricers(model)
                picodollars, out = pricer[0](tokens)
                day = local_day(stamp)
                context = count(tokens.get("input")) + count(tokens.get("tool"))
                ahead = (context, count(tokens.get("cached")), pricer[2])
                self.book.usage(
                    key,
                    entry["agent"],
                    model,
                    picodollars=picodollars,
                    known_model=pricer[1],
                    output=out,
                    day=day,
                    ahead=ahead,
                )
        calls = record.get("toolCalls")
        if isinstance(calls, list):
            self._calls(calls)

    def _calls(self, calls, longs=None):
        """A message's calls (a list), each finished one once: its outcome goes to the wires of
        the agent the hooks see (see _work_out). longs: the long strings cut out of them
        (_cut_out), put back only for the calls whose outcomes are worked out (_resolved): a
        placeholder stands where a string was, never as a call's id, stamp or status (their keys'
        strings are not cut out), so which calls are booked is the same either way. Calls
        written before this file's run began (copied from a resumed session), calls stamped
        before the last one booked and calls already booked are skipped. The message is the one
        being written again when it holds a call booked from it, else a new one, which ends the
        last one's ("own": the calls booked from it)."""
        entry = self.entry
        booked = entry.get("calls", [])
        for tool_call in calls:
            if isinstance(tool_call, dict) and tool_call.get("id") in booked:
                break
        else:
            entry["own"] = 0
            _keep(entry)
        for tool_call in calls:
            if not isinstance(tool_call, dict):
                continue
            call_id = tool_call.get("id")
            stamp = tool_call.get("timestamp")
            if not isinstance(call_id, str) or not isinstance(stamp, str):
                continue
            if tool_call.get("status") not in _FINISHED:
                continue  # still running: its outcome comes with a later line
            last = entry.get("last", "")
            if stamp < last or stamp < entry.get("start", ""):
                continue
            booked = entry.setdefault("calls", [])
            if call_id in booked:
                continue
            entry["own"] = entry.get("own", len(booked)) + 1
            entry["tied"] = entry.get("tied", 0) + 1 if stamp == last else 1
            entry["last"] = stamp
            booked.append(call_id)
            _keep(entry)
            finished = self.finished
            finished.append((tool_call, longs))
            if len(finished) >= _BATCH:
                _work_out(self.book, finished)


def _work_out(book, finished):
    """The outcomes of the calls finished (booked by every file read, in order) go to the wires,
    in order, and finished is emptied. The wires keep the last agent_book.HIST outcomes and count
    the failures in a row since the last success, and a cancel resets them: only the last calls
    can still show. Walking back from the last, each outcome is worked out until those are
    known; of the calls before them, only whether one was a cancel, and only when the wires
    count refusals (the outcomes after a cancel replace all it would reset but those)."""
    outcomes, kept, failing = [], 0, True
    first = len(finished)
    while first and (kept < agent_book.HIST or failing):
        first -= 1
        outcome = _call_outcome(_resolved(finished[first]))
        outcomes.append(outcome)
        if outcome == "reset":
            break
        if outcome:
            kept += 1
            failing = failing and outcome == "fail"
    record = book.state["agents"].get("main")
    cancels = first and "reset" not in outcomes[-1:] and record and record.get("ref")
    if cancels and any(map(_cancelled, map(_resolved, finished[:first]))):
        agent_book.reset_agent(record)
    for (tool_call, _), outcome in zip(finished[first:], reversed(outcomes)):
        if outcome == "reset":
            agent_book.reset_agent(book.agent("main"))
        elif outcome:
            text = _result_text(tool_call.get("result"))[0]
            text = text.owned() if isinstance(text, _Long) else text
            later = _Later(tool_call.get("name"), tool_call.get("args"), text)
            book.complete_unseen("main", later)
            book.outcome("main", None, outcome == "fail", later)
    del finished[:]
