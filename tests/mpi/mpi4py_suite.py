"""One rank of mpi4py's own collective tests with ``Bcast``/``Allreduce`` routed through
topocast.mpi (run by test_mpi4py_suite.py under mpiexec; assertions untouched).

``python mpi4py_suite.py TESTDIR BCAST ALLREDUCE [--only NAME,...] MODULE...``: TESTDIR holds
mpi4py's ``test/`` directory of the installed release; BCAST and ALLREDUCE name the planners
(``mpi`` for MPI's own calls: the reference run); ``--only`` keeps the test methods of those
names (the ones that call ``Bcast``/``Allreduce``), else every test of the modules runs. mpi4py's communicator types are immutable, so the routing is
a subclass of ``Intracomm`` whose ``Bcast``/``Allreduce`` call topocast, put in place of
``MPI.COMM_WORLD`` and ``MPI.COMM_SELF`` before the test modules are imported: the test
cases take their communicators from there, and ``Dup`` keeps the subclass. ``Ibcast`` and
``Iallreduce`` stay MPI's (topocast offers no non-blocking collectives). topocast itself
calls MPI's own methods (``MPI.Comm.Allreduce(comm, ...)``), never the overridden ones.

Rank 0 prints one JSON line: tests run, failures, errors, skipped, and the first failures.
"""

from __future__ import annotations

import json
import sys
import unittest

# GPU array backends of mpi4py's tests need a GPU (an installed numba without CUDA fails in
# arrayimpl); topocast hands such buffers to MPI anyway
sys.modules.setdefault("cupy", None)  # type: ignore[arg-type]
sys.modules["numba"] = None  # type: ignore[assignment]

from mpi4py import MPI  # noqa: E402

import topocast.mpi as tm  # noqa: E402


def routed_comm_class(bcast_planner: str, allreduce_planner: str) -> type:
    class TopocastIntracomm(MPI.Intracomm):
        def Bcast(self, buf, root=0):
            tm.bcast(self, buf, root, algorithm=bcast_planner)

        def Allreduce(self, sendbuf, recvbuf, op=MPI.SUM):
            tm.allreduce(self, sendbuf, recvbuf, op, algorithm=allreduce_planner)

    return TopocastIntracomm


def _tests(suite):
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from _tests(t)
        else:
            yield t


def main(testdir: str, bcast_planner: str, allreduce_planner: str, *modules: str) -> int:
    sys.path.insert(0, testdir)
    only = None
    if modules and modules[0] == "--only":
        only, modules = set(modules[1].split(",")), modules[2:]
    if bcast_planner != "mpi":
        cls = routed_comm_class(bcast_planner, allreduce_planner)
        MPI.COMM_WORLD = cls(MPI.COMM_WORLD)
        MPI.COMM_SELF = cls(MPI.COMM_SELF)
    suite = unittest.TestSuite(unittest.defaultTestLoader.loadTestsFromName(m) for m in modules)
    if only is not None:
        suite = unittest.TestSuite(t for t in _tests(suite) if getattr(t, "_testMethodName", None) in only)
    result = unittest.TestResult()
    suite.run(result)
    comm = MPI.Intracomm(MPI.COMM_WORLD)
    mine = {
        "run": result.testsRun,
        "failures": len(result.failures),
        "errors": len(result.errors),
        "skipped": len(result.skipped),
        "first": [f"{t.id()}: {tb.strip().splitlines()[-1]}" for t, tb in (result.failures + result.errors)[:3]],
    }
    everyone = comm.gather(mine, root=0)
    if comm.Get_rank() == 0:
        bad = [r for r, m in enumerate(everyone) if m["failures"] or m["errors"]]
        print(json.dumps({"ranks": comm.Get_size(), "per_rank": everyone[0], "failed_ranks": bad, "all": everyone}))
    return 0 if not (mine["failures"] or mine["errors"]) else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
