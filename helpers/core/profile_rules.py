"""The profile rules (notebook 09): what a user's words state about them, by regular expressions.

One list of rules, ``PROFILE_RULES``, read in two places that must agree: the campus attribute set of
the fact pipeline (``helpers.memory.profile_extraction.extract_with_rules``, the offline extractor) and
the offline stand-in's fact-extractor task (``helpers.standin.tasks.extract_facts``), which
answers a model extractor's request the way these rules read it. It sits at the bottom of the package,
so neither has to import the other.

Each rule is (key, topic, pattern): "my name is X" / "call me X" -> name; "my goal is to ..." / "I'm
aiming to ..." -> goal; "I'm vegetarian" (vegan, gluten-free) -> constraint/diet; "I'm allergic to ..." ->
constraint/allergy; "I can't do ..." -> constraint; "I prefer ..." -> preference. A topic ``*`` is worked
out from the value (``topic_of``: a time of day or week is ``schedule``, a way to be reached ``contact``).

The rules take attributes of the user only: another person's reported or quoted words are left out first
(``without_reported_speech``: "my sister said her birthday is in May"), and "my X is Y" is an attribute only
when it is the user's own and current (``is_users_attribute``: not "my kids' smiles are awesome", "my
favourite part was the ending").
"""
from __future__ import annotations

import re

from helpers.core.clock import WEEKDAYS

_NAME = r"([A-Z][\w'-]+(?: [A-Z][\w'-]+)?)"
_UNTIL = r"([^.!?,;\n]+)"
_TIME_WORDS = re.compile(r"\b(mornings?|afternoons?|evenings?|nights?|weekends?|weekdays?|"
                         + "|".join(WEEKDAYS) + r")s?\b", re.I)
