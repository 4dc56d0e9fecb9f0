"""Exercises of notebook 10: teach the normaliser a customer's phrases, and describe a multi-valued attribute.

Both checks write to a throwaway in-memory fact store with fixed versions (no model, no clock): the same
answer is right on any backend and on any day.
"""
from __future__ import annotations

from typing import Any

from helpers.exercises import Exercise, Hint
from helpers.facts.writer import DEFAULT_ATTRIBUTES, AttributeSpec, Candidate, FactMemory

# ---------------------------------------------------------------- exercise 1: phrases for the normaliser

WINDOW = DEFAULT_ATTRIBUTES["delivery_window"]
SAID = (("First thing!", "morning"), ("first thing", "morning"), ("After dinner.", "evening"),
        ("after dinner", "evening"))


def _outcomes(attributes: dict[str, AttributeSpec], attribute: str, values: list[str]) -> list[str]:
    """Write ``values`` as one customer's statements, versions 1, 2, ...; return the outcomes."""
    with FactMemory.open(":memory:", attributes=attributes) as memory:
        return [memory.write(Candidate("c1", "user", attribute, value, "chat:c1", "user", version)).outcome
                for version, value in enumerate(values, start=1)]


def _check_phrases(my_phrases: Any) -> str:
    if not isinstance(my_phrases, dict) or not my_phrases:
        raise Hint("my_phrases should hold at least one phrase and its window, e.g. "
                   "{\"a phrase\": \"morning\"}.")
    wrong = {phrase: window for phrase, window in my_phrases.items() if window not in WINDOW.allowed}
    if wrong:
        raise Hint(f"{wrong} maps to something that is not a window; use one of {sorted(WINDOW.allowed)}.")
    spec = AttributeSpec("delivery_window", allowed=WINDOW.allowed, phrases={**WINDOW.phrases, **my_phrases})
    changed = [phrase for phrase, window in WINDOW.phrases.items() if spec.normalise(phrase) != window]
    if changed:
        raise Hint(f"your table changes what {changed[0]!r} means; add new phrases, do not redefine old "
                   "ones.")
    for text, window in SAID:
        got = spec.normalise(text)
        if got != window:
            raise Hint(f"{text!r} normalises to {got!r}, not {window!r}. Phrases are looked up after "
                       "normalise_text (lower case, punctuation gone): write the key the way "
                       f"normalise_text({text!r}) = {' '.join(got.split())!r} spells it.")
    outcomes = _outcomes({**DEFAULT_ATTRIBUTES, "delivery_window": spec}, "delivery_window",
                         ["morning", "First thing!", "after dinner", "Evenings"])
    if outcomes != ["insert", "noop", "correction", "noop"]:
        raise Hint(f"morning, 'First thing!', 'after dinner', 'Evenings' gave {outcomes}; expected a "
                   "repeat, a correction and a repeat after the first insert.")
    return ("'First thing!' is a repeat of morning (noop), 'after dinner' corrects it to evening, and "
            "'Evenings' repeats that: outcomes " + ", ".join(outcomes))


exercise_1 = Exercise(
    "10.1", "teach the normaliser a customer's phrases",
    stub='my_phrases = {}  # phrase -> "morning", "afternoon" or "evening"',
    solution_code='my_phrases = {"first thing": "morning", "after dinner": "evening"}',
    checker=_check_phrases, answers=("my_phrases",),
    hints=("Each phrase maps to one of the allowed windows: morning, afternoon or evening.",
           "The value is first run through normalise_text (lower case, punctuation gone), then looked up: "
           "a key such as 'First thing!' can never match. Write 'first thing' and 'after dinner'."),
)

# ---------------------------------------------------------------- exercise 2: a multi-valued attribute

GIFTS = ["my sister", "My sis!", "my neighbour", "MY SISTER."]
EXPECTED_GIFTS = ["insert", "noop", "insert", "noop"]


def _check_gift_recipient(gift_recipient: Any) -> str:
    if not isinstance(gift_recipient, AttributeSpec) or gift_recipient.name != "gift_recipient":
        raise Hint("gift_recipient should be AttributeSpec(\"gift_recipient\", ...).")
    outcomes = _outcomes({**DEFAULT_ATTRIBUTES, "gift_recipient": gift_recipient}, "gift_recipient", GIFTS)
    if not gift_recipient.multi_valued:
        raise Hint(f"{GIFTS} gave {outcomes}: with one value per key, a new person replaces the first "
                   "(a correction). A customer can buy gifts for many people: set multi_valued=True.")
    if outcomes != EXPECTED_GIFTS:
        raise Hint(f"{GIFTS} gave {outcomes}, expected {EXPECTED_GIFTS}: 'My sis!' should be the same person "
                   "as 'my sister'. Map the word with words={\"sis\": \"sister\"}.")
    return f"two people, and both repeats recognised: {', '.join(outcomes)}"


exercise_2 = Exercise(
    "10.2", "a multi-valued attribute",
    stub=('gift_recipient = AttributeSpec("gift_recipient", '
          'description="someone the customer buys gifts for")'),
    solution_code=('gift_recipient = AttributeSpec("gift_recipient", multi_valued=True,\n'
                   '                               words={"sis": "sister"},\n'
                   '                               description="someone the customer buys gifts for")'),
    checker=_check_gift_recipient, answers=("gift_recipient",),
    hints=("Should a second person replace the first? Look at the allergy attribute in DEFAULT_ATTRIBUTES.",
           "Two settings: multi_valued=True (values never compete) and words={\"sis\": \"sister\"} (a short "
           "word for the same person)."),
    context=lambda: {"AttributeSpec": AttributeSpec},
)
