"""topocast.mpi under mpiexec: every root, counts 0..tens of MiB, five types, compared bitwise
with MPICH's own collectives; errors raised the same on every rank; a plan's pipelining,
``after`` and rate caps. Each case runs ``cco_rank.py`` in an ``mpiexec -n N`` subprocess."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src"

pytest.importorskip("mpi4py", reason="mpi4py is not installed (pip install '.[mpi]')")


def _mpiexec() -> str | None:
    beside = Path(sys.executable).parent / "mpiexec"  # the mpich wheel installs it beside python
    return str(beside) if beside.exists() else shutil.which("mpiexec")


MPIEXEC = _mpiexec()
pytestmark = pytest.mark.skipif(MPIEXEC is None, reason="mpiexec not found (pip install '.[mpi]' brings MPICH's)")


def run_ranks(n: int, *args: str, timeout: float = 120) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]))
    env.setdefault("UCX_LOG_LEVEL", "error")  # MPICH's UCX warns about leftover requests after a failed rank
    cmd = [MPIEXEC, "-n", str(n), sys.executable, str(HERE / "cco_rank.py"), *args]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    assert r.returncode == 0, (
        f"{' '.join(args)} on {n} ranks failed ({r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}"
    )
    line = next((x for x in r.stdout.splitlines() if x.startswith("{")), None)
    assert line is not None, r.stdout
    out = json.loads(line)
    assert out["ok"] == args[0] and out["ranks"] == n and out["checks"] > 0
    return out


@pytest.mark.parametrize("n", range(1, 9))
def test_bcast_and_allreduce_match_mpi(n):
    """Every root; counts 0, 1, 7, 1001, 40003; int8, int32, float32, float64, complex128;
    the buffer forms mpi4py takes; every built-in op."""
    run_ranks(n, "basic")


@pytest.mark.slow
def test_tens_of_mib():
    """16 MiB + 3 bytes from every root; an allreduce of 16 MiB of int32."""
    run_ranks(4, "large", "16")


@pytest.mark.parametrize(("n", "waits"), [(2, ""), (5, "crowded")])
def test_errors_are_raised_on_every_rank(n, waits):
    """A mismatch (after a predicted call too) raises the same error on every rank, whether
    the ranks' waits spin (a core per rank) or sleep between polls (more ranks than cores:
    forced at 5 ranks, so that both run on any machine)."""
    run_ranks(n, "errors", *([waits] if waits else []))


def test_plan_pipelines_waits_and_paces():
    run_ranks(3, "plan")


@pytest.mark.slow
@pytest.mark.parametrize("n", [3, 8])
def test_planned_on_a_topology(n):
    run_ranks(n, "topology", "builtin:hetero-2switch", "bcast" if n == 8 else "both")


@pytest.mark.slow
def test_allreduce_planned_on_two_clusters():
    run_ranks(8, "topology", "builtin:two-clusters", "allreduce")


@pytest.mark.parametrize("n", [1, 2, 4])
def test_buffer_forms_match_mpi(n):
    """Derived datatypes (bytes outside them untouched), Fortran order, DLPack, zero-length
    ``[None, MPI.INT]``, user-defined ops and bool reductions give what MPI's own calls give,
    with ``auto`` and explicit planners alike; an intercommunicator goes to MPI; what mpi4py
    or topocast refuses is refused on every rank."""
    run_ranks(n, "forms")


def test_state_dies_with_its_communicator():
    """After a collective on a freed communicator, the next one (which MPI gives the freed
    handle) gets its own group's data."""
    run_ranks(4, "freed")
