"""Gemini CLI on the sessions and hook payloads recorded from the real CLI 0.61.0
(tests/fixtures/gemini/README.md): exact spend, outcomes, answers, and reading in pieces."""

import json
import shutil
from pathlib import Path

import pytest
from guard_env import ROOT, GuardEnv, as_previous_version, followed_files, jsonl, with_agents
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from runaway_guard import calls, gemini_prices, hosts, ledger, state_file, tail, wires
from runaway_guard.calls import MODEL, PROMPT, RESULT, TOOL, Call, fingerprint
from runaway_guard.decisions import ASK, DENY, STOP, TELL
from runaway_guard.hosts import gemini
from runaway_guard.hosts.gemini import chats, legacy, results
from runaway_guard.sessions import refresh

FIXTURES = ROOT / "tests" / "fixtures" / "gemini"
GEMINI = hosts.load("gemini")
RATES = json.loads((ROOT / "skill" / "runaway_guard" / "prices.json").read_text())["gemini"]

# Worked out by hand from the tokens each session records and prices.json (USD per MTok):
# cost = (input - cached + tool) x input + cached x cached_input + (output + thoughts) x output,
# the long-context rates for a whole request whose prompt is above 200k.
EXPECTED = {
    "failures": 0.0016275,  # 6 responses, gemini-2.5-flash
    "tool_errors": 0.0006895,
    "subagent": 0.002446,  # 3 parent + 3 subagent responses
    "loop": 0.000716,  # 4 of the 6 served: the CLI's loop detector dropped 2 unwritten
    "auto": 0.002168,  # the router call (gemini-3.5-flash-lite) is not in the session
    "rewind": 0.000757,  # the response rewound away stays spent
    "legacy": 0.0014635,  # 0.33.0 session-*.json + the .jsonl 0.61.0 wrote on --resume
    "models": 1.07883975,
}
MODELS = {
    # 250k prompt: long tier; 200k + 500 tool-use tokens: base tier (the prompt decides)
    "gemini-2.5-pro": (
        50000 * 2.5 + 200000 * 0.25 + 420 * 15 + 50500 * 1.25 + 150000 * 0.125 + 140 * 10
    )
    / 1e6,
    "gemini-3.1-pro-preview": (201000 * 4 + 110 * 18 + 500 * 2 + 2500 * 0.2 + 30 * 12) / 1e6,
    "gemini-3-flash-preview": (
        1250 * 0.5 + 4000 * 0.05 + 105 * 3 + 300 * 0.5 + 4900 * 0.05 + 12 * 3
    )
    / 1e6,
    "gemini-3.8-flash": (1000 * 0.75 + 5000 * 0.075 + 45 * 3.75) / 1e6,
    # not in the table: priced at the dearest pro model (gemini-3.1-pro-preview)
    "gemini-4-pro-preview": (1000 * 2 + 6000 * 0.2 + 30 * 12) / 1e6,
}


def place(name, into):
    """The fixture's session files under ``into``; (session id, transcript paths in the order the
    hooks named them, hook payloads re-pointed at them)."""
    source = FIXTURES / name
    chats = into / "chats"
    shutil.copytree(source / "chats", chats)
    payloads, paths = [], []
    for line in (source / "hook_inputs.jsonl").read_text().splitlines():
        payload = json.loads(line.replace("<root>", str(into)))
        old = payload["transcript_path"]
        payload["transcript_path"] = str(chats / Path(old).name)
        if payload["transcript_path"] not in paths:
            paths.append(payload["transcript_path"])
        payloads.append(payload)
    return payloads[0]["session_id"], paths, payloads


def synced(name, tmp):
    """The ledger after one sync per transcript the session had (a resume may change it)."""
    session, paths, _ = place(name, tmp)
    with ledger.Ledger(str(tmp / "state"), "gemini", session) as book:
        for path in paths:
            GEMINI.sync(book, Call("gemini", session, transcript_path=path))
        return book.state


def recorded_tokens(name):
    """{message id: (model, tokens)} over every file of the fixture, read independently."""
    found = {}
    for path in sorted((FIXTURES / name / "chats").rglob("*")):
        if path.suffix == ".json":
            records = json.loads(path.read_text())["messages"]
        elif path.suffix == ".jsonl":
            records = [json.loads(line) for line in path.read_text().splitlines()]
        else:
            continue
        for record in records:
            if record.get("type") == "gemini" and record.get("tokens"):
                found[record["id"]] = (record["model"], record["tokens"])
    return found


def by_hand(model, tokens):
    entry = RATES["models"][model]
    long = entry.get("long_context")
    rates = long if long and tokens["input"] > long["above_prompt_tokens"] else entry
    return (
        (tokens["input"] - tokens["cached"] + tokens["tool"]) * rates["input"]
        + tokens["cached"] * rates["cached_input"]
        + (tokens["output"] + tokens["thoughts"]) * rates["output"]
    ) / 1e6


# -- spend -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_recorded_sessions_priced_exactly(tmp_path, name):
    state = synced(name, tmp_path)
    assert abs(state["spend"]["total"] / 1e12 - EXPECTED[name]) < 1e-9
    priced = {m: t for m, t in recorded_tokens(name).values() if m in RATES["models"]}
    known = sum(by_hand(m, t) for m, t in recorded_tokens(name).values() if m in priced)
    unknown = sum(MODELS.get(m, 0) for m, _ in recorded_tokens(name).values() if m not in priced)
    assert abs(known + unknown - EXPECTED[name]) < 1e-9


