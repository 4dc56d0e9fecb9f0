"""The exercises of notebooks 01-03: each plausible wrong answer gets the hint about its own mistake, each
independently written right answer passes, the checks pass on any day (they never read the clock), and on a
weak real server (scripted here) they give the right verdict or say that the server cannot decide."""
from collections import Counter

import pytest
from exercise_support import run
from scripted import ScriptedServer

from helpers.llm.config import load_settings
from helpers.exercises import nb01, nb02, nb03

EXERCISES = [nb01.exercise_1, nb01.exercise_2, nb02.exercise_1, nb02.exercise_2, nb03.exercise_1, nb03.exercise_2]


def prompt(text: str) -> str:
    return f"my_system_prompt = {text!r}"


def entry(id_: str, title: str, text: str, question: str) -> str:
    return f"my_entry = Entry(id={id_!r}, title={title!r}, text={text!r})\nmy_question = {question!r}"


def answer(text: str) -> str:
    return f"my_answer = {text!r}"


# (exercise, the learner's cell, what the hint must say)
WRONG = [
    (nb01.exercise_1, nb01.exercise_1.stub, "says nothing about how long an answer may be"),
    (nb01.exercise_1, prompt("Never answer in one sentence."), "asks for the opposite: 'Never answer in one sentence'"),
    (nb01.exercise_1, prompt("Do not answer in one sentence; write a paragraph."),
     "asks for the opposite: 'Do not answer in one sentence'"),
    (nb01.exercise_1, prompt("Don't be brief."), "asks for the opposite"),
    (nb01.exercise_1, prompt("Answer in two sentences."), "allows up to 2 sentences"),
    (nb01.exercise_1, prompt("Answer in at most three sentences."), "allows up to 3 sentences"),
    (nb01.exercise_1, prompt("Answer in one sentence. Actually, write a detailed paragraph."),
     "another part of your prompt asks for longer answers"),
    (nb01.exercise_1, prompt("Be thorough and detailed."), "asks for long answers"),
    (nb01.exercise_1, prompt(""), "must be a non-empty string"),
    (nb01.exercise_1, prompt("Answer in up to three sentences."), "allows up to 3 sentences"),
    (nb01.exercise_1, prompt("Answer in one sentence, except for greetings."),
     "makes an exception ('Answer in one sentence, except for greetings')"),
    (nb01.exercise_1, prompt("Answer in one sentence. Greetings may be longer."),
     "makes an exception ('Greetings may be longer')"),
    (nb01.exercise_1, prompt("Use one sentence unless the question needs more detail."), "makes an exception"),
    (nb01.exercise_1, prompt("Keep answers to one sentence; when greeted, introduce yourself and list what you do."),
     "makes an exception ('when greeted, introduce yourself"),
    (nb01.exercise_1, prompt("Answer in one sentence if needed."), "makes an exception"),

    (nb01.exercise_2, nb01.exercise_2.stub, "join_stream returned ''"),
    (nb01.exercise_2, "def join_stream(stream):\n    return ''.join(c.choices[0].delta.content or '' for c in stream)",
     "choices list is empty"),
    (nb01.exercise_2, "def join_stream(stream):\n    text = ''\n    for c in stream:\n        if c.choices:\n"
                      "            text += c.choices[0].delta.content\n    return text", "carry no text"),
    (nb01.exercise_2, "def join_stream(stream):\n    return ' '.join(c.choices[0].delta.content for c in stream\n"
                      "                    if c.choices and c.choices[0].delta.content)",
     "put ' ' between the pieces"),
    (nb01.exercise_2, "def join_stream(stream):\n    text = ''\n    for c in stream:\n"
                      "        if c.choices and c.choices[0].delta.content:\n"
                      "            text = c.choices[0].delta.content\n    return text", "only the last piece"),
    (nb01.exercise_2, "def join_stream(stream):\n    for c in stream:\n"
                      "        if c.choices and c.choices[0].delta.content:\n"
                      "            return c.choices[0].delta.content\n    return ''", "only the first piece"),
    (nb01.exercise_2, "def join_stream(stream):\n    return [c.choices[0].delta.content for c in stream\n"
                      "            if c.choices and c.choices[0].delta.content]", "returned a list"),
    (nb01.exercise_2, "def join_stream(stream):\n"
                      "    return ''.join(c.choices[0].message.content or '' for c in stream if c.choices)",
     "not in .message"),
    (nb01.exercise_2, "def join_stream(stream):\n    chunks = list(stream)[1:]  # the first chunk only says the role\n"
                      "    return ''.join(c.choices[0].delta.content or '' for c in chunks if c.choices)",
     "the start of the reply is missing"),
    (nb01.exercise_2, "def join_stream(stream):\n    chunks = list(stream)[:-2]  # the finish and usage chunks\n"
                      "    return ''.join(c.choices[0].delta.content or '' for c in chunks if c.choices)",
     "the end of the reply is missing"),
    (nb01.exercise_2, "def join_stream(stream):\n    text = ''\n    for c in stream:\n"
                      "        if not c.choices or c.choices[0].delta.role:\n            continue\n"
                      "        text += c.choices[0].delta.content or ''\n    return text",
     "the same chunk as the role"),
    (nb01.exercise_2, "def join_stream(stream):\n    text = ''\n    for c in stream:\n"
                      "        if c.choices and c.choices[0].finish_reason:\n            break\n"
                      "        if c.choices:\n            text += c.choices[0].delta.content or ''\n    return text",
     "the same chunk as finish_reason"),

    (nb02.exercise_1, nb02.exercise_1.stub, "too loose at 0.0"),
    (nb02.exercise_1, "my_threshold = 0.1", "too loose at 0.1"),
    (nb02.exercise_1, "my_threshold = 0.5", "too strict at 0.5"),
    (nb02.exercise_1, "my_threshold = 0.9", "too strict at 0.9"),
    (nb02.exercise_1, "my_threshold = '0.3'", "must be a number"),
    (nb02.exercise_1, "my_threshold = 30", "between -1 and 1"),
    (nb02.exercise_1, "my_threshold = True", "must be a number"),

    (nb02.exercise_2, nb02.exercise_2.stub, "lowercase slug"),
    (nb02.exercise_2, entry("club-ai", "AI", "Robots.", "Robots?"), "already used by 'AI Club'"),
    (nb02.exercise_2, entry("club-ai-two", "AI Club meeting day",
                            "The AI Club meets every Monday. When does the AI club meet? On Mondays.",
                            "When does the AI club meet on Mondays?"), "now wins the existing question"),
    (nb02.exercise_2, 'e = kb.get("club-ai")\nmy_entry = Entry(id="club-ai-copy", title=e.title, text=e.text)\n'
                      'my_question = "When does the AI club meet?"',
     "already answers 'When does the AI club meet?' with [club-ai]"),
    (nb02.exercise_2, entry("library-opening", "Library opening hours",
                            "Harrow Library is open from 08:00 to 22:00 on weekdays.", "When is the library open?"),
     "already answers 'When is the library open?' with [library-hours]"),
    (nb02.exercise_2, entry("chess-society", "Chess Club", "The Chess Club meets weekly; all levels welcome.",
                            "Is there a chess club?"), "with [club-chess]"),
    (nb02.exercise_2, entry("club-birds", "Birdwatching Society", "Walks on Saturdays.", "When is the library open?"),
     "the best match for 'When is the library open?' is 'Harrow Library opening hours'"),
    (nb02.exercise_2, entry("club-birds", "Birdwatching Society", "Walks on Saturdays.",
                            "Who won the basketball game last weekend?"), "no passage scores"),
    (nb02.exercise_2, entry("club-birds", "", "", "Is there a birdwatching club?"), "needs a title and a text"),
    (nb02.exercise_2, entry("club-birds", "Birdwatching Society", "Walks on Saturdays.", ""), "must be a question"),
    (nb02.exercise_2, entry("club-birds", "Is there a club for watching birds?", "Yes, there is one.",
                            "Is there a club for watching birds?"), "repeats the question word for word"),
    (nb02.exercise_2, entry("club-birds", "Birdwatching Society", "Walks on Saturdays.", "Is there a birdwatching club?"),
     "your entry's text has 3 words"),

    (nb03.exercise_1, nb03.exercise_1.stub,
     "did not approve it: the passage does not say 10:00, 12:00, Mondays, Wrenfield Hall"),
    (nb03.exercise_1, answer("Office hours are on Tuesdays from 14:00 to 16:00 in Halvorsen Hall."),
     "cite the entry you answer from"),
    (nb03.exercise_1, answer("Office hours are on Tuesdays from 14:00 to 16:00 in Halvorsen Hall [club-ai]."),
     "cite the entry you answer from"),
    (nb03.exercise_1, answer("Office hours are held in Halvorsen Hall [office-hours-cs]."),
     "say the day and the time"),
    (nb03.exercise_1, answer("Office hours are on Tuesdays in Halvorsen Hall [office-hours-cs]."),
     "say the day and the time"),
    (nb03.exercise_1, answer("Office hours are on Tuesdays from 15:00 to 17:00 in Halvorsen Hall [office-hours-cs]."),
     "does not say 15:00, 17:00"),
    (nb03.exercise_1, answer("Office hours are on Tuesdays from 14:00 to 16:00 in Halvorsen Hall, Room 204 "
                             "[office-hours-cs]."), "does not say Room 204"),
    (nb03.exercise_1, answer("Office hours are on Tuesdays at 19:00 in Ostrow Hall [office-hours-cs]."),
     "does not say 19:00, Ostrow Hall"),
    (nb03.exercise_1, answer(""), "must be the text of an answer"),
    (nb03.exercise_1, answer("Office hours are on Tuesdays from 14:00 to 16:00 in wrenfield hall [office-hours-cs]."),
     "does not say wrenfield hall"),
    (nb03.exercise_1, answer("Office hours are on Tuesdays from 14:00 to 16:00 with professor smith "
                             "[office-hours-cs]."), "does not say professor smith"),
    # a wrong place in lower case, with no capital for the judge to read as a name
    (nb03.exercise_1, answer("Office hours are on Tuesdays from 14:00 to 16:00 in the library [office-hours-cs]."),
     "does not say the library"),
    (nb03.exercise_1, answer("Office hours: every tuesday, 14:00-16:00, in the halvorsen annex [office-hours-cs]."),
     "does not say the halvorsen annex"),
    (nb03.exercise_1, answer("office hours are tuesdays 14:00 to 16:00 at the cafe in wrenfield [office-hours-cs]."),
     "does not say the cafe, wrenfield"),
    # a way of meeting the passage does not offer
    (nb03.exercise_1, answer("Office hours are on Tuesdays from 14:00 to 16:00, online [office-hours-cs]."),
     "names no way to meet at a distance"),
    (nb03.exercise_1, answer("Office hours are Tuesdays 14:00-16:00 over Zoom [office-hours-cs]."),
     "says 'Zoom', but the passage names no way to meet at a distance"),
    (nb03.exercise_1, answer("Office hours are on Tuesdays from 14:00 to 16:00 by appointment [office-hours-cs]."),
     "the passage says no appointment is needed"),
    (nb03.exercise_1, answer("Book a slot with a professor for Tuesday, 14:00 to 16:00, in Halvorsen Hall "
                             "[office-hours-cs]."), "says 'Book', but the passage says no appointment is needed"),

    (nb03.exercise_2, nb03.exercise_2.stub, "none expects off_topic, unsafe yet"),
    (nb03.exercise_2, 'my_requests = ["Where is the library?", "Tell me a joke"]', "must be a dict"),
    (nb03.exercise_2, 'my_requests = {"Where is the library?": "campus", "Tell me a joke": "off_topic", '
                      '"How do I steal a bike?": "harmful"}', "'harmful' is not one of them"),
    (nb03.exercise_2, 'my_requests = {"When does the AI club meet?": "campus", "Tell me a joke": "off_topic", '
                      '"How do I steal a bike?": "unsafe"}', "is one of the notebook's examples"),
    (nb03.exercise_2, 'my_requests = {"when does the AI club meet": "campus", "Tell me a joke": "off_topic", '
                      '"How do I steal a bike?": "unsafe"}', "is one of the notebook's examples"),
    (nb03.exercise_2, 'my_requests = {"Where is the library?": "off_topic", "Tell me a joke": "off_topic", '
                      '"How do I steal a bike?": "unsafe", "When is the chess club?": "campus"}',
     "'Where is the library?' was classified campus"),
    (nb03.exercise_2, 'my_requests = {"Where is the library?": "campus", "Tell me a joke": "off_topic", '
                      '"How do I join the chess club?": "unsafe"}', "asks for nothing harmful"),
    (nb03.exercise_2, 'my_requests = {"Where is the library?": "campus", '
                      '"How can I read my roommate\'s email without her knowing?": "off_topic", '
                      '"How do I steal a bike?": "unsafe"}', "that is unsafe, not just off topic"),
    (nb03.exercise_2, 'my_requests = {"Who won the World Cup in 2018?": "campus", "Tell me a joke": "off_topic", '
                      '"How do I steal a bike?": "unsafe"}', "nothing in the campus knowledge base is near it"),
]

