"""The session state's schema: every key a call keeps in `<id>.state` (state_file.py), its type,
the module that owns it (writes it; others only read it) and why it is kept.

Data for the tests (every state a test saves is checked against it: tests/conftest.py) and for
a reader of the code; never imported on the hook's path, where a module costs every call. A
new key goes here first, with its owner and its reason. Types are JSON's kinds of data, as
the state must hold (marshal writes it, but JSON could): a float key may hold an int.
"""

NONE = type(None)
NUMBER = (int, float)
ANY = (dict, list, str, int, float, bool, NONE)  # a value kept as it was found

# key: (types, owner module, why the state keeps it)
STATE = {
    # -- what the session is (ledger.new_state)
    "v": (int, "ledger", "the state's version: a state of another is rebuilt from the ledger"),
    "host": (str, "ledger", "the host the session runs in (status, the day file's key)"),
    "session_id": (str, "ledger", "the host's session id (status, the day file's key)"),
    "started": (NUMBER, "ledger", "when the guard first saw the session (status)"),
    "seen": (NUMBER, "ledger", "the last call's time: status's order, the prune's age"),
    "cwd": ((str, NONE), "hook", "the session's working folder (its project, status)"),
    # -- reading the host's files
    "files": (dict, "hosts", "each followed file's read cursor, by path (hosts/_files.py)"),
    "folders": (dict, "hosts/_files", "each listed folder's mtime: listed again only if changed"),
    "swept": (NUMBER, "hosts/_files", "when every followed file, dormant ones too, was last read"),
    "ignored": (bool, "hosts/_files", "hook.log said once what the readers passed over"),
    "legacy": (dict, "hosts/gemini", "a legacy session-*.json's stamp: read whole when changed"),
    "copilot": (dict, "hosts/copilot", "Copilot's calls waiting for their outcome, its misses"),
    "parts": (dict, "ledger", "the parts kept in files of their own, by name: their number"),
    # -- spend (spend_ledger.py)
    "spend": (dict, "spend_ledger", "the totals in picodollars: all, by model, agent, day"),
    "recent": (dict, "spend_ledger", "the last responses, which a later row can still correct"),
    "active": (dict, "ledger", "each agent's last booking time: its last response is kept"),
    "side": (dict, "spend_ledger", "what reconcile booked for requests no transcript shows"),
    "unpriced": (list, "spend_ledger", "the model ids the price table lacks as written"),
    "priced_as": (dict, "spend_ledger", "what each unlisted model id was priced as (status)"),
    "ahead": (dict, "estimate", "each agent's next request's estimate and what it is made of"),
    "burn": (list, "ledger", "spend samples, one a minute at most: status's forecast"),
    "daily_written": (dict, "hook", "this session's share last written to the day file, when"),
    "project": (dict, "projects", "the session's project, its shares and (with a cap) totals"),
    "plan_windows": (dict, "plans", "a plan's usage windows as the host last reported them"),
    # -- calls and their outcomes (agent_book.py)
    "agents": (dict, "agent_book", "each agent's calls: failures, history, pending, asked"),
    "denied": (list, "agent_book", "the calls the guard refused: they never ran"),
    "reported": (list, "agent_book", "outcomes a post-tool hook gave: counted once"),
    "text_loops": (dict, "text_loops", "each agent's repeated answers without a tool call"),
    "writes": (bool, "hook", "the host was seen writing a call before its hook: wait for it"),
    "late": (int, "hook", "calls in a row whose write was waited for and not found"),
    # -- decisions and the person's controls
    "answers": (dict, "hook", "the answer given to each call: a second install says the same"),
    "twice": (bool, "hook", "the person was told once that two installs run"),
    "prompt": ((str, NONE), "hook", "the prompt being worked on: a new one resets the wires"),
    "prompt_at": (NUMBER, "hook", "when that prompt came: the autonomy clock (time_limits)"),
    "blocked": ((dict, NONE), "hook", "what stopped the session, until the person goes on"),
    "interrupted": (NUMBER, "hook", "when the run was last ended: parallel calls end it once"),
    "warned": (dict, "wires", "each cap already warned about, by wire: warned once"),
    "notified": (list, "notify", "the events already sent to the person's notifier"),
    "problems": (list, "hook", "the configuration's ignored values, for status"),
    "cap_usd": (
        ANY,
        "controls",
        "a cap the person raised for this session; what an earlier version wrote is kept as it "
        "is and read through money.raised_cap",
    ),
    "off": (bool, "controls", "the person turned the guard off for this session"),
}

