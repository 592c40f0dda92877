"""One MPI rank of the MPI_Bcast benchmark (run by bench_vs_mpich.py under mpiexec).

Rank 0 fills SIZE random bytes; after a barrier every rank times MPI_Bcast from rank 0 on
its own clock, checks the digest of what it received, and rank 0 prints one JSON line:
{"times": [...], "ok": [...]} (seconds, per rank).
"""

import json
import os
import sys

import numpy as np
import xxhash
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
size = int(sys.argv[1])
buf = np.empty(size, dtype=np.uint8)
if rank == 0:
    buf[:] = np.frombuffer(os.urandom(size), dtype=np.uint8)
digest = comm.bcast(xxhash.xxh3_128_hexdigest(buf) if rank == 0 else None, root=0)
comm.Barrier()
t0 = MPI.Wtime()
comm.Bcast([buf, MPI.BYTE], root=0)
t = MPI.Wtime() - t0
ok = xxhash.xxh3_128_hexdigest(buf) == digest
times = comm.gather(t, root=0)
oks = comm.gather(ok, root=0)
if rank == 0:
    print(json.dumps({"times": times, "ok": oks, "hosts": MPI.Get_processor_name()}))
