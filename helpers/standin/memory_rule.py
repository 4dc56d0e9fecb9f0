"""The offline stand-in's memory rule (rule 1b of ``helpers/standin/policy.py``): a question about the user
is answered from the user's own statements in the request (``_about_user``), and a statement of profile facts
is acknowledged (``_noted``).

It is a rule, not a model. It reads meaning with the local embedding model and ordinary normalising code
(``helpers/standin/meaning.py``), because similarity alone is not enough: MiniLM scores some right statements
low against the question (0.24 for "By the way, my hometown is Port Ellery." and "Where did I grow up?") and
some unrelated ones high, so it is combined with what kind of value is asked and whether a statement names
one.

1. *What is asked* (``asked_about_user``): the question sentence of the newest user message, its
   topic (its content words, without "remind me", "again", "this year"), and the *kind* of value it
   asks for: the user's name ("what's my name", "who am I"), a name of something ("what's my cat
   called"), a person ("who"), a number ("how many", "my locker number"), a time ("when", "what
   day"), a place ("where"), yes/no, or a thing ("which food"). How sure it is that the question is
   about the user: *strong* ("what's my X", "which X is mine", "am I", "did I", "have I", "do you
   remember", "remind me", "what do I <verb>" with no object: "where do I live?"), *weak* (other
   first-person questions: "where do I print a poster?", "can I bring a friend?"), or *third* (no
   first person: "who is visiting next month?"). A how-to ("how do I book a room?") is not asked. A
   first-person question about the user's own life -- nearer a kind of personal attribute (health, allergy,
   medicine, diet, family, friends, visitors, home, schedule, job, pet, birthday: ``meaning.PERSONAL_KINDS``)
   than any campus sentence -- is strong ("what am I allergic to?", "who is visiting me?"), and so is one
   about a relative ("where does my sister live?") or a person the user introduced ("when is Anouk
   arriving?" after "my girlfriend Anouk ...", or named without a title: "I have two kids, Ren and Hana"),
   and so is one about a thing the user told of ("who teaches my tutorial?", "which room is the group
   meeting in?" after "my tutorial is ...", "our group meeting is ...", or a bare "when's choir?" a profile
   label names). "We", "us" and "our" speak for the user; a question typed without its mark ("what's my
   wife called"), without its apostrophes ("whats", "cant": ``helpers.core.words.with_apostrophes``) or with
   its auxiliary before its subject ("which night does my band rehearse", not "when i was a kid") is still
   asked. A person or pet named in a profile value ("- partner: Farouk", "- pet: a greyhound called Pepper") is
   the user's too, and a question naming one is answered only by statements about them (by name, by the
   relation they were introduced by, or as "he"/"she" in the next sentence), with more than the name: "Tobi has an
   egg allergy" says nothing of Ada. "Is my car blue?" puts a value to the user's thing: a statement about the
   car giving a value of that kind (``VALUE_NEAR``: "green") answers it.
2. *Evidence* is only what the user said, as found in the request: statements (not questions, not
   requests such as "tell me about X") of earlier user messages (the window, newest of all),
   ``[turn N] user: "..."`` quotes and ``- label: value (turn N, ...)`` lines in any system message
   (recalled turns, summaries, a profile or facts block), and the current value in a superseded
   quote's note. The assistant's words never count, nor, when the newest message names its speaker, a
   message or quote another named speaker said.
3. *Matching* a statement (``_match``), on three levels: **3** it names every word asked about, or
   introduces the user's name ("call me X", "my name's X", "I'm X") for a name question; **2** its
   topic ("my X is ...", a profile label) is the same thing in other words -- the question is close
   in meaning to X (``TOPIC_SIMILARITY``; "where did I grow up?" and "my hometown") -- or it corrects
   a value and shares a word; **1** it shares a word, or (with no topic of its own: "I'm
   vegetarian") is close in meaning to the whole question (``STATEMENT_SIMILARITY``). "Where am I
   from?" asks for what follows "from". It does not match when it is about something else: another
   topic far in meaning ("my bike lock code" for "what's my student number?"), another head noun
   ("my grandmother lives in Utrecht" for "when is my grandmother's birthday?"), another kind of the
   same thing ("my yoga class" for "when is my pilates class?", unless the two phrases are nearly
   the same in meaning, ``SAME_THING``: "book budget", "textbook budget"), another owner ("my
   sister's birthday" for "when is my birthday?", "my cousin lives in Leeds" for "where do I
   live?"), the user's own name for any other question -- or when it names no value of the kind
   asked: no person for "who", no number for "how many", no time for "when" (months and weekdays
   name no person or place), or when it names the thing but not what is asked (no floor for "which floor",
   no clock time for "what time", the opposite event -- "ends" for "starts" --, only a light verb such as
   "take", or not what a relative does: "where does my girlfriend work?"; "my second supervisor" is not
   "my supervisor"). However fully a statement of the user's speaks of the thing, it must give the kind of
   value asked (``_names_what_is_asked``): "my swimming lessons are on Wednesdays" says not where, "my
   grandmother's birthday is on 3 March" not how old she is (a count counts what is asked and is no part of
   a date: "two kids" is no age), a name after "in" or "at" is a place's, and a single time of an event is
   when it starts ("when does my meeting finish?"); only "my X is Y" with X every word asked and Y the
   thing itself, not one attribute of it, defines X (``_defines``). It does not match a statement about other
   relatives than the one asked about (by role: "parents" covers "mum and dad", "brother" is not "sister"),
   nor does the user's own name answer any other question. A short form is the word ("physio",
   "physiotherapy": it begins it and is near it in meaning, ``CLIPPED_SIMILARITY``). A general question about a kind of attribute ("what can't I eat?", "any health
   conditions?") is matched by statements near that kind (level 1, the nearest first). A weak question
   needs level 2 or half the words asked about; a
   third-person question needs a statement of the user's about someone or something of theirs ("my
   partner Sam starts ...") that names every word (two or more) and the kind asked -- and, unless it
   asks "who", such a question near the knowledge base goes to the campus rules instead.
   A match must also carry the *focus* of the question (``_focus``, ``_carries_focus``): for "which/what X"
   it names X as one picked-out thing ("St Luke's hospital") or the object of the question's verb, and for
   "someone's X" it names X or a word near it (``FOCUS_WORD``), so "I take sertraline for anxiety" does not
   answer "what dose of sertraline do I take?". "My favourite X" needs a statement of liking ("fave" too). An
   attribute of a stated thing ("what make is my car?", "the number plate on my scooter") must be named or given
   by a word near it; the name of a thing ("the name of Elias's school") must be a name next to it ("St Brigid's
   hospital", "a tortoise called Admiral"). "What does X do (for a living)?" asks an occupation: the clause
   naming X says "is a ..." ("my dad's a locksmith", "Gaspard, a firefighter", "he's an architect"). What a
   relative does is not what the user does ("I play bass" for "what does my mum play?"), and a place in
   another clause is not where they live. Any word for a relative's role names them ("gran", "grandmother"),
   "turns 90 on 3 November" gives a birthday, "which days" is answered by days. A phrase with a modifier near a
   kind ("my medical condition", ``KIND_PHRASE``) asks the kind, and a statement's state is read apart from what
   follows from it ("I'm type 1 diabetic so I carry snacks").
4. *Choosing*: statements the context does not mark as superseded ("(superseded at turn M: X is now
   "Y")" after a quote, "(superseded)" or "(outdated)" after a line) first; then the higher level;
   then the larger share of the words asked about; then, for a general question, nearness to its kind; then
   evidence marked current ("(current)", or a profile line that names the value it superseded); then the
   newest (highest turn id, the window above all, later in the request on a tie). A question for the first
   value ("where am I from originally?") takes no correction; a change "from X to Y" corrects the statement
   naming X and is quoted without it. A newer statement that
   corrects the chosen one -- a change of state ("actually", "now", "switched", "moved", "pushed to", ...)
   that names the same thing (the head noun of its topic: "team", "locker"), or gives another normalised
   value of the same kind (a room for a room: "I switched to room 318 today"; a bare number only when it
   shares a word asked about) near it in meaning, or says in one clause that the old value no longer holds
   ("I quit the food bank") and in another gives one of the kind asked, and speaks of no other "my X" (the
   new person for a "who" that names no role, "my brother Piotr is coming instead", and the one who made
   the change, "my doctor switched me to insulin", are no other thing) -- wins over the value it
   replaced, even when it does not match the question by itself. For "what did I say about X" every
   sentence of the user's that mentions X counts, the user's own words before profile lines.
5. *Answer*: the user's own words quoted with their turn -- ``You told me (turn N): "..."`` -- or
   ``Your profile says (turn N): label: value.`` (with a request to confirm a fact marked "possibly
   outdated"), or, for a superseded quote, the current value from its note. A correction is quoted without
   its clauses that say what no longer holds ("Dr Haddad left, ...", "..., not the sports hall"), and one
   that names the value it replaces ("moved from room 204 to room 318") is answered with the new value
   alone; without a word of change, only a clause naming another value of the kind asked is left out. With nothing matching, a
   strong question gets ``DONT_KNOW`` -- a forgotten fact stays forgotten, nothing is guessed -- and a
   weak or third-person question goes on to the campus rules (tools).

Read as well (issue h8, by grammar and word classes, not phrases): a name typed in lower case is the person or pet
the user introduced ("what does sam do" after "my partner Sam ...", ``_typed_names``), and the name the user gave
a relation answers for it ("my little brother Finn" makes "Finn is 14" say how old "my brother" is,
``_relations_named``); a question with no first person whose subject the user says they have ("when is the baby
due?" after "our first baby", ``_subject_theirs``) is theirs unless it is near the campus; a question typed without
its mark may open with "who <verb>s", "why can't" or an auxiliary ("am i allergic to nuts", "is chiara married");
"am I <state> to X" is answered only by a statement naming X (``_PUT_OBJECT``); a treatment speaks of the
condition it treats (``_TREATS``); the user taking back what they just said ("scratch that, i meant 41 Alder
Road", ``_SELF_CORRECTION``) corrects the statement sharing its other words, unless it only moves when something
happens; and a correction of a number or a place must give one ("Chiara's changed jobs" keeps where she lives).

Read as well (issue h9, by word classes and grammar, not phrases): a word names a thing of its class
(``helpers.core.words.WORD_CLASSES``, ``kinds_named``): "my GP" is the user's doctor, "a spaniel" their dog ("what breed
is my dog?" is answered by the breed), "my flat" and "we live at" their home and address ("where do I live?" too), a
partner is any of boyfriend, girlfriend, wife, ..., or someone the user is dating, seeing or going out with
(``_CLASS_PHRASES``), and "I'm reading Philosophy" says what they study; a class word of the old and new statement is
the same thing for a correction ("my house is ..." then "my flat is now ..."). What someone does for work is also
"works nights as a ...", "runs a bakery", "... for a living" (``_OCCUPATION``), and a person introduced as "a guy called
omar" is someone the user told of, named in lower case. A bare code where a room goes ("in G12", "moved to B22") is a
room (``_claims``), a change word covers a passive reassignment ("they've put us in G07"), and a newer room for a
question asking which room or where corrects the old one. A bare span of hours ("6 till 2", ``_HOURS_SPAN``) or a range
says when something starts and ends, and "my shift runs from 5pm to 11pm" is no change "from X to Y" (a determiner
makes "shift" a noun). A word asked about that the statement uses only before a place noun ("car park", "bus stop",
``_PLACE_HEADS``) is not named, and a thing that "my sister has" is hers (``_theirs_not_users``).

Where it stops: it knows what the normalisers and the embedding model know. A value of a kind it
cannot recognise, a topic the small model places far from its paraphrase, or a question about what
the user said in a form it does not parse gets "I don't know" or the campus search instead.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from helpers.core.clock import WEEKDAYS
from helpers.core.context_format import read_fact_lines, read_quotes
from helpers.core.profile_rules import stated_facts
from helpers.core.words import with_apostrophes, word_class
from helpers.standin.meaning import (_NUMBER_WORD, FAMILY, GENERIC, KIN, OPPOSITE_EVENTS, STOP, campus_nearness, content_stems, facts_in,
                                     PERSONAL_KINDS, personal_kind, personal_nearness, same_stem, sentences, shared_stems,
                                     similarity, stem, unknown_to_campus)
from helpers.standin.request_text import _is_ack, _text

_TERMS = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|me|my|mine|myself)\b", re.I)
_FIRST_PLURAL = re.compile(r"\b(?:we|we're|we've|us|our|ours)\b", re.I)  # "where do we meet?": the user's group
_HOW_TO = re.compile(r"\bhow (?:do|can|could|should|would|might|will|does one) (?:i|we|one|you)\b|\bhow to\b",
                     re.I)
_RECALL = re.compile(r"\b(?:do|did|can|could) you (?:still )?(?:remember|know|recall)\b|\bremind me\b|"
                     r"\btell me (?:again )?(?:what|who|where|when|which|about )?\s*my\b|\bany idea\b|"
                     r"\b(?:what|which|who|where|when|how) (?:\w+ ){0,2}my (?:[\w'-]+ ){0,3}(?:is|are|was|were)\s*\W*$",
                     re.I)  # "any idea what my office number is?": an embedded question about the user's things
# a question typed without its mark: "what's my wife called again", "when's our lab meeting"
_UNMARKED_QUESTION = re.compile(r"^\W*(?:what|who|where|when|which|how)(?:'s|'re| is| are| was| do| does| did| am|"
                                r" many| much| old| long)\b"
                                r"[^.!]*$|"
                                r"^\W*(?:who|whom) (?!i\b|we\b)[a-z]+s\b[^.!]*$|"  # "who takes care of rolo"
                                r"^\W*why (?:do|does|did|am|is|are|was|were|can|can't|cant|can not|won't|should|"
                                r"would)\b[^.!]*$|"  # "why can't i eat gluten"
                                # a yes/no question, its auxiliary first: "am i allergic to nuts", "is chiara married"
                                r"^\W*(?:and |so )?(?:am|is|are|was|were|do|does|did) (?!not\b|there\b)[a-z][\w'-]*\b[^.!]*$|"  # "is there": a campus ask
                                r"^\W*(?:and |so )?(?:have|has|can|could|will|would|should) (?:i|we|you|he|she|they|"
                                r"my|our)\b[^.!]*$", re.I)
# ... or one whose auxiliary comes after the wh-word's noun phrase and before its subject (the order of a question,
# not of a clause: "which night does my band rehearse", "what medication am i on", but not "when i was a kid")
_INVERTED_QUESTION = re.compile(r"^\W*(?:and |so |ok |oh |um |hey )?(?:what|which|who|whose|where|when|how)"
                                r"(?: (?!(?:i|we|you|he|she|they|it|i'm|we're|you're|they're)\b)[\w'-]+){0,4}?"
                                r" (?:is|are|was|were|am|do|does|did|has|have|can|can't|could|will|would|should)"
                                r" [^.!]*$", re.I)
_SAID_QUESTION = re.compile(r"\b(?:what|which) (?:\w+ )?(?:did|have) i (?:say|said|tell|told|mention)|"
                            r"\bwhat i (?:said|told you|mentioned)\b", re.I)
_STRONG = re.compile(r"\b(?:what|who|where|when|which|how)(?: \w+){0,2}?(?:'s|'re| is| are| was| were)"
                     r"(?: \w+ly)? my\b|\b(?:is|are) (?:\w+ ){0,2}mine\b|\b(?:am|was) i\b|\bdid i\b|"
                     r"\bhave i\b|\bdo i have\b|\bi have\b|\bwho am i\b|\bmy name\b|\bcall me\b|\bgo by\b",
                     re.I)
_MODAL = re.compile(r"\b(?:can|could|should|may|might|must|shall) i\b|\bdo i (?:need|have) to\b|\bif i\b",
                    re.I)
# "where do I live?", "what car do I drive?": a question about the user's own life, not a campus task
_DO_I = re.compile(r"\b(?:what|which|who|whom|where|when)(?: (?:kind|sort|type) of)?(?: [a-z]+){0,2} do i (?:\w+ly |still |now |often |"
                   r"normally )*(?P<verb>[a-z]+)(?: to [a-z]+)?(?P<rest>[^?.!]*)", re.I)
# "print a poster", "hand in a wallet": a task with an object
_OBJECT = re.compile(r"^\s*(?:(?:in|up|out|off|back|down|over|away)\s+)?(?:(?:for|to|with|at|on|into|onto|from)\s+)?"
                     r"(?:a|an|the|my|your|some|this|that|"
                     r"these|those|any|[a-z]+'s)\b", re.I)
_FRAME = re.compile(r"\b(?:(?:do|did|can|could) you (?:still )?(?:remember|know|recall)|any idea|"
                    r"(?:have|did) i (?:ever )?(?:told|tell|mention(?:ed)?|said|say)(?: you| to you)?"
                    r"(?: about| of| that)?|"
                    r"remind me(?: of| about)?|tell me(?: again)?(?: about)?|again|please|by the way|"
                    r"once more)\b", re.I)
_QUALIFIER = re.compile(r"\b(?:this|next|last|that|the coming) (?:year|term|semester|week|month|weekend|time)"
                        r"\b|\btoday\b|\btonight\b|\bthese days\b|\bright now\b|\bat the moment\b|"
                        r"\bnowadays\b", re.I)
_REQUEST = re.compile(r"^\W*(?:please\s+|so\s+|and\s+|ok\s+)?(?:tell|give|explain|show|describe|list|"
                      r"summari[sz]e|find|help|let me know)\b|\bi (?:was|am|'m) wondering\b|"
                      r"\bi(?:'d| would) like to know\b|\bi want to know\b", re.I)
_CAPITALISED = re.compile(r"\b[A-Z][a-z'-]+(?: (?:[A-Z][a-z'-]+|[A-Z]\.|of|de|van))*")
_ORGANISATION = re.compile(r"\b(?:Lab|Laboratory|Hall|House|Lodge|Centre|Center|Court|Library|Union|Club|"
                           r"Society|Team|Street|Road|Cafe|Café|Bakery|Plan|Award|Grant|Prize|Bursary|"
                           r"University|College|School|Office|Building|Park|Station)$")  # a name of no person
_TITLE = r"\b(?:Dr|Prof|Professor|Mr|Mrs|Ms)\b"
# someone in the user's life, named by a relation: "my grandparents are flying in" answers "who is visiting?"
PEOPLE = frozenset(stem(w) for w in KIN | set("partner boyfriend girlfriend wife husband fiance fiancee friend "
                                                "flatmate roommate housemate neighbour mate bestie pal".split()))
# relatives by role, and the roles a word for several of them covers: "my parents" are "my mum and dad", but
# "my brother" is not "my sister"
_ROLES = {"mother": "mother mum mom mummy mama", "father": "father dad daddy papa",
          "grandmother": "grandmother grandma granny gran nan nana nanna", "grandfather": "grandfather grandpa gramps grandad",
          "sister": "sister stepsister", "brother": "brother stepbrother", "son": "son", "daughter": "daughter",
          "aunt": "aunt auntie", "uncle": "uncle", "cousin": "cousin", "niece": "niece", "nephew": "nephew",
          "twin": "twin", "stepmother": "stepmother stepmum stepmom", "stepfather": "stepfather stepdad"}
ROLE_OF = {stem(w): role for role, words in _ROLES.items() for w in words.split()}
_COVERS = {"parent": {"mother", "father", "stepmother", "stepfather"}, "grandparent": {"grandmother", "grandfather"},
           "sibling": {"sister", "brother", "twin"}, "child": {"son", "daughter"}, "children": {"son", "daughter"},
           "kid": {"son", "daughter"}}
COVERS = {stem(word): roles for word, roles in _COVERS.items()}
_CALENDAR = re.compile(r"(?:" + "|".join(WEEKDAYS) + r"|January|February|March|April|May|June|July|August|"
                       r"September|October|November|December)s?$")  # "on 31 March" names no person or place
# "Call me Ines.", "I'm Kaito": the lead-in in any case, the name capitalised
_NAME_INTRO = re.compile(r"\b(?i:my name(?:'s| is)|name's|the name is|call me|i go by|calls? me|i am|i'm|"
                         r"this is)\s+([A-Z][a-z'-]+(?: [A-Z][a-z'-]+)?)")
_CORRECTION = re.compile(r"\b(?:actually|now|instead|changed?|moved|switched|new|no longer|anymore|"
                         r"update[sd]?|correction|scratch that|renamed|reassigned|these days|not any more|"
                         r"sorry|swap(?:ped)?|pushed|postponed|rescheduled|brought forward|relocat\w*|"
                         r"took over|taken over|replaced|turns out|from now on|wait|i mean|misspoke|my mistake|"
                         r"rather than|bumped|reset|shifted|stopped|quit|moved out|, not|transferred|"
                         r"put (?:us|me|them|him|her) (?:in|into|on|onto)|(?:re)?allocated|(?:been |got )assigned|"
                         r"(?:from|starting|since) (?:this|next|last) (?:week|month|term|semester|year))\b",
                         re.I)  # the words of a change of state: the value said before no longer holds
_MY_TOPIC = re.compile(r"\b(?:my|our) ((?:[a-z][\w'-]* ){0,5}?[a-z][\w'-]*?)(?:'s)? (?:is|are|was|were|reads|has|"
                       r"have|got|changed|moved|starts?|ends?|lives?|visits?|works?|comes?|goes|meets?)\b",
                       re.I)
_MY_SUBJECT = re.compile(r"^(?:[^,:;]{0,30}[,:;]\s*)?(?:my|our)\b", re.I)  # "My sister Yara visits ...", "Oh, my ..."
_POSSESSED = re.compile(r"\b([a-z]+)'s ([a-z]+)\b", re.I)
# a time beyond the days, clock times and dates ``facts_in`` reads: "next month", "week after next", a year
_TIME_VALUE = re.compile(r"\b(?:19|20)\d{2}\b|\b\d{1,2}(?:st|nd|rd|th)\b|\b(?:next|this|last|coming) "
                         r"(?:week|month|year|term|semester|weekend)\b|\btomorrow\b|\btonight\b|"
                         r"\bweek after next\b|\bin \w+ (?:days|weeks|months)\b|"
                         r"\b(?:first|second|third|fourth|final|last) year\b|"
                         r"\b(?:mornings?|evenings?|weekends?|weekdays?|noon|midnight)\b|"
                         r"\b(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|fifteen|twenty|thirty|"
                         r"forty|forty-five|fifty|half an?|a couple of) (?:minutes?|mins?|hours?|days?|weeks?|"
                         r"months?|years?)\b", re.I)  # a duration answers "how long"
_MONTH_NAME = re.compile(r"\b(?:January|February|March|April|May|June|July|August|September|October|November|"
                         r"December)\b")
_MONTH_TYPED = re.compile(r"\b(?:in|by|of|until|till|from|since|early|late|mid|next|last|this)[ -](?:january|"
                          r"february|march|april|may|june|july|august|september|october|november|december)\b",
                          re.I)  # "in march", "by may": a month typed in lower case, after a word of time
_NUMBER_VALUE = re.compile(r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|"
                           r"thirty|forty|fifty|hundred|dozen)\b", re.I)
_PLACE_BEFORE = re.compile(r"\b(?:in|at|from|near|to|inside|outside|behind|opposite|towards?)\s+(?:the\s+)?$", re.I)
_COUNT = re.compile(r"\bhow (?:many|much|old)\b|\bage\b", re.I)  # a count or an age, not a code or a date
_PLACE_VALUE = re.compile(r"\b(?:upstairs|downstairs|outside|next door|abroad|overseas)\b|"
                          r"\b(?:in|at|from|near|on|to|inside|outside|behind|by|beside|under|opposite|next to) (?:the |a |my )?(?!(?:"
                          + "|".join(WEEKDAYS) + r")s?\b|(?:January|February|March|April|May|June|July|August|September|October|November|"
                          r"December|mornings?|evenings?|afternoons?|nights?|weekends?|weekdays?|noon|midnight|"
                          r"time|the (?:morning|evening|afternoon|weekend))\b)[a-z]|\b(?:room|floor|"
                          r"seat|row|hall|house|lodge|building|court|street|road|library|lab|centre|"
                          r"center)\b", re.I)
TOPIC_SIMILARITY = 0.4
"""A statement whose topic is this close in meaning to the question is about the same thing in other words
(level 2): "my hometown" and "where did I grow up?" (0.41). Further, and sharing no word, it is about
another thing and answers nothing."""
SAME_TOPIC = 0.5
"""A statement's topic that does not name the head noun asked about must be this close to it; a topic
sharing only some words asked about must be this close to the question to define it. "my bike lock" (0.42)
is not what "where can I get my bike repaired?" asks about."""
SAME_THING = 0.8
"""Another kind of the thing asked about counts only this close in meaning: "book budget" = "textbook
budget" (0.87); "pilates class" != "yoga class" (0.56)."""
CAMPUS_SIMILARITY = 0.45
"""A third-person question this near a knowledge-base sentence asks the campus, not memory ("where is
Pemberton Hall?", even after "my exam is in Pemberton Hall")."""
STATEMENT_SIMILARITY = 0.45
"""A statement sharing no word with the question, and with no topic that matches, must be this close in
meaning to the whole question for level 1 ("I'm vegetarian", which has no topic of its own)."""
PERSONAL_SIMILARITY = 0.45
"""A first-person question this near a kind of personal attribute (``meaning.PERSONAL_KINDS``: health, family,
a visitor, home, work, ...) is about the user's life ("who do I share my room with?" 0.62) ..."""
PERSONAL_MARGIN = 0.05
"""... when it is also nearer that kind than any campus sentence by this much: "who do I see about my allergy on
campus?" (0.56 personal, 0.59 campus) is a campus question."""
CORRECTION_SIMILARITY = 0.2
"""A change of state giving another value of the same kind (a room for a room) corrects a statement it is
this near in meaning, or the question: "I switched to room 318 today" and "my seminar is in room 204" (0.31);
"they moved us to room 112" and the same (0.24)."""
KIND_QUESTION = 0.5
"""A question this near a kind of personal attribute asks about the kind as a whole ("what can't I eat?" 0.83
to "what I can and cannot eat"; "what's my blood type?" is 0.28 from any kind) ..."""
KIND_STATEMENT = 0.25
"""... and a statement this near the kind, and nearer it than any other kind, answers it ("I've got asthma",
0.29 to "my health and medical conditions"), the nearest first; ..."""
KIND_CLEAR = 0.3
"""... or, for a question about what the user must not do, one this near it whatever kind it is nearest ("I'm
severely allergic to shellfish" is nearest "an allergy", and 0.31 to "what I can and cannot eat"; "allergic to
penicillin" says no medication the user takes), or one as near it as to its nearest kind within ``KIND_TIE``."""
KIND_TIE = 0.05
"""Kinds this close for one statement are one for it: "I have type 1 diabetes" is 0.35 to "my health and medical
conditions", 0.37 to "the medicine or treatment I take"."""
DONT_KNOW = "I don't know: nothing in what I was sent tells me that. Could you tell me again?"
"""The answer to a strong question about the user that nothing in the request answers."""


