"""Exercises of notebook 01 (the first call): a system prompt that holds, and joining a streamed reply."""
from __future__ import annotations

import random
import re
import zlib

from openai.types.chat import ChatCompletionChunk

from helpers.llm.client import chat, get_client, get_settings
from helpers.exercises import Exercise, Hint
from helpers.standin.meaning import length_limit, sentences  # the stand-in's reading: "Dr." ends no sentence

QUESTIONS = ("Hello! What can you help me with?", "Hi there, who are you?", "When does the AI club meet?")
_GREETINGS = ("Hello", "Hi", "Hey", "Good morning", "Good evening")
_ASKS = ("What can you do?", "Who are you?", "How can you help me?", "What do you know about?")
# a clause that says "not": stripped to see what the clause would ask without it
_NEGATING = re.compile(r"\b(?:never|not|no|avoid|without|rather than|instead of|nor|neither|stop)\b|\b\w+n't\b",
                       re.I)
_CLAUSES = re.compile(r"[.;!?:\n]+|,?\s+(?:but|and|however|though|actually)\s+|,\s+", re.I)
# An exception to the rule ("except for greetings", "unless asked for more"); "no exceptions" is none.
_EXCEPTION = re.compile(r"\b(?:except|unless|other than|apart from|besides|excluding|exempt\w*|save for|"
                        r"(?:if|when|where) (?:needed|necessary|required|appropriate|asked)|only for questions)\b",
                        re.I)
_NO_EXCEPTION = re.compile(r"\b(?:without|with no|no|not even for)\s+(?:any\s+)?exceptions?\b", re.I)
_GREETING = re.compile(r"\b(?:greet\w*|hello|hi|hey|salutations?|small talk|pleasantries|welcom\w*)\b", re.I)
# a clause about greetings that asks more of them than one sentence ("greetings may be longer")
_MORE = re.compile(r"\b(?:longer|more|freely|any length|several|multiple|many|detail\w*|at length|"
                   r"introduce|list)\b", re.I)


def _sentences(text: str) -> list[str]:
    return sentences(text.strip())


def _questions(prompt: str) -> tuple[str, ...]:
    """The fixed questions plus one greeting generated from the prompt (the same prompt, the same greeting)."""
    rng = random.Random(zlib.crc32(prompt.encode()))
    return QUESTIONS + (f"{rng.choice(_GREETINGS)}! {rng.choice(_ASKS)}",)


def _what_it_asks(prompt: str) -> str | None:
    """None when the prompt asks for one-sentence answers (read as the stand-in reads it, negations included),
    else the reason it does not."""
    limit = length_limit(prompt)
    if limit == 1:
        return None
    if limit is not None:
        return (f"your prompt allows up to {limit} sentences per answer; the exercise asks for exactly one "
                "sentence")
    clauses = [c.strip() for c in _CLAUSES.split(prompt) if c and c.strip()]
    for clause in clauses:
        if length_limit(clause) != 1 and length_limit(_NEGATING.sub(" ", clause)) == 1:
            return (f"your prompt asks for the opposite: {clause!r} says NOT to keep answers short, which asks "
                    "for longer ones. Say plainly that every answer is one sentence")
    for clause in clauses:
        if length_limit(clause) == 1:
            return (f"{clause!r} asks for one sentence, but another part of your prompt asks for longer answers, "
                    "and the longer request wins. Keep only the one-sentence rule")
    for clause in clauses:
        if length_limit(f"{clause}. Answer in one sentence.") != 1:
            return (f"your prompt asks for long answers ({clause!r}); the exercise asks for one sentence. "
                    "Say that instead")
    return "your prompt says nothing about how long an answer may be. Say how long every answer may be"


