"""The context assembler (helpers/memory/assembler.py) and ChatSession(memory=...)."""
import json

import httpx2
import openai
import pytest
from hypothesis import HealthCheck, given, settings as hyp_settings, strategies as st

from helpers.core import tokens
from helpers.llm.client import EndpointError
from helpers.llm.config import load_settings
from helpers.core.errors import EmptyMessageError
from helpers.chat.history import split_turns
from helpers.memory.assembler import MemoryAssembler, assemble_context, fit_window, mark_superseded
from helpers.memory.budget import ContextBudgetError, Shares, relevant_first
from helpers.memory.recall import Recalled, quote_turn
from helpers.memory.recall_index import RecallIndex, RecallWarning
from helpers.memory.summary import RollingSummary, Summariser, SummaryWarning
from helpers.facts.writer import Candidate
from helpers.standin.server import make_offline_client
from helpers.chat.chat_session import ChatSession
from helpers.chat.validity import find_problems

from scripted import ScriptedServer, tool_call
from support import BREAKS, assert_lines, broken_client, forged, shared_profile, turn

SYSTEM = "You are the Larkspur campus assistant."


def tool_turn(i, size=1):
    cid = f"call_{i}"
    return [{"role": "user", "content": f"question {i}"},
            {"role": "assistant", "content": None, "tool_calls": [tool_call("search_campus_info", {"q": i}, cid)]},
            {"role": "tool", "tool_call_id": cid, "content": "result " * size},
            {"role": "assistant", "content": f"answer {i}"}]


def offline():
    return {"client": make_offline_client(), "settings": load_settings("offline")}


WINDOW = [(i, tool_turn(i, size=5 + 3 * i)) for i in range(6)]
SUMMARY = RollingSummary('[turn 0] user: "My name is Priya."\n[turn 1] user: "I like maps."\nPinned: 40 dollars',
                         [0, 1])
PROFILE = ["- name: Priya (turn 0, 2026-11-30)", "- constraint/diet: vegetarian (turn 1, 2026-11-30)"]
RECALLED = [Recalled(0, 0.8, quote_turn(0, turn("My name is Priya."))),
            Recalled(1, 0.5, quote_turn(1, turn("I like maps.")))]


# ---------------------------------------------------------------- budget arithmetic

def test_blocks_come_in_budget_order():
    assembly = assemble_context(SYSTEM, WINDOW[-2:], "What next?", profile_lines=PROFILE, summary=SUMMARY,
                                recalled=RECALLED)
    heads = [m["content"].split(" ")[0] for m in assembly.messages[:4]]
    assert heads == ["You", "User", "Summary", "Recalled"]
    assert split_turns(assembly.messages)[1] == [t for _, t in WINDOW[-2:]]
    assert [p.kind for p in assembly.report.parts] == ["fixed", "system", "profile", "summary", "recall", "window",
                                                       "question"]


def test_report_total_is_the_exact_request_cost():
    assembly = assemble_context(SYSTEM, WINDOW, "What next?", budget=700, summary=SUMMARY, recalled=RECALLED,
                                profile_lines=PROFILE)
    assert assembly.report.total == tokens.count_request(assembly.request) <= 700


@hyp_settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sizes=st.lists(st.integers(0, 80), min_size=0, max_size=8), budget=st.integers(60, 900),
       shares=st.tuples(st.floats(0, 0.3), st.floats(0, 0.3), st.floats(0, 0.3)),
       n_profile=st.integers(0, 2), n_recalled=st.integers(0, 2), with_summary=st.booleans())
