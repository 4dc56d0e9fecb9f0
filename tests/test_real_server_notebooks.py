"""The short version of the series against a real llama.cpp server: notebooks run to the end, no error cell.

The whole run is ``python benchmarks/notebooks_real_server.py`` (its time is stated in the README); this
test runs the first notebook and the first tool notebook with the same runner, so the suite catches a
notebook that crashes on a real server with a tiny model.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))
import llama_server  # noqa: E402
import notebooks_real_server as runner  # noqa: E402

SHORT = ["01_first_call.ipynb", "05_one_tool.ipynb"]


@pytest.fixture(scope="module")
def learner():
    llama_server.require_installed()
    with llama_server.LlamaServer(n_ctx=4096) as server:
        yield server, runner.learner_env(server)


@pytest.mark.parametrize("name", SHORT)
def test_notebook_runs_to_the_end_on_a_real_server(learner, name):
    server, env = learner
    run = runner.run_notebook(ROOT / "notebooks" / name, env, cell_timeout=120)
    server.check_alive()
    assert not run.error_cells and not run.errors, run.errors
    assert run.slowest <= 120


def test_the_weakness_notice_pattern_reads_the_package_wording():
    assert runner.WEAKNESS.search("The model returned no tool call, so this step is skipped.")
    assert runner.WEAKNESS.search("verdict: off_topic (fail-closed: unparseable verdict)")
    assert not runner.WEAKNESS.search("The AI club meets on Thursdays at 18:00.")
