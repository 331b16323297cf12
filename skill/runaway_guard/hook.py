"""One hook call through the guard: read what is new, update the ledger, decide, answer.

payload → the host's module → config → lock the session → read the session files' new bytes →
ledger → wires → write state → the host's answer (or nothing). No host is named here: what
differs between hosts is in hosts/<name>.py.
"""

import sys
import time

from . import (
    agent_book,
    config,
    control_words,
    controls,
    day_totals,
    estimate,
    fs,
    hosts,
    jsonio,
    ledger,
    projects,
    wires,
)
from .calls import END, MODEL, PROMPT, RESULT, TOOL, fingerprint
from .decisions import ASK, DENY, STOP, TELL, TWICE, fit
from .money import raised_cap

MAX_INPUT = 16 << 20
# How long a call may wait for its host to write it: 0.15 s (Claude Code flushes every 100 ms)
# until the session has once shown a call of its own on disk, 0.5 s after; and after how many
# waits in a row that found nothing a session stops waiting (1 until then, 3 after).
CATCH_UP_S = {False: 0.15, True: 0.5}
CATCH_UP_MISSES = {False: 1, True: 3}
CATCH_UP_STEP_S = 0.01

DAY_FILE_EVERY_S = 30  # no daily cap: this session's share of the day file at most this often
INTERRUPT_EVERY_S = 10  # at most one out-of-band end of a session's run in this time

_after = []  # what finish() does once the answer is out: the host's end_run
_unsaid = []  # a decision the host's answers could not give as it was: still the person's news


def main():
    """The hook process (guard.py): the answer to stdin's payload on stdout, then an
    out-of-band stop if one is due, then exit 0 without the interpreter's teardown."""
    answer, answered = respond(lambda: sys.stdin.buffer.read(MAX_INPUT + 1))
    if answer:
        try:
            sys.stdout.write(answer + "\n")
            sys.stdout.flush()
        except BaseException:
            pass
    if answered:  # failing open, no out-of-band stop either
        try:
            finish()
        except BaseException:
            pass
    fs._exit(0)


class UnreadableInput(ValueError):
    """A payload that is no hook call: too large, not JSON, not an object. Input, not a bug of
    the guard's: logged as `ignored`, and answered as the host lets a call through."""


def respond(read):
    """(the answer line for the payload read() gives, or '', whether it was worked out).
    Whatever happens it is nothing or one valid answer; the guard's own errors go to hook.log
    as a `fail-open` line, never into a blocked call."""
    data = b""
    try:
        data = read()
        return run(data, fs.environ), True
    except BaseException as error:
        answer = ""
        try:
            answer = neutral(data, fs.environ)  # Cursor blocks a call left unanswered
            kind = "ignored" if isinstance(error, UnreadableInput) else "fail-open"
            _log(config.load(None).state_dir, kind, f"{type(error).__name__}: {error}")
        except BaseException:
            pass
        return answer, False


def _log(state_dir, kind, text):
    """A line in hook.log; the log module is imported only when there is one to write."""
    from . import log

    log.append(state_dir, kind, text)


def run(data, environ):
    """The answer line for one hook payload (bytes), or ''. May raise: the caller fails open."""
    del _after[:], _unsaid[:]
    if len(data) > MAX_INPUT:
        raise UnreadableInput(f"hook input over {MAX_INPUT} bytes is too large to judge")
    try:
        payload = jsonio.loads(data)
    except ValueError as error:  # UnicodeDecodeError too
        raise UnreadableInput(f"hook input is not JSON ({error})") from None
    if not isinstance(payload, dict):
        raise UnreadableInput("hook input is not a JSON object")
    host = hosts.load(hosts.detect(payload, environ))
    call = host.call(payload)
    if call is None or not call.session_id:
        return host.render(None)
    settings = config.load(call.cwd, environ)
    if settings.off:
        return host.render(None)
    end_run = getattr(host, "end_run", None) if settings.interrupt else None
    book = ledger.Ledger(settings.state_dir, call.host, call.session_id, unsaved_ok=True)
    with book:
        decision = _decide(book, call, settings=settings, host=host)
        answer = host.render(decision)
        if end_run and decision and decision["kind"] == STOP and _first_stop(book.state):
            _after.append((end_run, call, environ, settings.state_dir))
        if decision or _unsaid:  # rare: a warning, a refusal, a note
            _notice(book.state, [decision, *_unsaid], call=call, settings=settings, environ=environ)
    if book.unsaved is not None:  # decided all the same: a refusal is given
        _log(settings.state_dir, "unsaved", f"{call.host} {call.session_id}: {book.unsaved}")
    return answer


