"""Shortening text for a message, a trace line or a quote: the one ``shorten`` every module uses.

It sits at the bottom of the package (it imports nothing from ``helpers``), so the client, the tools,
the agent loop, the memory and the stand-in all cut text the same way::

    shorten("When does the\\n  AI club meet?", 16)   # -> 'When does the A…'

What a caller adds around it stays with the caller: ``repr`` of a value, a hidden key. Characters no
reader should act on are shown as escapes by the one ``escape_controls`` below, which both the terminal chat
(``helpers.app.terminal_chat.terminal_text``) and every prompt line (``helpers.core.context_format.one_line``)
use, so the two escape the same characters the same way.
"""
from __future__ import annotations

import re
from typing import Any

ELLIPSIS = "…"

# What a terminal, a browser or a model's tokenizer may act on instead of showing, as one character class:
# C0 controls (ESC starts CSI/OSC sequences: cursor moves, screen clears, OSC 52 clipboard writes, window
# titles; \r overwrites the line; \x0b, \x0c, \x1c-\x1e end a line for str.splitlines), DEL, the C1 controls
# (8-bit CSI and OSC; \x85 ends a line), the line and paragraph separators \u2028 and \u2029, bidirectional
# overrides and isolates (they reorder the text after them, so what is shown is not what was said), and lone
# surrogates (they cannot be encoded, so printing or storing them fails). Newline and tab are in it too:
# ``escape_controls`` keeps them unless asked not to.
UNSAFE_CHARS = "\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff"
_UNSAFE = re.compile(f"[{UNSAFE_CHARS}]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escaped(match: re.Match) -> str:
    char = match.group()
    code = ord(char)
    return _NAMED.get(char) or (f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}")


def escape_controls(text: Any, *, keep: str = "\n\t") -> str:
    r"""``text`` with every character of ``UNSAFE_CHARS`` but those in ``keep`` shown as its Python escape.

    ``\x1b``, ``\x9b``, ``\u202e``, ``\ud800`` (and ``\n``, ``\r``, ``\t`` by name): the reader sees that
    they were there, and nothing acts on them. ``keep`` (newline and tab by default, as a terminal shows them)
    may hold only those two; ``keep=""`` makes any text one line. Text without such characters comes back
    unchanged, and the result has none but those kept, so applying it twice changes nothing.
    """
    if keep.strip("\n\t"):
        raise ValueError(f"escape_controls keeps only newline and tab, not {keep!r}")
    return _UNSAFE.sub(lambda found: found.group() if found.group() in keep else _escaped(found), str(text))


def shorten(text: Any, width: int, *, ellipsis: str = ELLIPSIS, flatten: bool = True, tidy: bool = False) -> str:
    """``text`` in at most ``width`` characters: when longer, its start followed by ``ellipsis``.

    ``flatten`` (the default) first puts it on one line: every run of white space, line breaks
    included, becomes one space, and none is left at either end. ``tidy`` drops white space left at
    the cut, just before the ellipsis. Anything that is not a ``str`` is shown with ``str()``.
    """
    text = str(text)
    if flatten:
        text = " ".join(text.split())
    if len(text) <= width:
        return text
    kept = text[: width - len(ellipsis)]
    return (kept.rstrip() if tidy else kept) + ellipsis


def bracket_depth(text: str, openers: str = "[{", closers: str = "]}") -> int:
    """How deeply JSON text nests arrays and objects (brackets inside strings do not count), without parsing it.

    ``openers``/``closers`` may add "(" and ")" for Python literals such as ``str(result)``.
    """
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in openers:
            depth += 1
            deepest = max(deepest, depth)
        elif char in closers:
            depth -= 1
    return deepest