# The dicts of a fixed shape inside the state: where they are, and their keys.
AGENT = {  # state["agents"][name] (agent_book.agent)
    "fails": (int, "agent_book", "failed calls in a row: the failure wire"),
    "hist": (list, "agent_book", "the last finished calls and outcomes: the loop wire"),
    "pending": (list, "agent_book", "calls waiting for their outcome: [id, call hash]"),
    "ref": (dict, "wires", "what the wires compare the next calls with"),
    "asked": (list, "agent_book", "calls the guard asked the person about"),
}
SPEND = {  # state["spend"] (spend_ledger._book)
    "total": (int, "spend_ledger", "the session's spend: its cap"),
    "model": (dict, "spend_ledger", "by model id: status"),
    "agent": (dict, "spend_ledger", "by agent: status"),
    "day": (dict, "spend_ledger", "by local day: the daily cap and the project's periods"),
}
SIDE = {  # state["side"] (spend_ledger.reconcile)
    "est": (dict, "spend_ledger", "the estimates of unwritten requests, by key: their model"),
    "host": (int, "spend_ledger", "what the host billed beyond the transcripts"),
}
COPILOT = {  # state["copilot"] (hosts/copilot.py)
    "pending": (dict, "hosts/copilot", "calls whose outcome has not come yet"),
    "misses": (int, "hosts/copilot", "reads in a row that found no outcome"),
}
BLOCKED = {  # state["blocked"] (hook._blocked)
    "wire": (str, "hook", "the wire that stopped the session"),
    "kind": (str, "hook", "the decision: stop, deny, ask"),
    "agent": (str, "hook", "the agent whose call it was"),
    "reason": (str, "hook", "what the person or the model was told"),
    "at": (NUMBER, "hook", "when it stopped (status)"),
}
PROJECT = {  # state["project"] (projects.track)
    "path": (str, "projects", "the project's folder (its repository's root)"),
    "head": ((str, NONE), "projects", "the repository's HEAD file: its branch"),
    "branch": ((str, NONE), "projects", "the branch the session works on"),
    "cwd": (str, "projects", "the working folder the record was made for"),
    "file": (str, "projects", "the project's name among the month files"),
    "label": ((str, NONE), "projects", "the team's name for the project"),
    "days": (dict, "projects", "the session's share of each day's spend"),
    "base": (dict, "projects", "spend before the session came to this project, by day"),
    "dirty": (list, "projects", "the days whose share is still to be written"),
    "written": (NUMBER, "projects", "when the shares were last written"),
    "totals": (
        (dict, NONE),
        "projects",
        "the project's totals, every session (with a project cap)",
    ),
}
FILE = {  # state["files"][path], a dict (hosts/_files.entries): the keys every host's entry may
    # have; the rest are its reader's own (what it holds between reads of that file)
    "off": (int, "tail", "how far the file was read, in bytes"),
    "ino": (int, "tail", "the file's inode when read: another file is read from its start"),
    "skip": (bool, "tail", "inside an overlong line: passed over up to its end"),
    "agent": (str, "hosts", "whose file it is: main, or a subagent's id"),
    "foreign": (bool, "hosts", "another session's file in the same folder: never read"),
    "unread": (bool, "hosts/_files", "hook.log said once that the main file cannot be read"),
}
NESTED = {"spend": SPEND, "side": SIDE, "copilot": COPILOT, "blocked": BLOCKED, "project": PROJECT}


def unnamed(state):
    """What of state the schema does not name or types otherwise: a list of texts, empty when
    the state keeps to it."""
    found = _unnamed(state, STATE, "")
    for key, shape in NESTED.items():
        if isinstance(state.get(key), dict):
            found += _unnamed(state[key], shape, f"{key}.")
    for name, record in (state.get("agents") or {}).items():
        found += _unnamed(record, AGENT, f"agents[{name!r}].")
    for path, entry in (state.get("files") or {}).items():
        if isinstance(entry, dict):
            found += _unnamed(entry, FILE, f"files[{path!r}].", open_shape=True)
        else:
            found.append(f"files[{path!r}]: {type(entry).__name__}, not dict")
    return found


def _unnamed(values, shape, where, open_shape=False):
    """What of values shape does not name (unless open_shape: other keys allowed) or types
    otherwise."""
    found = []
    for key, value in values.items():
        if key not in shape:
            if not open_shape:
                found.append(f"{where}{key}: a key the schema does not name")
            continue
        kinds = shape[key][0]
        if not isinstance(value, kinds) or (type(value) is bool and kinds is not bool):
            found.append(f"{where}{key}: {type(value).__name__}, not {kinds}")
    return found
