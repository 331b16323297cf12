"""OpenCode: the guard's plugin (hosts/opencode_plugin.js), its answers, and OpenCode's database.

OpenCode has no command hooks, only JavaScript plugins: the plugin hands the guard every tool
call (`tool.execute.before`) and every model request (`chat.params`) with
`runaway_guard_plugin: "opencode"`, the root session's id as `session_id` and the calling
session's id as `agent_session_id` (a subagent is a child session). It throws what the guard
refuses: a refused tool does not run and the model gets the reason as its result; a stopped
model request is never sent and the run ends with the reason.

Sessions (1.2.0 and later) live in one SQLite database, `$XDG_DATA_HOME/opencode/opencode.db`
(`OPENCODE_DB` overrides it; the plugin sends the path as `database`), read here read-only: the
`session` rows (`parent_id` makes the tree), one assistant `message` per model step with
OpenCode's own `cost` and `tokens`, and `part` rows, tool calls among them. Each call reads,
through OpenCode's own indexes, only the messages created since the last one (`time_created`,
with a margin for writes that commit late) and the steps still open then (no
`time.completed`, or a tool call the guard waits for still running), by id; of the margin's
rows, it decodes only those it has not read finished before (a model that answers at once
puts dozens of steps in it). The parts it reads are those of the new and the open steps,
where a call's outcome is (a call runs before its step ends), and those of the whole window
when a call waited for is not there. So a call costs what is new, whatever the session's
size. The older JSON-file storage (`storage/message/...`, 1.1.x and earlier, migrated by
OpenCode itself on upgrade) is not read: without a database the guard still judges loops from
the calls it is shown, but sees neither spend nor failures.

Spend is OpenCode's own `cost` per step, summed over the session tree. A step OpenCode could
not price (`cost` 0 with tokens) is priced from its tokens with the guard's table; a model the
table lacks is priced at its family's dearest and listed as unpriced. OpenCode's free models
(provider `opencode`, cost 0) cost nothing. Not stored by OpenCode and so not counted: the
title request of each session, and a step cut short by an abort.

Tool calls are matched to their rows by the model's call id (`callID`); a provider that reused
ids within one session would confuse the two calls.
"""

import sys
import time

from .. import fs, jsonio
from ..calls import MODEL, Call, count, fingerprint, ignore, ignored, text, tool_name
from ..decisions import DENY, REFUSAL_PREFIX, STOP, TELL
from ..estimate import LAST_COST
from ._files import main_entry, say_ignored

NAME = "opencode"
LABEL = "OpenCode"
RUNGS = frozenset({TELL, DENY, STOP})
TOOLS = {
    "bash": "Bash",
    "edit": "Edit",
    "multiedit": "Edit",
    "patch": "Edit",
    "apply_patch": "Edit",
    "write": "Write",
    "read": "Read",
    "task": "Agent",
}

INSTALL = {
    "home": {"variable": "XDG_CONFIG_HOME", "default": ".config", "subfolder": "opencode"},
    "user": {"settings": "plugin/runaway-guard.js", "skills": "skills"},
    "project": {"settings": ".opencode/plugin/runaway-guard.js", "skills": ".opencode/skills"},
    "entry": {"kind": "owned-file", "template_file": "hosts/opencode_plugin.js"},
    "binaries": ("opencode",),
    "after_install": (
        "OpenCode: restart it so it loads the plugin {settings}. `opencode --pure` (or "
        "OPENCODE_PURE=1) runs without plugins, and so without the guard.",
    ),
    "after_uninstall": "Restart OpenCode so it drops the plugin.",
}

PLUGIN = "opencode"
# Messages created this long before the newest one seen are read again: a row stamped earlier
# may commit later (parallel sessions); a row read twice changes nothing.
MARGIN_MS = 5000
# A row stamped further ahead of the clock than this is not a time OpenCode wrote: taken as the
# newest, it would move the window past every row written after it, uncounted.
AHEAD_MS = 86_400_000
# Open steps followed by id, newest first: one per session running, or one a crash left open.
OPEN_MAX = 64
# Messages of the margin's window read finished, left out of the next read by id. Past this
# many (hundreds of steps in 5 s), the next call reads the window against the whole ledger.
DONE_MAX = 512
FREE_PROVIDERS = ("opencode",)
# How the plugin appends a note for the model to a tool's output.
NOTE = "\n\n" + REFUSAL_PREFIX
_RESET = ("The user rejected permission", "Tool execution aborted")
_TREE = (
    "WITH RECURSIVE tree(id) AS (SELECT :root UNION "
    "SELECT session.id FROM session JOIN tree ON session.parent_id = tree.id) "
)


