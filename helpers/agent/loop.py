"""The agent loop: call the model with tools, run every tool it asks for, repeat until it answers.

``agent_loop`` is the loop notebook 06 builds, in about twenty lines: plan (one chat request with the tool
schemas), act (run every tool call in the reply, in order), observe (one ``tool`` message per call), until
the model answers without a tool call or ``max_steps`` requests have been made.

The same loop hardened for real use -- rollback, a trace, a result object, streaming -- is
``run_agent`` / ``agent_turn`` in ``helpers.agent.turn``; notebooks 06 to 12 use it.
"""
from __future__ import annotations

from helpers.llm.client import chat
from helpers.llm.message_format import assistant_message_to_dict
from helpers.agent.tools import Tool, run_tool, tool_schemas

MAX_STEPS = 6
DEFAULT_SYSTEM_PROMPT = (
    "You are the Larkspur University campus assistant. Use the tools to look things up; never invent "
    "campus facts. Cite knowledge-base ids in square brackets. Always use days_until_weekday to count or "
    "compare days rather than estimating."
)


def agent_loop(question: str, messages: list[dict], tools: list[str] | None = None,
               registry: dict[str, Tool] | None = None, max_steps: int = MAX_STEPS,
               client=None, settings=None) -> str:
    """Plan, act, observe: ask the model with tools, run every call it makes, repeat until it answers."""
    schemas = tool_schemas(tools, registry)  # what the model may call
    messages.append({"role": "user", "content": question})
    for _ in range(max_steps):
        response = chat(messages, client=client, settings=settings, tools=schemas)  # plan
        reply = assistant_message_to_dict(response.choices[0].message)
        messages.append(reply)
        if not reply.get("tool_calls"):
            return reply["content"]  # no tool asked for: this is the answer
        for call in reply["tool_calls"]:  # act: run every call, in order
            name, arguments = call["function"]["name"], call["function"]["arguments"]
            result = run_tool(name, arguments, registry, offered=tools)
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})  # observe
    answer = f"I stopped after {max_steps} steps without reaching an answer."
    messages.append({"role": "assistant", "content": answer})
    return answer
