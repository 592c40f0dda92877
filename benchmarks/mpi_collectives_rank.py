"""One MPI rank of bench_mpi_collectives.py: topocast.mpi.bcast beside comm.Bcast and
topocast.mpi.allreduce beside comm.Allreduce, in one job, alternating.

    mpi_collectives_rank.py TOPOLOGY HOST0,HOST1,... SIZES COLLECTIVES REPEATS ALGORITHM [CHECK [CHUNK]]

Rank k plays host k of the list (rank 0 is the broadcast root). Each topocast plan is made
(and cached) before the timed calls (``plan_of``; None where ``auto`` calls MPI's own
collective), and each implementation is called three times untimed (MPI's connections, and
topocast's prediction of a repeated call, are then warm as in a program's loop). Every call is timed on every rank from the exit of a
barrier to its return; topocast's result is compared bitwise with MPI's (allreduce of int32).
Rank 0 prints one JSON line: {"runs": [{collective, size, impl, rep, times: [per rank]}]}.
"""

import json
import sys

import numpy as np
from mpi4py import MPI

import topocast.mpi as tm
from topocast.topology import load_topology

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
topo = load_topology(sys.argv[1])
hosts = sys.argv[2].split(",")
sizes = [int(x) for x in sys.argv[3].split(",")]
collectives = sys.argv[4].split(",")
repeats = int(sys.argv[5])
algorithm = sys.argv[6]
chunk = int(sys.argv[8]) if len(sys.argv) > 8 else 0  # 0: the plan's chunk size, else 64 KiB
kw = {"topology": topo, "mapping": hosts, "algorithm": algorithm}
# nocheck: topocast's calls pass check=False (the warm-up calls agree on the arguments)
call_kw = {"check": False} if len(sys.argv) > 7 and sys.argv[7] == "nocheck" else {}
call_kw["chunk_size"] = chunk or None


def timed(fn) -> list:
    comm.Barrier()
    t = MPI.Wtime()
    fn()
    return comm.gather(MPI.Wtime() - t, root=0)


runs, plans = [], {}
for size in sizes:
    for coll in collectives:
        if coll == "bcast":
            ref = np.frombuffer(np.random.default_rng(size).bytes(size), np.uint8).copy()
            plan = tm.plan_of(comm, "broadcast", size, **kw)
            bufs = {"mpi": np.zeros(size, np.uint8), "topocast": np.zeros(size, np.uint8)}
            calls = {
                "mpi": lambda: comm.Bcast(bufs["mpi"], root=0),
                "topocast": lambda: tm.bcast(comm, bufs["topocast"], root=0, **call_kw, **kw),
            }
        else:
            count = size // 4
            send = np.random.default_rng(rank).integers(-1000, 1000, count).astype(np.int32)
            plan = tm.plan_of(comm, "allreduce", count * 4, itemsize=4, **kw)
            bufs = {"mpi": np.zeros(count, np.int32), "topocast": np.zeros(count, np.int32)}
            calls = {
                "mpi": lambda: comm.Allreduce(send, bufs["mpi"]),
                "topocast": lambda: tm.allreduce(comm, send, bufs["topocast"], **call_kw, **kw),
            }
        plans[f"{coll} {size}"] = (
            {"planner": "MPI's own (auto, below MPI_BELOW)", "choice": None, "transfers": 0}
            if plan is None
            else {"planner": plan.planner, "choice": plan.notes.get("choice"), "transfers": len(plan.transfers)}
        )
        # untimed: warm connections, and a repeated call predicted (it followed itself twice)
        for impl in ("mpi", "topocast") * 3:
            calls[impl]()
        for rep in range(repeats):
            order = ("mpi", "topocast") if rep % 2 == 0 else ("topocast", "mpi")
            for impl in order:
                if coll == "bcast":
                    bufs[impl][:] = ref if rank == 0 else 0
                times = timed(calls[impl])
                if rank == 0:
                    runs.append({"collective": coll, "size": size, "impl": impl, "rep": rep, "times": times})
            same = comm.allreduce(int(bufs["mpi"].tobytes() != bufs["topocast"].tobytes()))
            if rank == 0 and same:
                runs[-1]["mismatch_ranks"] = same
if rank == 0:
    print(json.dumps({"runs": runs, "plans": plans}))
