"""Facts in the agent's context (notebook 10): prompt-ready lines from a ``FactMemory``.

``format_facts`` lists current facts with the sources behind them (for people: the chat window's
facts pane). ``facts_message`` is the system message an agent reads: each current value marked
``(current)``, each value a correction replaced marked ``(superseded)`` with what replaced it, and
a key whose sources disagree shown as unsettled - so an old value never reaches the model unmarked.

Every fact is exactly one line, written by ``helpers.core.context_format.write_fact_line`` (the format's
owner, whose reader the offline stand-in uses): values, subjects, attributes and source names pass
through ``one_line`` (a line break in a value is shown as ``\\n``), so a value can never add a line of
its own -- a forged ``- delivery window: evening (current)`` fact, say.
"""
from __future__ import annotations

from typing import Any, Sequence

from helpers.core.context_format import FACTS_TITLE, one_line, quote_text, write_fact_line  # the fact line's owner
from helpers.facts.fact_store import StoredFact


def _label(fact: StoredFact) -> str:
    who = "" if fact.subject == "user" else f"{fact.subject} "
    return one_line(f"{who}{fact.attribute.replace('_', ' ')}")


def _sources(fact: StoredFact) -> str:
    return one_line(", ".join(sorted(fact.supporters)))


def format_facts(facts: Sequence[StoredFact], title: str = FACTS_TITLE) -> str:
    """Render active facts as lines, each with the sources behind it."""
    if not facts:
        return f"{title}: none recorded."
    lines = [f"{title}:"]
    for fact in facts:
        sources = _sources(fact) or "no eligible source"
        lines.append(write_fact_line(_label(fact), fact.value, f"source: {sources}"))
    return "\n".join(lines)


def facts_message(memory: Any, user_id: str, title: str = FACTS_TITLE) -> dict:
    """A system message with a ``FactMemory``'s facts about the user: current, superseded, disputed."""
    current = memory.active_facts(user_id)
    by_id = {fact.id: fact for fact in current}
    lines = [f"{title} (use the values marked current):"]
    lines += [write_fact_line(_label(f), f.value, "current", f"; source: {_sources(f)}") for f in current]
    lines += [write_fact_line(_label(f), f.value, "superseded",
                              f'; replaced by "{quote_text(by_id[f.superseded_by].value)}"')
              for f in memory.history(user_id) if f.superseded_by in by_id]
    disputed = sorted({_label(f) for f in memory.conflicts(user_id)})
    lines += [write_fact_line(label, "not settled, sources disagree; ask the user") for label in disputed]
    if len(lines) == 1:
        lines.append("- none recorded")
    return {"role": "system", "content": "\n".join(lines)}