def finish():
    """Once the answer is printed and the state saved: end the run out of band where this
    call's decision was to end it and the host's answers cannot (the host's end_run; the host
    may end this process too). Fails open like the rest."""
    while _after:
        end_run, call, environ, state_dir = _after.pop()
        try:
            end_run(call, environ, lambda text, into=state_dir: _log(into, "stop", text))
        except Exception as error:
            _log(state_dir, "fail-open", f"end_run: {type(error).__name__}: {error}")


def _notice(state, decisions, call, settings, environ):
    """Tell the person of a warning or a stop, once per session and event (notify.py): its
    sender starts once the answer is out, before an end_run that may end this process."""
    from . import notify

    for decision in decisions:
        news = decision and notify.due(state, decision)
        if news:
            _after.append(
                (
                    lambda call, environ, _say, news=news, decision=decision: notify.send(
                        news, decision, call=call, settings=settings, environ=environ
                    ),
                    call,
                    environ,
                    settings.state_dir,
                )
            )


def _first_stop(state):
    """Whether no end_run went out in the last few seconds: parallel calls stopped at once (or
    one call seen by two installs) end the run once (a second Esc in Codex's TUI would open its
    message editor)."""
    now = time.time()
    if 0 <= now - state.get("interrupted", 0) < INTERRUPT_EVERY_S:
        return False
    state["interrupted"] = now
    return True


def neutral(data, environ):
    """The answer that lets a call through unchanged, for when the guard failed: '' for most
    hosts, an explicit allow for one that blocks a call its hook leaves unanswered (Cursor)."""
    try:
        try:
            payload = jsonio.loads(data)
        except ValueError:  # only its bytes tell who sent it; Cursor names itself in them
            found = b'"cursor_version"' in data or b'"conversation_id"' in data
            payload = {"cursor_version": ""} if found else {}
        if not isinstance(payload, dict):
            payload = {}
        host = hosts.load(hosts.detect(payload, environ))
        try:
            host.call(payload)  # a host may answer differently per event
        except Exception:
            pass
        return host.render(None)
    except Exception:
        return ""


def _decide(book, call, settings, host):
    """The decision for this call (None: nothing to say), already fitted to the host's rungs."""
    state = book.state
    if call.event == TOOL and call.tool_use_id and call.tool_use_id in state["answers"]:
        return _again(state, call, settings=settings, host=host)
    state["cwd"] = call.cwd or state["cwd"]
    if state.get("problems", []) != settings.problems:
        state["problems"] = settings.problems  # status.py shows them; fixed ones disappear
        for problem in settings.problems:
            _log(settings.state_dir, "config", problem)
    _new_prompt(state, call)
    known_id = call.tool_use_id
    if call.event == TOOL and _file_id(call, host):
        book.watch = b'"' + known_id.encode("utf-8", "replace") + b'"'
    has_transcript = host.sync(book, call)
    if book.watch and has_transcript and getattr(host, "WRITES_CALLS", False):
        _catch_up(book, call, host)
    # A host whose payload has no call id (Copilot) learns it from its session files.
    if call.tool_use_id != known_id and call.tool_use_id in state["answers"]:
        return _again(state, call, settings=settings, host=host)
    _new_prompt(state, call)  # again: a host may learn the prompt from its files (Copilot)
    daily = _daily_spend(state, call, settings)
    projects.track(state, call, settings)
    if state["off"]:
        return None
    if call.event == RESULT:
        book.outcome(call.agent, call.tool_use_id, call.failed, call.outcome)
        return None
    if call.event in (MODEL, PROMPT, END):  # END: a turn that would go on ends within the cap
        decision = fit(_before_model(state, settings, daily=daily, agent=call.agent), host.RUNGS)
        if decision and decision["kind"] == STOP and not state["blocked"]:
            # a cap first seen here (the response's record came late): status.py says why
            state["blocked"] = _blocked(decision, call)
        return decision

    call_hash = fingerprint([call.tool, call.tool_input])
    control = controls.classify(call, settings.state_dir, settings.user_path)
    if control == control_words.STATUS:
        decision = None
    elif control == control_words.LOOSEN:
        decision = fit(_loosen_decision(call), host.RUNGS)
    else:
        found = _wires(book, call, call_hash=call_hash, settings=settings, daily=daily)
        decision = fit(found, host.RUNGS)
        if found is not decision:  # a warning Qwen cannot pass on, an end Cursor cannot make
            _unsaid.append(found)

    if control == control_words.STATUS:
        pass  # a status call is invisible to the wires: it must not break a failure run or loop
    elif _file_id(call, host) and has_transcript:
        book.call(call.agent, call.tool_use_id, call_hash)
    elif not has_transcript and not (decision and decision["kind"] in (DENY, STOP)):
        book.complete_unseen(call.agent, call_hash)

    if decision and decision["kind"] != TELL:
        book.remember_refusal(call.agent, _file_id(call, host), decision["kind"] == ASK)
        state["blocked"] = _blocked(decision, call)
    elif control != control_words.STATUS:
        state["blocked"] = None
    if call.tool_use_id:
        answers = state["answers"]
        answers[call.tool_use_id] = decision
        while len(answers) > 64:
            del answers[next(iter(answers))]
    return decision