@dataclass
class Asked:
    """What a question about the user asks (``asked_about_user``)."""

    topic: set[str]      # content stems of what is asked about: "locker", "gym"
    kind: str            # name (the user's), name_of, person, number, place, time, yes_no, thing
    how: str             # "strong": only memory answers it; "weak": memory, else the tools; "third": not
                         # about the user, answered from memory only when a statement of theirs covers it
    subject_is_user: bool  # "where do I live?" (the user does it), not "where does my cousin live?"
    core: str = ""         # the question without "remind me", "again", "this year": what is compared
    said: bool = False     # "what did I say about X?": every sentence of the user's about X counts
    verb: str | None = None
    head: str | None = None          # the noun asked about: "birthday" in "my grandmother's birthday"
    modifiers: frozenset = frozenset()  # its other words: "pilates" in "my pilates class"
    owner: str | None = None         # "grandmother" in "my grandmother's birthday"
    preposition: str | None = None   # "where am I from?": the answer follows "from"
    person: str | None = None        # someone of the user's the question names: "Ruben" in "what's Ruben's job?"
    known_as: frozenset = frozenset()  # the words the user introduced them by: "boyfriend" in "my boyfriend Ruben"
    value: str | None = None         # the value a yes/no question puts: "blue" in "is my car blue?"
    aliases: tuple = ()              # (word asked, name) pairs: "brother", "Finn" after "my little brother Finn"


# "is my car blue?", "are my sister's eyes green?": a yes/no question putting one value to a thing of the user's
_VALUE_PUT = re.compile(r"^\W*(?:and |so )?(?:is|are|was|were) (?:my|our) ((?:[a-z][\w'-]* ){0,3}?)([a-z][\w'-]*) "
                        r"(?:still |really |actually )?([a-z][\w-]*)\s*[?.!]*$")
VALUE_NEAR = 0.6
"""A word of a statement this near the value a yes/no question puts is the value stated in its place: "green" for
"is my car blue?" (0.69); "Panda" (0.2) is no colour."""


def _kind(question: str) -> str:
    low = question.lower()
    if re.search(r"\bmy (?:first |last |full |middle |nick)?name\b|\bwho am i\s*(?:again\s*)?(?:[?.!]|$)|"
                 r"\b(?:call|address) me\b|"
                 r"\b(?:am i|i'm|i am) called\b|\bgo by\b", low):
        return "name"
    if re.search(r"\bname\b|\bcalled\b", low):
        return "name_of"
    owned = re.search(r"\b(?:my|the|(?!(?:what|who|where|when|which|how|that|it|there|here|let)'s)[a-z]+'s) ((?:[\w'-]+ ){0,4}?[\w'-]+)(?=\s*(?:$|[?.!,]|\b(?:is|are|was|were|again|now|"
                      r"please|called|these|this|at|for|in|on)\b))", low)
    head = owned.group(1).split()[-1] if owned else ""
    if re.search(r"\bhow (?:many|much|old)\b|\b(?:what|which) (?:number|code|pin)\b", low) or \
            head in ("number", "code", "pin", "id", "digits", "numbers"):
        return "number"
    if re.search(r"\bwho(?:m|se)?\b", low):
        return "person"
    if re.search(r"\bwhen\b|\bwhat time\b|\b(?:what|which) (?:day|date|year|month|week)s?\b|\bhow long\b", low):
        return "time"
    if re.search(r"\bwhere\b", low):
        return "place"
    if re.match(r"\W*(?:and |so )?(?:do|does|did|am|is|are|can|have|has|was|were|will)\b", low):
        return "yes_no"
    return "thing"


