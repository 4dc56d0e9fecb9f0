"""The package's layers are its folders, and imports run only downwards (every ``import`` read with ``ast``).

* Every module of ``helpers/`` lives in a folder named for its layer (``core``, ``llm``, ``retrieval``,
  ``agent``, ``chat``, ``standin``, ``facts``, ``memory``, ``sessions``, ``app``, ``exercises``); only the
  package's ``__init__.py`` and ``__main__.py`` sit at the top.
* The folders import each other without a loop, so they stack into layers. The one arrow that runs
  back up is the offline client: ``llm/client.py`` reaches the stand-in through ``helpers.standin.server``,
  which is how notebook 01 talks to it without a key.
* ``helpers.memory``, ``helpers.facts`` and ``helpers.sessions`` never import ``helpers.standin``: the stand-in
  is a server they talk to through the client, never a library they call. The stand-in imports none of them
  (nor the app): of the package it reads only the code of notebooks 01-07 and the foundations.
* No module imports itself back through others: the import graph has no cycle (imports needed only for
  annotations, under ``if TYPE_CHECKING:``, do not count).
* The README's layer list names the folders in an order the imports allow.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HELPERS = ROOT / "helpers"
ALLOWED = {("helpers.llm.client", "helpers.standin.server"):
           "the offline client: notebook 01 reaches the stand-in through it"}
NOTEBOOKS_01_07 = {"core", "llm", "retrieval", "agent", "chat"}  # what the stand-in may read


def _type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")


def _nodes(tree: ast.AST, runtime: bool):
    for node in ast.iter_child_nodes(tree):
        if runtime and _type_checking(node):
            yield from (n for child in node.orelse for n in [child, *_nodes(child, runtime)])
            continue
        yield node
        yield from _nodes(node, runtime)


def _module_of(name: str) -> str:
    """The module an imported name belongs to (``helpers.x.y.Name`` -> ``helpers.x.y`` when that is a file)."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ROOT.joinpath(*parts[:end])
        if candidate.with_suffix(".py").is_file() or (candidate / "__init__.py").is_file():
            return ".".join(parts[:end])
    return name


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


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(*, runtime: bool = True) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (any depth; ``runtime``: not under ``if TYPE_CHECKING:``)."""
    graph = {}
    for path in HELPERS.rglob("*.py"):
        name = module_name(path)
        graph[name] = {m for m in imported(path, runtime=runtime)
                       if (m == "helpers" or m.startswith("helpers.")) and m != name}
    return graph


def layer_of(module: str) -> str | None:
    """The folder (layer) a module lives in; None for the package itself and its ``__main__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and (HELPERS / parts[1]).is_dir()) else None


def layer_graph() -> dict[str, set[str]]:
    """Folder -> the folders its modules import, leaving out the allowed arrows."""
    graph: dict[str, set[str]] = {}
    for module, targets in import_graph(runtime=False).items():
        here = layer_of(module)
        if here is None:
            continue
        graph.setdefault(here, set())
        for target in targets:
            there = layer_of(target)
            if there not in (None, here) and (module, target) not in ALLOWED:
                graph[here].add(there)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one node (or a node importing itself): import cycles."""
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


def below(graph: dict[str, set[str]], layer: str) -> set[str]:
    """Every layer ``layer`` reaches through imports."""
    seen, todo = set(), list(graph.get(layer, ()))
    while todo:
        other = todo.pop()
        if other not in seen:
            seen.add(other)
            todo.extend(graph.get(other, ()))
    return seen


def test_every_module_lives_in_a_layer_folder():
    flat = sorted(p.name for p in HELPERS.glob("*.py") if p.name not in ("__init__.py", "__main__.py"))
    assert flat == [], f"modules outside a layer folder: {flat}"


def test_no_two_modules_share_a_name():
    names: dict[str, list[str]] = {}
    for path in HELPERS.rglob("*.py"):
        if path.name != "__init__.py":
            names.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    assert {name: paths for name, paths in names.items() if len(paths) > 1} == {}


def test_the_layers_stack_without_a_loop():
    assert cycles(layer_graph()) == [], "layers that import each other in a loop"


def test_the_memory_code_never_calls_the_stand_in():
    graph = layer_graph()
    for layer in ("memory", "facts", "sessions"):
        assert "standin" not in below(graph, layer), f"{layer} reaches the stand-in"


def test_the_stand_in_reads_only_notebooks_01_07():
    graph = layer_graph()
    assert graph["standin"] <= NOTEBOOKS_01_07, sorted(graph["standin"] - NOTEBOOKS_01_07)
    assert below(graph, "standin") <= NOTEBOOKS_01_07


def test_the_foundations_import_nothing_above_them():
    assert layer_graph()["core"] == set()


def test_only_the_exercises_and_main_use_the_front_ends():
    for module, targets in import_graph(runtime=False).items():
        if layer_of(module) not in ("app", "exercises", None):
            assert not any(layer_of(t) in ("app", "exercises") for t in targets), module


def test_no_import_cycle():
    assert cycles(import_graph()) == []


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_an_import_under_type_checking_is_not_a_run_time_import():
    source = ("from typing import TYPE_CHECKING\nimport helpers.core.text\n"
              "if TYPE_CHECKING:\n    import helpers.core.clock\n")
    path = HELPERS / "core" / "_layers_probe.py"
    path.write_text(source, encoding="utf-8")
    try:
        assert {m for m in imported(path, runtime=True) if m.startswith("helpers")} == {"helpers.core.text"}
        assert "helpers.core.clock" in imported(path)
    finally:
        path.unlink()


def test_the_readme_lists_the_layers_in_an_order_the_imports_allow():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("**How the layers stack.**", 1)[1].split("\n\n", 1)[1].split("\n\n", 1)[0]
    listed = [re.findall(r"`(\w+)/`", line) for line in section.splitlines() if re.match(r"\d+\.", line)]
    order = [layer for line in listed for layer in line]
    graph = layer_graph()
    assert sorted(order) == sorted(graph), f"README lists {order}, the package has {sorted(graph)}"
    rank = {layer: i for i, line in enumerate(listed) for layer in line}
    for layer, targets in graph.items():
        for target in targets:
            assert rank[target] <= rank[layer], f"README puts {target} above {layer}, which imports it"