def _file_id(call, host):
    """The call's id as the host's session files show it (what the book waits for, watches for
    and remembers refusals by); None for a key of the guard's own (OWN_CALL_KEYS), which no
    file shows: a call kept waiting for it would wait in the state for good."""
    return None if getattr(host, "OWN_CALL_KEYS", False) else call.tool_use_id


def _catch_up(book, call, host):
    """Judge a call only once the host's files show what came before it.

    A host writes its session files a little late (Claude Code every 100 ms): a model that
    answers faster than that makes its next call before the previous outcome and response are
    on disk, and the wires would judge it blind. A host that writes each call before it runs
    the hook (WRITES_CALLS) writes in order: once this very call is on disk, everything before
    it is too. So when an outcome this agent's judgement needs is still missing and this call
    is not written yet, wait for it, briefly. A slower model's calls find everything written
    and never wait; a session that keeps finding nothing stops waiting (after one short wait
    if none of its calls was ever found on disk).
    """
    state = book.state
    if book.watched:
        state["writes"] = True
        return
    known = bool(state.get("writes"))
    misses = state.get("late", 0)
    if misses >= CATCH_UP_MISSES[known] or not book.agent(call.agent)["pending"]:
        return
    deadline = time.monotonic() + CATCH_UP_S[known]
    while not book.watched and time.monotonic() < deadline:
        time.sleep(CATCH_UP_STEP_S)
        host.sync(book, call)
    if book.watched:
        state["writes"] = True
    state["late"] = 0 if book.watched else misses + 1


def _blocked(decision, call):
    return {
        "wire": decision["wire"],
        "kind": decision["kind"],
        "agent": call.agent,
        "reason": decision.get("person_text") or decision["model_text"],
        "at": time.time(),
    }


def _new_prompt(state, call):
    if call.prompt_id and call.prompt_id != state["prompt"]:
        if state["prompt"] is not None:
            for record in state["agents"].values():
                agent_book.reset_agent(record)  # a new prompt: the person decided to go on
            state["blocked"] = None
        state["prompt"] = call.prompt_id
        state["prompt_at"] = time.time()  # time_limits: the autonomy clock starts again


def _again(state, call, settings, host):
    """The same call through a second install of the guard (user and project scope, a plugin
    and the installer's hook): the host honours both answers, so a refusal is given again and a
    note is not; the person is told once per session that two hooks run (status shows it)."""
    seen = state["answers"][call.tool_use_id]
    if not state.get("twice"):
        state["twice"] = True
        _log(settings.state_dir, "twice", f"{call.host} {call.session_id}: {TWICE}")
        if not seen or seen["kind"] == TELL:
            return fit(
                {"kind": TELL, "wire": "setup", "model_text": "", "person_text": TWICE}, host.RUNGS
            )
    return seen if isinstance(seen, dict) and seen["kind"] != TELL else None


def _before_model(state, settings, daily, agent):
    """Before a paid model request: stop the run if a cap is reached, would be crossed by the
    request, or the guard ended it."""
    blocked = state["blocked"]
    if blocked and blocked.get("kind") == STOP:
        return {"kind": STOP, "wire": blocked["wire"], "model_text": blocked["reason"]}
    caps = _spend_wires(state, settings, daily=daily, tool="", warned={}, agent=agent)
    return wires.strongest([cap for cap in caps if cap and cap["kind"] == STOP])