def test_never_over_budget_never_a_split_turn(sizes, budget, shares, n_profile, n_recalled, with_summary):
    window = [(i, tool_turn(i, size)) for i, size in enumerate(sizes)]
    try:
        assembly = assemble_context(SYSTEM, window, "What next?", budget=budget, shares=Shares(*shares),
                                    profile_lines=PROFILE[:n_profile], recalled=RECALLED[:n_recalled],
                                    summary=SUMMARY if with_summary else None)
    except ContextBudgetError:
        assert tokens.count_request([{"role": "system", "content": SYSTEM},
                                     {"role": "user", "content": "What next?"}]) > budget

        return
    assert tokens.count_request(assembly.request) <= budget
    assert find_problems(assembly.request) == []
    included = assembly.report.ids("window")
    assert included == [i for i, _ in window][len(window) - len(included):]  # the newest, contiguous
    kept_turns = [t for t in split_turns(assembly.messages)[1]]
    assert kept_turns == [t for i, t in window if i in included]  # whole turns, unchanged
    if with_summary and assembly.report.ids("summary"):
        assert "Pinned: 40 dollars" in assembly.messages[1 + bool(assembly.report.ids("profile"))]["content"]


def test_pinned_facts_borrow_from_the_window_when_the_summary_share_is_tiny():
    assembly = assemble_context(SYSTEM, WINDOW, "What next?", budget=400, summary=SUMMARY,
                                shares=Shares(summary=0.01))
    summary = assembly.report.part("summary")
    assert "over its share" in summary.note and "2 oldest lines trimmed" in summary.note
    assert "Pinned: 40 dollars" in assembly.messages[1]["content"] and "My name" not in assembly.messages[1]["content"]


def test_summary_that_cannot_fit_at_all_is_left_out_with_a_note():
    big = RollingSummary("Pinned: " + "; ".join(f"fact {i}" for i in range(200)), [0])
    assembly = assemble_context(SYSTEM, WINDOW, "What next?", budget=300, summary=big)
    assert assembly.report.ids("summary", dropped=True) == [0] and "do not fit" in assembly.report.warnings[0]


def test_summary_with_no_line_that_fits_is_left_out():
    plain = RollingSummary('[turn 0] user: "' + "word " * 40 + '"', [0])
    assembly = assemble_context(SYSTEM, [], "next?", budget=120, summary=plain, shares=Shares(summary=0.1))
    assert assembly.report.ids("summary", dropped=True) == [0] and "no line" in assembly.report.warnings[0]


def test_huge_window_turn_is_dropped_whole_with_everything_older():
    window = [(0, turn("small")), (1, turn("x " * 5000)), (2, turn("newest"))]
    assembly = assemble_context(SYSTEM, window, "next?", budget=300)
    assert assembly.report.ids("window") == [2] and assembly.report.ids("window", dropped=True) == [0, 1]


def test_profile_drops_stale_facts_first():
    lines = PROFILE + ["- preference/stop: north gate (turn 2, 2025-01-01; possibly outdated)"]
    assembly = assemble_context(SYSTEM, [], "next?", budget=200, profile_lines=lines, shares=Shares(profile=0.4))
    assert assembly.report.ids("profile", dropped=True) == [lines[2]]


def test_recall_keeps_to_its_share_best_first():
    seen = set()
    cost = [tokens.count_text(r.text) for r in RECALLED]
    for budget in range(80, 400):  # at every budget: the best turn that fits first, the rest dropped
        try:
            assembly = assemble_context(SYSTEM, [], "next?", budget=budget, recalled=RECALLED,
                                        shares=Shares(recall=0.4))
        except ContextBudgetError:
            continue
        kept, dropped = assembly.report.ids("recall"), assembly.report.ids("recall", dropped=True)
        assert sorted(kept + dropped) == [0, 1] and kept == sorted(kept) and assembly.report.total <= budget
        if kept == [1]:  # the better turn was skipped only because it alone would overflow the share
            assert cost[0] > cost[1]
        seen.add(tuple(kept))
    assert seen == {(1,), (0,), (0, 1)}


def test_recall_takes_what_the_window_s_share_leaves_and_no_more():
    window = [(10 + i, turn(f"question {i}", "answer " * 30)) for i in range(6)]
    many = [Recalled(i, 1 - i / 100, quote_turn(i, turn(f"I keep key {i} in drawer {i}."))) for i in range(60)]
    assembly = assemble_context(SYSTEM, window, "next?", budget=700, recalled=many)
    room = 700 - sum(p.tokens for p in assembly.report.parts if p.kind in ("fixed", "system", "question"))
    own = fit_window(window, int(room * Shares().window), tokens.count_message)[1]  # what the share holds alone
    assert own.included and assembly.report.part("window").included[-len(own.included):] == own.included
    assert assembly.report.part("recall").tokens <= room - own.tokens and assembly.report.total <= 700


