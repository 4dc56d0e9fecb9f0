"""The 2-hour live track, run as listed: each segment's setup cells and exactly its sections, in a fresh kernel.

    python benchmarks/live_track.py            # runs every segment offline, then prints the README's table

For each segment it builds a notebook from the segment's notebook: the opening cells (everything before the first
numbered section, which is the setup an attendee runs) and then only the sections the track lists. It executes
that notebook in a new kernel, offline, with the frozen clock (as the test suite does), and adds up:

* the measured run time of the cells it executed (setup included),
* the prose of the sections run, read aloud at ``WORDS_PER_MINUTE``,
* ``DEMO_MINUTES`` for each section demonstrated live (typing a variation, pointing at output),
* ``EXERCISE_MINUTES`` for an exercise done live by the room.

``tests/test_live_track.py`` executes the same notebooks and fails on any error, so the table below is measured on
the very cells the room runs. The figures are a floor for a rehearsed instructor: questions from the room come out
of the buffer the plan leaves. The opening, the break and the buffer are added by hand (``FIXED``).
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
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
import workshop_env  # noqa: E402

WORDS_PER_MINUTE = 130
DEMO_MINUTES = 2.0
EXERCISE_MINUTES = 8.0
OPENING_MINUTES, BREAK_MINUTES, TOTAL_MINUTES = 10, 10, 120
ANSI = re.compile(r"\x1b\[[0-9;]*m")  # the colours of a kernel's traceback


@dataclass
class Segment:
    notebook: str
    run: list[str]            # section numbers or names run and narrated ("1", "2", "Exercise 2")
    demo: list[str]           # of those, the ones shown live rather than narrated
    skip: str                 # what is left for self-study
    exercise: str | None = None
    demo_note: str = ""       # what the live demo shows, for the README's table


TRACK = [
    Segment("01_first_call", ["1", "2", "3", "4", "6"], ["6"], "5 (temperature), 7 and the exercises",
            demo_note="a streamed reply"),
    Segment("05_one_tool", ["1", "2", "3", "4", "5"], ["5"],
            "6 (raw messages), 7 (the model's mistakes), 8 and the exercises", demo_note="the result goes back"),
    Segment("06_agent_loop", ["1", "4"], ["1"], "2-3 and 5-7 (trace, parallel calls, failures, grounding)",
            demo_note="the loop, `verbose=True`"),
    Segment("07_memory_session", ["1", "3", "4", "5", "6", "Exercise 2"], ["1", "5"],
            "2, 7-9 (scroll-out, the helper, token budgets) and exercise 1", exercise="Exercise 2",
            demo_note="reset, then \"that\"; the naive cut and its real 400"),
    Segment("08_budgets_and_summaries", ["1", "2", "5", "6"], ["6"],
            "3-4 and the exercises (the bridge: tokens grow, a window forgets, the summary answers)",
            demo_note="the summary is what answers"),
    Segment("09_recall_and_profile", ["1", "2", "5"], ["5"], "3-4, 6 and the exercises",
            demo_note="a correction travels"),
    Segment("10_durable_memory", ["1", "2", "3", "4", "6", "10", "Exercise 3"], ["6", "10"],
            "5, 7-9, 11-15 and exercises 1-2", exercise="Exercise 3",
            demo_note="the store, then a correction in it; the audit row that explains it"),
    Segment("11_persistent_sessions", ["1", "2"], ["2"], "3-12 and the exercises",
            demo_note="save, `%reset -f`, resume by id"),
    Segment("12_the_whole_assistant", ["2", "3", "5"], ["3", "5"], "1, 4, 6-7, the exercises and Going further",
            demo_note="three days, two restarts; where the budget goes"),
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


def track_notebook(segment: Segment):
    """The notebook an attendee runs in this segment: the opening cells, then exactly the track's sections."""
    nb = nbformat.read(ROOT / "notebooks" / f"{segment.notebook}.ipynb", as_version=4)
    keys = [key for key, _ in sections(nb)]
    missing = [name for name in segment.run if name not in keys]
    if missing:
        raise KeyError(f"{segment.notebook} has no section {missing} (it has {keys})")
    cells = [cell for key, chosen in sections(nb) if key == "intro" or key in segment.run for cell in chosen]
    for cell in cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return nbformat.v4.new_notebook(cells=cells, metadata=nb.metadata)


def run_seconds(cell) -> float:
    timing = cell.metadata.get("execution", {})
    if "iopub.execute_input" not in timing or "shell.execute_reply" not in timing:
        return 0.0
    start = datetime.fromisoformat(timing["iopub.execute_input"].replace("Z", "+00:00"))
    end = datetime.fromisoformat(timing["shell.execute_reply"].replace("Z", "+00:00"))
    return (end - start).total_seconds()


