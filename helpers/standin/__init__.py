"""The offline stand-in: an in-process OpenAI-compatible server that is NOT a language model.

It speaks the real wire protocol through the real ``openai`` client, validates requests like a strict
server, and answers with documented, deterministic rules that read only the messages it is sent
(``server``: the HTTP side and the replies; ``validation``: what the published API accepts and what the
stand-in refuses; ``schemas``: the JSON Schema reader behind tool arguments and ``json_schema`` replies;
``policy``: which tool to call and how to answer; ``tasks``: the judge, scope, summary, profile and
memory rules; ``meaning``: how those rules compare meaning -- the local embedding model, cached, plus code
that normalises days, times, floors, rooms and numbers). The workshop uses it whenever no key is set.
"""
