"""The usage ledger (helpers/chat/ledger.py): a server's prompt_tokens count is believed only when it is plausible,
so an impossible count cannot turn a session's token budget off."""
from __future__ import annotations

import json
import warnings

import httpx2
import pytest

from helpers.core import tokens
from helpers.core.errors import WorkshopWarning
from helpers.chat.ledger import UsageLedger
from helpers.chat.chat_session import ChatSession
from helpers.core.tokens import approx_tokens

from support import QUESTIONS
from scripted import ScriptedServer


class MisreportingServer(ScriptedServer):
    """The scripted server, reporting ``report(true count)`` as prompt_tokens."""

    def __init__(self, script, report):
        super().__init__(script)
        self.report = report

    def handle(self, request):
        response = super().handle(request)
        body = json.loads(response.content)
        body["usage"]["prompt_tokens"] = self.report(body["usage"]["prompt_tokens"])
        return httpx2.Response(200, json=body)

QUESTION = "Question {}: when does the AI club meet, and where exactly on campus is that?"

ANSWER = {"content": "Thursdays at 18:00 in the Harrow building, room 204 [club-ai]. " * 2}


@pytest.mark.parametrize("report", [lambda real: 0, lambda real: real // 10], ids=["zero", "uncached-only"])
def test_an_impossible_prompt_tokens_count_does_not_turn_the_budget_off(report):
    server = MisreportingServer([ANSWER] * 12, report)
    session = ChatSession(max_tokens=400, tools=[], **server.kwargs())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in range(12):
            session.chat(QUESTION.format(i))
    assert len(session.turn_ids) < 12, "the budget was turned off"
    for sent in server.requests:  # every request fit the budget, as estimated (the tools: none)
        assert sum(map(tokens.approx_tokens, sent["messages"])) + tokens.REPLY_PRIMING <= 400
    said = [w for w in caught if issubclass(w.category, WorkshopWarning) and "prompt_tokens" in str(w.message)]
    assert len(said) == 1  # once per session, not once per request


def test_an_honest_server_is_still_trusted():
    server = MisreportingServer([ANSWER] * 3, lambda real: real)
    session = ChatSession(tools=[], **server.kwargs())
    with warnings.catch_warnings():
        warnings.simplefilter("error", WorkshopWarning)
        for i in range(3):
            session.chat(QUESTION.format(i))
    assert session.ledger.cost(session.messages[:-1])[1] is True  # exact: learnt from the reports


def test_the_ledger_ignores_counts_below_a_quarter_of_the_estimate():
    messages = [{"role": "system", "content": "You are a campus assistant. " * 20},
                {"role": "user", "content": "When does the AI club meet? " * 10}]
    ledger = UsageLedger()
    estimate = ledger.cost(messages)[0]
    with pytest.warns(WorkshopWarning, match="prompt_tokens"):
        assert ledger.record(messages, estimate // 4 - 1) is None
    assert ledger.cost(messages) == (estimate, False) and ledger.records == []
    with warnings.catch_warnings():
        warnings.simplefilter("error", WorkshopWarning)
        assert ledger.record(messages, 0) is None  # warned once already
        entry = ledger.record(messages, -(-estimate // 4))  # a quarter is the lowest believable count
    assert entry.prompt_tokens == -(-estimate // 4) and ledger.cost(messages) == (entry.prompt_tokens, True)


def test_the_ledger_never_believes_fewer_tokens_than_messages():
    ledger = UsageLedger(estimate=lambda message: 0, overhead=0)
    messages = [{"role": "user", "content": "hi"}] * 3
    with pytest.warns(WorkshopWarning):
        assert ledger.record(messages, 2) is None
    assert ledger.record(messages, 3) is not None


class FreshLedger(UsageLedger):
    """The ledger computing every message's key and estimate again on each request (the reference)."""

    def _known(self, messages):
        return [self.key(m) for m in messages], [self.estimate(m) for m in messages]


def replay(requests) -> list[tuple]:
    """Feed the same requests to both ledgers; what each learnt, request by request."""
    seen = []
    for ledger in (UsageLedger(), FreshLedger()):
        learnt = []
        for messages, prompt_tokens in requests:
            cost = ledger.cost(messages)
            record = ledger.record(messages, prompt_tokens)
            learnt.append((cost, record, [ledger.count(m) for m in messages], ledger.cost(messages[1:])))
        seen.append(learnt)
    return seen


def test_the_ledger_learns_the_same_from_a_real_session(monkeypatch):
    requests = []
    real = UsageLedger.record

    def capture(self, messages, prompt_tokens):
        requests.append((list(messages), prompt_tokens))
        return real(self, messages, prompt_tokens)

    monkeypatch.setattr(UsageLedger, "record", capture)
    session = ChatSession(max_tokens=900)  # trimming breaks spans; tool calls add several messages a turn
    for question in QUESTIONS * 3:
        session.chat(question)
    monkeypatch.undo()
    assert len(requests) > len(QUESTIONS) * 3 and session.dropped
    memo, fresh = replay(requests)
    assert memo == fresh


def test_the_ledger_notices_a_field_given_a_new_value_and_keeps_equal_copies_apart():
    system, question = {"role": "system", "content": "Be brief."}, {"role": "user", "content": "ok?"}
    answer = {"role": "assistant", "content": "ok"}
    again, echo = {"role": "user", "content": "ok?"}, {"role": "assistant", "content": "ok"}
    first = [system, question]
    second = [system, question, answer, again]
    requests = [(first, 20), (second, 31)]
    memo, fresh = replay(requests)
    assert memo == fresh
    answer["content"] = "a much longer answer than before, " * 4  # changed in place after it was sent
    third = [system, question, answer, again, echo, {"role": "user", "content": "and now?"}]
    memo, fresh = replay([*requests, (third, 120)])
    assert memo == fresh
    ledger = UsageLedger()
    for messages, tokens in [*requests, (third, 120)]:
        ledger.record(messages, tokens)
    assert ledger.count(answer) != approx_tokens({"role": "assistant", "content": "ok"})
