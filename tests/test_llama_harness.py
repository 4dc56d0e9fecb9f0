"""The real-server harness names a crashed llama.cpp build instead of leaving connection errors."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import llama_server  # noqa: E402

SEGFAULT = "import os, signal, time; time.sleep(0.2); os.kill(os.getpid(), signal.SIGSEGV)"


class CrashingServer(llama_server.LlamaServer):
    """A stand-in process that prints a line and dies the way the crashing build did."""

    def __init__(self, script: str):
        super().__init__(Path("unused.gguf"))
        self.script = script

    def command(self) -> list[str]:
        return [sys.executable, "-c", f"print('loading model', flush=True); {self.script}"]


def test_a_crash_before_ready_names_the_signal_and_the_log_tail():
    with pytest.raises(llama_server.ServerError) as caught:
        CrashingServer(SEGFAULT).start(timeout=20)
    assert "the llama.cpp build crashed (signal 11)" in str(caught.value)
    assert "loading model" in str(caught.value)


def test_a_crash_after_start_is_reported_by_check_alive():
    server = CrashingServer(SEGFAULT)
    server._wait_ready = lambda timeout: None  # pretend it answered once
    server.start()
    try:
        server.process.wait(timeout=20)
        with pytest.raises(llama_server.ServerError, match=r"crashed \(signal 11\)"):
            server.check_alive()
    finally:
        server.stop()


def test_a_running_server_passes_check_alive():
    server = CrashingServer("time.sleep(30)")
    server._wait_ready = lambda timeout: None
    server.start()
    try:
        assert server.exit_reason() is None
        server.check_alive()
    finally:
        server.stop()