def test_tokens_recorded_are_the_tokens_served():
    """The session's tokens are the usageMetadata the model served: input is promptTokenCount
    (cached included), thoughts and tool-use prompt tokens apart."""
    for name in ("failures", "models", "subagent", "loop"):
        served = [
            s["usageMetadata"] for s in json.loads((FIXTURES / name / "served.json").read_text())
        ]
        recorded = [t for _, t in recorded_tokens(name).values()]
        as_served = [
            {
                "promptTokenCount": t["input"],
                "candidatesTokenCount": t["output"],
                "totalTokenCount": t["total"],
                **({"cachedContentTokenCount": t["cached"]} if t["cached"] else {}),
                **({"thoughtsTokenCount": t["thoughts"]} if t["thoughts"] else {}),
                **({"toolUsePromptTokenCount": t["tool"]} if t["tool"] else {}),
            }
            for t in recorded
        ]
        assert all(item in served for item in as_served), name
    # the loop detector cut the 5th and 6th responses before the CLI wrote them
    assert len(json.loads((FIXTURES / "loop" / "served.json").read_text())) == 6
    assert len(recorded_tokens("loop")) == 4


def test_models_long_context_cached_thoughts_and_an_unpriced_id(tmp_path):
    state = synced("models", tmp_path)
    by_model = {m: v / 1e12 for m, v in state["spend"]["model"].items()}
    assert by_model == pytest.approx(MODELS, abs=1e-9)
    assert state["unpriced"] == ["gemini-4-pro-preview"]


token_counts = st.one_of(
    st.integers(-3, 400_000), st.booleans(), st.floats(), st.none(), st.text(max_size=2)
)


@settings(max_examples=300, deadline=None)
@given(
    model=st.sampled_from(sorted(RATES["models"])),
    tokens=st.dictionaries(
        st.sampled_from(["input", "cached", "tool", "output", "thoughts", "total"]), token_counts
    ),
)
@example("gemini-2.5-pro", {"input": 300_000, "cached": -1, "output": True, "thoughts": 2.5})
def test_a_responses_price_is_its_tokens_at_the_tables_rates(model, tokens):
    """The reader's pricer (one per model) applies the table's rates as written: whatever a
    record's tokens hold, a count that is not a non-negative number is 0 (calls.count)."""
    n = {key: calls.count(tokens.get(key)) for key in ("input", "cached", "tool", "output")}
    out = n["output"] + calls.count(tokens.get("thoughts"))
    entry = RATES["models"][model]
    long = entry.get("long_context")
    rates = long if long and n["input"] > long["above_prompt_tokens"] else entry
    pico = {key: round(rates[key] * 10**6) for key in ("input", "cached_input", "output")}
    cached = min(n["cached"], n["input"])
    cost = (n["input"] - cached + n["tool"]) * pico["input"] + cached * pico["cached_input"]
    price, known = gemini_prices.gemini_pricer(model)
    assert known and price(tokens) == (cost + out * pico["output"], out)
    assert gemini_prices.gemini_cost(model, tokens) == (cost + out * pico["output"], True)


def test_subagent_spend_is_its_own_agents(tmp_path):
    state = synced("subagent", tmp_path)
    agents = {a: v / 1e12 for a, v in state["spend"]["agent"].items()}
    sub = next(a for a in agents if a != "main")
    assert sub == next((FIXTURES / "subagent" / "chats").glob("*/*.jsonl")).stem
    # (500 x 0.3 + 1000 x 0.03 + 110 x 2.5) + (400 x 0.3 + 1400 x 0.03 + 20 x 2.5)
    # + (300 x 0.3 + 1700 x 0.03 + 8 x 2.5) micro-dollars
    assert agents["main"] == pytest.approx(0.000828, abs=1e-12)
    assert agents[sub] == pytest.approx(EXPECTED["subagent"] - agents["main"])


def test_rewind_and_set_never_take_spent_money_back(tmp_path):
    text = next((FIXTURES / "rewind" / "chats").glob("*.jsonl")).read_text()
    assert '"$rewindTo"' in text and '"$set":{"messages"' in text
    rewound = json.loads(next(line for line in text.splitlines() if '"$rewindTo"' in line))
    assert rewound["$rewindTo"]
    assert len(recorded_tokens("rewind")) == 4
    assert synced("rewind", tmp_path)["spend"]["total"] == round(EXPECTED["rewind"] * 1e12)


def test_legacy_file_and_its_resumed_copy_count_each_response_once(tmp_path):
    session, paths, _ = place("legacy", tmp_path)
    assert paths[0].endswith(".json") and paths[-1].endswith(".jsonl")
    state = synced("legacy", tmp_path / "again")
    assert state["spend"]["total"] == round(EXPECTED["legacy"] * 1e12)
    # the resumed .jsonl alone holds every response too (copied): the same total
    with ledger.Ledger(str(tmp_path / "jsonl-only"), "gemini", session) as book:
        GEMINI.sync(book, Call("gemini", session, transcript_path=paths[-1]))
        assert book.state["spend"]["total"] == round(EXPECTED["legacy"] * 1e12)
        assert len(book.agent("main")["hist"]) == 1  # the copied call is not an outcome again


def test_a_large_ledger_is_consulted_for_a_new_file(tmp_path):
    """A resumed legacy session's .jsonl repeats responses the guard may have counted long
    ago (out of the recent window): the ledger decides, nothing is counted twice."""
    session, paths, _ = place("legacy", tmp_path)
    with ledger.Ledger(str(tmp_path / "state"), "gemini", session) as book:
        GEMINI.sync(book, Call("gemini", session, transcript_path=paths[0]))
        book.state["recent"] = {}  # as if hundreds of responses came since
    with ledger.Ledger(str(tmp_path / "state"), "gemini", session) as book:
        GEMINI.sync(book, Call("gemini", session, transcript_path=paths[-1]))
        assert book.state["spend"]["total"] == round(EXPECTED["legacy"] * 1e12)


# -- outcomes ----------------------------------------------------------------------------------


