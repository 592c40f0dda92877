"""``topocast run --launcher mpi``: a plan performed by MPI ranks under mpiexec, measured beside
predicted beside bound."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mpi4py", reason="mpi4py is not installed (pip install '.[mpi]')")

from topocast.mpi.launch import mpiexec_path  # noqa: E402

SRC = Path(__file__).resolve().parents[2] / "src"
pytestmark = pytest.mark.skipif(mpiexec_path() is None, reason="mpiexec not found (pip install '.[mpi]')")


def topocast(*args):
    env = dict(os.environ, PYTHONPATH=str(SRC), UCX_LOG_LEVEL="error")
    return subprocess.run(
        [sys.executable, "-m", "topocast", "run", *args], capture_output=True, text=True, timeout=120, env=env
    )


def test_run_under_mpiexec_reports_measured_predicted_and_bound():
    r = topocast(
        "builtin:uniform-2switch", "-a", "depth_first", "-s", "s", "--size", "3MiB", "--launcher", "mpi", "--json"
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["launcher"] == "mpi" and out["failed"] == {}
    measured, predicted = out["measured"]["per_host"], out["predicted"]["per_host"]
    assert set(measured) == set(predicted) == {"a1", "a2", "a3", "b1", "b2", "b3", "b4"}
    assert all(0 < h["time"] < 60 for h in measured.values())
    assert out["bound"]["aggregate_bandwidth"] > 0


def test_dest_dir_is_refused_with_a_message(tmp_path):
    r = topocast(
        "builtin:uniform-2switch",
        "-a",
        "flat",
        "-s",
        "s",
        "--size",
        "1KiB",
        "--launcher",
        "mpi",
        "--dest-dir",
        str(tmp_path),
    )
    assert r.returncode == 2 and "--dest-dir" in r.stderr and "Traceback" not in r.stderr
