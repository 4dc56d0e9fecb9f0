"""The offline stand-in: an in-process OpenAI-compatible server that is NOT a language model.

It speaks the real wire protocol through the real ``openai`` client, validates requests like a strict
server, and answers with documented, deterministic rules that read only the messages it is sent
(``server``: the HTTP side and validation; ``policy``: which tool to call and how to answer; ``tasks``:
the judge, scope, summary, profile and memory rules). The workshop uses it whenever no key is set.
"""
