"""The phrase tables of ``convgen`` (data, no logic): the facts a student states and how each turn is worded.

``ATTRIBUTES`` gives each fact its values (the first, then the corrections) and its probes, worded
differently from each other; ``STATE``, ``CORRECT`` and ``RESTATE`` word a statement, a correction and a
restatement; ``SMALL_TALK``, ``CAMPUS_FORMS``, ``FOLLOW_UPS`` and ``LONG_FORMS`` fill the other turns.
``SCRIPTED_FACTS`` is the fixed conversation's (statement, probe, evidence) triples.
"""

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
