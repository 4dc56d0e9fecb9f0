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

HELPERS = Path(helpers.__file__).resolve().parent
OPTIONAL = {"helpers.facts.fact_store_pg", "helpers.sessions.session_store_pg", "helpers.core.postgres"}  # need psycopg


def defined_classes():
    """Every exception and warning class defined anywhere under helpers/ (the exercises and private ones too)."""
    found = {}
    for info in pkgutil.walk_packages(helpers.__path__, "helpers."):
        if info.name in OPTIONAL or info.name == "helpers.__main__":
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if inspect.isclass(value) and value.__module__ == info.name and issubclass(value, BaseException | Warning):
                assert name not in found, f"two exception classes named {name}"
                found[name] = value
    return found


CLASSES = defined_classes()
# Not errors: caught where they are raised, documented under "Control flow" in helpers/core/errors.py
CONTROL_FLOW = {"Hint", "TooManyAttempts", "_CannotMake", "_TooComplex", "_RequestError", "_Invalid"}
TREE, _, CONTROL_DOC = errors.__doc__.partition("Control flow, not errors")


def test_the_optional_modules_define_no_exception_class():
    """They need psycopg, so they are not imported above: their source is read instead."""
    for name in OPTIONAL:
        path = HELPERS.parent / (name.replace(".", "/") + ".py")
        defined = [node.name for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                   if isinstance(node, ast.ClassDef)
                   and any(re.search(r"(Error|Exception|Warning)$", ast.unparse(base)) for base in node.bases)]
        assert not defined, f"{name} defines {defined}: import it in defined_classes() and list it in the tree"


@pytest.mark.parametrize("name", sorted(set(CLASSES) - CONTROL_FLOW))
def test_every_error_and_warning_shares_the_base(name):
    cls = CLASSES[name]
    assert issubclass(cls, WorkshopWarning if issubclass(cls, Warning) else WorkshopError), name


@pytest.mark.parametrize("name", sorted(set(CLASSES) - CONTROL_FLOW))
def test_every_class_is_in_the_one_list(name):
    assert re.search(rf"(?<![\w]){name}\b", TREE), f"{name} is missing from helpers/core/errors.py's tree"


@pytest.mark.parametrize("name", sorted(CONTROL_FLOW))
def test_every_control_flow_signal_is_documented_as_such_and_outside_the_tree(name):
    assert name in CLASSES, f"{name} is no longer defined: drop it from CONTROL_FLOW and errors.py"
    assert re.search(rf"^\s+{name}\s", CONTROL_DOC, re.M), f"{name} is not documented as control flow"
    assert not issubclass(CLASSES[name], WorkshopError | Warning)
    assert not re.search(rf"(?<![\w]){name}\b", TREE)


def test_every_exception_class_under_helpers_is_in_the_tree_or_control_flow():
    """Exhaustive: nothing outside both lists, including private classes."""
    outside = [name for name in CLASSES if name not in CONTROL_FLOW
               and not issubclass(CLASSES[name], WorkshopError | WorkshopWarning)]
    assert not outside, f"neither in the tree nor control flow: {outside}"


def test_the_tree_names_no_class_that_does_not_exist():
    listed = set(re.findall(r"\b([A-Z]\w*(?:Error|Warning))\b", TREE))
    built_in = {name for name in listed if hasattr(builtins, name)}
    assert listed - built_in == {n for n, c in CLASSES.items() if issubclass(c, WorkshopError | WorkshopWarning)}


def test_the_tree_names_each_class_s_module_in_the_new_layout():
    checked = 0
    for line in TREE.splitlines():
        for name, module in (re.findall(r"([A-Z]\w+)\s+(?:\([\w, ]+\)\s+)?([a-z_]+\.[a-z_]+):", line)
                             + re.findall(r"(\w+Warning) \(([a-z_]+\.[a-z_]+)\)", line)):
            assert CLASSES[name].__module__ == f"helpers.{module}", line
            checked += 1
    assert checked >= len(CLASSES) - len(CONTROL_FLOW) - 2  # all but WorkshopError and WorkshopWarning


def test_the_listed_kind_matches_the_class():
    checked = 0
    for line in errors.__doc__.splitlines():
        match = re.search(r"(\w+(?:Error))\s+\((\w+(?:, \w+)*)\)", line)
        if match and match.group(1) in CLASSES:
            for kind in match.group(2).split(", "):
                assert issubclass(CLASSES[match.group(1)], getattr(builtins, kind, None) or CLASSES[kind]), line
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

BUILTIN_ERRORS = {name for name, value in vars(builtins).items()
                  if isinstance(value, type) and issubclass(value, BaseException)}
