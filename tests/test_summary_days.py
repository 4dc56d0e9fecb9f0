"""A summary that spans days is kept by day (helpers/memory/summary.py): one part per day, each folded only with
that day's turns, under a heading the format's owner writes and reads (helpers/core/context_format.py)."""
import json

import pytest
from hypothesis import given, settings as hsettings, strategies as st

from helpers.core.context_format import (cited_turns, format_turn_ids, read_day_heading, read_pinned_line,
                                         write_day_heading)
from helpers.memory.summary import RollingSummary, Summariser, day_parts, trim_summary_lines

from scripted import ScriptedServer
from support import turn

MAY_8, MAY_25 = "2023-05-08T10:00:00+00:00", "2023-05-25T09:00:00+00:00"
LAKE = turn("I painted a lake sunrise last year and it hangs in my studio.", "That sounds lovely.")
CAMP = turn("We are going camping in the mountains next month with the kids.", "Have a great trip.")
POTTERY = turn("I signed up for a pottery class on Thursday evenings.", "Nice, enjoy it.")


@hsettings(deadline=None, max_examples=100)
@given(st.one_of(st.none(), st.dates().map(lambda d: d.isoformat())), st.one_of(st.none(), st.dates().map(str)),
       st.lists(st.integers(0, 10**5), max_size=8))
def test_a_day_heading_round_trips(first, last, ids):
    heading = write_day_heading(first, last, ids)
    a, b = first or last, last or first
    assert read_day_heading(heading) == (a, b, sorted(set(ids)))
    assert read_day_heading("On 2023-05-08 the user said hello") is None
    assert cited_turns(heading) == []  # a heading names what a part was made from; it cites no line


def test_one_day_is_one_fold_as_notebook_08_builds_it(offline):
    summariser = Summariser(**offline)
    times = {0: MAY_8, 1: MAY_8}
    update = summariser.summarise(RollingSummary(), [(0, LAKE), (1, CAMP)], times=times)
    assert summariser.requests == 1 and read_day_heading(update.summary.text.splitlines()[0]) is None
    assert update.summary.header() == "Summary of earlier turns (turns 0-1):"


def test_a_new_day_gets_its_own_part_and_the_old_part_is_not_folded_again():
    server = ScriptedServer([{"content": "[turn 0, 2023-05-08] The user painted a lake sunrise."},
                             {"content": "[turn 1, 2023-05-25] The user plans a camping trip."},
                             {"content": "[turn 1, 2023-05-25] Camping next month; [turn 2] pottery on Thursdays."}])
    summariser = Summariser(**server.kwargs())
    times = {0: MAY_8, 1: MAY_25, 2: MAY_25}
    first = summariser.summarise(RollingSummary(), [(0, LAKE)], times=times).summary
    second = summariser.summarise(first, [(1, CAMP)], times=times).summary
    assert second.text.splitlines() == [
        "On 2023-05-08 (made from turn 0):", "[turn 0, 2023-05-08] The user painted a lake sunrise.",
        "On 2023-05-25 (made from turn 1):", "[turn 1, 2023-05-25] The user plans a camping trip."]
    assert "lake sunrise" not in server.requests[1]["messages"][1]["content"]  # the new day's fold reads its day only
    third = summariser.summarise(second, [(2, POTTERY)], times=times).summary
    asked = server.requests[2]["messages"][1]["content"]
    assert "plans a camping trip" in asked and "lake sunrise" not in asked  # May 25's part, folded with turn 2
    assert third.turn_ids == [0, 1, 2] and "lake sunrise" in third.text  # May 8's part kept as it was
    assert [read_day_heading(line)[2] for line in third.text.splitlines() if read_day_heading(line)] == [[0], [1, 2]]
    state = json.loads(json.dumps(third.to_dict()))
    assert RollingSummary.from_dict(state) == third  # the parts live in the text: saved and restored as it was


def test_turns_of_several_days_in_one_call_are_folded_per_day_in_day_order(offline):
    summariser = Summariser(**offline)
    times = {0: MAY_25, 1: MAY_8, 2: MAY_25}
    update = summariser.summarise(RollingSummary(), [(0, CAMP), (1, LAKE), (2, POTTERY)], times=times)
    headings = [read_day_heading(line) for line in update.summary.text.splitlines() if read_day_heading(line)]
    assert headings == [("2023-05-08", "2023-05-08", [1]), ("2023-05-25", "2023-05-25", [0, 2])]
    assert summariser.requests == 2 and update.summary.turn_ids == [0, 1, 2]