def test_non_zero_exit_codes_are_failures(tmp_path):
    state = synced("failures", tmp_path)
    main = state["agents"]["main"]
    assert main["fails"] == 5 and len(main["hist"]) == 5


def test_tool_errors_including_calls_no_hook_saw(tmp_path):
    hooks = [
        json.loads(line)
        for line in (FIXTURES / "tool_errors" / "hook_inputs.jsonl").read_text().splitlines()
    ]
    assert [h["tool_name"] for h in hooks if h["hook_event_name"] == "BeforeTool"] == ["read_file"]
    assert synced("tool_errors", tmp_path)["agents"]["main"]["fails"] == 3


@pytest.mark.parametrize("name", ["deny", "stop", "deny_stop", "after_stop"])
def test_the_guards_own_refusals_never_count(tmp_path, name):
    state = synced(f"answers/{name}", tmp_path)
    main = state["agents"].get("main", {"fails": 0, "hist": []})
    assert main["fails"] == 0 and main["hist"] == []


def test_a_refusal_by_another_hook_is_a_failure(tmp_path):
    session, paths, _ = place("answers/deny", tmp_path)
    path = Path(paths[0])
    path.write_text(path.read_text().replace("runaway-guard: refused", "other-hook: refused"))
    with ledger.Ledger(str(tmp_path / "state"), "gemini", session) as book:
        GEMINI.sync(book, Call("gemini", session, transcript_path=str(path)))
        assert book.agent("main")["fails"] == 2


def test_identical_calls_are_a_loop_whatever_their_process_group(tmp_path):
    state = synced("loop", tmp_path)
    hist = state["agents"]["main"]["hist"]
    assert len(hist) == 4 and len({tuple(item) for item in hist}) == 1
    assert wires.loop_repeats(hist, hist[0][0]) == 4


def test_subagent_outcomes_go_to_the_agent_the_hooks_see(tmp_path):
    hooks = [
        json.loads(line)
        for line in (FIXTURES / "subagent" / "hook_inputs.jsonl").read_text().splitlines()
    ]
    assert len({h["session_id"] for h in hooks}) == 1  # the subagent's calls: the parent's id
    state = synced("subagent", tmp_path)
    assert set(state["agents"]) == {"main"}
    assert len(state["agents"]["main"]["hist"]) == 5  # 3 subagent calls, 2 of the parent


@pytest.mark.parametrize(
    ("text", "status"),
    [
        ("<untrusted_context>\nOutput: hi\nExit Code: 3\nProcess Group PGID: 9\n", "fail"),
        ("Output: (empty)\nProcess Group PGID: 9", "ok"),
        ("Output: hi\nExit Code: 0\nProcess Group PGID: 9", "ok"),  # Qwen Code writes it: a success
        ("Output: Exit Code: 3\nsaid the program\nProcess Group PGID: 9", "ok"),
        ("Output: x\nError: spawn failed\nProcess Group PGID: 9", "fail"),
        ("Output: x\nSignal: SIGTERM\nProcess Group PGID: 9", "fail"),
        ("Command was cancelled by user before it could complete.", "reset"),
        ("Command was automatically cancelled because it exceeded the timeout", "fail"),
    ],
)
def test_shell_result_text(text, status):
    assert results._text_status("run_shell_command", text) == status
    assert results._text_status("read_file", text) == "ok"


def turn(index, status="success", exit_code=None, stamp=None, call_id=None):
    """A response and the same message again with its shell call, as the CLI writes them."""
    when = stamp or f"2026-12-01T10:{index // 60 % 60:02d}:{index % 60:02d}.000Z"
    message = {
        "id": f"m{index}",
        "timestamp": when,
        "type": "gemini",
        "content": "",
        "thoughts": [],
        "tokens": {"input": 1000, "output": 10, "cached": 0, "thoughts": 0, "tool": 0},
        "model": "gemini-2.5-flash",
    }
    code = "" if exit_code is None else f"\nExit Code: {exit_code}"
    text = f"Output: step {index % 3}{code}\nProcess Group PGID: {index}"
    call = {
        "id": call_id or f"run_shell_command_{index}",
        "name": "run_shell_command",
        "args": {"command": f"make {index % 3}"},
        "result": [{"functionResponse": {"response": {"output": text}}}],
        "status": status,
        "timestamp": when,
        "resultDisplay": text,
    }
    return [message, {"$set": {"lastUpdated": when}}, dict(message, toolCalls=[call])]


HEADER = {"sessionId": "s", "startTime": "2026-12-01T00:00:00.000Z", "kind": "main"}
ONE_RESPONSE = round(gemini_prices.gemini_cost("gemini-2.5-flash", turn(0)[0]["tokens"])[0])


def sync_file(tmp, records, mode="a"):
    """Append records to the session file, then one sync; the state after it."""
    path = jsonl(tmp / "chats" / "session-x.jsonl", records, mode)
    with ledger.Ledger(str(tmp / "state"), "gemini", "s") as book:
        GEMINI.sync(book, Call("gemini", "s", transcript_path=str(path)))
        return book.state


