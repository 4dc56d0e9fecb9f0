"""How the offline stand-in reads meaning: the local embedding model plus ordinary normalising code.

NOT a model: every rule here is written down, and each can be read and tested on its own.

The stand-in's rules (``tasks.py``, ``memory_rule.py``, ``policy.py`` in ``helpers/standin/``) compare what texts
*say*, not how they are spelled. This module gives them the pieces:

- **Similarity** (``embed``, ``similarity``): the local all-MiniLM-L6-v2 model, each text embedded once
  per process and remembered (``CACHE_SIZE`` texts), so a repeated context costs nothing and a new
  sentence about 3 ms. MiniLM judges *topic* well and *intent* or *negation* poorly, so no rule here
  trusts a similarity on its own.
- **Words** (``content_stems``, ``same_stem``): content words reduced to stems ("advises" and
  "advisor", "parking" and "park" meet); stop words and question words are left out.
- **Sentences** (``sentences``): a full stop after "Dr", "St", "a.m." or an initial does not end a
  sentence, and nothing inside double quotes is split.
- **Facts written many ways** (``facts_in``): weekdays in any case and common abbreviation ("Wed",
  "thurs"), ranges ("Monday to Friday", "weekdays", "at weekends"); times in 12- or 24-hour form
  ("3pm", "3 p.m.", "15:00", "15.00", "noon", "9 in the morning", "3-5pm"); dates ("20 January 2027",
  "Jan 20th", "2027-01-20"); floors ("fifth floor" == "5th floor" == "floor 5", "ground floor",
  "basement"); rooms ("Room 2B", "rooms 310 to 318"); codes ("LU-58213"); numbers in digits or words
  ("twelve" == "12"), with the noun they count; and capitalised names.
- **Campus nearness** (``campus_nearness``): how close a question is to the campus knowledge base:
  the best entry's similarity plus the share of the question's informative words that entry uses.
- **Harm** (``harm_signals``): see ``classify_scope`` in ``tasks.py`` for the rule that uses it.
- **Length directives** (``length_limit``): what a system prompt says about answer length, with
  negation ("never answer in one sentence").

Where it stops: it knows English only, the facts above and nothing about the world; a paraphrase far from
every wording it normalises, or a negation it does not parse, is read wrongly, and it says so in no way.
"""
from __future__ import annotations

import math
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from helpers.core.words import stem  # noqa: F401  (words are folded as lexical recall folds them)
from helpers.retrieval import embeddings
from helpers.core.clock import MONTH_PATTERN, MONTHS, WEEKDAYS, month_number
from helpers.core.context_format import is_block_line  # quoted turns, passages and fact lines are not instructions

# ---------------------------------------------------------------- similarity (the local model, cached)

CACHE_SIZE = 8192  # texts remembered per process (about 13 MB of vectors)
_cache: OrderedDict[str, np.ndarray] = OrderedDict()
_cache_lock = threading.Lock()


def embed(texts: list[str]) -> np.ndarray:
    """Unit vectors for ``texts`` (local MiniLM); each distinct text is embedded once per process."""
    texts = [" ".join(t.split()) or "." for t in texts]
    with _cache_lock:
        missing = list(dict.fromkeys(t for t in texts if t not in _cache))
    if missing:
        vectors = embeddings.local_embed(missing)
        with _cache_lock:
            for text, vector in zip(missing, vectors):
                _cache[text] = vector
            while len(_cache) > CACHE_SIZE:
                _cache.popitem(last=False)
    with _cache_lock:
        rows = []
        for text in texts:
            if text in _cache:
                _cache.move_to_end(text)
                rows.append(_cache[text])
            else:  # evicted by another thread in between: embed it again
                rows.append(embeddings.local_embed([text])[0])
    return np.vstack(rows) if rows else np.zeros((0, embeddings.EMBEDDING_DIM), dtype=np.float32)


def similarity(text: str, others: list[str]) -> np.ndarray:
    """Cosine similarity of ``text`` with each of ``others``."""
    if not others:
        return np.zeros(0, dtype=np.float32)
    vectors = embed([text] + list(others))
    return vectors[1:] @ vectors[0]


# ---------------------------------------------------------------- words

STOP = frozenset("""a an the is are was were be been being am do does did done doing have has had having of to
in on at for and or but if then than so as by with about from into onto over under up down out off what when
where which who whom whose why how that this those these it its it's there here their them they he she his her
him we our us you your yours i i'm i've i'd me my mine myself can could would will shall should may might must
let please tell say said told know knew remember recall remind again still just really actually also very too
any some each every all no not nor only own same such more most much many other another one ones thing things
something anything stuff way kind sort type yes ok okay hey hi hello now today usually ever even""".split())
GENERIC = frozenset("name named called number code day date time place one thing stuff kind type current new "
                    "old favourite favorite usual exact full main".split())
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_TERM = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*(?:'[a-z]+)?")  # "co-supervisor" is not "supervisor"
_CONTRACTION = re.compile(r"'(?:s|re|m|ve|d|ll)$|n't$")
_IRREGULAR_NEGATIVES = {"can't": "can", "won't": "will", "shan't": "shall"}  # not "ca", "wo", "sha"


_ENDINGS = frozenset("e y ion ation ition ic ical al or er ee ment ive ist ism ity ure ance ence ant ent ous "
                     "ory ate".split()) | {""}


def same_stem(a: str, b: str) -> bool:
    """Two stems of one word family: equal, or a shared beginning of 5+ letters (85% of the shorter word)
    followed by word endings only ("advis"/"advisor", "graduate"/"graduation", "allergic"/"allergy"), or one
    is the other with its silent "e" restored ("liv"/"live", "com"/"come")."""
    if a == b or (len(a) >= 3 and (a + "e" == b or b + "e" == a)):  # "living" -> "liv" is "live"
        return True
    shared = 0
    for x, y in zip(a, b):
        if x != y:
            break
        shared += 1
    if shared < 5 or shared < 0.85 * min(len(a), len(b)) and not (b.startswith(a) or a.startswith(b)):
        return False
    return a[shared:] in _ENDINGS and b[shared:] in _ENDINGS


def content_stems(text: str, *, generic: bool = True) -> set[str]:
    """Stems of the content words of ``text`` (stop words left out; generic nouns too unless asked)."""
    words = [_CONTRACTION.sub("", _IRREGULAR_NEGATIVES.get(w, w)) for w in _TERM.findall(text.lower().replace("’", "'"))]
    words = [w for w in words if w not in STOP and len(w) > 1]
    return {stem(w) for w in words if generic or w not in GENERIC}


def shared_stems(a: set[str], b: set[str]) -> set[str]:
    """The stems of ``a`` that have a family member in ``b``."""
    return {x for x in a if any(same_stem(x, y) for y in b)}


# ---------------------------------------------------------------- sentences

_ABBREVIATION = re.compile(r"(?:\b(?:Dr|Mr|Mrs|Ms|Prof|St|Rd|Ave|No|Apt|Jr|Sr|vs|etc|approx|e\.g|i\.e|"
                           r"[ap]\.m)|\b[A-Z])\.$", re.I)


_BREAK = re.compile(r"(?<=[.!?])\s+|(?<=[.!?][\"'’”)])\s+")


def sentences(text: str) -> list[str]:
    """Sentences of ``text``: a line break ends one; "Dr.", "p.m." or an initial does not; quotes stay
    whole."""
    out: list[str] = []
    for line in text.splitlines():
        # The sentence being built is kept as its parts, with what decides whether the next part joins it: its
        # last part (an abbreviation ends the part it is in) and whether a quote is open (the parity of its
        # '"'). Each part is read once, so a line of n parts costs O(n) however many parts one sentence holds.
        parts: list[str] = []
        open_quote = False
        for piece in _BREAK.split(line.strip()):
            if parts and (open_quote or _ABBREVIATION.search(parts[-1])):
                parts.append(piece)
            elif piece:
                if parts:
                    out.append(" ".join(parts))
                parts, open_quote = [piece], False
            else:
                continue
            open_quote ^= bool(piece.count('"') % 2)
        if parts:
            out.append(" ".join(parts))
    return out


# ---------------------------------------------------------------- numbers written as words

_UNITS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
          "sixteen seventeen eighteen nineteen").split()
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
         "ninety": 90}
