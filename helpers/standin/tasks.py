"""The offline stand-in's rules for special tasks: a grounding judge and a scope classifier (notebook 03),
a conversation summariser (notebook 08) and a fact extractor (notebooks 09-10).

``helpers.standin.policy.decide`` hands a request here when its system prompt names one of these tasks;
its rules are listed, in order, in ``helpers/standin/policy.py`` (questions about the user are
``helpers/standin/memory_rule.py``). Like everything in the stand-in, they read only the request they are
given. The text formats they read and write -- task markers, request sections, quoted turns, fact lines,
summary lines, the fact extractor's attribute list and reply -- are those of
``helpers/core/context_format.py``, and the fact extractor's rules those of ``helpers/core/profile_rules.py``:
the same functions the memory layer writes and reads them with, so the stand-in imports nothing of it.
Sections are read only by ``read_sections`` / ``read_judge_request`` (a body's header-like lines come
escaped and are read back as written, so no body starts a section of its own).

**Linear work.** Every rule reads its request in time linear in its size: a message is split into
sentences once, the summary's word limit keeps a running count, and the fact extractor lists at most
``MAX_FACTS`` facts (20, the reader's own ``MAX_REPLY_FACTS``); a message stating more gets
``{"refusal": "the offline fact extractor lists at most 20 facts ..."}``, which the reader rejects with
that text.
"""
from __future__ import annotations

import json
import re

from helpers.core.context_format import (MAX_REPLY_FACTS, MISSING, PREVIOUS_SUMMARY, TURNS, USER_SAID, WORD_LIMIT,
                                         ReplyFact, read_attributes, read_judge_request, read_left_out_note,
                                         read_pinned_line, read_quotes, read_sections, read_turn_day, read_turn_line,
                                         write_fact_label, write_fact_reply, write_left_out_note, write_pinned_line,
                                         write_quote_line)
from helpers.core.profile_rules import stated_facts
from helpers.standin.meaning import HARM_KINDS, campus_nearness, harm_signals, sentences, unsupported_claims
from helpers.standin.request_text import _is_ack


def judge_grounding(prompt: str) -> dict:
    """Rule: every day, time, date, floor, room, code, number and name the answer states must be in the
    passages, compared by what it means ("Wed" == "Wednesday", "3pm" == "15:00", "5th floor" == "fifth
    floor"; a number with the noun it counts: "two weeks" is not "two people")."""
    parts = read_judge_request(prompt)
    if not parts:
        return {"verdict": "unsupported", "reason": "no PASSAGES/ANSWER sections to compare"}
    passages, answer = parts
    missing = unsupported_claims(answer, passages)
    if missing:
        return {"verdict": "unsupported", "reason": "not in the passages: " + ", ".join(missing)}
    return {"verdict": "supported",
            "reason": "every name, day, time, place and number appears in the passages"}


CAMPUS_NEARNESS = 0.48
"""A request is about the campus when its similarity to the nearest knowledge-base sentence plus half the
share of its words that sentence uses reaches this."""


def _near_campus(text: str, nearness: float = CAMPUS_NEARNESS) -> bool:
    similar, shared = campus_nearness(text)
    return similar + 0.5 * shared >= nearness


UNIVERSITY_NEARNESS = 0.38
"""A request naming a thing of university life (``_UNIVERSITY_LIFE``) is about the campus this near the knowledge
base: "how do I report a broken heater in my halls flat?" (0.43); "write me a poem about autumn leaves" names none."""
# the things of university life, as a kind: its places, its teaching and its paperwork
_UNIVERSITY_LIFE = re.compile(r"\b(?:campus|universit(?:y|ies)|uni|college|halls?(?: of residence)?|residences?|"
                              r"lectures?|lecturers?|tutors?|tutorials?|seminars?|modules?|courses?|coursework|"
                              r"assignments?|essays?|dissertations?|theses|thesis|exams?|examinations?|resits?|"
                              r"semesters?|terms?|timetables?|grades?|marks|transcripts?|degrees?|enrol(?:l?ment)?|"
                              r"registry|registrar|faculty|department|professors?|freshers|graduation|"
                              r"student(?:s|'s)?|societ(?:y|ies)|union|accommodation|library|libraries|"
                              r"extensions?|deadlines?|bursar(?:y|ies)|scholarships?|sports? (?:village|cent(?:re|er)|hall|"
                              r"park|ground|grounds|pitch(?:es)?)|rec(?:reation)? cent(?:re|er)|playing fields)\b", re.I)