def call(payload):
    if payload.get("runaway_guard_plugin") != PLUGIN:
        return None
    event = payload.get("hook_event_name")
    root = text(payload.get("session_id"))
    own = text(payload.get("agent_session_id")) or root
    agent = own if own != root else None
    fields = {
        "transcript_path": payload.get("database"),
        "cwd": payload.get("cwd"),
        "agent": agent,
        # The root session's user message: it changes when the person sends a new prompt.
        "prompt_id": None if agent else payload.get("prompt_id"),
    }
    if event == "tool.execute.before":
        return Call(
            NAME,
            root,
            tool=tool_name(payload.get("tool_name"), TOOLS),
            tool_input=payload.get("tool_input"),
            tool_use_id=payload.get("call_id"),
            **fields,
        )
    if event == "chat.params":
        return Call(NAME, root, event=MODEL, model=text(payload.get("model_id")), **fields)
    return None


def render(decision):
    """What the plugin obeys: {"decision": "tell"|"deny"|"stop", "reason", "message"}."""
    if not decision:
        return ""
    model_text = decision.get("model_text") or ""
    person_text = decision.get("person_text") or ""
    if decision["kind"] == TELL:
        return jsonio.dumps({"decision": "tell", "reason": model_text}) if model_text else ""
    answer = {
        "decision": "stop" if decision["kind"] == STOP else "deny",
        "reason": model_text or person_text or REFUSAL_PREFIX,
    }
    if decision["kind"] == STOP and person_text:
        answer["message"] = person_text  # what ends the run, shown to the person
    return jsonio.dumps(answer)


def sync(book, call):
    """Bring the book up to date with the session tree's rows; False without a database."""
    path = call.transcript_path
    if not path or not call.session_id or not fs.isfile(path):
        return False
    sqlite = _sqlite()
    uri = "file:" + path.replace("%", "%25").replace("?", "%3f").replace("#", "%23")
    read = True
    try:
        db = sqlite.connect(uri + "?mode=ro", uri=True, timeout=5)
        try:
            # A row's text that is not UTF-8 would stop every read at that row for good.
            db.text_factory = _text
            _read(book, db, path, call.session_id)
        finally:
            db.close()
    except sqlite.Error as error:
        # not a database, or a damaged one: judged on what was read before
        ignore(f"a database it cannot read ({error})")
        read = False
    if ignored:
        say_ignored(book)
    return read


def _text(data):
    return data.decode("utf-8", "replace")


def _sqlite():
    """The sqlite3 module, from `_sqlite3` rather than the package (its date adapters cost a
    call 1.7 ms) and without `functools`: `_sqlite3` (3.11 and later) imports it only for its
    statement cache's lru_cache, and with it collections and nine more modules, 5 ms a call
    (bench/README.md). A call runs each statement once: a cache that keeps nothing will do."""
    no_cache = type(sys)("functools")
    no_cache.lru_cache = lambda maxsize=128, typed=False: lambda function: function
    if "functools" not in sys.modules:
        sys.modules["functools"] = no_cache  # only while _sqlite3 loads: nothing else sees it
    try:
        import _sqlite3 as sqlite
    except ImportError:
        sqlite = None
    finally:
        if sys.modules.get("functools") is no_cache:
            del sys.modules["functools"]
    if sqlite is None:
        import sqlite3 as sqlite
    return sqlite


def query(open_count, parts, messages=True):
    """The SQL of a read: the messages of the session tree created since `:since` and the open
    ones by id (`:o0`, `:o1`...); with `parts`, one more row, the parts of the messages created
    since `:new` and of the open ones, as one text, a part a line (JSON has no raw newline) led
    by its message's id. Searched through OpenCode's indexes (session, time created; id;
    message of a part)."""
    followed = ""
    if open_count:
        followed = f" OR id IN ({', '.join(f':o{n}' for n in range(open_count))})"
    sql = []
    if messages:
        sql.append(
            "SELECT id, session_id, time_created, data FROM message"
            f" WHERE session_id IN tree AND time_created >= :since{followed}"
        )
    if parts:
        sql.append(
            "SELECT NULL, NULL, NULL, group_concat(message_id || ' ' || data, char(10))"
            " FROM part WHERE message_id IN (SELECT id FROM message"
            f" WHERE session_id IN tree AND time_created >= :new{followed})"
        )
    return _TREE + " UNION ALL ".join(sql)


