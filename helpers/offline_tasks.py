"""The offline stand-in's rules for special tasks, and for questions about the user.

``helpers.offline_policy.decide`` hands a request here when its system prompt names a
task -- a grounding judge or scope classifier (notebook 03), a conversation summariser
or profile extractor (notebooks 08-09) -- and asks ``_about_user``/``_noted`` before
its agent rules. The rules are listed, in order, in ``helpers/offline_policy.py``.
Like everything in the stand-in, they read only the request they are given.
"""
from __future__ import annotations

import re

WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_WORD = re.compile(r"[a-z0-9]+")
_STOP = set("""a an the is are was were be do does did of to in on at for and or what when where which who
how many much days day until till from now that this those these it its me my i you your we our please
can could would will there their them then than with about tell any some there's is it's meet meets
meeting hours?""".split())


def _text(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return content or ""


_FACT_TOKEN = re.compile(r"\b(?:" + "|".join(WEEKDAYS) + r")s?\b|\b\d+(?::\d+)?\b|\b[A-Z][a-z]+(?: [A-Z][a-z]+)*\b")
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
PINNED_PREFIX = "Pinned"
CONDENSED_NOTE = "(Older turns were condensed away to stay within the word limit.)"


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
    lines, pinned = [], []
    for line in parts.get("PREVIOUS SUMMARY", "").splitlines():
        line = line.strip()
        if line.startswith(PINNED_PREFIX):
            pinned += [p.strip() for p in line.partition(":")[2].split(";") if p.strip()]
        elif line and line not in ("(none)", CONDENSED_NOTE):
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
    condensed = False
    while len(lines) > 1 and sum(len(x.split()) for x in lines + pinned_line) > limit:
        asked = [i for i, x in enumerate(lines) if re.search(r'user: "[^"]*\?(?: …)?"', x)]
        lines.pop(asked[0] if asked else 0)
        condensed = True
    return "\n".join(([CONDENSED_NOTE] if condensed else []) + lines + pinned_line) or "(nothing to summarise)"


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


_ABOUT_USER = re.compile(r"\b(?:what(?:'s| is| was| are| were) my|what did i (?:say|tell you|mention)|"
                         r"do you (?:remember|know) (?:my|what i)|remind me (?:of |what )?my|who am i)\b", re.I)
_QUOTED_USER = re.compile(r'\[turn (\d+)\] user: "([^"]*)"')
_PROFILE_LINE = re.compile(r"^- ([\w /-]+): (.+?) \(turn (\d+)[^)]*\)", re.M)
_MEMORY_STOP = _STOP | set("say said tell told mention mentioned remember remind again know about earlier "
                           "before am".split())


def _stems(text: str) -> set[str]:
    return {w[:-1] if len(w) > 3 and w.endswith("s") else w for w in _WORD.findall(text.lower())} - _MEMORY_STOP


def _about_user(messages: list[dict]) -> str | None:
    """Rule 1b: answer a question about the user from the user's own statements in the request."""
    if not messages or messages[-1].get("role") != "user":
        return None
    question = _text(messages[-1])
    if not _ABOUT_USER.search(question):
        return None
    wanted = _stems(question)
    candidates: list[tuple[str, str | None, str]] = []  # (kind, turn id, text)
    system_seen = 0
    for message in messages[:-1]:
        role, text = message.get("role"), _text(message)
        if role in ("system", "developer"):
            system_seen += 1
            if system_seen == 1:
                continue  # the operator's prompt, not a memory block
            candidates += [("quote", m.group(1), sentence) for m in _QUOTED_USER.finditer(text)
                           for sentence in re.split(r"(?<=[.!?])\s+", m.group(2)) if sentence]
            candidates += [("profile", m.group(3), f"{m.group(1)}: {m.group(2)}|{m.group(0)}")
                           for m in _PROFILE_LINE.finditer(text)]
        elif role == "user":
            candidates += [("quote", None, s) for s in re.split(r"(?<=[.!?])\s+", text.strip())
                           if s and not s.rstrip().endswith("?")]
    best, best_key = None, (0,)
    for position, candidate in enumerate(candidates):
        score = len(wanted & _stems(candidate[2].split("|")[0]))
        key = (score, int(candidate[1]) if candidate[1] is not None else float("inf"), position)
        if score and key > best_key:
            best, best_key = candidate, key
    if best is None:
        return "I don't know: nothing in what I was sent tells me that. Could you tell me again?"
    kind, turn_id, text = best
    where = f" (turn {turn_id})" if turn_id is not None else ""
    if kind == "profile":
        fact, _, line = text.partition("|")
        stale = " It may be out of date, so please confirm." if "possibly outdated" in line else ""
        return f"Your profile says{where}: {fact}.{stale}"
    return f'You told me{where}: "{text.strip()}"'


def _noted(messages: list[dict]) -> str | None:
    """Rule 1b, second half: a statement of profile facts (and no question) is acknowledged."""
    if not messages or messages[-1].get("role") != "user" or "?" in _text(messages[-1]):
        return None
    if _is_ack(_text(messages[-1])) and _text(messages[-1]).strip():
        return "You're welcome!"
    facts = extract_profile_facts("USER SAID:\n" + _text(messages[-1]))["facts"]
    return "Noted: " + "; ".join(f["value"] for f in facts) + "." if facts else None
