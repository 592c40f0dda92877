"""Allreduce planners: every host contributes a message of ``size`` bytes and ends with the
element-wise reduction of all contributions. Transfers with ``reduce=True`` combine into the
receiver; plain transfers copy (allgather phases). ``topocast.plan.check_allreduce`` verifies the
contributions; the simulator charges γ (``topology.gamma``) per reduced byte.


The request is a :class:`topocast.plan.Allreduce`.
"""

from ._common import allreduce_plan

__all__ = ["allreduce_plan"]
