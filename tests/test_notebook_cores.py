"""A notebook cell marked with a module path on its first line (``# helpers/chat/history.py``) holds the same code
as that module: every function, class and constant the cell defines is compared with the module's definition
of the same name, as text after formatting (``ast.unparse``: comments and layout do not count)."""
import ast
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MARK = re.compile(r"^#\s*(helpers/[\w/]+\.py)\b")


def marked_cells():
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for index, cell in enumerate(json.loads(path.read_text())["cells"]):
            source = "".join(cell["source"])
            match = MARK.match(source)
            if cell["cell_type"] == "code" and match:
                yield pytest.param(source, match.group(1), id=f"{path.stem}[{index}]")


def definitions(tree: ast.Module) -> dict[str, str]:
    found = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found[node.name] = ast.unparse(node)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name) and target.id.isupper():
                    found[target.id] = ast.unparse(node)
    return found


@pytest.mark.parametrize("source,module", list(marked_cells()))
def test_marked_cell_is_the_helpers_code(source, module):
    in_cell = definitions(ast.parse(source))
    assert in_cell, f"a cell marked {module} defines nothing to compare"
    in_module = definitions(ast.parse((ROOT / module).read_text()))
    for name, code in in_cell.items():
        assert name in in_module, f"{module} has no {name}: the notebook builds code the package does not keep"
        assert code == in_module[name], f"{name} differs between the notebook cell and {module}"


def test_the_comparison_ignores_layout_but_not_code():
    a = definitions(ast.parse("def f(x):\n    # a comment\n    return (x +\n  1)\n"))
    b = definitions(ast.parse("def f(x):\n    return x + 1\n"))
    c = definitions(ast.parse("def f(x):\n    return x + 2\n"))
    assert a == b and a != c
