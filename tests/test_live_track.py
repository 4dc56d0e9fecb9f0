"""The live track names sections that exist, and the README's plan is the one the dry-run script measures."""
from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import live_track  # noqa: E402

README = (ROOT / "README.md").read_text()


@pytest.mark.parametrize("segment", live_track.TRACK, ids=lambda s: s.notebook)
def test_every_section_the_track_runs_exists_in_its_notebook(segment):
    nb = nbformat.read(ROOT / "notebooks" / f"{segment.notebook}.ipynb", as_version=4)
    keys = [key for key, _ in live_track.sections(nb)]
    for name in segment.run + segment.demo + ([segment.exercise] if segment.exercise else []):
        assert name in keys, f"{segment.notebook} has no section {name!r} (it has {keys})"
    assert set(segment.demo) <= set(segment.run)


def test_the_readme_plan_lists_every_segment_and_a_live_exercise():
    live = README[README.index("**Live, 2 hours**"):README.index("**Self-study")]
    for segment in live_track.TRACK:
        assert f"| {segment.notebook[:2]} |" in live, f"the README's live track has no row for {segment.notebook}"
    assert any(s.exercise for s in live_track.TRACK) and "Exercise" in live
    assert "the bridge" in live and "08" in live and "own runtime" in live


def test_minutes_grow_with_prose_demos_and_exercises():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("## 1. A\n" + "word " * 260),
                                         nbformat.v4.new_markdown_cell("## 2. B\n" + "word " * 130)])
    one = live_track.segment_minutes(live_track.Segment("x", ["1"], [], ""), nb)
    both = live_track.segment_minutes(live_track.Segment("x", ["1", "2"], ["2"], "", exercise="Exercise 1"), nb)
    assert round(one[1], 1) == round(262 / live_track.WORDS_PER_MINUTE, 1)
    assert both[1] > one[1] and both[2] == live_track.DEMO_MINUTES and both[3] == live_track.EXERCISE_MINUTES
