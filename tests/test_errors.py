"""One exception base: every error and warning the package defines derives from WorkshopError / WorkshopWarning,
is listed in helpers/core/errors.py's tree, and the same mistake raises the same class everywhere."""
import ast
import builtins
import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import pytest

import helpers
from helpers.core import errors
from helpers.core.errors import EmptyMessageError, WorkshopError, WorkshopWarning

OPTIONAL = {"helpers.facts.fact_store_pg", "helpers.sessions.session_store_pg", "helpers.core.postgres"}  # need psycopg


def defined_classes():
    found = {}
    for info in pkgutil.walk_packages(helpers.__path__, "helpers."):
        if info.name in OPTIONAL or info.name.startswith("helpers.exercises") or info.name == "helpers.__main__":
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if inspect.isclass(value) and value.__module__ == info.name and issubclass(value, BaseException | Warning):
                found[name] = value
    return found


CLASSES = defined_classes()
PRIVATE = {name for name in CLASSES if name.startswith("_")}  # the stand-in's internal signals


@pytest.mark.parametrize("name", sorted(set(CLASSES) - PRIVATE))
def test_every_public_error_and_warning_shares_the_base(name):
    cls = CLASSES[name]
    assert issubclass(cls, WorkshopWarning if issubclass(cls, Warning) else WorkshopError), name


@pytest.mark.parametrize("name", sorted(set(CLASSES) - PRIVATE))
def test_every_class_is_in_the_one_list(name):
    assert re.search(rf"\b{name}\b", errors.__doc__), f"{name} is missing from helpers/core/errors.py's tree"


def test_the_listed_kind_matches_the_class():
    checked = 0
    for line in errors.__doc__.splitlines():
        match = re.search(r"(\w+(?:Error))\s+\((\w+(?:, \w+)*)\)", line)
        if match and match.group(1) in CLASSES:
            for kind in match.group(2).split(", "):
                assert issubclass(CLASSES[match.group(1)], getattr(builtins, kind)), line
            checked += 1
    assert checked > 20


def test_an_empty_question_is_the_same_error_in_the_session_and_the_assembler():
    from helpers.memory.assembler import assemble_context
    from helpers.chat.chat_session import ChatSession

    with pytest.raises(EmptyMessageError):
        ChatSession().chat("   ")
    with pytest.raises(EmptyMessageError):
        assemble_context("system", [], "  ", budget=500)


def test_an_unknown_tool_name_is_a_workshop_error_naming_it_and_the_known_tools():
    from helpers.chat.chat_session import ChatSession
    from helpers.agent.tools import REGISTRY, UnknownToolError

    with pytest.raises(UnknownToolError) as caught:
        ChatSession(tools=["typo"])
    error = caught.value
    assert isinstance(error, WorkshopError) and isinstance(error, ValueError) and isinstance(error, KeyError)
    assert str(error).startswith("unknown tool 'typo'; the known tools are ")  # not quoted like a bare KeyError
    assert all(name in str(error) for name in REGISTRY)


# ---------------------------------------------------------------- no built-in raised on purpose

HELPERS = Path(helpers.__file__).resolve().parent
BUILTIN_ERRORS = {name for name, value in vars(builtins).items()
                  if isinstance(value, type) and issubclass(value, BaseException)}
# (file, function, exception): why this raise must be that exact class. Anything else the package raises on
# purpose is a WorkshopError (or a private signal of the stand-in, caught where it is raised).
ALLOWED_RAISES = {
    ("helpers/__main__.py", "", "SystemExit"): "how a script exits with main()'s status",
    ("helpers/sessions/persistent.py", "PersistentSession.__getattr__", "AttributeError"):
        "the __getattr__ protocol: hasattr(), getattr(x, name, default) and copy rely on AttributeError",
    ("helpers/sessions/store_sql.py", "SessionStoreBase.close", "NotImplementedError"): "abstract: each backend has it",
    ("helpers/sessions/store_sql.py", "SessionStoreBase.load_state", "NotImplementedError"): "abstract: each backend has it",
    ("helpers/sessions/store_sql.py", "SessionStoreBase._transaction_for", "NotImplementedError"):
        "abstract: each backend has it",
    ("helpers/llm/client.py", "TimeoutNotRetried.send", "openai.APITimeoutError"):
        "the openai client's protocol: only its own timeout error is reported as a timeout, unretried",
}


def raises():
    """(file, enclosing function, raised name, module) for every ``raise Name(...)`` / ``raise a.Name`` in helpers/
    (helpers/exercises left out: its Hint is advice, not an error)."""
    found = []
    for path in sorted(HELPERS.rglob("*.py")):
        if "exercises" in path.relative_to(HELPERS).parts:
            continue
        module = ".".join(path.relative_to(HELPERS.parent).with_suffix("").parts)

        def visit(node, scope):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    visit(child, [*scope, child.name])
                    continue
                if isinstance(child, ast.Raise) and child.exc is not None:
                    target = child.exc.func if isinstance(child.exc, ast.Call) else child.exc
                    if isinstance(target, (ast.Name, ast.Attribute)):
                        found.append((str(path.relative_to(HELPERS.parent)), ".".join(scope),
                                      ast.unparse(target), module))
                visit(child, scope)

        visit(ast.parse(path.read_text(encoding="utf-8")), [])
    return found


def test_no_built_in_exception_is_raised_on_purpose():
    bare = [f"{file}: {scope or '<module>'} raises {name}" for file, scope, name, _ in raises()
            if name in BUILTIN_ERRORS and (file, scope, name) not in ALLOWED_RAISES]
    assert not bare, "raise a WorkshopError subclass (see helpers/core/errors.py) instead:\n" + "\n".join(bare)


def test_every_class_raised_on_purpose_is_a_workshop_error():
    foreign = []
    for file, scope, name, module_name in raises():
        if module_name in OPTIONAL | {"helpers.__main__"} or (file, scope, name) in ALLOWED_RAISES:
            continue
        value = importlib.import_module(module_name)
        for part in name.split("."):
            value = getattr(value, part, None)
        if inspect.isclass(value) and issubclass(value, BaseException) and not value.__name__.startswith("_"):
            if not issubclass(value, WorkshopError):
                foreign.append(f"{file}: {scope or '<module>'} raises {name}")
    assert not foreign, "\n".join(foreign)


def test_every_allowed_raise_is_still_there():
    present = {(file, scope, name) for file, scope, name, _ in raises()}
    assert set(ALLOWED_RAISES) <= present, set(ALLOWED_RAISES) - present
