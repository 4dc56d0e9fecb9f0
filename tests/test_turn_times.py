"""Each turn carries the time it was said (``MemoryAssembler.remember(created_at=...)``): recall quotes, the
summary and the profile show its day, it is saved and restored with the turn, and staleness counts from it.
Also: the summary header never claims turns its lines hold nothing of, and recall may use every share the
other blocks leave (helpers/memory/assembler.py, summary.py, budget.py; helpers/core/context_format.py)."""
from datetime import datetime, timedelta, timezone

import pytest

from helpers.core import clock, tokens
from helpers.core import context_format as cf
from helpers.core.errors import ConfigError
from helpers.chat.history import split_turns
from helpers.memory.assembler import MemoryAssembler, MemoryStateError, assemble_context
from helpers.memory.budget import Shares
from helpers.memory.profile import ProfileMemory
from helpers.memory.recall import Recalled, quote_turn
from helpers.memory.summary import RollingSummary, Summariser, render_turn
from helpers.chat.validity import find_problems

from support import turn

MAY_8 = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
SYSTEM = "You are the Larkspur campus assistant."


def memory(offline, **options):
    return MemoryAssembler(**offline, **options)


# ---------------------------------------------------------------- the tag and its reader

@pytest.mark.parametrize("at, day", [(MAY_8, "2023-05-08"), ("2023-05-08T13:56:00+00:00", "2023-05-08"),
                                     (MAY_8.date(), "2023-05-08"), (None, None), ("yesterday", None)])
def test_a_turn_tag_carries_its_day_and_reads_back(at, day):
    line = cf.write_quote_line(7, "user", "I adopted a kitten.", at=at, name="Caroline")
    assert line.startswith(f"[turn 7, {day}] " if day else "[turn 7] ")
    assert cf.read_turn_day(line) == day
    assert cf.read_quotes(line) == [cf.Quote(7, "user", "I adopted a kitten.", name="Caroline", day=day)]
    assert cf.read_turn_line(cf.write_turn_line(7, "assistant", "Noted.", at))[:2] == (7, "assistant")
    assert cf.read_tools_line(cf.write_tools_line(7, ["search"], at)) == (7, ["search"])
    assert cf.is_block_line(line)  # a dated quote is context, never an instruction


# ---------------------------------------------------------------- remember(created_at=...)

def test_recall_quotes_the_day_a_turn_was_said(offline):
    mem = memory(offline, summariser=False, profile=False)
    mem.remember(0, turn("I adopted a kitten called Pepper last week."), created_at=MAY_8)
    mem.remember(1, turn("My sister lives in Lisbon."), created_at=MAY_8 + timedelta(days=40))
    assembly = mem.build(SYSTEM, [], "What is the kitten called?", budget=800)
    block = next(m["content"] for m in assembly.messages if m["content"].startswith(cf.RECALL_HEADER))
    assert 'On 2023-05-08:\n[turn 0] user: "I adopted a kitten called Pepper last week."' in block
    assert [(q.turn_id, q.day) for q in cf.read_quotes(block)][0] == (0, "2023-05-08")
    assert mem.state()["turns"]["0"]["at"] == MAY_8.isoformat()


def test_a_turn_without_a_time_gets_the_clock_s_now(offline, monkeypatch):
    monkeypatch.setenv(clock.ENV_VAR, "2026-11-30T10:00:00-08:00")
    mem = memory(offline, summariser=False, profile=False)
    mem.remember(0, turn("My locker is 4471."))
    assert mem.times[0] == clock.now().isoformat()
    assert mem.recall.quotes[0].startswith("[turn 0, 2026-11-30] ")


@pytest.mark.parametrize("bad", [datetime(2023, 5, 8), "8 May 2023", 1683554160, "2023-05-08T13:56:00"])
def test_a_time_that_is_not_one_is_refused_before_anything_is_kept(offline, bad):
    mem = memory(offline, summariser=False)
    with pytest.raises(ConfigError):
        mem.remember(0, turn("My locker is 4471."), created_at=bad)
    assert mem.state()["turns"] == {} and len(mem.recall) == 0


def test_times_are_saved_with_each_turn_restored_and_checked(offline):
    mem = memory(offline, summariser=False)
    mem.remember(0, turn("My locker is 4471."), created_at=MAY_8)
    mem.remember(1, turn("ok"), created_at=MAY_8 + timedelta(hours=1))  # small talk: still dated
    state = mem.state()
    again = memory(offline, summariser=False)
    again.restore(state)
    assert again.times == mem.times and again.state() == state
    point = again.checkpoint()
    again.remember(2, turn("I moved to room 318."), created_at=MAY_8 + timedelta(days=1))
    assert again.state_at(point) == state
    again.rollback(point)
    assert again.times == mem.times
    again.discard(1)
    assert 1 not in again.times and "1" not in again.state()["turns"]
    for damaged in ("tomorrow", 20230508, None):
        broken = {**state, "turns": {**state["turns"], "0": {**state["turns"]["0"], "at": damaged}}}
        with pytest.raises(MemoryStateError, match="turn 0"):
            memory(offline, summariser=False).restore(broken)


