"""The stand-in's work grows linearly with its request, whatever the request holds.

No timing here (``benchmarks/standin_linear.py`` prints the times): each test counts the work of an inner
step -- characters searched, calls made, words counted -- at n and at 2n, or against the request's size.
The inputs are the slow ones found: an unclosed ``"`` before thousands of sentences, a message stating
thousands of facts, a summariser request of thousands of turn lines, a long reply cut by ``max_tokens``.
"""
import json

import pytest

from helpers.core import tokens
from helpers.core.context_format import (MAX_REPLY_FACTS, USER_SAID, read_fact_reply, read_left_out_note,
                                    read_turn_line, write_section, write_turn_line)
from helpers.standin import meaning, server, tasks
from helpers.standin.tasks import extract_facts, summarise_conversation

MAX_FACTS = getattr(tasks, "MAX_FACTS", MAX_REPLY_FACTS)  # the stand-in's cap: the reader's own limit

EXTRACTOR = "You are a fact extractor."


class _Counting:
    """A compiled pattern's stand-in that adds up the length of every text it searches."""

    def __init__(self, pattern):
        self.pattern, self.searched, self.calls = pattern, 0, 0

    def search(self, text, *args):
        self.searched += len(text)
        self.calls += 1
        return self.pattern.search(text, *args)


def _unclosed_quote(n: int) -> str:
    return 'He said "' + " ".join(f"Sentence number {i} is here." for i in range(n))


def _searched(monkeypatch, text: str) -> int:
    counting = _Counting(meaning._ABBREVIATION)
    monkeypatch.setattr(meaning, "_ABBREVIATION", counting)
    meaning.sentences(text)
    monkeypatch.setattr(meaning, "_ABBREVIATION", counting.pattern)
    return counting.searched


@pytest.mark.parametrize("n", [500, 2000])
def test_an_unclosed_quote_before_many_sentences_is_read_once(monkeypatch, n):
    text = _unclosed_quote(n)
    assert _searched(monkeypatch, text) <= 2 * len(text)
    assert _searched(monkeypatch, _unclosed_quote(2 * n)) <= 2.2 * _searched(monkeypatch, text)


def test_an_unclosed_quote_still_keeps_the_rest_of_its_line_in_one_sentence():
    said = meaning.sentences(_unclosed_quote(50) + "\nNext line. Another one.")
    assert said[0] == " ".join(_unclosed_quote(50).split()) and said[1:] == ["Next line.", "Another one."]


def _letters(i: int) -> str:
    word = ""
    while True:
        word, i = "abcdefghijklmnopqrstuvwxyz"[i % 26] + word, i // 26
        if not i:
            return word


def _facts_request(n: int) -> str:  # n different attributes: "My thing ab is value 27."
    return write_section(USER_SAID, " ".join(f"My thing {_letters(i)} is value {i}." for i in range(n)), "turn 1")


def _splits(monkeypatch, n: int) -> tuple[int, str]:
    calls = []

    def counted(text):
        calls.append(len(text))
        return meaning.sentences(text)

    monkeypatch.setattr(tasks, "sentences", counted)
    reply = extract_facts(EXTRACTOR, _facts_request(n))
    return len(calls), reply


@pytest.mark.parametrize("n", [5, MAX_FACTS, 4000])
def test_an_extraction_request_is_split_into_sentences_a_fixed_number_of_times(monkeypatch, n):
    calls, _ = _splits(monkeypatch, n)
    assert calls <= 3


def test_up_to_the_cap_every_fact_is_listed_with_its_sentence(monkeypatch):
    _, reply = _splits(monkeypatch, MAX_FACTS)
    facts, problems = read_fact_reply(reply)
    assert not problems and len(facts) == MAX_FACTS == MAX_REPLY_FACTS
    assert all(fact.value in fact.evidence and fact.evidence.startswith("My thing") for fact in facts)


def test_over_the_cap_the_reply_names_the_cap_and_the_reader_rejects_it(monkeypatch):
    _, reply = _splits(monkeypatch, 4000)
    assert str(MAX_FACTS) in json.loads(reply)["refusal"]
    facts, problems = read_fact_reply(reply)
    assert facts == [] and problems and "offline fact extractor lists at most" in problems[0]
    assert "MAX_FACTS" in tasks.__doc__ or "MAX_FACTS" in tasks.extract_facts.__doc__


class _Line(str):
    """A summary line that counts how often its words are counted."""

    splits = 0

    def split(self, *args):
        _Line.splits += 1
        return super().split(*args)


def _summary_request(n: int, limit: int = 80) -> str:
    turns = "\n".join(write_turn_line(i, "user", f"My favourite number this week is {i}.") for i in range(n))
    return f"WORD LIMIT: {limit}\nPREVIOUS SUMMARY:\n(none)\nKEEP:\nTURNS:\n{turns}"


def _word_counts(monkeypatch, n: int) -> tuple[int, str]:
    original = tasks.write_quote_line
    monkeypatch.setattr(tasks, "write_quote_line", lambda *a, **k: _Line(original(*a, **k)))
    _Line.splits = 0
    summary = summarise_conversation(_summary_request(n))
    return _Line.splits, summary


@pytest.mark.parametrize("n", [1000, 8000])
def test_the_word_limit_counts_each_summary_line_once(monkeypatch, n):
    splits, summary = _word_counts(monkeypatch, n)
    assert splits <= 2 * n
    left_out = read_left_out_note(summary.splitlines()[0])
    kept = [read_turn_line(line)[0] for line in summary.splitlines()[1:]]
    assert sorted(left_out + kept) == list(range(n)) and len(" ".join(summary.splitlines()[1:]).split()) <= 80


def test_questions_still_go_before_statements_under_the_word_limit():
    turns = [write_turn_line(i, "user", f"What is on at the library on day {i}?" if i % 2 else
                             f"My locker on floor {i} is number {i}.") for i in range(40)]
    summary = summarise_conversation("WORD LIMIT: 60\nTURNS:\n" + "\n".join(turns)).splitlines()
    kept = [read_turn_line(line)[0] for line in summary[1:]]
    dropped = read_left_out_note(summary[0])
    assert kept and not [i for i in kept if i % 2]  # every question went before any statement
    assert set(range(1, 40, 2)) <= set(dropped) and kept == [i for i in range(40) if i not in dropped]
    assert all(i < min(kept) for i in dropped if i % 2 == 0)  # then the oldest statements


def _cut(monkeypatch, words: int, max_tokens: int) -> tuple[int, str, str]:
    counted = []
    count_text = tokens.count_text

    def counting(text):
        counted.append(len(text or ""))
        return count_text(text)

    monkeypatch.setattr(tokens, "count_text", counting)
    said = " ".join(f"word{i}" for i in range(words))
    body = {"model": "offline/stand-in", "max_tokens": max_tokens,
            "messages": [{"role": "system", "content": "Reply in one sentence."},
                         {"role": "user", "content": f"My motto is {said}."}]}
    message, meta = server._reply(body)
    monkeypatch.setattr(tokens, "count_text", count_text)
    return sum(counted), message["content"], meta["finish_reason"]


def test_a_reply_cut_by_max_tokens_is_counted_in_one_pass(monkeypatch):
    small, _, _ = _cut(monkeypatch, 2000, 5)
    large, content, finish = _cut(monkeypatch, 4000, 5)
    assert large <= 2.5 * small
    assert finish == "length" and tokens.count_text(content) <= 5 and content
