"""One rank of mpi4py's own collective tests with ``Bcast``/``Allreduce`` routed through
topocast.mpi (run by test_mpi4py_suite.py under mpiexec; assertions untouched).

``python mpi4py_suite.py TESTDIR BCAST ALLREDUCE [--only NAME,...] MODULE...``: TESTDIR holds
mpi4py's ``test/`` directory of the installed release; BCAST and ALLREDUCE name the planners
(``mpi``: MPI's own calls, the reference run); comma-separated lists run pair by pair in this
one process; ``--only`` keeps the test methods of those names (the ones that call
``Bcast``/``Allreduce``), else every test of the modules runs.

mpi4py's communicator types are immutable, so the routing is a subclass of ``Intracomm``
whose ``Bcast``/``Allreduce`` call topocast, put in place of ``MPI.COMM_WORLD`` and
``MPI.COMM_SELF`` before the test modules are imported: the test cases take their
communicators from there, and ``Dup`` keeps the subclass. ``Ibcast`` and ``Iallreduce`` stay
MPI's (topocast offers no non-blocking collectives). topocast itself calls MPI's own methods
(``MPI.Comm.Allreduce(comm, ...)``), never the overridden ones.

Rank 0 prints a JSON line per pair: tests run, failures, errors, skipped, the first failures.
"""

from __future__ import annotations

import faulthandler
import json
import signal
import sys
import unittest

# GPU array backends of mpi4py's tests need a GPU (an installed numba without CUDA fails in
# arrayimpl); topocast hands such buffers to MPI anyway
sys.modules.setdefault("cupy", None)  # type: ignore[arg-type]
sys.modules["numba"] = None  # type: ignore[assignment]
faulthandler.register(signal.SIGUSR1, all_threads=True)  # where a rank waits: kill -USR1 PID

from mpi4py import MPI  # noqa: E402

import topocast.mpi as tm  # noqa: E402

ROUTE = {"bcast": "mpi", "allreduce": "mpi"}  # the planners of the current run ("mpi": MPI's own)


class TopocastIntracomm(MPI.Intracomm):
    def Bcast(self, buf, root=0):
        if ROUTE["bcast"] == "mpi":
            return MPI.Comm.Bcast(self, buf, root)
        tm.bcast(self, buf, root, algorithm=ROUTE["bcast"])

    def Allreduce(self, sendbuf, recvbuf, op=MPI.SUM):
        if ROUTE["allreduce"] == "mpi":
            return MPI.Comm.Allreduce(self, sendbuf, recvbuf, op)
        tm.allreduce(self, sendbuf, recvbuf, op, algorithm=ROUTE["allreduce"])


def _tests(suite):
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from _tests(t)
        else:
            yield t


def run_once(suite, comm) -> bool:
    """Run ``suite`` with the current ROUTE; rank 0 prints every rank's outcome as JSON."""
    result = unittest.TestResult()
    suite.run(result)
    mine = {
        "run": result.testsRun,
        "failures": len(result.failures),
        "errors": len(result.errors),
        "skipped": len(result.skipped),
        "first": [f"{t.id()}: {tb.strip().splitlines()[-1]}" for t, tb in (result.failures + result.errors)[:3]],
    }
    everyone = MPI.Comm.gather(comm, mine, root=0)
    if comm.Get_rank() == 0:
        bad = [r for r, m in enumerate(everyone) if m["failures"] or m["errors"]]
        line = {**ROUTE, "ranks": comm.Get_size(), "run": mine["run"], "failed_ranks": bad, "all": everyone}
        print(json.dumps(line), flush=True)
    return not (mine["failures"] or mine["errors"])


def main(testdir: str, bcast_planners: str, allreduce_planners: str, *modules: str) -> int:
    """BCAST and ALLREDUCE: comma-separated lists of equal length, run in pairs, one after
    the other in this one process."""
    sys.path.insert(0, testdir)
    only = None
    if modules and modules[0] == "--only":
        only, modules = set(modules[1].split(",")), modules[2:]
    pairs = list(zip(bcast_planners.split(","), allreduce_planners.split(","), strict=True))
    world = MPI.COMM_WORLD
    MPI.COMM_WORLD = TopocastIntracomm(world)
    MPI.COMM_SELF = TopocastIntracomm(MPI.COMM_SELF)
    loaded = unittest.TestSuite(unittest.defaultTestLoader.loadTestsFromName(m) for m in modules)
    tests = [t for t in _tests(loaded) if only is None or getattr(t, "_testMethodName", None) in only]
    ok = True
    for bcast_planner, allreduce_planner in pairs:
        ROUTE.update(bcast=bcast_planner, allreduce=allreduce_planner)
        ok = run_once(unittest.TestSuite(tests), world) and ok  # a suite drops its tests once run
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
