"""BackgroundWriter's promises under failure: cancellation, failed batches, misbehaving futures, a dead writer.

Every test is bounded: a call that could block (flush, close, submit with wait=True) runs in a helper
thread joined with a timeout, so a regression fails the test instead of hanging the suite.
"""
import sqlite3
import threading
import time

import pytest

from helpers.facts.background import BackgroundWriter, FactWriteError
from helpers.facts.fact_store import FactStoreError, SQLiteFactStore
from helpers.facts.writer import Candidate, FactMemory

LIMIT = 10.0  # seconds any single step may take before the test fails instead of hanging


def said(value, version=1, *, attribute="allergy", source="chat:u1"):
    return Candidate("u1", "user", attribute, value, source, "user", version, evidence=f"said {value}")


def active_values(memory):
    return {(f.attribute, f.value) for f in memory.active_facts("u1")}


def bounded(call, timeout=LIMIT):
    """Run ``call()`` on a helper thread; return ``(result, error)``; fail the test if it is still running."""
    outcome = {}

    def target():
        try:
            outcome["result"] = call()
        except BaseException as err:  # noqa: BLE001 - handed back to the test
            outcome["error"] = err

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), f"{call} was still blocked after {timeout}s"
    return outcome.get("result"), outcome.get("error")


def wait_until(condition, timeout=LIMIT):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


@pytest.fixture
def memory(tmp_path):
    memory = FactMemory(SQLiteFactStore(str(tmp_path / "facts.db"), timeout=5))
    yield memory
    memory.close()


@pytest.fixture
def gated(memory, monkeypatch):
    """``memory`` whose write_many waits for ``gate`` (``entered`` is set once a batch is inside it)."""
    entered, gate = threading.Event(), threading.Event()
    write_many = memory.write_many

    def held(batch):
        entered.set()
        assert gate.wait(LIMIT), "the test never opened the gate"
        return write_many(batch)

    monkeypatch.setattr(memory, "write_many", held)
    return memory, entered, gate


# --- 1. cancellation and misbehaving futures never stop the writer -------------------------------------------