def _exception_in(prompt: str) -> str | None:
    """The clause of a one-sentence prompt that exempts some answers from the rule (greetings, "if needed"),
    or None. The exercise asks for one sentence for *every* answer, greetings included."""
    for clause in re.split(r"[.;!?\n]+", _NO_EXCEPTION.sub(" ", prompt)):
        clause = clause.strip()
        if not clause:
            continue
        if _EXCEPTION.search(clause):
            return clause
        if _GREETING.search(clause) and length_limit(clause) != 1 and _MORE.search(clause):
            return clause
    return None


def _check_system_prompt(my_system_prompt) -> str:
    if not isinstance(my_system_prompt, str) or not my_system_prompt.strip():
        raise Hint("my_system_prompt must be a non-empty string: the text of the system message.")
    client, settings = get_client(quiet=True), get_settings()
    wrong = _what_it_asks(my_system_prompt)
    exception = None if wrong else _exception_in(my_system_prompt)
    if exception:
        wrong = (f"your prompt makes an exception ({exception!r}): the exercise asks for one sentence in every "
                 "answer, greetings included. Drop the exception")
    questions = _questions(my_system_prompt)
    for question in questions:
        messages = [{"role": "system", "content": my_system_prompt}, {"role": "user", "content": question}]
        reply = chat(messages, client=client).choices[0].message.content or ""
        count = len(_sentences(reply))
        if count == 1:
            continue
        said = f"asked {question!r}, the assistant answered in {count} sentences: {reply[:100]!r}"
        if wrong:
            raise Hint(f"{wrong} ({said}).")
        if settings.backend == "offline":
            raise Hint(f"{said}. Say in the prompt how long every answer may be.")
        raise Hint(f"this server cannot decide this exercise: your prompt does ask for one sentence, but "
                   f"{settings.chat_model} did not keep to it ({said}). A small model often ignores its system "
                   "prompt; check again offline (WORKSHOP_BACKEND=offline) or with a stronger model.")
    if wrong:
        raise Hint(f"{wrong} (this time every reply was one sentence anyway, but nothing in your prompt "
                   "asks for that).")
    return (f"your prompt asks for one sentence, and the assistant kept to it for all {len(questions)} "
            "questions, greetings included.")


def _chunk(choices: list, usage: dict | None = None) -> ChatCompletionChunk:
    """A chunk shaped like the ones a server streams (built by hand, so the check needs no server)."""
    return ChatCompletionChunk.model_validate({
        "id": "chunk", "object": "chat.completion.chunk", "created": 0, "model": "m",
        "choices": choices, **({"usage": usage} if usage else {})})


def _text(content: str | None, finish: str | None = None) -> dict:
    delta = {"content": content} if content is not None else {}
    return {"index": 0, "delta": delta, "finish_reason": finish}


HAND_MADE = ("The AI Club ", "meets on ", "Thursdays.")


def _stream_of(pieces: tuple[str, ...] | list[str], shape: str = "separate") -> list[ChatCompletionChunk]:
    """The chunks a server streams for these pieces, in one of two shapes servers really use.

    "separate": a role-only first chunk, one chunk per piece, a finish chunk without text and a usage chunk
    without choices (the stand-in, NIM). "packed": the role rides on the first piece and finish_reason on the
    last, and no usage chunk follows (servers that ignore include_usage, such as llama.cpp).
    """
    if shape == "packed":
        chunks = [{"index": 0, "delta": {"content": piece}, "finish_reason": None} for piece in pieces]
        chunks[0]["delta"]["role"] = "assistant"
        chunks[-1]["finish_reason"] = "stop"
        return [_chunk([choice]) for choice in chunks]
    return ([_chunk([{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}])]
            + [_chunk([_text(piece)]) for piece in pieces]
            + [_chunk([_text(None, "stop")]),
               _chunk([], {"prompt_tokens": 9, "completion_tokens": len(pieces), "total_tokens": 9 + len(pieces)})])


