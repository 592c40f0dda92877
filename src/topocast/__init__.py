"""topocast: plan, predict and perform collective data movement on heterogeneous networks.

Public API (everything else is internal):

* :class:`Topology`, :func:`load_topology` — the network model and its files;
* :class:`Plan`, :class:`Transfer`, :class:`Broadcast` — what planners return;
* :func:`get_planner`, :func:`available_planners`, :func:`register_planner` — the registry;
* :func:`check_plan` — the invariants every plan must satisfy;
* :class:`Allreduce`, :class:`Redistribution` — the other two collectives' requests;
* :func:`simulate` — the fluid, flow-level simulator;
* :func:`broadcast_bounds` — per-host max-flow bounds;
* :func:`perform`, :func:`make_launcher`, :class:`RunOutcome` — a plan performed for real.

Every name is imported on first use: ``import topocast`` stays light.
"""

__version__ = "0.1.0"

#: Where each public name lives. Imported on first use, so that ``import topocast`` (and
#: every command, and every agent of a run) loads only what it uses.
_PUBLIC = {
    "Bound": "bounds",
    "broadcast_bounds": "bounds",
    "check_plan": "plan.check",
    "InputError": "errors",
    "PlanError": "errors",
    "SimulationError": "errors",
    "TopocastError": "errors",
    "TopologyError": "errors",
    "TopologyWarning": "errors",
    "UnknownPlanner": "errors",
    "Broadcast": "plan",
    "Plan": "plan",
    "Transfer": "plan",
    "available_planners": "planners",
    "get_planner": "planners",
    "register_planner": "planners",
    "Allreduce": "plan",
    "Redistribution": "plan",
    "HostResult": "results",
    "Result": "results",
    "simulate": "sim",
    "PhysicalLink": "topology",
    "Topology": "topology",
    "load_topology": "topology",
    "perform": "runtime",
    "make_launcher": "runtime",
    "RunOutcome": "runtime",
    "RunError": "runtime",
}

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
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'topocast' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_PUBLIC])
