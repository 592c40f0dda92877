"""Run inside MPI jobs (the optional extra ``[mpi]``: mpi4py and MPICH).

* :func:`bcast` and :func:`allreduce`: drop-in replacements for ``comm.Bcast`` and
  ``comm.Allreduce`` that move the data along a topocast plan for the job's topology;
* :func:`perform`: any :class:`~topocast.plan.Plan` over MPI point-to-point messages.

Switching an mpi4py program to topocast's broadcast::

    import topocast.mpi
    topocast.mpi.bcast(comm, buf, root=0, topology=topo)   # was: comm.Bcast(buf, root=0)

docs/guide.md ("Inside MPI jobs") and docs/experiments/mpi.md tell more.
"""

from .collectives import DEFAULT_ALLREDUCE, DEFAULT_BCAST, allreduce, bcast, job_hosts, perform, plan_of
from .engine import MPIRunError, RankStats

__all__ = [
    "bcast",
    "plan_of",
    "allreduce",
    "perform",
    "job_hosts",
    "MPIRunError",
    "RankStats",
    "DEFAULT_BCAST",
    "DEFAULT_ALLREDUCE",
]