NUMBER_WORDS: dict[str, int] = {w: i for i, w in enumerate(_UNITS)} | _TENS | {"dozen": 12, "hundred": 100}
_ORDINAL_WORDS = ("first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth "
                  "thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth "
                  "twentieth").split()
ORDINALS: dict[str, int] = {w: i + 1 for i, w in enumerate(_ORDINAL_WORDS)}
_NUMBER_WORD = (r"(?:(?:" + "|".join(_TENS) + r")(?:[- ](?:one|two|three|four|five|six|seven|eight|nine))?|"
                + "|".join(sorted(_UNITS + ["dozen", "hundred"], key=len, reverse=True)) + ")")
_ORDINAL = r"(?:\d{1,3}(?:st|nd|rd|th)|" + "|".join(sorted(_ORDINAL_WORDS, key=len, reverse=True)) + ")"


def number_value(word: str) -> int | float | None:
    """The number a token names: "12", "twelve", "twenty-five", "12th", "third"; None otherwise."""
    w = word.lower().strip()
    if re.fullmatch(r"\d+", w):
        return int(w)
    if re.fullmatch(r"\d+[.,]\d+", w):
        return float(w.replace(",", "."))
    if re.fullmatch(r"\d+(?:st|nd|rd|th)", w):
        return int(w[:-2])
    if w in ORDINALS:
        return ORDINALS[w]
    if w in NUMBER_WORDS:
        return NUMBER_WORDS[w]
    parts = re.split(r"[- ]", w)
    if len(parts) == 2 and parts[0] in _TENS and parts[1] in NUMBER_WORDS and NUMBER_WORDS[parts[1]] < 10:
        return _TENS[parts[0]] + NUMBER_WORDS[parts[1]]
    return None


# ---------------------------------------------------------------- weekdays

_DAY_NAMES = [d.lower() for d in WEEKDAYS]  # Monday first
_ABBREVIATIONS = {"mon": 0, "tue": 1, "tues": 1, "wed": 2, "weds": 2, "thu": 3, "thur": 3, "thurs": 3,
                  "fri": 4, "sat": 5, "sun": 6}
_LOWER_OK = {"tue", "tues", "weds", "thu", "thur", "thurs", "fri"}  # "sun", "sat", "wed", "mon" are words too
_DAY = (r"(?:(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?|"
        r"(?:mon|tues?|weds?|thu(?:rs?)?|fri|sat|sun)\.?)(?![a-z])")
_DAY_RE = re.compile(r"\b" + _DAY, re.I)
_DAY_RANGE = re.compile(r"\b(?:from\s+)?(" + _DAY + r")\s*(?:-|–|—|to|through|thru|till|until)\s*("
                        + _DAY + r")", re.I)
_WEEKDAYS_WORD = re.compile(r"\bweek\s?days?\b|\bduring the week\b", re.I)
_WEEKENDS_WORD = re.compile(r"\bweek-?ends?\b", re.I)
_EVERY_DAY_WORD = re.compile(r"\bevery day\b|\bdaily\b|\bseven days a week\b", re.I)


def day_index(token: str) -> int | None:
    """0 (Monday) .. 6 (Sunday) for a weekday written any way the stand-in reads; None otherwise."""
    w = token.strip().rstrip(".")
    low = w.lower()
    for i, name in enumerate(_DAY_NAMES):
        if low in (name, name + "s"):
            return i
    if low in _ABBREVIATIONS and (low in _LOWER_OK or w[:1].isupper()):
        return _ABBREVIATIONS[low]
    return None


def _span_days(first: int, last: int) -> frozenset[int]:
    return frozenset((first + i) % 7 for i in range((last - first) % 7 + 1))


# ---------------------------------------------------------------- times

_MERIDIEM = r"([ap])\.?\s?m\.?(?![a-z])"
_CLOCK = r"(\d{1,2})(?:[:.](\d{2}))?"
_TIME_RANGE = re.compile(r"\b" + _CLOCK + r"\s*(?:-|–|—|to|until|till)\s*" + _CLOCK + r"\s*" + _MERIDIEM,
                         re.I)
_TIME_12 = re.compile(r"\b" + _CLOCK + r"\s*" + _MERIDIEM, re.I)
_TIME_24 = re.compile(r"(?<![\d$£€.,:])\b([01]?\d|2[0-4])[:.]([0-5]\d)\b(?![.,]?\d)")
_TIME_WORDS = re.compile(r"\b(noon|midday|midnight)\b", re.I)
_TIME_PART_OF_DAY = re.compile(r"\b(\d{1,2})(?::(\d{2}))?(?: o'clock)? (?:in the|at) "
                               r"(morning|afternoon|evening|night)\b", re.I)
_TIME_OCLOCK = re.compile(r"\b(\d{1,2}) o'clock\b", re.I)
_TIME_BARE_RANGE = re.compile(r"\b(?:from|between) (\d{1,2}) (?:to|and|until|till|-) (\d{1,2})\b(?![:.]\d)",
                              re.I)


def _minutes(hour: int, minute: int, meridiem: str | None) -> frozenset[int] | None:
    if minute > 59 or hour > 24 or (meridiem and not 1 <= hour <= 12):
        return None
    if meridiem:
        hour = hour % 12 + (12 if meridiem.lower() == "p" else 0)
    value = hour * 60 + minute
    return frozenset({value % 1440, 1440} if value in (0, 1440) else {value})


