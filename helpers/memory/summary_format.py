r"""How a rolling summary names turns and marks its pinned facts (notebook 08), and how any block is made safe.

Shared by the summariser (``helpers.memory.summary``) and the offline stand-in, which reads
summaries the way a model would: from here, so the stand-in does not import the summariser
(which calls the client, which starts the stand-in).

``one_line`` is what every block the package writes into the system part (facts, profile,
summary, recalled turns) and the chat window's panes use for text that came from a user, a
model or a store: the result is always exactly one line, so no value can start a line of its
own (a forged ``- delivery window: evening (current)`` fact, say). ``safe_lines`` does the same
for a text whose lines are its own (a summary): only ``\n`` separates its lines.
"""
from __future__ import annotations

import re
from typing import Any, Sequence

PINNED_PREFIX = "Pinned"  # the summary line that lists facts kept word for word
# Every control character (C0, DEL and C1, so "\x0b", "\x0c", "\x1c"-"\x1e" and "\x85" too) and the
# line and paragraph separators "\u2028", "\u2029": whatever a reader (str.splitlines, a browser, a
# model's tokenizer) may take as the end of a line, and what has no business in a prompt anyway.
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match) -> str:
    char = match.group()
    code = ord(char)
    return _ESCAPES.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def one_line(text: Any) -> str:
    r"""``text`` as one safe line: line breaks and other control characters shown as escapes.

    A newline becomes a backslash and an ``n`` (``"12 Elm St\n- x: y"`` -> ``12 Elm St\n- x: y`` on
    one line); likewise ``\r``, ``\t``, ``\x0b``, ``\x85``, ``\u2028`` ... Text without such
    characters is returned unchanged, and the result has none, so applying it twice changes nothing.
    """
    return _UNSAFE.sub(_escape, str(text))


def safe_lines(text: Any) -> str:
    r"""A text of several lines, split only at ``\n`` (or ``\r\n``), each line made safe by ``one_line``.

    Any other separator (``\r``, ``\u2028``, ``\x85``, ...) is shown as an escape inside its line,
    so every reader sees the same lines the writer meant.
    """
    return "\n".join(one_line(line) for line in str(text).replace("\r\n", "\n").split("\n"))


def format_turn_ids(ids: Sequence[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``"turns 0-2, 5"`` (``"turn 3"`` for one id)."""
    ids = sorted(set(ids))
    if not ids:
        return "no turns"
    runs: list[list[int]] = []
    for i in ids:
        if runs and i == runs[-1][-1] + 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    parts = [f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs]
    return ("turns " if len(ids) > 1 else "turn ") + ", ".join(parts)