RIGHT = [
    (nb01.exercise_1, nb01.exercise_1.solution_code),
    (nb01.exercise_1, prompt("Answer in a single sentence.")),
    (nb01.exercise_1, prompt("Answer briefly.")),
    (nb01.exercise_1, prompt("Answer in 1 sentence.")),
    (nb01.exercise_1, prompt("Keep it short: one sentence.")),
    (nb01.exercise_1, prompt("You are Larkspur's campus helper. Reply in at most one sentence, greetings included.")),
    (nb01.exercise_1, prompt("One short sentence, never two.")),
    (nb01.exercise_1, prompt("Answer in one sentence, no exceptions, not even for greetings.")),
    (nb01.exercise_1, prompt("Every reply, even to a hello, is a single sentence.")),

    (nb01.exercise_2, nb01.exercise_2.solution_code),
    (nb01.exercise_2, "def join_stream(stream):\n    text = ''\n    for chunk in stream:\n"
                      "        for choice in chunk.choices:\n            text += choice.delta.content or ''\n"
                      "    return text"),
    (nb01.exercise_2, "def join_stream(stream):\n    return ''.join(c.choices[0].delta.content for c in stream\n"
                      "                   if c.choices and c.choices[0].delta.content is not None)"),
    (nb01.exercise_2, "def join_stream(stream):\n    parts = []\n    for chunk in stream:\n"
                      "        for choice in chunk.choices:\n            if choice.delta.content:\n"
                      "                parts.append(choice.delta.content)\n"
                      "            if choice.finish_reason:\n                return ''.join(parts)\n"
                      "    return ''.join(parts)"),

    (nb02.exercise_1, nb02.exercise_1.solution_code),
    (nb02.exercise_1, "my_threshold = 0.32"),
    (nb02.exercise_1, "my_threshold = 0.34"),

    (nb02.exercise_2, nb02.exercise_2.solution_code),
    (nb02.exercise_2, entry("club-beekeeping", "Beekeeping Club",
                            "The Beekeeping Club looks after four hives behind the greenhouse. New members learn to "
                            "handle bees and harvest honey.", "Can I learn beekeeping on campus?")),
    (nb02.exercise_2, entry("studio-pottery", "Pottery studio",
                            "The pottery studio in the arts building has six wheels and a kiln. Students may book a "
                            "wheel for two hours at a time.", "Where can I do pottery?")),
    (nb02.exercise_2, entry("event-chess-tournament", "Spring chess tournament",
                            "The spring chess tournament is held on 14 March in the Wrenfield Student Union. Entry is "
                            "free and prizes go to the top three players.", "When is the spring chess tournament?")),
    (nb02.exercise_2, entry("club-birdwatching", "Birdwatching Society: questions and answers",
                            "Is there a club for watching birds? Yes: the Birdwatching Society walks the arboretum "
                            "every Saturday at 07:00, and binoculars can be borrowed.",
                            "Is there a club for watching birds?")),

    (nb03.exercise_1, nb03.exercise_1.solution_code),
    (nb03.exercise_1, answer("CS office hours: Tue 2pm-4pm, third floor of Halvorsen Hall [office-hours-cs].")),
    (nb03.exercise_1, answer("Every Tuesday, 2 to 4 p.m., Halvorsen Hall rooms 310 to 318 [office-hours-cs].")),
    (nb03.exercise_1, answer("office hours are every tuesday from 14:00 to 16:00 in halvorsen hall, third floor; "
                             "no appointment is needed [office-hours-cs].")),
    (nb03.exercise_1, answer("Drop in on Tuesdays between 2pm and 4pm, in person, at rooms 310-318 of Halvorsen "
                             "Hall, without booking [office-hours-cs].")),
    (nb03.exercise_1, answer("On campus, in Halvorsen Hall’s CS rooms on the third floor: Tuesday 14:00-16:00 "
                             "[office-hours-cs].")),

    (nb03.exercise_2, nb03.exercise_2.solution_code),
    (nb03.exercise_2, 'my_requests = {"Where is the IT help desk?": "campus", "Recommend a movie for tonight": '
                      '"off_topic", "How do I break into the chemistry lab at night?": "unsafe"}'),
    (nb03.exercise_2, 'my_requests = {"How do I get a replacement student ID card?": "campus", '
                      '"When does the library open on Sunday?": "campus", "Give me a recipe for pancakes": '
                      '"off_topic", "How can I copy my friend\'s essay without the teacher noticing?": "unsafe"}'),
]


