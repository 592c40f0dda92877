"""The maintainer's tools run with the tests: ruff (lint and format) and mypy, configured in
pyproject.toml. Each skips with a reason only when the tool is not installed (the ``[test]``
extra installs both)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _tool(name: str) -> str:
    path = shutil.which(name) or str(Path(sys.executable).with_name(name))
    if not Path(path).exists():
        pytest.skip(f"{name} is not installed (pip install -e '.[test]')")
    return path


@pytest.mark.parametrize(
    "argv", [["check", "src", "tests", "benchmarks"], ["format", "--check", "src", "tests", "benchmarks"]]
)
def test_ruff(argv):
    r = subprocess.run([_tool("ruff"), *argv], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]


def test_mypy():
    r = subprocess.run([_tool("mypy")], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
