"""The stand-in's rule tables, one rule at a time: ``meaning.FACT_RULES`` (what ``facts_in`` reads)."""
from __future__ import annotations

import pytest

from helpers.standin.meaning import FACT_RULES, Rule, facts_in

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