def test_unused_shares_go_to_the_window():
    alone = assemble_context(SYSTEM, WINDOW, "next?", budget=600)
    assert alone.report.part("window").cap == 600 - sum(p.tokens for p in alone.report.parts
                                                        if p.kind in ("fixed", "system", "question"))


def test_no_budget_includes_everything():
    assembly = assemble_context(SYSTEM, WINDOW, "next?", summary=SUMMARY, recalled=RECALLED, profile_lines=PROFILE)
    assert assembly.report.ids("window") == list(range(6))
    assert assembly.report.ids("recall") == []  # turns 0 and 1 go whole in the window, not quoted again
    later = [Recalled(10 + r.turn_id, r.score, r.text.replace(f"[turn {r.turn_id}]", f"[turn {10 + r.turn_id}]"))
             for r in RECALLED]
    everything = assemble_context(SYSTEM, WINDOW, "next?", summary=SUMMARY, recalled=later, profile_lines=PROFILE)
    assert everything.report.ids("window") == list(range(6)) and everything.report.ids("recall") == [10, 11]


def test_budget_too_small_for_the_question_is_explained():
    with pytest.raises(ContextBudgetError, match="raise the budget"):
        assemble_context(SYSTEM, WINDOW, "next? " * 50, budget=40)


@pytest.mark.parametrize("question", ["", "   "])
def test_empty_question_is_refused(question):
    with pytest.raises(EmptyMessageError, match="empty"):
        assemble_context(SYSTEM, WINDOW, question, budget=400)


@pytest.mark.parametrize("bad", [0, -5, 1.5, True])
def test_bad_budget_is_refused(bad):
    with pytest.raises(ValueError, match="budget"):
        assemble_context(SYSTEM, [], "next?", budget=bad)


def test_shares_must_leave_room_for_the_window():
    with pytest.raises(ValueError, match="add up to at most 1"):
        Shares(0.5, 0.5, 0.5)


# ---------------------------------------------------------------- MemoryAssembler

def test_failing_summariser_degrades_to_the_window_and_keeps_the_raw_turns():
    memory = MemoryAssembler(summariser=Summariser(**ScriptedServer([503]).kwargs()), recall=False, profile=False)
    with pytest.warns(SummaryWarning, match="using the plain window"):
        memory.forget([(0, turn("My name is Priya."))])
    assert memory.pending == [(0, turn("My name is Priya."))] and memory.summary.text == ""
    assembly = memory.build(SYSTEM, [(1, turn("hi"))], "next?", budget=300)
    assert assembly.report.warnings == ["turn 0 not summarised yet"]
    memory.summariser = Summariser(**offline())
    memory.forget([(1, turn("I like maps."))])
    assert memory.summary.turn_ids == [0, 1] and memory.pending == []


def test_failing_embeddings_degrade_to_the_window():
    memory = MemoryAssembler(summariser=False, profile=False, recall=RecallIndex(client=broken_client(),
                                                                                   settings=load_settings("offline")))
    memory.remember(0, turn("My locker number is 4471."))
    with pytest.warns(RecallWarning):
        assembly = memory.build(SYSTEM, [], "What's my locker number?", budget=300)
    assert assembly.report.ids("recall") == [] and "recall skipped" in assembly.report.warnings[0]
    assert memory.recall.pending == [0]


def test_pin_adds_a_keep_fact():
    memory = MemoryAssembler(summariser=Summariser(**offline()), recall=False, profile=False)
    memory.pin("budget is 40 dollars")
    memory.forget([(0, turn("Hi. I study maps. My budget is 40 dollars."))])
    assert "budget is 40 dollars" in memory.summary.text


# ---------------------------------------------------------------- ChatSession(memory=...)

INTRO = "Hi! My name is Priya Raman. I can't do mornings."
CAMPUS = ["When does the AI club meet?", "Where can I print a poster?", "When is the library open?",
          "When does the robotics club meet?"]