def test_the_profile_dates_a_fact_with_its_turn_and_counts_staleness_from_it(offline, monkeypatch):
    monkeypatch.setenv(clock.ENV_VAR, "2026-11-30T10:00:00-08:00")
    profile = ProfileMemory(stale_after=timedelta(days=180))
    mem = memory(offline, summariser=False, recall=False, profile=profile)
    mem.remember(0, turn("My locker number is 4471."), created_at=MAY_8)
    mem.remember(1, turn("My advisor is Dr. Okafor."))  # said now
    lines = profile.lines()
    locker = next(line for line in lines if "4471" in line)
    advisor = next(line for line in lines if "Okafor" in line)
    assert "2023-05-08" in locker and "possibly outdated" in locker
    assert "2026-11-30" in advisor and "possibly outdated" not in advisor


def test_the_summariser_sees_dated_turns_and_the_offline_summary_keeps_the_dates(offline):
    lines = render_turn(4, turn("I painted a sunrise at the lake.", "What a lovely idea!"), at=MAY_8)
    assert lines[0].startswith("[turn 4, 2023-05-08] user: ")
    mem = memory(offline, recall=False, profile=False, window_turns=1)
    for i in range(3):
        mem.remember(i, turn(f"I painted picture number {i + 1} at the lake."), created_at=MAY_8 + timedelta(days=i))
    mem.forget([(0, turn("I painted picture number 1 at the lake.")),
                (1, turn("I painted picture number 2 at the lake."))])
    assert "[turn 0, 2023-05-08]" in mem.summary.text and "[turn 1, 2023-05-09]" in mem.summary.text


# ---------------------------------------------------------------- an honest summary header

def test_the_header_names_only_the_turns_its_lines_cite():
    full = RollingSummary('[turn 0] user: "A"\n[turn 1] user: "B"', [0, 1])
    assert full.header() == "Summary of earlier turns (turns 0-1):"
    kept = RollingSummary('(Left out to stay within the word limit: turns 0-206.)\n'
                          '[turn 207, 2023-10-22] user: "Thanks so much!"', list(range(208)))
    header = kept.header()
    assert header == "Summary of earlier turns (made from turns 0-207; its lines cite turn 207):"
    assert cf.read_summary_header(header) == list(range(208)) and cf.read_summary_cited(header) == [207]
    none = RollingSummary("The user likes maps.", [3, 4])
    assert cf.read_summary_cited(none.header()) == [] and cf.read_summary_header(none.header()) == [3, 4]


def test_a_trimmed_summary_block_names_only_the_lines_it_still_sends():
    lines = [f'[turn {i}] user: "I walked to building number {i} and met a friend there."' for i in range(12)]
    summary = RollingSummary("\n".join(lines), list(range(12)))
    assembly = assemble_context(SYSTEM, [], "Where did I walk?", budget=600, summary=summary)
    block = next(m["content"] for m in assembly.messages if m["content"].startswith(cf.SUMMARY_HEADER))
    header, _, body = block.partition("\n")
    assert cf.read_summary_cited(header) == cf.cited_turns(body) and len(cf.cited_turns(body)) < 12
    assert cf.read_summary_header(header) == list(range(12))


# ---------------------------------------------------------------- recall may use the shares left unused

def recalled(n):
    return [Recalled(i, 1.0 - i / 100, quote_turn(i, turn(f"I keep spare key number {i} in drawer {i}.")))
            for i in range(n)]


def window(n, first=100):
    return [(first + i, turn(f"question {i}", f"answer {i} " * 5)) for i in range(n)]


def test_recall_takes_the_shares_the_profile_and_summary_left():
    shares = Shares(profile=0.15, summary=0.20, recall=0.25)
    assembly = assemble_context(SYSTEM, window(6), "Where is the key?", budget=900, shares=shares,
                                recalled=recalled(40))
    room = 900 - sum(p.tokens for p in assembly.report.parts if p.kind in ("fixed", "system", "question"))
    recall = assembly.report.part("recall")
    assert recall.tokens > 0.25 * room + 20  # more than its own share: nothing else used theirs
    assert assembly.report.part("window").tokens >= 1  # the window keeps its own share
    assert assembly.report.total <= 900 and not find_problems(assembly.messages + [assembly.question])


def test_the_window_grows_into_what_recall_leaves():
    assembly = assemble_context(SYSTEM, window(6), "Where is the key?", budget=900, recalled=recalled(1))
    assert assembly.report.part("window").included == [100 + i for i in range(6)]
    turns = split_turns(assembly.messages)[1]
    assert turns == [t for _, t in window(6)]  # whole turns, none cut in half


def test_the_window_keeps_its_own_share_whatever_recall_could_use():
    plain = assemble_context(SYSTEM, window(6), "Where is the key?", budget=900, shares=Shares(0, 0, 0.6))
    crowded = assemble_context(SYSTEM, window(6), "Where is the key?", budget=900, shares=Shares(0, 0, 0.6),
                               recalled=recalled(60))
    room = 900 - sum(p.tokens for p in crowded.report.parts if p.kind in ("fixed", "system", "question"))
    kept = crowded.report.part("window")
    assert 0 < kept.tokens <= 0.4 * room and kept.included == plain.report.part("window").included[-len(kept.included):]
    assert crowded.report.total <= 900 and tokens.count_request(crowded.messages + [crowded.question]) <= 900