def test_every_exercise_has_five_wrong_answers_and_two_right_ones():
    wrong, right = Counter(e.key for e, *_ in WRONG), Counter(e.key for e, _ in RIGHT)
    assert all(wrong[e.key] >= 5 and right[e.key] >= 2 for e in EXERCISES), (wrong, right)


@pytest.mark.parametrize("exercise,code,says", WRONG, ids=[f"{e.key}-{i}" for i, (e, *_) in enumerate(WRONG)])
def test_a_wrong_answer_gets_its_own_hint(exercise, code, says):
    passed, printed = run(exercise, code)
    assert not passed and printed.startswith("✗") and says in printed, printed


@pytest.mark.parametrize("exercise,code", RIGHT, ids=[f"{e.key}-{i}" for i, (e, _) in enumerate(RIGHT)])
def test_a_right_answer_passes(exercise, code):
    passed, printed = run(exercise, code)
    assert passed and printed.startswith("✓"), printed


@pytest.mark.parametrize("when", ["2026-12-02T15:30:00-08:00", "2027-06-05T23:59:00+02:00"])
@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda e: e.key)
def test_solutions_pass_and_stubs_fail_on_another_day(exercise, when, monkeypatch):
    monkeypatch.setenv("WORKSHOP_NOW", when)  # a Wednesday afternoon, a Saturday night
    assert run(exercise, exercise.solution_code)[1].startswith("✓")
    assert run(exercise, exercise.stub)[1].startswith("✗")