def test_a_summary_made_before_it_spanned_days_becomes_its_first_part():
    old = RollingSummary("[turn 0] The user painted a lake sunrise.\n[turn 1] Camping next month.", [0, 1])
    parts, pinned = day_parts(old, {0: MAY_8, 1: MAY_25})
    assert [(p.first, p.last, p.turn_ids, p.heading) for p in parts] == [("2023-05-08", "2023-05-25", [0, 1], False)]
    server = ScriptedServer([{"content": "[turn 2, 2023-06-09] Pottery on Thursdays."}])
    update = Summariser(**server.kwargs()).summarise(old, [(2, POTTERY)], times={0: MAY_8, 1: MAY_25, 2: "2023-06-09"})
    assert update.summary.text.splitlines()[0] == "From 2023-05-08 to 2023-05-25 (made from turns 0-1):"
    assert "Camping next month" in update.summary.text and update.summary.turn_ids == [0, 1, 2]


def test_a_pinned_fact_in_another_days_part_is_not_asked_for_again_and_pinned_stays_one_line_at_the_end():
    server = ScriptedServer([{"content": "[turn 0, 2023-05-08] Locker 4471."},
                             {"content": "[turn 1, 2023-05-25] Camping."},  # leaves out the new pinned fact
                             {"content": "[turn 1, 2023-05-25] Camping again."}])
    summariser = Summariser(**server.kwargs())
    times = {0: MAY_8, 1: MAY_25}
    first = summariser.summarise(RollingSummary(), [(0, LAKE)], keep=["Locker 4471"], times=times).summary
    with pytest.warns(Warning, match="appended verbatim"):
        update = summariser.summarise(first, [(1, CAMP)], keep=["Locker 4471", "allergic to nuts"], times=times)
    asked = server.requests[1]["messages"][1]["content"]
    assert "allergic to nuts" in asked and "Locker 4471" not in asked.split("KEEP:")[1].split("TURNS:")[0]
    lines = update.summary.text.splitlines()
    assert [read_pinned_line(line) for line in lines if read_pinned_line(line) is not None] == [["allergic to nuts"]]
    assert read_pinned_line(lines[-1]) == ["allergic to nuts"]


def test_trimming_drops_old_days_first_and_never_leaves_a_heading_over_nothing():
    text = "\n".join([write_day_heading("2023-05-08", "2023-05-08", [0]), "[turn 0] lake sunrise painting",
                      write_day_heading("2023-05-25", "2023-05-25", [1, 2]), "[turn 1] camping next month",
                      "[turn 2] pottery on thursdays", "Pinned: locker 4471"])
    kept, dropped = trim_summary_lines(text, lambda t: len(t.split("\n")) <= 4)
    assert kept.split("\n") == [write_day_heading("2023-05-25", "2023-05-25", [1, 2]), "[turn 1] camping next month",
                                "[turn 2] pottery on thursdays", "Pinned: locker 4471"] and dropped == 1
    kept, _ = trim_summary_lines(text, lambda t: "camping" not in t and "lake" not in t)
    assert kept.split("\n") == [write_day_heading("2023-05-25", "2023-05-25", [1, 2]),
                                "[turn 2] pottery on thursdays", "Pinned: locker 4471"]


def _trim_one_at_a_time(text, fits):
    """The plain way: drop the oldest droppable line, then any heading left over nothing, until it fits."""
    lines, dropped = text.splitlines(), 0

    def clean(lines):
        return [line for n, line in enumerate(lines) if read_day_heading(line) is None or (
            n + 1 < len(lines) and read_day_heading(lines[n + 1]) is None and not lines[n + 1].startswith("Pinned"))]
    lines = clean(lines)
    while lines and not fits("\n".join(lines)):
        index = next((i for i, line in enumerate(lines)
                      if not line.startswith("Pinned") and read_day_heading(line) is None), None)
        if index is None:
            break
        del lines[index]
        dropped += 1
        lines = clean(lines)
    return "\n".join(lines), dropped


LINE = st.one_of(st.builds(lambda n, w: f"[turn {n}] " + " ".join(["word"] * w), st.integers(0, 50), st.integers(1, 9)),
                 st.builds(lambda n: write_day_heading("2023-05-08", "2023-05-08", [n]), st.integers(0, 50)))


@hsettings(deadline=None, max_examples=300)
@given(st.lists(LINE, max_size=40), st.booleans(), st.integers(0, 200))
def test_trimming_by_bisection_leaves_what_dropping_one_line_at_a_time_leaves(lines, pinned, room):
    text = "\n".join(lines + (["Pinned: locker 4471"] if pinned else []))
    calls = []

    def fits(t):
        calls.append(t)
        return len(t.split()) <= room
    assert trim_summary_lines(text, fits) == _trim_one_at_a_time(text, lambda t: len(t.split()) <= room)
    assert len(calls) <= 3 + max(1, len(lines)).bit_length()  # bisection, not one call a line


