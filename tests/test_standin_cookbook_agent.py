"""An agent written the way OpenAI cookbook recipes write one runs unchanged against the stand-in.

The class below is deliberately not this repository's style: it keeps the pydantic message objects the
client returns in its history, sends ``tool_choice="auto"`` and ``parallel_tool_calls`` explicitly,
answers each tool call with ``{"role": "tool", "tool_call_id", "name", "content"}`` (the ``name`` the
cookbook adds), and talks to the server only through the real ``openai`` client. A learner who has such
a class from elsewhere can point it at the offline stand-in and get three working turns.
"""
import json

import pytest

from helpers.standin.server import make_offline_client
from helpers.agent.tools import days_until_weekday, get_current_time, search_campus_info

MODEL = "offline/stand-in"


class CookbookAgent:
    """A tool-using chat agent in the cookbook manner: a list of messages and a loop around tool calls."""

    def __init__(self, client, model, system_prompt="You are a helpful campus assistant."):
        self.client = client
        self.model = model
        self.messages = [{"role": "system", "content": system_prompt}]
        self.tools = [
            {
                "type": "function",
                "function": {
                    "name": "search_campus_info",
                    "description": "Search the campus knowledge base for clubs, labs, office hours and events.",
                    "parameters": {
                        "type": "object",
                        "properties": {"query": {"type": "string", "description": "What to look for."}},
                        "required": ["query"],
                    },
                },
            },
            {
                "type": "function",
                "function": {
                    "name": "days_until_weekday",
                    "description": "Count the days from today until the next given weekday.",
                    "parameters": {
                        "type": "object",
                        "properties": {
                            "weekday": {"type": "string", "description": "e.g. Thursday"},
                            "time": {"type": "string", "description": "Optional time of day, HH:MM"},
                        },
                        "required": ["weekday"],
                    },
                },
            },
            {
                "type": "function",
                "function": {
                    "name": "get_current_time",
                    "description": "The current date and time.",
                    "parameters": {"type": "object", "properties": {}},
                },
            },
        ]
        self.available_functions = {
            "search_campus_info": search_campus_info,
            "days_until_weekday": days_until_weekday,
            "get_current_time": get_current_time,
        }
        self.tool_calls_made = []

    def chat(self, user_message, max_rounds=5):
        self.messages.append({"role": "user", "content": user_message})
        for _ in range(max_rounds):
            response = self.client.chat.completions.create(
                model=self.model,
                messages=self.messages,
                tools=self.tools,
                tool_choice="auto",
                parallel_tool_calls=True,
                temperature=0,
            )
            response_message = response.choices[0].message
            self.messages.append(response_message)  # the cookbook keeps the object itself
            if not response_message.tool_calls:
                return response_message.content
            for tool_call in response_message.tool_calls:
                function_name = tool_call.function.name
                function_to_call = self.available_functions[function_name]
                function_args = json.loads(tool_call.function.arguments)
                function_response = function_to_call(**function_args)
                self.tool_calls_made.append(function_name)
                self.messages.append(
                    {
                        "tool_call_id": tool_call.id,
                        "role": "tool",
                        "name": function_name,
                        "content": json.dumps(function_response),
                    }
                )
        raise RuntimeError("the model kept calling tools")


@pytest.fixture()
def agent():
    return CookbookAgent(make_offline_client(), MODEL)


def test_three_turns_run_unchanged(agent):
    first = agent.chat("When does the AI club meet?")
    assert "AI" in first and "Thursday" in first
    second = agent.chat("How many days until then?")
    assert "day" in second
    third = agent.chat("Thanks!")
    assert third
    assert agent.tool_calls_made[:1] == ["search_campus_info"] and "days_until_weekday" in agent.tool_calls_made
    roles = [m["role"] if isinstance(m, dict) else m.role for m in agent.messages]
    assert roles.count("user") == 3 and roles.count("tool") == len(agent.tool_calls_made)
    assert all(m.get("name") for m in agent.messages if isinstance(m, dict) and m["role"] == "tool")


def test_the_same_conversation_gives_the_same_answers():
    answers = []
    for _ in range(2):
        agent = CookbookAgent(make_offline_client(), MODEL)
        answers.append([agent.chat(q) for q in ("When does the AI club meet?", "How many days until then?",
                                                 "Thanks!")])
    assert answers[0] == answers[1]
