"""The benchmark's session generators, one module per host as in skill/runaway_guard/hosts/
(_common.py: what they share). Importing a host's module registers its generators in
GENERATORS."""

from . import claude, codex, copilot, gemini, opencode, qwen  # noqa: F401 (they register)
from ._common import GENERATORS, date_subagents  # noqa: F401 (guard_bench's)