def test_past_the_limit_the_oldest_days_are_rolled_up_into_one_part_and_the_header_stays_honest(offline, monkeypatch):
    from helpers.memory import summary as summary_module

    monkeypatch.setattr(summary_module, "MAX_DAY_PARTS", 3)
    summariser = Summariser(**offline)
    times = {n: f"2023-05-{n + 1:02d}T10:00:00+00:00" for n in range(6)}
    current = RollingSummary()
    for n in range(6):
        current = summariser.summarise(current, [(n, POTTERY if n % 2 else CAMP)], times=times).summary
    headings = [read_day_heading(line) for line in current.text.splitlines() if read_day_heading(line)]
    assert headings == [("2023-05-01", "2023-05-04", [0, 1, 2, 3]), ("2023-05-05", "2023-05-05", [4]),
                        ("2023-05-06", "2023-05-06", [5])]  # one part a level up, then the newest days
    assert current.turn_ids == [0, 1, 2, 3, 4, 5]
    rolled = current.text.split("On 2023-05-05")[0]
    assert set(cited_turns(rolled)) <= {0, 1, 2, 3} and cited_turns(rolled)  # its lines are those days' own
    cited = sorted(set(cited_turns(current.text)))
    assert current.header() == ("Summary of earlier turns (turns 0-5):" if cited == list(range(6)) else
                                f"Summary of earlier turns (made from turns 0-5; its lines cite {format_turn_ids(cited)}):")


def test_a_roll_up_is_one_request_that_reads_the_old_days_parts_and_no_new_turn(monkeypatch):
    from helpers.memory import summary as summary_module

    monkeypatch.setattr(summary_module, "MAX_DAY_PARTS", 2)
    server = ScriptedServer([{"content": "[turn 0, 2023-05-08] The user painted a lake sunrise."},
                             {"content": "[turn 1, 2023-05-25] The user plans a camping trip."},
                             {"content": "[turn 2, 2023-06-02] Pottery on Thursdays."},
                             {"content": "[turn 0] A lake painting; [turn 1] a camping trip."}])
    summariser = Summariser(**server.kwargs())
    times = {0: MAY_8, 1: MAY_25, 2: "2023-06-02T10:00:00+00:00"}
    current = RollingSummary()
    for n, said in enumerate((LAKE, CAMP, POTTERY)):
        current = summariser.summarise(current, [(n, said)], times=times).summary
    asked = server.requests[3]["messages"][1]["content"]
    assert "lake sunrise" in asked and "camping trip" in asked and "Pottery" not in asked
    assert asked.rstrip().endswith("TURNS:")  # the old parts are the previous summary; no turn is folded again
    assert current.text.splitlines() == [
        "From 2023-05-08 to 2023-05-25 (made from turns 0-1):", "[turn 0] A lake painting; [turn 1] a camping trip.",
        "On 2023-06-02 (made from turn 2):", "[turn 2, 2023-06-02] Pottery on Thursdays."]


def test_a_pinned_fact_only_the_rolled_up_days_held_is_checked_and_kept(monkeypatch):
    from helpers.memory import summary as summary_module
    from helpers.memory.summary import SummaryWarning, missing_facts

    monkeypatch.setattr(summary_module, "MAX_DAY_PARTS", 2)
    fact = "my locker is 4471"
    server = ScriptedServer([{"content": "[turn 0, 2023-05-08] A lake painting; my locker is 4471."},
                             {"content": "[turn 1, 2023-05-25] A camping trip."},
                             {"content": "[turn 2, 2023-06-02] Pottery on Thursdays."},
                             {"content": "[turn 0] A lake painting; [turn 1] a camping trip."},
                             {"content": "[turn 0] A lake painting; [turn 1] a camping trip."}])
    summariser = Summariser(**server.kwargs())
    times = {0: MAY_8, 1: MAY_25, 2: "2023-06-02T10:00:00+00:00"}
    current = RollingSummary()
    with pytest.warns(SummaryWarning, match="appended verbatim"):
        for n, said in enumerate((LAKE, CAMP, POTTERY)):
            current = summariser.summarise(current, [(n, said)], keep=[fact], times=times).summary
    assert fact in server.requests[3]["messages"][1]["content"]  # the roll-up is asked to keep it
    assert len(server.requests) == 5 and missing_facts(current.text, [fact]) == []
    pinned = [line for line in current.text.splitlines() if read_pinned_line(line) is not None]
    assert len(pinned) == 1 and current.text.splitlines()[-1] == pinned[0]  # one Pinned line, at the end


def test_turns_without_a_time_keep_their_own_part_when_old_days_are_rolled_up(offline, monkeypatch):
    from helpers.memory import summary as summary_module

    monkeypatch.setattr(summary_module, "MAX_DAY_PARTS", 3)
    summariser = Summariser(**offline)
    times = {n: f"2023-05-{n:02d}T10:00:00+00:00" for n in range(1, 5)}  # turn 0 has no time
    current = RollingSummary()
    for n in range(5):
        current = summariser.summarise(current, [(n, POTTERY if n % 2 else CAMP)], times=times).summary
    headings = [read_day_heading(line) for line in current.text.splitlines() if read_day_heading(line)]
    assert headings == [(None, None, [0]), ("2023-05-01", "2023-05-03", [1, 2, 3]), ("2023-05-04", "2023-05-04", [4])]
