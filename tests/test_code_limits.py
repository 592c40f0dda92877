"""Every module in src/ fits in one reading: no module over 800 lines, no function over
120 lines (from its ``def`` to its last line, nested functions counted on their own too)."""

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "topocast"
MAX_MODULE_LINES = 800
MAX_FUNCTION_LINES = 120


def _sizes():
    """(name, lines, limit) of every module and function in src/."""
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        text = path.read_text(encoding="utf-8")
        yield rel, len(text.splitlines()), MAX_MODULE_LINES
        for node in ast.walk(ast.parse(text, filename=str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield f"{rel}:{node.name}", node.end_lineno - node.lineno + 1, MAX_FUNCTION_LINES


def test_no_module_or_function_over_the_limits():
    sizes = list(_sizes())
    assert any(name.endswith("topology/io.py:from_data") for name, _, _ in sizes)  # the walk sees functions
    over = [f"{name} ({lines} lines > {limit})" for name, lines, limit in sizes if lines > limit]
    assert not over, "too long (split into named steps): " + "; ".join(over)
