"""helpers.chat.window: a session's window as a value, and what it refuses."""
import pytest

from helpers.chat.history import HistoryError
from helpers.chat.window import Window

SYSTEM = [{"role": "system", "content": "sys"}]


def turn(n: int) -> list[dict]:
    return [{"role": "user", "content": f"q{n}"}, {"role": "assistant", "content": f"a{n}"}]


def one(message: dict) -> int:
    return 1


def test_a_window_is_built_trimmed_and_undone_without_changing_the_old_one():
    window = Window.start(SYSTEM, turn(0) + turn(1), [0, 1], one)
    assert window.tokens == 5 and window.turn_tokens == (2, 2)
    bigger = window.with_turn(2, turn(2), one)
    assert window.turn_ids == (0, 1) and bigger.turn_ids == (0, 1, 2) and bigger.tokens == 7
    trimmed, dropped = bigger.trimmed(overhead=0, max_turns=2)
    assert trimmed.turn_ids == (1, 2) and trimmed.messages == SYSTEM + turn(1) + turn(2)
    assert [(d.turn_id, d.messages, d.tokens) for d in dropped] == [(0, turn(0), 2)]
    assert trimmed.without_newest().messages == SYSTEM + turn(1)
    assert Window.start(SYSTEM, [], [], one).without_newest().turn_ids == ()


def test_a_turn_a_strict_server_would_reject_is_refused_and_the_window_kept():
    window = Window.start(SYSTEM, turn(0), [0], one)
    orphan = [{"role": "user", "content": "q"}, {"role": "tool", "tool_call_id": "nobody", "content": "x"}]
    with pytest.raises(HistoryError, match="orphan tool result"):
        window.with_turn(1, orphan, one)
    assert window.turn_ids == (0,) and window.messages == SYSTEM + turn(0)


def test_turn_ids_that_do_not_match_the_turns_are_refused():
    with pytest.raises(HistoryError, match="2 turn ids for 1 turns"):
        Window.start(SYSTEM, turn(0), [0, 1], one)


def test_recounting_reaches_into_earlier_turns_and_the_system_part():
    window = Window.start(SYSTEM, turn(0) + turn(1), [0, 1], one)
    two = lambda message: 2  # noqa: E731
    assert window.recounted(1, two).turn_costs == ((1, 1), (1, 2))
    assert window.recounted(3, two).turn_costs == ((1, 2), (2, 2)) and window.recounted(3, two).tokens == 8
    everything = window.recounted(len(window.messages), two)
    assert everything.tokens == 10 and everything.turn_tokens == (4, 4)


def test_the_newest_turn_stays_even_over_every_limit():
    window = Window.start(SYSTEM, turn(0) + turn(1) + turn(2), [0, 1, 2], one)
    trimmed, dropped = window.trimmed(overhead=5, max_turns=1, max_tokens=1)
    assert trimmed.turn_ids == (2,) and [d.turn_id for d in dropped] == [0, 1]
    empty = Window.start(SYSTEM, [], [], one)
    assert empty.trimmed(overhead=0, max_tokens=0) == (empty, [])


def test_a_trim_counts_the_system_part_and_the_overhead():
    window = Window.start(SYSTEM, turn(0) + turn(1) + turn(2), [0, 1, 2], one)  # 1 + 2 + 2 + 2 tokens
    assert window.trimmed(overhead=2, max_tokens=9)[0].turn_ids == (0, 1, 2)
    assert window.trimmed(overhead=2, max_tokens=8)[0].turn_ids == (1, 2)
    assert window.trimmed(overhead=2, max_tokens=7)[0].turn_ids == (1, 2)
    assert window.trimmed(overhead=2, max_tokens=6)[0].turn_ids == (2,)
    assert window.trimmed(overhead=0, max_tokens=7, max_turns=2)[0].turn_ids == (1, 2)
