"""Seeded conversations for evaluating memory: facts that change, repeat and are asked about in many ways.

``generate(seed)`` builds the user side of a long conversation with a student (the session
writes the assistant side). From the seed it picks which facts the student states, words each
statement, and schedules:

- **corrections** -- a later turn gives a new value ("Actually, my locker number is 5502 now.");
- **restatements** -- the same value again, sometimes word for word (duplicates);
- **probes** -- questions about a fact, worded differently from the statement and from each
  other, some asked more than once, always at least ``min_gap`` turns after the latest statement
  (so the fact has left a window of that many turns);
- **campus questions** answered with the tools, small talk, and turns marked ``long`` where the
  evaluation asks for a long assistant reply.

Every probe knows the value that is current when it is asked and the values it replaced
(``stale``), so an evaluation can check both that the evidence is in the context and that an
old value never stands there unmarked. ``scripted()`` is the fixed 200-turn conversation the
evaluation used before (42 facts, each stated once and probed once), kept as one case.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

from helpers.knowledge import load_knowledge_base

# attribute -> (values: first, then corrections), probes (worded differently from each other)
ATTRIBUTES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "locker number": (
        ("4471", "5502", "6318", "7093"),
        ("What's my locker number?", "Which locker is mine again?", "Remind me of my locker number."),
    ),
    "academic advisor": (
        ("Dr. Hollis Varga", "Dr. Amara Quist", "Dr. Tobias Wren", "Dr. Noor Haddad"),
        ("Who is my academic advisor?", "Who advises me academically?", "Remind me who my advisor is."),
    ),
    "dorm room": (
        ("Wren House 312", "Osprey Hall 118", "Birch Court 27", "Heron Lodge 405"),
        ("What is my dorm room?", "Where do I live on campus?", "Which room am I in?"),
    ),
    "lab partner": (
        ("Ines Moreau", "Kofi Mensah", "Yuki Tanabe", "Lars Eklund"),
        ("Who is my lab partner?", "Who do I work with in the lab?", "Remind me of my lab partner."),
    ),
    "cat's name": (
        ("Biscuit", "Pepper", "Marzipan", "Juniper"),
        ("What's my cat called?", "What did I name my cat?", "Remind me of my cat's name."),
    ),
    "student ID": (
        ("LU-58213", "LU-60447", "LU-71902", "LU-83356"),
        ("What is my student ID?", "Which student number do I have?", "Remind me of my student ID."),
    ),
    "thesis topic": (
        (
            "coral bleaching in cold reefs",
            "soil microbes in alpine meadows",
            "tidal energy in narrow straits",
            "bird song in city parks",
        ),
        ("What is my thesis about?", "What am I writing my thesis on?", "Remind me of my thesis topic."),
    ),
    "textbook budget": (
        ("120 dollars", "95 dollars", "160 dollars", "75 dollars"),
        ("What is my textbook budget?", "How much can I spend on textbooks?", "Remind me of my book budget."),
    ),
    "hometown": (
        ("Port Ellery", "Cedar Falls", "Marrow Bay", "Linden Cross"),
        ("Where is my hometown?", "Where did I grow up?", "Remind me where I'm from."),
    ),
    "exam seat": (
        ("C-42", "D-17", "A-08", "F-33"),
        ("What is my exam seat?", "Where do I sit for the exam?", "Remind me of my exam seat."),
    ),
    "part-time job": (
        ("the Quarry Street bakery", "the campus bookstore", "the Rec Centre front desk", "the Thistle Cafe"),
        ("Where is my part-time job?", "Where do I work part-time?", "Remind me of my side job."),
    ),
    "minor": (
        ("Scandinavian linguistics", "marine biology", "art history", "applied statistics"),
        ("What is my minor?", "What did I pick as a minor?", "Remind me of my minor subject."),
    ),
    "peer mentor": (
        ("Jonah Ekwueme", "Priscilla Dahl", "Mateo Ruiz", "Sana Iqbal"),
        ("Who is my peer mentor?", "Who mentors me in the peer programme?", "Remind me of my mentor's name."),
    ),
    "parking permit": (
        ("P-7730", "P-8841", "P-9152", "P-6619"),
        (
            "What is my parking permit?",
            "Which permit do I park with?",
            "Remind me of my parking permit number.",
        ),
    ),
    "hackathon team": (
        ("Byte Lanterns", "Null Pointers", "Query Quokkas", "Stack Sparrows"),
        (
            "What is my hackathon team called?",
            "Which team am I on for the hackathon?",
            "Remind me of my hackathon team.",
        ),
    ),
    "scholarship": (
        ("the Calloway Award", "the Brightwater Grant", "the Ashdown Bursary", "the Fenwick Prize"),
        ("Which scholarship do I have?", "What award funds my studies?", "Remind me of my scholarship."),
    ),
    "laptop": (
        ("a ThinkPad X13", "a Framework 13", "a MacBook Air", "a Dell XPS 15"),
        ("What laptop do I have?", "Which computer do I use?", "Remind me what laptop I own."),
    ),
    "roommate": (
        ("Dev Castellanos", "Aino Virtanen", "Rafael Okoro", "Mina Sato"),
        ("Who is my roommate?", "Who do I share my room with?", "Remind me of my roommate's name."),
    ),
    "emergency contact": (
        ("my uncle Ravi Sandhu", "my aunt Elena Petrova", "my cousin Tariq Aziz", "my friend Hana Kim"),
        (
            "Who is my emergency contact?",
            "Who should be called in an emergency?",
            "Remind me of my emergency contact.",
        ),
    ),
    "meal plan": (
        ("the Silver 14 plan", "the Gold 19 plan", "the Bronze 10 plan", "the Flex 200 plan"),
        ("Which meal plan am I on?", "What dining plan do I have?", "Remind me of my meal plan."),
    ),
    "research lab": (
        (
            "the Tidewater Ecology Lab",
            "the Quarry Robotics Lab",
            "the Halvorsen Vision Lab",
            "the Marsh Genomics Lab",
        ),
        ("Which research lab am I in?", "Where do I do research?", "Remind me of my lab."),
    ),
    "mailbox number": (
        ("2286", "3197", "4058", "1164"),
        ("What is my mailbox number?", "Which mailbox is mine?", "Remind me of my mailbox number."),
    ),
    "choir section": (
        ("second alto", "first soprano", "baritone", "second tenor"),
        ("Which choir section am I in?", "What part do I sing in choir?", "Remind me of my choir section."),
    ),
    "dentist appointment": (
        ("on January 9", "on February 14", "on March 3", "on January 27"),
        ("When is my dentist appointment?", "When do I see the dentist?", "Remind me of my dentist date."),
    ),
    "bike": (
        ("a green Brompton", "a red Trek hybrid", "a black fixie", "a blue cargo bike"),
        ("What kind of bike do I have?", "Which bike do I ride?", "Remind me what my bike is."),
    ),
    "language partner": (
        ("Sigrun from Reykjavik", "Paulo from Lisbon", "Keiko from Osaka", "Olga from Tartu"),
        (
            "Who is my language partner?",
            "Who do I practise languages with?",
            "Remind me of my language exchange partner.",
        ),
    ),
    "graduation year": (
        ("2029", "2030", "2028", "2031"),
        ("What is my graduation year?", "When do I graduate?", "Remind me of my graduation year."),
    ),
    "favourite study spot": (
        (
            "the Harrow Library mezzanine",
            "the Maker Lab loft",
            "the window seat at Fenn Hall",
            "the quiet room in Birch Court",
        ),
        (
            "What's my favourite study spot?",
            "Where do I like to study?",
            "Remind me of my favourite place to study.",
        ),
    ),
}
STATE = ("My {a} is {v}.", "By the way, my {a} is {v}.", "Quick note: my {a} is {v}.",
         "Just so you know, my {a} is {v}.", "For the record, my {a} is {v}.")
CORRECT = ("Actually, my {a} is {v} now.", "Correction: my {a} is {v}.",
           "Sorry, I got that wrong: my {a} is {v}.", "Update: my {a} is now {v}.")
RESTATE = ("As I said, my {a} is {v}.", "My {a} is still {v}.", "Just confirming, my {a} is {v}.")
SMALL_TALK = ("ok thanks", "thanks!", "great", "got it", "cool, thank you", "ok")
CAMPUS_FORMS = ("Tell me about {t}.", "What should I know about {t}?", "Can you describe {t}?",
                "I was wondering about {t}. What is it like?")
FOLLOW_UPS = ("How many days until that?", "How many days until Friday?", "How many days until Monday?")
LONG_FORMS = ("Give me a full overview of {t}, with every detail you have.",
              "Explain everything about {t} in depth, please.")


@dataclass
class Turn:
    """One user message and what it is for (``statement``, ``probe``, ``campus``, ``long``, ...)."""

    user: str
    kind: str
    attribute: str | None = None


@dataclass
class Probe:
    """A question about a fact: the value current when asked, and the older values it replaced."""

    turn: int
    question: str
    attribute: str
    current: str
    stale: tuple[str, ...] = ()
    stated_at: tuple[int, ...] = ()  # turns that stated the current value


@dataclass
class Conversation:
    """The user's turns and the probes among them."""

    name: str
    turns: list[Turn]
    probes: list[Probe] = field(default_factory=list)

    @property
    def corrected_probes(self) -> list[Probe]:
        """Probes asked after their fact was corrected at least once."""
        return [p for p in self.probes if p.stale]