def asked_about_user(question: str) -> Asked | None:
    """What a question about the user asks (None for a question that does not refer to the user)."""
    asked = _asked(question)
    return asked if asked is not None and asked.how != "third" else None


def _asked(question: str) -> Asked | None:
    """What a question asks, if the user's own statements may answer it (``how`` says how sure that is)."""
    question = with_apostrophes(question)  # "whats my rabbit called": "what's"
    if "?" not in question and not _RECALL.search(question) and not _UNMARKED_QUESTION.match(question) and \
            not _INVERTED_QUESTION.match(question):
        return None
    asked_part = [s for s in sentences(question) if s.endswith("?")]
    question = asked_part[-1] if asked_part else question  # "My name is Ada. When does the club meet?"
    low = question.lower()
    first_person = _FIRST_PERSON.search(low) is not None or _FIRST_PLURAL.search(low) is not None
    if _HOW_TO.search(low) and not re.search(r"\bhow (?:many|much|long|old)\b", low):
        return None  # "how do I book a room?": a campus how-to
    core = _FRAME.sub(" ", question)
    if first_person:  # "what is my goal this year?" asks for the goal; "who visits next month?" for a visitor
        core = _QUALIFIER.sub(" ", core)
    topic = content_stems(core, generic=False)
    kind = _kind(question)
    do_i = _DO_I.search(question)
    verb = stem(do_i.group("verb")) if do_i else None
    am_i = re.search(r"\b(?:am|was|did|have|do) i (?:\w+ly |still |now |currently |originally )*([a-z]+)",
                     low)
    if verb is None and am_i and am_i.group(1) not in STOP:
        verb = stem(am_i.group(1))
    subject_is_user = bool(re.search(r"\b(?:am|was|did|do|have|can|could|should|will|would) i\b|"
                                     r"\bi (?:am|was|have)\b|\bwho am i\b|\bi'm\b", low)
                           ) and not re.search(r"\bmy \w+ (?:do|does|did)\b", low)
    if kind == "name":
        how = "strong"
    elif not first_person:
        how = "third"
    elif _RECALL.search(low) or _SAID_QUESTION.search(low) or _STRONG.search(low):
        how = "strong"
    elif do_i and not _MODAL.search(low) and not _OBJECT.match(do_i.group("rest")):
        how = "strong"  # "where do I work on weekends?", "what car do I drive?": nothing but the user's life
    elif _personal(core) or _about_kin(low):
        how = "strong"  # "what am I allergic to?", "who is visiting me?", "where does my sister live?": their life
    else:
        how = "weak"    # "where do I print a poster?", "can I bring a friend?": campus tasks, unless said
    if not topic and kind != "name" and verb:
        topic = {verb}
    if not topic and kind != "name" and re.search(r"\b(?:my|our) [a-z]+\s*\W*$", low):
        topic = content_stems(core)  # "what's my number": the generic noun is all that is asked about
    head, modifiers, owner = _phrase(low)
    value = None
    put = _VALUE_PUT.match(low)
    if put and put.group(3) not in STOP and not _TIME_VALUE.search(put.group(3)) and not _CALENDAR.match(
            put.group(3).capitalize()) and not facts_in(put.group(3)).claims:
        thing = f"{put.group(1) or ''}{put.group(2)}"  # "is my car blue?": the car, and the value put to it
        words = [stem(w) for w in _TERMS.findall(thing) if w not in STOP and w not in GENERIC]
        if words:
            head, modifiers, owner, value = words[-1], frozenset(words[:-1]), None, put.group(3)
            topic, how = set(words), "strong"
    stranded = re.search(r"\b(from|with|in|at|for)((?:\s+[a-z]+ly|\s+(?:now|again|still|these days))*)\s*\?*\s*$", low)
    if stranded and stranded.group(2).strip():  # "where am I from originally?": the adverb asks nothing
        topic = topic - content_stems(stranded.group(2))
        core = core.replace(stranded.group(2).strip(), " ") if re.search(re.escape(stranded.group(2).strip()), core) \
            else re.sub(re.escape(stranded.group(2).strip()), " ", core, flags=re.I)
    preposition = stranded.group(1) if stranded and not topic else None
    return Asked(topic, kind, how, subject_is_user, " ".join(core.split()), bool(_SAID_QUESTION.search(low)),
                 verb, head, modifiers, owner, preposition, value=value)


def _about_kin(low: str) -> bool:
    """Does a question ask about a member of the user's family ("my sister", "my mum's job")?"""
    return any(stem(m.group(1)) in {stem(w) for w in KIN} for m in re.finditer(r"\bmy ([a-z]+)", low))


# a name the user introduced someone or some animal by, in any case: "my boyfriend kwame", "a spaniel called Rolo"
_INTRODUCED = r"\b(?i:my|our) (?:[a-z]+ ){{0,1}}(?P<relation>[a-z]+),? {name}\b|\b(?i:called|named) {name}\b"
PETS = frozenset(stem(w) for w in "pet dog puppy cat kitten rabbit bunny hamster guinea pig horse pony tortoise parrot "
                 "budgie bird fish goldfish snake lizard ferret spaniel labrador terrier collie greyhound".split())
"""Animals a user keeps: one introduced as "my spaniel Rolo" is someone of theirs, like "my flatmate Joel"."""


def _typed_names(question: str, evidence: list[_Said]) -> list[str]:
    """The question's words typed in lower case that the user's own statements give as a name ("what does sam do"
    after "my partner Sam is a nurse"; "who takes care of rolo" after "a spaniel called Rolo"), as the statements
    write them: capitalised in a statement of the user's (not at its start), or after "my <person or pet>",
    "called" or "named" in any case. A word of the language ("what", "leave") is never one."""
    found = []
    own = [item for item in evidence if item.kind in ("said", "quote", "profile")]
    for word in dict.fromkeys(re.findall(r"\b[a-z][a-z'-]{2,}\b", question)):
        word = re.sub(r"'s$", "", word)
        if word in STOP or word in GENERIC or stem(word) in PEOPLE or len(word) < 3:
            continue
        for item in own:
            capital = re.search(rf"(?<!^)(?<![.!?] )\b{re.escape(word.capitalize())}\b", item.text)
            intro = re.search(_INTRODUCED.format(name=re.escape(word)), item.text, re.I)
            if intro and intro.group("relation") and not (shared_stems({stem(intro.group("relation").lower())},
                                                                       PEOPLE | PETS)):
                intro = None  # "my bike lock code" is no one
            if capital or intro:
                found.append(capital.group(0) if capital else word.capitalize())
                break
    return found


def _someone_they_told_of(question: str, evidence: list[_Said]) -> str | None:
    """A person the question names ("when is Anouk arriving?") whom the user's own statements name too; a name typed
    in lower case counts (``_typed_names``)."""
    runs = [m.group(0) if m.start() > 0 else " ".join(m.group(0).split()[1:]) for m in _CAPITALISED.finditer(question)]
    names = [re.sub(r"['’]s$", "", run) for run in runs  # "What's Noor's job?": the run without its first word
             if run and not _CALENDAR.match(run) and not _ORGANISATION.search(run)]
    names += [n for n in _typed_names(question, evidence) if n not in names]
    for name in names:  # introduced as someone of theirs: "my girlfriend Anouk", "my cousin Ravi", or named
        own = [item for item in evidence if item.kind in ("said", "quote")]  # without a title by a first-person line
        if any(re.search(rf"\bmy [a-z]+(?: [a-z]+)? {re.escape(name)}\b", item.text, re.I) for item in own) or any(
                re.search(rf"\b(?:called|named) {re.escape(name)}\b", item.text, re.I) and _FIRST_PERSON.search(item.text)
                for item in own) or any(  # "i've been seeing a guy called omar": someone they told of, in any case
                re.search(rf"\b{re.escape(name)}\b", item.text)
                and (_FIRST_PERSON.search(item.text) or _FIRST_PLURAL.search(item.text))
                and not re.search(rf"(?:{_TITLE}\.?|\b(?i:the|at|in|on|from|to|near|into)) {re.escape(name)}\b", item.text)
                for item in own):
            return name  # "I have two kids, Ren and Hana"
        if any(item.kind == "profile" and re.search(rf"\bis (?:[\w'-]+ ){{0,4}}?{re.escape(name)}\b", item.text)
               and not re.search(rf"\b(?i:the|at|in|on|from|to|near|into) {re.escape(name)}\b", item.text)
               for item in evidence):
            return name  # "- partner: Farouk", "- pet: a greyhound called Pepper": a profile value names them
    return None


def _relations_named(asked: Asked, evidence: list[_Said]) -> tuple:
    """The names the user gave the relatives, partners, friends or pets a question asks about by their relation: "my
    little brother Finn" makes "Finn is 14" a statement about "my brother" ("how old is my brother?")."""
    pairs = []
    for word in asked.topic:
        if not (_roles({word}) or shared_stems({word}, PEOPLE | PETS)):
            continue
        for item in evidence:
            for m in re.finditer(r"\b(?i:my|our) (?:[a-z]+ ){0,2}?([a-z]+),? ([A-Z][a-z'-]+)\b", item.text):
                if same_stem(stem(m.group(1).lower()), word) or _roles({word}) & _roles({stem(m.group(1).lower())}):
                    pairs.append((word, m.group(2)))
    return tuple(dict.fromkeys(pairs))


def _introduced_as(person: str, evidence: list[_Said]) -> frozenset:
    """The relation words the user named ``person`` by ("my twin sister Lindiwe": twin, sister; "- partner: Farouk")."""
    words: set[str] = set()
    for item in evidence:
        for m in re.finditer(rf"\b(?i:my|our) ((?:[a-z][\w-]* ){{1,2}})(?i:{re.escape(person)})\b", item.text):
            words |= content_stems(m.group(1), generic=False)
        if item.kind == "profile" and re.search(rf"\b{re.escape(person)}\b", item.text, re.I):
            words |= content_stems(item.text.removeprefix("my ").split(" is ")[0], generic=False)
    return frozenset(words)


_PRONOUN_SUBJECT = re.compile(r"^\W*(?:and |oh |btw |also )?(?:he|she|they|him|her|them)\b", re.I)


def _speaks_of_person(asked: Asked, item: _Said) -> bool:
    """Does a statement speak of the person the question names (``asked.person``): by their name, by a relation word
    the user introduced them by when it names no one else ("my boyfriend is ..."), or as "he"/"she" right after a
    sentence naming them? "Tobi has an egg allergy" says nothing of Ada; "fave food is jollof" nothing of Lindiwe."""
    name = asked.person or ""  # in any case: "my boyfriend kwame" is Kwame
    if re.search(rf"\b{re.escape(name)}\b", item.text, re.I):
        return True
    if _PRONOUN_SUBJECT.match(item.text) and re.search(rf"\b{re.escape(name)}\b", item.before, re.I):
        return True
    others = [m.group(0) for m in _CAPITALISED.finditer(item.text) if m.start() > 0
              and not _PLACE_BEFORE.search(item.text[:m.start()]) and not _CALENDAR.match(m.group(0))]
    relations = set(asked.known_as) - set(GENERIC)
    return bool(relations) and not others and item.kind in ("said", "quote") and bool(
        shared_stems(relations, content_stems(item.text)) or _roles(set(relations)) & _roles(content_stems(item.text)))


# "what does my dad do (for a living)?", "what's Ruben's job?", "what does Saoirse do for work?": an occupation
_OCCUPATION_ASKED = re.compile(r"\bwhat (?:does|do|did) (?!i\b|you\b|we\b)(?:[\w'-]+ ){1,3}?do(?: for (?:a )?(?:living|work|job|"
                               r"money))?\s*[?.!]*$|\b(?:job|occupation|profession|line of work)\b", re.I)
# "my dad's a locksmith", "Kwame is a bus driver", "works as a nurse", "Gaspard, a firefighter": a role a person holds
# -- and by what they do for work: "works nights as a security guard", "runs a bakery", "drives buses for a living"
_OCCUPATION = re.compile(r"(?:\b(?:is|'s|was|(?:works?|working|worked)(?: [a-z-]+){0,2}? as|trained as)|,)\s+(?:a|an)\s+[a-z]|"
                         r"\b(?:runs|owns|manages|ran|owned|managed) (?:a|an|the|his|her|their|our) [a-z]|"
                         r"\bfor a living\b", re.I)


def _someone_of_theirs(text: str) -> bool:
    """Does a question name someone in the user's life by their relation ("my husband", "my gran's")?"""
    return any(shared_stems({stem(m.group(1))}, PEOPLE) for m in re.finditer(r"\b(?:my|our) ([a-z]+)", text.lower()))


def _names_occupation(asked: Asked, item: _Said) -> bool:
    """Does a statement give the occupation of the one an occupation question asks about, in the clause that names
    them ("my dad's a locksmith in Varna and my mum teaches chemistry") or a clause "he's/she's a ..." of a sentence
    naming no one else?"""
    people = {asked.person.lower()} if asked.person else set()
    wanted = (set(asked.topic) - {stem(w) for w in ("job", "occupation", "profession", "work", "living", "do")}
              ) | {stem(w) for w in people} | set(asked.known_as)
    text = f"{item.before} {item.text}" if _PRONOUN_SUBJECT.match(item.text) else item.text
    for clause in _CLAUSE_BREAK.split(text):
        if not _OCCUPATION.search(clause if clause.lstrip().startswith(",") else clause):
            continue
        named = content_stems(clause)
        if shared_stems(wanted, named) or _roles(wanted) & _roles(named):
            return True
        if _PRONOUN_SUBJECT.match(clause) and (shared_stems(wanted, content_stems(text)) or
                                               _roles(wanted) & _roles(content_stems(text))):
            return True  # "my boyfriend Ruben is in Rotterdam, he's an architect"
    return bool(_OCCUPATION.search(item.text)) and bool(shared_stems(wanted, content_stems(item.text)) or (
        {_class_of(w) for w in wanted} - {None}) & kinds_named(item.text))  # "- partner: Leila, a pharmacist": girlfriend


def _told_of_it(asked: Asked, question: str, evidence: list[_Said]) -> bool:
    """Does a first-person question ask about a thing of the user's that they told of -- "my X" is what the
    question is about (not what the user does with it: "where do I print my poster?" is a task) and a
    statement of theirs is about the same head noun ("my tutorial is in room 2.14", a profile line)?"""
    if asked.subject_is_user or asked.owner or _MODAL.search(question):
        return False
    heads = {asked.head} if asked.head else set()
    for m in re.finditer(r"\b(?:my|our|the) ((?:[a-z][\w-]* ){0,3}?[a-z][\w-]*)\s*(?=$|[?.!,]|\b(?:in|on|at|is|are|"
                         r"for|start|starts|finish|end|meet|meets)\b)", question.lower()):
        heads |= {stem(w) for w in m.group(1).split()}  # "who teaches my tutorial?", "is the group meeting in?"
    heads -= set(GENERIC) | set(STOP)
    if not _FIRST_PERSON.search(question) and asked.topic and any(
            item.kind == "profile" and set(asked.topic) <= shared_stems(asked.topic, content_stems(
                item.text.removeprefix("my ").split(" is ")[0])) for item in evidence):
        return True  # "when's choir?" and "- schedule/choir: Mondays 7pm"
    return any(item.kind != "note" and (head := _topic_head(item)) is not None and
               any(same_stem(head, h) for h in heads) for item in evidence)


