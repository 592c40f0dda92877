"""topocast: plan, predict and perform collective data movement on heterogeneous networks.

Public API (everything else is internal):

* :class:`Topology`, :func:`load_topology` — the network model and its files;
* :class:`Plan`, :class:`Transfer`, :class:`Broadcast` — what planners return;
* :func:`get_planner`, :func:`available_planners`, :func:`register_planner` — the registry;
* :func:`check_plan` — the invariants every plan must satisfy;
* :class:`Allreduce`, :class:`Redistribution` — the other two collectives' requests;
* :func:`simulate` — the fluid, flow-level simulator;
* :func:`broadcast_bounds` — per-host max-flow bounds;
* :func:`perform`, :func:`make_launcher`, :class:`RunOutcome` — a plan performed for real
  (imported on first use: ``import topocast`` stays light).
"""

from .bounds import Bound, broadcast_bounds
from .check import check_plan
from .errors import (
    InputError,
    PlanError,
    SimulationError,
    TopocastError,
    TopologyError,
    TopologyWarning,
    UnknownPlanner,
)
from .plan import Broadcast, Plan, Transfer
from .planners import available_planners, get_planner, register_planner
from .planners.allreduce._common import Allreduce
from .redistribution.matrix import Redistribution
from .results import HostResult, Result
from .sim import simulate
from .topology import PhysicalLink, Topology, load_topology

__version__ = "0.1.0"

#: Names served by :func:`__getattr__` from the runtime, which needs more imports.
_RUNTIME = ("perform", "make_launcher", "RunOutcome", "RunError")

__all__ = [
    "Allreduce",
    "Bound",
    "Broadcast",
    "HostResult",
    "InputError",
    "PhysicalLink",
    "Plan",
    "PlanError",
    "Redistribution",
    "Result",
    "RunError",
    "RunOutcome",
    "SimulationError",
    "Topology",
    "TopocastError",
    "TopologyError",
    "TopologyWarning",
    "Transfer",
    "UnknownPlanner",
    "available_planners",
    "broadcast_bounds",
    "check_plan",
    "get_planner",
    "load_topology",
    "make_launcher",
    "perform",
    "register_planner",
    "simulate",
]


def __getattr__(name: str):
    if name in _RUNTIME:
        from . import runtime

        return getattr(runtime, name)
    raise AttributeError(f"module 'topocast' has no attribute {name!r}")
