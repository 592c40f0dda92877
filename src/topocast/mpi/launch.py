"""``topocast run --launcher mpi``: perform a plan under MPICH's ``mpiexec``, one rank per
host of the plan (rank k plays ``plan.hosts[k]``), and measure it like the TCP runtime.

The ranks run ``python -m topocast.mpi.launch PLAN.json OUT.json (--seed N | --file PATH)``:
initial holders load their bytes (the same generated message as the TCP runtime, or the
file), every rank waits at a barrier, performs the plan with :func:`topocast.mpi.perform`,
compares what it wanted with the message, and rank 0 writes every rank's
completion time (from the barrier) to OUT.json.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..plan import Plan
from ..results import Result, aggregate_from_times
from ..runtime.agents import RunInputError
from ..runtime.coordinator import RunError, RunOutcome

if TYPE_CHECKING:
    from ..runtime.launchers import Launcher
    from ..topology import Topology

__all__ = ["mpiexec_path", "perform_under_mpiexec", "perform_like_runtime"]


def mpiexec_path() -> str | None:
    """MPICH's ``mpiexec``: the one the mpich wheel puts beside this python, else on PATH."""
    beside = Path(sys.executable).parent / "mpiexec"
    return str(beside) if beside.exists() else shutil.which("mpiexec")


def perform_under_mpiexec(
    plan: Plan, *, file: str | None = None, seed: int = 1, chunk_size: int, timeout: float | None = None
) -> RunOutcome:
    """Run ``plan`` on this machine under ``mpiexec -n len(plan.hosts)``; a
    :class:`RunOutcome` whose result has the shape of a prediction (``kind="measured"``)."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        raise RunError("--launcher mpi needs mpi4py and MPICH: pip install 'topocast[mpi]'") from None
    mpiexec = mpiexec_path()
    if mpiexec is None:
        raise RunError("--launcher mpi: mpiexec not found (pip install 'topocast[mpi]' brings MPICH's)")
    if file is not None and not os.path.isfile(file):
        raise RunInputError(f"{file}: cannot read the message")
    hosts = list(plan.hosts)
    with tempfile.TemporaryDirectory(prefix="topocast-mpi-") as tmp:
        plan_path, out_path = Path(tmp) / "plan.json", Path(tmp) / "out.json"
        plan_path.write_text(plan.dumps())
        data = ["--file", os.path.abspath(file)] if file else ["--seed", str(seed)]
        cmd = [mpiexec, "-n", str(len(hosts)), sys.executable, "-m", "topocast.mpi.launch"]
        cmd += [str(plan_path), str(out_path), "--chunk-size", str(chunk_size), *data]
        t = time.monotonic()
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise RunError(f"--launcher mpi: the ranks did not finish within {timeout} s") from None
        wall = time.monotonic() - t
        if r.returncode != 0 or not out_path.exists():
            raise RunError(f"mpiexec exited with {r.returncode}: {r.stderr.strip()[-1500:]}")
        out = json.loads(out_path.read_text())
    times = {h: (out["completed"][h] if out["ok"][h] else math.inf) for h in plan.wanted}
    wanted_bytes = {h: sum(n for _, n in rs) for h, rs in plan.wanted.items()}
    per_host, makespan, aggregate = aggregate_from_times(wanted_bytes, times)
    failed = {h: "received bytes differ from the message" for h in plan.wanted if not out["ok"][h]}
    result = Result(plan.planner or "plan", per_host, makespan, aggregate, kind="measured")
    return RunOutcome(result, failed=failed, wall=wall, cpu=out["cpu"])


def perform_like_runtime(
    plan: Plan,
    topology: Topology | None = None,
    *,
    launcher: Launcher | None = None,
    file: str | None = None,
    chunk_size: int,
    timeout: float | None = None,
    dest_dir: str | None = None,
    before_start: Callable[[], object] | None = None,
    **tcp_only: object,
) -> RunOutcome:
    """:func:`perform_under_mpiexec` called as ``topocast.runtime.perform`` is (``topocast run``):
    the options of the TCP agents (``tcp_only``: fair uplink, progress, idle timeout) do not
    apply to MPI ranks."""
    if dest_dir is not None:
        raise RunInputError("--dest-dir: the MPI launcher keeps the message in memory (use --launcher local)")
    if before_start is not None:  # the CLI's prediction: finished before the ranks start, never during
        before_start()
    return perform_under_mpiexec(plan, file=file, chunk_size=chunk_size, timeout=timeout)


def _rank_main(argv=None) -> int:
    import argparse
    import resource

    import numpy as np
    from mpi4py import MPI

    from ..runtime.data import generate
    from .collectives import perform

    ap = argparse.ArgumentParser(prog="python -m topocast.mpi.launch")
    ap.add_argument("plan")
    ap.add_argument("out")
    ap.add_argument("--chunk-size", type=int, required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--file", default=None)
    args = ap.parse_args(argv)
    comm = MPI.COMM_WORLD
    plan = Plan.load(args.plan)
    hosts = list(plan.hosts)
    me = hosts[comm.Get_rank()]
    if args.file:
        message = np.fromfile(args.file, dtype=np.uint8)
    else:
        message = np.frombuffer(generate(args.seed, plan.size), dtype=np.uint8)
    buf = np.zeros(plan.size, dtype=np.uint8)
    for off, n in plan.initial.get(me, ()):
        buf[off : off + n] = message[off : off + n]
    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    comm.Barrier()
    stats = perform(comm, plan, buf, mapping=hosts, chunk_size=args.chunk_size)
    ru1 = resource.getrusage(resource.RUSAGE_SELF)
    ok = all(np.array_equal(buf[o : o + n], message[o : o + n]) for o, n in plan.wanted.get(me, ()))
    cpu = ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime
    rows = comm.gather((me, stats.completed, ok, cpu), root=0)
    if rows is not None:  # rank 0
        out = {
            "completed": {h: c for h, c, _, _ in rows},
            "ok": {h: k for h, _, k, _ in rows},
            "cpu": {h: c for h, _, _, c in rows},
        }
        Path(args.out).write_text(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(_rank_main())
