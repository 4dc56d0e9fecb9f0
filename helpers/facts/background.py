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
import time
from concurrent.futures import Future
from contextlib import AbstractContextManager
from typing import Any, Callable, Mapping

from helpers.facts.decisions import FactDecision
from helpers.facts.schema import Candidate
from helpers.facts.writer import FactMemory, FactMemoryError

log = logging.getLogger(__name__)

# A waiter also re-checks this often that the writer thread is still alive, so it never waits for a dead one.
_CHECK_EVERY = 0.5


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
    returns only after that commit, and raises ``FactWriteError`` (chained from the cause) if the
    batch was rolled back, for callers that want the simpler guarantee and can afford to wait for
    the batch. A commit survives a killed process (SQLite with ``synchronous = NORMAL`` can still
    lose the last commits to a power cut).

    What the futures promise:

    * ``future.cancel()`` withdraws a candidate while it is still queued: the writer skips it and
      it is never written. Once its batch has started the future is *running* and ``cancel()``
      returns False; the result arrives as usual.
    * Done-callbacks run on the writer thread. Whatever one raises is logged and never stops the
      writer; neither does a future the caller resolved itself. A callback must not wait for the
      writer: ``submit(wait=True)``, ``flush()`` and ``close()`` called there raise
      ``FactWriteError`` at once instead of waiting for their own thread.
    * If the writer thread stops (``SystemExit`` from inside a batch, say), every candidate still
      queued fails with ``FactWriteError``; ``submit``, ``flush`` and ``close`` then raise
      ``FactWriteError`` saying so instead of queueing or waiting - create a new
      ``BackgroundWriter`` and resubmit.
    """

    def __init__(self, memory: FactMemory, *, batch_size: int = 256):
        self.memory, self.batch_size = memory, max(1, batch_size)
        self._queue: queue.Queue = queue.Queue()
        self._cond = threading.Condition()
        self._pending = 0  # submitted, neither resolved nor skipped yet
        self._failures: list[BaseException] = []
        self._thread: threading.Thread | None = None
        self._stopped: BaseException | None = None  # why the writer thread stopped before close()
        self._closed = False

    # -- the caller's side
    def submit(self, candidate: Candidate | Mapping[str, Any], *, wait: bool = False,
               timeout: float | None = None) -> "Future[FactDecision]":
        """Queue a candidate: returns when queued (not durable); ``wait=True`` returns after its commit.

        With ``wait=True`` it raises ``FactWriteError`` if the batch was rolled back (nothing of it
        was stored; the cause is chained), or if it was not committed within ``timeout`` seconds.
        """
        if wait:
            self._refuse_on_writer_thread("submit(wait=True)", "use wait=False there")
        future: Future = Future()
        with self._cond:
            if self._closed:
                raise FactWriteError("this BackgroundWriter is closed; create a new one to queue more "
                                     "candidates")
            self._raise_if_stopped("nothing was queued")
            if self._thread is None:
                thread = threading.Thread(target=self._run, name="fact-writer", daemon=True)
                thread.start()
                self._thread = thread
            self._pending += 1
            self._queue.put((candidate, future))  # under the lock, so a stopping writer fails it or never sees it
        if wait:
            self._wait_committed(future, timeout)
        return future

    def _wait_committed(self, future: Future, timeout: float | None) -> None:
        """Return once ``future``'s batch committed; otherwise raise FactWriteError saying what happened."""
        with self._cond:
            self._wait_until(future.done, timeout)
        if not future.done():
            self._raise_if_stopped("the candidate may not have been stored")
            raise FactWriteError(f"the candidate was queued but not committed within {timeout}s, so it is "
                                 "not durable yet; keep it, and wait on the returned future or call flush()")
        if future.cancelled():
            raise FactWriteError("the candidate was cancelled before its batch started; it was not stored")
        error = future.exception()
        if error is not None:
            raise FactWriteError(f"the candidate's batch failed and was rolled back, so it was not stored "
                                 f"({error}); resubmit it") from error

    def flush(self, timeout: float | None = None) -> None:
        """Wait until every queued candidate is committed; raise FactWriteError if any batch failed.

        Also raises at once on the writer thread (from a done-callback), after ``timeout`` seconds,
        and when the writer thread has stopped (its queued candidates were not stored).
        """
        self._refuse_on_writer_thread("flush()", "call it from another thread")
        with self._cond:
            finished = self._wait_until(lambda: self._pending == 0, timeout)
            pending, failures, self._failures = self._pending, self._failures, []
        self._raise_if_stopped("candidates queued to it were not stored (their futures hold the error)")
        if not finished:
            raise FactWriteError(f"{pending} queued candidates were still not committed after {timeout}s; "
                                 "call flush() again or raise the timeout")
        if pending:  # finished early because the thread is gone (stopped by close() with work left?)
            raise FactWriteError(f"{pending} queued candidates were not committed and the writer thread is no "
                                 "longer running; create a new BackgroundWriter and resubmit them")
        if failures:
            raise FactWriteError(f"{len(failures)} background batch(es) failed and were not stored (first: "
                                 f"{failures[0]}); resubmit those candidates")

    def close(self) -> None:
        """Write what is queued, then stop the thread (raises like flush() if a batch failed)."""
        self._refuse_on_writer_thread("close()", "close it from another thread")
        with self._cond:
            self._closed, thread = True, self._thread
        if thread is not None:
            self._queue.put(None)
            thread.join()  # returns at once if the thread already stopped
        self.flush(0)

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _refuse_on_writer_thread(self, call: str, instead: str) -> None:
        if threading.current_thread() is self._thread:
            raise FactWriteError(f"{call} was called on the writer thread (a done-callback?), where it would "
                                 f"wait for itself forever; {instead}")

    def _stop_reason(self) -> str:
        """Why the writer thread stopped, or '' while it runs (or after close() stopped it)."""
        if self._stopped is not None:
            return repr(self._stopped)
        thread = self._thread
        if thread is not None and not thread.is_alive() and not self._closed:
            return "it is no longer running"
        return ""

    def _raise_if_stopped(self, consequence: str) -> None:
        reason = self._stop_reason()
        if reason:
            raise FactWriteError(f"the background writer thread stopped ({reason}), so {consequence}; create "
                                 "a new BackgroundWriter and resubmit the candidates") from self._stopped

    def _wait_until(self, done: Callable[[], bool], timeout: float | None) -> bool:
        """Wait, holding ``self._cond``, until ``done()`` or the writer is gone; False if ``timeout`` ran out."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not done():
            if self._stop_reason() or (self._thread is not None and not self._thread.is_alive()):
                return True  # nothing more will happen; the caller looks at what is left
            remaining = _CHECK_EVERY if deadline is None else min(deadline - time.monotonic(), _CHECK_EVERY)
            if remaining <= 0:
                return False
            self._cond.wait(remaining)
        return True

    # -- the writer thread
    def _run(self) -> None:
        try:
            while True:
                items = [self._queue.get()]
                while items[-1] is not None and len(items) < self.batch_size:
                    try:
                        items.append(self._queue.get_nowait())
                    except queue.Empty:
                        break
                stop = items[-1] is None
                batch = self._start([item for item in items if item is not None])
                if batch:
                    self._write(batch)
                if stop:
                    return
        except BaseException as err:  # only a non-Exception from a batch (SystemExit...) or a bug gets here
            log.error("the background fact writer stopped: %r", err)
            with self._cond:
                if self._stopped is None:
                    self._stopped = err
            self._fail_queued(err)
        finally:
            with self._cond:
                self._cond.notify_all()

    def _start(self, items: list[tuple[Any, Future]]) -> list[tuple[Any, Future]]:
        """Mark each future running; drop the ones cancelled while queued (they are never written)."""
        batch, skipped = [], 0
        for candidate, future in items:
            try:
                started = future.set_running_or_notify_cancel()
            except RuntimeError:  # the caller already resolved it: still written, its result is theirs
                log.warning("a queued fact future was resolved by its caller before its batch; the candidate "
                            "is written anyway (cancel() is the way to withdraw one)")
                started = True
            if started:
                batch.append((candidate, future))
            else:
                skipped += 1
        if skipped:
            log.info("skipped %d cancelled candidate(s)", skipped)
            self._settled(skipped)
        return batch

    def _write(self, batch: list[tuple[Any, Future]]) -> None:
        try:
            decisions = self.memory.write_many([candidate for candidate, _ in batch])
        except BaseException as err:  # reported through the futures and flush()
            fatal = not isinstance(err, Exception)  # SystemExit, KeyboardInterrupt: the thread stops
            log.warning("background fact batch of %d failed: %r", len(batch), err)
            with self._cond:
                self._failures.append(err)
                if fatal:
                    self._stopped = err  # before any future resolves, so its waiter sees the writer stopped
            for _, future in batch:
                self._resolve(future, error=err)
            self._settled(len(batch))
            if fatal:
                raise
            return
        for (_, future), decision in zip(batch, decisions):
            self._resolve(future, result=decision)
        self._settled(len(batch))

    def _fail_queued(self, cause: BaseException) -> None:
        """The writer is stopping abnormally: fail every candidate still queued (none can be added now)."""
        with self._cond:
            left = []
            while True:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is not None:
                    left.append(item)
        if left:
            error = FactWriteError(f"the background writer thread stopped ({cause!r}) before this candidate's "
                                   "batch; it was not stored - create a new BackgroundWriter and resubmit it")
            error.__cause__ = cause
            with self._cond:
                self._failures.append(error)
            started = self._start(left)  # a cancelled one is simply skipped
            for _, future in started:
                self._resolve(future, error=error)
            self._settled(len(started))

    @staticmethod
    def _resolve(future: Future, *, result: Any = None, error: BaseException | None = None) -> None:
        """Hand one outcome to one future; nothing a future or its callbacks do can stop the writer."""
        try:
            if error is None:
                future.set_result(result)
            else:
                future.set_exception(error)
        except BaseException as err:  # InvalidStateError (resolved by its caller), a callback's SystemExit...
            log.warning("could not report a background fact outcome to its future (%r); the writer goes on",
                        err)

    def _settled(self, count: int) -> None:
        with self._cond:
            self._pending -= count
            self._cond.notify_all()
