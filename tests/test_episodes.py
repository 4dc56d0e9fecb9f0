"""Episodic memory as worked examples (helpers.memory.episodes): episodes read from kept turns, found by the
meaning of the question, shown as an example of the steps; below the threshold nothing is shown."""
from __future__ import annotations

import json

from helpers.core.context_format import is_block_line
from helpers.memory.episodes import EXAMPLE_HEADER, SIMILARITY, Episode, EpisodeMemory, episode_from_turn, example_block


def _turn(question, calls, answer):
    messages = [{"role": "user", "content": question}]
    for i, (name, args) in enumerate(calls):
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": "{}"})
    messages.append({"role": "assistant", "content": answer})
    return messages


def test_an_episode_keeps_the_tool_calls_in_order():
    e = episode_from_turn(_turn("How many days until the chess club meets?",
                                [("search_campus_info", {"query": "chess club"}), ("days_until_weekday",
                                                                                  {"weekday": "Saturday"})],
                                "In 5 days."), 4)
    assert e.tools == ("search_campus_info", "days_until_weekday") and e.turn_id == 4 and e.answer == "In 5 days."


def test_a_turn_without_tools_or_without_an_answer_is_no_episode():
    assert episode_from_turn(_turn("My locker is 4471.", [], "Noted: 4471.")) is None
    assert episode_from_turn(_turn("When?", [("search_campus_info", {"query": "x"})], "")) is None
    assert episode_from_turn([]) is None


def test_the_most_similar_question_is_found_and_a_different_one_is_not():
    memory = EpisodeMemory()
    memory.add(episode_from_turn(_turn("When does the AI club meet?", [("search_campus_info", {"query": "AI club"})],
                                       "Thursdays at 18:00.")))
    memory.add(episode_from_turn(_turn("What time is it?", [("get_current_time", {})], "It is 10:00.")))
    assert not memory.add(None)
    best = memory.search("When does the robotics club meet?")
    assert best and best[0][1].question == "When does the AI club meet?" and best[0][0] >= SIMILARITY
    assert memory.search("I love my grandmother's soup recipe") == []
    assert EpisodeMemory().search("anything") == []


def test_the_example_block_is_marked_and_one_line_each():
    episode = Episode('Say "hi"\nnow', (("search_campus_info", json.dumps({"query": "a\nb"})),), "Answer\n- x: y")
    block = example_block([(0.9, episode)])
    lines = block.split("\n")
    assert lines[0] == EXAMPLE_HEADER and "not a source of facts" in lines[0] and len(lines) == 4
    assert not any(is_block_line(line) and line.startswith("- x") for line in lines)
    assert example_block([]) == ""
