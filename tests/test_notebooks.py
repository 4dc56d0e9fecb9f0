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


def test_notebook_11_resumes_its_stored_session_after_a_real_kernel_restart(tmp_path):
    """Notebook 11's "Kernel → Restart, then run the cell after next": the database is in a fixed folder that
    survives the restart, and the cell after the restart loads the stored turn and answers the follow-up."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    from nbclient.util import run_sync

    path = next(p for p in NOTEBOOKS if p.name.startswith("11_"))
    nb = nbformat.read(path, as_version=4)
    restart_at = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code" and "%reset -f" in c.source)
    resume = next(i for i, c in enumerate(nb.cells)
                  if c.cell_type == "code" and "load_session(db, \"ada\", \"planning\")" in c.source
                  and "import" in c.source)
    assert resume == restart_at + 3, "the prose says: restart, then run the cell after next"
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",  # a scratch folder as the notebook's
                                     resources={"metadata": {"path": str(tmp_path)}})  # own, away from other runs
    with client.setup_kernel():
        for index in range(restart_at):
            client.execute_cell(nb.cells[index], index)
        run_sync(client.km.restart_kernel)(now=True)
        run_sync(client.kc.wait_for_ready)(timeout=60)
        cell = client.execute_cell(nb.cells[resume], resume)
        nb.cells.append(nbformat.v4.new_code_cell("print('basic_path' in globals())"))
        probe = client.execute_cell(nb.cells[-1], len(nb.cells) - 1)
    text = "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")
    errors = [o for o in cell.outputs if o.get("output_type") == "error"]
    assert not errors, errors
    assert "loaded a ChatSession with turns [(0, 'When does the AI club meet?')]" in text, text
    assert "Thursday" in text, text  # "that" is the AI club, from the stored turn
    latest = Path((tmp_path / "larkspur-data-11" / "latest").read_text())
    assert latest.parent == tmp_path / "larkspur-data-11" and (latest / "basic.db").exists()
    assert probe.outputs[0]["text"].strip() == "False"  # a new kernel: nothing of the setup cell is left
