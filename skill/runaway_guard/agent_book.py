"""The per-agent call and outcome book: the calls each agent made, waiting for their outcome,
and the outcomes the wires judge from (the Ledger's part that the wires read). Each function
taking self is a method of ledger.Ledger, which binds it (self is the Ledger: its state["agents"]
and state["denied"], and the pending calls' owners its __init__ and _load set up)."""

HIST = 24  # the finished calls an agent's wires keep (their loops' window)


def agent(self, name):
    agents = self.state["agents"]
    record = agents.get(name)
    if record is None:
        record = agents[name] = {"fails": 0, "hist": [], "pending": [], "ref": {}, "asked": []}
    return record


def expecting(self):
    """Whether any call still waits for its outcome (a test that costs no scan of a line)."""
    return bool(self._pending_owner)


def waiting_for(self, raw):
    """Whether a raw line may hold the outcome of a call the wires are waiting for."""
    return any(tool_use_id.encode() in raw for tool_use_id in self._pending_owner)


def waited(self):
    """The ids of the calls still waiting for their outcome, to look for in a host's rows."""
    return list(self._pending_owner)


def call(self, agent, tool_use_id, call_hash):
    """Remember a call until its outcome shows up in the transcript."""
    record = self.agent(agent)
    if any(pending_hash == call_hash for _, pending_hash in record["pending"]):
        return False  # a parallel copy of a call still running: counted once
    record["pending"].append([tool_use_id, call_hash])
    self._pending_owner[tool_use_id] = agent
    del record["pending"][:-64]
    return True


def result(self, tool_use_id, status, outcome):
    """An outcome read from a transcript: 'ok', 'fail', 'reset' (a person stepped in) or
    'guard' (a refusal by this guard, possibly installed twice)."""
    agent = self._pending_owner.pop(tool_use_id, None)
    if agent is None:
        return
    record = self.state["agents"][agent]
    call_hash = None
    for index, (pending_id, pending_hash) in enumerate(record["pending"]):
        if pending_id == tool_use_id:
            call_hash = pending_hash
            del record["pending"][index]
            break
    if status == "guard" or tool_use_id in self.state["denied"]:
        return  # the guard's own refusal: the call never ran
    if tool_use_id in record["asked"]:
        record["asked"].remove(tool_use_id)
        reset_agent(record)  # the person approved a call the guard asked about
    if status == "reset":
        reset_agent(record)
        return
    record["fails"] = record["fails"] + 1 if status == "fail" else 0
    record["hist"].append([call_hash, outcome])
    del record["hist"][:-HIST]


def outcome(self, agent, tool_use_id, failed, outcome):
    """An outcome a post-tool hook reported (the host's files show it late, or never)."""
    if tool_use_id:
        reported = self.state.setdefault("reported", [])
        if tool_use_id in reported:
            return  # the same outcome reported through a second install
        reported.append(tool_use_id)
        del reported[:-64]
    if tool_use_id in self._pending_owner:
        self.result(tool_use_id, "fail" if failed else "ok", outcome)
        return
    if tool_use_id in self.state["denied"]:
        return  # the guard's own refusal: the call never ran
    record = self.agent(agent)
    hist = record["hist"]
    if hist and hist[-1][1] is None:
        hist[-1][1] = outcome
    record["fails"] = record["fails"] + 1 if failed else 0


def complete_unseen(self, agent, call_hash):
    """With no transcript to read, a call is its own outcome: the loop wire still works."""
    record = self.agent(agent)
    record["hist"].append([call_hash, None])
    del record["hist"][:-HIST]


def remember_refusal(self, agent, tool_use_id, asked):
    """A call the guard refused never ran; one it asked about ran only if the person agreed."""
    if not tool_use_id:
        return
    if asked:
        asked_ids = self.agent(agent)["asked"]
        asked_ids.append(tool_use_id)
        del asked_ids[:-16]
    else:
        denied = self.state["denied"]
        denied.append(tool_use_id)
        del denied[:-256]


def reset_agent(record):
    record["fails"] = 0
    record["hist"] = []
    record["ref"] = {}
