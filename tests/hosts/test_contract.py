"""What every registered host must do: the contract in skill/runaway_guard/hosts/__init__.py.

A new host gets these checks by adding its module, its SIGNATURES row and its recorded payloads
(tests/fixtures/<host>/**/hook_inputs.jsonl).
"""

import json
import subprocess
import sys

import pytest
from guard_env import ROOT, SKILL, fuzz
from hypothesis import given
from hypothesis import strategies as st
from runaway_guard import hook, hosts
from runaway_guard.decisions import ASK, DENY, STOP, STRENGTH, TELL, fit

FIXTURES = ROOT / "tests" / "fixtures"
KINDS = (TELL, DENY, ASK, STOP)
# Each costs a call 0.3-1.3 ms (bench/README.md): os (runaway_guard.fs instead), zlib, fcntl;
# functools and collections 5 ms (OpenCode's _sqlite3 loads without them).
FORBIDDEN_ON_HOOK_PATH = (
    *("json", "re", "typing", "dataclasses", "pathlib", "importlib"),
    *("os", "_collections_abc", "zlib", "fcntl", "functools", "collections"),
    "runaway_guard.log",  # imported only when a call has a line to write
    "runaway_guard.unlisted_models",  # only for a model id the price table does not list
)


def recorded_payloads(name):
    found = []
    for path in sorted((FIXTURES / name).glob("**/hook_inputs.jsonl")):
        found += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return found


RECORDED = {name: recorded_payloads(name) for name in hosts.NAMES}
WITH_PAYLOADS = [name for name in hosts.NAMES if RECORDED[name]]


@pytest.mark.parametrize("name", hosts.NAMES)
def test_module_has_the_contract(name):
    host = hosts.load(name)
    assert name == host.NAME
    assert isinstance(host.LABEL, str) and host.LABEL
    assert isinstance(host.RUNGS, frozenset) and set(KINDS) >= host.RUNGS
    assert all(value in ("Bash", "Edit", "Write", "Agent", "Read") for value in host.TOOLS.values())
    for function in (host.call, host.render, host.sync):
        assert callable(function)
    if host.INSTALL is not None:
        assert RECORDED[name], f"{name} is installable but has no recorded hook payloads"


@pytest.mark.parametrize("name", WITH_PAYLOADS)
def test_recorded_payloads_are_detected_as_their_host_only(name):
    for payload in RECORDED[name]:
        assert hosts.detect(payload, {}) == name, payload


@pytest.mark.parametrize("name", hosts.NAMES)
def test_every_answer_is_empty_or_one_json_line(name):
    host = hosts.load(name)
    answers = [host.render(None)]
    for kind in KINDS:
        for person in ("", "runaway-guard: for the person"):
            decision = {
                "kind": kind,
                "wire": "loop",
                "model_text": "runaway-guard: x",
                "person_text": person,
            }
            fitted = fit(decision, host.RUNGS)
            assert fitted is None or fitted["kind"] in host.RUNGS
            assert fitted is None or STRENGTH[fitted["kind"]] <= STRENGTH[kind]
            answers.append(host.render(fitted))
    for answer in answers:
        assert "\n" not in answer
        assert answer == "" or isinstance(json.loads(answer), dict)


def test_fit_never_strengthens_and_keeps_what_the_host_can_say():
    decision = {"kind": ASK, "wire": "loop", "model_text": "m", "person_text": "p"}
    assert fit(decision, frozenset({TELL, DENY}))["kind"] == DENY
    assert fit(decision, frozenset({TELL, DENY, ASK}))["kind"] == ASK
    assert fit({"kind": TELL, "wire": "x", "model_text": "m"}, frozenset({DENY})) is None
    assert fit(None, frozenset(KINDS)) is None


@pytest.mark.parametrize("name", WITH_PAYLOADS)
def test_one_call_imports_only_its_own_host_module(name, tmp_path):
    """Every call pays for what it imports: its host's module and nothing it does not need."""
    payload = next(p for p in RECORDED[name] if hosts.load(name).call(p) is not None)
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "from runaway_guard import hook;"
        "environ = {'RUNAWAY_GUARD_STATE_DIR': sys.argv[2], 'HOME': sys.argv[3]};"
        "hook.run(sys.stdin.buffer.read(), environ);"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('runaway_guard.hosts.'))));"
        f"print(' '.join(sorted(set({FORBIDDEN_ON_HOOK_PATH!r}) & set(sys.modules))))"
    )
    out = subprocess.run(
        [
            sys.executable,
            "-I",
            "-S",
            "-c",
            code,
            str(SKILL),
            str(tmp_path / "state"),
            str(tmp_path),
        ],
        input=json.dumps(payload).encode(),
        capture_output=True,
        check=True,
    )
    host_modules, forbidden = out.stdout.decode().split("\n")[:2]
    # a host module may import the shared helpers (_files, _turns) and the modules of its own
    # package (hosts/<host>/), never another host
    helpers = {"runaway_guard.hosts._files", "runaway_guard.hosts._turns"}
    own = f"runaway_guard.hosts.{name}"
    loaded = {m for m in set(host_modules.split()) - helpers if not m.startswith(own + ".")}
    assert loaded == {own}
    assert not forbidden.split()


@pytest.mark.parametrize("name", [n for n in hosts.NAMES if hosts.load(n).INSTALL])
def test_install_facts_are_data_the_installer_reads(name):
    spec = hosts.load(name).INSTALL
    home = spec["home"]
    assert set(home) <= {"variable", "default", "subfolder"}
    assert all(isinstance(home[key], str) for key in home) and {"variable", "default"} <= set(home)
    for scope in ("user", "project"):
        assert set(spec[scope]) == {"settings", "skills"}
    assert spec["after_install"] and isinstance(spec["after_uninstall"], str)
    entry = spec["entry"]
    if entry["kind"] == "json-list":
        assert entry["events"] and isinstance(entry["grouped"], bool)
        assert "{command}" in json.dumps(entry["handler"])
    else:
        assert entry["kind"] == "owned-file"
        assert "template" in entry or "template_file" in entry
    # an empty matcher makes Copilot CLI reject a whole Claude settings file
    assert '"matcher": ""' not in json.dumps(entry)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=8,
)


@pytest.mark.parametrize("name", WITH_PAYLOADS)
def test_any_mangled_payload_gets_nothing_or_one_answer(name, tmp_path):
    """Whatever a host sends, the guard answers '' or one JSON object, as guard.py would
    print it: a failing call falls back to the host's neutral answer, never a traceback."""
    environ = {"RUNAWAY_GUARD_STATE_DIR": str(tmp_path / "state"), "HOME": str(tmp_path)}
    payloads = RECORDED[name]

    @fuzz(300)
    @given(
        base=st.sampled_from(payloads),
        changes=st.dictionaries(st.text(max_size=20), JSON_VALUES, max_size=4),
        keep=st.integers(0, 30),
    )
    def case(base, changes, keep):
        payload = {key: value for key, value in list(base.items())[: keep or None]}
        payload.update(changes)
        data = json.dumps(payload).encode()
        try:
            answer = hook.run(data, environ)
        except Exception:
            answer = hook.neutral(data, environ)
        finally:
            del hook._after[:]  # never end a process from a test
        assert "\n" not in answer
        assert answer == "" or isinstance(json.loads(answer), dict)

    case()
