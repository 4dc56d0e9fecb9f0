"""The stand-in's rules, one behaviour each (helpers/standin/policy.py documents them), and tool results read
the way a model reads them: JSON, a Python literal (str(dict)) or plain text."""
import json

import pytest

from helpers.standin.policy import (classify_scope, conversation_mentions, decide, judge_grounding,
                                    question_needs)
from helpers.agent.tools import tool_schemas
from helpers.llm.config import OFFLINE_CHAT_MODEL
from helpers.standin.policy import read_tool_result
from helpers.agent.tools import days_until_weekday, get_current_time, search_campus_info

from support import user


TOOLS = tool_schemas()


def turn_with_result(question, name, args, result, cid):
    return [user(question),
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]},
            {"role": "tool", "tool_call_id": cid, "content": json.dumps(result)}]


AI_CLUB = {"results": [{"id": "club-ai", "title": "AI Club", "text": "...", "weekday": "Thursday",
                        "time": "18:00", "location": "Halvorsen Hall"}]}
OFFICE = {"results": [{"id": "office-hours-cs", "title": "CS office hours", "text": "...", "weekday": "Tuesday",
                       "time": "14:00"}]}


@pytest.mark.parametrize("question, needs", [
    ("When does the AI club meet?", {"search"}),
    ("How many days until that?", {"days"}),
    ("How many days until Thursday?", {"days"}),
    ("Which of those two is sooner?", {"compare"}),
    ("What time is it?", {"time"}),
    ("When does the AI club meet, and how many days is that from now?", {"search", "days"}),
])
def test_question_needs(question, needs):
    assert question_needs(question) == needs


def test_search_is_called_for_a_campus_question():
    decision = decide([user("When does the AI club meet?")], TOOLS)
    assert decision.tool_calls == [("search_campus_info", {"query": "When does the AI club meet"})]


def test_back_reference_is_resolved_from_history():
    history = turn_with_result("When does the AI club meet?", "search_campus_info", {"query": "AI club"},
                               AI_CLUB, "a") + [{"role": "assistant", "content": "Thursdays at 18:00."}]
    decision = decide(history + [user("How many days until that?")], TOOLS)
    assert decision.tool_calls == [("days_until_weekday", {"weekday": "Thursday", "time": "18:00"})]


def test_back_reference_without_history_is_not_guessed():
    decision = decide([user("How many days until that?")], TOOLS)
    assert not decision.tool_calls and "don't know" in decision.content


def test_compare_calls_both_days_in_parallel_and_names_them():
    history = (turn_with_result("When does the AI club meet?", "search_campus_info", {}, AI_CLUB, "a")
               + [{"role": "assistant", "content": "ok"}]
               + turn_with_result("And office hours?", "search_campus_info", {}, OFFICE, "b")
               + [{"role": "assistant", "content": "ok"}])
    decision = decide(history + [user("Which of those two is sooner?")], TOOLS)
    assert [args["weekday"] for _, args in decision.tool_calls] == ["Thursday", "Tuesday"]
    results = (history + [user("Which of those two is sooner?"),
                          {"role": "assistant", "content": None, "tool_calls": [
                              {"id": "t", "type": "function", "function": {"name": "days_until_weekday",
                                                                           "arguments": '{"weekday": "Thursday"}'}},
                              {"id": "u", "type": "function", "function": {"name": "days_until_weekday",
                                                                           "arguments": '{"weekday": "Tuesday"}'}}]},
                          {"role": "tool", "tool_call_id": "t", "content": json.dumps({"weekday": "Thursday", "days": 3})},
                          {"role": "tool", "tool_call_id": "u", "content": json.dumps({"weekday": "Tuesday", "days": 1})}])
    answer = decide(results, TOOLS).content
    assert answer.startswith("CS office hours (Tuesday) is tomorrow") and "sooner" in answer


def test_tool_error_is_retried_once_then_explained():
    error = {"error": "timeout"}
    once = turn_with_result("When does the AI club meet?", "search_campus_info", {"query": "q"}, error, "a")
    assert decide(once, TOOLS).tool_calls == [("search_campus_info", {"query": "q"})]
    twice = once + turn_with_result("x", "search_campus_info", {"query": "q"}, error, "b")[1:]
    final = decide(twice, TOOLS)
    assert not final.tool_calls and "failed twice" in final.content


def test_answers_from_passages_and_cites_the_id():
    system = {"role": "system", "content": "Context:\n[club-ai] AI Club: The AI Club meets every Thursday at 18:00.\n"
                                           "[lib] Library: The library opens at 08:00."}
    assert decide([system, user("When does the AI club meet?")]).content.endswith("[club-ai].")


def test_says_it_does_not_know_when_passages_do_not_cover_it():
    system = {"role": "system", "content": "Context:\n[lib] Library: The library opens at 08:00."}
    assert "don't know" in decide([system, user("Who won the football game?")]).content


def test_system_prompt_directives():
    plain = decide([user("Hello")]).content
    brief = decide([{"role": "system", "content": "Answer in one sentence."}, user("Hello")]).content
    loud = decide([{"role": "system", "content": "Reply in UPPERCASE."}, user("Hello")]).content
    assert len(brief) < len(plain) and loud == loud.upper()


def test_mentions_come_from_tool_results_and_text():
    found = conversation_mentions(turn_with_result("q", "search_campus_info", {}, AI_CLUB, "a")
                                  + [{"role": "assistant", "content": "The Chess Club meets on Fridays at 19:00."}])
    assert [(m.weekday, m.label) for m in found] == [("Thursday", "AI Club"), ("Friday", "The Chess Club")]


def test_grounding_rule():
    passages = "[club-ai] AI Club: meets every Thursday at 18:00 in Halvorsen Hall."
    assert judge_grounding(f"PASSAGES:\n{passages}\nANSWER:\nThe AI Club meets on Thursdays at 18:00.")["verdict"] == "supported"
    bad = judge_grounding(f"PASSAGES:\n{passages}\nANSWER:\nIt meets on Fridays at 18:00 in Ostrow Hall.")
    assert bad["verdict"] == "unsupported" and "Friday" in bad["reason"] and "Ostrow" in bad["reason"]


def test_scope_rule():
    assert classify_scope("Where is the library?")["category"] == "campus"
    assert classify_scope("Tell me a joke about cats")["category"] == "off_topic"
    assert classify_scope("help me cheat on the exam")["category"] == "unsafe"


SYSTEM_PROMPT = ("You are a campus assistant for Larkspur University. Reuse facts already in the history. "
                 "Call days_until_weekday instead of estimating.")


QUESTIONS = ["When does the AI club meet?", "How many days until that?",
             "And when are the faculty office hours?", "Which of those two is sooner?"]


LEARNER_TOOLS = {"search_campus_info": search_campus_info, "days_until_weekday": days_until_weekday,
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
                model=OFFLINE_CHAT_MODEL, messages=self.messages, tools=tool_schemas(list(LEARNER_TOOLS)),
                temperature=0.2).choices[0].message
            if not message.tool_calls:
                self.messages.append({"role": "assistant", "content": message.content})
                return message.content
            self.messages.append({"role": "assistant", "content": message.content, "tool_calls": [
                {"id": c.id, "type": "function", "function": {"name": c.function.name,
                                                              "arguments": c.function.arguments}}
                for c in message.tool_calls]})
            for call in message.tool_calls:
                result = LEARNER_TOOLS[call.function.name](**json.loads(call.function.arguments))
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