def _read(book, db, path, root):
    entry = main_entry(book, path)
    done = entry.get("done")
    if not isinstance(done, list):
        if entry.pop("since", None) is not None or "created" in entry:
            # an earlier guard's entry, or one past DONE_MAX or OPEN_MAX: the window's rows it
            # counted are not known by id, and the recent responses may not hold them all
            book.load_known()
        done = ()
    done = {key for key in done if isinstance(key, str)}
    opened = entry.get("open")
    if isinstance(opened, list):  # an earlier guard's: the ids alone
        opened = dict.fromkeys(key for key in opened if isinstance(key, str))
    opened = opened if isinstance(opened, dict) else {}
    followed = sorted((key for key in opened if isinstance(key, str)), reverse=True)[:OPEN_MAX]
    last = count(entry.get("created"))
    # The parts are read for the messages new since the last read and the open ones, where the
    # calls waited for are (a call runs before its step ends), and for the whole window when
    # one is not there (a late row, a database written ahead of its hooks).
    params = {f"o{n}": key for n, key in enumerate(followed)}
    params.update(root=root, since=max(0, last - MARGIN_MS), new=last)
    expecting = book.expecting()
    finished, still_open, created, parts, limit = [], {}, last, "", 2 * DONE_MAX
    latest = time.time() * 1000 + AHEAD_MS
    for message_id, session, stamp, data in db.execute(query(len(followed), expecting), params):
        if message_id in done:
            finished.append((message_id, stamp))  # read finished before: not decoded again
            continue
        if message_id is None:
            parts = data if isinstance(data, str) else ""
            continue
        stamp_ms = count(stamp)
        if created < stamp_ms <= latest:
            created = stamp_ms
        counted = None
        if isinstance(data, str) and '"assistant"' in data:
            agent = "main" if session == root else session
            counted = _step(book, agent, message_id, data, opened.get(message_id))
        if isinstance(counted, list):
            still_open[message_id] = counted
            continue
        finished.append((message_id, stamp))
        if len(finished) > limit:  # a first read: only the last rows are read again
            finished = _window(finished, created)
            limit = 2 * max(len(finished), DONE_MAX)
    if expecting:
        if last and not all(call_id in parts for call_id in book.waited()):
            params["new"] = params["since"]
            parts = db.execute(query(len(followed), True, messages=False), params).fetchone()[-1]
            parts = parts if isinstance(parts, str) else ""
        _outcomes(book, parts, still_open)
    entry["created"] = created
    # OpenCode's ids grow with time: the newest open steps are kept
    kept = sorted((k for k in still_open if isinstance(k, str)), reverse=True)[:OPEN_MAX]
    entry["open"] = {key: still_open[key] for key in kept}
    if len(finished) > DONE_MAX:
        finished = _window(finished, created)
    if len(kept) < len(still_open) or len(finished) > DONE_MAX:
        entry.pop("done", None)  # the next call reads the window against the whole ledger
    else:
        entry["done"] = [key for key, _ in finished]


def _window(rows, created):
    """The (id, time created) rows the next read's window may return again."""
    since = created - MARGIN_MS
    return [row for row in rows if not (isinstance(row[1], int) and row[1] < since)]


def _outcomes(book, joined, still_open):
    """Book the outcomes the parts in `joined` (one a line) hold for the calls the book waits
    for; a step whose call still runs is followed until it ends. Only the lines naming such a
    call are decoded, in their order."""
    starts = set()
    for call_id in book.waited():
        at = joined.find(call_id)
        while at >= 0:
            starts.add(joined.rfind("\n", 0, at) + 1)
            at = joined.find(call_id, at + 1)
    for start in sorted(starts):
        end = joined.find("\n", start)
        message_id, _, data = joined[start : end if end >= 0 else len(joined)].partition(" ")
        if '"tool"' in data and not _tool(book, data):
            still_open.setdefault(message_id, None)


