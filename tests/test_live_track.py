"""The live track runs as listed: per notebook, the opening cells plus exactly the track's sections, in a fresh
kernel, offline, without an error; and the dry-run script measures those very runs."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import live_track  # noqa: E402

README = (ROOT / "README.md").read_text()
_EXECUTED: dict[str, object] = {}


def executed(segment):
    """The segment's track notebook, executed once per test session (a fresh kernel each)."""
    if segment.notebook not in _EXECUTED:
        _EXECUTED[segment.notebook] = live_track.execute(segment, timeout=300)
    return _EXECUTED[segment.notebook]


def printed(nb) -> str:
    return "\n".join(out.get("text", "") if isinstance(out.get("text", ""), str) else "".join(out["text"])
                     for cell in nb.cells if cell.cell_type == "code" for out in cell.get("outputs", []))


def segment_named(prefix):
    return next(s for s in live_track.TRACK if s.notebook.startswith(prefix))


@pytest.mark.parametrize("segment", live_track.TRACK, ids=lambda s: s.notebook)
def test_the_segment_runs_after_its_setup_alone_in_a_fresh_kernel(segment):
    try:
        nb = executed(segment)
    except live_track.TrackError as error:
        pytest.fail(f"the live track raises: {error}")
    ran = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert ran and all(cell.execution_count for cell in ran), "every code cell of the segment ran"


@pytest.mark.parametrize("segment", live_track.TRACK, ids=lambda s: s.notebook)
def test_the_track_notebook_holds_the_setup_and_exactly_the_listed_sections(segment):
    whole = nbformat.read(ROOT / "notebooks" / f"{segment.notebook}.ipynb", as_version=4)
    keys = [key for key, _ in live_track.sections(live_track.track_notebook(segment))]
    assert keys[0] == "intro" and keys[1:] == [key for key, _ in live_track.sections(whole)
                                               if key in segment.run]
    assert set(segment.run) <= set(keys), f"{segment.notebook}: the track lists a section the notebook lacks"
    assert set(segment.demo) <= set(segment.run) and (segment.exercise is None or segment.exercise in segment.run)


def test_a_missing_section_is_named():
    with pytest.raises(KeyError, match="no section"):
        live_track.track_notebook(live_track.Segment("07_memory_session", ["1", "99"], [], ""))


def test_a_cell_that_raises_fails_the_run_with_its_first_line(tmp_path, monkeypatch):
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1"),
                                         nbformat.v4.new_markdown_cell("## 1. A"),
                                         nbformat.v4.new_code_cell("print(undefined_name)")])
    nbformat.write(nb, notebooks / "99_broken.ipynb")
    monkeypatch.setattr(live_track, "ROOT", tmp_path)
    with pytest.raises(live_track.TrackError, match=r"99_broken.*print\(undefined_name\).*NameError"):
        live_track.execute(live_track.Segment("99_broken", ["1"], [], ""), timeout=60)


def test_notebook_10_shows_its_store_before_the_correction():
    out = printed(executed(segment_named("10_")))
    stored = re.search(r"^correction\s+\w+=", out, re.MULTILINE)  # show(): a decision the store wrote
    assert "schema version:" in out and stored, "the store is opened and a correction is written to it"
    assert out.index("schema version:") < stored.start(), "the store is shown before the correction"


def test_notebook_12_is_preceded_by_11s_save_restart_and_resume():
    names = [s.notebook[:2] for s in live_track.TRACK]
    assert names.index("11") < names.index("12")
    track_11 = live_track.track_notebook(segment_named("11_"))
    assert any("%reset -f" in c.source for c in track_11.cells if c.cell_type == "code"), "the restart is run"
    out = printed(executed(segment_named("11_")))
    assert "objects left: []" in out and "loaded a " in out, "the session is resumed from the file after the reset"


def test_minutes_grow_with_prose_demos_and_exercises():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("## 1. A\n" + "word " * 260),
                                         nbformat.v4.new_markdown_cell("## 2. B\n" + "word " * 130)])
    one = live_track.segment_minutes(live_track.Segment("x", ["1"], [], ""), nb)
    both = live_track.segment_minutes(live_track.Segment("x", ["1", "2"], ["2"], "", exercise="Exercise 1"), nb)
    assert round(one[1], 1) == round(262 / live_track.WORDS_PER_MINUTE, 1)
    assert both[1] > one[1] and both[2] == live_track.DEMO_MINUTES and both[3] == live_track.EXERCISE_MINUTES


def test_the_table_fits_the_two_hours_and_names_every_segment():
    rows = [(segment, (0.1, 5.0, 2.0, 0.0)) for segment in live_track.TRACK]
    lines = live_track.table(rows)
    assert all(any(f"| {s.notebook[:2]} |" in line for line in lines) for s in live_track.TRACK)
    assert lines[-1].startswith("| ") and "| 2:00 |" in lines[-1] and "break" in "\n".join(lines)


def test_the_readme_plan_lists_every_segment_and_a_live_exercise():
    live = README[README.index("**Live, 2 hours**"):README.index("**Self-study")]
    for segment in live_track.TRACK:
        row = rf"^\| \d:\d\d \| \d:\d\d \| {segment.notebook[:2]} \|"
        assert re.search(row, live, re.MULTILINE), f"the README's live track has no row for {segment.notebook}"
    assert any(s.exercise for s in live_track.TRACK) and "Exercise" in live


def test_the_live_notebook_is_what_the_track_writes():
    """notebooks/live_track.ipynb holds exactly the track's cells (one runtime for the whole track)."""
    committed = nbformat.read(live_track.LIVE_NOTEBOOK, as_version=4)
    written = live_track.live_notebook()
    assert [(c.cell_type, c.source) for c in committed.cells] == [(c.cell_type, c.source) for c in written.cells], \
        "run: python benchmarks/live_track.py --write"


def test_the_live_notebook_holds_every_segment_once_with_its_own_setup():
    live = live_track.live_notebook()
    text = [c.source for c in live.cells]
    assert sum("google.colab" in t for t in text) == 1, "one install for the whole track"
    for segment in live_track.TRACK:
        whole = nbformat.read(ROOT / "notebooks" / f"{segment.notebook}.ipynb", as_version=4)
        setup = [c.source for c in live_track.sections(whole)[0][1]
                 if c.cell_type == "code" and "google.colab" not in c.source]
        assert all(source in text for source in setup), f"{segment.notebook}'s setup code is in the live notebook"


def test_the_live_notebook_runs_whole_in_one_kernel():
    """Every segment after the one before it, in one runtime: no segment leans on, or is broken by, another."""
    try:
        live_track.execute_notebook(live_track.live_notebook(), live_track.LIVE_NOTEBOOK.name, timeout=300)
    except live_track.TrackError as error:
        pytest.fail(f"the live notebook raises: {error}")
