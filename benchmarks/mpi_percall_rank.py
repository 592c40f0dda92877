"""One MPI rank of ``bench_mpi_collectives.py --local``: topocast.mpi's per-call cost beside
MPI's own ``Bcast`` / ``Allreduce`` at small sizes, on this machine (no topology: the uniform
star topocast.mpi assumes, with a fixed planner so that every call runs a topocast plan).

    mpi_percall_rank.py CONFIG_JSON

CONFIG: {"sizes": [bytes...], "calls": N, "bcast": planner, "allreduce": planner, "seed": int,
"profile": directory or ""}. Cases, per size and collective, each ``calls`` calls in a row:

* ``mpi``: MPI's own call (``MPI.Comm.Bcast`` / ``MPI.Comm.Allreduce``);
* ``same``: topocast with the same arguments every call (a predicted call: the vote beside it);
* ``nocheck``: the same with ``check=False`` (no vote);
* ``varying``: topocast with the root (bcast) or the op (allreduce) drawn at random per call
  from ``seed`` (the same draw on every rank): calls that cannot be predicted, each agreed
  first, as a program whose calls do not repeat in a fixed order, or mpi4py's own tests.

Each case starts after a barrier; per rank: wall and CPU (user+sys of this process) seconds
per call. Results are checked after each case (bcast: the root's bytes; allreduce of int32:
the sum, max or min MPI gives). Rank 0 prints one JSON line. With ``profile``, each rank's
topocast calls run under cProfile, written to ``profile/rank<k>.prof``.
"""

from __future__ import annotations

import cProfile
import json
import os
import sys
import time

import numpy as np
from mpi4py import MPI

import topocast.mpi as tm

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
config = json.loads(sys.argv[1])
calls, seed = int(config["calls"]), int(config["seed"])
profiler = cProfile.Profile() if config.get("profile") else None
OPS = (("SUM", MPI.SUM), ("MAX", MPI.MAX), ("MIN", MPI.MIN))


def measure(name: str, fn, draws) -> dict:
    """``fn(draw)`` for each draw, timed on this rank; every rank's figures on rank 0."""
    comm.Barrier()
    profiling = profiler is not None and name != "mpi"
    wall, used = time.perf_counter(), time.process_time()
    if profiling:
        profiler.enable()
    for d in draws:
        fn(d)
    if profiling:
        profiler.disable()
    mine = ((time.perf_counter() - wall) / len(draws), (time.process_time() - used) / len(draws))
    return {"case": name, "per_rank": MPI.Comm.gather(comm, mine, root=0)}


def bcast_cases(nbytes: int, planner: str, rng) -> list[dict]:
    buf = np.zeros(nbytes, np.uint8)
    expected = np.arange(nbytes, dtype=np.uint8)
    roots = [int(r) for r in rng.integers(0, size, calls)]
    fixed = [0] * calls

    def fill(root: int) -> None:
        buf[:] = expected if rank == root else 0

    def run(call, root: int) -> None:
        fill(root)
        call(root)
        if not np.array_equal(buf, expected):
            raise SystemExit(f"rank {rank}: bcast of {nbytes} bytes from {root}: wrong bytes")

    cases = {
        "mpi": (lambda r: MPI.Comm.Bcast(comm, [buf, MPI.BYTE], root=r), fixed),
        "same": (lambda r: tm.bcast(comm, buf, r, algorithm=planner), fixed),
        "nocheck": (lambda r: tm.bcast(comm, buf, r, algorithm=planner, check=False), fixed),
        "varying": (lambda r: tm.bcast(comm, buf, r, algorithm=planner), roots),
    }
    for call, _ in cases.values():  # warm: connections, the plan, a predicted call
        for _ in range(3):
            run(call, 0)
    return [measure(name, lambda r, call=call: run(call, r), draws) for name, (call, draws) in cases.items()]


def allreduce_cases(nbytes: int, planner: str, rng) -> list[dict]:
    count = max(nbytes // 4, 1)
    mine = ((np.arange(count) * 7 + rank * 13) % 101).astype(np.int32)
    every = np.stack([((np.arange(count) * 7 + r * 13) % 101).astype(np.int32) for r in range(size)])
    expected = {"SUM": every.sum(0, dtype=np.int32), "MAX": every.max(0), "MIN": every.min(0)}
    out = np.zeros(count, np.int32)
    ops = [int(k) for k in rng.integers(0, len(OPS), calls)]
    fixed = [0] * calls

    def run(call, k: int) -> None:
        call(OPS[k][1])
        if not np.array_equal(out, expected[OPS[k][0]]):
            raise SystemExit(f"rank {rank}: allreduce {OPS[k][0]} of {count} int32: wrong result")

    cases = {
        "mpi": (lambda op: MPI.Comm.Allreduce(comm, [mine, MPI.INT32_T], [out, MPI.INT32_T], op), fixed),
        "same": (lambda op: tm.allreduce(comm, mine, out, op, algorithm=planner), fixed),
        "nocheck": (lambda op: tm.allreduce(comm, mine, out, op, algorithm=planner, check=False), fixed),
        "varying": (lambda op: tm.allreduce(comm, mine, out, op, algorithm=planner), ops),
    }
    for call, _ in cases.values():
        for _ in range(3):
            run(call, 0)
    return [measure(name, lambda k, call=call: run(call, k), draws) for name, (call, draws) in cases.items()]


def main() -> None:
    rng = np.random.default_rng(seed)  # the same draws on every rank
    results = []
    for nbytes in config["sizes"]:
        for collective, cases in (("bcast", bcast_cases), ("allreduce", allreduce_cases)):
            planner = config[collective]
            for r in cases(int(nbytes), planner, rng):
                results.append({"collective": collective, "size": int(nbytes), "planner": planner, **r})
    if profiler is not None:
        profiler.dump_stats(os.path.join(config["profile"], f"rank{rank}.prof"))
    if rank == 0:
        print(json.dumps({"ranks": size, "results": results}), flush=True)


main()