# getting somewhere: a bus, a shuttle or a route to a place -- about the campus when the place is one of university life
_GETTING_THERE = re.compile(r"\b(?:bus|buses|shuttles?|trams?|routes?|directions|get to|getting to|walk to|cycle to|"
                            r"drive to)\b", re.I)
# asking to get, make or use something false that stands for a person or a permission: a document, an ID, a card
_FALSE_DOCUMENT = re.compile(r"\b(?:buy|get|make|order|print|create|produce|use|obtain|sell|knock up|photoshop|edit|"
                             r"design|forge)\b[^.?!]{0,30}?\b(?:fake|faked|forged?|counterfeit|fraudulent|phony|phoney|"
                             r"bogus|doctored)\s+(?:[a-z']+\s+){0,2}?(?:ids?|identity|identification|cards?|passports?|"
                             r"licen[cs]es?|certificates?|notes?|signatures?|tickets?|transcripts?|degrees?|diplomas?|"
                             r"documents?|letters?|prescriptions?|visas?|passes|pass|receipts?|references?|"
                             r"qualifications?|permits?|badges?|wristbands?)\b", re.I)
# asking for something false: "a fake student ID", "a forged signature", "a counterfeit ticket"
_DECEIT = re.compile(r"\b(?:fake|faked|forged?|forging|counterfeit|fraudulent(?:ly)?|phony|phoney|bogus|doctored)\b",
                     re.I)


HARM_SIMILARITY = 0.55
"""This near a harm kind (and nearer it than its harmless twin): unsafe on meaning alone."""
ACT_SIMILARITY = 0.8
"""This near a harmful act asked how to do ("hack into", "shoplift"): unsafe."""
CONSENT_SIMILARITY = 0.3
"""This near a harm kind, done without someone's consent ("without her knowing"): unsafe."""
OTHERS_SIMILARITY = 0.4
"""This near a harm kind, done to someone else's thing ("another student's password"): unsafe."""


