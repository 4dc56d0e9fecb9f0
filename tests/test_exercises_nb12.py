"""Notebook 12's exercises: each check fails on its stub and passes on its solution on any day, refuses plausible
wrong answers with the hint a learner needs, accepts independently written right ones, and checks what it says
it checks (the tight budget really loses evidence with the default shares; the generated cases hold the traps
they are made for)."""
import pytest
from exercise_support import run

from helpers.exercises import nb12, nb12_replay
from helpers.memory.budget import DEFAULT_SHARES

OTHER_DAYS = ("2026-12-02T15:00:00-08:00",   # a Wednesday afternoon in Los Angeles
              "2027-06-19T23:30:00+02:00")   # a Saturday night in another zone, half a year on


# exercise 1 records a whole conversation per day (a few seconds), so it is tried on one other day only
DAYS_PER_EXERCISE = [("exercise_1", OTHER_DAYS[0])] + [(key, now) for key in ("exercise_2", "exercise_3",
                                                                            "exercise_4")
                                                        for now in OTHER_DAYS]


@pytest.mark.parametrize("key,now", DAYS_PER_EXERCISE)
def test_checks_do_not_depend_on_the_day(key, now, monkeypatch):
    monkeypatch.setenv("WORKSHOP_NOW", now)
    nb12_replay.recorded_questions.cache_clear()  # record exercise 1's conversation again, on this day
    exercise = getattr(nb12, key)
    try:
        assert not run(exercise, exercise.stub)[0]
        passed, said = run(exercise, exercise.solution_code)
        assert passed, said
    finally:
        nb12_replay.recorded_questions.cache_clear()


def test_the_tight_budget_loses_evidence_with_the_default_shares():
    at_budget = nb12_replay.replay_shares(DEFAULT_SHARES, nb12_replay.BUDGET)
    tight = nb12_replay.replay_shares(DEFAULT_SHARES, nb12_replay.TIGHT_BUDGET)
    assert at_budget.questions >= 8 and at_budget.hits == at_budget.questions
    assert tight.in_profile < at_budget.in_profile / 2  # the profile's lines no longer fit
    assert at_budget.in_recall > 0  # recall carries evidence at the full budget, so switching it off is refused
    assert tight.fits >= 5 and tight.sent * 10 >= tight.fits * 9  # the defaults leave the window room


def _check(exercise, code, hint=None):
    passed, said = run(exercise, code)
    if hint is None:
        assert passed and said.startswith("✓"), said
    else:
        assert not passed and said.startswith("✗") and hint in said, said


# ---------------------------------------------------------------- 12.1 shares for a tighter budget

_CHOOSE = "def choose_shares(room, needs):\n"
_RESERVE = ('    window = needs["window"] + 2 if needs["window"] + 2 <= room else 0\n'
            '    rest = room - window\n')
