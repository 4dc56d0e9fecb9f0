"""One exception base: every error and warning the package defines derives from WorkshopError / WorkshopWarning,
is listed in helpers/errors.py's tree, and the same mistake raises the same class everywhere."""
import importlib
import inspect
import pkgutil
import re

import pytest

import helpers
from helpers import errors
from helpers.errors import EmptyMessageError, WorkshopError, WorkshopWarning

OPTIONAL = {"helpers.facts.postgres", "helpers.sessions.postgres", "helpers.postgres"}  # need psycopg


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
    assert re.search(rf"\b{name}\b", errors.__doc__), f"{name} is missing from helpers/errors.py's tree"


def test_the_listed_kind_matches_the_class():
    for line in errors.__doc__.splitlines():
        match = re.search(r"(\w+(?:Error))\s+\((ValueError|RuntimeError)\)", line)
        if match and match.group(1) in CLASSES:
            kind = {"ValueError": ValueError, "RuntimeError": RuntimeError}[match.group(2)]
            assert issubclass(CLASSES[match.group(1)], kind), line


def test_an_empty_question_is_the_same_error_in_the_session_and_the_assembler():
    from helpers.memory.assembler import assemble_context
    from helpers.session import ChatSession

    with pytest.raises(EmptyMessageError):
        ChatSession().chat("   ")
    with pytest.raises(EmptyMessageError):
        assemble_context("system", [], "  ", budget=500)
