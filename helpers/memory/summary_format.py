r"""How a rolling summary names turns and marks its pinned facts (notebook 08), and how any block is made safe.

The formats live in ``helpers.context_format``, which owns every block written into a system message
(writers and readers, for the memory layer and the offline stand-in alike); this module keeps the
names the summariser, the assembler, the facts and the chat window import from here.

``one_line`` is what every block the package writes into the system part (facts, profile,
summary, recalled turns) and the chat window's panes use for text that came from a user, a
model or a store: the result is always exactly one line, so no value can start a line of its
own (a forged ``- delivery window: evening (current)`` fact, say). ``safe_lines`` does the same
for a text whose lines are its own (a summary): only ``\n`` separates its lines.
"""
from __future__ import annotations

from helpers.context_format import (  # noqa: F401  (re-exported: the one definition of each)
    PINNED_PREFIX, format_turn_ids, one_line, parse_turn_ids, read_pinned_line, safe_lines, write_pinned_line,
)