def _dict(value):
    return value if isinstance(value, dict) else {}


def _row(data):
    """The JSON object a row's `data` holds ({} when it holds anything else)."""
    try:
        return _dict(jsonio.loads(data))
    except ValueError:
        ignore("a row that is not JSON")
        return {}


def _pico(cost):
    """OpenCode's cost (USD, a float) in picodollars; 0 when it is not a positive number."""
    if isinstance(cost, bool) or not isinstance(cost, (int, float)) or not 0 < cost < 1e9:
        return 0
    return round(cost * 10**12)


def _step(book, agent, message_id, data, counted):
    """One model step: OpenCode's cost, else its tokens priced with the table. True once it is
    finished (OpenCode rewrites a step's cost and tokens until it stamps `time.completed`),
    else the [picodollars, output] counted so far (`counted`: what an earlier call counted)."""
    message = _row(data)
    if message.get("role") != "assistant":
        return True
    tokens = _dict(message.get("tokens"))
    cache = _dict(tokens.get("cache"))
    fresh, read, written = (
        count(v) for v in (tokens.get("input"), cache.get("read"), cache.get("write"))
    )
    output = count(tokens.get("output")) + count(tokens.get("reasoning"))
    provider = text(message.get("providerID")) or ""
    model_id = text(message.get("modelID")) or "unknown"
    model = f"{provider}/{model_id}" if provider else model_id
    picodollars, known = _pico(message.get("cost")), True
    if not picodollars and (fresh or read or written or output) and provider not in FREE_PROVIDERS:
        picodollars, known = _table_price(provider, model_id, fresh, read, written, output)
    if counted != [picodollars, output]:
        if counted is not None and not book.remembers(message_id):
            book.load_known()  # counted while open, then left the recent responses
        day = _day(message.get("time"))
        # OpenCode writes a step's message before its request (chat.params sees it, cost 0):
        # only a priced step sets the next request's estimate, else that would be nothing
        ahead = LAST_COST if picodollars else None
        book.usage(
            message_id,
            agent,
            model,
            picodollars=picodollars,
            known_model=known,
            output=output,
            day=day,
            ahead=ahead,
        )
    if _dict(message.get("time")).get("completed"):
        return True
    return [picodollars, output]


def _day(times):
    """The local day a step started (OpenCode stamps milliseconds), else today."""
    created = count(_dict(times).get("created"))
    try:
        return time.strftime("%Y-%m-%d", time.localtime(created / 1000 if created else None))
    except (OverflowError, ValueError, OSError):
        return time.strftime("%Y-%m-%d")


def _table_price(provider, model_id, fresh, read, written, output):
    """(picodollars, known) of a step OpenCode did not price, by the table's Claude or OpenAI
    rules (OpenCode's input excludes cache reads and writes, its output excludes reasoning).
    The table is loaded only here: OpenCode prices almost every step itself."""
    from .. import claude_prices

    claude = provider == "anthropic" or "claude" in model_id.lower()
    return claude_prices.token_pricer(model_id, claude)(
        fresh + read + written, read, written, output
    )


def _tool(book, data):
    """A finished tool call's outcome: a non-zero exit or an error is a failure. False while
    the call is pending or running: its outcome comes later."""
    part = _row(data)
    call_id = part.get("callID")
    if part.get("type") != "tool" or not isinstance(call_id, str):
        return True
    state = _dict(part.get("state"))
    status = state.get("status")
    if status not in ("completed", "error"):
        return False
    if status == "error":
        error = state.get("error") if isinstance(state.get("error"), str) else ""
        if error.startswith(REFUSAL_PREFIX):
            verdict = "guard"
        elif error.startswith(_RESET):
            verdict = "reset"  # the person said no, or interrupted
        else:
            verdict = "fail"
        book.result(call_id, verdict, fingerprint(error))
        return True
    code = _dict(state.get("metadata")).get("exit")
    failed = isinstance(code, int) and not isinstance(code, bool) and code != 0
    output = state.get("output") if isinstance(state.get("output"), str) else ""
    note = output.rfind(NOTE)
    if note >= 0:
        output = output[:note]  # the guard's own note, appended by the plugin, is not the outcome
    book.result(call_id, "fail" if failed else "ok", fingerprint(output))
    return True