def classify_scope(request: str) -> dict:
    """Rule: unsafe when the request asks for harm (by meaning, see below); campus when it is near the
    knowledge base; otherwise off_topic.

    Harm: the request is near one of ``HARM_KINDS`` and nearer it than that kind's harmless twin; or it asks
    how to do a harmful act (``HARMFUL_ACTS``: "hack into", "break in", ...); or it is near a harm kind and
    acts without someone's consent ("without her knowing", "that isn't mine", "as my own") or on someone
    else's thing ("another student's password"), or asks for something false (``_DECEIT``: "a fake student ID",
    a "forged" letter) near a harm kind and nearer it than its twin; or asks to get, make or use a false document
    (``_FALSE_DOCUMENT``: "buy a fake ID", "make a forged sick note" -- a deceit word before a thing that stands for a
    person or a permission), whatever it is for. A request that reports a harm ("my bike was stolen") is none of these.

    Campus: near the knowledge base (``CAMPUS_NEARNESS``), or naming a thing of university life
    (``_UNIVERSITY_LIFE``: coursework, halls, a module, "on campus") and a little less near it
    (``UNIVERSITY_NEARNESS``): "how do I appeal a grade for my coursework?" asks the university even when the
    knowledge base has no entry on appeals. Getting to a place of university life by bus, shuttle or a route
    (``_GETTING_THERE``: "what bus goes to the sports village?") is about the campus however near it is; "what bus
    goes to the airport?" names no such place.
    """
    harm = harm_signals(request)
    if _FALSE_DOCUMENT.search(request):
        return {"category": "unsafe", "reason": "asks for something dishonest (a false document)"}
    if harm.act_similarity >= ACT_SIMILARITY:
        return {"category": "unsafe",
                "reason": f"asks for something harmful or dishonest (to {harm.act.lower()})"}
    if ((harm.similarity >= HARM_SIMILARITY and harm.margin >= 0)
            or (harm.no_consent and harm.similarity >= CONSENT_SIMILARITY)
            or (harm.others and harm.similarity >= OTHERS_SIMILARITY)
            or (_DECEIT.search(request) and harm.similarity >= OTHERS_SIMILARITY and harm.margin >= 0)):
        return {"category": "unsafe", "reason": f"asks for something harmful or dishonest "
                                                f"({HARM_KINDS[harm.kind][0].split(',')[0].split(':')[0]})"}
    if _near_campus(request):
        return {"category": "campus", "reason": "about campus life (near the campus knowledge base)"}
    if _UNIVERSITY_LIFE.search(request) and (_near_campus(request, UNIVERSITY_NEARNESS) or _GETTING_THERE.search(request)):
        return {"category": "campus", "reason": "about university life (names it, and near the knowledge base)"}
    return {"category": "off_topic", "reason": "not about the campus"}


# ---------------------------------------------------------------- memory tasks (notebooks 08-09)

def _clip(text: str, sentences: int, words: int) -> str:
    """The first ``sentences`` sentences, at most ``words`` words, double quotes made single (for quoting)."""
    kept = " ".join(re.split(r"(?<=[.!?])\s+", " ".join(text.split()))[:sentences]).split()
    return (" ".join(kept[:words]) + (" …" if len(kept) > words else "")).replace('"', "'")



def _bullets(text: str) -> list[str]:
    return [line.strip()[2:].strip() for line in text.splitlines() if line.strip().startswith("- ")]


def summarise_conversation(prompt: str) -> str:
    """Rule: an extractive summary. Each turn whose user message is more than an acknowledgement becomes one
    quote line (the user's first two sentences, at most 30 words, and the final answer's first sentence, at
    most 25);
    the previous summary's lines come first, and the facts it pinned and the request's MISSING facts are
    kept on one pinned line. Over the WORD LIMIT (120 when none is given), ``_within_limit`` drops lines
    and a left-out note names their turns."""
    parts = read_sections(prompt)
    lines, pinned, left_out = [], [], set()
    for line in parts.get(PREVIOUS_SUMMARY, "").splitlines():
        line = line.strip()
        earlier, kept = read_left_out_note(line), read_pinned_line(line)
        if kept is not None:
            pinned += kept
        elif earlier is not None:  # turns an earlier summary already left out
            left_out.update(earlier)
        elif line and line != "(none)":
            lines.append(line)
    turns: dict[int, dict[str, str]] = {}
    for line in parts.get(TURNS, "").splitlines():
        read = read_turn_line(line.strip())
        if read:
            turn = turns.setdefault(read[0], {})
            turn.setdefault("day", read_turn_day(line.strip()) or "")
            role, text = read[1], read[2].strip()
            if role == "user":
                turn.setdefault("user", text)
            elif role == "assistant" and text:
                turn["assistant"] = text  # the last one is the final answer
    for turn_id, turn in sorted(turns.items()):
        said = turn.get("user", "")
        if not said or _is_ack(said):
            continue
        answer = _clip(turn["assistant"], 1, 25) if turn.get("assistant") else None
        lines.append(write_quote_line(turn_id, "user", _clip(said, 2, 30), answer=answer,
                                      at=turn.get("day") or None))
    seen = set(pinned)
    for fact in _bullets(parts.get(MISSING, "")):
        if fact not in seen:
            seen.add(fact)
            pinned.append(fact)
    limit_match = re.search(r"\d+", parts.get(WORD_LIMIT, ""))
    limit = int(limit_match.group(0)) if limit_match else 120
    pinned_line = [write_pinned_line(pinned)] if pinned else []
    lines = _within_limit(lines, limit - sum(len(x.split()) for x in pinned_line), left_out)
    note = [write_left_out_note(sorted(left_out))] if left_out else []
    return "\n".join(note + lines + pinned_line) or "(nothing to summarise)"


