"""How a rolling summary names turns and marks its pinned facts (notebook 08).

Shared by the summariser (``helpers.memory.summary``) and the offline stand-in, which reads
summaries the way a model would: from here, so the stand-in does not import the summariser
(which calls the client, which starts the stand-in).
"""
from __future__ import annotations

from typing import Sequence

PINNED_PREFIX = "Pinned"  # the summary line that lists facts kept word for word


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
