"""The session state's schema (state_schema.py) and the skill's import graph.

Every state a test saves is checked against the schema by tests/conftest.py; these tests show
that check fails on a key the schema does not name, keep the schema itself honest, and keep
the skill's modules free of import cycles."""

import ast
import importlib

import pytest
from guard_env import ROOT
from runaway_guard import ledger, state_schema

SKILL = ROOT / "skill"
PACKAGE = SKILL / "runaway_guard"
SHAPES = [
    state_schema.STATE,
    state_schema.AGENT,
    state_schema.FILE,
    *state_schema.NESTED.values(),
]


def test_a_saved_state_with_a_key_the_schema_does_not_name_fails(tmp_path):
    with ledger.Ledger(str(tmp_path), "claude", "s1") as book:
        book.agent("main")
        book.usage(
            "r1", "main", "m", picodollars=10**9, known_model=True, output=5, day="2026-12-01"
        )
    assert not state_schema.unnamed(book.state)
    for where in ("top", "agent", "nested"):
        book = ledger.Ledger(str(tmp_path), "claude", "s1")
        with pytest.raises(AssertionError, match="nope"), book:
            {
                "top": book.state,
                "agent": book.agent("main"),
                "nested": book.state["spend"],
            }[where]["nope"] = 1


def test_a_key_of_another_type_is_named_as_such():
    state = ledger.new_state("claude", "s1")
    assert not state_schema.unnamed(state)
    state.update(off=1, cap_usd=True, seen="now")
    state["spend"]["total"] = 1.5
    assert sorted(problem.split(":")[0] for problem in state_schema.unnamed(state)) == [
        "cap_usd",
        "off",
        "seen",
        "spend.total",
    ]


def test_a_followed_files_entry_is_a_dict_whose_cursor_keys_are_typed():
    """One form of a followed file's entry (hosts/_files.entries): a dict; its cursor's keys
    typed, the rest its host's reader's own. The packed list of the version before fails."""
    state = ledger.new_state("claude", "s1")
    state["files"] = {
        "/t/main.jsonl": {"agent": "main", "off": 10, "ino": 3, "ver": "2.1.3"},
        "/t/agent-a.jsonl": {"agent": "a", "off": "10", "ino": 3.0, "calls": []},
        "/t/agent-b.jsonl": [10, 3, "{}"],
    }
    assert sorted(problem.split(":")[0] for problem in state_schema.unnamed(state)) == [
        "files['/t/agent-a.jsonl'].ino",
        "files['/t/agent-a.jsonl'].off",
        "files['/t/agent-b.jsonl']",
    ]


def test_every_key_has_a_type_an_owner_that_exists_and_a_reason():
    for shape in SHAPES:
        for key, (kinds, owner, why) in shape.items():
            assert all(
                kind in (dict, list, str, int, float, bool, type(None))
                for kind in (kinds if isinstance(kinds, tuple) else (kinds,))
            ), key
            assert (PACKAGE / f"{owner}.py").exists() or (PACKAGE / owner).is_dir(), key
            assert len(why) > 10, key


def skill_modules():
    """Each module of the skill: its dotted name and its file."""
    for path in sorted(SKILL.rglob("*.py")):
        parts = path.relative_to(SKILL).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        yield ".".join(parts), path


def imports_of(name, path, known):
    """The skill's modules that module name imports, at its top or inside a function."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            base = f"{base}.{node.module}" if node.level and node.module else node.module or base
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
    return {module for module in found if module in known and module != name}


# Cycles left in modules other work on at the same time (issue 29): each to break, then to
# drop from here (the test fails once one is gone, so that none comes back).
KNOWN_CYCLES = [
    # the package loads self_check.py (beside guard.py) to say why it cannot run, and
    # self_check imports the package to check it
    {"runaway_guard", "self_check"},
]


def import_cycles(graph):
    """The groups of modules that import each other, directly or through others (Tarjan's
    strongly connected components of more than one module)."""
    order, low, stack, cycles = {}, {}, [], []

    def visit(name):
        order[name] = low[name] = len(order)
        stack.append(name)
        for imported in graph[name]:
            if imported not in order:
                visit(imported)
                low[name] = min(low[name], low[imported])
            elif imported in stack:
                low[name] = min(low[name], order[imported])
        if low[name] == order[name]:
            group = set()
            while name not in group:
                group.add(stack.pop())
            if len(group) > 1:
                cycles.append(group)

    for name in sorted(graph):
        if name not in order:
            visit(name)
    return cycles


def test_no_module_of_the_skill_is_in_an_import_cycle():
    """Imports inside functions count: they run too. A module's import of its own package does
    not: the package is imported before any of its modules."""
    modules = dict(skill_modules())
    for name in modules:
        if name.startswith("runaway_guard"):  # skill/*.py are scripts: they would run
            importlib.import_module(name)
    graph = {
        name: {module for module in imports_of(name, path, modules) if not name.startswith(module)}
        for name, path in modules.items()
    }
    assert graph["runaway_guard.prune"] == {"runaway_guard.fs", "runaway_guard.state_file"}
    cycles = import_cycles(graph)
    assert [cycle for cycle in cycles if cycle not in KNOWN_CYCLES] == []
    assert [cycle for cycle in KNOWN_CYCLES if cycle not in cycles] == []


def test_the_schema_is_imported_by_no_module_of_the_skill():
    """It is data for the tests: a module on the hook's path would cost every call."""
    modules = dict(skill_modules())
    assert not [
        name
        for name, path in modules.items()
        if "runaway_guard.state_schema" in imports_of(name, path, modules)
    ]


def test_every_key_new_state_makes_is_named():
    assert set(ledger.new_state("claude", "s1")) <= set(state_schema.STATE)