def _either(hour: int, minute: int = 0) -> frozenset[int] | None:
    """An hour written without am/pm: either half of the day."""
    if not 1 <= hour <= 12 or minute > 59:
        return None
    return frozenset({(hour % 12) * 60 + minute, (hour % 12 + 12) * 60 + minute})


# ---------------------------------------------------------------- dates

_MONTHS, _MONTH = MONTHS, MONTH_PATTERN  # the clock owns month names
_DATE_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_DATE_DAY_MONTH = re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)?(?: of)? " + _MONTH + r"(?:,? (\d{4}))?", re.I)
_DATE_MONTH_DAY = re.compile(r"\b" + _MONTH + r" (\d{1,2})(?:st|nd|rd|th)?\b(?:,? (\d{4}))?", re.I)


_month = month_number


# ---------------------------------------------------------------- floors, rooms, codes, numbers, names

_FLOOR_WORD = re.compile(r"\b(ground|lower ground|basement)(?:[ -]floor| level)?\b", re.I)
_FLOOR_BEFORE = re.compile(r"\b(" + _ORDINAL + r"|\d{1,2})[ -](?:floor|level|storey)\b", re.I)
_FLOOR_AFTER = re.compile(r"\b(?:floor|level|storey)\s+(\d{1,2}|" + _NUMBER_WORD + r")\b", re.I)
_ROOM = re.compile(r"\b(?:rooms?|rm\.?)\s+(?:no\.?\s*)?([a-z]?\d+[a-z]?)"
                   r"(?:\s*(?:-|–|to|and|through)\s*([a-z]?\d+[a-z]?))?", re.I)  # "rooms 310 to 318"
# "room 2.14", "rm 1.05": a building's floor and room, read before the times ("2.14" is no 2:14 after "room")
_ROOM_DOTTED = re.compile(r"\b(?:rooms?|rm\.?)\s+(?:no\.?\s*)?([a-z]?\d{1,2}\.\d{1,3}[a-z]?)\b()", re.I)
_CODE = re.compile(r"\b(?=[A-Za-z0-9-]*\d)(?=[A-Za-z0-9-]*[A-Za-z-])[A-Za-z0-9]+(?:-[A-Za-z0-9]+)+\b|"
                   r"\b(?=[A-Za-z]*\d)[A-Za-z]{1,3}\d{1,5}[A-Za-z]?\b|"
                   r"\b\d{1,5}[A-Za-z]\b(?<!\d(?:st|nd|rd|th)\b)")  # "LU-58213", "B12", "2B"
_NUMBER = re.compile(r"(\$|£|€)?\b(\d+(?:[.,]\d+)?(?:st|nd|rd|th)?|" + _NUMBER_WORD + r"|" + _ORDINAL
                     + r")\b", re.I)
_NAME_WORD = r"[A-Z][a-zA-Z'’]*[a-z][a-zA-Z'’-]*"
_NAME = re.compile(r"\b" + _NAME_WORD + r"(?:\s+(?:of\s+|de\s+|van\s+)?" + _NAME_WORD + r")*")
_PLACE_NOUNS = (r"(?:hall|house|lodge|building|centre|center|court|library|union|tower|auditorium|stadium|"
                r"cafe|café)")
_LOWER_PLACE = re.compile(r"\b([a-z][a-z'-]+) " + _PLACE_NOUNS + r"\b")
_NOT_NAMES = {"i", "am", "pm", "room", "rooms", "floor", "level", "the", "a", "an"} | set(_MONTHS)
_CURRENCY = {"$": "dollar", "£": "pound", "€": "euro"}
_UNIT_AFTER = re.compile(r"[\s-]*([a-z][a-z'-]*)")  # the noun after a number ("two weeks"), lower case
_UNIT_LETTERS = set("abcdefghijklmnopqrstuvwxyz'-")


@dataclass
class Claim:
    """One checkable thing a text states: its kind, what it means, and how it was written."""

    kind: str          # day, time, date, floor, room, code, number, name
    value: object
    written: str


@dataclass
class Facts:
    """Everything checkable in a text: the claims in order, and a lower-cased copy for names and codes."""

    claims: list[Claim] = field(default_factory=list)
    text: str = ""
    words: list[str] = field(default_factory=list)

    def of(self, kind: str) -> list[Claim]:
        return [c for c in self.claims if c.kind == kind]