@pytest.fixture(scope="module")
def long_session():
    session = ChatSession(memory=MemoryAssembler(**offline()), max_turns=2, max_tokens=1800, **offline())
    for question in [INTRO] + CAMPUS:
        session.chat(question)
    return session


def test_session_keeps_every_raw_turn(long_session):
    ids = [d.turn_id for d in long_session.dropped] + long_session.turn_ids
    assert ids == list(range(5)) and long_session.dropped[0].messages[0]["content"] == INTRO
    assert long_session.memory.summary.turn_ids == [0, 1]  # the window holds turns 2-3 when 4 is asked


def test_session_first_requests_fit_the_budget(long_session):
    stats = long_session.stats
    firsts = [p for p, t, prev in zip(stats.prompt_tokens, stats.turn_of_request, [None] + stats.turn_of_request)
              if t != prev]
    assert len(firsts) == 5 and max(firsts) <= 1800
    assert stats.estimated_tokens[0] == stats.prompt_tokens[0]  # the offline count is exact


def test_memory_answers_what_the_window_forgot(long_session):
    forgetful = ChatSession(max_turns=2, **offline())
    for question in [INTRO] + CAMPUS:
        forgetful.chat(question)
    assert forgetful.chat("What is my name?").startswith("I don't know")
    snapshot = json.loads(json.dumps(long_session.snapshot()))
    resumed = ChatSession.from_snapshot(snapshot, memory=MemoryAssembler(**offline()), **offline())
    assert "Priya Raman" in resumed.chat("What is my name?")
    assert "can't do mornings" in resumed.chat("What did I say about mornings?")
    report = resumed.memory.last_report
    assert report.ids("profile") and find_problems(resumed.messages) == []


def test_verbose_session_shows_the_context_and_memory_events(capsys):
    session = ChatSession(memory=MemoryAssembler(**offline()), max_turns=1, verbose=True, **offline())
    session.chat(INTRO)
    session.chat("ok thanks")
    session.chat("When is the library open?")
    out = capsys.readouterr().out
    assert "memory  profile name/name = 'Priya Raman' (turn 0)" in out
    assert "memory  turn 1 states nothing to recall (a question or small talk)" in out
    assert "memory  summarised turn 0" in out and "context summary" in out


def test_budget_error_leaves_the_session_unchanged():
    session = ChatSession(memory=MemoryAssembler(**offline()), max_tokens=700, **offline())
    with pytest.raises(ContextBudgetError):
        session.chat("hello")  # the tool schemas alone are over 600 tokens
    assert session.turns == [] and len(session.messages) == 1


def test_empty_message_is_refused_before_anything_is_sent():
    session = ChatSession(memory=MemoryAssembler(**offline()), **offline())
    with pytest.raises(EmptyMessageError):
        session.chat("  ")
    assert session.turns == [] and session.stats.prompt_tokens == []


def test_failed_turn_is_rolled_back_with_memory():
    server = ScriptedServer([{"content": "hello"}, 503])
    session = ChatSession(memory=MemoryAssembler(**offline()), **server.kwargs())
    session.chat("My name is Priya.")
    before = session.messages
    with pytest.raises(EndpointError):
        session.chat("and now?")
    assert session.messages == before and session.turn_ids == [0]


def test_undo_and_reset_clear_the_memory_of_a_turn():
    session = ChatSession(memory=MemoryAssembler(**offline()), **offline())
    session.chat("My name is Priya Raman.")
    session.undo()
    assert len(session.memory.profile) == 0 and len(session.memory.recall) == 0
    session.chat("My name is Priya Raman.")
    session.reset()
    assert len(session.memory.profile) == 0 and session.memory.summary.text == ""


def test_streamed_turn_uses_the_memory_too():
    session = ChatSession(memory=MemoryAssembler(**offline()), **offline())
    streamed = "".join(session.stream("My name is Priya Raman."))
    assert streamed == "Noted: Priya Raman." and session.memory.profile.get("name").value == "Priya Raman"


# ---------------------------------------------------------------- corrections in the context

