"""The package's layers: no module imports upward (every ``import`` statement, read with ``ast``).

* The lower layer - top-level ``helpers/*.py`` that notebooks 01-07 build and every module uses - imports
  nothing from ``helpers.memory``, ``helpers.facts``, ``helpers.sessions`` or ``helpers.standin``. The front
  ends of notebook 11 (``ui.py``, ``cli.py``, ``__main__.py``) and the assistant of notebook 12 that they share
  (``assistant.py``) sit at the top, on sessions, facts and memory, and are not part of it. ``client.py`` may reach the offline stand-in through ``helpers.standin.server``:
  that is how notebook 01 talks to it without a key.
* ``helpers.memory``, ``helpers.facts`` and ``helpers.sessions`` do not import ``helpers.standin``: the
  stand-in is a server they talk to through the client, never a library they call.
* ``helpers.standin``, which ``client.py`` starts, imports nothing from those three either.

Known exceptions still in the code are listed in ``KNOWN`` with the reason, each as a strict xfail:
when one is fixed its xfail passes, which fails the run until it is removed from the list.
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
KNOWN = {
    ("helpers/standin/tasks.py", "helpers.memory.summary_format"):
        "the stand-in's summariser reuses the summary format of helpers.memory (being moved by another change)",
    ("helpers/memory/profile_extraction.py", "helpers.standin.tasks"):
        "the rule-based profile extractor calls the stand-in's own extraction rules",
    ("helpers/memory/evaluation.py", "helpers.standin.server"):
        "the evaluation harness calls the stand-in's request handler directly, not through a client",
}


def imported(path: Path) -> set[str]:
    """Every module ``path`` imports (absolute names, relative imports resolved, ``from m import name`` as ``m``
    unless ``name`` is a module itself), at any depth in the file."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
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


def test_no_module_imports_upward_beyond_the_known_cases():
    unexpected = violations() - set(KNOWN)
    assert not unexpected, "upward imports: " + ", ".join(f"{f} -> {m}" for f, m in sorted(unexpected))


@pytest.mark.parametrize("case", [pytest.param(case, id=f"{case[0]}->{case[1]}",
                                               marks=pytest.mark.xfail(reason=reason, strict=True))
                                  for case, reason in KNOWN.items()])
def test_known_upward_import_is_gone(case):
    assert case not in violations()


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