def _blank(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with each of ``spans`` (in order, not overlapping) replaced by as many spaces."""
    if not spans:
        return text
    pieces, at = [], 0
    for start, end in spans:
        pieces += [text[at:start], " " * (end - start)]
        at = end
    return "".join(pieces) + text[at:]


@dataclass(frozen=True)
class Rule:
    """One way a text states a fact: a pattern, and what a match of it claims.

    ``read(match, text)`` gives the claims one match makes (none: the match is not one of these facts).
    With ``blanks``, a match that claims something is blanked, so no later rule reads it again ("3pm" is
    not also the number 3). ``facts_in`` runs ``FACT_RULES`` in order; ``apply`` runs one rule alone."""

    name: str
    kind: str
    pattern: re.Pattern
    read: Callable[[re.Match, str], list[Claim]]
    blanks: bool = True

    def apply(self, text: str) -> tuple[list[Claim], str]:
        """The claims this rule finds in ``text``, and ``text`` with what they came from blanked."""
        claims, spans = [], []
        for m in self.pattern.finditer(text):
            found = self.read(m, text)
            claims += found
            if found and self.blanks:
                spans.append(m.span())
        return claims, _blank(text, spans)


def _claim(kind: str, value, m: re.Match) -> list[Claim]:
    return [] if value is None else [Claim(kind, value, m.group(0).strip())]


def _date(order: str) -> Callable[[re.Match, str], list[Claim]]:
    """A date whose groups come in ``order`` ("ymd", "dmy", "mdy"): a real month and day."""
    def read(m: re.Match, text: str) -> list[Claim]:
        parts = dict(zip(order, m.groups()))
        try:
            month = int(parts["m"]) if order == "ymd" else _month(parts["m"])
        except StopIteration:
            return []
        if parts["m"].lower() == "may" and not m.group(0)[0].isdigit() and not parts["m"][0].isupper():
            return []  # "may 3" in "you may 3 times ..." is not a date
        day, year = int(parts["d"]), int(parts["y"]) if parts.get("y") else None
        return _claim("date", (month, day, year), m) if 1 <= month <= 12 and 1 <= day <= 31 else []
    return read


def _time_range(m: re.Match, text: str) -> list[Claim]:
    """"3-5pm", "10:30 to 11:45 am": two times sharing one am/pm ("11 to 1pm": the start is am)."""
    h1, m1, h2, m2 = int(m.group(1)), int(m.group(2) or 0), int(m.group(3)), int(m.group(4) or 0)
    mer = m.group(5)
    end, start = _minutes(h2, m2, mer), _minutes(h1, m1, mer)
    if start is not None and end is not None and min(start) > min(end):
        start = _minutes(h1, m1, "a" if mer.lower() == "p" else "p")
    if start is None or end is None:
        return []
    return [Claim("time", start, m.group(0).strip()), Claim("time", end, m.group(0).strip())]


def _time_12(m: re.Match, text: str) -> list[Claim]:
    """"3pm", "3:30 p.m."."""
    return _claim("time", _minutes(int(m.group(1)), int(m.group(2) or 0), m.group(3)), m)


def _time_part_of_day(m: re.Match, text: str) -> list[Claim]:
    """"9 in the morning", "8 at night"."""
    hour, minute, part = int(m.group(1)), int(m.group(2) or 0), m.group(3).lower()
    pm = part in ("afternoon", "evening") or (part == "night" and hour < 12)
    return _claim("time", _minutes(hour, minute, "p" if pm else "a") if 1 <= hour <= 12 else None, m)


def _time_24(m: re.Match, text: str) -> list[Claim]:
    """"15:00", "15.00"."""
    return _claim("time", _minutes(int(m.group(1)), int(m.group(2)), None), m)


def _time_words(m: re.Match, text: str) -> list[Claim]:
    """"noon", "midday", "midnight"."""
    return _claim("time", frozenset({0, 1440}) if m.group(1).lower() == "midnight" else frozenset({720}), m)


def _time_oclock(m: re.Match, text: str) -> list[Claim]:
    """"3 o'clock": either half of the day."""
    return _claim("time", _either(int(m.group(1))), m)


def _time_bare_range(m: re.Match, text: str) -> list[Claim]:
    """"from 9 to 5": two hours, each either half of the day."""
    a, b = _either(int(m.group(1))), _either(int(m.group(2)))
    return [Claim("time", a, m.group(0)), Claim("time", b, m.group(0))] if a and b else []


def _floor_word(m: re.Match, text: str) -> list[Claim]:
    """"ground floor" (0), "basement" (-1)."""
    return _claim("floor", -1 if m.group(1).lower() == "basement" else 0, m)


def _floor_number(m: re.Match, text: str) -> list[Claim]:
    """"fifth floor", "5th floor", "floor 5"."""
    return _claim("floor", number_value(m.group(1)), m)


def _room(m: re.Match, text: str) -> list[Claim]:
    """"Room 2B" (2B to 2B), "rooms 310 to 318"."""
    first, last = m.group(1).upper(), (m.group(2) or "").upper()
    return _claim("room", (first, last) if last else (first, first), m)


def _day_range(m: re.Match, text: str) -> list[Claim]:
    """"Monday to Friday", "Fri-Mon": every day of the span."""
    first, last = day_index(m.group(1)), day_index(m.group(2))
    return _claim("day", _span_days(first, last), m) if first is not None and last is not None else []


def _days(days: range) -> Callable[[re.Match, str], list[Claim]]:
    """A word for a fixed set of days ("weekdays", "at weekends", "daily")."""
    return lambda m, text: _claim("day", frozenset(days), m)


def _day(m: re.Match, text: str) -> list[Claim]:
    """One weekday, in any case or common abbreviation ("Wed", "thurs"; not "sun" or "wed" as words)."""
    index = day_index(m.group(0))
    return _claim("day", frozenset({index}), m) if index is not None else []


def _code(m: re.Match, text: str) -> list[Claim]:
    """"LU-58213", "B12", "2B": letters and digits together."""
    return _claim("code", m.group(0).lower(), m)


def _run_after(text: str, at: int) -> str:
    """The spaces, hyphens and letters from ``at`` (and the character after them): all ``_UNIT_AFTER`` can
    match once lower-cased, so each number reads only its own neighbourhood."""
    end = at
    while end < len(text) and (text[end].isspace() or set(text[end].lower()) <= _UNIT_LETTERS):
        end += 1
    return text[at:end + 1]


def _number(m: re.Match, text: str) -> list[Claim]:
    """A number in digits or words, with the noun it counts ("two weeks"; "$5" counts dollars); a lone
    "one" with no noun is not a number."""
    value = number_value(m.group(2))
    after = _UNIT_AFTER.match(_run_after(text, m.end()).lower())
    unit = _CURRENCY.get(m.group(1) or "") or (after.group(1) if after else None)
    if unit and (unit in STOP or number_value(unit) is not None):
        unit = None
    if value is None or (m.group(2).lower() == "one" and not unit):
        return []
    return [Claim("number", (value, stem(unit) if unit else None), m.group(0).strip())]


_SENTENCE_OPENERS = '.!?:;\n"('


def _starts_sentence(text: str, at: int) -> bool:
    """Does the capital at ``at`` open the text, a sentence, a quote, a bracket or a " - " aside?"""
    if at == 0 or (at >= 3 and text[at - 1].isspace() and text[at - 2] == "-" and text[at - 3].isspace()):
        return True
    j = at
    while j > 0 and text[j - 1].isspace():
        j -= 1
        if text[j] == "\n":
            return True
    return j > 0 and text[j - 1] in _SENTENCE_OPENERS


def _name(m: re.Match, text: str) -> list[Claim]:
    """Capitalised words ("Dr Amara Osei", "Pemberton Hall"), without a leading "The", "Room" or day; one
    word alone at the start of a sentence is not a name."""
    words = m.group(0).split()
    while words and (words[0].lower() in _NOT_NAMES or day_index(words[0]) is not None):
        words = words[1:]
    if len(words) > 1 and words[0].lower() in STOP and _starts_sentence(text, m.start()):
        words = words[1:]  # "On weekdays Harlow Library ...": a small word capitalised as the sentence opens
    alone = len(words) == 1 and (_starts_sentence(text, m.start()) or words[0].lower().rstrip("s") in _NOT_NAMES)
    if not words or alone:
        return []
    name = re.sub(r"['’]s$", "", " ".join(words))
    return [Claim("name", name.lower(), name)]


def _lower_place(m: re.Match, text: str) -> list[Claim]:
    """A place written in lower case ("pemberton hall"), its first word not a stop word."""
    return [Claim("name", m.group(0).lower(), m.group(0))] if m.group(1) not in STOP else []


#: The rules ``facts_in`` runs, in this order: a dotted room number first, dates before times and numbers, times before floors and
#: numbers, ranges before their single days, codes before numbers, names last (nothing they read is blanked).
FACT_RULES: tuple[Rule, ...] = (
    Rule("room_dotted", "room", _ROOM_DOTTED, _room),
    Rule("date_iso", "date", _DATE_ISO, _date("ymd")),
    Rule("date_day_month", "date", _DATE_DAY_MONTH, _date("dmy")),
    Rule("date_month_day", "date", _DATE_MONTH_DAY, _date("mdy")),
    Rule("time_range", "time", _TIME_RANGE, _time_range),
    Rule("time_12h", "time", _TIME_12, _time_12),
    Rule("time_part_of_day", "time", _TIME_PART_OF_DAY, _time_part_of_day),
    Rule("time_24h", "time", _TIME_24, _time_24),
    Rule("time_words", "time", _TIME_WORDS, _time_words),
    Rule("time_oclock", "time", _TIME_OCLOCK, _time_oclock),
    Rule("time_bare_range", "time", _TIME_BARE_RANGE, _time_bare_range),
    Rule("floor_word", "floor", _FLOOR_WORD, _floor_word),
    Rule("floor_before", "floor", _FLOOR_BEFORE, _floor_number),
    Rule("floor_after", "floor", _FLOOR_AFTER, _floor_number),
    Rule("room", "room", _ROOM, _room),
    Rule("day_range", "day", _DAY_RANGE, _day_range),
    Rule("weekdays", "day", _WEEKDAYS_WORD, _days(range(0, 5))),
    Rule("weekends", "day", _WEEKENDS_WORD, _days(range(5, 7))),
    Rule("every_day", "day", _EVERY_DAY_WORD, _days(range(0, 7))),
    Rule("day", "day", _DAY_RE, _day),
    Rule("code", "code", _CODE, _code),
    Rule("number", "number", _NUMBER, _number),
    Rule("name", "name", _NAME, _name, blanks=False),
    Rule("lower_place", "name", _LOWER_PLACE, _lower_place, blanks=False),
)
_CITATION = re.compile(r"\[[a-z0-9][\w-]*\]")  # "[library-hours]": a citation is not a claim


def facts_in(text: str) -> Facts:
    """The days, times, dates, floors, rooms, codes, numbers and names ``text`` states (module docstring):
    each of ``FACT_RULES`` in turn, on the text with what earlier rules claimed blanked."""
    found = Facts(text=text.lower(), words=_WORD.findall(text.lower()))
    work = _CITATION.sub(lambda m: " " * len(m.group(0)), text)
    for rule in FACT_RULES:
        claims, work = rule.apply(work)
        found.claims += claims
    return found


_HOURS_IN = {stem(w): hours for w, hours in (("minute", 1 / 60), ("min", 1 / 60), ("hour", 1), ("hr", 1),
                                               ("day", 24), ("week", 168), ("fortnight", 336))}


def _duration_hours(value, unit: str | None) -> float | None:
    """A duration in hours ("two days" -> 48, "90 minutes" -> 1.5), None for a number of anything else."""
    hours = next((h for u, h in _HOURS_IN.items() if unit and same_stem(unit, u)), None)
    return None if hours is None or not isinstance(value, (int, float)) else value * hours


def _number_near(value, unit: str | None, facts: Facts) -> bool:
    """Does ``facts`` state the number ``value`` (counting ``unit``, when given, within 3 words of it)? A duration
    may be stated in another unit ("two days" = "48 hours"); "N times" counts occurrences of whatever the passage
    counts ("three times a term" = "a maximum of three loans per term")."""
    days_of_dates = [Claim("number", (c.value[1], None), "") for c in facts.of("date")]
    hours = _duration_hours(value, unit)
    if hours is not None and any(_duration_hours(*c.value) == hours for c in facts.of("number")):
        return True
    if unit and same_stem(unit, "time"):
        unit = None
    for claim in facts.of("number") + days_of_dates:
        if claim.value[0] != value:
            continue
        if unit is None or (claim.value[1] and same_stem(unit, claim.value[1])):
            return True
        if claim.written:
            for m in re.finditer(re.escape(claim.written.lower()), facts.text):
                before = _WORD.findall(facts.text[max(0, m.start() - 40):m.start()])[-3:]
                after = _WORD.findall(facts.text[m.end():m.end() + 40])[:3]
                if any(same_stem(unit, stem(w)) for w in before + after):
                    return True
    if unit is None:  # an hour, a code's digits ("10" of 10:00, "204" of Room 204)
        minutes = {v for c in facts.of("time") for v in c.value}
        hours = {v // 60 % 12 or 12 for v in minutes} | {v // 60 for v in minutes}
        rooms = {r for c in facts.of("room") for r in c.value} | {c.value for c in facts.of("code")}
        if value in hours or str(value).lower() in {str(r).lower() for r in rooms}:
            return True
    return False


def unsupported_claims(answer: str, passages: str) -> list[str]:
    """What ``answer`` states that ``passages`` do not (as written in the answer); empty when all is there."""
    said, have = facts_in(answer), facts_in(passages)
    days = frozenset().union(*[c.value for c in have.of("day")]) if have.of("day") else frozenset()
    times = frozenset().union(*[c.value for c in have.of("time")]) if have.of("time") else frozenset()
    floors = {c.value for c in have.of("floor")}
    rooms = [c.value for c in have.of("room")]
    tokens = set(have.words) | {c.value for c in have.of("code")}
    missing = []
    for claim in said.claims:
        if claim.kind == "day":
            ok = claim.value <= days
        elif claim.kind == "time":
            ok = bool(claim.value & times)
        elif claim.kind == "date":
            month, day, year = claim.value
            ok = any(c.value[:2] == (month, day) and (year is None or c.value[2] in (None, year))
                     for c in have.of("date"))
        elif claim.kind == "floor":
            ok = claim.value in floors
        elif claim.kind == "room":
            ok = all(_room_in(r, rooms, tokens) for r in set(claim.value))
        elif claim.kind == "code":
            ok = claim.value in tokens or claim.value in have.text
        elif claim.kind == "number":
            ok = _number_near(claim.value[0], claim.value[1], have)
        else:  # a name: every word of it in the passages, in that order
            ok = re.sub(r"^the ", "", claim.value) in have.text
        if not ok:
            missing.append(claim.written)
    missing += _universals_unsupported(answer, passages, days)
    missing += _every_day_times_unsupported(answer, passages, said)
    missing += _free_unsupported(answer, passages)
    return list(dict.fromkeys(missing))


_SEGMENT = re.compile(r"(?<=[.!?;])\s+|\n")  # the parts of a passage a day span and its hours are written in


def _every_day_times_unsupported(answer: str, passages: str, said) -> list[str]:
    """A time the answer gives for every day ("opens at 6:30am every day", "daily from 8") must be the time of every
    day in the passages: the days of the passage parts (sentences, ";"-parts) that give that time must be all seven
    (a part naming no day holds on any day). "Open 06:30-22:00 Monday to Friday; 08:00-20:00 Saturday and Sunday"
    does not open at 6:30 every day, though it names all seven days."""
    every = _EVERY_DAY.search(answer)
    times = [c for c in said.claims if c.kind == "time"]
    if not every or not times:
        return []
    missing = []
    parts = [facts_in(part) for part in _SEGMENT.split(passages) if part.strip()]
    for claim in times:
        covered: set[int] = set()
        for part in parts:
            if any(claim.value & c.value for c in part.of("time")):
                days = [c.value for c in part.of("day")]
                covered |= set(frozenset().union(*days)) if days else set(range(7))
        if covered and len(covered) < 7:
            missing.append(f"{claim.written} {every.group(0)}")
    return missing


# "free" as a price: at no cost -- not "free time", "feel free", "free to", "gluten-free"
_FREE = re.compile(r"(?<![-\w])free\b(?!\s+(?:time|periods?|slots?|hours?|afternoons?|mornings?|evenings?|days?|from|to|"
                   r"will|speech|space|seats?|places?|spaces?|rooms?|desks?)\b)(?<!feel free)", re.I)
_AT_NO_COST = re.compile(r"(?<![-\w])free\b|\bno (?:charge|cost|fee)s?\b|\bat no (?:extra |additional )?(?:cost|charge)\b|"
                         r"\bcomplimentary\b|\bwithout (?:charge|cost|paying)\b|\bfree of charge\b|\bcosts? nothing\b|"
                         r"\bno need to pay\b|\bdon't (?:have to |need to )?pay\b", re.I)


def _free_unsupported(answer: str, passages: str) -> list[str]:
    """An answer saying something is free (a price of nothing: "washing is free for residents") needs passages that
    say something is at no cost ("free", "no charge", "complimentary"); a passage giving only prices ("£3 per wash")
    or none does not support it. "Free time", "feel free" and "gluten-free" are no price."""
    m = _FREE.search(answer)
    if m and re.search(r"feel\s+$", answer[:m.start()], re.I) is None and not _AT_NO_COST.search(passages):
        return [m.group(0)]
    return []


# a claim about all of something: "every student who applies", "all year round", "always", "anyone"
_UNIVERSAL = re.compile(r"\b(?:every|each|all|any)\s+(?:(?:\d+|" + _NUMBER_WORD + r"|single|of (?:the|our|your))\s+)?"
                        r"(?P<noun>[a-z][a-z'-]*)|\b(?P<adverb>always|never|everyone|everybody|anyone|anybody|"
                        r"year[- ]round|24/7|round the clock|around the clock|anytime|no matter)\b", re.I)
_EVERY_DAY = re.compile(r"\b(?:every|each|all) days?\b|\bdaily\b|\bseven days\b|\b7 days\b", re.I)
_TIME_NOUNS = frozenset("week weeks weekday weekdays weekend weekends morning mornings afternoon afternoons evening "
                        "evenings night nights month months term terms semester year years hour hours minute minutes "
                        "time times".split())


def _universals_unsupported(answer: str, passages: str, days: frozenset) -> list[str]:
    """The answer's claims about all of something ("every student who applies", "all year round", "always") that the
    passages make about none of it: a universal must be in the passages about the same noun (any quantifier: "all
    students" for "every student") or as the same word ("always"). "Every day" is every day of the week: the
    passages must say so, or name all seven days. Other spans of time ("every 20 minutes", "all weekend") are left
    to the time and day rules."""
    said = {}
    for m in _UNIVERSAL.finditer(passages):
        if m.group("noun"):
            said.setdefault("noun", set()).add(stem(m.group("noun").lower()))
        else:
            said.setdefault("adverb", set()).add(m.group("adverb").lower())
    missing = []
    for m in _UNIVERSAL.finditer(answer):
        noun, adverb = (m.group("noun") or "").lower(), (m.group("adverb") or "").lower()
        if noun in ("day", "days"):
            if not (_EVERY_DAY.search(passages) or len(days) == 7):
                missing.append(m.group(0))
        elif noun and noun not in STOP and noun not in _TIME_NOUNS and day_index(noun) is None:
            if not any(same_stem(stem(noun), n) for n in said.get("noun", ())):
                missing.append(m.group(0))
        elif noun == "year" or adverb:  # "all year round", "always": said so, or not at all
            if adverb not in said.get("adverb", ()) and not (noun == "year" and "year" in said.get("noun", ())):
                missing.append(m.group(0))
    return missing


def _room_in(room: str, ranges: list[tuple[str, str]], tokens: set[str]) -> bool:
    if room.lower() in tokens:
        return True
    for first, last in ranges:
        if room in (first, last):
            return True
        if room.isdigit() and first.isdigit() and last.isdigit() and int(first) <= int(room) <= int(last):
            return True
    return False


# ---------------------------------------------------------------- nearness to the campus knowledge base

@dataclass
class _Campus:
    texts: list[str]
    owners: np.ndarray
    vectors: np.ndarray
    stems: list[set[str]]
    idf: dict[str, float]


_campus: _Campus | None = None
_campus_lock = threading.Lock()


def _campus_index() -> _Campus:
    """The knowledge base's titles and sentences, embedded once per process (about 0.7 s)."""
    global _campus
    if _campus is None:
        from helpers.retrieval.knowledge_files import load_knowledge_base  # notebook 02's loader

        with _campus_lock:
            if _campus is None:
                entries = load_knowledge_base()
                texts, owners = [], []
                for i, entry in enumerate(entries):
                    for text in [entry.title] + [f"{entry.title}: {s}" for s in sentences(entry.text)]:
                        texts.append(text)
                        owners.append(i)
                stems = [content_stems(e.passage()) for e in entries]
                counts: dict[str, int] = {}
                for entry_stems in stems:
                    for s in entry_stems:
                        counts[s] = counts.get(s, 0) + 1
                idf = {s: math.log((len(stems) + 1) / (n + 0.5)) for s, n in counts.items()}
                _campus = _Campus(texts, np.array(owners), embed(texts), stems, idf)
    return _campus


UNSEEN_IDF = math.log(2 * 57)  # a word the knowledge base never uses counts as rare


def unknown_to_campus(text: str) -> set[str]:
    """The content stems of ``text`` the knowledge base never uses ("sertraline", "nursery"): words of the user's own
    life, not of the campus."""
    idf = _campus_index().idf
    return {s for s in content_stems(text, generic=False) if s not in idf}


def campus_nearness(text: str) -> tuple[float, float]:
    """(best similarity to a knowledge-base sentence or title, share of the text's informative words --
    weighted by how rare they are in the knowledge base -- that the best-sharing entry uses)."""
    index = _campus_index()
    scores = index.vectors @ embed([text])[0]
    words = content_stems(text)
    weight = lambda s: index.idf.get(s, UNSEEN_IDF)  # noqa: E731
    total = sum(weight(s) for s in words) or 1.0
    shared = max((sum(weight(s) for s in words & entry) / total for entry in index.stems), default=0.0)
    return float(scores.max()), float(shared)


# ---------------------------------------------------------------- nearness to the user's own life

# Kinds of personal attribute: what a question about the user's own life asks about, described once each.
# A question nearer one of these than any campus sentence is about the person, not the campus ("what am I
# allergic to?", "who is visiting me?"), while "where can I print my essay?" stays a campus task.
PERSONAL_KINDS: tuple[str, ...] = (
    "an allergy: a food or thing I'm allergic to",
    "my health and medical conditions: an illness or disease I have",
    "the medicine or treatment I take",
    "what I can and cannot eat, my diet",
    "my family: parents, brothers, sisters, grandparents, children",
    "a friend, partner or roommate of mine and who I live with",
    "a person visiting me or coming to see me",
    "where I live, my home and my address",
    "my own appointments, plans and schedule",
    "my job, where I work and my shifts",
    "my pet and its name",
    "my birthday and my age",
)


def personal_nearness(text: str) -> float:
    """The best similarity of a text to a kind of personal attribute (``PERSONAL_KINDS``)."""
    return float(np.max(similarity(text, list(PERSONAL_KINDS))))


def personal_kind(text: str) -> tuple[int, float]:
    """The nearest kind of personal attribute (its index in ``PERSONAL_KINDS``) and how near it is."""
    scores = similarity(text, list(PERSONAL_KINDS))
    best = int(np.argmax(scores))
    return best, float(scores[best])


# Words for the members of a family: "is anyone in my family visiting?" is answered by "my mum is visiting"
KIN = frozenset("mother mum mom mummy mama father dad daddy papa parent grandparent grandmother grandma granny gran "
                "nan nana nanna grandpa gramps "
                "grandfather grandad sister brother sibling cousin aunt auntie uncle niece nephew son "
                "daughter child kid stepmother stepmum stepmom stepfather stepdad stepbrother stepsister twin".split())
FAMILY = frozenset("family relative relation kin folk".split())
# Events that are each other's opposite: "when does my shift end?" is not answered by "it starts at 6pm"; the
# words of one side are alike ("when does my brother come?" and "my brother visits on the 14th")
OPPOSITE_EVENTS = (frozenset("start begin open arrive come visit".split()),
                   frozenset("end finish close leave depart stop".split()))


# ---------------------------------------------------------------- harm

# Kinds of harm, each with a harmless twin on the same topic: MiniLM scores topic strongly, so what decides
# is that a request is nearer the harmful description than its twin ("take a bike that isn't mine" versus
# "report that my bike was stolen"), not that it mentions bikes.
HARM_KINDS: tuple[tuple[str, str], ...] = (
    ("get into another person's account, read their email or messages, or find out their password",
     "reset or recover my own password, or get help with my own account or email"),
    ("cheat in an exam: see the questions or answers early, copy, or smuggle in notes or a phone",
     "exam dates, exam rooms, the timetable and extra exam time"),
    ("copy someone else's homework, or hand in work someone else wrote or did as my own",
     "get help with my own essay or homework from a tutor"),
    ("steal, shoplift, or take something that is not mine without paying",
     "report that something of mine was stolen or lost, or borrow or buy something"),
    ("break into a locked building, lab, room or locker, or pick its lock",
     "opening hours of a building or lab, and how to get in with my card"),
    ("forge or fake a doctor's note, a signature or a document",
     "get an official letter, transcript or document"),
    ("hurt, threaten or attack a person", "get help after I was hurt or threatened"),
    ("spread rumours about someone, bully or harass them", "report bullying or harassment"),
    ("secretly track, follow or spy on a person", "get a safety escort or a safe ride at night"),
    ("make a bomb, a weapon, a poison or a toxic gas", "lab safety rules and safe use of chemicals"),
)
HARMFUL_ACTS = ("steal", "hack into", "break in", "hurt", "cheat", "forge", "spy on", "smuggle", "vandalise",
                "harass", "poison")  # an act that harms whoever it is done to, compared by meaning
_ASKS_HOW = re.compile(r"\b(?:how (?:do|can|could|would|should|might) (?:i|we|one)|"
                       r"(?:what(?:'s| is)|which is) the (?:\w+est|best) way to|is there a way to|"
                       r"help me(?: to)?|"
                       r"tell me how to|show me how to|teach me (?:how )?to|explain how to|"
                       r"i (?:want|need|would like|'d like) to|ways to|(?:can|could|would) you|"
                       r"(?:can|could|should) i)\s+(?:to\s+)?", re.I)
_ORDERS = re.compile(r"^\W*(?:please\s+)?(?:get|write|give|find|make|do|send|show)\b", re.I)
# no consent: "without her knowing", "that isn't mine", "as my own", "pay someone to sit my exam"
_NO_CONSENT = re.compile(r"\bwithout (?:\w+ ){0,3}(?:knowing|noticing|permission|consent|paying|"
                         r"being (?:caught|seen)|getting caught|finding out|asking)\b|\bsecretly\b|"
                         r"\bbehind (?:\w+ ){0,2}back\b|\bthat (?:isn't|is not|doesn't|does not) "
                         r"(?:mine|belong to me)\b|\bnot mine\b|\bas (?:my|our) own\b|\bas (?:mine|ours)\b|"
                         r"\b(?:pay|get|have) (?:someone|somebody|a friend|another \w+) (?:else )?to "
                         r"(?:sit|take|do|write)\b|\b(?:write|do|finish) my \w+(?: \w+)? (?:for me )?"
                         r"(?:so|and|that) (?:i can )?(?:submit|hand|turn)", re.I)  # ... so I can submit it
# someone else's thing: "another student's", "someone else's", "my roommate's", "her"
_OTHERS = re.compile(r"\b(?:someone(?: else)?|somebody(?: else)?|another \w+|other people|(?:my|a|the) \w+)"
                     r"'s\b|\b(?:his|her|their)\s+(?!own\b)[a-z]+", re.I)


@dataclass
class HarmSignals:
    """What the harm rule reads in a request (``classify_scope`` in tasks.py decides from it)."""

    kind: int             # the nearest harm kind
    similarity: float     # to that kind's harmful description
    margin: float         # harmful description minus its harmless twin
    act: str | None       # the verb the request asks how to do ("hack into"), None when it asks no how-to
    act_similarity: float  # nearest harmful act
    no_consent: bool
    others: bool


_harm_vectors: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None


def harm_signals(request: str) -> HarmSignals:
    """Compare a request with HARM_KINDS and HARMFUL_ACTS by meaning; look for consent cues by grammar."""
    global _harm_vectors
    if _harm_vectors is None:
        _harm_vectors = (embed([harmful for harmful, _ in HARM_KINDS]),
                         embed([harmless for _, harmless in HARM_KINDS]), embed(list(HARMFUL_ACTS)))
    harmful, harmless, acts = _harm_vectors
    vector = embed([request])[0]
    near, twin = harmful @ vector, harmless @ vector
    kind = int(np.argmax(near))
    how = _ASKS_HOW.search(request)
    action = request[how.end():] if how else (request if _ORDERS.match(request) else None)
    while action and _ASKS_HOW.match(action):  # "can you help me guess ...": the act is "guess"
        action = action[_ASKS_HOW.match(action).end():]
    act, act_similarity = None, 0.0
    if action:
        words = action.split()
        particle = len(words) > 1 and words[1].lower() in ("into", "in", "on", "out", "up", "off")
        act = " ".join(words[:2]) if particle else (words[0] if words else None)
        if act:
            act_similarity = float((acts @ embed([act.strip(" ?.!,")])[0]).max())
    return HarmSignals(kind, float(near[kind]), float(near[kind] - twin[kind]), act, act_similarity,
                       _NO_CONSENT.search(request) is not None, _OTHERS.search(request) is not None)


# ---------------------------------------------------------------- length directives in a system prompt

_NEGATION = re.compile(r"\b(?:never|not|no|avoid|without|rather than|instead of|nor|neither|stop)\b|n't\b",
                       re.I)
_N = r"(?:" + _NUMBER_WORD + r"|\d+)"  # a count
_COUNT = (r"(?P<bound>no more than|not more than|no longer than|at most|up to|maximum of|max|fewer than|"
          r"less than|more than|longer than|exceed|go beyond|at least|over|under|only|just|exactly)?"
          r"\s*\b(?P<n>a single|a|single|"
          + _NUMBER_WORD + r"|\d+)(?:\s+(?:or|to)\s+(?P<n2>" + _N + r"))?[\s-]+"
          r"(?:(?:short|brief|single|full)\s+)?"
          r"(?P<unit>sentences?|lines?|liners?)\b(?:\s+or\s+(?P<n3>" + _N + r")\b)?(?:\s+long\b)?")
_COUNT_RE = re.compile(_COUNT, re.I)
# a count said to fall short: "one sentence is never enough", "two lines aren't sufficient"
_NOT_ENOUGH = re.compile(r"\s*(?:(?:is|are|would be|will be)\s+(?:never|not|hardly|rarely)|isn't|aren't|won't be|"
                         r"(?:is|are)n't)\s+(?:\w+\s+)?(?:enough|sufficient|adequate)\b", re.I)
_SEVERAL = re.compile(r"\b(?:several|multiple|a few|a couple of|many)\s+(?:\w+\s+)?(?:sentences|lines)\b", re.I)
_BRIEF = re.compile(r"\b(?:brief(?:ly)?|concise(?:ly)?|short(?:er)?|succinct(?:ly)?|terse(?:ly)?|"
                    r"to the point|in a few words|crisp(?:ly)?)\b", re.I)
_LONG = re.compile(r"\b(?:detailed|in detail|thorough(?:ly)?|in depth|in-depth|elaborate|at length|long|"
                   r"lengthy|long-winded|paragraphs?|essays?|verbose|comprehensive(?:ly)?|ramble|rambling|"
                   r"explain fully|full explanations?|fully)\b", re.I)
_CLAUSE = re.compile(r"[.;!?:\n]+|,?\s+(?:but|and|however|though)\s+|\s+-\s+|"
                     r",\s+(?=(?:never|don't|do not|avoid|please|and)\b)", re.I)


def _count(text: str) -> int:
    text = text.lower()
    return 1 if text in ("a", "a single", "single") else int(number_value(text) or 1)


def length_limit(system: str) -> int | None:
    """How many sentences a system prompt allows per answer, or None when it sets no upper limit.

    Read clause by clause (lines of memory blocks -- ``[turn N] ...``, ``- label: value`` -- are not
    instructions): a sentence count ("one sentence", "a single sentence", "1 sentence", "at most two
    sentences", "one line"), brevity ("briefly", "keep it short", "concise") or length ("detailed", "a
    paragraph"), each possibly negated ("never", "don't", "avoid", "rather than" before it in the
    clause).
    "Never answer in one sentence" asks for at least two, "never two sentences" for one; "don't write long
    answers" for a short one. A sentence count says how brief "brief" is: "be concise -- two sentences at most" and
    "be brief: a sentence or two at most" allow two; brevity alone allows one.
    A request for at least N sentences, or for length, wins over a limit below it; a count said to fall short
    ("one sentence is never enough", "two lines aren't sufficient") and "several sentences" ask for more.
    """
    text = "\n".join(line for line in system.splitlines() if not is_block_line(line))
    most: list[int] = []
    least: list[int] = []
    vague: list[int] = []  # the limits of brevity words: one sentence, unless a count says how many
    for clause in _CLAUSE.split(text):
        if _SEVERAL.search(clause) and not _NEGATION.search(clause[:_SEVERAL.search(clause).start()]):
            least.append(2)  # "answers of several sentences": more than one
        count = _COUNT_RE.search(clause)
        if count:
            negated = bool(_NEGATION.search(clause[:count.start()]))
            bound = (count.group("bound") or "").lower()
            n = _count(count.group("n3") or count.group("n2") or count.group("n"))
            if _NOT_ENOUGH.match(clause[count.end():]):  # "a single sentence is never enough": more than it
                least.append(n + 1)
            elif bound in ("more than", "over", "longer than", "exceed", "go beyond"):
                (most if negated else least).append(n if negated else n + 1)
            elif bound == "at least":
                (most if negated else least).append(n - 1 if negated else n)
            elif bound in ("fewer than", "less than", "under"):
                (least if negated else most).append(n if negated else n - 1)
            elif bound in ("no more than", "not more than", "no longer than", "at most", "up to",
                           "maximum of", "max"):
                most.append(n)
            elif negated and n > 1:  # "never two sentences", "one short sentence, never two": fewer
                most.append(n - 1)
            else:  # "never answer in one sentence" asks for more than one
                (least if negated else most).append(n + 1 if negated else n)
            clause = clause[:count.start()] + clause[count.end():]
        for pattern, negated_means, plain_means in ((_LONG, vague, least), (_BRIEF, least, vague)):
            word = pattern.search(clause)
            if word:
                if _NEGATION.search(clause[:word.start()]):
                    negated_means.append(1 if negated_means is vague else 2)
                else:
                    plain_means.append(2 if plain_means is least else 1)
                break  # "a short paragraph": the length word wins over the brevity word
    most = most or vague
    if not most:
        return None
    limit = max(min(most), 1)
    return None if least and max(least) > limit else limit


def asks_for(system: str, pattern: str) -> bool:
    """Does a clause of the system prompt ask for ``pattern`` ("use bullet points"), not negate it
    ("don't use bullet points")? Lines of memory blocks are not instructions."""
    text = "\n".join(line for line in system.splitlines() if not is_block_line(line))
    for clause in _CLAUSE.split(text):
        match = re.search(pattern, clause, re.I)
        if match and not _NEGATION.search(clause[:match.start()]):
            return True
    return False
