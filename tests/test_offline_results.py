"""The stand-in reads tool results the way a model does: JSON, a Python literal (str(dict)) or plain text."""
import json

import pytest

from helpers.llm.config import OFFLINE_CHAT_MODEL
from helpers.standin.policy import decide, read_tool_result
from helpers.agent.tools import days_until_weekday, get_current_time, search_campus_info, tool_schemas

SYSTEM_PROMPT = ("You are a campus assistant for Larkspur University. Reuse facts already in the history. "
                 "Call days_until_weekday instead of estimating.")
QUESTIONS = ["When does the AI club meet?", "How many days until that?",
             "And when are the faculty office hours?", "Which of those two is sooner?"]
TOOLS = {"search_campus_info": search_campus_info, "days_until_weekday": days_until_weekday,
         "get_current_time": get_current_time}


class LearnerSession:
    """A session as a learner writes it in notebook 07: the memory is nothing more than the list on self."""

    def __init__(self, client, encode=str):
        self.client, self.encode = client, encode
        self.messages = [{"role": "system", "content": SYSTEM_PROMPT}]

    def chat(self, question):
        self.messages.append({"role": "user", "content": question})
        while True:
            message = self.client.chat.completions.create(
                model=OFFLINE_CHAT_MODEL, messages=self.messages, tools=tool_schemas(list(TOOLS)),
                temperature=0.2).choices[0].message
            if not message.tool_calls:
                self.messages.append({"role": "assistant", "content": message.content})
                return message.content
            self.messages.append({"role": "assistant", "content": message.content, "tool_calls": [
                {"id": c.id, "type": "function", "function": {"name": c.function.name,
                                                              "arguments": c.function.arguments}}
                for c in message.tool_calls]})
            for call in message.tool_calls:
                result = TOOLS[call.function.name](**json.loads(call.function.arguments))
                self.messages.append({"role": "tool", "tool_call_id": call.id,
                                      "content": self.encode(result)})

    def reset(self):
        self.messages = self.messages[:1]


@pytest.fixture(scope="module")
def answers_with_str(client):
    session = LearnerSession(client, encode=str)
    return session, [session.chat(q) for q in QUESTIONS]


def test_learner_session_with_str_results_holds_the_conversation(answers_with_str):
    _, answers = answers_with_str
    assert "Thursday" in answers[0] and "[club-ai]" in answers[0]
    assert "3 days" in answers[1]
    assert "Tuesday" in answers[2]
    assert "sooner" in answers[3] and answers[3].index("Tuesday") < answers[3].index("Thursday")


def test_str_results_answer_exactly_like_json_results(client, answers_with_str):
    session = LearnerSession(client, encode=json.dumps)
    assert [session.chat(q) for q in QUESTIONS] == answers_with_str[1]


def test_learner_session_reset_forgets_the_follow_up(client):
    session = LearnerSession(client)
    assert "Thursday" in session.chat(QUESTIONS[0])
    session.reset()
    assert "don't know" in session.chat(QUESTIONS[1])
    assert len(session.messages) == 3  # system prompt, the question, the honest answer


@pytest.mark.parametrize("text, expected", [
    ('{"weekday": "Thursday", "days": 3}', {"weekday": "Thursday", "days": 3}),
    ("{'weekday': 'Thursday', 'days': 3, 'late': False, 'note': None}",
     {"weekday": "Thursday", "days": 3, "late": False, "note": None}),
    ("The AI Club meets on Thursdays at 18:00.", {"text": "The AI Club meets on Thursdays at 18:00."}),
    ("[1, 2]", {"text": "[1, 2]"}),
    ("__import__('os').system('echo unsafe')", {"text": "__import__('os').system('echo unsafe')"}),
    ("{'a': __import__('os')}", {"text": "{'a': __import__('os')}"}),
    ("{" * 5000, {"text": "{" * 5000}),
    ("", {"text": ""}),
])
def test_read_tool_result(text, expected):
    assert read_tool_result(text) == expected


def test_plain_text_result_is_answered_and_remembered():
    call = {"id": "c1", "type": "function", "function": {"name": "search_campus_info",
                                                         "arguments": '{"query": "AI club"}'}}
    turn = [{"role": "user", "content": "When does the AI club meet?"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "The AI Club meets on Thursdays at 18:00."}]
    assert "Thursdays at 18:00" in decide(turn, tool_schemas()).content
    follow_up = turn + [{"role": "assistant", "content": "Thursdays."},
                        {"role": "user", "content": "How many days until that?"}]
    assert decide(follow_up, tool_schemas()).tool_calls == [("days_until_weekday",
                                                             {"weekday": "Thursday", "time": "18:00"})]


def test_python_literal_error_is_retried_like_a_json_error():
    call = {"id": "c1", "type": "function", "function": {"name": "search_campus_info",
                                                         "arguments": '{"query": "AI club"}'}}
    turn = [{"role": "user", "content": "When does the AI club meet?"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": str({"error": "timeout"})}]
    assert decide(turn, tool_schemas()).tool_calls == [("search_campus_info", {"query": "AI club"})]
