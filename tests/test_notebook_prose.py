"""The notebooks' prose stays readable: at most 22 words per sentence on average in each notebook's markdown,
and no exercise prompt over 90 words.

How the prose is read (``prose_sentences``):

* left out: fenced code blocks, table rows, headings, images and badges, HTML tags;
* a code span (`like_this(x=1)`) counts as one word, whatever it holds; a link counts as its text;
* a sentence ends at ``.``, ``!`` or ``?`` followed by a space or the end of a line, at a blank line, and at
  the end of a bullet or numbered item (a bullet fragment is a sentence); "e.g.", "i.e.", "Dr." and the like
  end none;
* a word is a run of letters and digits, with apostrophes, hyphens or dots inside it ("don't", "0.30").

An exercise prompt is the text under an ``## Exercise N`` heading, up to the next heading or the end of its cell.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("[01][0-9]_*.ipynb"))
MAX_AVERAGE = 22.0
MAX_PROMPT_WORDS = 90

_FENCE = re.compile(r"^\s*(```|~~~).*?^\s*\1[^\n]*$", re.S | re.M)
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_TAG = re.compile(r"</?[a-zA-Z][^>]*>")
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_ABBREVIATIONS = re.compile(r"\b(?:e\.g|i\.e|etc|vs|cf|Dr|Mr|Mrs|Ms|Prof|St|approx|a\.m|p\.m|No)\.$", re.I)
_END = re.compile(r"(?<=[.!?])[\"”’')\]*_]*\s+")
_WORD = re.compile(r"\w(?:[\w'’.-]*\w)?")


def _blocks(markdown: str) -> list[str]:
    """The cell's prose as blocks: paragraphs and list items, each of which ends a sentence."""
    text = _FENCE.sub("\n\n", markdown)
    text = _IMAGE.sub(" ", text)
    text = _CODE_SPAN.sub(" code ", text)
    text = _LINK.sub(r"\1", text)
    text = _TAG.sub(" ", text)
    blocks: list[list[str]] = [[]]
    for line in text.splitlines():
        stripped = line.strip().lstrip(">").strip()
        if not stripped or stripped.startswith("#") or stripped.startswith("|"):
            blocks.append([])
            continue
        if _ITEM.match(stripped):
            blocks.append([])
            stripped = _ITEM.sub("", stripped)
        blocks[-1].append(stripped)
    return [" ".join(block) for block in blocks if block]


def prose_sentences(markdown: str) -> list[list[str]]:
    """The sentences of a markdown cell, each as its list of words (sentences without words are dropped)."""
    found = []
    for block in _blocks(markdown):
        pieces, current = _END.split(block), ""
        for piece in pieces:
            current = f"{current} {piece}".strip()
            if _ABBREVIATIONS.search(current):
                continue  # "e.g." ends no sentence: keep reading
            words = _WORD.findall(current)
            if words:
                found.append(words)
            current = ""
        if current and _WORD.findall(current):
            found.append(_WORD.findall(current))
    return found


def _markdown(path: Path) -> list[str]:
    return ["".join(cell["source"]) for cell in json.loads(path.read_text())["cells"]
            if cell["cell_type"] == "markdown"]


def average_words(path: Path) -> float:
    sentences = [s for cell in _markdown(path) for s in prose_sentences(cell)]
    return sum(map(len, sentences)) / max(len(sentences), 1)


def exercise_prompts(path: Path) -> dict[str, int]:
    """{"Exercise N — title": words of its prompt} for the notebook's exercise cells."""
    prompts = {}
    for cell in _markdown(path):
        for heading in re.finditer(r"^#{2,3}\s+(Exercise \d+[^\n]*)\n?(.*?)(?=^#{1,3}\s|\Z)", cell, re.S | re.M):
            prompts[heading.group(1).strip()] = sum(len(s) for s in prose_sentences(heading.group(2)))
    return prompts


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_sentences_average_at_most_22_words(path):
    longest = sorted((s for cell in _markdown(path) for s in prose_sentences(cell)), key=len)[-3:]
    assert average_words(path) <= MAX_AVERAGE, (
        f"{path.name}: {average_words(path):.1f} words per sentence; the longest: "
        + " | ".join(" ".join(s) for s in reversed(longest)))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_exercise_prompt_runs_over_90_words(path):
    long = {name: words for name, words in exercise_prompts(path).items() if words > MAX_PROMPT_WORDS}
    assert not long, f"{path.name}: {long}"


def test_the_reading_of_sentences():
    text = ("## A heading is no sentence\n\nOne two three. Four five, e.g. six? Seven `a.b(c=1). d` eight!\n"
            "A line that goes on\non the next line.\n\n- a bullet fragment\n- another one. With two sentences\n"
            "| a | table |\n|---|---|\n```python\nprint('code. is. left. out.')\n```\n"
            "> A quote with [a link](http://x.y/z.html) and ![an image](i.png) in it.")
    assert [len(s) for s in prose_sentences(text)] == [3, 4, 3, 9, 3, 2, 3, 8]


def test_a_long_sentence_fails_and_a_split_one_passes(tmp_path):
    long = tmp_path / "99_long.ipynb"
    cells = [{"cell_type": "markdown", "metadata": {}, "source": [" ".join(["word"] * 30) + "."]}]
    long.write_text(json.dumps({"cells": cells}))
    assert average_words(long) == 30
    cells[0]["source"] = [" ".join(["word"] * 15) + ". " + " ".join(["word"] * 15) + "."]
    long.write_text(json.dumps({"cells": cells}))
    assert average_words(long) == 15


def test_an_exercise_prompt_is_its_text_under_the_heading(tmp_path):
    cell = ("## 4. A section\n\nSection words here.\n\n## Exercise 3 — a long title of seven words\n\n"
            + "Write `f(x)` now. " * 4 + "\n## What you built\n\nNot the prompt.")
    path = tmp_path / "99_x.ipynb"
    path.write_text(json.dumps({"cells": [{"cell_type": "markdown", "metadata": {}, "source": [cell]}]}))
    assert exercise_prompts(path) == {"Exercise 3 — a long title of seven words": 12}