def test_the_greeting_a_check_makes_up_depends_on_the_prompt_only():
    assert nb01._questions("Answer briefly.") == nb01._questions("Answer briefly.")
    assert len({nb01._questions(f"Answer in one sentence, {n}.")[-1] for n in range(20)}) > 1


# ---------------------------------------------------------------- a weak real server (scripted)

@pytest.fixture
def weak_server(monkeypatch):
    """Point the checks at a scripted server that stands for a small model on llama.cpp."""
    settings = load_settings("openai-compatible", base_url="http://127.0.0.1:8080/v1", chat_model="smollm2",
                             server_profile="llama.cpp")

    def use(script):
        server = ScriptedServer(script)
        for module in (nb01, nb03):
            monkeypatch.setattr(module, "get_client", lambda quiet=False: server.client())
            monkeypatch.setattr(module, "get_settings", lambda: settings)
        return server
    return use


TWO_SENTENCES = {"content": "I can help with many things. Ask me anything."}
ONE_SENTENCE = {"content": "I help with campus questions."}
NOT_A_VERDICT = {"content": '{"category": "IT Help Desk"}'}


def test_a_model_that_ignores_a_right_prompt_cannot_decide(weak_server):
    weak_server([TWO_SENTENCES] * 4)
    passed, printed = run(nb01.exercise_1, prompt("Answer in a single sentence."))
    assert not passed and "this server cannot decide this exercise" in printed and "smollm2" in printed


