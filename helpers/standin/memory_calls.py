"""The offline stand-in uses the agent's memory tool (notebook 13), so the hot path can run without a model.

When a request offers ``remember`` (``helpers.agent.memory_tool``) and the user's newest message states facts
about themselves - read by the same profile rules the stand-in answers questions about the user with
(``helpers.standin.memory_rule.said_facts``) - the first step of the turn calls ``remember`` once per fact,
quoting the sentence that states it. Once the results are back, the turn goes on as if the calls had not been
made (``helpers.standin.policy.decide`` on the request without them). A question, or a message that states
nothing, calls no memory tool. This is deterministic reading, not judgement: a model may call the tool for
things these rules do not read, or fail to call it.
"""
from __future__ import annotations

from helpers.standin.meaning import sentences
from helpers.standin.memory_rule import said_facts
from helpers.standin.policy import Decision, decide
from helpers.standin.request_text import _text

MEMORY_TOOLS = ("remember", "forget")


def _offered(tools: list | None) -> set[str]:
    return {t.get("function", {}).get("name") for t in tools or [] if isinstance(t, dict)}


def memory_step(messages: list[dict], tools: list | None, tool_choice=None) -> Decision | None:
    """The stand-in's step when it uses the memory tool, or None to reply as it always does."""
    if "remember" not in _offered(tools) or tool_choice == "none" or not messages:
        return None
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    if last_user < 0:
        return None
    after, said = messages[last_user + 1:], _text(messages[last_user])
    if not after:
        if "?" in said:
            return None
        calls = []
        for fact in said_facts(said):
            quote = next((s for s in sentences(said) if fact["value"].lower() in s.lower()), said)
            label = fact["key"] if fact["key"] == fact["topic"] else f"{fact['key']}/{fact['topic']}"
            calls.append(("remember", {"attribute": label, "value": fact["value"], "quote": quote}))
        return Decision(tool_calls=calls) if calls else None
    called = [c.get("function", {}).get("name") for m in after for c in m.get("tool_calls") or []]
    if called and all(name in MEMORY_TOOLS for name in called):
        rest = [t for t in tools if t.get("function", {}).get("name") not in MEMORY_TOOLS]
        return decide(messages[:last_user + 1], rest or None, tool_choice if rest else None)
    return None
