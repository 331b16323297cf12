"""pytest fixtures shared by the unit tests; the helpers themselves live in guard_env.py."""

import pytest
from guard_env import GuardEnv


@pytest.fixture
def guard_env(tmp_path):
    return GuardEnv(tmp_path)
