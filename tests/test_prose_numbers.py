"""A number the prose states as a measurement is one an output below it prints.

The rule (``stated_numbers``): in a markdown cell, a number followed by a unit — tokens, %, characters, seconds,
ms, minutes, bytes, words, requests or times — is a statement of a measurement, unless it is marked as a setting
or a rough figure ("about", "~", "up to", "at most", "under", "over", "per"), or it sits in a code span, a table
or a heading, and unless it is a rate ("200 words a minute"). Such a number must appear, as a whole number, in
the output of the code cell just above the markdown cell (the output it comments on) or of any code cell below
it, in the same notebook (thousands separators ignored: "1,500" matches "1500"). So prose that says "the summary
costs 176 tokens" fails the moment a re-run prints 180.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted(p for p in (ROOT / "notebooks").glob("[01][0-9]_*.ipynb") if "07" <= p.name[:2] <= "13")

UNIT = r"(?:%|\s*(?:tokens?|characters?|chars|seconds?|s\b|ms\b|minutes?|bytes?|words?|requests?|times\b))"
NUMBER = re.compile(r"(?<![\w.,])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(?=" + UNIT + ")")
ROUGH = re.compile(r"(?:about|around|roughly|nearly|almost|~|up to|at most|at least|under|over|per|every|"
                   r"each|than|of|x|×)\s*$", re.IGNORECASE)
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
RATE = re.compile(UNIT + r"\s+(?:a|an|per)\s+\w+", re.IGNORECASE)  # "200 words a minute": a rate, not a result


def stated_numbers(markdown: str) -> list[str]:
    """The measurements a markdown cell states, as digit strings without separators ("1,500" -> "1500")."""
    found = []
    for line in markdown.splitlines():
        if line.lstrip().startswith(("#", "|", "![")):
            continue
        text = CODE_SPAN.sub(" code ", line)
        for match in NUMBER.finditer(text):
            if ROUGH.search(text[:match.start()]) or RATE.match(text, match.end()):
                continue
            found.append(match.group(1).replace(",", ""))
    return found


def output_text(cell: dict) -> str:
    parts = []
    for out in cell.get("outputs", []):
        text = out.get("text") or out.get("data", {}).get("text/plain", "")
        parts.append(text if isinstance(text, str) else "".join(text))
    return "\n".join(parts)


def printed(text: str, number: str) -> bool:
    plain = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)
    return re.search(rf"(?<![\d.]){re.escape(number)}(?![\d]|\.\d)", plain) is not None


def unprinted(nb: dict) -> list[tuple[int, str]]:
    """(markdown cell index, number) for each stated measurement no later output prints."""
    cells, missing = nb["cells"], []
    for index, cell in enumerate(cells):
        if cell["cell_type"] != "markdown":
            continue
        above = next((c for c in reversed(cells[:index]) if c["cell_type"] == "code"), None)
        later = "\n".join(output_text(c) for c in [*([above] if above else []), *cells[index + 1:]]
                          if c["cell_type"] == "code")
        missing += [(index, n) for n in stated_numbers("".join(cell["source"])) if not printed(later, n)]
    return missing


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_measurement_the_prose_states_is_printed_below_it(path):
    missing = unprinted(json.loads(path.read_text()))
    assert not missing, f"{path.name}: numbers stated in prose that no later output prints: {missing}"


def test_the_rule_reads_measurements_and_leaves_settings_and_rough_figures():
    assert stated_numbers("The summary costs 176 tokens, 12% of the request.") == ["176", "12"]
    assert stated_numbers("It took 1,500 ms.") == ["1500"]
    assert stated_numbers("about 630 tokens; up to 20 turns; `max_tokens=300` tokens") == []
    assert stated_numbers("## 9. Trimming to 300 tokens\n| 1 | 2 tokens |") == []
    assert stated_numbers("version 5 of 7 facts") == []
    assert stated_numbers("prose at 200 words a minute, 20 lines per minute") == []


def test_a_number_neither_the_output_above_nor_one_below_prints_is_found():
    nb = {"cells": [{"cell_type": "code", "outputs": [{"output_type": "stream", "text": "cost: 176 tokens"}]},
                    {"cell_type": "code", "outputs": [{"output_type": "stream", "text": "cost: 180 tokens"}]},
                    {"cell_type": "markdown", "source": ["The summary costs 176 tokens."]},
                    {"cell_type": "code", "outputs": [{"output_type": "stream", "text": "cost: 1,760 tokens"}]},
                    {"cell_type": "markdown", "source": ["It prints 1760 tokens."]},
                    {"cell_type": "code", "outputs": [{"output_type": "stream", "text": "1760"}]}]}
    assert unprinted(nb) == [(2, "176")]  # 176 is printed, but two cells up: not the output it comments on
    nb["cells"][1]["outputs"][0]["text"] = "cost: 176 tokens"
    assert unprinted(nb) == []