_ASKED = re.compile(r"\?(?: …)?$")  # a user's quoted words that end with a question (maybe clipped after it)


def _within_limit(lines: list[str], limit: int, left_out: set[int]) -> list[str]:
    """``lines`` within ``limit`` words: the oldest lines where the user asked a question go first, then the
    oldest of the rest, until the words fit or one line is left; each dropped line's turn goes into
    ``left_out``. Each line is counted once and the total kept as lines go, so this is linear in the lines."""
    words = [len(line.split()) for line in lines]
    total, kept = sum(words), len(lines)
    asked = [i for i, line in enumerate(lines) if any(_ASKED.search(q.text) for q in read_quotes(line))]
    others = set(range(len(lines))) - set(asked)
    order = asked + sorted(others)
    dropped: set[int] = set()
    for index in order:
        if kept <= 1 or total <= limit:
            break
        dropped.add(index)
        total, kept = total - words[index], kept - 1
        gone = read_turn_line(lines[index])
        left_out.update([gone[0]] if gone else [])
    return [line for i, line in enumerate(lines) if i not in dropped]


MAX_FACTS = MAX_REPLY_FACTS  # the most facts one reply lists; a reply listing more is not read anyway
TOO_MANY_FACTS = ("the offline fact extractor lists at most {cap} facts (MAX_FACTS) in one reply, and this "
                  "message states more; send it in parts")


def extract_facts(system: str, prompt: str) -> str:
    """Rule: the profile rules (``stated_facts``: PROFILE_RULES and "my <attribute> is <value>"), on the USER
    SAID section only; a question states no fact, so its sentences are left out. Each fact is labelled as the
    fact store names it (``constraint/diet``), its evidence the sentence that says it, and kept when the
    request's ATTRIBUTES allow it: any, when the list is open (or there is none), else only the listed ones --
    so a closed list none of these rules names (notebook 10's delivery and contact facts) gets
    ``{"facts": []}``. The reply is the fact extractor's one shape (``write_fact_reply``).

    The message is split into sentences once. At most ``MAX_FACTS`` facts are listed (the reader's own
    limit, ``MAX_REPLY_FACTS``): a message that states more gets ``{"refusal": "..."}`` naming the cap,
    which the reader rejects with that text, rather than some of its facts."""
    stated = [s for s in sentences(read_sections(prompt).get(USER_SAID, "")) if not s.endswith("?")]
    said = "\n".join(stated)
    listed = read_attributes(system)
    pieces = sentences(said)
    kept = []
    for item in stated_facts(said, pieces):
        label = write_fact_label(item["key"], item["topic"])
        if listed is None or listed[1] or label in listed[0]:
            kept.append((label, item["value"]))
            if len(kept) > MAX_FACTS:
                return json.dumps({"refusal": TOO_MANY_FACTS.format(cap=MAX_FACTS)})
    lowered = [piece.lower() for piece in pieces]
    return write_fact_reply([ReplyFact(label, value, _sentence_with(pieces, lowered, value))
                             for label, value in kept])


def _sentence_with(pieces: list[str], lowered: list[str], value: str) -> str:
    """The first of ``pieces`` (``lowered``: the same, lower case) that holds ``value`` (any case), else the
    value itself."""
    wanted = value.lower()
    return next((piece for piece, low in zip(pieces, lowered) if wanted in low), value)


