"""A dry run of the 2-hour live track: how long each segment takes, from the notebooks themselves.

    python benchmarks/live_track.py            # executes the track's notebooks offline, then prints the plan

For each segment it runs the notebook offline with the frozen clock (as the test suite does) and adds up,
over the sections the segment runs:

* the cells' measured run time,
* the prose read aloud at ``WORDS_PER_MINUTE`` (an instructor who reads or paraphrases every paragraph),
* ``DEMO_MINUTES`` for each section demonstrated live (typing a variation, pointing at output),
* ``EXERCISE_MINUTES`` for an exercise done live by the room.

The figures are a floor for a rehearsed instructor: questions from the room come out of the buffer the plan
leaves. The README's live-track table is this script's output.
"""
from __future__ import annotations

import os
import re
import sys
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
import workshop_env  # noqa: E402

WORDS_PER_MINUTE = 130
DEMO_MINUTES = 2.0
EXERCISE_MINUTES = 8.0


@dataclass
class Segment:
    notebook: str
    run: list[str]            # section numbers or names run and narrated ("1", "2", "Exercise 2")
    demo: list[str]           # of those, the ones shown live rather than narrated
    skip: str                 # what is left for self-study
    exercise: str | None = None


TRACK = [
    Segment("01_first_call", ["1", "2", "3", "6"], ["6"],
            "4 (system prompt), 5 (temperature), 7 and the exercises"),
    Segment("05_one_tool", ["1", "2", "3", "4", "5"], ["5"],
            "6 (raw messages), 7 (the model's mistakes), 8 and the exercises"),
    Segment("06_agent_loop", ["1", "4"], ["1"], "2-3 and 5-7 (trace, parallel calls, failures, grounding)"),
    Segment("07_memory_session", ["1", "3", "4", "5", "6", "Exercise 2"], ["1", "5"],
            "2, 7-9 (scroll-out, the helper, token budgets) and exercise 1", exercise="Exercise 2"),
    Segment("08_budgets_and_summaries", ["1", "2", "6"], ["6"],
            "3-5 and the exercises (the bridge shows why, then that the summary answers)"),
    Segment("09_recall_and_profile", ["1", "2", "5"], ["5"], "3-4, 6 and the exercises"),
    Segment("10_durable_memory", ["1", "2", "6", "10", "Exercise 3"], ["6", "10"],
            "3-5, 7-9, 11-15 and exercises 1-2", exercise="Exercise 3"),
    Segment("12_the_whole_assistant", ["2", "3", "5"], ["3", "5"], "1, 4, 6-7, the exercises and Going further"),
]


def sections(nb) -> list[tuple[str, list]]:
    """(section key, cells) in order; the key is the number before a '## N.' heading, or the heading text."""
    found: list[tuple[str, list]] = [("intro", [])]
    for cell in nb.cells:
        if cell.cell_type == "markdown":  # a cell may open one section or several; it counts for the last
            for match in re.finditer(r"^##\s+(?:(\d+)\.|(Exercise \d+))", cell.source, re.MULTILINE):
                found.append((match.group(1) or match.group(2), []))
        found[-1][1].append(cell)
    return found


def run_seconds(cell) -> float:
    timing = cell.metadata.get("execution", {})
    if "iopub.execute_input" not in timing or "shell.execute_reply" not in timing:
        return 0.0
    start = datetime.fromisoformat(timing["iopub.execute_input"].replace("Z", "+00:00"))
    end = datetime.fromisoformat(timing["shell.execute_reply"].replace("Z", "+00:00"))
    return (end - start).total_seconds()


def execute(name: str):
    """The notebook executed offline with the frozen clock, timing recorded per cell."""
    nb = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
    old = dict(os.environ)
    workshop_env.apply()
    try:
        NotebookClient(nb, timeout=600, record_timing=True,
                       resources={"metadata": {"path": str(ROOT / "notebooks")}}).execute()
    finally:
        os.environ.clear()
        os.environ.update(old)
    return nb


def segment_minutes(segment: Segment, nb) -> tuple[float, float, float, float]:
    """(run, narration, demos, exercise) minutes of one segment."""
    chosen = [cells for key, cells in sections(nb) if key in segment.run]
    words = sum(len(c.source.split()) for cells in chosen for c in cells if c.cell_type == "markdown")
    run = sum(run_seconds(c) for cells in chosen for c in cells if c.cell_type == "code") / 60
    return (run, words / WORDS_PER_MINUTE, DEMO_MINUTES * len(segment.demo),
            EXERCISE_MINUTES if segment.exercise else 0.0)


def main() -> int:
    started, clock, rows = time.monotonic(), 0.0, []
    for segment in TRACK:
        nb = execute(segment.notebook)
        parts = segment_minutes(segment, nb)
        minutes = sum(parts)
        rows.append((clock, clock + minutes, segment, parts))
        clock += minutes
    print("| start | end | notebook | run (sections) | demo live | skip | minutes: run + narration + demo + exercise |")
    print("|---|---|---|---|---|---|---|")
    for begin, end, seg, (run, talk, demo, exercise) in rows:
        stamp = lambda m: f"{int(m // 60)}:{int(round(m % 60)):02d}"  # noqa: E731
        print(f"| {stamp(begin)} | {stamp(end)} | {seg.notebook[:2]} | {', '.join(seg.run)} | {', '.join(seg.demo)} | "
              f"{seg.skip} | {run:.1f} + {talk:.1f} + {demo:.0f} + {exercise:.0f} = {run + talk + demo + exercise:.0f} |")
    print(f"\ntrack total {clock:.0f} minutes (dry run took {time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