SHARES_WRONG = {  # name: (the cell, the hint it must get)
    "the stub: the defaults": (nb12.exercise_1.stub, "the profile block names the current value for only"),
    "a value, not a function": ("choose_shares = Shares(profile=0.45, summary=0.0, recall=0.25)",
                                "must be a function"),
    "the profile alone, two layers off": (_CHOOSE + "    return Shares(0.9, 0, 0)\n", "recall quotes the user's words"),
    "recall alone, two layers off": (_CHOOSE + "    return Shares(0, 0, 0.9)\n",
                                     "the profile block names the current value for only"),
    "one choice for every budget": (_CHOOSE + "    return Shares(profile=0.45, summary=0.0, recall=0.25)\n",
                                    "yet your shares send the summary in 0"),
    "needs over room, unclamped": (_CHOOSE + (
        '    return Shares(needs["profile"] / room, needs["summary"] / room, needs["recall"] / room)\n'),
        "made invalid shares"),
    "the newest turn always kept back": (_CHOOSE + (
        '    rest = room - needs["window"] - 2\n'
        '    profile = min(needs["profile"], rest // 2)\n'
        '    return Shares(profile / room, 0, (rest - profile) / room)\n'), "larger than the room"),
    "profile first, recall the rest of the room": (_CHOOSE + (
        '    profile = min(needs["profile"], room // 2)\n'
        '    return Shares(profile / room, 0.0, 1 - profile / room)\n'),
        "The window gets only what the three shares leave"),
    "the three blocks share the room by need": (_CHOOSE + (
        '    total = needs["profile"] + needs["summary"] + needs["recall"]\n'
        '    return Shares(needs["profile"] / total, needs["summary"] / total, needs["recall"] / total)\n'),
        "the profile block names the current value for only"),
    "in proportion to the needs": (_CHOOSE + (
        '    scale = min(1, room / sum(needs.values()))\n'
        '    return Shares(needs["profile"] * scale / room, needs["summary"] * scale / room,\n'
        '                  needs["recall"] * scale / room)\n'), "the profile block names the current value for only"),
    "the summary served first": (_CHOOSE + _RESERVE + (
        '    summary = min(needs["summary"], rest)\n'
        '    profile = min(needs["profile"], rest - summary)\n'
        '    return Shares(profile / room, summary / room, (rest - summary - profile) / room)\n'),
        "keep the evidence for"),
    "the profile takes all it needs": (_CHOOSE + _RESERVE + (
        '    profile = min(needs["profile"], rest)\n'
        '    summary = min(needs["summary"], rest - profile)\n'
        '    return Shares(profile / room, summary / room, (rest - profile - summary) / room)\n'),
        "recall quotes the user's words"),
    "the window's cap a token short": (_CHOOSE + (
        '    rest = room - needs["window"] if needs["window"] < room else room\n'
        '    profile = min(needs["profile"], rest // 2)\n'
        '    summary = min(needs["summary"], max(0, rest - profile - needs["recall"]))\n'
        '    return Shares(profile / room, summary / room, (rest - profile - summary) / room)\n'),
        "rounded down"),
    "a dict": (_CHOOSE + "    return {'profile': 0.5, 'summary': 0.0, 'recall': 0.2}\n", "return Shares("),
}
SHARES_RIGHT = {
    "the solution": nb12.exercise_1.solution_code,
    "a loop in priority order": (_CHOOSE + (
        '    newest = needs["window"] + 3\n'
        '    if newest > room:\n'
        '        newest = 0\n'
        '    left = room - newest\n'
        '    given = {}\n'
        '    for layer, most in (("profile", 0.5), ("recall", 1.0), ("summary", 1.0)):\n'
        '        given[layer] = min(needs[layer], int(left * most))\n'
        '        left -= given[layer]\n'
        '    return Shares(given["profile"] / room, given["summary"] / room, given["recall"] / room)\n')),
    "everything when it fits, else profile and recall halves": (_CHOOSE + (
        '    keep = needs["window"] + 4 if needs["window"] + 4 <= room else 0\n'
        '    free = (room - keep) / room\n'
        '    if needs["profile"] + needs["summary"] + needs["recall"] <= room - keep:\n'
        '        return Shares(needs["profile"] / room, needs["summary"] / room, needs["recall"] / room)\n'
        '    return Shares(profile=free / 2, summary=0.0, recall=free / 2)\n')),
}


@pytest.mark.parametrize("mistake", sorted(SHARES_WRONG))
def test_a_wrong_share_chooser_gets_its_hint(mistake):
    _check(nb12.exercise_1, *SHARES_WRONG[mistake])


@pytest.mark.parametrize("answer", sorted(SHARES_RIGHT))
def test_a_right_share_chooser_passes(answer):
    _check(nb12.exercise_1, SHARES_RIGHT[answer])


def test_the_judged_budgets_run_from_tight_to_everything_fitting():
    tight = nb12_replay.replay_chosen(lambda room, needs: DEFAULT_SHARES, nb12.JUDGED_BUDGETS[0])
    roomy = nb12_replay.replay_chosen(lambda room, needs: DEFAULT_SHARES, nb12.JUDGED_BUDGETS[-1])
    assert tight.everything_fits == 0 and roomy.everything_fits * 2 > roomy.questions
    probe, inputs = nb12_replay.recorded_questions()[0]
    room, needs = nb12_replay.needs_of(inputs, nb12.JUDGED_BUDGETS[0])
    assert needs["profile"] > room // 2  # at the tight budget the whole profile does not fit its fair half


