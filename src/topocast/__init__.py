"""topocast: plan, predict and perform collective data movement on heterogeneous networks.

Public API (everything else is internal):

* :class:`Topology`, :func:`load_topology` — the network model and its files;
* :class:`Plan`, :class:`Transfer`, :class:`Broadcast` — what planners return;
* :func:`get_planner`, :func:`available_planners`, :func:`register_planner` — the registry;
* :func:`check_plan` — the invariants every plan must satisfy;
* :func:`simulate` — the fluid, flow-level simulator;
* :func:`broadcast_bounds` — per-host max-flow bounds.
"""

from .bounds import Bound, broadcast_bounds
from .check import check_plan
from .errors import InputError, PlanError, SimulationError, TopocastError, TopologyError, UnknownPlanner
from .plan import Broadcast, Plan, Transfer
from .planners import available_planners, get_planner, register_planner
from .results import HostResult, Result
from .sim import simulate
from .topology import PhysicalLink, Topology, load_topology

__version__ = "0.1.0"

__all__ = [
    "Bound",
    "Broadcast",
    "HostResult",
    "InputError",
    "PhysicalLink",
    "Plan",
    "PlanError",
    "Result",
    "SimulationError",
    "Topology",
    "TopocastError",
    "TopologyError",
    "Transfer",
    "UnknownPlanner",
    "available_planners",
    "broadcast_bounds",
    "check_plan",
    "get_planner",
    "load_topology",
    "register_planner",
    "simulate",
]
