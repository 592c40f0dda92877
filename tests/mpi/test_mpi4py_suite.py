"""mpi4py's own collective tests with every communicator's ``Bcast``/``Allreduce`` routed
through topocast.mpi, assertions untouched (mpi4py_suite.py, one rank each, under mpiexec).

The test files come from the sdist of the installed mpi4py release (its ``test/``
directory): ``$TOPOCAST_MPI4PY_TESTS`` if set, else a cache directory, filled once by
``pip download --no-binary mpi4py``; without them (no network, no pip) the tests skip and
say why. Runs: the default planners (``auto``) at 1 to 4 ranks on every test of the files that
calls ``Bcast`` or ``Allreduce`` (the others never reach topocast), and every
planner that runs without a topology (on the uniform star topocast.mpi assumes) on the tests
that call ``Bcast`` (broadcast planners) or ``Allreduce`` (allreduce planners) at 4 ranks.
``Ibcast``/``Iallreduce`` stay MPI's: topocast offers no non-blocking collectives.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src"
mpi4py = pytest.importorskip("mpi4py", reason="mpi4py is not installed (pip install '.[mpi]')")


def _mpiexec() -> str | None:
    beside = Path(sys.executable).parent / "mpiexec"  # the mpich wheel installs it beside python
    return str(beside) if beside.exists() else shutil.which("mpiexec")


MPIEXEC = _mpiexec()
pytestmark = pytest.mark.skipif(MPIEXEC is None, reason="mpiexec not found (pip install '.[mpi]' brings MPICH's)")

MODULES = ("test_cco_buf", "test_cco_nb_buf", "test_msgzero")
BCAST_TESTS = "testBcast"
ALLREDUCE_TESTS = "testAllreduce"


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "topocast" / f"mpi4py-{mpi4py.__version__}-test"


def _fetch(dest: Path) -> str | None:
    """mpi4py's ``test/`` of the installed release into ``dest``; None, or why not."""
    version = mpi4py.__version__
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-binary", "mpi4py", "--no-deps"]
        cmd += ["--disable-pip-version-check", "-q", "-d", tmp, f"mpi4py=={version}"]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"pip download mpi4py=={version} failed: {exc}"
        sdists = list(Path(tmp).glob("mpi4py-*.tar.gz"))
        if r.returncode or not sdists:
            return f"pip download mpi4py=={version} failed: {(r.stderr or r.stdout).strip()[-300:]}"
        staging = Path(tempfile.mkdtemp(dir=dest.parent, prefix=dest.name + ".part-"))
        with tarfile.open(sdists[0]) as tar:
            prefix = f"mpi4py-{version}/test/"
            for member in tar.getmembers():
                if member.isfile() and member.name.startswith(prefix) and "/" not in member.name[len(prefix) :]:
                    member.name = member.name[len(prefix) :]
                    if hasattr(tarfile, "data_filter"):
                        tar.extract(member, staging, filter="data")
                    else:  # Python before 3.11.4: plain files under test/ only, checked above
                        tar.extract(member, staging)
        if not all((staging / f"{m}.py").is_file() for m in MODULES):
            shutil.rmtree(staging)
            return f"the sdist of mpi4py {version} has no test/{MODULES[0]}.py"
        try:
            staging.rename(dest)  # atomic: a concurrent fetch that won leaves its copy
        except OSError:
            shutil.rmtree(staging)
    return None


@pytest.fixture(scope="module")
def testdir() -> Path:
    given = os.environ.get("TOPOCAST_MPI4PY_TESTS")
    if given:
        if not (Path(given) / f"{MODULES[0]}.py").is_file():
            pytest.fail(f"TOPOCAST_MPI4PY_TESTS={given}: no {MODULES[0]}.py there (mpi4py's test/ directory expected)")
        return Path(given)
    dest = _cache_dir()
    if not (dest / f"{MODULES[0]}.py").is_file():
        dest.parent.mkdir(parents=True, exist_ok=True)
        why = _fetch(dest)
        if why is not None:
            pytest.skip(f"mpi4py's own tests unavailable: {why}")
    return dest


def _planners(collective: str) -> list[str]:
    """Every registered planner of ``collective`` but the selectors (``auto``: the default
    runs cover it): each runs on the uniform star topocast.mpi uses without a topology."""
    from topocast.planners import available_planners

    return [p.name for p in available_planners(collective) if "selector" not in p.tags]


def run_suite(testdir: Path, n: int, bcast: list[str], allreduce: list[str], *args: str, timeout=1100) -> list[dict]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]))
    env.setdefault("UCX_LOG_LEVEL", "error")
    cmd = [MPIEXEC, "-n", str(n), sys.executable, str(HERE / "mpi4py_suite.py"), str(testdir)]
    cmd += [",".join(bcast), ",".join(allreduce), *args]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    lines = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
    for line in lines:
        failed = {r: m["first"] for r, m in enumerate(line["all"]) if m["failures"] or m["errors"]}
        assert not failed, f"bcast {line['bcast']}, allreduce {line['allreduce']} on {n} ranks: {failed}"
        assert line["run"] > 0 and all(m["run"] == line["run"] for m in line["all"]), line
    assert r.returncode == 0 and len(lines) == len(bcast), f"{r.returncode}:\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
    return lines


def routed_tests(testdir: Path) -> list[str]:
    """The test methods of MODULES whose body calls ``Bcast`` or ``Allreduce`` (found in the
    source with ``ast``): the others never reach topocast, and running them only costs time."""
    import ast

    names = set()
    for module in MODULES:
        tree = ast.parse((testdir / f"{module}.py").read_text())
        for fn in ast.walk(tree):
            if isinstance(fn, ast.FunctionDef) and fn.name.startswith("test"):
                calls = {n.attr for n in ast.walk(fn) if isinstance(n, ast.Attribute)}
                if calls & {"Bcast", "Allreduce"}:
                    names.add(fn.name)
    return sorted(names)


@pytest.mark.slow
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_the_files_with_the_default_planners(testdir, n):
    only = routed_tests(testdir)
    assert {BCAST_TESTS, ALLREDUCE_TESTS} <= set(only), only
    run_suite(testdir, n, ["auto"], ["auto"], "--only", ",".join(only), *MODULES)


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_every_broadcast_planner(testdir):
    planners = _planners("broadcast")
    run_suite(testdir, 4, planners, ["mpi"] * len(planners), "--only", BCAST_TESTS, "test_cco_buf")


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_every_allreduce_planner(testdir):
    planners = _planners("allreduce")
    run_suite(testdir, 4, ["mpi"] * len(planners), planners, "--only", ALLREDUCE_TESTS, "test_cco_buf")
