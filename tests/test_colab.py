"""The Colab path: every notebook installs from the one repository address, with exact pins, and a notebook
runs in an environment that holds Colab's own preinstalled widgets, kernel and numpy without upgrading them.

The install test builds a virtual environment with Colab-like versions, stubs ``google.colab``, points the
setup cell's SOURCE at a local clone of this repository (these machines cannot reach GitHub), and runs
notebook 01 there from its first cell. It needs PyPI; set WORKSHOP_SKIP_COLAB=1 to skip it.
"""
import os
import re
import subprocess
import sys
import textwrap
from datetime import datetime
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

import colab_setup
import workshop_env

ROOT = Path(__file__).resolve().parents[1]
# What Colab ships preinstalled (and its kernel relies on); the setup cell must leave these as they are.
COLAB_PREINSTALLED = {"ipywidgets": "7.7.1", "ipykernel": "6.17.1", "numpy": "2.0.2", "matplotlib": "3.10.0",
                      "tqdm": "4.67.1", "pytz": "2025.2", "matplotlib-inline": "0.1.7"}


def test_every_notebook_installs_from_the_one_repository_address():
    assert colab_setup.sync(check=True) == [], "run: python tests/colab_setup.py"


def test_setup_cell_installs_pins_and_the_package_without_its_dependencies():
    cell = colab_setup.setup_cell("https://github.com/someone/fork")
    assert 'SOURCE = "https://github.com/someone/fork"' in cell
    assert "-r {SOURCE}/raw/main/requirements-colab.txt" in cell and '--no-deps "git+{SOURCE}"' in cell


def test_colab_requirements_are_exact_pins_that_match_requirements_txt():
    def pins(name):
        rows = (line.split("#")[0].strip() for line in (ROOT / name).read_text().splitlines())
        return dict(row.split("==") for row in rows if "==" in row)
    colab, full = pins("requirements-colab.txt"), pins("requirements.txt")
    assert colab and all(full.get(name) == version for name, version in colab.items()), (colab, full)
    assert not set(colab) & {"ipywidgets", "ipykernel", "numpy", "notebook"}, "never upgrade what Colab ships"


def test_a_moved_repository_is_written_everywhere(tmp_path, monkeypatch):
    for name in ("notebooks", "README.md", "pyproject.toml"):
        src = ROOT / name
        if src.is_dir():
            (tmp_path / name).mkdir()
            for nb in sorted(src.glob("*.ipynb"))[:2]:
                (tmp_path / name / nb.name).write_bytes(nb.read_bytes())
        else:
            (tmp_path / name).write_text(src.read_text().replace("larkspur-labs/agent-memory-workshop",
                                                                 "someone/fork") if name == "pyproject.toml"
                                         else src.read_text())
    monkeypatch.setattr(colab_setup, "ROOT", tmp_path)
    monkeypatch.setattr(colab_setup, "NOTEBOOKS", tmp_path / "notebooks")
    assert colab_setup.sync(check=False)
    assert colab_setup.sync(check=True) == []
    for nb in (tmp_path / "notebooks").glob("*.ipynb"):
        text = nb.read_text()
        assert "larkspur-labs" not in text and "github/someone/fork/blob/main/notebooks/" + nb.name in text
    assert "larkspur-labs" not in (tmp_path / "README.md").read_text()


def _run(*args, **kwargs):
    done = subprocess.run(args, capture_output=True, text=True, **kwargs)
    assert done.returncode == 0, f"{' '.join(map(str, args))}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    return done.stdout


@pytest.mark.skipif(bool(os.environ.get("WORKSHOP_SKIP_COLAB")), reason="WORKSHOP_SKIP_COLAB is set")
def test_notebook_runs_in_a_colab_like_environment_and_leaves_its_packages_alone(tmp_path):
    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", str(venv))
    python, pip = str(venv / "bin" / "python"), [str(venv / "bin" / "python"), "-m", "pip", "-q",
                                                   "--disable-pip-version-check"]
    _run(*pip, "install", *(f"{name}=={version}" for name, version in COLAB_PREINSTALLED.items()))
    site = Path(_run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").strip())
    (site / "google" / "colab").mkdir(parents=True)  # no google/__init__.py: protobuf shares the namespace
    (site / "google" / "colab" / "__init__.py").write_text('"""A stand-in for Colab\'s module (tests only)."""\n')
    ipython = tmp_path / "ipython"
    (ipython / "profile_default" / "startup").mkdir(parents=True)
    (ipython / "profile_default" / "startup" / "00-colab.py").write_text("import google.colab\n")

    # The setup cell's SOURCE, as a local clone: git+file:// for the package, raw/main/ for the pins.
    source = tmp_path / "source"
    _run("git", "clone", "-q", str(ROOT), str(source))
    _run("git", "-C", str(source), "checkout", "-q", _run("git", "-C", str(ROOT), "rev-parse", "HEAD").strip())
    (source / "raw" / "main").mkdir(parents=True)
    (source / "raw" / "main" / "requirements-colab.txt").write_text((ROOT / "requirements-colab.txt").read_text())

    nb = nbformat.read(ROOT / "notebooks" / "01_first_call.ipynb", as_version=4)
    setup = nb.cells[1].source
    assert re.search(r'SOURCE = "https://github\.com/[^"]+"', setup)
    nb.cells[1].source = re.sub(r'SOURCE = "[^"]+"', f'SOURCE = "file://{source}"', setup)
    kernels = tmp_path / "kernels" / "colab-like"
    kernels.mkdir(parents=True)
    (kernels / "kernel.json").write_text(textwrap.dedent(f"""\
        {{"argv": ["{python}", "-m", "ipykernel_launcher", "-f", "{{connection_file}}"],
          "display_name": "colab-like", "language": "python"}}"""))
    env = dict(os.environ, JUPYTER_PATH=str(tmp_path), IPYTHONDIR=str(ipython),
               PATH=f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}", PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.pop("PYTHONPATH", None)
    env.update(workshop_env.SETTINGS)
    old_env = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        NotebookClient(nb, kernel_name="colab-like", timeout=900, record_timing=True,
                       resources={"metadata": {"path": str(tmp_path)}}).execute()
    finally:
        os.environ.clear()
        os.environ.update(old_env)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors, errors
    timing = nb.cells[1].metadata["execution"]
    install = (datetime.fromisoformat(timing["shell.execute_reply"].replace("Z", "+00:00"))
               - datetime.fromisoformat(timing["iopub.execute_input"].replace("Z", "+00:00"))).total_seconds()
    print(f"\nColab-like setup cell (pip install of requirements-colab.txt and the package): {install:.0f} s")
    assert install > 1, "the setup cell installed nothing"

    versions = _run(python, "-c", "import importlib.metadata as m; "
                    f"print({{n: m.version(n) for n in {sorted(COLAB_PREINSTALLED)!r}}})")
    assert versions.strip() == str({n: COLAB_PREINSTALLED[n] for n in sorted(COLAB_PREINSTALLED)})
    # The chat window builds on Colab's ipywidgets 7 too.
    _run(python, "-c", "from helpers.chat.chat_session import ChatSession; from helpers.app.chat_window import ChatUI; "
         "ui = ChatUI(ChatSession()); ui.send('Where is the library?'); assert ui.transcript_text()",
         env=env, cwd=str(tmp_path))
    # Installed from git, data files come from the package (notebook 12 generates conversations from them).
    _run(python, "-c", "from helpers.memory.convgen import generate; assert generate(3, 60, 6).turns",
         env=env, cwd=str(tmp_path))