# what a question without a first person is about: "choir" in "when is choir?", "baby" in "when is the baby due?"
_SUBJECT = re.compile(r"^\W*(?:and |so )?(?:what|who|where|when|which|how)(?:'s| is| are| was| were| does| do| did)"
                      r"\s+(?:the |a |an )?([a-z][\w-]*?)(?:'s)?\b", re.I)
# a thing the user has: "I have choir practice", "our first baby", "my lab"
_HAVE = (r"\b(?:my|our|i have|i've got|i've|we have|we've got|we've|i got|we got)"
         r"(?: (?!(?:is|are|was|were|has|had|and|or|but)\b)[a-z'-]+){0,3}? ")


def _subject_theirs(question: str, evidence: list[_Said]) -> bool:
    """Does a question with no first person ask about a thing of the user's, by the grammar of both: its subject
    (``_SUBJECT``: "choir" in "where is choir held?", "the baby" in "when is the baby due?", "the vet's") is what a
    statement of the user's says they have ("I have choir practice", "our first baby", "my lab") or what someone of
    theirs has ("Rolo's vet", Rolo introduced as theirs) -- and it is not near the campus knowledge base
    (``CAMPUS_SIMILARITY``: "when is the library open?" after "my library card" asks the campus)?"""
    m = _SUBJECT.match(question)
    if not m or m.group(1).lower() in STOP or m.group(1).lower() in GENERIC:
        return False
    word = re.escape(m.group(1).lower())
    own = [item.text for item in evidence if item.kind in ("said", "quote")]
    names = [n.group(1) for text in own for n in re.finditer(rf"\b([A-Za-z][a-z]+)'s (?:[a-z]+ )?{word}s?\b", text, re.I)]
    theirs = any(re.search(rf"{_HAVE}{word}s?\b", text, re.I) for text in own) or any(
        _typed_names(name.lower(), evidence) for name in names)
    return theirs and campus_nearness(question)[0] < CAMPUS_SIMILARITY


def _only_theirs(question: str, evidence: list[_Said]) -> bool:
    """Does a first-person question ask about a thing of the user's life the campus does not know -- a word of it
    the knowledge base never uses ("metformin", "nursery") that a statement of theirs names -- and is it not a
    campus task ("can I ...", near a knowledge-base sentence by ``CAMPUS_SIMILARITY``)?"""
    if _MODAL.search(question):
        return False
    theirs = unknown_to_campus(question)
    if not theirs or not any(shared_stems(theirs, content_stems(item.text)) for item in evidence
                             if item.kind != "note"):
        return False
    return campus_nearness(question)[0] < CAMPUS_SIMILARITY


def _personal(question: str) -> bool:
    """Is a first-person question about a kind of personal attribute (health, family, a visitor, home, ...)
    rather than the campus: near a kind (``PERSONAL_SIMILARITY``) and nearer it than any campus sentence by
    ``PERSONAL_MARGIN``?"""
    personal = personal_nearness(question)
    return personal >= PERSONAL_SIMILARITY and personal >= campus_nearness(question)[0] + PERSONAL_MARGIN


def _phrase(low: str) -> tuple[str | None, frozenset, str | None]:
    """The head noun, its other words and its owner in "my <phrase>" or "which <phrase> is mine"."""
    owned = re.search(r"(?:'s|\b(?:is|are|was|were|of|about|remember|know|recall|me|do|does|did|will)) "
                      r"(?:\w+ly )?my ((?:[\w'-]+ ){0,4}?[\w'-]+?)(?='s\b|\s*(?:$|[?.!,]|\b(?:is|are|was|"
                      r"were|again|now|please|called|these|this|at|for|in|on|of|from|with|to|do|does|"
                      r"did)\b))", low) or \
        re.search(r"\b(?:which|what) ((?:[\w'-]+ ){0,3}?[\w'-]+) (?:is|are) mine\b", low)
    if not owned:
        return None, frozenset(), None
    words = [stem(w) for w in _TERMS.findall(owned.group(1)) if w not in STOP and w not in GENERIC]
    if re.search(r"\b(?:do|does|did|will|can|would|should) my ", low) and len(words) > 1:
        words = words[:-1]  # "when does my brother come?": "come" is the verb, the brother is asked about
    possessed = re.match(r"'s ([\w'-]+)", low[owned.end():])
    if possessed and possessed.group(1) not in GENERIC and words:
        return stem(possessed.group(1)), frozenset(), words[-1]  # "my grandmother's birthday"
    if not words:
        return None, frozenset(), None
    return words[-1], frozenset(words[:-1]), None


@dataclass
class _Said:
    """One piece of evidence about the user: a sentence they said, a profile line or a correction note."""

    kind: str              # "said" (raw message), "quote" ([turn N] line), "profile" (- key: value), "note"
    text: str              # what is compared with the question
    turn: int | None       # None: a message of the current window, newer than every numbered turn
    position: int
    shown: str = ""        # what the answer quotes (profile lines: "label: value")
    label: str = ""        # a profile line as written, or a note's fact
    superseded: bool = False
    current: bool = False
    before: str = ""       # the sentence before it in the same message: whom "she's a teacher" speaks of

    @property
    def recency(self) -> tuple:
        return (self.turn if self.turn is not None else float("inf"), self.position)


def _same_speaker(name, user_name: str) -> bool:
    """Is a message or quote named ``name`` the user's (``user_name``: the newest user message's ``name``)?
    Unnamed words, or an unnamed user, count as the user's."""
    name = " ".join(str(name or "").split())
    return not (name and user_name) or name.casefold() == user_name.casefold()


def _evidence(messages: list[dict], user_name: str = "") -> list[_Said]:
    """The user's own statements in the request, oldest first (see the module docstring): with the user named
    (``user_name``), a user message or quote another speaker said is not theirs."""
    found: list[_Said] = []

    def said(kind, text, turn, **extra):
        if kind in ("profile", "note") or not (text.endswith("?") or _is_ack(text) or _REQUEST.search(text)):
            found.append(_Said(kind, text, turn, len(found), **extra))

    previous = ""  # the user's sentence before: "My cousin Ines visits in May." before "She is a paramedic."
    for message in messages:
        role, text = message.get("role"), _text(message)
        if role == "user" and _same_speaker(message.get("name"), user_name):
            for sentence in sentences(text):
                said("said", sentence, None, shown=sentence, before=previous)
                previous = sentence
        elif role in ("system", "developer"):
            for quote in read_quotes(text, "user"):  # helpers.core.context_format: the quote line's one reader
                if not _same_speaker(quote.name, user_name):
                    continue  # "[turn 4] user (Melanie): ..." when Caroline asks: another person's words
                note = quote.notes[0] if quote.notes else None
                before = ""
                for sentence in sentences(quote.text):
                    said("quote", sentence, quote.turn_id, shown=sentence, superseded=note is not None, before=before)
                    before = sentence
                if note:
                    label = note.label.split("/")[-1]
                    said("note", f"my {label} is {note.value}", note.turn_id, shown=note.value,
                         label=note.label, current=True)
            for fact in read_fact_lines(text):  # and the fact line's
                label, value, marks = fact.label, fact.value, fact.mark
                words = " ".join(label.replace("/", " ").split())
                said("profile", f"my {words} is {value}", fact.turn, shown=f"{label}: {value}",
                     label=fact.line,
                     superseded=marks.startswith(("superseded", "outdated")),
                     current=marks == "current" or "superseded \"" in marks)
    return found


_MONEY_ASKED = re.compile(r"\bhow much\b.*\b(?:cost|costs|pay|paid|price|spend|spent|charge[sd]?|fee|owe|worth)\b|"
                          r"\b(?:price|cost|fee|salary|rent)\b", re.I)
_MONEY = frozenset("dollar dollars pound pounds euro euros quid pence p cents cent k".split())  # the units of a sum
_NOT_UNITS = frozenset(stem(w) for w in "next last this coming more times time".split())


def _counted(asked_text: str) -> str | None:
    """What a count asks for: "children" in "how many children", a year for "how old"."""
    if re.search(r"\bhow old\b|\bage\b", asked_text, re.I):
        return "year"
    many = re.search(r"\bhow (?:many|much) ([a-z]+)", asked_text, re.I)
    return stem(many.group(1)) if many and many.group(1).lower() not in STOP else None


def _counts(unit: str, counted: str) -> bool:
    """Does a number's noun count what a count asks for: the same word ("kids", "kid"), one as near in meaning
    (``SAME_THING``), or relatives among those asked ("three daughters" are children; "two kids" are no
    daughters)?"""
    unit, counted = stem(unit), stem(counted)
    if same_stem(unit, counted) or float(similarity(unit, [counted])[0]) >= SAME_THING:
        return True
    said, asked = _roles({unit}), _roles({counted})
    return bool(said and asked and said <= asked)


def _counted_here(asked: Asked, text: str) -> bool:
    """Does a statement give a count of what a "how many X" asks for ("We've got three daughters" for "how many
    children do I have?")?"""
    counted = _counted(asked.core) if re.search(r"\bhow many\b", asked.core, re.I) else None
    return bool(counted) and any(claim.kind == "number" and claim.value[1] and _counts(claim.value[1], counted)
                                 for claim in facts_in(text).claims)


def _named_person(before: str) -> bool:
    """Does ``before`` end in "my <someone>" ("my grandmother ", "our neighbour "), so the name after it is theirs?"""
    m = re.search(r"\b(?i:my|our) ([a-z]+)\s+$", before)
    return bool(m and shared_stems({stem(m.group(1))}, PEOPLE))


def _supplies(kind: str, text: str, asked_text: str = "") -> bool:
    """Does a statement name the kind of thing the question asks for (a person, a number, a time, ...)?
    ``asked_text``, the question, tells a count or an age ("how many", "how old") from a number of any kind."""
    if kind == "name":
        return _NAME_INTRO.search(text) is not None
    asked_names = {m.group(0).lower() for m in _CAPITALISED.finditer(asked_text) if m.start() > 0} | {
        w for w in re.findall(r"[a-z][a-z'-]+", asked_text.lower()) if w not in STOP}  # typed in lower case too
    names = [m for m in _CAPITALISED.finditer(text) if not _CALENDAR.match(m.group(0))
             and m.group(0).lower() not in asked_names]  # "where does Arjun work?": Arjun is not the answer
    if kind in ("person", "name_of"):  # a name after "in", "at", "from", ... is a place's: "live in Leicester"
        people = [m.group(0) for m in names if (m.start() > 0 or len(m.group(0).split()) > 1)
                  and not _PLACE_BEFORE.search(text[:m.start()])]
        typed = [m.group(1) for m in re.finditer(r"\b(?i:called|named)\s+([a-z][a-z'-]+)", text)
                 if m.group(1) not in STOP and m.group(1) not in asked_names]  # "a guy called omar": typed in lower case
        return any(not _ORGANISATION.search(n) for n in people) or bool(typed) or re.search(_TITLE, text, re.I) is not None or (
            kind == "person" and bool(shared_stems(PEOPLE, content_stems(text))))  # "my grandparents", "my mum"
    if kind == "number":  # a count or an age is no part of a date or a clock time ("her birthday is on 3 March")
        if _COUNT.search(asked_text):
            counted = _counted(asked_text)
            for claim in facts_in(text).claims:
                unit = claim.value[1] if claim.kind == "number" else None
                unit = None if unit in _NOT_UNITS else unit  # "turns nine next week": "next" counts nothing
                if claim.kind in ("date", "time", "day") or (unit and counted and not _counts(unit, counted)):
                    text = text.replace(claim.written, " ")  # "two kids" is no age; "on 3 March" no count
        if _MONEY_ASKED.search(asked_text):  # "how much did my season ticket cost?": a sum of money
            return any(claim.kind == "number" and claim.value[1] in _MONEY for claim in facts_in(text).claims)
        return _NUMBER_VALUE.search(text) is not None
    if kind == "time":  # a month counts when capitalised ("in June"; "may" is a verb too) or is no other word
        return _TIME_VALUE.search(text) is not None or _MONTH_NAME.search(text) is not None or \
            _MONTH_TYPED.search(text) is not None or any(
            claim.kind in ("day", "time", "date") for claim in facts_in(text).claims)
    if kind == "place":  # a place: "in/at/from ...", a building or room word, or a name not after "a" / "an"
        asked_words = content_stems(asked_text)  # "lab" in "our lab meeting" is the thing asked about, not its place
        rest = " ".join(w for w in text.split() if not shared_stems(content_stems(w), asked_words)) or text
        return _PLACE_VALUE.search(rest) is not None or any(
            m.start() > 0 and not re.search(r"\b(?:an?|the)(?: [a-z]+)*\s*$", text[:m.start()])
            and not _named_person(text[:m.start()])  # "my grandmother Ilse": a person, no place
            for m in names)
    return True


def _someone_else_does(text: str, verb: str) -> bool:
    """Does the statement use ``verb`` as the verb of someone else ("my cousin lives", "Rory works")?"""
    words = re.findall(r"[A-Za-z']+|[,.;:!?]", text)
    for i, word in enumerate(words):
        following = words[i + 1].lower() if i + 1 < len(words) else ""
        if not same_stem(stem(word), verb) or following in ("is", "are", "was", "were", "'s"):
            continue
        j = i - 1
        while j >= 0 and (words[j].lower().endswith("ly") or words[j].lower() in ("now", "still", "also",
                                                                                 "just")):
            j -= 1
        if j < 0 or words[j].lower() in ("i", "we", "i'm", "i've", "and", "to", "me"):
            continue
        if words[j][0].isupper() and words[j] not in ("I", "My") and j > 0:
            return True   # "Rory works ..."
        if "my" in [w.lower() for w in words[max(0, j - 3):j]] and words[j].isalpha():
            return True   # "my cousin lives ...", "my older sister works ..."
    return False


def _without_generic(text: str) -> str:
    """"locker number" -> "locker": generic nouns ("number", "name") make unrelated things look alike."""
    kept = " ".join(w for w in text.split() if w.lower().strip("?.!,'s") not in GENERIC)
    return kept or text


def _statement_topics(item: _Said) -> list[str]:
    """What a statement is about: a profile line's label, a note's fact, each X of "my X is ..."."""
    if item.kind in ("profile", "note"):
        return [item.text.removeprefix("my ").split(" is ")[0]]
    return [m.group(1) for m in _MY_TOPIC.finditer(item.text)]


def _topic_head(item: _Said) -> str | None:
    """The noun a statement is about: the last word of "my X" before a preposition ("locker in the gym")."""
    topics = _statement_topics(item)
    if not topics:
        return None
    words = [stem(w) for w in _TERMS.findall(re.split(r"\b(?:in|at|on|of|for|from|with)\b", topics[0].lower())[0])
             if w not in STOP and w not in GENERIC]
    return words[-1] if words else None


def _other_owner(asked: Asked, item: _Said, question_stems: set[str]) -> bool:
    """"my sister's birthday" does not answer "when is my birthday?"; "my cousin lives in Leeds" does not say
    where I live. A question about "the christening" claims no owner, so another's does not rule it out."""
    for owner, owned in (_POSSESSED.findall(item.text) if _FIRST_PERSON.search(asked.core) else []):
        owner_stem = stem(owner)
        about_asked = shared_stems({stem(owned)}, asked.topic)
        if (owner.lower() not in STOP and owner_stem not in GENERIC and about_asked
                and not shared_stems({owner_stem}, question_stems)):
            return True
    if item.kind not in ("said", "quote"):  # a profile line is the user's own
        return False
    if _FIRST_PERSON.search(asked.core) and _theirs_not_users(asked, item.text, question_stems):
        return True  # "my sister has a labrador called Rolo" does not say what my dog is called
    does = _OTHER_DOES.search(asked.core)
    other_verb = (does.group(1) or does.group(3)) if does else None
    if other_verb and other_verb.lower() not in STOP and _user_does(item.text, stem(other_verb.lower())):
        return True  # "what instrument does my mum play?" and "I play bass in a band": the user plays, not her
    return bool(asked.subject_is_user and asked.verb and shared_stems({asked.verb}, content_stems(item.text))
                and _someone_else_does(item.text, asked.verb))