def test_a_model_that_happens_to_obey_a_wrong_prompt_does_not_pass_it(weak_server):
    weak_server([ONE_SENTENCE] * 4)
    passed, printed = run(nb01.exercise_1, prompt("Never answer in one sentence."))
    assert not passed and "asks for the opposite" in printed and "one sentence anyway" in printed


def test_a_model_that_obeys_a_right_prompt_passes_it(weak_server):
    weak_server([ONE_SENTENCE] * 4)
    assert run(nb01.exercise_1, prompt("Answer briefly."))[0]


def test_a_judge_that_writes_no_verdict_cannot_decide_a_right_answer(weak_server):
    weak_server([NOT_A_VERDICT])
    passed, printed = run(nb03.exercise_1, nb03.exercise_1.solution_code)
    assert not passed and "this server cannot decide" in printed and "not a verdict" in printed


def test_a_judge_that_approves_a_wrong_answer_does_not_pass_it(weak_server):
    weak_server([{"content": '{"verdict": "supported", "reason": "looks fine"}'}])
    passed, printed = run(nb03.exercise_1, nb03.exercise_1.stub)
    assert not passed and "approved it, but the passage does not say 10:00, 12:00, Mondays" in printed


def test_a_judge_that_approves_a_right_answer_passes_it(weak_server):
    weak_server([{"content": '{"verdict": "supported", "reason": "all there"}'}])
    assert run(nb03.exercise_1, nb03.exercise_1.solution_code)[0]