def test_a_message_written_again_is_priced_once_and_its_outcome_booked_once(tmp_path):
    running = turn(1)[2]
    running["toolCalls"][0]["status"] = "executing"
    state = sync_file(tmp_path, [HEADER, *turn(1)[:2], running])
    assert state["spend"]["total"] == ONE_RESPONSE and "main" not in state["agents"]
    state = sync_file(tmp_path, [turn(1, exit_code=2)[2]])  # the call ran: the message again
    assert state["spend"]["total"] == ONE_RESPONSE
    assert state["agents"]["main"]["fails"] == 1 and len(state["agents"]["main"]["hist"]) == 1
    # written again with a new stamp (the CLI stamps calls when it records them), then a new
    # message whose call shares the last stamp: the first is not booked again, the second is
    again = turn(1, exit_code=2, stamp="2026-12-01T11:00:00.000Z")[2]
    tie = turn(2, exit_code=2, stamp="2026-12-01T11:00:00.000Z")
    state = sync_file(tmp_path, [again, *tie])
    assert state["spend"]["total"] == 2 * ONE_RESPONSE
    assert state["agents"]["main"]["fails"] == 2 and len(state["agents"]["main"]["hist"]) == 2
    # two calls of one message, the first written again with a later stamp than the second's
    first, second = (turn(3, exit_code=1, stamp=f"2026-12-01T12:00:0{n}.000Z") for n in (1, 2))
    both = dict(first[2], toolCalls=[first[2]["toolCalls"][0], second[2]["toolCalls"][0]])
    both["toolCalls"][1] = dict(both["toolCalls"][1], id="run_shell_command_3b")
    both_again = json.loads(json.dumps(both))
    both_again["toolCalls"][0]["timestamp"] = "2026-12-01T12:00:03.000Z"
    state = sync_file(tmp_path, [first[0], both])
    state = sync_file(tmp_path, [both_again])
    assert state["spend"]["total"] == 3 * ONE_RESPONSE and state["agents"]["main"]["fails"] == 4


def test_only_the_calls_that_may_come_again_are_kept(tmp_path):
    """The ids kept do not grow with the session: a file's entry after 400 calls is its entry
    after 40 (but for a digit more in its ids and offset)."""
    sizes = []
    for start, stop in ((0, 40), (40, 400)):
        records = [HEADER] * (start == 0) + [r for i in range(start, stop) for r in turn(i)]
        state = sync_file(tmp_path, records)
        sizes.append(len(json.dumps(state["files"])))
        entry = next(iter(state["files"].values()))
        assert entry["calls"] == [f"run_shell_command_{stop - 1}"]
    assert sizes[1] <= sizes[0] + 3
    # a whole file read again (a rewritten legacy session, here a copy) books nothing again
    path = tmp_path / "chats" / "session-x.jsonl"
    data = path.read_bytes()
    path.unlink()
    path.write_bytes(data)
    assert sync_file(tmp_path, [])["agents"]["main"]["fails"] == 0  # the last call was ok


def test_outcomes_of_a_long_read_are_the_ones_read_one_by_one(tmp_path):
    """Only the calls the wires keep get their hashes worked out: the same as reading the
    session a turn at a time, failures in a row, a cancel in the middle."""
    records = [HEADER]
    for index in range(60):
        exit_code = 1 if index >= 10 else None
        records += turn(index, status="cancelled" if index == 5 else "success", exit_code=exit_code)
    whole = sync_file(tmp_path / "whole", records)["agents"]["main"]
    for index in range(0, len(records), 3):
        step = sync_file(tmp_path / "steps", records[index : index + 3])["agents"].get("main")
    assert whole == step and whole["fails"] == 50 and len(whole["hist"]) == 24
    assert all(isinstance(a, str) and isinstance(b, str) for a, b in whole["hist"])
    # hist: [hash of the call, hash of its result without the process group line]
    assert whole["hist"][-1] == [
        fingerprint(["Bash", {"command": "make 2"}]),
        fingerprint("Output: step 2\nExit Code: 1"),
    ]
    assert wires.loop_repeats(whole["hist"], fingerprint(["Bash", {"command": "make 0"}])) == 8


def undecoded(value):
    """A record of results._decoded with each long string decoded (see results._Long)."""
    if isinstance(value, results._Long):
        return value.whole()
    if isinstance(value, dict):
        return {key: undecoded(item) for key, item in value.items()}
    if isinstance(value, list):
        return [undecoded(item) for item in value]
    return value


texts = st.text(
    st.sampled_from(["a", " ", "\n", '"', "\\", "é", "😀", "\x00", "\t", "<"]), max_size=40
)
sections = st.sampled_from(
    ["Output: x", "Exit Code: 1", "Error: e", "Signal: 9", "Process Group PGID: 7", "", "  "]
)


_CANCELLED_TEXT = "Command was cancelled by user"
starts = st.sampled_from([_CANCELLED_TEXT, "Command was automatically cancelled"])


_REFUSED = "Tool execution blocked: runaway-guard: stop"
result_texts = st.builds(
    lambda head, filler, tail, tagged: (
        (f"<untrusted_context>\n{head}{filler}\n</untrusted_context>" if tagged else head + filler)
        + "".join("\n" + line for line in tail)
    ),
    head=st.one_of(
        texts, starts, st.sampled_from([_REFUSED, "runaway-guard: x", "Command: make", "x\n"])
    ),
    filler=st.sampled_from(["", "a line of output\n" * 90, 'x\n"é\\' * 400]),
    tail=st.lists(sections, max_size=3),
    tagged=st.booleans(),
)


def with_output(records, text, key="output"):
    """A turn's records with its call's result text."""
    records[2]["toolCalls"][0]["result"][0]["functionResponse"]["response"] = {key: text}
    return records


def with_args(records, args):
    """A turn's records with its call's args."""
    records[2]["toolCalls"][0]["args"] = args
    return records


_FAILED = "Command: make\n" + "a line of output\n" * 90 + "Exit Code: 1\nProcess Group PGID: 7"


@st.composite
def sessions(draw):
    """A session's records: each turn a response, then the same message with its call."""
    records = [HEADER]
    for index in range(draw(st.integers(1, 60))):
        text = draw(result_texts)
        message, change, answered = with_output(
            turn(index), text, draw(st.sampled_from(["output", "error"]))
        )
        call = answered["toolCalls"][0]
        call["resultDisplay"] = draw(st.sampled_from([text, "Agent execution stopped by hook: "]))
        call["status"] = draw(st.sampled_from(["success"] * 6 + ["error", "cancelled"]))
        call["name"] = draw(st.sampled_from(["run_shell_command", "read_file"]))
        # a long string in a call's args, under a key whose long strings are cut out elsewhere
        call["args"] = draw(
            st.sampled_from([call["args"]] * 6 + [{"content": text}, {"n": [{"output": text}]}])
        )
        records += [message, change, answered]
    return records