# someone of the user's who has a thing: "my sister has a labrador", "my flatmate Jo's got a car", "my dad owns a boat"
_SOMEONE_HAS = re.compile(r"\b(?i:my|our) ([a-z]+)(?: [A-Za-z][a-z'-]+)?,? (?:(?i:also|still|just) )?(?i:has got|has|had|owns|"
                          r"'s got|keeps|got)\b([^,;.!?]*)")


def _theirs_not_users(asked: Asked, text: str, question_stems: set[str]) -> bool:
    """Does the statement give the thing asked about to someone of the user's as its owner ("my sister has a labrador
    called Rolo" for "what's my dog called?"), when the question names no such person? The subject of "has" owns
    what follows it, by its word or its class."""
    for m in _SOMEONE_HAS.finditer(text):
        owner = stem(m.group(1).lower())
        if not (shared_stems({owner}, PEOPLE) or _roles({owner})) or shared_stems({owner}, question_stems) or \
                _roles({owner}) & _roles(question_stems):
            continue
        owned = content_stems(m.group(2))
        if shared_stems(asked.topic, owned) or any(_names_kind_of(w, m.group(2)) for w in asked.topic):
            return True
    return False


def _user_does(text: str, verb: str) -> bool:
    """Does the statement use ``verb`` with the user alone as its subject ("I play bass", "I also work")?"""
    words = re.findall(r"[A-Za-z']+", text)
    for i, word in enumerate(words):
        if i and same_stem(stem(word), verb):
            j = i - 1
            while j > 0 and (words[j].lower().endswith("ly") or words[j].lower() in ("now", "still", "also", "just")):
                j -= 1
            if words[j].lower() == "i":  # "we" may be the group asked about: "we rehearse" is the band
                return True
    return False


def _roles(stems: set[str]) -> set[str]:
    """The relatives' roles some words name ("mum" -> mother, "parents" -> mother and father)."""
    roles: set[str] = set()
    for word in stems:
        for known, role in ROLE_OF.items():
            if same_stem(word, known):
                roles.add(role)
        for known, covered in COVERS.items():
            if same_stem(word, known):
                roles |= covered
    return roles


def _another_relative(asked: Asked, item: _Said) -> bool:
    """Does the statement speak of other relatives than the one asked about ("what's my sister's name?" and
    "my brother is Felix"; "when is my mum visiting?" and "my dad visits on the 12th")? A word for several
    ("parents", "siblings") covers each of them; a question about the family as a whole asks about any."""
    if shared_stems(asked.topic, {stem(w) for w in FAMILY}):
        return False
    wanted = _roles(set(asked.topic) | ({asked.owner} if asked.owner else set()))
    named = _roles(content_stems(item.text))
    return bool(wanted and named and not wanted & named)


CLIPPED_SIMILARITY = 0.5
"""A word that begins another and is this near it in meaning is its short form: "physio" and "physiotherapy"
(0.53), "stats" and "statistics" (0.77); "exam" and "example" (0.27) are two words."""


def _clipped(topic: set[str], text: str) -> set[str]:
    """The words asked about that the statement names in a longer or shorter form ("physio": "physiotherapy")."""
    found = set()
    words = {w for w in _TERMS.findall(text.lower()) if len(w) >= 3 and w not in STOP}
    for asked_word in topic:
        for word in words:
            short, long = sorted((asked_word, word), key=len)
            if len(short) >= 3 and len(long) > len(short) + 1 and long.startswith(short) and \
                    float(similarity(asked_word, [word])[0]) >= CLIPPED_SIMILARITY:
                found.add(asked_word)
    return found


_TURNS_AGE = re.compile(r"\bturn(?:s|ing|ed)?\s+(?:\d{1,3}|" + _NUMBER_WORD + r")\b(?!\s*(?:minutes?|hours?|days?|weeks?|times?))",
                        re.I)


def _birthday_told(word: str, text: str) -> bool:
    """Is ``word`` "birthday" and does ``text`` say when someone turns an age ("my grandmother turns 90 on 3 November"):
    the day one's age changes is one's birthday?"""
    return same_stem(word, stem("birthday")) and _TURNS_AGE.search(text) is not None


# Phrases that name a thing of a word class (``helpers.core.words.WORD_CLASSES``) without its word: dating someone names
# a partner ("i've been seeing a guy called Omar", "I'm going out with Jamie now"), "reading" a subject names what the
# user studies ("I'm reading Philosophy at Larkspur"), living somewhere names a home ("we live at 9 Quay Street").
_PERSON_NOUN = r"(?:guy|girl|lad|lass|man|woman|boy|bloke|chap|fella|someone|somebody)"
_CLASS_PHRASES = {
    "partner": re.compile(r"\b(?i:dating)\b|\b(?i:seeing|going out with|in a relationship with|engaged to|married to|"
                          r"got together with)\s+(?:(?i:a|an|this|some)\s+(?:[a-z]+\s+)?(?i:" + _PERSON_NOUN +
                          r")\b|(?!(?:Dr|Mr|Mrs|Ms|Prof|The|A|An)\b)[A-Z][a-z])"),  # a name: capitalised
    "study": re.compile(r"\b(?:i'm|i am|i)\s+(?:\w+ly\s+|now\s+|still\s+)?(?:reading|read)\s+(?!(?:a|an|the|my|your|"
                        r"his|her|about|up|through|books?|it|this|that|some|more|novels?|articles?)\b)[A-Za-z]", re.I),
    "home": re.compile(r"\b(?:i|we)\s+(?:\w+ly\s+|now\s+|still\s+)?(?:live|stay)\s+(?:at|in|on)\b", re.I),
}
_STUDY_WORDS = frozenset(stem(w) for w in "study course degree major".split())  # what "what do I study?" asks


def _class_of(word: str) -> str | None:
    """The class a stem of a question names a thing of (``word_class``; "study", "course", "degree" ask what one
    studies)."""
    return "study" if word in _STUDY_WORDS else word_class(word)


def kinds_named(text: str) -> set[str]:
    """The word classes a statement names a thing of: by a word of the class ("my GP" names a doctor, "a spaniel" a
    dog, "my flat" a home) or by a phrase (``_CLASS_PHRASES``: "dating", "reading History", "we live at")."""
    found = {c for c in (word_class(w) for w in _TERMS.findall(text.lower())) if c}
    return found | {name for name, phrase in _CLASS_PHRASES.items() if phrase.search(text)}


def _names_kind_of(word: str, text: str) -> bool:
    """Does ``text`` name a thing of the class the stem ``word`` names ("who is my doctor?" and "my gp is dr okafor")?"""
    kind = _class_of(word)
    return bool(kind) and kind in kinds_named(text)


# the head of a compound that names a place: "car park", "bus stop", "dog park", "book shop", "coffee shop"
_PLACE_HEADS = frozenset(stem(w) for w in "park parking stop station shop store street road lane wash lot garage "
                         "showroom yard depot".split())


def _only_names_a_place_of(word: str, text: str, topic: set[str]) -> bool:
    """Does ``text`` use the stem ``word`` only as the first word of a compound naming a place ("car park", "bus stop",
    ``_PLACE_HEADS``) that the question does not ask about? "i park in car park D" says nothing of what car I have."""
    words = _TERMS.findall(text.lower())
    at = [i for i, w in enumerate(words) if same_stem(stem(w), word)]
    return bool(at) and all(i + 1 < len(words) and stem(words[i + 1]) in _PLACE_HEADS
                            and not shared_stems({stem(words[i + 1])}, topic) for i in at)


def _words_asked_about(asked: Asked, item: _Said) -> tuple[set[str], float]:
    """The words asked about that the statement uses, and their share; for "where am I from?" (a stranded
    preposition) all of them when a word follows "from" in the statement, else none."""
    said_stems = content_stems(item.text)
    shared = shared_stems(asked.topic, said_stems) | _clipped(asked.topic, item.text)
    shared = {w for w in shared if not _only_names_a_place_of(w, item.text, asked.topic)}  # "car park" is no car
    kinds = {claim.kind for claim in facts_in(item.text).claims}  # "which days": "tues and thurs" are days
    shared |= {w for w in asked.topic if w in kinds and re.search(rf"\b(?:which|what) {w}s?\b", asked.core, re.I)}
    wanted_roles = {w: _roles({w}) for w in asked.topic}  # "my gran" is "my grandmother", "my dad" "my father"
    named_roles = _roles(said_stems)
    shared |= {w for w, roles in wanted_roles.items() if roles and roles & named_roles}
    shared |= {w for w in asked.topic if _birthday_told(w, item.text)}
    shared |= {w for w in asked.topic if _names_kind_of(w, item.text)}
    if asked.subject_is_user:  # "where do I live?": the user's home ("my flat is at 4 Mill Lane")
        shared |= {w for w in asked.topic if same_stem(w, "live") and "home" in kinds_named(item.text)}  # "my doctor" and "my gp", "a spaniel"
    shared |= {w for w, name in asked.aliases if w in asked.topic and re.search(rf"\b{re.escape(name)}\b", item.text)}
    if asked.kind == "number" and _counted_here(asked, item.text):  # "three daughters": the children counted
        shared |= {w for w in asked.topic if _counts(w, _counted(asked.core) or w)}
    coverage = len(shared) / len(asked.topic) if asked.topic else 0.0
    if asked.preposition:  # "where am I from?" is answered by "I'm originally from Kilkenny"
        after = re.search(rf"\b{asked.preposition}\s+(?:the\s+)?([A-Za-z][\w'-]*)", item.text)
        coverage = 1.0 if after and after.group(1).lower() not in STOP else 0.0
        shared = {asked.preposition} if coverage else set()
    return shared, coverage


def _third_person_level(asked: Asked, item: _Said, coverage: float) -> int:
    """A question not about the user ("who is visiting next month?"): 3 for a statement of the user's about
    someone or something of theirs ("my partner Sam starts ...") that names every word (two or more) and
    the kind asked, else 0."""
    return 3 if (coverage == 1 and len(asked.topic) >= 2 and _MY_SUBJECT.match(item.text)
                 and _supplies(asked.kind, item.text, asked.core)) else 0


def _name_level(item: _Said) -> int:
    """A question for the user's name: 3 for a statement that introduces it ("call me Ines") or a profile
    line about it, else 0."""
    return 3 if (_NAME_INTRO.search(item.text) or (item.kind == "profile" and item.text.startswith("my name ")))\
        else 0


def _only_gives_the_name(item: _Said, shared: set[str]) -> bool:
    """A sentence of the user's that only gives their name ("I'm Kaito.") answers nothing else."""
    intro = _NAME_INTRO.search(item.text) if item.kind in ("said", "quote") else None
    return bool(intro and not shared and len(content_stems(item.text.replace(intro.group(0), " "))) <= 2)


def _topic_similarity(asked: Asked, topics: list[str]) -> float:
    """How close the whole question is to the statement's nearest topic (0 with none): single words alone
    ("room", "locker") look too alike."""
    return float(np.max(similarity(_without_generic(asked.core), topics))) if topics else 0.0


def _another_thing(topics: list[str], shared: set[str], topic_similarity: float) -> bool:
    """A statement with a topic of its own that shares no word and is far in meaning (``TOPIC_SIMILARITY``):
    "my bike lock code" does not answer "what's my student number?"."""
    return bool(topics) and not shared and topic_similarity < TOPIC_SIMILARITY


def _my_phrases(item: _Said) -> list[str]:
    """Each "my X" of a statement with no "my X is ..." of its own, up to its first small or capitalised word:
    "my brother" in "My brother Arlo turns nine", "my knee" in "physiotherapy for my knee"."""
    if item.kind not in ("said", "quote"):
        return []
    phrases = []
    for m in re.finditer(r"\b(?:[Mm]y|[Oo]ur) ((?:[a-z][\w-]* ){0,2}[a-z][\w-]*)", item.text):
        words = []
        for word in m.group(1).split():
            if word.lower() in STOP:
                break
            words.append(word)
        if words and words[-1].lower() not in GENERIC:
            phrases.append(" ".join(words))
    return phrases


def _unasked(asked: Asked, phrases: list[str]) -> list[str]:
    """The phrases, or none when one of them names a word asked about ("my second year" for "what year of my
    degree am I in?")."""
    return [] if any(shared_stems(content_stems(p), asked.topic) for p in phrases) else phrases


def _another_head(asked: Asked, item: _Said, topics: list[str]) -> bool:
    """A statement about another head noun than the one asked about, and not near it in meaning
    (``SAME_TOPIC``): "my grandmother lives in Utrecht" does not say when her birthday is."""
    if not (topics and asked.head):
        return False
    said_about = content_stems(" ".join(topics), generic=False)
    head_named = (shared_stems({asked.head}, content_stems(item.text)) or _clipped({asked.head}, item.text)
                  or _birthday_told(asked.head, item.text) or _names_kind_of(asked.head, item.text)
                  or said_about <= shared_stems(said_about, set(asked.modifiers)))  # "my minor (subject)"
    return not head_named and float(np.max(similarity(asked.head, topics))) < SAME_TOPIC


def _another_kind_of_it(asked: Asked, item: _Said, topics: list[str], question_stems: set[str]) -> bool:
    """A statement about another kind of the thing asked about, unless the two phrases are nearly the same
    in meaning (``SAME_THING``): "my yoga class" is not "my pilates class", but "my textbook budget" is
    "my book budget"."""
    if not (topics and asked.head):
        return False
    said_about = content_stems(" ".join(topics), generic=False)
    return bool(set(asked.modifiers) - shared_stems(set(asked.modifiers), content_stems(item.text))
                and said_about - shared_stems(said_about, question_stems)
                and float(np.max(similarity(" ".join(sorted(asked.modifiers)) + " " + asked.head, topics)))
                < SAME_THING)


def _names_what_is_asked(asked: Asked, item: _Said, topics: list[str], coverage: float,
                         topic_similarity: float) -> bool:
    """Does the statement name a value of the kind asked (``_supplies``: a person for "who", a time for
    "when", a place for "where", ...)? A statement of the user's must, however fully it speaks of the thing
    asked about: "my swimming lessons are on Wednesdays" says not where they are held, "my grandmother's
    birthday is on 3 March" not how old she is. A profile line whose label names every word asked need
    not (its value is that attribute), nor, for a "what" (no one form), a statement that defines what is
    asked -- every word of it, or some and the same thing in meaning (``SAME_TOPIC``) -- unless the
    question may be a campus task ("where can I park my bike?" is not "my bike is a Trek")."""
    defined = bool(topics) and (coverage == 1 or (coverage > 0 and topic_similarity >= SAME_TOPIC))
    specific = asked.kind in ("person", "name_of", "number", "time", "place")
    if item.kind in ("profile", "note") and coverage == 1 and bool(topics) and (
            not specific or _supplies(asked.kind, item.text, asked.core)):
        return True  # "- schedule/choir: Mondays 7pm" says when choir is, not where
    if _defines(asked, item) or (asked.kind == "place" and defined and asked.how != "weak" and _names_a_thing(item)):
        return True  # "my part-time job is the campus bookstore" says where I work part-time
    if not specific and ((coverage == 1 and bool(topics)) or (defined and asked.how != "weak")):
        return True
    return _supplies(asked.kind, item.text, asked.core)


