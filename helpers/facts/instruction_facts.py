"""Procedural memory's write path (notebook 13): feedback on *how* to answer, as facts.

"No bullet points, please", "always give the building with a room number", "answer in Spanish from now
on": each is an instruction about the assistant's answers. It goes through the same write path as every
other fact (``helpers.facts.pipeline.write_turn`` into ``helpers.facts.writer.FactMemory``): provenance
``chat:<user>`` at the turn's version, a replay is a ``noop``, a new instruction on the same aspect
supersedes the old one (a correction), a rival from another source is a ``conflict``, and every decision is
audited. There is no second store: instructions are facts whose subject is ``INSTRUCTION_SUBJECT``.

The rule, ``instruction_aspect(sentence)``: a sentence is an instruction when

1. it names an **aspect of an answer** (``ASPECTS``: its format, length, language, tone, or a detail it must
   always carry), and
2. it is **about the answers**, not the world ("keep it short", "your answers", "answer ..."; "I like short
   walks" names a length and is about walks; words said only of text, "bullet points", need no verb), and
3. it is **standing feedback**, not a question asked once: no question mark, unless it is a request
   ("could you answer in Spanish from now on?").

Only the user's words are read (``RuleExtractor`` passes the user's text alone): a tool result, a retrieved
passage or the assistant's own reply never reaches the rule, so none of them can plant an instruction.
"""
from __future__ import annotations

import re

from helpers.facts.pipeline import AttributeSet, Found
from helpers.facts.schema import AttributeSpec

INSTRUCTION_SUBJECT = "assistant"  # what an instruction is about: how the assistant answers

FORMAT, LENGTH, LANGUAGE, TONE, DETAIL = ("answer format", "answer length", "answer language", "answer tone",
                                          "required detail")
LANGUAGES = ("english", "spanish", "french", "german", "italian", "portuguese", "dutch", "polish", "russian",
             "ukrainian", "turkish", "arabic", "hebrew", "hindi", "bengali", "chinese", "mandarin", "cantonese",
             "japanese", "korean", "vietnamese", "thai", "indonesian", "swahili", "greek", "swedish", "norwegian",
             "danish", "finnish", "czech")
# aspect -> the words that name it (the language aspect also needs an answering verb; see _about_answers)
ASPECTS = {
    FORMAT: r"\bbullet(?:ed)?s?\b|\bbullet points?\b|\blists?\b|\bnumbered\b|\btables?\b|\bheadings?\b|"
            r"\bmarkdown\b|\bemojis?\b|\bplain text\b",
    LENGTH: r"\bshort(?:er)?\b|\bbrief(?:ly)?\b|\bconcise(?:ly)?\b|\blong(?:er)?\b|\bdetailed\b|\bsentences?\b|"
            r"\bone line\b|\bparagraphs?\b|\b\d+ words\b|\bverbose\b|\bto the point\b",
    LANGUAGE: r"\b(?:in|into)\s+(?:" + "|".join(LANGUAGES) + r")\b",
    TONE: r"\bformal(?:ly)?\b|\binformal(?:ly)?\b|\bcasual(?:ly)?\b|\bfriendl(?:y|ier)\b|\bpolite(?:ly)?\b|"
          r"\bjokes?\b|\bslang\b",
    DETAIL: r"\b(?:always|every time|each time|whenever)\b.*\b(?:give|include|mention|add|tell|say|show|name|"
            r"put|list)\b",
}
ANSWERING = (r"\b(?:answers?|answering|repl(?:y|ies)|respond|responses?|write|writing|format|explain|talk|"
             r"speak|say|tell me|give me|use|using|keep it|keep them|keep your|be more|be less|your)\b")
STANDING = (r"\b(?:from now on|always|never|in future|going forward|every (?:answer|time|reply)|stop|please|"
            r"no more|don'?t|do not|i (?:prefer|want|would like|'d like))\b|^no\b")
TEXT_ONLY = r"\bbullet|\bmarkdown\b|\bemojis?\b|\bheadings?\b|\bplain text\b"  # said only of text: no verb needed
OPENS = (r"^(?:please )?(?:answer|reply|respond|use|keep|give|write|be|include|make|avoid|put|format|explain|"
         r"talk|speak|say|stick to|limit)\b")  # an instruction that opens with how to answer
REQUEST = r"^(?:can|could|would|will) you\b"  # a request phrased as a question


def instruction_aspect(sentence: str) -> str | None:
    """The aspect of an answer ``sentence`` gives standing feedback on (``FORMAT`` ...), or None when it is
    not an instruction (see the module for the three conditions)."""
    text = " ".join(str(sentence).split()).lower()
    if not text or text.startswith("forget"):
        return None  # "forget my sister" asks to delete, it says nothing about how to answer
    if "?" in text and not (re.search(REQUEST, text) and re.search(STANDING, text)):
        return None  # a question asked once ("can you list the clubs?"), not feedback
    aspect = next((name for name, words in ASPECTS.items() if re.search(words, text)), None)
    if aspect is None:
        return None
    if aspect != DETAIL and not (re.search(ANSWERING, text) or re.search(TEXT_ONLY, text) or re.match(OPENS, text)):
        return None  # names a length or a list, but about something else ("I like short walks")
    if not (re.search(STANDING, text) or re.match(OPENS, text)):
        return None  # neither a standing cue nor an instruction that opens with how to answer
    return aspect


def split_sentences(text: str) -> list[str]:
    """``text`` cut after each ``.``, ``!`` or ``?`` that a space or the end follows (and at line breaks)."""
    return [part.strip() for part in re.split(r"(?<=[.!?])\s+|\n+", str(text)) if part.strip()]


def find_instructions(user_text: str) -> list[Found]:
    """Every instruction in the user's words: one ``Found`` per sentence, its value the sentence itself."""
    found = []
    for sentence in split_sentences(str(user_text or "")):
        aspect = instruction_aspect(sentence)
        if aspect is not None:
            words = " ".join(sentence.split()).rstrip(".!")
            found.append(Found(aspect, words, words, subject=INSTRUCTION_SUBJECT))
    return found


INSTRUCTIONS = AttributeSet(
    name="instructions",
    attributes={spec.name: spec for spec in (
        AttributeSpec(FORMAT, description="how answers are laid out (bullet points, lists, plain text)"),
        AttributeSpec(LENGTH, description="how long answers are"),
        AttributeSpec(LANGUAGE, description="the language answers are written in"),
        AttributeSpec(TONE, description="the tone of answers"),
        AttributeSpec(DETAIL, multi_valued=True, description="a detail every answer must carry"),
    )},
    rules=find_instructions,
)
