"""Gemini CLI: BeforeTool, BeforeModel and BeforeAgent payloads, its answers, and the session
files in `~/.gemini/tmp/<project>/chats/`.

Seen on 0.61.0 (tests/fixtures/gemini/README.md):

- A session is `session-<time>-<id8>.jsonl`, appended to: a message is re-appended whole when it
  changes (its tool calls are added after they ran), `{"$set": {...}}` changes metadata and may
  replace the whole message list, `{"$rewindTo": id}` drops messages. Money spent stays spent:
  every response is priced once by message id, whatever a later line says of it. A subagent
  writes `chats/<session id>/<its own id>.jsonl`. Versions before about 0.35 wrote one whole
  `session-*.json` object instead, rewritten on every change.
- The hooks carry no tool-call id, and a subagent's calls reach them with the parent's session
  id: every outcome is read from the session files (the tool calls a message records, with
  their status and result) and booked to the agent the hooks see, "main". That also counts the
  calls that fail validation (unknown tool, missing parameter), which never reach a hook.
- A shell command that exits non-zero is a success for the CLI: the code is only in the result
  text (`Exit Code: N`).
- Answers: `decision: deny` refuses the call and the turn goes on; `continue: false` ends the
  run (in a subagent it ends only that call or that subagent: the parent's next model request
  is stopped then); BeforeModel `continue: false` ends the run before the request is sent.
  BeforeTool has no channel to the model but a refusal: a warning reaches the person only
  (`systemMessage`). `ask` hangs a headless run: never used.

The chat files are read in chats.py; results.py says what a tool call's result holds (and cuts
the long strings out of a line), legacy.py reads the whole session-*.json of old versions; this
module is the host's interface (hosts/__init__.py).
"""

from ... import fs, jsonio
from ...calls import MODEL, PROMPT, RESULT, Call, canonical, fingerprint, tool_name
from ...decisions import DENY, REFUSAL_PREFIX, STOP, TELL
from .._files import follow, followed, listed, read_all
from .chats import _Reader, _settle, _work_out
from .results import TOOLS, _stable, _text_status

NAME = "gemini"
LABEL = "Gemini CLI"
RUNGS = frozenset({TELL, DENY, STOP})
# TOOLS, the tool names in the guard's vocabulary, are in results.py: the reader names a call
# by them too.
EVENTS = ("BeforeTool", "BeforeModel", "BeforeAgent")
# The hooks carry no call id: a tool call's key is the guard's own (call()), which no file
# holds. Nothing waits for it (sync books every outcome), and looking for it in every line read
# cost a cold read a tenth of its time.
OWN_CALL_KEYS = True

INSTALL = {
    # GEMINI_CLI_HOME replaces the home folder: settings in $GEMINI_CLI_HOME/.gemini/.
    "home": {"variable": "GEMINI_CLI_HOME", "default": "", "subfolder": ".gemini"},
    "user": {"settings": "settings.json", "skills": "skills"},
    "project": {"settings": ".gemini/settings.json", "skills": ".gemini/skills"},
    "binaries": ("gemini",),
    "entry": {
        "kind": "json-list",
        "events": EVENTS,
        "grouped": True,
        # A group without a matcher runs for every tool; the timeout is in milliseconds.
        "handler": {
            "name": "runaway-guard",
            "type": "command",
            "command": "{command}",
            "timeout": 30000,
        },
    },
    "after_install": (
        "Gemini CLI: restart it so it loads the hooks (/hooks lists them). Hooks run only in "
        "trusted folders: trust the folder when asked, or a headless `gemini -p` outside one "
        "exits at once.",
    ),
    "after_install_project": (
        "Project hooks run only once the folder is trusted; the first run in {project} prints "
        "a warning that names the runaway-guard hook.",
    ),
    "after_uninstall": "Restart Gemini CLI so it drops the hooks.",
    # The repository is a Gemini CLI extension too (installer/manifests.py writes these files):
    # its hooks are hooks/hooks.json, at that fixed path (Claude Code reads the file as well and
    # ignores these events); ${extensionPath} is replaced by the installed folder (0.61.0). No
    # skill: an extension's skills are only read from skills/<name>/SKILL.md.
    "plugin": {
        "called": "extension",
        "manifests": {
            "gemini-extension.json": {
                "name": "{name}",
                "version": "{version}",
                "description": "{description}",
            },
            "hooks/hooks.json": {"hooks": "{hooks}"},
        },
        "root": "${extensionPath}",
        "folder": "extensions/{name}",
        "id": "{name}",
        "install": ("gemini extensions install {source}",),
        "uninstall": ("gemini extensions uninstall {id}",),
    },
}