# ---------------------------------------------------------------- 12.2 a new kind of user fact

def _extractor(pattern: str, *, key: str = '"residence"', skip_questions: bool = True, rules: bool = True) -> str:
    skip = "        if is_question(sentence):\n            continue\n" if skip_questions else ""
    start = "extract_with_rules(text)" if rules else "[]"
    return ('def my_extractor(text):\n'
            f'    items = {start}\n'
            '    for sentence in re.split(r"(?<=[.!?])\\s+", text):\n'
            f'{skip}'
            f'        m = re.search(r"{pattern}", sentence)\n'
            '        if m:\n'
            f'            items.append({{"key": {key}, "topic": "residence", "value": m.group(1)}})\n'
            '    return items')


PLACE = r"([^,.;!?]+?)(?:\s+now)?\s*(?=[,.;!?]|$)"
NEW_FACT_WRONG = {
    "the stub": (nb12.exercise_2.stub, "the new fact's value should be"),
    "the whole clause as the value": (_extractor(r"\bI live in (.+)"), "leave out the words around the place"),
    "a trailing 'now' kept": (_extractor(r"\bI live in ([^,.;!?]+)"), "leave out the words around the place"),
    "questions extracted": (_extractor(r"\bI live in " + PLACE, skip_questions=False),
                            "is not the user saying where they live"),
    "negation ignored": (_extractor(r"live in " + PLACE), "says where the user does NOT live"),
    "built-in rules dropped": (_extractor(r"\bI live in " + PLACE, rules=False), "built-in facts went missing"),
    "a key per place": (_extractor(r"\bI live in " + PLACE, key='"home " + m.group(1).split()[-1].lower()'),
                        "Use one key"),
    "the key 'name'": (_extractor(r"\bI live in " + PLACE, key='"name"'), "Choose a short label"),
}
FIRST_SENTENCE_ONLY = r'''LIVE_IN = re.compile(r"\bI live in ([^,.;!?]+?)(?:\s+now)?\s*(?=[,.;!?]|$)")

def my_extractor(user_text):
    items = extract_with_rules(user_text)
    first = re.split(r"(?<=[.!?])\s+", user_text)[0]
    m = LIVE_IN.search(first)
    if m and not is_question(first):
        items.append({"key": "residence", "topic": "residence", "value": m.group(1)})
    return items'''
WHOLE_MESSAGE_SKIPPED = r'''LIVE_IN = re.compile(r"\bI live in ([^,.;!?]+?)(?:\s+now)?\s*(?=[,.;!?]|$)")

def my_extractor(user_text):
    items = extract_with_rules(user_text)
    if "?" in user_text:   # a question: nothing to extract
        return items
    for m in LIVE_IN.finditer(user_text):
        items.append({"key": "residence", "topic": "residence", "value": m.group(1)})
    return items'''
NEW_FACT_WRONG["only the first sentence read"] = (FIRST_SENTENCE_ONLY, "Read every sentence")
NEW_FACT_WRONG["a message that asks anything skipped"] = (WHOLE_MESSAGE_SKIPPED, "not the whole message")
NEW_FACT_RIGHT = {
    "the solution": nb12.exercise_2.solution_code,
    "capitalised words after 'I live in'": '''PLACE = re.compile(r"\\bI live in (?P<place>[A-Z][\\w'-]*(?: [A-Z][\\w'-]*)*)")

def my_extractor(user_text):
    found = extract_with_rules(user_text)
    for sentence in re.split(r"(?<=[.!?])\\s+", user_text):
        if sentence.rstrip().endswith("?"):
            continue
        for m in PLACE.finditer(sentence):
            found.append({"key": "home", "topic": "home", "value": m.group("place")})
    return found''',
    "string methods": '''def my_extractor(user_text):
    items = extract_with_rules(user_text)
    for sentence in re.split(r"(?<=[.!?])\\s+", user_text):
        if is_question(sentence) or "I live in " not in sentence:
            continue
        place = sentence.split("I live in ", 1)[1]
        for stop in ",.;!?":
            place = place.split(stop)[0]
        place = place.strip()
        if place.endswith(" now"):
            place = place[:-len(" now")]
        items.append({"key": "dorm", "topic": "dorm", "value": place})
    return items''',
}