def test_a_cancelled_queued_future_is_skipped_and_the_writer_keeps_going(tmp_path, memory):
    """The issue's repro: another connection holds the write lock while one of three queued futures is cancelled."""
    queue = BackgroundWriter(memory)
    blocker = sqlite3.connect(tmp_path / "facts.db", isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        first = queue.submit(said("milk"))
        wait_until(first.running, 2)  # its batch has started (and waits for the lock); the others queue behind
        second, third = queue.submit(said("soy")), queue.submit(said("eggs"))
        assert second.cancel() is True  # still queued, so it can be withdrawn
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    _, error = bounded(lambda: queue.flush(timeout=5))
    assert error is None, error
    assert second.cancelled() and first.result().outcome == third.result().outcome == "insert"
    assert active_values(memory) == {("allergy", "milk"), ("allergy", "eggs")}  # the cancelled one is not stored
    later, error = bounded(lambda: queue.submit(said("nuts"), wait=True, timeout=5))
    assert error is None, error
    assert later.result().outcome == "insert" and ("allergy", "nuts") in active_values(memory)
    _, error = bounded(queue.close)
    assert error is None, error


def test_a_future_whose_batch_has_started_cannot_be_cancelled(gated):
    memory, entered, gate = gated
    queue = BackgroundWriter(memory)
    first = queue.submit(said("milk"))
    assert entered.wait(LIMIT)
    assert first.running() and first.cancel() is False  # too late to withdraw: it is being written
    gate.set()
    _, error = bounded(queue.close)
    assert error is None, error
    assert first.result().outcome == "insert" and active_values(memory) == {("allergy", "milk")}


@pytest.mark.parametrize("raised", [ValueError, SystemExit])
def test_a_done_callback_that_raises_does_not_stop_the_writer(gated, raised):
    memory, entered, gate = gated
    queue = BackgroundWriter(memory)
    first = queue.submit(said("milk"))
    assert entered.wait(LIMIT)

    def bad_callback(_future):
        raise raised("a caller's callback failed")

    first.add_done_callback(bad_callback)  # not done yet: it will run on the writer thread
    gate.set()
    later, error = bounded(lambda: queue.submit(said("soy"), wait=True, timeout=5))
    assert error is None, error
    assert first.result().outcome == later.result().outcome == "insert"
    _, error = bounded(queue.close)
    assert error is None, error
    assert active_values(memory) == {("allergy", "milk"), ("allergy", "soy")}


def test_a_future_resolved_by_its_caller_does_not_stop_the_writer(gated):
    memory, entered, gate = gated
    queue = BackgroundWriter(memory)
    first = queue.submit(said("milk"))
    assert entered.wait(LIMIT)
    first.set_result("resolved by the caller")  # the writer's own set_result will then find it done
    gate.set()
    later, error = bounded(lambda: queue.submit(said("soy"), wait=True, timeout=5))
    assert error is None, error
    assert first.result() == "resolved by the caller" and later.result().outcome == "insert"
    _, error = bounded(queue.close)
    assert error is None, error
    assert active_values(memory) == {("allergy", "milk"), ("allergy", "soy")}  # the batch still committed


def test_a_dead_writer_is_reported_by_submit_flush_and_close_instead_of_hanging(gated, monkeypatch):
    memory, entered, gate = gated
    held = memory.write_many

    def dies(batch):
        held(batch)  # waits for the gate, then commits...
        raise SystemExit("the writer thread was told to exit")  # ...and stops the thread (not an Exception)

    monkeypatch.setattr(memory, "write_many", dies)
    queue = BackgroundWriter(memory)
    first = queue.submit(said("milk"))
    assert entered.wait(LIMIT)
    queued = queue.submit(said("soy"))  # behind the fatal batch
    waiting = {}
    waiter = threading.Thread(target=lambda: waiting.update(
        outcome=bounded(lambda: queue.submit(said("eggs"), wait=True))), daemon=True)
    waiter.start()
    gate.set()
    assert isinstance(first.exception(timeout=LIMIT), SystemExit)
    assert isinstance(queued.exception(timeout=LIMIT), FactWriteError)
    assert "stopped" in str(queued.exception())
    waiter.join(LIMIT + 1)
    _, error = waiting["outcome"]  # submit(wait=True) without a timeout raised instead of waiting forever
    assert isinstance(error, FactWriteError) and "stopped" in str(error)
    with pytest.raises(FactWriteError, match="writer thread stopped"):
        queue.submit(said("nuts"))
    for call in (queue.flush, lambda: queue.flush(timeout=1), queue.close):
        _, error = bounded(call)
        assert isinstance(error, FactWriteError) and "stopped" in str(error), error


# --- 2. submit(wait=True) raises when its batch failed ------------------------------------------------------

@pytest.mark.parametrize("timeout", [None, 5.0])
def test_submit_with_wait_raises_when_its_batch_was_rolled_back(tmp_path, timeout):
    memory = FactMemory(SQLiteFactStore(str(tmp_path / "facts.db"), timeout=0.2))
    queue = BackgroundWriter(memory)
    blocker = sqlite3.connect(tmp_path / "facts.db", isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # held past the store's busy timeout: the batch cannot commit
    try:
        result, error = bounded(lambda: queue.submit(said("milk"), wait=True, timeout=timeout))
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert result is None and isinstance(error, FactWriteError), (result, error)
    assert "not stored" in str(error) and isinstance(error.__cause__, FactStoreError)
    assert active_values(memory) == set()
    _, error = bounded(queue.close)  # flush/close still report the failed batch (other callers may need it)
    assert isinstance(error, FactWriteError)
    memory.close()


# --- 3. flush() and close() on the writer thread are refused at once -----------------------------------------

@pytest.mark.parametrize("timeout", [None, 2.0])
def test_flush_and_close_from_a_done_callback_are_refused_not_a_deadlock(gated, timeout):
    memory, entered, gate = gated
    queue, seen, finished = BackgroundWriter(memory), {}, threading.Event()

    def from_callback(_future):
        for name, call in (("flush", lambda: queue.flush(timeout=timeout)), ("close", queue.close)):
            start = time.monotonic()
            try:
                call()
                seen[name] = ("returned", time.monotonic() - start)
            except Exception as err:  # noqa: BLE001 - recorded for the assertions below
                seen[name] = (f"{type(err).__name__}: {err}", time.monotonic() - start)
        finished.set()

    queue.submit(said("milk")).add_done_callback(from_callback)
    assert entered.wait(LIMIT)
    gate.set()
    assert finished.wait(LIMIT), "flush() or close() on the writer thread blocked"
    for name in ("flush", "close"):
        message, took = seen[name]
        assert message.startswith("FactWriteError") and "writer thread" in message, (name, message)
        assert took < 1.0, (name, took)
    later, error = bounded(lambda: queue.submit(said("soy"), wait=True, timeout=5))  # close() was refused
    assert error is None, error
    _, error = bounded(queue.close)
    assert error is None, error
    assert active_values(memory) == {("allergy", "milk"), ("allergy", "soy")}
