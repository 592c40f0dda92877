"""The plan and its checks: what every planner returns, and the rules every plan obeys.

* :mod:`.transfer` — :class:`Transfer` and the byte ranges it moves;
* :mod:`.model` — :class:`Plan` (what the transfers mean together) and the plan file format;
* :mod:`.requests` — the collective requests :class:`Broadcast`, :class:`Allreduce`,
  :class:`Redistribution`;
* :mod:`.graph` — how transfers depend on each other (:func:`~.graph.predecessors`, the
  upstream of a pipelined transfer, a topological order) and the plan as arrays;
* :mod:`.check` — :func:`check_plan`, the invariants of every plan;
* :mod:`.check_allreduce` — contribution tracking for allreduce plans.

Layers, bottom up: ``transfer`` ← ``graph`` ← ``model`` ← ``check_allreduce`` ← ``check``
(``requests`` stands apart): ``model`` builds ``graph.PlanArrays`` on first use
(``Plan.arrays``), and ``graph`` reads a plan through ``graph.PlanLike``.
"""

from .model import Plan
from .requests import Allreduce, Broadcast, Redistribution, Request
from .transfer import Ranges, Transfer, normalize_ranges, ranges_length

__all__ = [
    "Allreduce",
    "Broadcast",
    "Plan",
    "Ranges",
    "Redistribution",
    "Request",
    "Transfer",
    "check_plan",
    "normalize_ranges",
    "ranges_length",
]


def __getattr__(name: str):
    # check_plan on first use: importing the model (every planner does) stays light
    if name == "check_plan":
        from .check import check_plan

        return check_plan
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