@pytest.mark.parametrize("mistake", sorted(NEW_FACT_WRONG))
def test_a_new_fact_extractor_with_a_mistake_gets_its_hint(mistake):
    _check(nb12.exercise_2, *NEW_FACT_WRONG[mistake])


@pytest.mark.parametrize("answer", sorted(NEW_FACT_RIGHT))
def test_a_right_new_fact_extractor_passes(answer):
    _check(nb12.exercise_2, NEW_FACT_RIGHT[answer])


def test_the_generated_sentences_hold_statements_questions_and_negations():
    for seed in range(3):
        stated, others, negated = nb12.new_fact_cases(seed)
        assert len({place for _, place in stated}) == len(stated)
        assert any(text.endswith("?") for text in others) and all("live in" in t for t in negated)


# ---------------------------------------------------------------- 12.3 no old value unmarked

def _lines_check(condition: str, lines: str = 'str(m.get("content") or "").splitlines() + '
                                              '[c["function"]["arguments"] for c in m.get("tool_calls") or []]') -> str:
    return ('def unmarked_old_values(messages, old_values):\n'
            '    found = []\n'
            '    for m in messages:\n'
            f'        for line in {lines}:\n'
            f'            if {condition}:\n'
            '                found.append(line)\n'
            '    return found')


UNMARKED_WRONG = {
    "the stub": (nb12.exercise_3.stub, "you reported nothing"),
    "the superseded mark ignored": (_lines_check("any(o.lower() in line.lower() for o in old_values)"),
                                    "says 'superseded'"),
    "tool-call arguments not read": (_lines_check(
        "'superseded' not in line.lower() and any(o.lower() in line.lower() for o in old_values)",
        lines='str(m.get("content") or "").splitlines()'), "arguments"),
    "case compared": (_lines_check("'superseded' not in line and any(o in line for o in old_values)"),
                      "compare without case"),
    "only the first old value": (_lines_check(
        "'superseded' not in line.lower() and old_values[0].lower() in line.lower()"),
        "Check every old value, not only the first"),
    "a content of None not handled": (_lines_check(
        "'superseded' not in line.lower() and any(o.lower() in line.lower() for o in old_values)",
        lines='m["content"].splitlines()'), "content is None"),
    "whole messages, not lines": ('''def unmarked_old_values(messages, old_values):
    found = []
    for m in messages:
        text = str(m.get("content") or "") + " ".join(c["function"]["arguments"] for c in m.get("tool_calls") or [])
        if "superseded" not in text.lower() and any(o.lower() in text.lower() for o in old_values):
            found.append(text)
    return found''', "Judge each line on its own"),
}
UNMARKED_WRONG["tool results never read"] = (_lines_check(
    "m.get('role') != 'tool' and 'superseded' not in line.lower() "
    "and any(o.lower() in line.lower() for o in old_values)"), "A tool result is text the model reads too")
UNMARKED_WRONG["user messages never read"] = (_lines_check(
    "m.get('role') != 'user' and 'superseded' not in line.lower() "
    "and any(o.lower() in line.lower() for o in old_values)"), "The user's own message names the old value")
UNMARKED_WRONG["only system and assistant messages"] = (_lines_check(
    "m.get('role') in ('system', 'assistant') and 'superseded' not in line.lower() "
    "and any(o.lower() in line.lower() for o in old_values)"), "A tool result is text the model reads too")
