"""One tool call through the guard: read what is new, update the ledger, decide, answer.

host → detect → config → lock the session → read the transcripts' new bytes → ledger → wires
→ write state → the host's answer (or nothing).
"""

import os
import time

from . import config, controls, hosts, jsonio, ledger, log, wires
from .transcripts import fingerprint

MAX_INPUT = 16 << 20
GUARDED = (hosts.CLAUDE, hosts.CODEX)


def _reader(host):
    """The host's transcript reader, imported alone: every call pays for what it imports."""
    if host == hosts.CLAUDE:
        from .transcripts import claude as reader
    else:
        from .transcripts import codex as reader
    return reader


def run(data, environ):
    """The answer line for one hook payload (bytes), or ''. May raise: the caller fails open."""
    if len(data) > MAX_INPUT:
        raise ValueError(f"hook input of {len(data)} bytes is too large to be a tool call")
    payload = jsonio.loads(data)
    if not isinstance(payload, dict):
        raise ValueError("hook input is not a JSON object")
    host = hosts.detect(payload, environ)
    if host not in GUARDED:
        return hosts.render(host, None)
    call = hosts.Call(payload, host)
    if not call.session_id:
        return ""
    settings = config.load(call.cwd, environ)
    if settings.off:
        return ""
    with ledger.Ledger(settings.state_dir, host, call.session_id) as book:
        return _decide(book, call, settings)


def _decide(book, call, settings):
    state = book.state
    if call.tool_use_id and call.tool_use_id in state["answers"]:
        return state["answers"][call.tool_use_id]  # the same call seen by a second install
    state["cwd"] = call.cwd or state["cwd"]
    if state.get("problems", []) != settings.problems:
        state["problems"] = settings.problems  # status.py shows them; fixed ones disappear
        for problem in settings.problems:
            log.append(settings.state_dir, "config", problem)
    if call.prompt_id and call.prompt_id != state["prompt"]:
        if state["prompt"] is not None:
            for record in state["agents"].values():
                ledger.reset_agent(record)  # a new prompt: the person decided to go on
            state["blocked"] = None
        state["prompt"] = call.prompt_id

    has_transcript = _reader(call.host).sync(book, call)
    daily = _daily_spend(state, call, settings)
    if state["off"]:
        return ""

    call_hash = fingerprint([call.tool, call.tool_input])
    control = controls.classify(call, settings.state_dir, settings.user_path)
    if control == controls.STATUS:
        decision = None
    elif control == controls.LOOSEN:
        decision = _loosen_decision(call)
    else:
        decision = _wires(book, call, call_hash, settings, daily)

    if control == controls.STATUS:
        pass  # a status call is invisible to the wires: it must not break a failure run or loop
    elif call.tool_use_id and has_transcript:
        book.call(call.agent, call.tool_use_id, call_hash)
    elif not has_transcript and not (decision and decision["kind"] in (hosts.DENY, hosts.STOP)):
        book.complete_unseen(call.agent, call_hash)

    if decision and decision["kind"] != hosts.TELL:
        asked = decision["kind"] == hosts.ASK and call.host == hosts.CLAUDE
        book.remember_refusal(call.agent, call.tool_use_id, asked)
        state["blocked"] = {
            "wire": decision["wire"],
            "agent": call.agent,
            "reason": decision.get("person") or decision["model"],
            "at": time.time(),
        }
    elif control != controls.STATUS:
        state["blocked"] = None
    answer = hosts.render(call.host, decision)
    if call.tool_use_id:
        answers = state["answers"]
        answers[call.tool_use_id] = answer
        while len(answers) > 64:
            del answers[next(iter(answers))]
    return answer


def _daily_spend(state, call, settings):
    """Every session's spend today; the shared daily file is touched only when it must be."""
    today = time.strftime("%Y-%m-%d")
    mine = state["spend"]["day"].get(today, 0)
    if state["daily_written"].get(today) != mine:
        state["daily_written"] = {today: mine}
        key = f"{call.host}:{call.session_id}"
        return ledger.daily_spend(settings.state_dir, today, key, mine)
    if settings.daily_usd > 0:
        return ledger.daily_spend(settings.state_dir, today)
    return mine


def _wires(book, call, call_hash, settings, daily):
    state = book.state
    record = book.agent(call.agent)
    spent = state["spend"]["total"]
    cap = state["cap_usd"] if state["cap_usd"] is not None else settings.max_usd
    status = status_command()
    team_rungs = []
    if settings.team:
        try:
            from . import team

            team_rungs = team.decisions(settings, state, call.tool)
        except Exception as error:  # the team's figures fail open; the local caps still hold
            log.append(settings.state_dir, "team", f"{type(error).__name__}: {error}")
    return wires.strongest(
        [
            *team_rungs,
            wires.failure_wire(record, settings.max_failures),
            wires.loop_wire(record, call_hash, settings.max_repeats),
            wires.spend_wire(
                spent,
                cap,
                settings.warn_at,
                state["warned"],
                "session",
                call.tool,
                f"{status} --raise-cap <USD>",
            ),
            wires.spend_wire(
                daily,
                settings.daily_usd,
                settings.warn_at,
                state["warned"],
                "daily",
                call.tool,
                "set RUNAWAY_GUARD_DAILY_USD or daily_usd in ~/.config/runaway-guard/config.json",
            ),
        ]
    )


def _loosen_decision(call):
    command = call.command or f"{status_command()} --raise-cap <USD>"
    return {
        "kind": hosts.ASK if call.host == hosts.CLAUDE else hosts.DENY,
        "wire": "control",
        "model": (
            "runaway-guard: only the user can loosen the guard's limits. Do not retry; ask the "
            f"user to run this in their own terminal if they want to: {command}"
        ),
        "person": (
            "runaway-guard: the agent wants to loosen the guard's limits with: "
            f"{command} — allow it only if you asked for this."
        ),
    }


def status_command():
    script = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "status.py")
    return f"python3 '{script}'"


class _KnownSession:
    """The reader's view of a session the guard already follows, outside a tool call."""

    def __init__(self, state, main):
        self.session_id = state["session_id"]
        self.transcript_path = main
        self.agent = "main"


def refresh(state_dir, host, session_id):
    """The session's state after reading what its host wrote since the guard's last call.

    The guard reads at tool calls, so it has not yet seen a run's final response, nor Claude
    Code's end-of-run cost record that settles a compaction estimate: a status asked right
    after a run reads them first, so it shows what the host itself would.
    """
    with ledger.Ledger(state_dir, host, session_id) as book:
        files = book.state["files"]
        main = next((p for p, e in files.items() if e.get("agent") == "main"), None)
        if main and host in GUARDED:
            _reader(host).sync(book, _KnownSession(book.state, main))
        return book.state
