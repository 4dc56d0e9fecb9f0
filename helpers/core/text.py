"""Shortening text for a message, a trace line or a quote: the one ``shorten`` every module uses.

It sits at the bottom of the package (it imports nothing from ``helpers``), so the client, the tools,
the agent loop, the memory and the stand-in all cut text the same way::

    shorten("When does the\\n  AI club meet?", 16)   # -> 'When does the A…'

What a caller adds around it stays with the caller: ``repr`` of a value, a hidden key, control
characters shown as escapes (``helpers.core.context_format.one_line``).
"""
from __future__ import annotations

from typing import Any

ELLIPSIS = "…"


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
