"""The stand-in's rules one at a time: ``meaning.FACT_RULES`` (what ``facts_in`` reads) and the steps of
``memory_rule._match`` (how well a statement answers a question about the user)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from helpers.standin import memory_rule
from helpers.standin.meaning import FACT_RULES, Rule, content_stems, facts_in
from helpers.standin.memory_rule import (_another_head, _another_kind_of_it, _another_thing, _asked, _level, _match,
                                         _name_level, _names_what_is_asked, _only_gives_the_name, _Said,
                                         _statement_topics, _third_person_level, _topic_similarity,
                                         _without_generic, _words_asked_about)

RULES = {rule.name: rule for rule in FACT_RULES}

# each rule's name: a text only that rule reads a fact in (once earlier rules have blanked theirs), and the
# (kind, value) claims it makes there
ONLY_THIS_RULE = {
    "date_iso": ("due 2027-01-20", [("date", (1, 20, 2027))]),
    "date_day_month": ("due 20 january", [("date", (1, 20, None))]),
    "date_month_day": ("due Jan 20th", [("date", (1, 20, None))]),
    "time_range": ("open 3-5pm", [("time", frozenset({900})), ("time", frozenset({1020}))]),
    "time_12h": ("open at 3pm", [("time", frozenset({900}))]),
    "time_part_of_day": ("open at 9 in the morning", [("time", frozenset({540}))]),
    "time_24h": ("open at 15:00", [("time", frozenset({900}))]),
    "time_words": ("open at noon", [("time", frozenset({720}))]),
    "time_oclock": ("open at 3 o'clock", [("time", frozenset({180, 900}))]),
    "time_bare_range": ("open from 9 to 5", [("time", frozenset({540, 1260})), ("time", frozenset({300, 1020}))]),
    "floor_word": ("on the ground floor", [("floor", 0)]),
    "floor_before": ("on the fifth floor", [("floor", 5)]),
    "floor_after": ("on floor 5", [("floor", 5)]),
    "room": ("in room 2b", [("room", ("2B", "2B"))]),
    "room_dotted": ("in room 2.14", [("room", ("2.14", "2.14"))]),
    "day_range": ("open monday to friday", [("day", frozenset(range(5)))]),
    "weekdays": ("open on weekdays", [("day", frozenset(range(5)))]),
    "weekends": ("open at weekends", [("day", frozenset({5, 6}))]),
    "every_day": ("open daily", [("day", frozenset(range(7)))]),
    "day": ("open on thurs", [("day", frozenset({3}))]),
    "code": ("code LU-58213", [("code", "lu-58213")]),
    "number": ("bring two pens", [("number", (2, "pen"))]),
    "name": ("ask Amara Osei", [("name", "amara osei")]),
    "lower_place": ("in pemberton hall", [("name", "pemberton hall")]),
}


def test_rule_names_are_unique_and_each_has_a_case():
    names = [rule.name for rule in FACT_RULES]
    assert len(names) == len(set(names))
    assert set(names) == set(ONLY_THIS_RULE)


@pytest.mark.parametrize("name", list(ONLY_THIS_RULE))
def test_each_rule_alone(name):
    text, expected = ONLY_THIS_RULE[name]
    rule: Rule = RULES[name]
    claims, _ = rule.apply(text)
    assert [(c.kind, c.value) for c in claims] == expected
    assert all(c.kind == rule.kind for c in claims)
    # in the whole table, these claims and no others: no earlier rule takes the text, no later one adds to it
    assert [(c.kind, c.value) for c in facts_in(text).claims] == expected


@pytest.mark.parametrize("name", [rule.name for rule in FACT_RULES if rule.blanks])
def test_a_claimed_span_is_blanked_for_later_rules(name):
    text, _ = ONLY_THIS_RULE[name]
    claims, rest = RULES[name].apply(text)
    assert len(rest) == len(text)
    assert claims and all(c.written.lower() not in rest.lower() for c in claims)


def test_a_rule_that_claims_nothing_leaves_the_text_alone():
    assert RULES["date_day_month"].apply("you may 3 times")[1] == "you may 3 times"  # "may 3": not a date
    assert RULES["number"].apply("one of them") == ([], "one of them")               # a lone "one"


def test_order_of_the_table_matters():
    assert [c.kind for c in facts_in("at 3pm").claims] == ["time"]           # not also the number 3
    assert [c.kind for c in facts_in("room 2B").claims] == ["room"]          # not also the code 2b
    assert [c.kind for c in facts_in("Monday to Friday").claims] == ["day"]  # one range, not two days


# ---------------------------------------------------------------- memory_rule._match, one step at a time

def _said(text: str) -> _Said:
    return _Said("said", text, None, 0, shown=text)


def _read(question: str, statement: str):
    asked, item = _asked(question), _said(statement)
    shared, coverage = _words_asked_about(asked, item)
    topics = [_without_generic(t) for t in _statement_topics(item)]
    return asked, item, shared, coverage, topics, _topic_similarity(asked, topics)


def test_words_asked_about_a_stranded_preposition_asks_what_follows_it():
    asked, item = _asked("Where am I from?"), _said("I'm originally from Kilkenny.")
    assert _words_asked_about(asked, item) == ({"from"}, 1.0)
    assert _words_asked_about(asked, _said("I'm from the."))[1] == 0.0


def test_third_person_level_needs_a_statement_of_theirs_naming_every_word():
    asked, item, _, coverage, _, _ = _read("Who is visiting next month?", "My sister Yara is visiting next month.")
    assert asked.how == "third" and _third_person_level(asked, item, coverage) == 3
    asked, item, _, coverage, _, _ = _read("Who is visiting next month?", "Yara is visiting next month.")
    assert _third_person_level(asked, item, coverage) == 0  # not a statement about someone of the user's


def test_name_level_and_a_sentence_that_only_gives_the_name():
    assert _name_level(_said("Call me Ines.")) == 3 and _name_level(_said("I like tea.")) == 0
    assert _only_gives_the_name(_said("I'm Kaito."), set())
    assert not _only_gives_the_name(_said("I'm Kaito."), {"kaito"})
    assert _match(_asked("Where do I live?"), _said("I'm Kaito."), 0.0, content_stems("Where do I live?"))[0] == 0


def test_another_thing_far_in_meaning_answers_nothing():
    _, _, shared, _, topics, similar = _read("What's my student number?", "My bike lock code is 4312.")
    assert similar < memory_rule.TOPIC_SIMILARITY and _another_thing(topics, shared, similar)
    _, _, shared, _, topics, similar = _read("What's my locker number?", "My locker number is 42.")
    assert not _another_thing(topics, shared, similar)


def test_another_head_noun_answers_nothing():
    asked, item, _, _, topics, _ = _read("When is my grandmother's birthday?", "My grandmother lives in Utrecht.")
    assert _another_head(asked, item, topics)
    asked, item, _, _, topics, _ = _read("When is my grandmother's birthday?", "My grandmother's birthday is 3 May.")
    assert not _another_head(asked, item, topics)


def test_another_kind_of_the_same_thing_unless_nearly_the_same():
    question = "When is my pilates class?"
    asked, item, _, _, topics, _ = _read(question, "My yoga class is on Monday.")
    assert _another_kind_of_it(asked, item, topics, content_stems(question))
    question = "What's my book budget?"
    asked, item, _, _, topics, _ = _read(question, "My textbook budget is 200 pounds.")
    assert not _another_kind_of_it(asked, item, topics, content_stems(question))


def test_names_what_is_asked_a_when_needs_a_time():
    asked, item, _, coverage, topics, similar = _read("When is my grandmother's birthday?",
                                                      "My grandmother lives in Utrecht.")
    assert not _names_what_is_asked(asked, item, topics, coverage, similar)
    asked, item, _, coverage, topics, similar = _read("When is my grandmother's birthday?",
                                                      "My grandmother's birthday is next week.")
    assert _names_what_is_asked(asked, item, topics, coverage, similar)


def test_level_three_two_one_and_a_weak_question_needs_more():
    asked, item = _asked("What's my locker number?"), _said("My locker number is 42.")
    assert _level(asked, item, {"locker"}, 1.0, 0.9, 0.0) == 3
    assert _level(asked, _said("Actually my locker moved."), {"locker"}, 0.5, 0.0, 0.0) == 2
    assert _level(asked, item, set(), 0.0, memory_rule.TOPIC_SIMILARITY, 0.0) == 2
    assert _level(asked, item, {"locker"}, 0.5, 0.0, 0.0) == 1
    assert _level(asked, item, set(), 0.0, 0.0, memory_rule.STATEMENT_SIMILARITY) == 1
    assert _level(asked, item, set(), 0.0, 0.0, 0.0) == 0
    weak = _asked("Where can I get my bike repaired?")
    assert weak.how == "weak" and _level(weak, item, {"bike"}, 1 / 3, 0.0, 0.0) == 0


def test_match_runs_the_steps_in_order():
    question = "What's my book budget?"
    said = _said("My textbook budget is 200 pounds.")
    assert _match(_asked(question), said, 0.0, content_stems(question)) == (2, 0.5)
    question = "What's my locker number?"
    assert _match(_asked(question), _said("My locker number is 42."), 0.0, content_stems(question)) == (3, 1.0)


def test_each_threshold_is_a_named_constant_with_a_docstring():
    tree = ast.parse(Path(memory_rule.__file__).read_text(encoding="utf-8"))
    body = tree.body
    documented = {node.targets[0].id for node, after in zip(body, body[1:])
                  if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
                  and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                  and isinstance(after.value.value, str)}
    thresholds = {"TOPIC_SIMILARITY", "SAME_TOPIC", "SAME_THING", "CAMPUS_SIMILARITY", "STATEMENT_SIMILARITY"}
    assert thresholds <= documented
    assert all(0 < getattr(memory_rule, name) < 1 for name in thresholds)