_ATTRIBUTE_VALUE = re.compile(r"\s*(?:\w+ly |still |now |also )*(?:on|in|at|from|by|until|till|every|each|near|"
                              r"inside|outside|for|with|during|after|before)\b", re.I)


def _names_a_thing(item: _Said) -> bool:
    """Is the value of the statement's "my X is ..." a thing named ("the campus bookstore", "Harlow House"), not
    an attribute ("on Wednesdays") or a description ("a red Trek")?"""
    return item.kind in ("said", "quote") and any(
        re.match(r"\s*(?:still |now |also )*(?:the\s+\w|[A-Z])", item.text[m.end():]) and not
        _CALENDAR.match(item.text[m.end():].split()[0] if item.text[m.end():].split() else "")
        for m in _MY_TOPIC.finditer(item.text))


def _defines(asked: Asked, item: _Said) -> bool:
    """Is the statement "my X is Y" with X every word asked about and Y the thing itself, not one attribute of
    it? "my locker code is 4471" defines it; "my swimming lessons are on Wednesdays" gives their day, and
    "my grandmother's birthday is on 3 March" her birthday's date, nothing else."""
    if item.kind not in ("said", "quote") or not asked.topic:
        return False
    for m in _MY_TOPIC.finditer(item.text):
        about = content_stems(m.group(1))
        if len(shared_stems(asked.topic, about)) == len(asked.topic) and \
                not _ATTRIBUTE_VALUE.match(item.text[m.end():]):
            return True
    return False


def _same_kind_of_attribute(asked: Asked, item: _Said) -> bool:
    """A general question about a kind of personal attribute ("what can't I eat?", "any health conditions?",
    near it by ``KIND_QUESTION``) and a statement near that kind by
    ``KIND_STATEMENT`` ("I'm vegetarian", "I'm allergic to shellfish"); or a question about the user's family and a statement naming a
    member of it ("is anyone in my family coming?", "my mum is visiting")."""
    return _kind_nearness(asked, item) > 0


_CAUSE = re.compile(r"\s(?:so|which is why|that's why|and so)\s", re.I)  # a state, then what follows from it
KIND_PHRASE = 0.6
"""A phrase of the user's with modifiers ("my medical condition" 0.73, "my food allergy" 0.88) this near a kind of
personal attribute names the kind, not one thing ("my dentist appointment" is 0.51 from "my appointments")."""


_TREATS = {PERSONAL_KINDS.index("the medicine or treatment I take"):
           PERSONAL_KINDS.index("my health and medical conditions: an illness or disease I have")}
"""A statement nearest the kind "medicine" speaks of the condition it treats, so it answers a question about the
user's conditions; a condition names no medicine, so "I have type 1 diabetes" does not say what they take."""


def _phrase_of(asked: Asked) -> str:
    """The words of the phrase asked about as the question writes them: "medical condition" in "my medical condition"."""
    m = re.search(r"\b(?:my|our) ((?:[a-z][\w-]* ){0,3}?)" + re.escape(asked.head or "") + r"\w*", asked.core.lower())
    return m.group(0).split(" ", 1)[1] if m else " ".join(sorted(asked.modifiers)) + " " + (asked.head or "")


def _kind_nearness(asked: Asked, item: _Said) -> float:
    """How near a statement is to the kind of personal attribute a general question asks about (0: not of it;
    see ``_same_kind_of_attribute``); it ranks the statements of that kind."""
    if shared_stems(asked.topic, {stem(w) for w in FAMILY}):
        if {stem(w) for w in KIN} & {stem(w) for w in _TERMS.findall(item.text.lower())}:
            return 1.0
    if asked.owner or (asked.modifiers and personal_kind(" ".join(_TERMS.findall(_phrase_of(asked))))[1] < KIND_PHRASE):
        return 0.0  # "my grandmother's birthday", "my dentist appointment": one thing, not a kind of thing
    kind, nearness = personal_kind(asked.core)
    if nearness < KIND_QUESTION:
        return 0.0
    restriction = re.search(r"\b(?:can't|cannot|can not|mustn't|shouldn't|avoid|not allowed)\b", asked.core, re.I)
    best = 0.0
    cause = _CAUSE.split(item.text) if item.kind in ("said", "quote") else []
    for text in [item.text] + ([cause[0]] if len(cause) > 1 else []):  # "I'm type 1 diabetic so I carry snacks":
        item_kind, item_best = personal_kind(text)                      # the state is the clause before "so"
        item_nearness = item_best if item_kind == kind else float(similarity(PERSONAL_KINDS[kind], [text])[0])
        treats = _TREATS.get(item_kind) == kind and item_best >= KIND_STATEMENT  # a treatment is taken for a condition:
        clear = treats or (item_kind == kind and item_nearness >= KIND_STATEMENT) or (  # "I'm on lamotrigine for my
            # epilepsy" answers "what condition do I have?" (not the other way), ranked by its nearness to conditions
            item_nearness >= KIND_CLEAR and (restriction or item_best - item_nearness <= KIND_TIE))
        best = max(best, item_nearness if clear else 0.0)
    return best


def _level(asked: Asked, item: _Said, shared: set[str], coverage: float, topic_similarity: float,
           score: float, same_kind: bool = False) -> int:
    """3: names every word asked about; 2: its topic is the same thing in other words (``TOPIC_SIMILARITY``)
    or it corrects a value and shares a word; 1: it shares a word or is close in meaning to the whole question
    (``STATEMENT_SIMILARITY``); else 0. A weak question needs level 2 or half the words asked about."""
    if coverage == 1:
        level = 3
    elif topic_similarity >= TOPIC_SIMILARITY or (shared and _CORRECTION.search(item.text)):
        level = 2
    elif shared or score >= STATEMENT_SIMILARITY or same_kind:
        level = 1
    else:
        return 0
    if asked.how == "weak" and level < 2 and coverage < 0.5:
        return 0  # "where can I get my bike repaired?" is not "my bike lock code is ..."
    return level


# words that pick out one of several of a thing: "my second supervisor" is another person than "my supervisor"
WHICH_ONE = frozenset("second third other another co-supervisor co deputy assistant former previous old ex backup "
                      "spare".split())
LIGHT_VERBS = frozenset(stem(w) for w in "take have get do make go use keep put give".split())  # little meaning alone
_PART_OF_DAY = re.compile(r"\b(?:mornings?|afternoons?|evenings?|nights?|noon|midday|midnight|o'clock)\b", re.I)
_VALUE_ASKED = re.compile(r"\b(?:which|what) (floor|room|day|date|time)\b", re.I)  # a value facts_in normalises
_OTHER_DOES = re.compile(r"\b(?:does|do|did|will) (?i:my (?:[\w'-]+ ){1,3}?|our (?:[\w'-]+ ){1,3}?)"
                         r"(?i:([a-z]+))(?i:\s+(?:for|as|at)?\s*(?:a\s+)?([a-z]+))?\b(?=[^?]*(?:\?|$))|"
                         r"\b(?i:does|did|will) (?:[A-Z][a-z'-]+) (?i:([a-z]+))(?i:\s+(?:for|as|at)?\s*(?:a\s+)?([a-z]+))?"
                         r"\b(?=[^?]*(?:\?|$))")  # "where does my sister work?", "what does Lena study?"
# "my doctor switched me", "our tutor moved us": the one who made a change, acting on the user
_AGENT = re.compile(r"(?:my|our) [a-z][\w-]*(?: [a-z][\w-]*)?\s+(?:has |had |just |have )?"
                    r"(?:\w+ed|put|set|swapped|moved|got|made|told) (?:me|us)\b", re.I)
_RANGE = re.compile(r"\b(?:until|till|through|to)\s+\w|\d\s*(?:-|–|—)\s*\d|\bbetween\b", re.I)
# a span of clock hours written bare: "my shift is 6 till 2", "10-4 on saturdays" -- its first hour is when it starts,
# its last when it ends
_HOURS_SPAN = re.compile(r"\b\d{1,2}(?:[:.]\d{2})?\s*(?:till|until|til|to|-|–)\s*\d{1,2}(?:[:.]\d{2})?\b(?!\s*(?:%|"
                         r"years?|days?|weeks?|months?|people|pounds?|quid|minutes?|mins?))", re.I)


def _asks_something_else(asked: Asked, item: _Said, shared: set[str], score: float) -> bool:
    """Does the statement speak of the thing asked about but not give what is asked? Not when the question
    asks for a kind of value the statement has none of ("which floor is my office on?" and "my office is in the
    Keller building"); asks for the opposite event ("when does my shift end?" and "it starts at 6pm"); shares
    only its verb ("what medication do I take?" and "I take the 12 bus"); or asks what someone of the user's
    does that the statement does not say ("where does my girlfriend work?" and "my girlfriend is flying in").
    A statement this close to the whole question (``STATEMENT_SIMILARITY``) is not ruled out by the last two."""
    if item.kind in ("profile", "note"):
        return False
    if asked.kind in ("name_of", "number") and not _supplies(asked.kind, item.text, asked.core):
        return True  # "what's my nan's name?" and "my nan is coming up on the train": no name given
    if {stem(w) for w in WHICH_ONE} & set(asked.modifiers) and not shared_stems(set(asked.modifiers) & {
            stem(w) for w in WHICH_ONE}, content_stems(item.text)):
        return True  # "my second supervisor", "my co-supervisor" is not "my supervisor"
    if asked.head and not shared_stems({asked.head}, content_stems(item.text)) and shared and \
            shared <= shared_stems(set(asked.modifiers), shared) and score < STATEMENT_SIMILARITY:
        return True  # "my favourite climbing gym" and "I go climbing": the gym is not named
    value = _VALUE_ASKED.search(asked.core)
    if value and value.group(1).lower() not in {c.kind for c in _claims(item.text)}:
        if not (value.group(1).lower() == "time" and (_PART_OF_DAY.search(item.text) or _HOURS_SPAN.search(item.text))):
            return True
    asked_words = {stem(w) for w in _TERMS.findall(asked.core.lower())}
    said_words = {stem(w) for w in _TERMS.findall(item.text.lower())}
    for one, other in (OPPOSITE_EVENTS, OPPOSITE_EVENTS[::-1]):
        wanted = {stem(w) for w in one}
        if shared_stems(asked_words, wanted) and not shared_stems(said_words, wanted) and \
                shared_stems(said_words, {stem(w) for w in other}):
            return True
    ends = {stem(w) for w in OPPOSITE_EVENTS[1]}
    if asked.kind == "time" and shared_stems(asked_words, ends) and not shared_stems(said_words, ends) and \
            not _RANGE.search(item.text):
        return True  # one time of an event is when it starts: "when does my group meeting finish?" and "... at 10"
    does = _OTHER_DOES.search(asked.core)
    verb_word, after = ((does.group(1) or does.group(3)), (does.group(2) or does.group(4))) if does else (None, None)
    if verb_word and verb_word.lower() == "do" and after and after.lower() not in STOP:
        verb_word = after  # "what does my boyfriend do for work?" asks about his work
    if verb_word and verb_word.lower() not in STOP:
        verb = stem(verb_word)
        alike = {verb} | {stem(w) for group in OPPOSITE_EVENTS if shared_stems({verb}, {stem(x) for x in group})
                          for w in group}  # "when does my brother come?" and "my brother visits on the 14th"
        spans = asked.kind == "time" and len(alike) > 1 and (_RANGE.search(item.text) or _HOURS_SPAN.search(item.text))
        if not shared_stems(alike, said_words) and not (asked.kind == "place" and _placed_in_own_clause(asked, item, verb)) \
                and not spans:  # "when does my shift finish?" and "my shift runs from 5pm to 11pm": a span says both
            return True  # "where does my supervisor work?" and "my supervisor is Professor Adeyemi"
    if score >= STATEMENT_SIMILARITY:
        return False
    if asked.verb in LIGHT_VERBS and shared and shared <= {asked.verb} and len(asked.topic) > 1:
        return True
    return False


_NAMED_PLACE = re.compile(r"\b(?:in|at|near|from|outside)\s+(?:the\s+)?(?!(?:" + "|".join(WEEKDAYS) + r"|January|February|"
                          r"March|April|May|June|July|August|September|October|November|December)\b)[A-Z][a-z]")
_CLAUSE_BREAK = re.compile(r"[,;:!]|\s[-–—]\s|\b(?:and|but|so|because|while|though)\b", re.I)


def _placed_in_own_clause(asked: Asked, item: _Said, verb: str) -> bool:
    """Does the clause of the statement that names whom a "where does X <verb>?" asks about place them ("my sister
    Giulia is a nurse in Bristol" says where she lives; in "my grandmother turns 90, we're doing lunch at the
    Lantern" the place is another clause's)?"""
    wanted = set(asked.topic) - {verb}
    for clause in _CLAUSE_BREAK.split(item.text):
        if wanted and shared_stems(wanted, content_stems(clause)) and _NAMED_PLACE.search(clause):
            return True
    return False


# "the name of Elias's school", "what is my landlord's company called": the thing whose own name is asked
_NAME_OF = re.compile(r"\bname of (?:the |my |our |his |her |their |(?:[A-Za-z]+['’]s )){0,2}([a-z][\w-]*)\b|"
                      r"\b(?:what|how)(?:'s| is| are| was)? (?:the |my |our |(?:[A-Za-z]+['’]s ))+([a-z][\w-]*)"
                      r"(?: (?:going to|gonna|to) be| be)? (?:called|named)\b",
                      re.I)


def _gives_its_name(head: str, text: str) -> bool:
    """Does ``text`` give a name for the thing ``head`` names: a capitalised name next to it ("St Brigid's hospital",
    "Hollis Hall"), or after "called", "named", "is" ("a tortoise called Admiral", "my school is Greenfield")?"""
    words = re.findall(r"[A-Za-z0-9][\w'’-]*", text)
    for i, word in enumerate(words):
        if not same_stem(stem(word.lower()), head) and not (_class_of(head) and _class_of(stem(word.lower())) == _class_of(head)):
            continue  # "what's my dog called?" and "a spaniel called Biscuit": a spaniel is a dog
        before = words[max(0, i - 1):i]
        if before and before[0][0].isupper() and i - 1 > 0 and before[0] not in ("I", "My", "Our"):
            return True
        if word[0].isupper() and i > 0:
            return True  # "Hollis Hall"
        for j, after in enumerate(words[i + 1:i + 5], i + 1):  # "is called the Tidal Bots", "renamed ... to Kelp Coders"
            if after[0].isupper() and after != "I":
                return True
            if words[j - 1].lower() in ("called", "named") and after.isalpha() and after.lower() not in STOP:
                return True  # typed in lower case: "a spaniel called biscuit"
            if after.lower() not in ("is", "'s", "was", "called", "named", "now", "to", "the", "still", "actually"):
                break
    return False


def _states_a_value_like(asked: Asked, item: _Said) -> bool:
    """Does the statement give the value a yes/no question puts, or another of its kind (``VALUE_NEAR``): "green" for
    "is my car blue?" -- the answer is then that value?"""
    words = [w for w in _TERMS.findall(item.text.lower()) if w not in STOP and not shared_stems({stem(w)}, asked.topic)]
    if not words:
        return False
    return any(same_stem(stem(w), stem(asked.value)) for w in words) or \
        float(np.max(similarity(asked.value, words))) >= VALUE_NEAR