def corrected_memory():
    memory = MemoryAssembler(summariser=False, **offline())
    for turn_id, text in [(0, "My locker number is 4471."), (1, "My advisor is Dr. Varga."),
                          (2, "My locker number is 4471."), (30, "Actually, my locker number is 5502.")]:
        memory.remember(turn_id, turn(text))
    return memory


def test_an_old_value_in_the_context_is_always_marked_superseded():
    memory = corrected_memory()
    assembly = memory.build(SYSTEM, [(31, turn("hello there"))], "What's my locker number?")
    text = "\n".join(m["content"] for m in assembly.messages if m["role"] == "system")
    lines = [line for line in text.splitlines() if "4471" in line]
    assert lines and all("superseded" in line for line in lines)
    assert '- locker number: 5502 (turn 30, 2026-11-30; superseded "4471" from turn 2)' in text
    assert '(superseded at turn 30: locker number is now "5502")' in text


def test_mark_superseded_leaves_newer_lines_and_other_values_alone():
    memory = corrected_memory()
    pairs = memory.profile.superseded()
    text = ('[turn 2] user: "My locker number is 4471."\n[turn 31] user: "4471 was my old one"\n'
            '[turn 1] user: "x"')
    marked = mark_superseded(text, pairs).splitlines()
    assert marked[0].endswith('(superseded at turn 30: locker number is now "5502")')
    assert marked[1:] == text.splitlines()[1:]
    assert mark_superseded(marked[0], pairs) == marked[0]  # marking twice adds nothing


def test_profile_lines_about_the_question_come_first():
    lines = ["- name: Priya (turn 0, x)", "- dorm room: Wren 3 (turn 4, x)",
             "- locker number: 5502 (turn 9, x)"]
    assert relevant_first(lines, "Which locker is mine?")[0].startswith("- locker number")
    assert relevant_first(lines, "hello") == lines


def test_profile_lines_are_ranked_by_meaning_when_no_word_is_shared():
    memory = MemoryAssembler(summariser=False, **offline())
    for turn_id, text in enumerate(["My locker number is 4471.", "My thesis topic is coral bleaching.",
                                    "My roommate is Dev Castellanos.", "My hometown is Port Ellery.",
                                    "My meal plan is the Silver 14 plan."]):
        memory.remember(turn_id, turn(text))
    memory.build(SYSTEM, [], "Where did I grow up?")
    assert memory.last_inputs["profile_lines"][0].startswith("- hometown: Port Ellery")
    memory.build(SYSTEM, [], "Who do I share my room with?")
    assert memory.last_inputs["profile_lines"][0].startswith("- roommate: Dev Castellanos")


# ---------------------------------------------------------------- no block of an assembled request can be forged


class _Recall:
    """A recall index that always finds one quoted turn (the real one needs embeddings)."""

    def __init__(self, text):
        self.text = text

    def attach(self, client=None, settings=None):
        pass

    def search(self, question, exclude=()):
        return [Recalled(1, 0.9, self.text)]

    def similarity(self, question, texts):
        return None


@pytest.mark.parametrize("brk", BREAKS)
def test_no_block_of_an_assembled_request_can_be_forged(brk):
    profile = shared_profile("4471")
    # a correction as another writer stored it: a value with a line break in it
    decision = profile.store.write(Candidate("dana", "user", "locker number", forged("5502", brk),
                                             "form:registrar", "tool", 2))
    assert decision.outcome == "correction", decision
    # A summary's and a quote's own "\n" are lines the package (or the summariser) wrote; any other line break
    # in them (a model echoing one, an old snapshot) must not become a line.
    hidden = "" if brk in ("\n", "\r\n") else forged("", brk)
    memory = MemoryAssembler(summariser=Summariser(), profile=profile,
                             recall=_Recall(f'[turn 1] user: "My locker number is 4471.{hidden}"'))
    memory.summary = RollingSummary(f'[turn 0] user: "My locker number is 4471.{hidden}"', [0])
    assembly = memory.build("You are a campus assistant.", [], "What is my locker number?")
    blocks = [m["content"] for m in assembly.messages if m["role"] == "system"][1:]
    assert [b.split("\n", 1)[0].split(" (")[0] for b in blocks] == [
        "User profile", "Summary of earlier turns", "Recalled earlier turns"]
    for block in blocks:
        assert_lines(block, expected=2)
    assert 'superseded at turn 2: locker number is now "5502\\' in blocks[2]
    assert 'superseded at turn 2: locker number is now "5502\\' in blocks[1]
    assert 'superseded "4471"' in blocks[0]


