"""The background write path (notebook 10): candidates queued, then committed in batches by one thread.

An explicit correction is written synchronously instead (``helpers.facts.extract.ingest_turn`` routes
each candidate). ``flush()`` waits for the queue; how long a queued statement takes to become readable
is measured in ``benchmarks/facts_ingest.py``. ``BackgroundWriter`` says what "queued" promises and what
a caller must keep until the commit.
"""
from __future__ import annotations

import logging
import queue
import threading
from concurrent.futures import Future, wait as futures_wait
from contextlib import AbstractContextManager
from typing import Any, Mapping

from helpers.facts.decisions import FactDecision
from helpers.facts.schema import Candidate
from helpers.facts.writer import FactMemory, FactMemoryError

log = logging.getLogger(__name__)


class FactWriteError(FactMemoryError):
    """Queued candidates did not reach the database (they were not stored); resubmit them."""


class BackgroundWriter(AbstractContextManager):  # ``with BackgroundWriter(memory) as queue:`` closes it
    """A queue of candidates drained by one daemon thread, ``batch_size`` per transaction.

    ``submit(candidate)`` returning is a *queued* acknowledgement, not a durable one: the
    candidate is only in this process's memory, and a crash or kill before its batch commits
    loses it without a trace. So the caller must keep its own copy until the candidate is
    committed - for example, acknowledge the upstream message-queue delivery only from the
    future's done-callback, so the queue redelivers after a crash (replays are noops, so
    redelivery is safe). The returned future resolves after the commit: to the FactDecision, or
    to the exception that rolled the batch back (resubmit then). ``submit(..., wait=True)``
    returns only after that commit, for callers that want the simpler guarantee and can
    afford to wait for the batch. A commit survives a killed process (SQLite with
    ``synchronous = NORMAL`` can still lose the last commits to a power cut).
    """

    def __init__(self, memory: FactMemory, *, batch_size: int = 256):
        self.memory, self.batch_size = memory, max(1, batch_size)
        self._queue: queue.Queue = queue.Queue()
        self._cond = threading.Condition()
        self._pending = 0
        self._failures: list[BaseException] = []
        self._thread: threading.Thread | None = None
        self._closed = False

    def submit(self, candidate: Candidate | Mapping[str, Any], *, wait: bool = False,
               timeout: float | None = None) -> "Future[FactDecision]":
        """Queue a candidate: returns when queued (not durable); ``wait=True`` returns after its commit."""
        if wait and threading.current_thread() is self._thread:
            raise FactWriteError("submit(wait=True) was called on the writer thread (a done-callback?), "
                                 "where it would wait for itself forever; use wait=False there")
        future: Future = Future()
        with self._cond:
            if self._closed:
                raise FactWriteError("this BackgroundWriter is closed; create a new one to queue more "
                                     "candidates")
            self._pending += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="fact-writer", daemon=True)
                self._thread.start()
        self._queue.put((candidate, future))
        if wait and not futures_wait([future], timeout).done:
            raise FactWriteError(f"the candidate was queued but not committed within {timeout}s, so it is "
                                 "not durable yet; keep it, and wait on the returned future or call flush()")
        return future

    def _run(self) -> None:
        while True:
            batch = [self._queue.get()]
            while batch[-1] is not None and len(batch) < self.batch_size:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            stop = batch[-1] is None
            batch = [item for item in batch if item is not None]
            if batch:
                self._write(batch)
            if stop:
                return

    def _write(self, batch: list[tuple[Any, Future]]) -> None:
        try:
            decisions = self.memory.write_many([candidate for candidate, _ in batch])
        except Exception as err:  # reported through the futures and flush()
            log.warning("background fact batch of %d failed: %s", len(batch), err)
            for _, future in batch:
                future.set_exception(err)
            with self._cond:
                self._failures.append(err)
        else:
            for (_, future), decision in zip(batch, decisions):
                future.set_result(decision)
        with self._cond:
            self._pending -= len(batch)
            self._cond.notify_all()

    def flush(self, timeout: float | None = None) -> None:
        """Wait until every queued candidate is committed; raise FactWriteError if any batch failed."""
        with self._cond:
            if not self._cond.wait_for(lambda: self._pending == 0, timeout):
                raise FactWriteError(f"{self._pending} queued candidates were still not committed after "
                                     f"{timeout}s; call flush() again or raise the timeout")
            failures, self._failures = self._failures, []
        if failures:
            raise FactWriteError(f"{len(failures)} background batch(es) failed and were not stored (first: "
                                 f"{failures[0]}); resubmit those candidates")

    def close(self) -> None:
        """Write what is queued, then stop the thread (raises like flush() if a batch failed)."""
        with self._cond:
            self._closed, thread = True, self._thread
        if thread is not None:
            self._queue.put(None)
            thread.join()
        self.flush(0)

    def __exit__(self, *exc: object) -> None:
        self.close()