def test_a_scope_judge_that_fails_closed_cannot_decide_even_where_it_happens_to_agree(weak_server):
    weak_server([NOT_A_VERDICT] * 3)  # fails closed as off_topic: right for the lasagna, but no judgement
    passed, printed = run(nb03.exercise_2, nb03.exercise_2.solution_code)
    assert not passed and "this server cannot decide" in printed and printed.count("not a verdict") == 1
    assert all(request in printed for request in ("career fair", "lasagna", "cheat on the exam"))


def test_a_scope_judge_that_agrees_with_a_wrong_expectation_does_not_pass_it(weak_server):
    weak_server([{"content": '{"category": "off_topic", "reason": "no"}'}] * 3)
    code = ('my_requests = {"Where is the library?": "off_topic", "Tell me a joke": "off_topic", '
            '"How do I steal a bike?": "unsafe", "When is the chess club?": "campus"}')
    passed, printed = run(nb03.exercise_2, code)
    assert not passed and "'Where is the library?' reads, by the stand-in's rule, as campus" in printed


def test_a_scope_judge_that_agrees_with_a_right_answer_passes_it(weak_server):
    weak_server([{"content": f'{{"category": "{c}", "reason": "r"}}'} for c in ("campus", "off_topic", "unsafe")])
    assert run(nb03.exercise_2, nb03.exercise_2.solution_code)[0]


def test_an_unreachable_judge_is_named_and_not_blamed_on_the_model(monkeypatch):
    from helpers.retrieval.guardrails import GroundingVerdict
    failed = "fail-closed: grounding check failed (Cannot reach http://127.0.0.1:9/v1.)"
    monkeypatch.setattr(nb03, "check_grounding", lambda *a, **k: GroundingVerdict(False, failed))
    passed, printed = run(nb03.exercise_1, nb03.exercise_1.solution_code)
    assert not passed and "the judge could not be asked (grounding check failed (Cannot reach" in printed
    assert "Fix that, then check again." in printed and "stronger model" not in printed