def _generated(seed: int) -> list[str]:
    """A campus sentence cut at random places into pieces (some empty, as servers send them)."""
    from helpers.retrieval.knowledge_files import load_knowledge_base  # only when a check runs
    rng = random.Random(seed)
    text = sentences(rng.choice(load_knowledge_base()).text)[0]
    cuts = sorted(rng.sample(range(1, len(text)), min(6, len(text) - 1)))
    pieces = [text[a:b] for a, b in zip([0] + cuts, cuts + [len(text)])]
    pieces.insert(rng.randrange(len(pieces)), "")
    return pieces


def _joined(join_stream, chunks: list) -> str:
    try:
        return join_stream(iter(chunks))
    except IndexError:
        raise Hint("the last chunk carries only the token counts and its choices list is empty: "
                   "skip a chunk whose choices list is empty.") from None
    except TypeError:
        raise Hint("some chunks carry no text (delta.content is None, e.g. the first and the finishing "
                   "chunk): add only the pieces that are text.") from None
    except AttributeError as error:
        raise Hint(f"{error}: a streamed chunk carries its text in chunk.choices[0].delta.content (a delta "
                   "with the next piece), not in .message as a whole reply does.") from None


def _wrong_join(got, pieces: list[str] | tuple[str, ...]) -> str | None:
    """The hint for what join_stream returned from these pieces, or None when it is the whole text."""
    expected = "".join(pieces)
    if not isinstance(got, str):
        return f"join_stream returned a {type(got).__name__}; return one string (''.join(pieces))."
    if got == expected:
        return None
    shown = [piece for piece in pieces if piece]
    if got == "":
        return ("join_stream returned '': loop over the chunks and add the text each one carries, "
                "chunk.choices[0].delta.content.")
    if got == shown[-1]:
        return (f"join_stream returned only the last piece, {got!r}: add each piece to the text "
                "(text += piece) instead of replacing it.")
    if got == shown[0]:
        return (f"join_stream returned only the first piece, {got!r}: go on to the end of the stream "
                "(no return or break inside the loop).")
    for separator in (" ", "\n", ", ", "|"):
        if got == separator.join(shown) or got == separator.join(pieces):
            return (f"join_stream put {separator!r} between the pieces: they carry their own spaces, so join "
                    "them with nothing between ('').")
    if got == "".join(reversed(pieces)):
        return "join_stream joined the pieces in reverse order: keep the order they arrive in."
    if expected.endswith(got):
        return (f"the start of the reply is missing: join_stream returned {got!r} of {expected!r}. Some servers "
                "send the first piece of text in the same chunk as the role, so read every chunk, the first "
                "one included.")
    if expected.startswith(got):
        return (f"the end of the reply is missing: join_stream returned {got!r} of {expected!r}. Some servers "
                "send the last piece of text in the same chunk as finish_reason and no usage chunk after it, so "
                "read every chunk to the end (add a chunk's text before you look at finish_reason).")
    return (f"for the pieces {list(pieces)!r} join_stream returned {got!r}: add "
            "chunk.choices[0].delta.content of every chunk, in order, without separators.")


def _check_join_stream(join_stream) -> str:
    if not callable(join_stream):
        raise Hint("join_stream must be a function that takes a stream and returns a string.")
    for shape, streams in (("separate", (HAND_MADE, _generated(7), _generated(2027))),
                           ("packed", (_generated(11), _generated(2028), HAND_MADE))):
        for pieces in streams:
            wrong = _wrong_join(_joined(join_stream, _stream_of(pieces, shape)), pieces)
            if wrong:
                raise Hint(wrong)
    question = [{"role": "user", "content": QUESTIONS[0]}]
    chunks = list(chat(question, client=get_client(quiet=True), stream=True,
                       stream_options={"include_usage": True}))
    expected = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    got = _joined(join_stream, chunks)
    if got != expected:
        raise Hint(f"on a real stream join_stream returned {got[:80]!r}, but the pieces join to "
                   f"{expected[:80]!r}.")
    return (f"six streams made by hand, in both shapes servers send, and a real one of {len(chunks)} chunks "
            "join to the whole reply.")


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
