"""pytest fixtures shared by the unit tests; the helpers themselves live in guard_env.py."""

import json

import pytest
from guard_env import GuardEnv
from runaway_guard import ledger, state_schema


@pytest.fixture
def guard_env(tmp_path):
    return GuardEnv(tmp_path)


@pytest.fixture(autouse=True)
def states_hold_json_data(monkeypatch):
    """Every state a test's calls save holds JSON's kinds of data only: it is written with
    marshal, which would keep a tuple, a set or a number as a key where JSON would not. And it
    keeps to the state's schema (state_schema.py): a key it does not name fails the test."""
    write = ledger.write_state

    def checked(path, state, *where):
        assert json.loads(json.dumps(state)) == state, "a state holds more than JSON data"
        assert not state_schema.unnamed(state), state_schema.unnamed(state)
        write(path, state, *where)

    monkeypatch.setattr(ledger, "write_state", checked)
