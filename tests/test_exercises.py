"""Every exercise is a real exercise: its check fails on the stub, passes on the solution, and the notebook's
cell starts as the stub (so the committed outputs show the unsolved state)."""
import contextlib
import importlib
import io
import json
import pkgutil
from pathlib import Path

import pytest
from exercise_support import run

import helpers.exercises
from helpers.exercises import EXERCISES, Exercise, Hint

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
for _module in pkgutil.iter_modules(helpers.exercises.__path__):
    importlib.import_module(f"helpers.exercises.{_module.name}")


def _code_cells(key: str) -> list[str]:
    path = next(NOTEBOOKS.glob(f"{key.split('.')[0]}_*.ipynb"))
    return ["".join(c["source"]).strip() for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]


@pytest.mark.parametrize("key", sorted(EXERCISES))
def test_check_fails_on_the_stub_with_a_hint(key):
    passed, said = run(EXERCISES[key], EXERCISES[key].stub)
    assert not passed and said.startswith("✗") and "Traceback" not in said, said


@pytest.mark.parametrize("key", sorted(EXERCISES))
def test_check_passes_on_the_solution(key):
    passed, said = run(EXERCISES[key], EXERCISES[key].solution_code)
    assert passed and said.startswith("✓"), said


@pytest.mark.parametrize("key", sorted(EXERCISES))
def test_the_notebook_cell_starts_as_the_stub(key):
    assert EXERCISES[key].stub.strip() in _code_cells(key), f"notebook {key} has no cell equal to the stub"


def test_a_raising_answer_is_a_hint_not_a_traceback():
    def checker(fn):
        fn()
    exercise = Exercise("00.9", "t", "", "", checker, ("fn",), hints=("look at the loop",))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert not exercise.check(lambda: 1 / 0)
    assert out.getvalue().startswith("✗ Your code raised ZeroDivisionError") and "look at the loop" in out.getvalue()
    EXERCISES.pop("00.9")


def test_hints_go_from_general_to_specific_and_stop_at_the_last():
    exercise = Exercise("00.8", "t", "", "print(1)", lambda: (_ for _ in ()).throw(Hint("no")), (),
                        hints=("first", "second"))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exercise.hint(), exercise.hint(), exercise.hint(), exercise.solution()
    assert out.getvalue().splitlines() == ["Hint 1/2: first", "Hint 2/2: second", "Hint 2/2: second", "print(1)"]
    EXERCISES.pop("00.8")


def test_a_check_cell_shows_only_the_printed_verdict():
    from IPython.core.interactiveshell import InteractiveShell

    exercise = Exercise("00.7", "t", "", "", lambda: "fine", ())
    with contextlib.redirect_stdout(io.StringIO()):
        verdict = exercise.check()
    EXERCISES.pop("00.7")
    assert verdict and not Exercise.check.__annotations__["return"] == "bool"
    data, metadata = InteractiveShell.instance().display_formatter.format(verdict)
    assert data == {} and metadata == {}, data  # a notebook shows no Out[...] for it
