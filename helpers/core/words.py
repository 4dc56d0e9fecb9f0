"""Words for matching by words (lexical recall's BM25): stop words, a rough English stem, the terms of a text.

``terms`` is what a text is indexed and searched by: lower-cased words, the function words of English
(``STOP_WORDS``) left out, each folded by ``stem`` ("races" and "racing" both become "rac"), so a question
finds a line that says the same thing in another form of the word. ``indexed_words`` and ``query_words`` are
the same rule for a full-text index in a database (the session stores' FTS5 and ``tsvector``): a line is
stored as its own words plus the stems they fold to, and a question searches by its words that are not stop
words plus their stems, so "swim" finds "swimming" there too, while a word the stem rule cannot read (a
name in another script) is still matched as it is written.

``word_class`` reads a word for the kind of thing it names (``WORD_CLASSES``: "spaniel" is a dog, "GP" a doctor, "flat"
a home), for rules that read meaning (the offline stand-in's memory rule); the lexical search does not use it.
"""
from __future__ import annotations

import re

STOP_WORDS = frozenset("""a an the and or but nor so yet of to in on at by for with from into onto about over under
after before since until than then as if because while though although is are was were be been being am do does
did done doing have has had having i me my mine myself you your yours yourself he him his himself she her hers
herself it its itself we us our ours ourselves they them their theirs themselves this that these those there here
what which who whom whose when where why how all any both each few more most other some such no not only own same
too very just also can could would should will shall may might must let s t d ll m re ve don didn doesn isn
wasn aren weren won wouldn couldn shouldn hasn haven hadn""".split())
_WORD = re.compile(r"[a-z0-9]+")


def stem(word: str) -> str:
    """A rough English stem: plural, -ing, -ed and -ly endings removed ("swimming" -> "swim")."""
    w = word.lower().replace("\u2019", "'")
    w = w[:-2] if w.endswith(("'s", "s'")) else w.rstrip("'")
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    for suffix, keep in (("ing", 3), ("ed", 3), ("ly", 4), ("es", 3), ("s", 3)):
        if w.endswith(suffix) and len(w) - len(suffix) >= keep and not w.endswith(("ss", "us", "is")):
            if suffix == "es" and not w[:-2].endswith(("s", "x", "z", "ch", "sh")):
                continue
            w = w[: -len(suffix)]
            if suffix in ("ing", "ed") and len(w) > 3 and w[-1] == w[-2] and w[-1] not in "ls":
                w = w[:-1]  # "swimm" -> "swim", "planned" -> "plan"
            break
    return w


def terms(text: str) -> list[str]:
    """The words of ``text`` a lexical search matches on, in order: stop words left out, each ``stem``-med."""
    return [stem(w) for w in _WORD.findall(str(text).lower()) if w not in STOP_WORDS]


_ANY_WORD = re.compile(r"[^\W_]+")  # letters and digits of any script


def indexed_words(text: str) -> str:
    """What a database's full-text index holds for ``text``: its words, lower-cased, then each stem (``terms``)
    that is not already one of them ("went swimming" -> "went swimming swim")."""
    words = _ANY_WORD.findall(str(text).lower())
    present = set(words)
    return " ".join(words + [t for t in dict.fromkeys(terms(text)) if t not in present])


def query_words(question: str, limit: int = 32) -> list[str]:
    """The words a question searches a database's full-text index by: its distinct words that are not stop
    words, then their stems (``terms``), at most ``limit``."""
    words = [w for w in _ANY_WORD.findall(str(question).lower()) if w not in STOP_WORDS]
    return list(dict.fromkeys(words + terms(question)))[:limit]


# contractions typed without their apostrophe ("whats my room", "im in halls", "i cant eat gluten"): only those
# that are no other English word ("its", "id", "ill", "were", "wed", "shed", "well" are, and are left alone)
_BARE_CONTRACTIONS = {
    "whats": "what's", "wheres": "where's", "whens": "when's", "whos": "who's", "hows": "how's", "whys": "why's",
    "thats": "that's", "theres": "there's", "im": "i'm", "ive": "i've", "youre": "you're", "theyre": "they're",
    "cant": "can't", "dont": "don't", "doesnt": "doesn't", "didnt": "didn't", "isnt": "isn't", "arent": "aren't",
    "wasnt": "wasn't", "werent": "weren't", "wont": "won't", "wouldnt": "wouldn't", "couldnt": "couldn't",
    "shouldnt": "shouldn't", "havent": "haven't", "hasnt": "hasn't", "hadnt": "hadn't",
}
_BARE_CONTRACTION = re.compile(r"\b(" + "|".join(_BARE_CONTRACTIONS) + r")\b", re.I)


def with_apostrophes(text: str) -> str:
    """``text`` with each contraction typed without its apostrophe written with it ("whats" -> "what's",
    "cant" -> "can't"), in the case it was typed in ("Whats" -> "What's")."""
    def restore(m: re.Match) -> str:
        word = m.group(1)
        fixed = _BARE_CONTRACTIONS[word.lower()]
        if word == "IM" or word[0] == "I" and word.lower() in ("im", "ive"):
            return "I" + fixed[1:]
        return fixed[0].upper() + fixed[1:] if word[0].isupper() else fixed
    return _BARE_CONTRACTION.sub(restore, str(text))


# Word classes: a word that names one kind of a thing, for the thing it is a kind of ("a spaniel" is a dog, "my GP" is
# my doctor, "my flat" is my home and where my address is). Each class is small and closed, each word in one class only,
# and a class says only "this word names a thing of that kind": "dentist" is no class of "doctor" (a user's doctor is
# their GP, and a dentist is asked for by name), "lab" is no dog ("my lab group"), "room" is no home ("my seminar room").
WORD_CLASSES = {
    "doctor": "doctor doc gp physician",
    "dog": "dog doggy puppy pup hound spaniel labrador retriever terrier collie poodle beagle dachshund greyhound "
           "whippet lurcher husky pug corgi schnauzer rottweiler alsatian chihuahua cockapoo labradoodle cavapoo "
           "doberman sheepdog westie staffie dalmatian mastiff",
    "cat": "cat kitten kitty tabby moggy siamese ragdoll tomcat",
    "home": "home address flat house apartment halls accommodation digs dorm",
    "partner": "partner boyfriend girlfriend husband wife fiance fiancee spouse bf gf",
    "therapist": "therapist counsellor counselor psychotherapist",
    "boss": "boss manager",
    "flatmate": "flatmate housemate roommate",
    "landlord": "landlord landlady",
}
_CLASS_OF = {stem(word): name for name, words in WORD_CLASSES.items() for word in words.split()}


def word_class(word: str) -> str | None:
    """The class (``WORD_CLASSES``) a word names a thing of, compared by its ``stem``: "spaniels" -> "dog",
    "GP" -> "doctor", "flat" -> "home"; None for a word in no class."""
    return _CLASS_OF.get(stem(word))
