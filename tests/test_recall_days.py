"""A recall block lays its quotes out by day (helpers/core/context_format.py ``arrange_by_day``, used by
helpers/memory/budget.py ``fit_recall`` and helpers/memory/recall.py ``recall_block``): turns without a day
first, then each day once as a heading, oldest day first, turn order within a day. The heading's day is read
back (``read_quotes``, ``days_of_lines``), and recall still chooses its turns best match first."""
from datetime import datetime, timedelta, timezone

from hypothesis import given, settings, strategies as st

from helpers.core import context_format as cf
from helpers.core import tokens
from helpers.memory.budget import fit_recall
from helpers.memory.recall import RECALL_HEADER, Recalled, quote_turn, recall_block

START = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)


def dated_turn(turn_id: int, day: int | None, text: str, reply: str | None = None) -> str:
    messages = [{"role": "user", "content": text}] + ([{"role": "assistant", "content": reply}] if reply else [])
    return quote_turn(turn_id, messages, at=None if day is None else START + timedelta(days=day))


def test_each_day_is_said_once_over_its_turns_oldest_day_first():
    quotes = [dated_turn(40, 30, "My sister moved to Lisbon."), dated_turn(3, 0, "I adopted a kitten."),
              dated_turn(41, 30, "She teaches maths there.", "That sounds like a good move."),
              dated_turn(7, None, "I like rainy days.")]
    lines = cf.arrange_by_day(quotes)
    assert lines == ['[turn 7] user: "I like rainy days."',
                     "On 2023-05-08:", '[turn 3] user: "I adopted a kitten."',
                     "On 2023-06-07:", '[turn 40] user: "My sister moved to Lisbon."',
                     '[turn 41] user: "She teaches maths there."',
                     '[turn 41] assistant: "That sounds like a good move."']
    assert cf.days_of_lines(lines) == [None, "2023-05-08", "2023-05-08", "2023-06-07", "2023-06-07",
                                       "2023-06-07", "2023-06-07"]


def test_a_heading_s_day_ends_with_its_block():
    text = "\n".join([RECALL_HEADER, "On 2023-05-08:", '[turn 3] user: "I adopted a kitten."', "",
                      '[turn 9] user: "I like tea."'])
    assert [(q.turn_id, q.day) for q in cf.read_quotes(text)] == [(3, "2023-05-08"), (9, None)]
    summary = "On 2023-05-08 (made from turns 0-3):\n[turn 2] user: \"I adopted a kitten.\""
    assert cf.read_quotes(summary)[0].day == "2023-05-08"
    spanning = "From 2023-05-08 to 2023-05-20 (made from turns 0-9):\n[turn 2] user: \"I adopted a kitten.\""
    assert cf.read_quotes(spanning)[0].day is None  # a span names no one day


def test_the_day_heading_reads_back_and_reads_nothing_else():
    assert cf.read_recall_day(cf.write_recall_day(START)) == "2023-05-08"
    assert cf.read_recall_day("On 2023-05-08 (made from turns 0-3):") is None
    assert cf.read_recall_day('[turn 3] user: "On 2023-05-08:"') is None


turns = st.lists(st.tuples(st.integers(0, 400), st.one_of(st.none(), st.integers(0, 60)),
                           st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1,
                                   max_size=30).filter(str.strip),
                           st.booleans()),
                 max_size=12, unique_by=lambda t: t[0])


@settings(max_examples=150, deadline=None)
@given(turns)
def test_every_quote_keeps_its_words_turn_and_day_when_laid_out_by_day(items):
    quotes = [dated_turn(i, day, text, "Noted: " + text if reply else None) for i, day, text, reply in items]
    block = recall_block([Recalled(i, 0.5, q) for (i, _, _, _), q in zip(items, quotes)]) or {"content": ""}
    expected = sorted((q.turn_id, q.role, q.text, q.day) for quote in quotes
                      for role in ("user", "assistant") for q in cf.read_quotes(quote, role))
    got = sorted((q.turn_id, q.role, q.text, q.day) for role in ("user", "assistant")
                 for q in cf.read_quotes(block["content"], role))
    assert got == expected
    days = [d for d in (cf.read_recall_day(line) for line in block["content"].split("\n")) if d]
    assert days == sorted(set(days))  # each day once, oldest first


def test_recall_chooses_best_first_and_lays_out_by_day():
    items = [Recalled(50, 0.9, dated_turn(50, 40, "My locker is 4471 in the east wing.")),
             Recalled(2, 0.8, dated_turn(2, 0, "I park at the north gate every morning.")),
             Recalled(30, 0.7, dated_turn(30, 20, "My advisor is Dr. Varga, she runs the bird lab."))]
    whole = fit_recall(items, None, None, tokens.count_message)[0]["content"]
    assert whole.index("[turn 2]") < whole.index("[turn 30]") < whole.index("[turn 50]")
    two = tokens.count_message({"role": "system", "content": "\n".join(
        [RECALL_HEADER] + cf.arrange_by_day([items[0].text, items[1].text]))})
    message, part = fit_recall(items, two, two, tokens.count_message)
    assert part.included == [50, 2] and part.dropped == [30]  # the weakest turn is left out, not the newest
    assert tokens.count_message(message) == part.tokens <= two


def test_a_day_already_in_the_block_costs_no_second_heading():
    same = [Recalled(i, 1 - i / 10, dated_turn(i, 0, f"Fact number {i} about my week.")) for i in range(4)]
    block = fit_recall(same, None, None, tokens.count_message)[0]["content"]
    assert block.count("On 2023-05-08:") == 1
    exact = tokens.count_message({"role": "system", "content": block})
    message, part = fit_recall(same, exact, exact, tokens.count_message)
    assert part.included == [0, 1, 2, 3]  # the sum of costs is exact: every turn still fits


def test_a_bullet_quote_under_a_heading_has_the_heading_s_day_and_an_undated_turn_keeps_its_lines():
    summary = 'On 2023-05-08 (made from turns 0-3):\n- [turn 2] user: "I adopted a kitten."'
    assert cf.read_quotes(summary)[0].day == "2023-05-08"
    mixed = '[turn 3] user: "a"\n[turn 3, 2023-05-08] assistant: "b"'  # filed by its first line: no day
    assert cf.arrange_by_day([mixed]) == mixed.split("\n")  # so no tag loses a day it had