def unpacked(state):
    """(path, entry) of each file the state follows, a dormant entry's agent put back."""
    return list(with_agents(state["files"], gemini._agent).items())


def subagent(records, agent):
    """A subagent's file of records: its own message and call ids."""
    records = json.loads(json.dumps(records))
    for record in records:
        if "id" in record:
            record["id"] = f"{agent}-{record['id']}"
        for tool_call in record.get("toolCalls", []):
            tool_call["id"] = f"{agent}-{tool_call['id']}"
    return records


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    records=sessions(),
    agents=st.lists(sessions(), max_size=2),
    refused=st.booleans(),
    batch=st.sampled_from([1, 3, 256]),
)
# a cancel, then more calls than the wires keep; a long result that failed, read at its ends
@example(
    [HEADER, *turn(0, status="cancelled"), *(r for i in range(1, 30) for r in turn(i))],
    [],
    True,
    256,
)
@example([HEADER, *with_output(turn(0), "x" * 2000), *with_output(turn(1), _FAILED)], [], True, 256)
@example([HEADER, *with_args(turn(0), {"content": "x" * 2000})], [], True, 256)  # args: read whole
# a subagent's cancel, then more calls of the main thread than the wires keep
@example(
    [HEADER, *(r for i in range(1, 30) for r in turn(i))],
    [[HEADER, *turn(0, status="cancelled"), *turn(1)]],
    True,
    3,
)
def test_a_long_read_is_the_same_as_reading_line_by_line(
    tmp_path_factory, records, agents, refused, batch
):
    """Read whole, a message written again has only its calls read, and only the outcomes the
    wires can still show are worked out, those of every file read together (in batches of
    batch): the same state as reading each line on its own. agents: subagents' files, read
    before the main one (in the order of their names); refused: the wires had counted a
    refusal, which a cancel resets."""

    def read(state):  # the files' entries but their inodes (two copies)
        entries = {Path(path).name: dict(entry, ino=None) for path, entry in unpacked(state)}
        return state["spend"], state["agents"], entries

    def refused_before(tmp):  # a cancel also resets the refusals the wires counted
        with ledger.Ledger(str(tmp / "state"), "gemini", "s") as book:
            book.agent("main")["ref"] = {"loop": 1} if refused else {}
        return tmp

    files = [(f"s/a{n}.jsonl", subagent(agent, f"a{n}")) for n, agent in enumerate(agents)]
    files.append(("session-x.jsonl", records))
    at_once, steps = (refused_before(tmp_path_factory.mktemp(n)) for n in ("whole", "steps"))
    kept, chats._BATCH = chats._BATCH, batch
    try:
        for name, lines in files:
            jsonl(at_once / "chats" / name, lines)
        state = sync_file(at_once, [])
        assert len(state["files"]) == len(files)
        whole = read(state)
        for name, lines in files:
            for record in lines:
                jsonl(steps / "chats" / name, [record])
                state = sync_file(steps, [])
    finally:
        chats._BATCH = kept
    assert whole == read(state)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    records=sessions(),
    agents=st.lists(sessions(), max_size=2),
    block=st.sampled_from([1 << 12, 1 << 14, 1 << 16]),
    refused=st.booleans(),
)
# more calls than the wires keep, their results read into a buffer read into again since
@example(
    [HEADER, *(r for i in range(40) for r in with_output(turn(i), _FAILED))], [], 1 << 14, False
)
# a cancel the wires see only once they counted a refusal, then more calls than they keep
@example(
    [
        HEADER,
        *with_output(turn(0), _CANCELLED_TEXT + "\n" + "a line of output\n" * 90),
        *(r for i in range(1, 30) for r in turn(i)),
    ],
    [],
    1 << 16,
    True,
)
# a long string in a call's args, in a list: decoded for the call's hash
@example([HEADER, *with_args(turn(0), {"n": [{"output": "x" * 2000}]}), *turn(1)], [], 1 << 16, 0)
def test_reading_in_blocks_is_decoding_every_line_whole(
    tmp_path_factory, records, agents, block, refused
):
    """The fast paths (lines passed over by their head, a message written again read for its
    calls alone where they are in the read buffer, long strings cut out and put back only for
    the calls whose outcomes are worked out, once a block was read) against plain reading:
    every line decoded whole (json.loads) and read by line(), the buffer a few lines long.
    refused: the wires had counted a refusal, which a cancel resets."""

    def state_of(tmp):
        with ledger.Ledger(str(tmp / "state"), "gemini", "s") as book:
            book.agent("main")["ref"] = {"loop": 1} if refused else {}
        state = sync_file(tmp, [])
        entries = {Path(path).name: dict(entry, ino=None) for path, entry in unpacked(state)}
        return state["spend"], state["agents"], entries

    files = [(f"s/a{n}.jsonl", subagent(agent, f"a{n}")) for n, agent in enumerate(agents)]
    files.append(("session-x.jsonl", records))
    fast, plain = (tmp_path_factory.mktemp(name) for name in ("fast", "plain"))
    for tmp in (fast, plain):
        for name, lines in files:
            jsonl(tmp / "chats" / name, lines)
    kept = tail.BLOCK, tail._buffer[:]
    tail.BLOCK, tail._buffer[:] = block, []
    try:
        got = state_of(fast)
    finally:
        tail.BLOCK, tail._buffer[:] = kept
    reader = chats._Reader
    with pytest.MonkeyPatch.context() as patch:
        patch.delattr(reader, "lines")  # each line to line(), one by one
        patch.setattr(chats, "_decoded", json.loads)
        assert state_of(plain) == got


