"""The package's layers: no module imports upward (every ``import`` statement, read with ``ast``).

* The lower layer - top-level ``helpers/*.py`` that notebooks 01-07 build and every module uses - imports
  nothing from ``helpers.memory``, ``helpers.facts``, ``helpers.sessions`` or ``helpers.standin``. The front
  ends of notebook 11 (``ui.py``, ``cli.py``, ``__main__.py``) and the assistant of notebook 12 that they share
  (``assistant.py``) sit at the top, on sessions, facts and memory, and are not part of it. ``client.py`` may reach the offline stand-in through ``helpers.standin.server``:
  that is how notebook 01 talks to it without a key.
* ``helpers.memory``, ``helpers.facts`` and ``helpers.sessions`` do not import ``helpers.standin``: the
  stand-in is a server they talk to through the client, never a library they call.
* ``helpers.standin``, which ``client.py`` starts, imports nothing from those three either: of the
  package it imports only itself and the lower layer. What both sides must agree on - the text formats of
  the blocks in a system message, the task markers, the profile rules - lives in that lower layer
  (``helpers/context_format.py``, ``helpers/profile_rules.py``), so each is written and read in one place.
* No module imports itself back through others: the import graph has no cycle (imports needed only
  for annotations, under ``if TYPE_CHECKING:``, do not count).
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HELPERS = ROOT / "helpers"
UPPER = ("helpers.memory", "helpers.facts", "helpers.sessions")
FRONT_ENDS = {"ui.py", "cli.py", "__main__.py", "assistant.py"}  # notebooks 11-12: the top, built on the rest
ALLOWED = {("helpers/client.py", "helpers.standin.server"):
           "the offline client: notebook 01 reaches the stand-in through it"}


def _type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")


def _nodes(tree: ast.AST, runtime: bool):
    for node in ast.iter_child_nodes(tree):
        if runtime and _type_checking(node):
            yield from (n for child in node.orelse for n in [child, *_nodes(child, runtime)])
            continue
        yield node
        yield from _nodes(node, runtime)


def imported(path: Path, *, runtime: bool = False) -> set[str]:
    """Every module ``path`` imports (absolute names, relative imports resolved, ``from m import name`` as ``m``
    unless ``name`` is a module itself), at any depth in the file (``runtime``: not under ``if TYPE_CHECKING:``)."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    names = set()
    for node in _nodes(ast.parse(path.read_text(encoding="utf-8")), runtime):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            names |= {f"{base}.{alias.name}" for alias in node.names}  # "from helpers import memory" too
    return {_module_of(name) for name in names}


def under(name: str, packages: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def violations() -> set[tuple[str, str]]:
    found = set()

    def check(files, forbidden):
        for path in files:
            for module in imported(path):
                if under(module, forbidden):
                    found.add((str(path.relative_to(ROOT)), module))

    check([p for p in HELPERS.glob("*.py") if p.name not in FRONT_ENDS], (*UPPER, "helpers.standin"))
    check([p for package in ("memory", "facts", "sessions") for p in (HELPERS / package).rglob("*.py")],
          ("helpers.standin",))
    check(list((HELPERS / "standin").rglob("*.py")), UPPER)
    return found - set(ALLOWED)


def _module_of(name: str) -> str:
    """The module an imported name belongs to (``helpers.x.y.Name`` -> ``helpers.x.y`` when that is a file)."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ROOT.joinpath(*parts[:end])
        if candidate.with_suffix(".py").is_file() or (candidate / "__init__.py").is_file():
            return ".".join(parts[:end])
    return name


def test_no_module_imports_upward():
    found = violations()
    assert not found, "upward imports: " + ", ".join(f"{f} -> {m}" for f, m in sorted(found))


@pytest.mark.parametrize("case", [
    ("helpers/standin/tasks.py", "helpers.memory.summary_format"),
    ("helpers/memory/profile_extraction.py", "helpers.standin.tasks"),
    ("helpers/memory/evaluation.py", "helpers.standin.server"),
], ids=lambda case: f"{case[0]}->{case[1]}")
def test_the_upward_imports_this_change_removed_stay_removed(case):
    assert case not in violations()


def test_the_stand_in_imports_only_itself_and_the_lower_layer():
    lower = {f"helpers.{p.stem}" for p in HELPERS.glob("*.py") if p.name not in FRONT_ENDS | {"__init__.py"}}
    for path in (HELPERS / "standin").rglob("*.py"):
        outside = {m for m in imported(path) if under(m, ("helpers",)) and not under(m, ("helpers.standin",))}
        assert outside <= lower, f"{path.relative_to(ROOT)} imports {sorted(outside - lower)}"


def import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports at run time (any depth, not under ``if TYPE_CHECKING:``)."""
    graph = {}
    for path in HELPERS.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        graph[name] = {m for m in imported(path, runtime=True) if under(m, ("helpers",)) and m != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (or a module importing itself): import cycles."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(graph.get(node, ())):
            if other not in graph:
                continue
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle():
    assert cycles(import_graph()) == []


def test_the_cycle_finder_finds_a_cycle_and_ignores_type_checking_imports():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    assert "helpers.facts.writer" not in import_graph()["helpers.facts.decisions"]  # under TYPE_CHECKING
    assert "helpers.facts.writer" in imported(HELPERS / "facts" / "decisions.py")


def test_the_layers_this_change_fixed_stay_fixed():
    assert not any(name.startswith("helpers.sessions") for name in imported(HELPERS / "postgres.py"))
    assert not any(name.startswith("helpers.sessions") for name in imported(HELPERS / "session.py"))
    assert not any(under(name, (*UPPER, "helpers.standin")) for name in imported(HELPERS / "session_snapshot.py"))


def test_every_name_notebooks_and_tests_import_from_the_store_module_is_still_there():
    from helpers.sessions import store

    for name in ("SQLiteSessionStore", "SessionStore", "SessionStoreError", "SessionConflictError",
                 "SessionNotFoundError", "SessionSaveError", "ForkError", "check_fork", "decode_state",
                 "encode_state", "redact_dsn", "MIGRATIONS", "SessionInfo", "StoredSession", "check_ids",
                 "storable_text", "has_lone_surrogates", "import_stored_vectors", "restore", "SessionStoreBase",
                 "SCHEMA_TABLE", "VECTOR_COLUMNS", "EncodedSession"):
        assert hasattr(store, name), name