def call(payload):
    event = payload.get("hook_event_name")
    common = {"transcript_path": payload.get("transcript_path"), "cwd": payload.get("cwd")}
    session = payload.get("session_id")
    if event == "BeforeTool":
        tool = tool_name(payload.get("tool_name"), TOOLS)
        tool_input = payload.get("tool_input")
        # No call id: every hook of one event gets the same payload, timestamp included, so a
        # guard installed in two scopes answers the second time as it did the first.
        stamp = payload.get("timestamp")
        key = "g" + fingerprint([stamp, tool, tool_input]) if isinstance(stamp, str) else None
        return Call(NAME, session, tool=tool, tool_input=tool_input, tool_use_id=key, **common)
    if event == "BeforeModel":
        request = payload.get("llm_request")
        model = request.get("model") if isinstance(request, dict) else None
        return Call(NAME, session, event=MODEL, model=model, **common)
    if event == "BeforeAgent":
        # Once per prompt of the person (subagents fire none): a new prompt resets the wires.
        prompt_id = fingerprint([payload.get("timestamp"), payload.get("prompt")])
        return Call(NAME, session, event=PROMPT, prompt_id=prompt_id, **common)
    if event == "AfterTool" and not common["transcript_path"]:
        # Not installed: the session file tells each outcome. Kept for a payload without one.
        response = payload.get("tool_response")
        response = response if isinstance(response, dict) else {}
        content = response.get("llmContent")
        text = content if isinstance(content, str) else canonical(content)
        status = "fail" if response.get("error") else _text_status(payload.get("tool_name"), text)
        return Call(
            NAME,
            session,
            event=RESULT,
            tool=tool_name(payload.get("tool_name"), TOOLS),
            failed=status == "fail",
            outcome=fingerprint(_stable(text)),
            **common,
        )
    return None


def render(decision):
    """A deny with its reason for the model, continue:false to end the run, systemMessage for
    the person. The same answer serves BeforeTool, BeforeModel and BeforeAgent."""
    if not decision:
        return ""
    person = decision.get("person_text") or ""
    reason = decision.get("model_text") or person
    if decision["kind"] == TELL:
        return jsonio.dumps({"systemMessage": person or reason}) if reason else ""
    answer = {"decision": "deny", "reason": reason or REFUSAL_PREFIX}
    if decision["kind"] == STOP:
        answer.update({"continue": False, "stopReason": answer["reason"]})
    if person:
        answer["systemMessage"] = person
    return jsonio.dumps(answer)


def sync(book, call):
    """Bring the book up to date with the session's files; False when there is none."""
    path = call.transcript_path
    if not path or not call.session_id:
        return False
    # the calls every file read books, in order: their outcomes are worked out together (_work_out)
    finished = []
    if path.endswith(".json"):
        from .legacy import _read_whole

        _read_whole(book, path, finished)  # a version that rewrote one whole session-*.json
    else:
        _follow(book, path, "main")
    folder = fs.join(fs.dirname(path), call.session_id)
    for name in sorted(listed(book, folder) or ()):
        if name.endswith(".jsonl"):
            _follow(book, fs.join(folder, name), name[: -len(".jsonl")])
    read_all(book, path, lambda entry: _Reader(book, entry, finished), _agent)
    _work_out(book, finished)
    _settle(book)
    return True


def _follow(book, path, agent):
    if not followed(book, path):
        if book.state["spend"]["total"]:
            # A new file may repeat responses counted from another one (a resumed legacy
            # session copies every message): the whole ledger decides what is new.
            book.load_known()
        follow(book, path, {"agent": agent})


def _agent(path):
    """The agent a subagent's file is named for (_follow)."""
    return fs.basename(path)[: -len(".jsonl")]
