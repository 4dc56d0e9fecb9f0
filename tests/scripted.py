"""A scripted server for tests: validates every request like the stand-in, then replies from a script.

Lets a test make the "model" do things the stand-in's rules never would: malformed arguments, unknown
tools, endless tool calls, or an API error in the middle of a turn.
"""
import json

import httpx2
import openai
from openai.types.chat import ChatCompletionMessage

from helpers.llm.config import load_settings
from helpers.standin.server import _check_chat_request, _RequestError, _error_response
from helpers.core import tokens


def tool_call(name, arguments, cid):
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


def tool_call_message(**overrides) -> ChatCompletionMessage:
    data = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "days_until_weekday",
                                                          "arguments": '{"weekday": "Friday"}'}}]}
    data.update(overrides)
    return ChatCompletionMessage(**data)


class ScriptedServer:
    """Replies with the next scripted item: a dict (assistant message), an int (HTTP error status)."""

    def __init__(self, script):
        self.script = list(script)
        self.requests = []

    def handle(self, request):
        body = json.loads(request.content)
        self.requests.append(body)
        try:
            _check_chat_request(body)
        except _RequestError as err:
            return _error_response(err)
        if not self.script:
            raise AssertionError("the script ran out of replies")
        item = self.script.pop(0)
        if isinstance(item, int):
            return httpx2.Response(item, json={"error": {"message": f"scripted {item}", "type": "server_error"}})
        message = {"role": "assistant", "content": None, **item}
        prompt = tokens.count_request(body["messages"], body.get("tools"))
        return httpx2.Response(200, json={
            "id": "chatcmpl-scripted", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": 1, "total_tokens": prompt + 1}})

    def client(self):
        return openai.OpenAI(api_key="x", base_url="http://scripted/v1", max_retries=0,
                             http_client=httpx2.Client(transport=httpx2.MockTransport(self.handle)))

    def kwargs(self):
        return {"client": self.client(), "settings": load_settings("offline")}