# a yes/no question putting one thing to the user's state: "am i allergic to nuts", "am i scared of dogs"
_PUT_OBJECT = re.compile(r"^\W*(?:and |so )?(?:am|was|are|were) (?:i|we) (?:\w+ly )?[a-z]+ (?:to|of|from|with|on|about|"
                         r"for|in) (?:any |the |a |an |some )?([a-z][\w-]*)()\W*$", re.I)
_ANY = frozenset("anything something anyone someone any things stuff".split())  # "am i allergic to anything?"


def _match(asked: Asked, item: _Said, score: float, question_stems: set[str]) -> tuple[int, float]:
    """How well a statement answers the question (step 3 of the module docstring): its level (3, 2, 1, or 0
    for not at all) and the share of the words asked about that it uses. ``score``: the similarity of the
    whole question to the statement. Each step is a function of its own, in this order."""
    shared, coverage = _words_asked_about(asked, item)
    if asked.person and not _speaks_of_person(asked, item):
        return 0, coverage  # "what is Ada allergic to?" and "Tobi has a severe egg allergy"
    if asked.person and asked.kind in ("thing", "yes_no") and set(asked.topic) - shared_stems(
            set(asked.topic), {stem(asked.person.lower())}) and shared <= shared_stems(shared, {stem(asked.person.lower())}) \
            and not _OCCUPATION_ASKED.search(asked.core):
        return 0, coverage  # "what's Corin studying?" and "my flatmate Corin supports Ashford Rovers": only the name
    if _OCCUPATION_ASKED.search(asked.core) and (asked.person or _someone_of_theirs(asked.core)):
        return (3, 1.0) if _names_occupation(asked, item) else (0, coverage)
    named = _NAME_OF.search(asked.core)
    if asked.value and not _states_a_value_like(asked, item):
        return 0, coverage  # "is my car blue?" and "my car is parked in lot C": no colour given
    named_word = next((g for g in named.groups() if g), "") if named else ""
    if named_word and named_word.lower() not in GENERIC | STOP and not _gives_its_name(stem(named_word), item.text):
        return 0, coverage  # "what's the name of Elias's school?" and "my son Elias just started primary school"
    put = _PUT_OBJECT.match(asked.core)
    thing = (put.group(1) or put.group(2)).lower() if put else ""
    if thing and thing not in _ANY and thing not in STOP and not (
            shared_stems({stem(thing)}, content_stems(item.text)) or _clipped({stem(thing)}, item.text)):
        return 0, coverage  # "am i allergic to nuts?" and "I'm allergic to shellfish": nuts are not said either way
    if not _carries_focus(asked, item, question_stems):
        return 0, coverage  # "what dose of sertraline do I take?" and "I take sertraline for anxiety"
    if asked.how == "third":
        return _third_person_level(asked, item, coverage), coverage
    if (_other_owner(asked, item, question_stems) or _another_relative(asked, item)
            or _asks_something_else(asked, item, shared, score)):
        return 0, coverage
    if asked.kind == "name":
        return _name_level(item), coverage
    if _only_gives_the_name(item, shared) or (item.kind == "profile" and item.text.startswith("my name is ")):
        return 0, coverage  # the user's own name answers no other question ("what's my sister's name?")
    topics = [_without_generic(t) for t in _statement_topics(item)]
    topic_similarity = _topic_similarity(asked, topics)
    same_kind = _same_kind_of_attribute(asked, item)
    if ((_another_thing(topics, shared, topic_similarity) and not same_kind) or _another_head(asked, item, topics or _unasked(asked, _my_phrases(item)))
            or _another_kind_of_it(asked, item, topics, question_stems)
            or not _names_what_is_asked(asked, item, topics, coverage, topic_similarity)):
        return 0, coverage
    return _level(asked, item, shared, coverage, topic_similarity, score, same_kind), coverage


# the focus of a question, the kind of thing it asks for when that is not the thing it is about: "which hospital
# is Selin booked into?", "what dose of sertraline do I take?", "what's Noor's job?", "my car's registration"
_WHICH_FOCUS = re.compile(r"^\W*(?:and |so )?(?:which|what)(?: (?:kind|sort|type) of)? ([a-z][\w-]*)(?: of [\w' -]+?)?"
                          r" (?:is|are|was|were|am|do|does|did|have|has|will|should)\b", re.I)
_OWNED_FOCUS = re.compile(r"(?:\b(?!(?:What|Who|Where|When|Which|How|That|It|There|Here)\b)[A-Z][a-z-]+|"
                          r"\b(?i:my|our) [a-z]+)['’]s (?i:([a-z][\w-]*))")
# "does Kenji play", "do I drive", "am I allergic": the question's own predicate, whose object is the answer
_PREDICATE = re.compile(r"\b(?i:do|does|did|am|is|are|was|were)\s+(?:(?i:i|we|you)|[A-Z][a-z'-]+|(?i:my|our) [a-z]+)\s+"
                        r"(?i:(?:\w+ly|still|now|usually|normally|often|always) )*([a-z]+)")
_PREFERENCE = re.compile(r"\b(?:favou?rites?|fave?s?|faves|love[sd]?|loving|like[sd]?|prefer\w*|best|most|enjoy\w*|fan of|"
                         r"go-to)\b", re.I)  # what someone likes above others
_FOCUS_VALUES = frozenset(stem(w) for w in "time day date year month week term semester room floor".split())
_SPECIFIERS = frozenset("a an any some another".split())
_DETERMINERS = frozenset("the my our your his her their this that these those".split())
# "what colour is my car?": one attribute of the thing named last, not a thing related to it ("which band is Kenji
# in?", "which hospital is Selin booked into?" end on their relation)
_PROPERTY = re.compile(r"\b(?:is|are|was|were)\s+(?:(?i:my|our|your|the)|[A-Z][a-z'-]+)((?:\s+[\w'-]+){0,3})\s*[?.!]*\s*$")
_PART_OF = re.compile(r"^\W*(?:and |so )?(?:what|which)(?:'s| is| are| was| were) the ((?:[a-z][\w-]* ){0,2}?[a-z][\w-]*) "
                      r"(?:of|on|for|in|at) (?i:my|our|your|[A-Z][a-z'-]+['’]s)\b")
FOCUS_WORD = 0.7
"""A word of a statement this near the attribute a possessive question asks for gives it: "works" for "what is
Arjun's job?" (0.77 to "work"); "partner" (0.43) and "live" (0.45) say nothing of Noor's job."""


def _focus(asked: Asked) -> tuple[str | None, str]:
    """What a question asks for when it is not the thing it is about, and how: ("hospital", "which") for "which
    hospital is Selin booked into?", ("dose", "which") for "what dose of sertraline do I take?", ("job", "owned")
    for "what's Noor's job?"; (None, "") when the question asks for the thing itself ("what colour is my car?" is
    one attribute of the car, read by the other rules) or for a value the other rules read (a time, a room, a
    number, a person, a place)."""
    if asked.kind not in ("thing", "yes_no"):
        return None, ""
    which = _WHICH_FOCUS.match(asked.core)
    prop = _PROPERTY.search(asked.core)
    related = prop and re.search(r"(?:\b(?:in|on|at|into|onto|for|to|from|with|by)|\w(?:ed|ing))\s*[?.!]*\s*$",
                                 prop.group(0))
    if which and (not prop or related):
        word = which.group(1).lower()
        if word not in STOP and word not in GENERIC and not shared_stems({stem(word)}, _FOCUS_VALUES):
            return stem(word), "which"
    if which and prop and not related and not prop.group(1).strip().lower().endswith(which.group(1).lower()):
        word = which.group(1).lower()  # "what make is my car?", "what colour is Biscuit?": an attribute of the thing
        if word not in STOP and word not in GENERIC and not shared_stems({stem(word)}, _FOCUS_VALUES):
            return stem(word), "owned"
    part = _PART_OF.search(asked.core)  # "what's the number plate on my scooter?": a part or attribute of a thing
    words = [w for w in part.group(1).lower().split() if w not in STOP | GENERIC] if part else []
    if words and not shared_stems({stem(words[-1])}, _FOCUS_VALUES):  # "the serial number": "serial"
        return stem(words[-1]), "owned"
    owned = ([m for m in _OWNED_FOCUS.finditer(asked.core)] or [None])[-1]
    if owned and owned.group(1).lower() not in STOP | GENERIC and not shared_stems({stem(owned.group(1))},
                                                                                  _FOCUS_VALUES):
        return stem(owned.group(1)), "owned"
    return None, ""


def _names_focus(focus: str, text: str, specified: bool) -> bool:
    """Does ``text`` name the focus noun (any form of it, ``_clipped`` too) -- with ``specified``, as one thing
    picked out ("St Luke's hospital", "the number 7 bus", "my bike"), not "a band" or a bare "nursery"?"""
    words = re.findall(r"[A-Za-z0-9][\w'-]*", text)
    for i, word in enumerate(words):
        low = word.lower()
        if not (same_stem(stem(low), focus) or _clipped({focus}, low)):
            continue
        if not specified:
            return True
        before = words[max(0, i - 4):i]
        for w in reversed(before):  # back through the noun phrase to its determiner
            if w.lower() in _SPECIFIERS:
                break  # "a band", "a half marathon": one of many, not which
            if w.lower() in _DETERMINERS or ((w[0].isupper() or w[0].isdigit()) and w is before[-1]):
                return True  # "St Luke's hospital", "the number 7 bus", "my favourite study snack"
            if w.lower() in STOP or w[0].isupper() or w[0].isdigit():
                break  # "My son Theo starts nursery": "Theo" ends the phrase before "starts"
        after = words[i + 1:i + 2]
        if after and (after[0][0].isupper() or after[0][0].isdigit()):
            return True  # "bus 7", "seat 14B"
    return False


def _object_given(asked: Asked, item: _Said, question_stems: set[str]) -> bool:
    """Does the statement use the question's own predicate ("does Kenji play", "am I allergic to") with an object
    the question does not name ("Kenji plays bass", "allergic to sesame"), the value asked for? "I take sertraline
    for anxiety" takes only what the question names."""
    core = re.sub(rf"\b{re.escape(asked.person)}\b", asked.person, asked.core, flags=re.I) if asked.person else asked.core
    predicate = _PREDICATE.search(core)  # "what sport does kwame play": the name as the user introduced it
    if not predicate or predicate.group(1).lower() in STOP:
        return False
    verb = stem(predicate.group(1).lower())
    words = re.findall(r"[A-Za-z0-9][\w'-:.]*", item.text)
    for i, word in enumerate(words):
        if not same_stem(stem(word.lower()), verb):
            continue
        if i and words[i - 1].lower() in _DETERMINERS | _SPECIFIERS:
            continue  # "my driving test": a noun's modifier after its determiner, not the verb "drive"
        rest = [w for w in words[i + 1:i + 6] if w.lower() not in STOP and not w.lower().endswith("ly")]
        nxt = rest[0] if rest else ""
        if nxt and (nxt[0].isupper() or nxt[0].isdigit() or not shared_stems(content_stems(nxt), question_stems)):
            return True
    return False


_KIND_FOCUS = frozenset(stem(w) for w in "breed kind type sort".split())  # asks which kind of a thing it is


def _names_a_kind_of(things: set[str], text: str) -> bool:
    """Does ``text`` name one kind of a thing asked about -- a word of its class other than the class's own word
    ("spaniel" for "dog", "GP" for "doctor")?"""
    classes = {_class_of(w) for w in things} - {None}
    return any(word_class(w) in classes and stem(w) not in things and stem(w) != word_class(w)
               for w in _TERMS.findall(text.lower()))


def _carries_focus(asked: Asked, item: _Said, question_stems: set[str]) -> bool:
    """Does a statement carry the kind of thing the question asks for (its focus, ``_focus``), not merely the same
    topic or person? For "which X" it names X as one thing picked out, or gives the object of the question's own
    predicate; for "<someone>'s X" it names X or a word near it (``FOCUS_WORD``); a profile line names X in its label
    or value. "my favourite X" asks for a liking the statement must state ("I'm vegan" is no favourite food)."""
    if re.search(r"\b(?:favou?rite|fave?)\b", asked.core, re.I) and not _PREFERENCE.search(item.label or item.text):
        return False
    focus, how = _focus(asked)
    if focus is None:
        return True
    if focus in _KIND_FOCUS and _names_a_kind_of(question_stems - {focus}, item.text):
        return True  # "what breed is my dog?" and "my dog Biscuit is a spaniel": a spaniel is one kind of dog
    others = question_stems - {focus}
    if not shared_stems(others, content_stems(item.text)) and not _clipped(others, item.text):
        return True  # "I'm on antihistamines" for "which medication am I on?": nothing else of the question named
    if item.kind in ("profile", "note"):
        return _names_focus(focus, item.text, specified=False) or _object_given(asked, item, question_stems)
    if how == "which":
        return _names_focus(focus, item.text, specified=True) or _object_given(asked, item, question_stems)
    if _names_focus(focus, item.text, specified=False):
        return True
    words = [w for w in content_stems(item.text) if not shared_stems({w}, question_stems)]
    return bool(words) and float(np.max(similarity(focus, words))) >= FOCUS_WORD


# a room written as a bare code where a room goes: "my seminar is in G12", "we've been moved to B22", "put us in G07"
_ROOM_CODE = re.compile(r"\b(?:in|to|into|at)\s+(?:the\s+)?([A-Za-z]{1,2}\d{1,4}[A-Za-z]?)\b(?![:.]\d)")


def _claims(text: str) -> list:
    """``facts_in``'s claims of a statement, a code after "in", "to" or "into" read as the room it names (``_ROOM_CODE``;
    "B22" in "moved to B22" is room B22, as "room B22" is)."""
    rooms = {m.group(1).upper() for m in _ROOM_CODE.finditer(text)}
    out = []
    for claim in facts_in(text).claims:
        if claim.kind == "code" and str(claim.value).upper() in rooms:
            claim = type(claim)("room", (str(claim.value).upper(),) * 2, claim.written)
        out.append(claim)
    return out


def _changed_values(old: _Said, new: _Said) -> set[str]:
    """The kinds of value ``old`` names that ``new`` gives another value of -- another room, time, day, number
    or name, compared normalised ("7pm" and "19:00" are one time)."""
    def values(item: _Said) -> dict[str, set]:
        found: dict[str, set] = {}
        for claim in _claims(item.text):
            if claim.kind == "name" and _FIRST_PERSON.fullmatch(str(claim.value)):
                continue  # "I'm" opening a sentence is no name
            found.setdefault(claim.kind, set()).add(str(claim.value))
        return found
    before, after = values(old), values(new)
    return {kind for kind in after if kind in before and after[kind] - before[kind]}


