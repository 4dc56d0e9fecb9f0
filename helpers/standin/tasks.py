"""The offline stand-in's rules for special tasks, and for questions about the user.

``helpers.standin.policy.decide`` hands a request here when its system prompt names a
task -- a grounding judge or scope classifier (notebook 03), a conversation summariser
or profile extractor (notebooks 08-09) -- and asks ``_about_user``/``_noted`` before
its agent rules. The rules are listed, in order, in ``helpers/standin/policy.py``.
Like everything in the stand-in, they read only the request they are given.

**The memory rule** (questions about the user, rule 1b). It is a rule, not a model:

1. *Is the newest user message about the user?* ``QUESTION_FORMS`` are the phrasings
   people use -- "what's / what is / who is / where is / when is my X", "do you
   remember / know my X", "remind me of my X", "tell me my X", "what did I say about
   X", "which X did I say", "where / what do I <verb>" ("where do I live"), "who am I"
   (asks for the name). Each names what is asked about: the noun phrase after "my"
   ("my advisor's name" asks for the advisor), or the verb. Such a question is never
   sent to campus search -- except a verb question outside ``PERSONAL_VERBS`` that
   nothing the user said answers: "where do I print a poster?" is about the campus.
2. *Evidence* is only what the user said, as found in the request: sentences of earlier
   user messages (the window, newest of all), ``[turn N] user: "..."`` quotes and
   ``- label: value (turn N, ...)`` lines in any system message (recalled turns,
   summaries, a profile or facts block). The assistant's words never count.
3. A piece of evidence *matches* when it shares a content word with the noun phrase
   (generic words such as "name" or "number" only count when nothing else is asked).
   It is a *statement* when it says what the thing is -- "my <noun phrase> is / are /
   was / changed to ...", "I <verb> ..." for a verb question, a profile line, a
   correction note -- or carries a correction word ("actually", "now", "instead",
   "changed", ...); otherwise it is a mere mention.
4. *Choosing*: statements before mentions (for "what did I say about X" every sentence
   of the user's that mentions X counts as a statement); then evidence the context does
   not mark as superseded ("(superseded at turn M: X is now "Y")" after a quote,
   "(superseded)" or "(outdated)" after a line) before evidence it does; then, for "what
   did I say" questions, the user's own words before profile lines; then evidence it marks as
   current ("(current)", or a profile line that names the value it superseded); then
   evidence that covers every word asked about; then the newest (highest turn id,
   the window above all, later in the request on a tie).
5. *Answer*: the user's own words quoted with their turn -- ``You told me (turn N):
   "..."`` -- or ``Your profile says (turn N): label: value.`` (with a request to
   confirm a fact marked "possibly outdated"), or, for a superseded quote, the
   current value from its note. With nothing matching it says ``DONT_KNOW``: a
   forgotten fact stays forgotten, and nothing is invented.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from helpers.clock import WEEKDAYS
from helpers.memory.summary_format import PINNED_PREFIX, format_turn_ids  # the summariser's own format
from helpers.tokens import content_text

_WORD = re.compile(r"[a-z0-9]+")
_STOP = set("""a an the is are was were be do does did of to in on at for and or what when where which who
how many much days day until till from now that this those these it its me my i you your we our please
can could would will there their them then than with about tell any some there's is it's meet meets
meeting hours?""".split())


def _text(message: dict) -> str:
    return content_text(message.get("content"))


_FACT_TOKEN = re.compile(r"\b(?:" + "|".join(WEEKDAYS) + r")s?\b|\b\d+(?::\d+)?\b"
                         r"|\b[A-Z][a-z]+(?: [A-Z][a-z]+)*\b")
_JUDGE_SECTIONS = re.compile(r"PASSAGES:\s*(?P<passages>.*?)\s*ANSWER:\s*(?P<answer>.*)", re.S)


def judge_grounding(prompt: str) -> dict:
    """Rule: every weekday, number and capitalised name in the answer must appear in the passages."""
    parts = _JUDGE_SECTIONS.search(prompt)
    if not parts:
        return {"verdict": "unsupported", "reason": "no PASSAGES/ANSWER sections to compare"}
    passages, answer = parts.group("passages").lower(), re.sub(r"\[[^\]]*\]", "", parts.group("answer"))
    first_words = {m.group(0) for m in re.finditer(r"(?:^|[.!?]\s+)([A-Z][a-z]+)", answer)}
    missing = []
    for token in _FACT_TOKEN.findall(answer):
        if token in first_words or token in ("I", "The", "It"):
            continue
        if token.lower().rstrip("s") not in passages and token.lower() not in passages:
            missing.append(token)
    if missing:
        return {"verdict": "unsupported", "reason": "not in the passages: " + ", ".join(sorted(set(missing)))}
    return {"verdict": "supported", "reason": "every name, day and number appears in the passages"}


_CAMPUS_WORDS = set("""campus club clubs lab labs library office hours professor faculty course courses class
classes event events meet meets meeting semester student students dining shuttle advising exam exams
registrar dorm housing gym hackathon seminar lecture university larkspur ta tutor tutoring deadline
schedule parking health centre center study room rooms pool swimming sports gym facility facilities
building hall open opening print printing""".split())
_UNSAFE = re.compile(r"\b(hack into|steal|weapon|bomb|poison|break into|cheat on|exam answers|"
                     r"someone's password|hurt)\b", re.I)


def classify_scope(request: str) -> dict:
    """Rule: unsafe phrases -> unsafe; any campus word -> campus; otherwise off_topic."""
    if _UNSAFE.search(request):
        return {"category": "unsafe", "reason": "asks for something harmful or dishonest"}
    if set(_WORD.findall(request.lower())) & _CAMPUS_WORDS:
        return {"category": "campus", "reason": "about campus life"}
    return {"category": "off_topic", "reason": "not about the campus"}


# ---------------------------------------------------------------- memory tasks (notebooks 08-09)

_SECTION = re.compile(r"^([A-Z][A-Z ]+?)(?: \([^)\n]*\))?:[ \t]*(.*)$", re.M)
_TURN_LINE = re.compile(r"^\[turn (\d+)\] (user|assistant|tool[^:]*): ?(.*)$")
_ACKS = set("ok okay k thanks thank you thx cool great nice sure yes yep no nope fine got it alright right "
            "perfect awesome cheers".split())  # greetings are not here: rule 4 answers them
LEFT_OUT_NOTE = "(Left out to stay within the word limit: {turns}.)"  # questions go first, then the oldest
_LEFT_OUT = re.compile(r"^\(Left out to stay within the word limit: turns? ([\d, -]+)\.\)$")


def _sections(prompt: str) -> dict[str, str]:
    """Upper-case ``NAME:`` headers at the start of a line, each with the text up to the next header."""
    found = list(_SECTION.finditer(prompt))
    out = {}
    for i, match in enumerate(found):
        end = found[i + 1].start() if i + 1 < len(found) else len(prompt)
        out[match.group(1).strip()] = (match.group(2) + prompt[match.end():end]).strip()
    return out


def _clip(text: str, sentences: int, words: int) -> str:
    """The first ``sentences`` sentences, at most ``words`` words, double quotes made single (for quoting)."""
    kept = " ".join(re.split(r"(?<=[.!?])\s+", " ".join(text.split()))[:sentences]).split()
    return (" ".join(kept[:words]) + (" …" if len(kept) > words else "")).replace('"', "'")


def _is_ack(text: str) -> bool:
    return set(re.findall(r"[a-z]+", text.lower())) <= _ACKS


def _bullets(text: str) -> list[str]:
    return [line.strip()[2:].strip() for line in text.splitlines() if line.strip().startswith("- ")]


def summarise_conversation(prompt: str) -> str:
    """Rule: extractive summary, one line per turn (see the module docstring)."""
    parts = _sections(prompt)
    lines, pinned, left_out = [], [], set()
    for line in parts.get("PREVIOUS SUMMARY", "").splitlines():
        line = line.strip()
        earlier = _LEFT_OUT.match(line)
        if line.startswith(PINNED_PREFIX):
            pinned += [p.strip() for p in line.partition(":")[2].split(";") if p.strip()]
        elif earlier:  # turns an earlier summary already left out
            for first, last in re.findall(r"(\d+)(?:-(\d+))?", earlier.group(1)):
                left_out.update(range(int(first), int(last or first) + 1))
        elif line and line != "(none)":
            lines.append(line)
    turns: dict[int, dict[str, str]] = {}
    for line in parts.get("TURNS", "").splitlines():
        match = _TURN_LINE.match(line.strip())
        if match:
            turn = turns.setdefault(int(match.group(1)), {})
            role, text = match.group(2), match.group(3).strip()
            if role == "user":
                turn.setdefault("user", text)
            elif role == "assistant" and text:
                turn["assistant"] = text  # the last one is the final answer
    for turn_id, turn in sorted(turns.items()):
        said = turn.get("user", "")
        if not said or _is_ack(said):
            continue
        line = f'[turn {turn_id}] user: "{_clip(said, 2, 30)}"'
        if turn.get("assistant"):
            line += f' -> assistant: "{_clip(turn["assistant"], 1, 25)}"'
        lines.append(line)
    for fact in _bullets(parts.get("MISSING", "")):
        if fact not in pinned:
            pinned.append(fact)
    limit_match = re.search(r"\d+", parts.get("WORD LIMIT", ""))
    limit = int(limit_match.group(0)) if limit_match else 120
    pinned_line = [f"{PINNED_PREFIX}: " + "; ".join(pinned)] if pinned else []
    while len(lines) > 1 and sum(len(x.split()) for x in lines + pinned_line) > limit:
        asked = [i for i, x in enumerate(lines) if re.search(r'user: "[^"]*\?(?: …)?"', x)]
        gone = _TURN_LINE.match(lines.pop(asked[0] if asked else 0))
        left_out.update([int(gone.group(1))] if gone else [])
    note = [LEFT_OUT_NOTE.format(turns=format_turn_ids(left_out))] if left_out else []
    return "\n".join(note + lines + pinned_line) or "(nothing to summarise)"


_NAME = r"([A-Z][\w'-]+(?: [A-Z][\w'-]+)?)"
_UNTIL = r"([^.!?,;\n]+)"
_TIME_WORDS = re.compile(r"\b(mornings?|afternoons?|evenings?|nights?|weekends?|weekdays?|"
                         + "|".join(WEEKDAYS) + r")s?\b", re.I)
_CONTACT_WORDS = re.compile(r"\b(e-?mail|texts?|phone|calls?)\b", re.I)
PROFILE_RULES: tuple[tuple[str, str, str], ...] = (
    # (key, topic, pattern): topic "*" means "work it out from the value" (_topic)
    ("name", "name", r"\b(?i:my name is) " + _NAME),  # names must be capitalised; the lead-in may not be
    ("name", "name", r"\b(?i:call me|i go by) " + _NAME),
    ("goal", "goal", r"\bmy goal is to " + _UNTIL),
    ("goal", "goal", r"\bi(?:'m| am) (?:aiming|hoping|planning) to " + _UNTIL),
    ("constraint", "diet", r"\bi(?:'m| am) (vegetarian|vegan|pescatarian|gluten-free|lactose intolerant)\b"),
    ("constraint", "allergy", r"\bi(?:'m| am) (allergic to [a-z -]+?)(?=[.!?,;\n]|$)"),
    ("constraint", "*", r"\bi ((?:can't|cannot|can not) (?:do|make|attend) [^.!?,;\n]+)"),
    ("preference", "*", r"\bi(?:'d| would)? (?:really )?prefer " + _UNTIL),
)


_FILLER_TAIL = re.compile(r"(?:\s+(?:now|instead|these days|too|as well|please|anyway))+$", re.I)


def _topic(value: str) -> str:
    if _TIME_WORDS.search(value):
        return "schedule"
    if _CONTACT_WORDS.search(value):
        return "contact"
    words = re.findall(r"[a-z]+", value.lower())
    return words[-1].rstrip("s") if words else "general"


def extract_profile_facts(prompt: str) -> dict:
    """Rule: the regular expressions in PROFILE_RULES, applied to the USER SAID section only."""
    said = _sections(prompt).get("USER SAID", "")
    facts = []
    for key, topic, pattern in PROFILE_RULES:
        for match in re.finditer(pattern, said, 0 if key == "name" else re.I):
            value = _FILLER_TAIL.sub("", " ".join(match.group(1).split()).strip(" '\""))
            facts.append({"key": key, "topic": _topic(value) if topic == "*" else topic, "value": value})
    return {"facts": facts}


# ---------------------------------------------------------------- questions about the user (rule 1b)

_NP = (r"(?P<np>[a-z0-9][\w'-]*(?: [a-z0-9][\w'-]*){0,3}?)"  # up to four words, then a full stop, "is", ...
       r"(?=\s*(?:$|[?.!,;:]|\b(?:is|are|was|were|again|please|now|called)\b))")
_WH = r"(?:what|who|where|when|which|how \w+)"
QUESTION_FORMS = (  # each names what is asked about: a noun phrase (np) or a verb
    rf"\b{_WH}(?:'s|'re| is| are| was| were)(?: \w+ly)? my {_NP}",            # what's my X, who is my X
    rf"\b(?:do|did|can) you (?:still )?(?:remember|know|recall) (?:{_WH} )?my {_NP}",  # do you remember my X
    rf"\b(?:remind|tell) me (?:again )?(?:of |about |{_WH} )?my {_NP}",        # remind me of my X
    rf"\b(?:what|which) (?:did )?i (?:say|said|tell you|told you|mention|mentioned) "
    rf"(?:about |regarding |for )?(?:my |the )?{_NP}",                         # what did I say about X
    r"\b(?:which|what) (?P<np>[a-z][\w'-]*(?: [a-z][\w'-]*){0,2}) did i\b",   # which X did I say
    r"\b(?:where|when|what|who|which \w+) do i (?P<verb>[a-z]+)\b",          # where do I live
    r"\bwho am i\b(?P<np>)",                                                   # who am I -> name
)
_QUESTION_FORMS = [re.compile(p, re.I) for p in QUESTION_FORMS]
PERSONAL_VERBS = frozenset("live work study stay major commute come".split())  # "where do I live?"
_SAID_QUESTION = re.compile(r"\bwhat (?:did )?i (?:say|said|tell|told|mention)", re.I)
_GENERIC = set("name number day time date place one thing stuff kind type new current old favourite favorite "
               "usual exact full".split())
_CUT = re.compile(r"\b(?:this|that|these|those|for|at|in|on|of|with|from|to|next|last|again|today)\b.*$")
_MY_STATEMENT = re.compile(r"\bmy ([a-z][\w' -]{0,40}?) (?:is|are|was|were|has been|have been|changed to|"
                           r"moved to|got moved to|switched to)\b", re.I)
_CORRECTION = re.compile(r"\b(?:actually|now|instead|changed|moved|switched|new|no longer|anymore|update)\b",
                         re.I)
_QUOTED_USER = re.compile(r'\[turn (\d+)\] user: "([^"]*)"(.*)$', re.M)
_SUPERSEDED_NOTE = re.compile(r'\(superseded at turn (\d+): (.+?) is now "([^"]*)"\)')
_FACT_LINE = re.compile(r"^- ([\w /'-]{1,40}): (.+?)(?: \((turn (\d+)[^)\n]*|current|superseded|outdated)\)"
                        r"(?:[;.][^\n]*)?)?$", re.M)
_MEMORY_STOP = _STOP | set("say said tell told mention mentioned remember remind again know about earlier "
                           "before am".split())
DONT_KNOW = "I don't know: nothing in what I was sent tells me that. Could you tell me again?"


@dataclass
class _Said:
    """One piece of evidence about the user: a sentence they said, a profile line or a correction note."""

    kind: str              # "said" (raw message), "quote" ([turn N] line), "profile" (- key: value), "note"
    text: str
    turn: int | None       # None: a message of the current window, newer than every numbered turn
    position: int
    statement: bool        # says what the thing is (not merely mentions it)
    superseded: bool = False
    current: bool = False


def _stem(word: str) -> str:
    word = word.lower().removesuffix("'s")
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def _stems(text: str) -> set[str]:
    return {_stem(w) for w in re.findall(r"[a-z0-9]+(?:'s)?", text.lower())} - _MEMORY_STOP


def asked_about_user(question: str) -> tuple[set[str], str | None] | None:
    """What a question about the user asks: (words of "my <noun phrase>", None), (empty, verb), or None."""
    for form in _QUESTION_FORMS:
        match = form.search(question)
        if match is None:
            continue
        groups = match.groupdict()
        if groups.get("verb"):
            return set(), groups["verb"].lower()
        phrase = (groups.get("np") or "name").lower()
        owner, _, owned = phrase.partition("'s ")
        if owned in ("name", "names"):
            phrase = owner  # "my advisor's name" asks who the advisor is
        words = _stems(_CUT.sub("", phrase).strip() or phrase) or {_stem(phrase.split()[0])}
        return words, None
    return None


_ABBREVIATION = re.compile(r"(?:\b(?:Dr|Mr|Mrs|Ms|Prof|St|Rd|Ave|No|Apt|Jr|Sr|vs|etc|e\.g|i\.e)|\b[A-Z])\.$")


def _sentences(text: str) -> list[str]:
    """Sentences of ``text``; a line break ends one, a full stop after "Dr", "St", an initial ... does not."""
    out: list[str] = []
    for line in text.splitlines():
        pieces: list[str] = []
        for piece in re.split(r"(?<=[.!?])\s+", line.strip()):
            if pieces and _ABBREVIATION.search(pieces[-1]):
                pieces[-1] += " " + piece
            elif piece:
                pieces.append(piece)
        out += pieces
    return out


def _evidence(messages: list[dict]) -> list[_Said]:
    """The user's own statements in the request, oldest first (see the module docstring)."""
    found: list[_Said] = []

    def said(kind, text, turn, statement_ok=True, **marks):
        found.append(_Said(kind, text, turn, len(found), statement_ok, **marks))

    for message in messages:
        role, text = message.get("role"), _text(message)
        if role == "user":
            for sentence in _sentences(text):
                if not sentence.endswith("?"):
                    said("said", sentence, None)
        elif role in ("system", "developer"):
            for match in _QUOTED_USER.finditer(text):
                turn, note = int(match.group(1)), _SUPERSEDED_NOTE.search(match.group(3))
                for sentence in _sentences(match.group(2)):
                    if not sentence.endswith("?"):
                        said("quote", sentence, turn, superseded=note is not None)
                if note:
                    said("note", f"{note.group(2)}|{note.group(3)}", int(note.group(1)), current=True)
            for match in _FACT_LINE.finditer(text):
                label, value, marks = match.group(1), match.group(2), match.group(3) or ""
                turn = int(match.group(4)) if match.group(4) else None
                said("profile", f"{label}: {value}|{match.group(0)}", turn,
                     superseded=marks.startswith(("superseded", "outdated")),
                     current=marks == "current" or "superseded \"" in marks)
    return found