# -- a subagent file's entry, packed between calls by the version before -----------------------


def test_a_status_finds_the_main_file_among_packed_entries(tmp_path):
    """status.py refreshes a session first (sessions.refresh): a legacy session-*.json is not
    among the files followed, its subagents' entries are, packed by the version before."""
    chats = tmp_path / "chats"
    jsonl(chats / "s" / "a0.jsonl", subagent([HEADER, *turn(0)], "a0"))
    legacy = chats / "session-x.json"
    legacy.write_text(json.dumps({"sessionId": "s", "messages": turn(1)[::2]}))
    with ledger.Ledger(str(tmp_path / "state"), "gemini", "s") as book:
        GEMINI.sync(book, Call("gemini", "s", transcript_path=str(legacy)))
    as_previous_version(str(tmp_path / "state"), "gemini", "s", gemini._agent)
    saved = state_file.session_paths(str(tmp_path / "state"), "gemini", "s")[1] + state_file.STATE
    assert [type(entry) for entry in state_file.read_state(saved)["files"].values()] == [list]
    state = refresh(str(tmp_path / "state"), "gemini", "s")
    assert state["spend"]["total"] == 2 * ONE_RESPONSE


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    records=sessions(),
    agents=st.lists(sessions(), min_size=2, max_size=3),
    steps=st.lists(
        st.tuples(
            st.sets(st.integers(0, 3), min_size=1), st.integers(1, 6), st.booleans(), st.booleans()
        ),
        max_size=12,
    ),
)
@example(  # two quiet files grow at once, the one followed first after the other was read
    [HEADER],
    [[HEADER, *turn(0), *turn(1)], [HEADER, *turn(2, exit_code=1), *turn(3)]],
    [({0, 1}, 4, False, False), ({1}, 3, False, False), ({0, 1}, 3, False, False)],
)
@example(  # a quiet file put under a new inode: read again from its start
    [HEADER], [[HEADER, *turn(0)], [HEADER]], [({0}, 4, False, False), ({0}, 1, True, False)]
)
def test_packed_entries_read_as_entries_kept_whole(tmp_path_factory, records, agents, steps):
    """A state the version before wrote, its subagents' entries packed lists (_files.entries),
    reads on as if never packed: the same state, call after call, entries in the same order
    (the order files are read in is the order their outcomes reach the wires). A step appends
    up to n records to some files, may put a file's bytes under a new inode, and may then
    rewrite the state as the version before kept it."""
    tmp = tmp_path_factory.mktemp("packed")
    files = [
        (tmp / "chats" / "s" / f"a{n}.jsonl", subagent(a, f"a{n}")) for n, a in enumerate(agents)
    ]
    files.append((tmp / "chats" / "session-x.jsonl", records))
    written = [0] * len(files)
    jsonl(files[-1][0], [])
    call = Call("gemini", "s", transcript_path=str(files[-1][0]))

    def synced(state_dir):
        with ledger.Ledger(str(tmp / state_dir), "gemini", "s") as book:
            GEMINI.sync(book, call)
            return book.state["spend"], book.state["agents"], unpacked(book.state)

    for grown, count, moved, older in [*steps, (set(range(len(files))), 10**6, False, False)]:
        grown = sorted({index % len(files) for index in grown})
        for index in grown:
            path, lines = files[index]
            jsonl(path, lines[written[index] : written[index] + count])
            written[index] += count
        if moved:
            path = files[grown[0]][0]
            path.with_suffix(".new").write_bytes(path.read_bytes())
            path.with_suffix(".new").replace(path)
        assert synced("packed") == synced("whole")
        if older:
            as_previous_version(str(tmp / "packed"), "gemini", "s", gemini._agent)


@settings(max_examples=300, deadline=None)
@given(
    head=starts | texts | st.just("Command: make"),
    noise=texts,
    tail=st.lists(sections, max_size=4),
    size=st.integers(0, 3000),
    key=st.sampled_from(["output", "error", "description", "content", "command"]),
    tagged=st.booleans(),
    dense=st.booleans(),
    in_args=st.booleans(),
)
@example("", "noise", ["Exit Code: 1", "Process Group PGID: 7"], 3000, "output", True, False, False)
@example(_CANCELLED_TEXT, "", [], 3000, "error", False, False, False)
@example("Command: make", "", ["Exit Code: 1"], 3000, "output", False, False, False)
@example("", "", ["Exit Code: 1"] + ["Process Group PGID: 7"] * 30, 3000, "output", 0, 0, 0)
def test_a_long_line_decodes_as_json_and_its_results_outcome_from_their_ends(
    head, noise, tail, size, key, tagged, dense, in_args
):
    """_decoded cuts long strings out before decoding: the record is json.loads' own, and the
    outcome read at a result's two ends is the one read from the whole, when it can tell."""
    filler = (('x\n"é' if dense else "a line of output\n") * size)[:size]
    text = "\n".join([head, filler, noise, *tail])
    if tagged:
        text = f"<untrusted_context>\n{text}\n</untrusted_context>"
    call = turn(1)[2]["toolCalls"][0]
    call["args"] = {"command": "x", key: text} if in_args else {"command": "x"}
    call["result"][0]["functionResponse"]["response"] = {key: text, "output": text}
    call["resultDisplay"] = call["description"] = text
    for ascii_only in (True, False):
        record = dict(turn(1)[2], content=text, toolCalls=[call])
        line = json.dumps(record, ensure_ascii=ascii_only, separators=(",", ":"))
        record = results._decoded(line.encode())
        assert undecoded(record) == json.loads(line)
        got = record["toolCalls"][0]["result"][0]["functionResponse"]["response"]["output"]
        # a long arg, a long string elsewhere than where the reader looks, or a \u0000 left
        # in what is decoded (the message's content here): the line is decoded whole
        long = len(json.dumps(text, ensure_ascii=ascii_only).encode()) > results._LONG_TEXT
        cut = long and key in ("output", "error", "command") and not (in_args and key != "command")
        cut = cut and "\x00" not in text
        assert isinstance(got, results._Long) == cut
        if cut:
            ends = got.ends()
            whole = results._text_status("run_shell_command", text)
            status = None if ends is None else results._text_status("run_shell_command", *ends)
            assert status in (None, whole)
            assert got.plain_outcome("run_shell_command", False) in (None, whole)
            assert got.plain_outcome("read_file", True) in (None, "fail")
            if not dense and size > 2000 and len(tail) < 5:
                assert status is not None  # the ends of a plain output tell its outcome


