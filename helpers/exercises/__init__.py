"""Checkers for the notebooks' exercises: ``check()`` prints ✓ or a specific hint, never a traceback.

Each exercise cell in a notebook starts as a runnable stub (``Exercise.stub``, word for word) and is
followed by a cell such as ``exercise.check(safe_cut)``: the learner's own objects are passed in and
tried on several inputs, so a lucky hard-coded answer does not pass. ``hint()`` prints the next hint,
``solution()`` prints a worked solution; solutions live here, not in the notebook, so reading ahead
does not spoil them. No check depends on the day or time it runs.

The exercises of notebook NN live in ``helpers.exercises.nbNN``; every one is listed in ``EXERCISES``
(tests/test_exercises.py proves that each check fails on its stub and passes on its solution).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

EXERCISES: dict[str, "Exercise"] = {}


class Verdict:
    """What ``check()`` returns: true when the answer passed. A notebook shows nothing for it (the ✓/✗ line
    was already printed), so a check cell's output is just that line."""

    def __init__(self, passed: bool):
        self.passed = passed

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        return f"Verdict(passed={self.passed})"

    def _ipython_display_(self) -> None:
        """Display nothing: the verdict was printed by check()."""


class Hint(Exception):
    """Raised by a checker with the one sentence the learner should read next."""


@dataclass
class Exercise:
    """One exercise: the stub the cell starts with, a checker, hints and a solution."""

    key: str                                   # "07.2": notebook 07, exercise 2
    title: str
    stub: str                                  # the learner's cell as committed (runs, but does not pass)
    solution_code: str                         # a worked solution, printed by solution()
    checker: Callable[..., str | None]         # raises Hint when wrong; returns what was shown to be right
    answers: tuple[str, ...]                   # names the cell defines, passed to check() in this order
    hints: tuple[str, ...] = ()
    context: Callable[[], dict[str, Any]] = field(default=dict)  # names the stub's code needs to run
    _next_hint: int = field(default=0, repr=False)

    def __post_init__(self) -> None:
        EXERCISES[self.key] = self

    def check(self, *answers: Any) -> Verdict:
        """Try the learner's answer; print ✓ and what it showed, or ✗ and a specific hint."""
        try:
            shown = self.checker(*answers)
        except Hint as hint:
            print(f"✗ {hint}")
            return Verdict(False)
        except Exception as error:  # the learner's code failed inside the check: say so, without a traceback
            advice = self.hints[0] if self.hints else "run the cell above again and read its output"
            print(f"✗ Your code raised {type(error).__name__}: {error}. Hint: {advice}")
            return Verdict(False)
        print(f"✓ {shown or 'Correct.'}")
        return Verdict(True)

    def hint(self) -> None:
        """Print the next hint (they get more specific each time)."""
        if not self.hints:
            print("No hints for this one: compare with solution().")
            return
        print(f"Hint {self._next_hint + 1}/{len(self.hints)}: {self.hints[self._next_hint]}")
        self._next_hint = min(self._next_hint + 1, len(self.hints) - 1)

    def solution(self) -> None:
        """Print a worked solution."""
        print(self.solution_code)
