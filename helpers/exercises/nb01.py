"""Exercises of notebook 01 (the first call): a system prompt that holds, and joining a streamed reply."""
from __future__ import annotations

from openai.types.chat import ChatCompletionChunk

from helpers.client import chat, get_client
from helpers.exercises import Exercise, Hint
from helpers.standin.meaning import sentences  # counted as the stand-in counts: "Dr." ends no sentence

QUESTIONS = ("Hello! What can you help me with?", "Hi there, who are you?", "When does the AI club meet?")


def _sentences(text: str) -> list[str]:
    return sentences(text.strip())


def _check_system_prompt(my_system_prompt) -> str:
    if not isinstance(my_system_prompt, str) or not my_system_prompt.strip():
        raise Hint("my_system_prompt must be a non-empty string: the text of the system message.")
    for question in QUESTIONS:
        messages = [{"role": "system", "content": my_system_prompt}, {"role": "user", "content": question}]
        reply = chat(messages, client=get_client(quiet=True)).choices[0].message.content or ""
        if len(_sentences(reply)) != 1:
            raise Hint(f"asked {question!r}, the assistant answered in {len(_sentences(reply))} sentences: "
                       f"{reply[:120]!r}. Say in the prompt how long every answer may be.")
    return f"one sentence for each of {len(QUESTIONS)} questions, greetings included."


def _chunk(choices: list, usage: dict | None = None) -> ChatCompletionChunk:
    """A chunk shaped like the ones a server streams (built by hand, so the check needs no server)."""
    return ChatCompletionChunk.model_validate({
        "id": "chunk", "object": "chat.completion.chunk", "created": 0, "model": "m",
        "choices": choices, **({"usage": usage} if usage else {})})


def _text(content: str | None, finish: str | None = None) -> dict:
    delta = {"content": content} if content is not None else {}
    return {"index": 0, "delta": delta, "finish_reason": finish}


def _made_by_hand() -> list[ChatCompletionChunk]:
    """A role-only first chunk, three pieces, a finish chunk without text, a usage chunk without choices."""
    return [_chunk([{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}]),
            _chunk([_text("The AI Club ")]), _chunk([_text("meets on ")]), _chunk([_text("Thursdays.")]),
            _chunk([_text(None, "stop")]),
            _chunk([], {"prompt_tokens": 9, "completion_tokens": 7, "total_tokens": 16})]


def _joined(join_stream, chunks: list) -> str:
    try:
        return join_stream(iter(chunks))
    except IndexError:
        raise Hint("the last chunk carries only the token counts and its choices list is empty: "
                   "skip a chunk whose choices list is empty.") from None
    except TypeError:
        raise Hint("some chunks carry no text (delta.content is None, e.g. the first and the finishing "
                   "chunk): add only the pieces that are text.") from None


def _check_join_stream(join_stream) -> str:
    if not callable(join_stream):
        raise Hint("join_stream must be a function that takes a stream and returns a string.")
    got = _joined(join_stream, _made_by_hand())
    if not isinstance(got, str):
        raise Hint(f"join_stream returned a {type(got).__name__}; return one string (''.join(pieces)).")
    if got != "The AI Club meets on Thursdays.":
        raise Hint(f"for the pieces 'The AI Club ', 'meets on ', 'Thursdays.' join_stream returned {got!r}: "
                   "add chunk.choices[0].delta.content of every chunk, in order, without separators.")
    question = [{"role": "user", "content": QUESTIONS[0]}]
    chunks = list(chat(question, client=get_client(quiet=True), stream=True,
                       stream_options={"include_usage": True}))
    expected = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    got = _joined(join_stream, chunks)
    if got != expected:
        raise Hint(f"on a real stream join_stream returned {got[:80]!r}, but the pieces join to "
                   f"{expected[:80]!r}.")
    return f"a hand-made stream and a real one of {len(chunks)} chunks join to the whole reply."


exercise_1 = Exercise(
    "01.1", "A system prompt that holds",
    stub='my_system_prompt = "You are a helpful campus assistant."',
    solution_code='my_system_prompt = "You are a campus assistant. Answer every question in one sentence."',
    checker=_check_system_prompt,
    answers=("my_system_prompt",),
    hints=("The system prompt is where you set rules for every answer; say how long an answer may be.",
           "Add a sentence such as 'Answer in one sentence.' (the offline stand-in also understands "
           "'a single sentence', 'briefly' or 'keep it short', and knows that 'never answer in one "
           "sentence' asks for the opposite).",),
)

exercise_2 = Exercise(
    "01.2", "Join a streamed reply",
    stub='''def join_stream(stream):
    """The whole text of a streamed reply."""
    text = ""
    # your code: loop over the chunks and add the text each one carries
    return text''',
    solution_code='''def join_stream(stream):
    """The whole text of a streamed reply."""
    pieces = []
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            pieces.append(chunk.choices[0].delta.content)
    return "".join(pieces)''',
    checker=_check_join_stream,
    answers=("join_stream",),
    hints=("Each chunk's text is chunk.choices[0].delta.content; collect them in order and join them.",
           "Two kinds of chunk carry no text: the usage chunk at the end has an empty choices list, and "
           "the first and the finishing chunk have delta.content None. Skip both.",),
)