# -- payloads and answers ----------------------------------------------------------------------


def test_payloads_become_calls():
    hooks = {}
    for line in (FIXTURES / "subagent" / "hook_inputs.jsonl").read_text().splitlines():
        payload = json.loads(line)
        hooks.setdefault(payload["hook_event_name"], payload)
    tool = GEMINI.call(hooks["BeforeTool"])
    assert (tool.event, tool.tool, tool.agent) == (TOOL, "Agent", "main")
    assert tool.tool_use_id == GEMINI.call(dict(hooks["BeforeTool"])).tool_use_id
    assert tool.tool_use_id != GEMINI.call(dict(hooks["BeforeTool"], timestamp="x")).tool_use_id
    assert tool.transcript_path.endswith(".jsonl")
    model = GEMINI.call(hooks["BeforeModel"])
    assert (model.event, model.model) == (MODEL, "gemini-2.5-flash")
    prompt = GEMINI.call(hooks["BeforeAgent"])
    assert prompt.event == PROMPT and prompt.prompt_id
    assert GEMINI.call(hooks["AfterTool"]) is None  # the session file tells the outcome
    bare = dict(hooks["AfterTool"], transcript_path=None)
    bare["tool_response"] = {"llmContent": "Output: x\nExit Code: 2\nProcess Group PGID: 1"}
    result = GEMINI.call(bare)
    assert (result.event, result.failed) == (RESULT, True)
    assert GEMINI.call({"hook_event_name": "SessionStart", "session_id": "s"}) is None


def test_every_recorded_payload_is_detected_as_gemini():
    for path in FIXTURES.glob("**/hook_inputs.jsonl"):
        for line in path.read_text().splitlines():
            assert hosts.detect(json.loads(line), {}) == "gemini"


def test_answers_never_ask():
    texts = {"wire": "loop", "model_text": "runaway-guard: m", "person_text": "runaway-guard: p"}
    assert GEMINI.render(None) == ""
    assert json.loads(GEMINI.render({"kind": TELL, **texts})) == {
        "systemMessage": "runaway-guard: p"
    }
    deny = json.loads(GEMINI.render({"kind": DENY, **texts}))
    assert deny == {
        "decision": "deny",
        "reason": "runaway-guard: m",
        "systemMessage": "runaway-guard: p",
    }
    stop = json.loads(GEMINI.render({"kind": STOP, **texts}))
    assert stop["continue"] is False and stop["decision"] == "deny"
    assert stop["stopReason"] == "runaway-guard: m"
    assert ASK not in GEMINI.RUNGS
    assert "ask" not in json.dumps([GEMINI.render({"kind": k, **texts}) for k in GEMINI.RUNGS])


# -- the hook as a whole ----------------------------------------------------------------------


def test_replayed_failure_run_is_refused_then_stopped(tmp_path):
    """The 6th call of a failure run is refused; the model going on is refused, then the run is
    stopped, at the tool and at the next model request."""
    env = GuardEnv(tmp_path)
    _, _, payloads = place("failures", tmp_path)
    before_tool = next(p for p in payloads if p["hook_event_name"] == "BeforeTool")
    before_model = next(p for p in payloads if p["hook_event_name"] == "BeforeModel")
    prompt = next(p for p in payloads if p["hook_event_name"] == "BeforeAgent")
    assert env.answer(prompt) is None  # the run's first prompt
    answers = [env.answer(dict(before_tool, tool_input={"command": f"make {n}"})) for n in range(3)]
    assert [a["decision"] for a in answers] == ["deny", "deny", "deny"]
    assert "5 tool calls in a row have failed" in answers[0]["reason"]
    assert [a.get("continue") for a in answers] == [None, None, False]
    assert env.answer(before_model)["continue"] is False
    # a new prompt from the person clears the stop
    assert env.answer(dict(prompt, timestamp="2026-12-02T00:00:00.000Z")) is None
    assert env.answer(before_model) is None


def test_no_call_waits_for_a_key_no_file_holds(tmp_path):
    """The hooks carry no call id: the guard's key for a call (to answer a second install alike)
    is in no file, so the state keeps no call waiting for an outcome by it, nor a refusal by it
    (they would stay there for good); the same payload is still answered alike."""
    env = GuardEnv(tmp_path)
    session, _, payloads = place("failures", tmp_path)
    before_tool = next(p for p in payloads if p["hook_event_name"] == "BeforeTool")
    calls = [
        dict(before_tool, tool_input={"command": f"make {n}"}, timestamp=f"2026-12-02T00:0{n}")
        for n in range(3)
    ]
    answers = [env.answer(call) for call in calls]
    assert [a["decision"] for a in answers] == ["deny", "deny", "deny"]
    assert env.answer(calls[-1]) == answers[-1]  # the same call through a second install
    _, base = state_file.session_paths(str(env.state_dir), "gemini", session)
    state = state_file.read_state(base + state_file.STATE)
    assert state["agents"]["main"]["pending"] == [] and state["denied"] == []
    assert len(state["answers"]) == 3


