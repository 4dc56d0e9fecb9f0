"""Run the notebooks against a real llama.cpp server (SmolLM2-135M), as a learner with a local server would.

    python benchmarks/notebooks_real_server.py                 # all twelve notebooks, n_ctx 4096
    python benchmarks/notebooks_real_server.py 01 05 --n-ctx 2048

It starts the suite's server (``tests/llama_server.py``; ``bash tests/setup_llama.sh`` installs it), then
executes a scratch copy of each notebook with the variables a learner would set
(``WORKSHOP_BACKEND=openai-compatible``, ``WORKSHOP_SERVER_PROFILE=llama.cpp``, no key), each cell
limited to ``--cell-timeout`` seconds. It prints one row per notebook: its time, its slowest cell, the
cells that printed a model-weakness notice (a line that says the model could not do what the lesson
needs), and the cells that ended in an error. The committed notebooks are never changed.
``tests/test_real_server_notebooks.py`` runs the short version (notebook 01) in the suite.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
import llama_server  # noqa: E402

# How the package and the notebooks word a weakness of the model (not of the code): one line each.
WEAKNESS = re.compile(r"(the|this) (model|server)\b[^\n]{0,80}\b(cannot|can't|could not|couldn't|did not|didn't|"
                      r"does not|doesn't|returned no|returned an empty|gave no|answered without|is too small|too weak)|"
                      r"fail-closed|unparseable|recorded (stand-in|offline) result|context window|stopped after \d+ steps",
                      re.IGNORECASE)


@dataclass
class NotebookRun:
    name: str
    seconds: float = 0.0
    slowest: float = 0.0
    weakness_cells: list[int] = field(default_factory=list)
    error_cells: list[int] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def cell_text(cell) -> str:
    """Everything a code cell showed: streams, results and errors."""
    parts = []
    for out in cell.get("outputs", []):
        if out.output_type == "stream":
            parts.append(out.text)
        elif out.output_type in ("execute_result", "display_data"):
            parts.append(str(out.get("data", {}).get("text/plain", "")))
        elif out.output_type == "error":
            parts.append(f"{out.ename}: {out.evalue}")
    return "\n".join(parts)


def run_notebook(path: Path, env: dict, cell_timeout: int) -> NotebookRun:
    """Execute a copy of ``path`` in a scratch folder with ``env``; count weakness notices and errors."""
    nb = nbformat.read(path, as_version=4)
    result = NotebookRun(path.stem)
    with tempfile.TemporaryDirectory() as scratch:
        old = dict(os.environ)
        os.environ.clear()
        os.environ.update(env)
        started = time.monotonic()
        client = NotebookClient(nb, timeout=cell_timeout, allow_errors=True, record_timing=True,
                                resources={"metadata": {"path": str(ROOT / "notebooks")}})
        try:
            client.execute(cwd=scratch)
        except (CellExecutionError, CellTimeoutError) as err:  # a timeout ends the run of this notebook
            started_only = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"
                            and "iopub.execute_input" in c.metadata.get("execution", {})
                            and "shell.execute_reply" not in c.metadata.get("execution", {})]
            where = f"cell {started_only[0]}: " if started_only else ""
            result.errors.append(where + str(err).splitlines()[0][:160])
        finally:
            os.environ.clear()
            os.environ.update(old)
        result.seconds = time.monotonic() - started
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        timing = cell.metadata.get("execution", {})
        if "iopub.execute_input" in timing and "shell.execute_reply" in timing:
            spent = (datetime.fromisoformat(timing["shell.execute_reply"].replace("Z", "+00:00"))
                     - datetime.fromisoformat(timing["iopub.execute_input"].replace("Z", "+00:00")))
            result.slowest = max(result.slowest, spent.total_seconds())
        text = cell_text(cell)
        if any(out.output_type == "error" for out in cell.get("outputs", [])):
            result.error_cells.append(index)
            result.errors.append(f"cell {index}: {text.splitlines()[-1][:160] if text else '?'}")
        elif WEAKNESS.search(text):
            result.weakness_cells.append(index)
    return result


def learner_env(server: llama_server.LlamaServer) -> dict:
    """The environment of a learner pointing the workshop at the local server (no NVIDIA key)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WORKSHOP_", "NVIDIA_", "OPENAI_"))}
    env.update(WORKSHOP_BACKEND="openai-compatible", WORKSHOP_BASE_URL=server.base_url,
               WORKSHOP_CHAT_MODEL=llama_server.MODEL_ALIAS, WORKSHOP_SERVER_PROFILE="llama.cpp",
               WORKSHOP_API_KEY=server.api_key or "", WORKSHOP_NO_PROMPT="1", TQDM_DISABLE="1",
               MPLBACKEND="module://matplotlib_inline.backend_inline")
    return env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", help="notebook numbers (default: all)")
    parser.add_argument("--n-ctx", type=int, default=4096, help="the server's context size (default 4096)")
    parser.add_argument("--cell-timeout", type=int, default=120, help="seconds a cell may take (default 120)")
    args = parser.parse_args(argv)
    paths = sorted((ROOT / "notebooks").glob("*.ipynb"))
    if args.notebooks:
        paths = [p for p in paths if p.name[:2] in {n.zfill(2) for n in args.notebooks}]
    missing = llama_server.missing_pieces()
    if missing:
        print("cannot run: " + "; ".join(missing))
        return 2
    total = time.monotonic()
    rows = []
    with llama_server.LlamaServer(n_ctx=args.n_ctx) as server:
        env = learner_env(server)
        for path in paths:
            run = run_notebook(path, env, args.cell_timeout)
            server.check_alive()
            rows.append(run)
            print(f"{run.name:<32} {run.seconds:6.0f} s  slowest cell {run.slowest:5.1f} s  "
                  f"weakness notices {len(run.weakness_cells):2d}  errors {len(run.error_cells):2d}", flush=True)
            for line in run.errors:
                print(f"    {line}")
    print(f"\n{len(rows)} notebooks against llama.cpp (SmolLM2-135M, n_ctx {args.n_ctx}) in "
          f"{time.monotonic() - total:.0f} s; cells with errors: {sum(len(r.error_cells) for r in rows)}")
    return 0 if not any(r.error_cells or r.errors for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
