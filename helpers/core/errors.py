"""The workshop's exceptions and warnings, in one list: all share ``WorkshopError`` / ``WorkshopWarning``.

``except WorkshopError`` catches anything this package raises on purpose. Each class also derives from the
built-in that says what kind of problem it is:

* a ``ValueError`` when what *you* passed is wrong (a setting, an argument, a message list, a file's
  contents) - or when a model's reply cannot be parsed, as ``json.loads`` does for bad text;
* a ``RuntimeError`` when something outside the call failed (the server, the embedding model, a database).

A few also keep the built-in they replaced, so an older ``except KeyError`` (``FileNotFoundError``,
``TimeoutError``) still catches them. No module raises a bare built-in on purpose (tests/test_errors.py
reads every ``raise`` to keep it so); that a class is defined beside the code that raises it is fine, as
long as it is in this list.

The tree (module where each is defined, and what it means)::

    WorkshopError
    ├── ConfigError            (ValueError)    core.errors: a setting is missing, malformed or out of range
    ├── ClockError             (ValueError)    core.clock: WORKSHOP_NOW or a time zone cannot be read
    ├── InvalidIdError         (ValueError)    core.ids: a user or session id no store accepts
    │   └── SessionIdError (SessionStoreError)  sessions.protocol: a refused id, raised by every session store
    ├── CompatError            (ValueError)    llm.message_format: a message or request cannot be sent (raised
    │                                          there by normalize_messages and by llm.compat, which imports it)
    ├── HistoryError           (ValueError)    chat.history: a message list a strict server would reject
    ├── EmptyMessageError      (ValueError)    core.errors: an empty question (nothing was sent)
    ├── ContextOverflowError   (ValueError)    core.errors: the request is longer than the server's context window
    ├── ToolInputError         (ValueError)    agent.tools: a tool's argument is invalid
    ├── UnknownToolError       (ValueError, KeyError)  agent.tools: a tool name that is not in the registry
    ├── SnapshotError          (ValueError)    chat.snapshot: snapshot data (or a mark) a session cannot load
    ├── KnowledgeBaseError     (ValueError)    retrieval.knowledge_files: the knowledge-base file is malformed
    ├── VerdictError           (ValueError)    retrieval.guardrails: a judge's reply is not a strict verdict
    ├── ContextBudgetError     (ValueError)    memory.budget: the budget cannot hold the fixed costs
    ├── MemoryStateError       (ValueError)    memory.assembler: stored memory state it cannot read
    ├── ReplyFormatError       (ValueError)    facts.pipeline: a model extractor's reply is not its strict shape
    │   └── ProfileFormatError                 memory.profile_extraction: a profile reply is unreadable
    ├── ExtractionError        (ValueError)    facts.extract: extraction called in a way that cannot work
    ├── EndpointError          (RuntimeError)  llm.client: a request failed; the message says what to do
    │   ├── ResponseFormatError                llm.client: HTTP 200, but not a chat completion
    │   └── EndpointNotReadyError (TimeoutError)  llm.endpoint: wait_until_ready gave up waiting
    ├── TurnInProgressError    (RuntimeError)  chat.chat_session: a question while the session is still answering one
    ├── EmbeddingError         (RuntimeError)  retrieval.embeddings: the embedding model failed
    │   └── EmbeddingInputError (ValueError)  retrieval.embeddings: not a list of texts, a bad input_type or batch_size
    ├── DataFileError          (FileNotFoundError)  retrieval.embeddings: a data file the workshop ships is missing
    ├── SummaryError           (RuntimeError)  memory.summary: the summariser failed
    ├── FactStoreError         (RuntimeError)  facts.fact_store: the fact database failed (nothing stored)
    ├── FactMemoryError        (RuntimeError)  facts.writer: a fact write or resolve was refused
    │   ├── FactResolutionError                facts.writer: resolve() was given what it cannot apply
    │   └── FactWriteError                     facts.background: the background writer could not write
    └── SessionStoreError      (RuntimeError)  sessions.protocol: the store could not open, read or write
        ├── SessionIdError                     (see InvalidIdError above: it is both)
        ├── SessionNotFoundError               sessions.protocol: no session under these ids
        ├── SessionConflictError               sessions.protocol: another writer saved this session since it was loaded
        ├── SessionSaveError                   sessions.protocol: a change was not saved and was rolled back in memory
        ├── SessionDamagedError                sessions.protocol: stored rows that cannot be restored, or no longer
        │                                      match their digest
        └── ForkError                          sessions.protocol: fork() cannot branch from that turn

    WorkshopWarning (UserWarning)
    ├── EmbeddingTruncationWarning (retrieval.embeddings): a text was cut to the model's length
    ├── CacheWarning (retrieval.knowledge): a cached embedding file was unusable and rebuilt
    ├── DotenvWarning (llm.dotenv_file): a .env file another user could have written was ignored
    ├── RecallWarning (memory.recall_index), SummaryWarning (memory.summary), ProfileWarning (memory.profile)
    └── VectorSearchWarning (sessions.recall_search): a PostgreSQL store without pgvector searches recall in Python

Control flow, not errors: these classes never leave the code that raises them, so they stay outside the tree
(tests/test_errors.py checks that every exception class under ``helpers/`` is either in the tree or here)::

    Hint               (Exception)      exercises: a check's advice to the learner; Exercise.check prints it
    TooManyAttempts    (BaseException)  exercises.nb11: a check's endpoint stops a retry loop with no end; a
                                        BaseException so neither the learner's ``except Exception`` nor the
                                        openai client's retries catch it; the check that set the cap catches it
    _CannotMake        (ValueError)     standin.schemas: no value fits a schema; becomes a _RequestError
    _TooComplex        (Exception)      standin.schemas: a schema took more than STEP_LIMIT steps; becomes a Problem
    _RequestError      (Exception)      standin.validation: an HTTP error answer; standin.server.handle sends it
    _Invalid           (Exception)      standin.validation: one problem with a request, gathered into its 400 answer

(the last four are the offline stand-in's internal signals: it answers every request with an HTTP response,
and the client sees an HTTP error, an ``EndpointError`` or an ``openai.BadRequestError``, never these classes)
"""
from __future__ import annotations


class WorkshopError(Exception):
    """Base of every exception this package raises on purpose."""


class WorkshopWarning(UserWarning):
    """Base of every warning this package issues."""


class ConfigError(WorkshopError, ValueError):
    """A setting is missing or contradictory; the message says which and how to fix it."""


class EmptyMessageError(WorkshopError, ValueError):
    """The question is empty: nothing was sent and the session is unchanged."""


class ContextOverflowError(WorkshopError, ValueError):
    """The server refused a request longer than its context window; the message names its size and the fix.

    ``context_window`` is the server's context size in tokens and ``requested`` what the request needed
    (either may be None when the server did not say).
    """

    def __init__(self, message: str, *, context_window: int | None = None, requested: int | None = None):
        super().__init__(message)
        self.context_window, self.requested = context_window, requested
