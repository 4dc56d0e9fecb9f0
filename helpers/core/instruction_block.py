"""The standing-instructions block of a system prompt (notebook 13): written here, read here.

Procedural memory keeps how a user wants to be answered ("no bullet points, please") as facts
(``helpers.facts.instruction_facts``). Before each turn they are added to the system prompt as a block of its
own: a header line, then one quoted line per instruction, in the user's own words::

    Standing instructions from the user (follow each one in every answer):
    - "no bullet points, please"
    - "always give the building with a room number"

``write_instruction_block`` writes it and ``read_instruction_block`` reads it back (the offline stand-in reads
it with this function, so the writer and the reader cannot drift apart). Each line is made one line
(``one_line``) and its double quotes single (``quote_text``), so an instruction can never add a line of its
own, and the block lives only in the system prompt: a recalled turn or a passage that copies the header is
not read as instructions.
"""
from __future__ import annotations

from typing import Sequence

from helpers.core.context_format import quote_text
from helpers.core.text import shorten

INSTRUCTIONS_HEADER = "Standing instructions from the user (follow each one in every answer):"
MAX_INSTRUCTION_CHARS = 160  # one instruction's line, at most (a longer one is cut with "...")


def instruction_line(text: str) -> str:
    """One instruction as its quoted line: ``- "<the user's words>"``."""
    return f'- "{shorten(quote_text(text), MAX_INSTRUCTION_CHARS, ellipsis="...", tidy=True)}"'


def write_instruction_block(instructions: Sequence[str]) -> str:
    """The block for ``instructions`` (oldest first), or "" when there are none."""
    lines = [instruction_line(text) for text in instructions if str(text).strip()]
    return "\n".join([INSTRUCTIONS_HEADER, *lines]) if lines else ""


def with_instructions(system_prompt: str | None, instructions: Sequence[str]) -> str | None:
    """``system_prompt`` followed by the block (the prompt unchanged when there is no instruction)."""
    block = write_instruction_block(instructions)
    if not block:
        return system_prompt
    return f"{system_prompt}\n\n{block}" if system_prompt else block


def read_instruction_block(system_prompt: str | None) -> list[str]:
    """The instructions of the block in ``system_prompt`` (the user's words, without quotes); [] without one.

    Only the lines right after the header that have the quoted shape count; reading stops at the first
    other line."""
    lines = str(system_prompt or "").split("\n")
    if INSTRUCTIONS_HEADER not in lines:
        return []
    found = []
    for line in lines[lines.index(INSTRUCTIONS_HEADER) + 1:]:
        if not (line.startswith('- "') and line.endswith('"') and len(line) > 4):
            break
        found.append(line[3:-1])
    return found
