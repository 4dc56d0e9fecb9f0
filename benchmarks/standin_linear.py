"""Request times of the offline stand-in on inputs that once made it slow, at several sizes.

Each case is sent through the stand-in's request handler (``helpers.standin.server._reply``, what every
``/v1/chat/completions`` request runs), at n and 2n and 4n, so a linear cost shows as times that double:

- ``quote``: a user message with an unclosed ``"`` and then n sentences (``meaning.sentences``);
- ``facts``: a fact extractor's request whose user states n facts (``tasks.extract_facts``; over
  ``tasks.MAX_FACTS`` the reply is a refusal naming the cap);
- ``summary``: a summariser's request of n turn lines, far over its word limit (``tasks.summarise_conversation``);
- ``max_tokens``: a reply quoting an n-word sentence, cut by ``max_tokens=5``.

Run: ``python benchmarks/standin_linear.py [--sizes 1000 2000 4000]``. The tests that keep these linear count
work instead of timing it: ``tests/test_standin_linear.py``.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path
import sys

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from helpers.core.context_format import write_turn_line  # noqa: E402
from helpers.memory.profile_extraction import CAMPUS  # noqa: E402  (the request the memory layer sends)
from helpers.memory.summary import SUMMARISER_PROMPT, summary_request  # noqa: E402
from helpers.standin.server import _reply  # noqa: E402

MODEL = "offline/stand-in"


def _letters(i: int) -> str:
    word = ""
    while True:
        word, i = "abcdefghijklmnopqrstuvwxyz"[i % 26] + word, i // 26
        if not i:
            return word


def quote(n: int) -> dict:
    said = 'Remember this: "' + " ".join(f"Sentence number {i} is here." for i in range(n))
    return {"model": MODEL, "messages": [{"role": "user", "content": said}]}


def facts(n: int) -> dict:
    said = " ".join(f"My thing {_letters(i)} is value {i}." for i in range(n))
    return {"model": MODEL, "messages": CAMPUS.request(1, said, "Noted."),
            "response_format": {"type": "json_object"}}


def summary(n: int) -> dict:
    turns = [write_turn_line(i, "user", f"My favourite number this week is {i}.") for i in range(n)]
    messages = summary_request("(none)", turns, [], 80)
    assert messages[0]["content"] == SUMMARISER_PROMPT
    return {"model": MODEL, "messages": messages}


def max_tokens(n: int) -> dict:
    said = "My motto is " + " ".join(f"word{i}" for i in range(n)) + "."
    return {"model": MODEL, "max_tokens": 5,
            "messages": [{"role": "user", "content": said}, {"role": "assistant", "content": "Noted."},
                         {"role": "user", "content": "What is my motto?"}]}


CASES = {"quote": quote, "facts": facts, "summary": summary, "max_tokens": max_tokens}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 2000, 4000, 8000])
    parser.add_argument("--cases", nargs="+", choices=sorted(CASES), default=list(CASES))
    args = parser.parse_args()
    _reply(quote(10))  # loads the embedding model once, outside the timings
    print(f"{'case':<12}" + "".join(f"{n:>12,}" for n in args.sizes) + "   (seconds per request)")
    for name in args.cases:
        times = []
        for n in args.sizes:
            body = CASES[name](n)
            start = time.perf_counter()
            _reply(body)
            times.append(time.perf_counter() - start)
        print(f"{name:<12}" + "".join(f"{t:>12.3f}" for t in times), flush=True)


if __name__ == "__main__":
    main()