def test_mark_superseded_is_given_one_line_values():
    profile = shared_profile("4471")
    profile.store.write(Candidate("dana", "user", "locker number", forged("5502", "\n"), "form:registrar",
                                  "tool", 2))
    memory = MemoryAssembler(summariser=False, recall=_Recall('[turn 1] user: "My locker number is 4471."'),
                             profile=profile)
    recall_text = [m["content"] for m in memory.build(None, [], "What is my locker?").messages
                   if m["content"].startswith("Recalled")][0]
    assert_lines(recall_text, expected=2)
    raw = mark_superseded('[turn 1] user: "4471"', profile.superseded())  # the notebook's own function
    assert "\n" in raw  # (fed raw values it would add lines: that is why build gives it one-line facts)


# ---------------------------------------------------------------- a window turn that does not fit is not lost

def test_a_window_turn_the_window_cannot_hold_is_recalled_and_sent_once():
    mem = MemoryAssembler(summariser=False, profile=False, client=make_offline_client(),
                          settings=load_settings("offline"))
    chatter = [(i, turn(f"Let us talk about the weather on day {i} of the trip, it was rainy and grey.",
                        "Rainy days are good for reading. " * 6)) for i in range(1, 6)]
    window = [(0, turn("My locker number is 4471, in the east wing."))] + chatter
    for turn_id, messages in window:
        mem.remember(turn_id, messages)
    assembly = mem.build(SYSTEM, window, "What is my locker number?", budget=420)
    sent_window = assembly.report.ids("window")
    assert 0 not in sent_window and 0 in assembly.report.ids("recall")  # the window's share holds only newer turns
    assert "4471" in "\n".join(m["content"] for m in assembly.messages if m["role"] == "system")
    assert sent_window == list(range(6))[-len(sent_window):]  # still the newest turns, no gap
    quoted = set(assembly.report.ids("recall"))
    assert not quoted & set(sent_window)  # no turn is sent twice
    assert not find_problems(assembly.request) and assembly.report.total <= 420


def test_a_turn_the_window_sends_is_taken_out_of_the_recall_block():
    window = [(i, turn(f"Statement number {i} about my week.")) for i in range(6)]
    quoted = [Recalled(1, 0.9, quote_turn(1, window[1][1])), Recalled(40, 0.8, quote_turn(40, turn("I row.")))]
    for budget in (None, 2000):
        assembly = assemble_context(SYSTEM, window, "next?", budget=budget, recalled=quoted)
        assert assembly.report.ids("window") == list(range(6)) and assembly.report.ids("recall") == [40]
        sent = "\n".join(str(m["content"]) for m in assembly.messages)
        assert sent.count("Statement number 1 about") == 1  # sent once, as the window's raw turn


def test_a_newest_turn_bigger_than_the_window_s_share_is_still_sent_whole_when_the_budget_holds_it(offline):
    mem = MemoryAssembler(summariser=False, profile=False, **offline)
    window = [(i, turn(f"Short note {i} about lunch.")) for i in range(5)]
    window.append((5, turn("My bike lock combination is 2718, and I keep the bike behind the library. " * 6)))
    for turn_id, messages in window:
        mem.remember(turn_id, messages)
    for budget in range(450, 701, 50):
        assembly = mem.build(SYSTEM, window, "What is my bike lock combination?", budget=budget)
        sent = assembly.report.ids("window")
        assert 5 in sent and sent == list(range(6))[-len(sent):]  # the newest turn goes raw, the window has no gap
        assert not set(sent) & set(assembly.report.ids("recall")) and assembly.report.total <= budget
        assert not find_problems(assembly.request)