class TrackError(RuntimeError):
    """A cell the track runs raised (the message names the notebook, the cell and the error)."""


def execute(segment: Segment, timeout: int = 600):
    """The segment's notebook executed offline in a fresh kernel with the frozen clock, timing recorded per cell.

    Raises TrackError naming the first cell that raised."""
    nb = track_notebook(segment)
    old = dict(os.environ)
    workshop_env.apply()
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), old.get("PYTHONPATH")]))
    try:
        NotebookClient(nb, timeout=timeout, record_timing=True, kernel_name="python3",
                       resources={"metadata": {"path": str(ROOT / "notebooks")}}).execute()
    except CellExecutionError as error:
        failed = next((c for c in nb.cells if c.cell_type == "code"
                       and any(o.get("output_type") == "error" for o in c.get("outputs", []))), None)
        first_line = failed.source.splitlines()[0] if failed is not None and failed.source else "?"
        last = ANSI.sub("", str(error)).strip().splitlines()[-1]
        raise TrackError(f"{segment.notebook}, cell starting {first_line!r}: {last}") from None
    finally:
        os.environ.clear()
        os.environ.update(old)
    return nb


def segment_minutes(segment: Segment, nb) -> tuple[float, float, float, float]:
    """(run, narration, demos, exercise) minutes of one segment; nb is the executed track notebook (or any
    notebook: only the sections the segment runs, and its opening cells' run time, are counted)."""
    parts = sections(nb)
    chosen = [cells for key, cells in parts if key in segment.run]
    ran = [cells for key, cells in parts if key == "intro" or key in segment.run]
    words = sum(len(c.source.split()) for cells in chosen for c in cells if c.cell_type == "markdown")
    run = sum(run_seconds(c) for cells in ran for c in cells if c.cell_type == "code") / 60
    return (run, words / WORDS_PER_MINUTE, DEMO_MINUTES * len(segment.demo),
            EXERCISE_MINUTES if segment.exercise else 0.0)


def stamp(minutes: float) -> str:
    return f"{int(minutes // 60)}:{int(round(minutes % 60)):02d}"


def table(rows) -> list[str]:
    """The README's live-track table: rows are (segment, (run, narration, demo, exercise))."""
    out = ["| start | end | notebook | run these sections | demo live (type, don't narrate) | skip | "
           "minutes: run + narration + demo + exercise |", "|---|---|---|---|---|---|---|",
           f"| 0:00 | {stamp(OPENING_MINUTES)} | — | opening: open `live_track.ipynb` (or 01) in Colab and run its "
           f"setup cell | | | {OPENING_MINUTES} |"]
    clock = float(OPENING_MINUTES)
    for index, (seg, (run, talk, demo, exercise)) in enumerate(rows):
        minutes = round(run + talk + demo + exercise)
        sections_run = ", ".join(f"**{name} live**" if name == seg.exercise else name for name in seg.run)
        demos = "; ".join(filter(None, [", ".join(seg.demo), seg.demo_note]))
        out.append(f"| {stamp(clock)} | {stamp(clock + minutes)} | {seg.notebook[:2]} | {sections_run} | {demos} | "
                   f"{seg.skip} | {run:.1f} + {talk:.1f} + {demo:.0f} + {exercise:.0f} = {minutes} |")
        clock += minutes
        if index == len(rows) // 2:
            out.append(f"| {stamp(clock)} | {stamp(clock + BREAK_MINUTES)} | — | break | | | {BREAK_MINUTES} |")
            clock += BREAK_MINUTES
    buffer = TOTAL_MINUTES - clock
    out.append(f"| {stamp(clock)} | {stamp(TOTAL_MINUTES)} | — | questions (the buffer the measured segments "
               f"leave) | | | {buffer:.0f} |")
    return out


def main() -> int:
    started, rows = time.monotonic(), []
    for segment in TRACK:
        began = time.monotonic()
        nb = execute(segment)
        rows.append((segment, segment_minutes(segment, nb)))
        print(f"{segment.notebook}: ran in {time.monotonic() - began:.0f} s (kernel start included)", file=sys.stderr)
    print("\n".join(table(rows)))
    taught = sum(sum(parts) for _, parts in rows)
    print(f"\nsegments {taught:.0f} minutes, with opening and break {taught + OPENING_MINUTES + BREAK_MINUTES:.0f} "
          f"(dry run took {time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