def test_spend_cap_stops_at_the_model_request(tmp_path):
    env = GuardEnv(tmp_path)
    _, _, payloads = place("models", tmp_path)
    before_model = next(p for p in payloads if p["hook_event_name"] == "BeforeModel")
    before_model = dict(
        before_model, transcript_path=str(next((tmp_path / "chats").glob("*.jsonl")))
    )
    answer = env.answer(before_model, RUNAWAY_GUARD_MAX_USD="1")
    assert answer["continue"] is False and "spend cap is reached" in answer["stopReason"]


# -- reading in pieces -------------------------------------------------------------------------


def read_in_pieces(tmp, name, cuts):
    session, paths, _ = place(name, tmp)
    files = sorted((tmp / "chats").rglob("*.jsonl"))
    data = {path: path.read_bytes() for path in files}
    for path in files:
        path.write_bytes(b"")
    call = Call("gemini", session, transcript_path=paths[-1])
    state_dir = str(tmp / "state")
    for step in range(max(len(c) for c in cuts) + 1):
        for path, fractions in zip(files, cuts):
            ends = [round(len(data[path]) * c) for c in sorted(fractions)] + [len(data[path])]
            end = ends[min(step, len(ends) - 1)]
            with path.open("ab") as handle:
                handle.write(data[path][path.stat().st_size : end])
            with ledger.Ledger(state_dir, "gemini", session) as book:
                GEMINI.sync(book, call)
    with ledger.Ledger(state_dir, "gemini", session) as book:
        GEMINI.sync(book, call)
        return book.state["spend"], outcomes(book)


def outcomes(book):
    """Each agent's calls with their outcomes, and its failures in a row when one file holds
    them all: the order of two files' calls is the order they were read in, and the test writes
    them in any interleaving."""
    one_file = len(followed_files(book)) == 1
    return {
        agent: (record["fails"] if one_file else None, sorted(map(tuple, record["hist"])))
        for agent, record in book.state["agents"].items()
    }


fractions = st.lists(st.floats(0, 1), min_size=1, max_size=30)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    cuts=st.lists(fractions, min_size=2, max_size=2),
    name=st.sampled_from(["subagent", "models", "loop"]),
)
def test_pieces_equal_one_read(tmp_path_factory, cuts, name):
    whole_dir = tmp_path_factory.mktemp("whole")
    session, paths, _ = place(name, whole_dir)
    with ledger.Ledger(str(whole_dir / "state"), "gemini", session) as book:
        GEMINI.sync(book, Call("gemini", session, transcript_path=paths[-1]))
        whole = book.state["spend"], outcomes(book)
    assert whole[0]["total"] == round(EXPECTED[name] * 1e12)
    assert read_in_pieces(tmp_path_factory.mktemp("pieces"), name, cuts) == whole


# -- outside input -----------------------------------------------------------------------------

SAMPLES = [
    json.loads(line)
    for name in ("subagent", "failures", "tool_errors")
    for line in next((FIXTURES / name / "chats").glob("*.jsonl")).read_text().splitlines()
]
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


def mutate(record, draw):
    record = json.loads(json.dumps(record))
    targets = [record]
    for message in (
        record.get("$set", {}).get("messages", []) if isinstance(record.get("$set"), dict) else []
    ):
        targets.append(message)
    for tool_call in record.get("toolCalls") or []:
        targets.append(tool_call)
    if isinstance(record.get("tokens"), dict):
        targets.append(record["tokens"])
    target = draw(st.sampled_from(targets))
    if target:
        key = draw(st.sampled_from(sorted(target)))
        target[key] = draw(json_values)
    return json.dumps(record).encode()


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_any_session_line_is_read_without_error(tmp_path_factory, data):
    tmp = tmp_path_factory.mktemp("fuzz")
    lines = []
    for _ in range(data.draw(st.integers(1, 6))):
        if data.draw(st.booleans()):
            lines.append(mutate(data.draw(st.sampled_from(SAMPLES)), data.draw))
        else:
            lines.append(data.draw(st.binary(max_size=80)).replace(b"\n", b" "))
    path = tmp / "chats" / "session-fuzz.jsonl"
    path.parent.mkdir()
    path.write_bytes(b"\n".join(lines) + b"\n")
    env = GuardEnv(tmp)
    payload = {
        "session_id": "fuzz",
        "transcript_path": str(path),
        "cwd": str(tmp),
        "hook_event_name": data.draw(st.sampled_from(["BeforeTool", "BeforeModel", "BeforeAgent"])),
        "timestamp": "2026-12-01T00:00:00.000Z",
        "tool_name": data.draw(st.sampled_from(["run_shell_command", "invoke_agent", 3, None])),
        "tool_input": data.draw(json_values),
        "llm_request": data.draw(json_values),
    }
    line = env.run(payload)
    assert line == "" or isinstance(json.loads(line), dict)
    with ledger.Ledger(str(env.state_dir), "gemini", "fuzz") as book:
        assert isinstance(book.state["spend"]["total"], int)
    assert gemini_prices.gemini_cost("gemini-2.5-flash", data.draw(json_values))[0] >= 0


def test_a_legacy_file_past_its_limit_is_not_read(tmp_path, monkeypatch):
    """A whole-file read has a limit (LEGACY_MAX): past it the file is passed over, no error."""
    session, paths, _ = place("legacy", tmp_path)
    monkeypatch.setattr(legacy, "LEGACY_MAX", Path(paths[0]).stat().st_size - 1)
    with ledger.Ledger(str(tmp_path / "state"), "gemini", session) as book:
        GEMINI.sync(book, Call("gemini", session, transcript_path=paths[0]))
        assert book.state["spend"]["total"] == 0
