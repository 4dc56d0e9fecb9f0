"""Write the repository's address into every notebook's Colab badge and setup cell, and the README's badges.

The address is read from one place, ``[project.urls] Repository`` in pyproject.toml. After a fork or a
move, change it there and run ``python tests/colab_setup.py``; ``--check`` only reports what differs
(tests/test_colab.py runs it so). The setup cell installs ``requirements-colab.txt`` (exact pins of what
Colab lacks) and then the helpers package with ``--no-deps``, so Colab's own widgets, kernel and numpy
are never upgraded.
"""
from __future__ import annotations

import argparse
import re
import sys
import tomllib
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
BADGE = "https://colab.research.google.com/assets/colab-badge.svg"
SETUP = '''# Setup: in Colab this installs the workshop's pinned packages and its helpers; locally it does nothing.
import sys
if "google.colab" in sys.modules:
    SOURCE = "{repository}"  # set for every notebook by tests/colab_setup.py
    !pip -q install -r {{SOURCE}}/raw/main/requirements-colab.txt
    !pip -q install --no-deps "git+{{SOURCE}}"'''


def repository() -> str:
    """The repository's https address, from pyproject.toml."""
    urls = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]
    url = urls["Repository"].rstrip("/")
    if not re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+", url):
        raise SystemExit(f"pyproject.toml: Repository = {url!r} is not https://github.com/OWNER/NAME")
    return url


def badge(url: str, notebook: str) -> str:
    """The markdown of one notebook's Open-in-Colab badge."""
    path = url.removeprefix("https://github.com/")
    return (f"[![Open In Colab]({BADGE})](https://colab.research.google.com/github/{path}/blob/main/"
            f"notebooks/{notebook})")


def setup_cell(url: str) -> str:
    """The source of every notebook's second cell."""
    return SETUP.format(repository=url)


def sync(check: bool) -> list[str]:
    """Bring every notebook and the README in line with the repository address; return what differed."""
    url, differs = repository(), []
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        first, second = nb["cells"][0], nb["cells"][1]
        old_first = "".join(first["source"])
        new_first = re.sub(r"\[!\[Open In Colab\]\([^)]*\)\]\([^)]*\)", badge(url, path.name), old_first)
        if "[![Open In Colab]" not in old_first:
            new_first = badge(url, path.name) + "\n\n" + old_first
        changed = new_first != old_first or "".join(second["source"]) != setup_cell(url)
        if changed:
            differs.append(path.name)
            if not check:
                first["source"], second["source"] = new_first, setup_cell(url)
                nbformat.write(nb, path)
    readme = ROOT / "README.md"
    text = readme.read_text()
    new = re.sub(r"https://colab\.research\.google\.com/github/[\w.-]+/[\w.-]+/blob/main/notebooks/",
                 f"https://colab.research.google.com/github/{url.removeprefix('https://github.com/')}"
                 "/blob/main/notebooks/", text)
    if new != text:
        differs.append("README.md")
        if not check:
            readme.write_text(new)
    return differs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only list what differs; exit 1 if anything does")
    args = parser.parse_args(argv)
    differs = sync(check=args.check)
    for name in differs:
        print(("differs: " if args.check else "updated: ") + name)
    return 1 if (args.check and differs) else 0


if __name__ == "__main__":
    sys.exit(main())
