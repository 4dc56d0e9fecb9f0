"""Each notebook a learner opens first (01-06) has its scaffolding: 3-4 learning objectives, prerequisites and
minutes per section at the top, a diagram drawn from code, a common-mistakes box and a recap near the end."""
import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("0[1-6]_*.ipynb"))


def cells(path: Path) -> list[dict]:
    return json.loads(path.read_text())["cells"]


def opening(path: Path) -> str:
    """The title cell: the first markdown cell with a '# NN' heading."""
    return next("".join(c["source"]) for c in cells(path)
                if c["cell_type"] == "markdown" and re.match(r"#\s+\d\d\b", "".join(c["source"])))


def test_there_are_six():
    assert [p.name[:2] for p in NOTEBOOKS] == ["01", "02", "03", "04", "05", "06"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_opening_states_objectives_prerequisites_and_minutes(path):
    text = opening(path)
    objectives = re.search(r"\*\*You will learn to:\*\*\n((?:- .+\n?)+)", text)
    assert objectives and 3 <= objectives.group(1).count("\n- ") + 1 <= 4, text
    assert "**Before you start:**" in text
    minutes = re.findall(r"^\|[^|\n]+\|\s*(\d+)\s*\|$", text, re.M)
    assert len(minutes) >= 4 and all(0 < int(m) <= 20 for m in minutes), minutes


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_diagram_is_drawn_by_code(path):
    code = ["".join(c["source"]) for c in cells(path) if c["cell_type"] == "code"]
    assert any("draw_flow(" in source or "plt." in source for source in code)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_common_mistakes_then_a_recap_near_the_end(path):
    markdown = ["".join(c["source"]) for c in cells(path) if c["cell_type"] == "markdown"]
    mistakes = next(i for i, text in enumerate(markdown) if "**Common mistakes**" in text)
    recap = next(i for i, text in enumerate(markdown) if re.match(r"## What you built \(recap\)", text))
    assert mistakes < recap and recap >= len(markdown) - 5
    assert markdown[mistakes].count("\n> - ") >= 3