UNMARKED_RIGHT = {
    "the solution": nb12.exercise_3.solution_code,
    "casefold and split": '''def unmarked_old_values(messages, old_values):
    olds = [o.casefold() for o in old_values]
    out = []
    for m in messages:
        texts = [m.get("content") or ""] + [call["function"]["arguments"] for call in (m.get("tool_calls") or [])]
        for text in texts:
            for line in text.split("\\n"):
                folded = line.casefold()
                if any(o in folded for o in olds) and "superseded" not in folded:
                    out.append(line)
    return out''',
    "a regular expression": '''import re

def unmarked_old_values(messages, old_values):
    pattern = re.compile("|".join(re.escape(v) for v in old_values), re.IGNORECASE)
    lines = []
    for m in messages:
        lines += (m.get("content") or "").splitlines()
        lines += [c["function"]["arguments"] for c in m.get("tool_calls", None) or ()]
    return [l for l in lines if pattern.search(l) and not re.search("superseded", l, re.IGNORECASE)]''',
}


@pytest.mark.parametrize("mistake", sorted(UNMARKED_WRONG))
def test_a_wrong_old_value_check_gets_its_hint(mistake):
    _check(nb12.exercise_3, *UNMARKED_WRONG[mistake])


@pytest.mark.parametrize("answer", sorted(UNMARKED_RIGHT))
def test_a_right_old_value_check_passes(answer):
    _check(nb12.exercise_3, UNMARKED_RIGHT[answer])


def test_every_generated_request_hides_an_unmarked_old_value_that_is_not_the_first():
    for seed in range(6):
        messages, old, expected = nb12.old_value_cases(seed)
        assert expected and len(old) >= 2
        assert any(old[0].lower() not in line.lower() for line in expected)


# ---------------------------------------------------------------- 12.4 the streaming variant of ask