def _daily_spend(state, call, settings):
    """Every session's spend today, from the shared day file.

    A daily cap needs every session's share there exact, so then this session's is written
    whenever it changes. Without one the file only lists the day's sessions for `status
    --today`, which reads each session's own total (day_totals.day_shares): it is written when
    the session first spends that day and then at most every DAY_FILE_EVERY_S seconds, which
    saves most calls a locked read, write and rename (0.5 ms)."""
    today = time.strftime("%Y-%m-%d")
    # on a plan no money is paid per token: the session adds nothing to the day's paid spend
    mine = 0 if state.get("host") in settings.plan else state["spend"]["day"].get(today, 0)
    written = state["daily_written"]
    now = time.time()
    if written.get(today) != mine and (
        settings.daily_usd > 0
        or today not in written
        or not 0 <= now - written.get("at", 0) < DAY_FILE_EVERY_S
    ):
        key = f"{call.host}:{call.session_id}"
        try:
            daily = day_totals.daily_spend(
                settings.state_dir, today, session_key=key, session_picodollars=mine
            )
        except (OSError, TimeoutError) as error:  # judged all the same; written next call
            _log(settings.state_dir, "unsaved", f"the day file: {error}")
            return day_totals.daily_spend(
                settings.state_dir, today, session_key=key, session_picodollars=mine, write=False
            )
        state["daily_written"] = {today: mine, "at": now}
        return daily
    if settings.daily_usd > 0:
        return day_totals.daily_spend(settings.state_dir, today)
    return mine


def _spend_wires(state, settings, daily, tool, warned, agent, unseen=False):
    """The spend caps' rungs, each against the spend plus the agent's next request (and the
    one making this call when unseen: the host has not written it yet)."""
    raised = raised_cap(state["cap_usd"])  # an earlier version's may be any number
    cap = raised if raised is not None else settings.max_usd
    status = controls.status_command()
    ahead = estimate.next_cost(state, agent) * (2 if unseen else 1)
    # on a plan (plans.py) no money is paid per token: the session's dollar cap does not apply
    on_plan = state.get("host") in settings.plan
    paid, paid_ahead = (0, 0) if on_plan else (state["spend"]["total"], ahead)
    return [
        _window_wire(state, settings, tool=tool, warned=warned)
        if settings.max_window_share
        else None,
        wires.spend_wire(
            paid,
            cap,
            warn_at=settings.warn_at,
            warned=warned,
            scope="session",
            tool=tool,
            how_to_raise=f"{status} --raise-cap <USD>",
            ahead=paid_ahead,
        ),
        wires.spend_wire(
            daily,
            settings.daily_usd,
            warn_at=settings.warn_at,
            warned=warned,
            scope="daily",
            tool=tool,
            how_to_raise=(
                "set RUNAWAY_GUARD_DAILY_USD or daily_usd in ~/.config/runaway-guard/config.json"
            ),
            ahead=paid_ahead,
        ),
        *(
            _team_wires(state, settings, tool=tool, warned=warned, ahead=ahead)
            if settings.team
            else ()
        ),
        *projects.cap_wires(state, settings, tool=tool, warned=warned, ahead=ahead),
        *_time_wires(state, settings, tool=tool, warned=warned),
        *_text_loop_wires(state, settings.max_repeats),
    ]


def _time_wires(state, settings, tool, warned):
    """The time limits' decisions (time_limits.py), loaded only where a limit is set."""
    if settings.max_session_hours <= 0 and settings.max_autonomous_minutes <= 0:
        return []
    from . import time_limits

    return time_limits.wires(state, settings, tool, warned)


def _text_loop_wires(state, limit):
    """The loop of answers without tool calls (text_loops.py), loaded only where a host's
    reader counted one."""
    if not state.get("text_loops"):
        return []
    from . import text_loops

    return text_loops.wires(state, limit)


def _window_wire(state, settings, tool, warned):
    from . import plans

    return plans.window_wire(state, settings, tool=tool, warned=warned, now=time.time())


def _team_wires(state, settings, tool, warned, ahead):
    """The team's and the person's caps (team.py); its errors fail open, the local caps hold."""
    try:
        from . import team

        return team.decisions(settings, state, tool=tool, warned=warned, ahead=ahead)
    except Exception as error:
        _log(settings.state_dir, "team", f"{type(error).__name__}: {error}")
        return []


def _wires(book, call, call_hash, settings, daily):
    record = book.agent(call.agent)
    return wires.strongest(
        [
            wires.failure_wire(record, settings.max_failures),
            wires.loop_wire(record, call_hash, settings.max_repeats),
            *_spend_wires(
                book.state,
                settings,
                daily=daily,
                tool=call.tool,
                warned=book.state["warned"],
                agent=call.agent,
                unseen=book.watch is not None and not book.watched,
            ),
        ]
    )


def _loosen_decision(call):
    command = controls.describe(call)
    how = "run this in their own terminal" if call.command else "make this change themselves"
    return {
        "kind": ASK,
        "wire": "control",
        "model_text": (
            "runaway-guard: only the user can loosen the guard's limits. Do not retry; ask the "
            f"user to {how} if they want to: {command}"
        ),
        "person_text": (
            "runaway-guard: the agent wants to loosen the guard's limits with: "
            f"{command} — allow it only if you asked for this."
        ),
    }