def _campus_titles() -> list[str]:
    """Titles of the shipped campus knowledge base (installed or in a checkout), archived ones left out."""
    return [entry.title for entry in load_knowledge_base() if "archived" not in entry.title.lower()]


def generate(seed: int, n_turns: int = 200, n_facts: int = 20, min_gap: int = 8, long_share: float = 0.06
             ) -> Conversation:
    """A seeded conversation (see the module docstring); the same seed always gives the same turns."""
    if n_turns < 8 * n_facts // 2 or n_facts > len(ATTRIBUTES):
        raise ValueError(f"{n_turns} turns are too few for {n_facts} facts (use at least {4 * n_facts} "
                         f"turns and at most {len(ATTRIBUTES)} facts)")
    rng = random.Random(seed)
    slots: list[Turn | None] = [None] * n_turns
    free = lambda lo, hi: [t for t in range(max(lo, 0), min(hi, n_turns)) if slots[t] is None]  # noqa: E731
    events: list[tuple[int, str, str, str]] = []  # (turn, attribute, kind, value)
    for attribute in rng.sample(sorted(ATTRIBUTES), n_facts):
        values = list(ATTRIBUTES[attribute][0])
        rng.shuffle(values)
        first = rng.choice(free(0, int(n_turns * 0.45)))
        slots[first] = Turn(rng.choice(STATE).format(a=attribute, v=values[0]), "statement", attribute)
        events.append((first, attribute, "statement", values[0]))
        current, last = values[0], first
        for step in range(rng.choice((0, 0, 1, 1, 2))):  # corrections
            options = free(last + 3, n_turns - min_gap - 1)
            if not options:
                break
            last = rng.choice(options[: max(1, len(options) // 2)])
            current = values[step + 1]
            slots[last] = Turn(rng.choice(CORRECT).format(a=attribute, v=current), "correction", attribute)
            events.append((last, attribute, "correction", current))
        for _ in range(rng.choice((0, 1, 1, 2))):  # restatements, after the statement or a correction
            options = free(first + 2, n_turns - min_gap - 1)
            if not options:
                break
            turn = rng.choice(options)
            value = next(v for t, a, _, v in sorted(events, reverse=True) if a == attribute and t < turn)
            text = slots[first].user if rng.random() < 0.4 and value == values[0] else \
                rng.choice(RESTATE).format(a=attribute, v=value)
            slots[turn] = Turn(text, "restatement", attribute)
            events.append((turn, attribute, "restatement", value))
    probes = []
    for attribute in sorted({a for _, a, _, _ in events}):
        phrasings = list(ATTRIBUTES[attribute][1])
        rng.shuffle(phrasings)
        for i in range(rng.choice((1, 2, 2, 3))):  # some probes are asked more than once
            said = sorted(t for t, a, _, _ in events if a == attribute)
            options = [t for t in free(said[0] + min_gap, n_turns)
                       if not any(0 <= t - s < min_gap for s in said)]
            if not options:
                break
            turn = rng.choice(options)
            question = phrasings[i % len(phrasings)] if rng.random() < 0.7 else phrasings[0]
            slots[turn] = Turn(question, "probe", attribute)
            history = sorted((t, kind, v) for t, a, kind, v in events if a == attribute and t < turn)
            current = history[-1][2]
            stale = tuple(dict.fromkeys(v for _, _, v in history if v != current))
            stated = tuple(t for t, _, v in history if v == current)
            probes.append(Probe(turn, question, attribute, current, stale, stated))
    titles = _campus_titles()
    for t in range(n_turns):
        if slots[t] is not None:
            continue
        roll = rng.random()
        if roll < 0.12:
            slots[t] = Turn(rng.choice(SMALL_TALK), "small talk")
        elif roll < 0.12 + long_share:
            slots[t] = Turn(rng.choice(LONG_FORMS).format(t=rng.choice(titles)), "long")
        elif roll < 0.30 and t > 0 and slots[t - 1] is not None and slots[t - 1].kind == "campus":
            slots[t] = Turn(rng.choice(FOLLOW_UPS), "campus")
        else:
            slots[t] = Turn(rng.choice(CAMPUS_FORMS).format(t=rng.choice(titles)), "campus")
    turns = [s for s in slots if s is not None]
    return Conversation(f"seed {seed}", turns, sorted(probes, key=lambda p: p.turn))


# The conversation the evaluation used before: each fact stated once, in its own words, and probed once.
SCRIPTED_FACTS = [
    ("Hi! My name is Tamsin Okafor, by the way.", "What is my name?", "Tamsin Okafor"),
    ("I'm vegetarian, so keep that in mind for dining tips.", "What did I say about my diet?", "vegetarian"),
    ("I can't do mornings because of my bakery shifts.", "What did I say about mornings?",
     "can't do mornings"),
    ("My goal is to finish the robotics certificate by June.", "What is my goal this year?",
     "robotics certificate"),
    ("I prefer the north shuttle loop.", "Which shuttle did I say I prefer?", "north shuttle"),
    ("My locker number is 4471.", "What's my locker number?", "4471"),
    ("My student ID is LU-58213.", "What is my student ID?", "LU-58213"),
    ("My academic advisor is Dr. Hollis Varga.", "Who is my academic advisor?", "Hollis Varga"),
    ("My lab partner is Ines Moreau.", "Who is my lab partner?", "Ines Moreau"),
    ("My dorm room is Wren House 312.", "What is my dorm room?", "Wren House 312"),
    ("My bike is a green Brompton folding bike.", "What kind of bike do I have?", "green Brompton"),
    ("My thesis is about coral bleaching in cold reefs.", "What is my thesis about?", "coral bleaching"),
    ("My textbook budget is 120 dollars this term.", "What is my textbook budget?", "120 dollars"),
    ("My sister Mira visits on December 12.", "When does my sister visit?", "December 12"),
    ("My cat is called Biscuit.", "What's my cat called?", "Biscuit"),
    ("My hometown is Port Ellery, up the coast.", "Where is my hometown?", "Port Ellery"),
    ("I'm allergic to penicillin.", "What am I allergic to?", "penicillin"),
    ("My piano lessons are on Wednesdays at 17:30.", "When are my piano lessons?", "17:30"),
    ("My exam seat number is C-42.", "What is my exam seat number?", "C-42"),
    ("My phone number ends in 0917.", "What does my phone number end in?", "0917"),
    ("My part-time job is at the Quarry Street bakery.", "Where is my part-time job?",
     "Quarry Street bakery"),
    ("My favourite study spot is the Harrow Library mezzanine.", "What's my favourite study spot?",
     "mezzanine"),
    ("My minor is Scandinavian linguistics.", "What is my minor?", "Scandinavian linguistics"),
    ("My mentor in the peer programme is Jonah Ekwueme.", "Who is my peer mentor?", "Jonah Ekwueme"),
    ("My car is a blue 2009 Corolla.", "What car do I drive?", "2009 Corolla"),
    ("My parking permit number is P-7730.", "What is my parking permit number?", "P-7730"),
    ("My team in the hackathon is called Byte Lanterns.", "What is my hackathon team called?",
     "Byte Lanterns"),
    ("My running club meets at the Osprey track.", "Where does my running club meet?", "Osprey track"),
    ("My scholarship is the Calloway Award.", "Which scholarship do I have?", "Calloway Award"),
    ("My laptop is a ThinkPad X13 with a cracked hinge.", "What laptop do I have?", "ThinkPad X13"),
    ("My graduation year is 2029.", "What is my graduation year?", "2029"),
    ("My roommate is Dev Castellanos.", "Who is my roommate?", "Dev Castellanos"),
    ("My language exchange partner speaks Icelandic.", "What language does my exchange partner speak?",
     "Icelandic"),
    ("My blood type is O negative.", "What is my blood type?", "O negative"),
    ("My emergency contact is my uncle Ravi Sandhu.", "Who is my emergency contact?", "Ravi Sandhu"),
    ("My meal plan is the Silver 14 plan.", "Which meal plan am I on?", "Silver 14"),
    ("My research lab is the Tidewater Ecology Lab.", "Which research lab am I in?", "Tidewater Ecology Lab"),
    ("My favourite professor is Professor Anneli Strand.", "Who is my favourite professor?", "Anneli Strand"),
    ("My bank card PIN reminder word is marigold.", "What is my PIN reminder word?", "marigold"),
    ("My mailbox number at the student union is 2286.", "What is my mailbox number?", "2286"),
    ("My choir section is second alto.", "Which choir section am I in?", "second alto"),
    ("My dentist appointment is on January 9.", "When is my dentist appointment?", "January 9"),
]


def scripted(n_turns: int = 200, seed: int = 11) -> Conversation:
    """The earlier fixed conversation: 42 facts, each stated once and probed once, 30-70 turns later."""
    rng = random.Random(seed)
    titles = _campus_titles()
    slots: list[Turn | None] = [None] * n_turns
    probes = []
    spacing = max(1, (n_turns - 75) // len(SCRIPTED_FACTS))
    for i, (statement, question, evidence) in enumerate(SCRIPTED_FACTS):
        fact_turn = min(i * spacing, n_turns - 40)
        while slots[fact_turn] is not None:
            fact_turn += 1
        slots[fact_turn] = Turn(statement, "statement", evidence)
        target = min(fact_turn + 30 + rng.randint(0, 40), n_turns - 1)
        probe_turn = next((t for t in list(range(target, n_turns)) + list(range(target, fact_turn + 29, -1))
                           if slots[t] is None), None)
        if probe_turn is None:
            raise ValueError(f"no free turn to probe fact {i}; use more turns")
        slots[probe_turn] = Turn(question, "probe", evidence)
        probes.append(Probe(probe_turn, question, evidence, evidence, (), (fact_turn,)))
    for t in range(n_turns):
        if slots[t] is None:
            if rng.random() < 0.15:
                slots[t] = Turn(rng.choice(SMALL_TALK), "small talk")
            else:
                slots[t] = Turn(rng.choice(CAMPUS_FORMS).format(t=rng.choice(titles)), "campus")
    return Conversation("scripted", [s for s in slots if s is not None], sorted(probes, key=lambda p: p.turn))