_CONTACT_WORDS = re.compile(r"\b(e-?mail|texts?|phone|calls?)\b", re.I)
PROFILE_RULES: tuple[tuple[str, str, str], ...] = (
    # (key, topic, pattern): topic "*" means "work it out from the value" (topic_of)
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


def topic_of(value: str) -> str:
    """The topic of a constraint or preference, from its value: schedule, contact, else its last noun."""
    if _TIME_WORDS.search(value):
        return "schedule"
    if _CONTACT_WORDS.search(value):
        return "contact"
    words = re.findall(r"[a-z]+", value.lower())
    return words[-1].rstrip("s") if words else "general"


def profile_facts(said: str) -> list[dict]:
    """``{"key", "topic", "value"}`` for each match of ``PROFILE_RULES`` in ``said`` (the user's words only)."""
    facts = []
    for key, topic, pattern in PROFILE_RULES:
        for match in re.finditer(pattern, said, 0 if key == "name" else re.I):
            value = _FILLER_TAIL.sub("", " ".join(match.group(1).split()).strip(" '\""))
            facts.append({"key": key, "topic": topic_of(value) if topic == "*" else topic, "value": value})
    return facts


# "my <one to four words> is|are <value>": the value runs to the end of the sentence or clause
MY_ATTRIBUTE = re.compile(r"\bmy\s+((?:[a-z][\w'-]*\s+){0,3}?[a-z][\w'-]*)\s+(?:is|are|was)\s+"
                          r"(?:now\s+|still\s+)?"
                          r"([^,;!?]+?)\s*(?=,\s*(?:by the way|btw|and|but|so)\b|[.;!?]|$)", re.I)
_NOT_ATTRIBUTES = {"name"}  # covered by the name rule, which knows "call me ..."
_TAIL_WORDS = re.compile(r"(?:\s+(?:now|instead|these days|too|as well|anymore|again|then))+$", re.I)
_LEAD_WORDS = re.compile(r"^(?:(?:actually|also|now|so|and|oh|btw|quick note|just so you know)[,:]?\s+)+",
                         re.I)


# the heads of a piece of an experience, not of the person: "my favourite part", "the best bit"
_PIECE_OF_SOMETHING = re.compile(r"\b(?:part|parts|bit|bits|moment|moments|highlight|highlights)$", re.I)
# words that only judge or feel ("awesome", "so cute"): a value made of nothing else states no attribute
_JUDGING = frozenset("""awesome amazing great wonderful lovely beautiful cute adorable fun incredible fantastic
terrible awful horrible nice cool gorgeous precious perfect best worst good bad hilarious sweet brilliant crazy
insane wild special everything unreal epic stunning magical gross boring weird fine okay ok superb excellent
delightful charming funny sad scary annoying exhausting exciting inspiring priceless important comforting
supportive meaningful helpful rewarding challenging tough peaceful calming relaxing refreshing fulfilling motivating
encouraging""".split())
# how someone feels ("excited about summer break", "getting nervous", "so proud of her"): a feeling, not an attribute
_FEELINGS = frozenset("""excited thrilled happy glad sad proud nervous anxious worried scared afraid stressed upset
grateful thankful pumped stoked eager keen relieved bored tired exhausted overwhelmed hopeful curious confused angry mad
frustrated disappointed lonely jealous ecstatic delighted content comfortable inspired motivated amazed impressed
touched moved blessed lucky""".split())
_FEELING_LEAD = frozenset("getting feeling becoming growing a bit little kind sort of".split())
# how a thing is going ("paying off", "going well", "coming true"): a verb's -ing form, then how it goes
_HOW_IT_GOES = frozenset("well badly great fine ok okay smoothly off true nowhere strong".split())
_INTENSIFIERS = frozenset("so very really truly just the most such absolutely totally pretty quite super too "
                          "a an and always honestly simply".split())


def _judges_only(value: str) -> bool:
    """Is a value only words that judge or feel ("awesome", "so much fun", "the best", "the most important thing")?"""
    words = re.findall(r"[a-z]+", value.lower())
    return bool(words) and any(w in _JUDGING for w in words) and all(
        w in _JUDGING or w in _INTENSIFIERS or w in ("much", "of", "all", "ever", "thing", "things", "one", "ones")
        for w in words)


def _feels(value: str) -> bool:
    """Does a value tell how someone feels ("excited about summer break", "getting nervous", "so proud of her"),
    what something is like ("like a second home") or how it is going ("paying off", "going well"), rather than
    what it is?"""
    words = re.findall(r"[a-z']+|\d+", value.lower())
    while words and (words[0] in _INTENSIFIERS or words[0] in _FEELING_LEAD):
        words = words[1:]
    simile = len(words) > 1 and words[0] == "like" and not words[1].isdigit()  # "like 10 minutes away": about
    faring = len(words) > 1 and (words[0].endswith("ing") or words[0].endswith("in'")) and words[1] in _HOW_IT_GOES
    return bool(words) and (words[0] in _FEELINGS or simile or faring)


def is_users_attribute(attribute: str, verb: str, value: str) -> bool:
    """Does "my <attribute> <verb> <value>" state an attribute of the user (not conversation)?

    Not when the attribute is a piece of an experience ("my favourite part"), the sentence tells of the past
    ("my favourite part was the ending": what held then, not what holds), or the value only judges or feels
    ("my kids' smiles are awesome", "my kids are awesome"), or it tells a feeling, a likeness or how a thing goes
    (``_feels``: "my kids are so excited about summer break", "my laptop is like half my lifeline", "my hard work
    is paying off"). A thing of the user's world keeps its facts ("my cat's name is Biscuit")."""
    return not (_PIECE_OF_SOMETHING.search(attribute) or verb.lower() == "was" or _judges_only(value)
                or _feels(value))


def my_attribute_facts(sentence: str) -> list[dict]:
    """``{"key", "topic", "value"}`` for each "my <attribute> is <value>" in one sentence (open-ended: any
    attribute the user names, its key and topic the attribute itself) that states an attribute of the user
    (``is_users_attribute``)."""
    found = []
    for match in MY_ATTRIBUTE.finditer(sentence):
        attribute = " ".join(match.group(1).lower().split())
        value = _TAIL_WORDS.sub("", _LEAD_WORDS.sub("", " ".join(match.group(2).split())).strip(" '\""))
        verb = match.group(0)[match.end(1) - match.start(0):].split()[0]
        if attribute not in _NOT_ATTRIBUTES and value and is_users_attribute(attribute, verb, value):
            found.append({"key": attribute, "topic": attribute, "value": value})
    return found


# someone else's words reported: "my sister said her birthday is in May", "Sam told me my room is 12"; the
# user's own ("I told him my room is 12") are theirs
_REPORTED = re.compile(r"\b(?!(?:i|we)\b)(?:[A-Z][\w'-]*|(?:my|his|her|their|our|the) [a-z][\w'-]*|he|she|they|"
                       r"someone|somebody|people|everyone),?\s+(?:\w+ly\s+)?(?:said|says|told (?:me|us)|tells (?:me|us)|"
                       r"thinks|thought|claims|claimed|mentioned|reckons|insists|insisted|swears|wrote|texted)\b"
                       r"[^.!?\n]*", re.I)
_QUOTED = re.compile(r"\"[^\"\n]*\"|“[^”\n]*”")


def without_reported_speech(text: str) -> str:
    """``text`` with someone else's reported or quoted words left out (each replaced by " ... "): what another
    person said is never a statement of the user's."""
    return _REPORTED.sub(" ... ", _QUOTED.sub(" ... ", str(text)))


def stated_facts(said: str, sentences) -> list[dict]:
    """``profile_facts(said)``, then "my <attribute> is <value>" in each of ``sentences`` (the same words, split
    the caller's way) for attributes those did not name: one fact per (key, topic), first found first. Another
    person's reported or quoted words are left out first (``without_reported_speech``)."""
    said = without_reported_speech(said)
    sentences = [without_reported_speech(sentence) for sentence in sentences]
    facts = profile_facts(said)
    seen = {(fact["key"], fact["topic"]) for fact in facts}
    for sentence in sentences:
        for fact in my_attribute_facts(sentence):
            if (fact["key"], fact["topic"]) not in seen:
                seen.add((fact["key"], fact["topic"]))
                facts.append(fact)
    return facts