def _owns_another_thing(item: _Said, head: str | None, best: _Said, asked: Asked) -> bool:
    """Does a statement speak of "my <phrase>" about another thing than the one corrected (its change is
    theirs)? It does when no phrase names ``head`` (the noun of the corrected statement), when none shares a
    word with that statement or the question, or when its phrase is another kind of the thing asked about
    ("my language partner" for "my lab partner"). A phrase that is the new value itself (a person of the
    user's for "who": "my brother Piotr is coming instead") or the one who made the change ("my doctor
    switched me to insulin") speaks of no other thing; one naming what is asked ("my parents" for "where
    do my parents live?") or the same relatives as ``head`` ("my parents" and "my mum and dad") is about it."""
    phrases = []
    for m in re.finditer(r"\b(?:my|our) ((?:[a-z][\w-]* ){0,2}[a-z][\w-]*)", item.text, re.I):
        words = []
        for word in m.group(1).lower().split():
            if word in STOP:
                break  # "my lab partner is Kofi": the phrase ends at "is"
            words.append(word)
        if not words or words[-1] in GENERIC:
            continue
        said_of = {stem(w) for w in words}
        if asked.kind == "person" and not asked.head and shared_stems(said_of, PEOPLE) and \
                not shared_stems(said_of, asked.topic):
            continue  # the person who now does it: "my brother Piotr" (but "my language partner" is a partner)
        if _AGENT.match(item.text[m.start():]):
            continue  # "my doctor switched me ...": who changed it, not what changed
        phrases.append(" ".join(words))
    if not phrases:
        return False
    nouns = {stem(w) for phrase in phrases for w in phrase.split()}
    heads = {stem(phrase.split()[-1]) for phrase in phrases}
    if head and not shared_stems({head}, nouns) and not shared_stems(nouns, asked.topic) and \
            not _roles({head}) & _roles(nouns) and not (_class_of(head) and _class_of(head) in {_class_of(n) for n in nouns}):
        return True  # "I switched my thesis to sea ice" changes the thesis, not the supervisor
    if not shared_stems(heads, content_stems(best.text) | asked.topic) and not (
            {_class_of(h) for h in heads} - {None}) & kinds_named(best.text):
        return True  # "sorry, my lab partner is Kofi" corrects no statement about where I do research
    return bool(asked.modifiers) and _another_kind_of_it(asked, item, phrases, content_stems(asked.core))


# the user taking back what they just said: not a change in the world, a slip in the telling
_SELF_CORRECTION = re.compile(r"\b(?:scratch that|i meant|i mean|typo|my mistake|my bad|misspoke|misspelt|misspelled|"
                              r"correction|sorry|wait|no no|not \d+|got that wrong|wrong)\b", re.I)


def _without_values(text: str, kinds: set[str]) -> str:
    """The statement without its values of these kinds (``facts_in``: numbers, days, times, rooms): the words
    around them ("i live at 14 Alder Road" -> "i live at Alder Road")."""
    for claim in facts_in(text).claims:
        if claim.kind in kinds:
            text = text.replace(claim.written, " ")
    return text


def _corrects(asked: Asked, best: _Said, item: _Said, question_stems: set[str]) -> bool:
    """Is a newer statement a correction of the chosen one: a change of state ("switched", "now", "pushed
    to", ``_CORRECTION``) of the same thing -- it names the thing's head noun ("team", "locker"), or it gives
    another value of the same normalised kind (a room for a room: "I switched to room 318 today") and is
    near it in meaning (``CORRECTION_SIMILARITY``) or about what is asked (a bare number must be: "they moved me
    to bench 14" says nothing of "the number 12 bus"), or it is close in meaning to the
    statement it corrects and about what is asked (``SAME_TOPIC``: "I started at the bookshop instead")?"""
    if item.recency <= best.recency or item.superseded or not _CORRECTION.search(item.text):
        return False
    if item.kind in ("profile", "note") or _other_owner(asked, item, question_stems):
        return False
    if asked.value and not _states_a_value_like(asked, item):
        return False  # "I switched from lot C to the multistorey" changes where the car parks, not its colour
    if asked.kind in ("number", "place") and not _supplies(asked.kind, item.text, asked.core):
        return False  # "Chiara's changed jobs, she's a clerk now" changes no place: where she lives still holds
    change = _FROM_TO.search(item.text)
    old_value = content_stems(change.group(2)) if change else set()
    if old_value and shared_stems(old_value, content_stems(best.text)) == old_value and \
            not shared_stems(old_value, asked.topic):
        return True  # "I switched from the north rack to the cage" changes "my bike is locked at the north rack"
    head = _topic_head(best)
    if _owns_another_thing(item, head, best, asked):
        return False
    slip = _changed_values(best, item) if _SELF_CORRECTION.search(item.text) else set()
    if asked.kind != "time" and _supplies("time", item.text):
        slip = set()  # "the operation got moved to the 16th" changes when, not what it is
    if slip and shared_stems(content_stems(_without_values(item.text, slip)) - set(GENERIC),
                             content_stems(_without_values(best.text, slip))):
        return True  # "scratch that, i meant 41 Alder Road" for "i live at 14 Alder Road": the same words, a new value
    if head and (shared_stems({head}, content_stems(item.text)) or _names_kind_of(head, item.text)):
        return True  # it names the same thing, not merely the same owner
    about_asked = bool(shared_stems(asked.topic, content_stems(item.text)))
    near_old, near_question = (float(x) for x in similarity(item.text, [best.text, asked.core or best.text]))
    changed = _changed_values(best, item)
    value_asked = _VALUE_ASKED.search(asked.core)
    if (value_asked and value_asked.group(1).lower() in changed - {"time", "day", "date"}) or (
            asked.kind == "place" and "room" in changed):
        return True  # "which room does my lab group meet in?": "we've been moved to B22" gives another room
    if changed and _supplies(asked.kind, item.text, asked.core) and (
            about_asked or (changed != {"number"} and max(near_old, near_question) >= CORRECTION_SIMILARITY)):
        return True
    if _retracts(best, item, asked):
        return True  # "I quit the food bank, I'm at the animal shelter now" for "I volunteer at the food bank"
    if near_question >= SAME_TOPIC and near_old >= CORRECTION_SIMILARITY and _supplies(asked.kind, item.text, asked.core):
        return True  # "my doctor switched me to insulin" for "what do I take for my diabetes?"
    return about_asked and near_old >= SAME_TOPIC


def _corrected(asked: Asked, best: _Said, matched: list[_Said], evidence: list[_Said],
               question_stems: set[str]) -> _Said:
    """The newest correction of the chosen statement (``_corrects``), among every statement of the user's:
    a correction need not match the question by itself ("I switched to room 318 today")."""
    for item in sorted({id(i): i for i in matched + evidence}.values(), key=lambda i: i.recency):
        if _corrects(asked, best, item, question_stems):
            best = item
    return best


_ORIGINAL = re.compile(r"\b(?:originally|at first|initially|to begin with|to start with|used to|previously|"
                       r"in the first place)\b", re.I)  # a question for the first value, not the newest


def _about_user(messages: list[dict]) -> str | None:
    """Rule 1b: answer a question about the user from the user's own statements in the request."""
    if not messages or messages[-1].get("role") != "user":
        return None
    question = with_apostrophes(_text(messages[-1]))
    asked = _asked(question)
    if asked is None:
        return None
    evidence = _evidence(messages[:-1], " ".join(str(messages[-1].get("name") or "").split()))
    person = _someone_they_told_of(question, evidence)
    if person and not _FIRST_PERSON.search(question.replace(f"{person}'s", " ")) and person.lower() not in \
            {w.lower() for w in ("I",)}:
        asked.person, asked.known_as = person, _introduced_as(person, evidence)
    asked.aliases = _relations_named(asked, evidence)
    if asked.how == "third" and person:
        asked.how = "strong"  # "when is Anouk arriving?" after "my girlfriend Anouk is flying in": their life
    if asked.how in ("weak", "third") and _told_of_it(asked, question, evidence):
        asked.how = "strong"  # "who teaches my tutorial?" after "my tutorial is in room 2.14": their own thing
    if asked.how == "third" and _subject_theirs(question, evidence):
        asked.how = "strong"  # "when is the baby due?" after "we're expecting our first baby in March"
    if asked.how == "weak" and _only_theirs(question, evidence):
        asked.how = "strong"  # "how much metformin do I take?" after "I take metformin for my diabetes"
    question_stems = content_stems(question)
    scores = similarity(asked.core or question, [item.text for item in evidence]) if evidence else []
    ranked: list[tuple[tuple, _Said]] = []
    for item, score in zip(evidence, scores):
        if asked.said:  # "what did I say about X?": the user's own words about X, newest first
            if shared_stems(asked.topic, content_stems(item.text)):
                own_words = item.kind in ("said", "quote")
                ranked.append(((not item.superseded, own_words, item.current, item.recency), item))
            continue
        level, coverage = _match(asked, item, float(score), question_stems)
        if level:
            ranked.append(((not item.superseded, level, coverage, _kind_nearness(asked, item) if level == 1 else 0.0,
                            item.current, item.recency), item))
    if not ranked:
        return DONT_KNOW if asked.how == "strong" else None
    if asked.how == "third" and asked.kind != "person" and campus_nearness(question)[0] >= CAMPUS_SIMILARITY:
        return None  # "where is Pemberton Hall?" asks the campus, even after "my exam is in Pemberton Hall"
    best = replaced = max(ranked, key=lambda pair: pair[0])[1]
    if not asked.said and not _ORIGINAL.search(question):  # a newer correction of the same thing wins over the value
        # it replaced -- unless the question asks for the first value ("where am I from originally?")
        best = _corrected(asked, best, [item for _, item in ranked], evidence, question_stems)
    where = f" (turn {best.turn})" if best.turn is not None else ""
    if best.kind in ("said", "quote"):
        best.shown = _what_holds(best.shown, asked, strict=not _CORRECTION.search(best.text))
        best.shown = _FROM_TO.sub(r"\1 \3", best.shown)  # "I switched from lot C to the multistorey": what holds now
    if best.kind in ("said", "quote") and (best is not replaced or _CORRECTION.search(best.text)):
        older = [replaced] if best is not replaced else [i for _, i in ranked if i.recency < best.recency]
        now = next((v for v in (_new_values(item, best) for item in older) if v), "")
        if now:  # "the Monday meeting got bumped to Tuesday": the quote would name the old value too
            return f"You told me{where} that it changed to {now}."
    if best.kind == "note":
        return f'You told me{where} that your {best.label} is now "{best.shown}".'
    if best.kind == "profile":
        stale = " It may be out of date, so please confirm." if "possibly outdated" in best.label else ""
        return f"Your profile says{where}: {best.shown}.{stale}"
    return f'You told me{where}: "{best.shown}"'


_CLAUSE = re.compile(r"\s*(?:[,;:](?=\s)|\s-\s|\s–\s|\s—\s|\bbut\b)\s*")  # not "11:15", "1,000"
# what no longer holds: a negation, an ending, a past state ("Lena can't make it", "Dr Haddad left", "not the
# sports hall", "Jun moved out", "it used to be in 204")
_NO_LONGER = re.compile(r"\b(?:not|no longer|never|n't|anymore|any more|no more|stopped|quit|left|moved out|"
                        r"retired|resigned|gave up|dropped out|on leave|off sick|"
                        r"cancel+ed|off|instead of|rather than|used to|was|were|previously|before|old)\b|n't\b", re.I)
_ONLY_MARKER = re.compile(r"^\W*(?:(?:scratch that|no|wait|sorry|actually|correction|update|oh|ok|okay|well|"
                          r"so|hmm|i mean)\W*)+$", re.I)


def _retracts(old: _Said, item: _Said, asked: Asked) -> bool:
    """Does a statement say in one clause that what ``old`` said no longer holds -- the clause names a word of
    ``old`` beyond those asked about ("I quit the food bank") -- and in another give a value of the kind asked
    ("I'm at the animal shelter now")?"""
    clauses = [c for c in _CLAUSE.split(item.text.strip()) if c.strip()]
    gone = [c for c in clauses if _NO_LONGER.search(c)]
    kept = [c for c in clauses if c not in gone and not _ONLY_MARKER.match(c)]
    named = content_stems(old.text) - set(asked.topic)
    return bool(gone and kept and any(shared_stems(content_stems(c), named) for c in gone)
                and _supplies(asked.kind, " ".join(kept), asked.core))


def _new_values(old: _Said, new: _Said) -> str:
    """When a correction's words name a value of the statement it corrects ("moved from room 204 to room 318",
    "the Monday meeting got bumped to Tuesday"), the values it gives in their place, as written ("room 318");
    else "" (the correction can be quoted as said)."""
    before = facts_in(old.text).claims
    old_written = {c.written.lower() for c in before}
    shown = new.shown.lower()
    if not any(re.search(rf"(?<![\w.]){re.escape(w)}(?![\w.])", shown) for w in old_written):
        return ""
    changed = _changed_values(old, new)
    values = [c.written for c in facts_in(new.shown).claims if c.kind in changed and c.written.lower() not in old_written]
    return " ".join(dict.fromkeys(values))


# a change from one value to another: "switched from the chess club to the climbing society" -> only the new one
# a change "from X to Y" ("I switched from lot C to the multistorey"); a word after a determiner is a noun, no verb of
# change ("my shift runs from 5pm to 11pm" is a span)
_FROM_TO = re.compile(r"(?<!\bmy )(?<!\bour )(?<!\bthe )(?<!\ba )(?<!\bher )(?<!\bhis )\b((?:switch|swap|mov|chang|transferr|shift|upgrad|downgrad|went|go|gone|convert)\w*"
                      r"(?: (?!from\b)\w+)?) from ((?:(?!\bto\b)[^,;.!?])+?) (to|for|into|onto)\b", re.I)


def _what_holds(sentence: str, asked: Asked, strict: bool = False) -> str:
    """A correction's clauses that state what holds now, without those that say what no longer does ("I no
    longer work at the bar, I'm at the bookshop on Fridays now" -> "I'm at the bookshop on Fridays now") or
    only mark the change ("scratch that"); the whole sentence when no kept clause names the kind asked. With no
    word of a change (``strict``) only a clause naming another value of a kind asked is dropped ("Ms Okonkwo is on
    leave, so Mr Barros is covering as my tutor"), never a reason ("I can't eat shellfish, I'm allergic")."""
    clauses = [c for c in _CLAUSE.split(sentence.strip()) if c.strip()]
    gone = [c for c in clauses if _NO_LONGER.search(c)]
    kept = [c for c in clauses if c not in gone and not _ONLY_MARKER.match(c)]
    if strict and (asked.kind not in ("person", "name_of", "number", "time", "place")
                   or not all(_supplies(asked.kind, c, asked.core) for c in gone)):
        return sentence
    if len(clauses) < 2 or not kept or not gone or \
            not _supplies(asked.kind, " ".join(kept), asked.core):
        return sentence
    kept = [re.sub(r"^(?:so|and|then|now)\s+", "", c.strip(), flags=re.I) for c in kept]  # "..., so Prof X is"
    text = ", ".join(kept).rstrip(".!") + "."
    return text[0].upper() + text[1:]


def _noted(messages: list[dict]) -> str | None:
    """Rule 1b, second half: a statement of profile facts (and no question) is acknowledged."""
    if not messages or messages[-1].get("role") != "user" or "?" in _text(messages[-1]):
        return None
    if _is_ack(_text(messages[-1])) and _text(messages[-1]).strip():
        return "You're welcome!"
    facts = said_facts(_text(messages[-1]))
    return "Noted: " + "; ".join(f["value"] for f in facts) + "." if facts else None


def said_facts(said: str) -> list[dict]:
    """The facts a user's words state by the profile rules (``helpers.core.profile_rules``): ``profile_facts``,
    then "my <attribute> is <value>" sentence by sentence for attributes those did not name."""
    return stated_facts(said, sentences(said))