def _is_statement(item: _Said, words: set[str], verb: str | None) -> bool:
    """Does this piece say what the thing asked about is (rather than merely mention it)?"""
    if item.kind in ("profile", "note"):
        return True
    if verb is not None:
        ing = (verb[:-1] if verb.endswith("e") else verb) + "ing"
        said = (rf"\bi(?:'ve| have)?(?: now| still| currently| actually| really)? {verb}(?:s|d|ed)?\b|"
                rf"\bi(?:'m| am)(?: now| still| currently)? {ing}\b")
        return re.search(said, item.text, re.I) is not None
    for match in _MY_STATEMENT.finditer(item.text):
        if _stems(match.group(1)) & words:
            return True
    if words == {"name"} and any(re.search(p, item.text) for k, _, p in PROFILE_RULES if k == "name"):
        return True
    return _CORRECTION.search(item.text) is not None


def _about_user(messages: list[dict]) -> str | None:
    """Rule 1b: answer a question about the user from the user's own statements in the request."""
    if not messages or messages[-1].get("role") != "user":
        return None
    asked = asked_about_user(_text(messages[-1]))
    if asked is None:
        return None
    words, verb = asked
    wanted = (words - _GENERIC) or words
    words_asked = _SAID_QUESTION.search(_text(messages[-1])) is not None
    best, best_key = None, None
    for item in _evidence(messages[:-1]):
        topic = item.text.split("|")[0]
        if verb is not None:
            if not _is_statement(item, words, verb):
                continue
            cover = 1
        else:
            shared = wanted & _stems(topic)
            if not shared:
                continue
            cover = int(shared == wanted)
        statement = words_asked and item.kind in ("said", "quote") or _is_statement(item, words, verb)
        key = (statement, not item.superseded, words_asked and item.kind in ("said", "quote"), item.current,
               cover, item.turn if item.turn is not None else float("inf"), item.position)
        if best_key is None or key > best_key:
            best, best_key = item, key
    if best is None:
        # "where do I print a poster?" is a campus question unless the user said "I print ..."
        return DONT_KNOW if verb is None or verb in PERSONAL_VERBS else None
    where = f" (turn {best.turn})" if best.turn is not None else ""
    if best.kind == "note":
        label, value = best.text.split("|")
        return f'You told me{where} that your {label} is now "{value}".'
    if best.kind == "profile":
        fact, _, line = best.text.partition("|")
        stale = " It may be out of date, so please confirm." if "possibly outdated" in line else ""
        return f"Your profile says{where}: {fact}.{stale}"
    return f'You told me{where}: "{best.text}"'


def _noted(messages: list[dict]) -> str | None:
    """Rule 1b, second half: a statement of profile facts (and no question) is acknowledged."""
    if not messages or messages[-1].get("role") != "user" or "?" in _text(messages[-1]):
        return None
    if _is_ack(_text(messages[-1])) and _text(messages[-1]).strip():
        return "You're welcome!"
    facts = extract_profile_facts("USER SAID:\n" + _text(messages[-1]))["facts"]
    return "Noted: " + "; ".join(f["value"] for f in facts) + "." if facts else None