STREAMED = "def streamed(session, text, *, client, settings):\n"
REFUSE = '''    if refused(text, client=client, settings=settings):
        yield REFUSAL
        return REFUSAL
'''
STREAM_WRONG = {
    "the stub: nothing checked": (nb12.exercise_4.stub, "never took it back"),
    "no scope rule": (STREAMED + '''    newest = session.turn_ids[-1:]
    answer = yield from session.stream(text)
    shown = checked(session, answer, newest, client=client, settings=settings)
    if shown is not answer:
        yield TAKEN_BACK + shown
    return shown''', "was sent to the model. Ask refused"),
    "a refusal that does not stop": (STREAMED + '''    if refused(text, client=client, settings=settings):
        yield REFUSAL
    newest = session.turn_ids[-1:]
    answer = yield from session.stream(text)
    shown = checked(session, answer, newest, client=client, settings=settings)
    if shown is not answer:
        yield TAKEN_BACK + shown
    return shown''', "then went on"),
    "a refusal returned, never shown": (STREAMED + '''    if refused(text, client=client, settings=settings):
        return REFUSAL
    newest = session.turn_ids[-1:]
    answer = yield from session.stream(text)
    shown = checked(session, answer, newest, client=client, settings=settings)
    if shown is not answer:
        yield TAKEN_BACK + shown
    return shown''', "the reader saw nothing"),
    "newest read after the turn": (STREAMED + REFUSE + '''    answer = yield from session.stream(text)
    newest = session.turn_ids[-1:]
    return checked(session, answer, newest, client=client, settings=settings)''', "never took it back"),
    "every id as newest": (STREAMED + REFUSE + '''    newest = session.turn_ids
    answer = yield from session.stream(text)
    shown = checked(session, answer, newest, client=client, settings=settings)
    if shown is not answer:
        yield TAKEN_BACK + shown
    return shown''', "the newest id alone"),
    "taken back in silence": (STREAMED + REFUSE + '''    newest = session.turn_ids[-1:]
    answer = yield from session.stream(text)
    return checked(session, answer, newest, client=client, settings=settings)''', "was never told"),
    "the fallback without the notice": (STREAMED + REFUSE + '''    newest = session.turn_ids[-1:]
    answer = yield from session.stream(text)
    shown = checked(session, answer, newest, client=client, settings=settings)
    if shown != answer:
        yield shown
    return shown''', "yield TAKEN_BACK + FALLBACK"),
    "the answer returned after it was taken back": (STREAMED + REFUSE + '''    newest = session.turn_ids[-1:]
    answer = yield from session.stream(text)
    shown = checked(session, answer, newest, client=client, settings=settings)
    if shown is not answer:
        yield TAKEN_BACK + shown
    return answer''', "return what the user sees"),
    "the whole answer at once": (STREAMED + REFUSE + '''    newest = session.turn_ids[-1:]
    answer = session.chat(text)
    shown = checked(session, answer, newest, client=client, settings=settings)
    yield shown
    return shown''', "only after the whole turn was done"),
    "the pieces collected first": (STREAMED + REFUSE + '''    newest = session.turn_ids[-1:]
    pieces = list(session.stream(text))
    answer = "".join(pieces)
    shown = checked(session, answer, newest, client=client, settings=settings)
    yield from pieces
    if shown != answer:
        yield TAKEN_BACK + shown
    return shown''', "only after the whole turn was done"),
    "always taken back": (STREAMED + REFUSE + '''    newest = session.turn_ids[-1:]
    answer = yield from session.stream(text)
    shown = checked(session, answer, newest, client=client, settings=settings)
    yield TAKEN_BACK + shown
    return shown''', "yet you said it was taken back"),
    "nothing returned": (STREAMED + REFUSE + '''    newest = session.turn_ids[-1:]
    answer = yield from session.stream(text)
    shown = checked(session, answer, newest, client=client, settings=settings)
    if shown is not answer:
        yield TAKEN_BACK + shown''', "return the answer the user sees"),
    "a list, not a generator": (STREAMED + '''    if refused(text, client=client, settings=settings):
        return [REFUSAL]
    newest = session.turn_ids[-1:]
    answer = session.chat(text)
    return [checked(session, answer, newest, client=client, settings=settings)]''', "must be a generator"),
}
STREAM_RIGHT = {
    "the solution": nb12.exercise_4.solution_code,
    "a loop over the pieces": STREAMED + '''    if refused(text, client=client, settings=settings):
        yield REFUSAL
        return REFUSAL
    before = session.turn_ids[-1:]
    pieces = session.stream(text)
    while True:
        try:
            yield next(pieces)
        except StopIteration as finished:
            answer = finished.value
            break
    final = checked(session, answer, before, client=client, settings=settings)
    if final != answer:
        yield TAKEN_BACK + final
    return final''',
    "one exit": STREAMED + '''    blocked = refused(text, client=client, settings=settings)
    if blocked:
        result = REFUSAL
        yield result
    else:
        last_turn = list(session.turn_ids)[-1:]
        answer = yield from session.stream(text)
        result = checked(session, answer, last_turn, client=client, settings=settings)
        if result is not answer:
            yield TAKEN_BACK + result
    return result''',
}


@pytest.mark.parametrize("mistake", sorted(STREAM_WRONG))
def test_a_wrong_streaming_step_gets_its_hint(mistake):
    _check(nb12.exercise_4, *STREAM_WRONG[mistake])


@pytest.mark.parametrize("answer", sorted(STREAM_RIGHT))
def test_a_right_streaming_step_passes(answer):
    _check(nb12.exercise_4, STREAM_RIGHT[answer])


def test_every_generated_conversation_holds_the_traps():
    for seed in range(3):
        kinds = [kind for kind, _ in nb12.stream_schedule(seed)]
        assert kinds[:2] == ["campus", "silent"] and {"personal", "embellished", "unsafe"} <= set(kinds)
        second = kinds.index("silent", 2)   # a silent message after at least two kept turns
        assert sum(kind in ("campus", "personal") for kind in kinds[:second]) >= 2
        assert kinds[second - 1] == "campus"


def test_the_assistants_own_step_passes_the_check():
    from exercise_support import quiet_check

    from helpers.app.assistant import streamed

    passed, said = quiet_check(nb12.exercise_4, streamed)
    assert passed, said
