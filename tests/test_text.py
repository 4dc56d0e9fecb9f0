"""One way to shorten text (helpers.core.text.shorten): what it does, and that no module cuts text its own way."""
import re
from pathlib import Path

import pytest

import helpers
from helpers.core.text import shorten


@pytest.mark.parametrize("text, width, options, expected", [
    ("short", 10, {}, "short"),
    ("  When does the\n\tAI club   meet? ", 100, {}, "When does the AI club meet?"),
    ("When does the AI club meet?", 16, {}, "When does the A…"),
    ("a" * 70, 60, {"ellipsis": "..."}, "a" * 57 + "..."),
    ("'a  b\\n'", 100, {"flatten": False}, "'a  b\\n'"),
    ("one two three", 9, {"flatten": False}, "one two …"),
    ("one two three", 9, {"flatten": False, "tidy": True}, "one two…"),
    (None, 10, {}, "None"),
])
def test_shorten(text, width, options, expected):
    assert shorten(text, width, **options) == expected
    assert len(shorten(text, width, **options)) <= width


# A slice followed by an ellipsis ("text[:59] + '…'") is a cut of its own; shorten() is the one cut.
OWN_CUT = re.compile(r"\]\s*(\.rstrip\(\))?\s*\+\s*[\"'](…|\.\.\.)[\"']")
KNOWN = {"helpers/standin/server.py"}  # adds "..." after a prefix it always keeps: a marker, not a cut to a width


def test_no_module_shortens_text_its_own_way():
    root = Path(helpers.__file__).resolve().parent
    own = [str(path.relative_to(root.parent)) for path in sorted(root.rglob("*.py"))
           if "exercises" not in path.parts and OWN_CUT.search(path.read_text(encoding="utf-8"))]
    assert set(own) <= KNOWN, f"use helpers.core.text.shorten in {sorted(set(own) - KNOWN)}"