# (file, function, exception): why this raise must be that exact class. Anything else the package raises on
# purpose is a WorkshopError (or a private signal of the stand-in, caught where it is raised).
ALLOWED_RAISES = {
    ("helpers/__main__.py", "", "SystemExit"): "how a script exits with main()'s status",
    ("helpers/sessions/store_sql.py", "SessionStoreBase.close", "NotImplementedError"): "abstract: each backend has it",
    ("helpers/sessions/store_sql.py", "SessionStoreBase.load_state", "NotImplementedError"): "abstract: each backend has it",
    ("helpers/sessions/store_sql.py", "SessionStoreBase._transaction_for", "NotImplementedError"):
        "abstract: each backend has it",
    ("helpers/llm/client.py", "TimeoutNotRetried.send", "openai.APITimeoutError"):
        "the openai client's protocol: only its own timeout error is reported as a timeout, unretried",
    ("helpers/core/text.py", "escape_controls", "ValueError"):
        "a caller's programming error (an unsupported keep=), raised where the package itself calls it wrongly",
    ("helpers/facts/fact_store.py", "share_file_with", "ValueError"):
        "a store module registering its tables wrongly at import: a programming error, not bad input",
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


# ---------------------------------------------------------------- a wrong argument is a ValueError

@pytest.mark.parametrize("bad", ["", "   ", "a\x00b", "x" * 201, 42, "\ud800"])
def test_a_refused_id_is_a_value_error_and_still_a_session_store_error(bad, tmp_path):
    from helpers.core.ids import InvalidIdError
    from helpers.sessions.protocol import SessionIdError, SessionStoreError, check_ids
    from helpers.sessions.session_store import SQLiteSessionStore

    with pytest.raises(SessionIdError) as caught:
        check_ids(bad, "s1")
    assert isinstance(caught.value, InvalidIdError) and isinstance(caught.value, ValueError)
    assert isinstance(caught.value, SessionStoreError) and isinstance(caught.value, WorkshopError)
    store = SQLiteSessionStore(tmp_path / "s.db")
    try:
        with pytest.raises(ValueError, match="session_id"):
            store.load_state("ada", bad)
    finally:
        store.close()


def test_an_id_that_cannot_be_printed_is_refused_not_raised_on():
    from helpers.core.ids import InvalidIdError, check_id

    with pytest.raises(InvalidIdError, match="got int"):
        check_id(10**5000, "user_id")


def test_a_wrong_embedding_argument_is_a_value_error_and_still_an_embedding_error():
    from helpers.retrieval.embeddings import EmbeddingError, EmbeddingInputError, embed_texts

    for kwargs in ({"input_type": "document"}, {"input_type": None, "batch_size": 0}):
        with pytest.raises(EmbeddingInputError) as caught:
            embed_texts(object(), ["x"], model="m", **kwargs)  # refused before the client is used
        assert isinstance(caught.value, ValueError) and isinstance(caught.value, EmbeddingError)
    with pytest.raises(ValueError, match="single string"):
        embed_texts(object(), "x", model="m", input_type=None)


# ---------------------------------------------------------------- the broad except clauses catch what they expect

def _bug(*args, **kwargs):
    raise AttributeError("a bug inside the package (simulated)")


def test_run_tool_raises_its_own_bug_but_reports_what_the_tool_raises(monkeypatch):
    import json

    from helpers.agent import tools

    def explode():
        raise RuntimeError("database on fire")

    registry = {"explode": tools.Tool("explode", explode, tools.function_schema("explode", "x", {}, []))}
    assert "RuntimeError: database on fire" in json.loads(tools.run_tool("explode", "{}", registry))["error"]
    assert "unknown tool 'nope'" in json.loads(tools.run_tool("nope", "{}"))["error"]
    monkeypatch.setattr(tools, "_parse_arguments", _bug)
    with pytest.raises(AttributeError, match="simulated"):
        tools.run_tool("days_until_weekday", '{"weekday": "Thu"}')


def test_fact_extraction_reports_a_failed_request_and_raises_a_bug(monkeypatch):
    from helpers.facts import pipeline
    from helpers.facts.extract import extract_candidates
    from helpers.llm.client import EndpointError

    def down(*args, **kwargs):
        raise EndpointError("the server is down (simulated)")

    turn = {"role": "user", "content": "evenings please"}
    monkeypatch.setattr(pipeline, "chat", down)
    result = extract_candidates(turn, user_id="u1", seq=1, client=object(), model="m")
    assert result.candidates == [] and "extraction call failed (EndpointError" in result.problems[0]
    monkeypatch.setattr(pipeline, "chat", _bug)
    with pytest.raises(AttributeError, match="simulated"):
        extract_candidates(turn, user_id="u1", seq=1, client=object(), model="m")


def test_the_profile_warns_for_a_failed_request_and_raises_a_bug(monkeypatch):
    from helpers.facts import pipeline
    from helpers.llm.client import EndpointError
    from helpers.memory.profile import ProfileMemory, ProfileWarning

    def down(*args, **kwargs):
        raise EndpointError("the server is down (simulated)")

    monkeypatch.setattr(pipeline, "chat", down)
    with pytest.warns(ProfileWarning, match="turn 4: EndpointError"):
        assert ProfileMemory(extractor="model", client=object(), model="m").update(4, "My name is Priya.").added == []
    monkeypatch.setattr(pipeline, "chat", _bug)
    with pytest.raises(AttributeError, match="simulated"):
        ProfileMemory(extractor="model", client=object(), model="m").update(4, "My name is Priya.")


def test_fact_memory_rejects_what_a_candidate_raises_and_raises_its_own_bug(monkeypatch):
    from collections.abc import Mapping

    from helpers.facts import writer
    from helpers.facts.schema import Candidate
    from helpers.facts.writer import FactMemory

    class Broken(Mapping):
        def __getitem__(self, key):
            raise RuntimeError("the record is gone")

        def __iter__(self):
            return iter(["user_id", "value"])

        def __len__(self):
            return 2

    class Odd(str):
        def strip(self, *args):
            raise RuntimeError("a value whose methods fail")

    memory = FactMemory.open(":memory:")
    try:
        good = Candidate("u1", "user", "delivery_window", Odd("morning"), "chat:u1", "user", 1)
        decisions = memory.write_many([Broken(), {"user_id": "u1"}, good])
        assert [d.outcome for d in decisions] == ["rejected", "rejected", "insert"]
        assert "could not be checked (RuntimeError)" in decisions[0].reason
        assert "must be a non-empty string" in decisions[1].reason  # bad input: the documented rejection
        monkeypatch.setattr(writer, "check_candidate", _bug)
        with pytest.raises(AttributeError, match="simulated"):
            memory.write(Candidate("u1", "user", "delivery_window", "evening", "chat:u1", "user", 2))
    finally:
        memory.close()
