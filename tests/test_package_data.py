"""A plain ``pip install .`` ships every file the package reads: each non-Python file under
src/topocast is named by ``[tool.setuptools.package-data]``, and the license files exist."""

import fnmatch
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "topocast"


def test_every_data_file_is_package_data():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = config["tool"]["setuptools"]["package-data"]["topocast"]
    data = [
        p.relative_to(PACKAGE).as_posix()
        for p in PACKAGE.rglob("*")
        if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts
    ]
    assert "py.typed" in data
    missing = [f for f in data if not any(fnmatch.fnmatch(f, pat) for pat in patterns)]
    assert not missing, f"not in [tool.setuptools.package-data]: {missing}"
    unused = [pat for pat in patterns if not any(fnmatch.fnmatch(f, pat) for f in data)]
    assert not unused, f"package-data names files that do not exist: {unused}"


def test_license_files_exist():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    for name in config["project"].get("license-files", []):
        assert list(ROOT.glob(name)), f"license-files names {name!r}, which does not exist"
