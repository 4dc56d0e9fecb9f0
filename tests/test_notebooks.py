"""Checks on the committed notebooks themselves (nbval checks that their outputs are reproduced)."""
import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
KEY_SHAPES = re.compile(r"nvapi-[A-Za-z0-9_\-]{8,}|\bsk-[A-Za-z0-9_\-]{16,}")


def outputs_text(notebook: dict) -> str:
    return json.dumps([cell.get("outputs", []) for cell in notebook["cells"]])


@pytest.fixture(params=NOTEBOOKS, ids=lambda p: p.name)
def notebook(request):
    return request.param, json.loads(request.param.read_text())


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 11


def test_no_output_contains_an_api_key(notebook):
    path, nb = notebook
    assert not KEY_SHAPES.search(outputs_text(nb)), f"{path.name} has something shaped like an API key in its outputs"


def test_key_pattern_would_catch_keys():
    assert KEY_SHAPES.search('{"text": "key nvapi-AbCdEf123456_xyz"}')
    assert KEY_SHAPES.search("sk-proj1234567890abcdefXYZ")
    assert not KEY_SHAPES.search("task-list and sk-short")


def test_no_output_names_a_machine_path(notebook):
    path, nb = notebook
    assert "/root/" not in outputs_text(nb) and "/work/" not in outputs_text(nb), path.name


def test_outputs_are_committed_with_execution_counts(notebook):
    path, nb = notebook
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code and all(c.get("execution_count") for c in code), f"{path.name}: re-run tests/refresh_notebooks.sh"


def test_rhythm(notebook):
    path, nb = notebook
    first = "".join(nb["cells"][0]["source"])
    assert "colab.research.google.com/github/" in first and path.name in first, "Colab badge first"
    assert "google.colab" in "".join(nb["cells"][1]["source"]), "setup cell second"
    text = "\n".join("".join(c["source"]) for c in nb["cells"])
    assert re.search(r"what you will build", text, re.I)
    assert re.search(r"prove it", text, re.I)
    assert re.search(r"exercise", text, re.I) and re.search(r"self-check", text, re.I)
    assert re.search(r"what you built", text, re.I)
