"""What a run is expected to do: the simulated result of its plan on the topology as the real
links deliver it (bandwidths x goodput, :mod:`topocast.runtime.calibration`), and the bound no
plan can beat. ``topocast run`` prints both beside the measurement."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .calibration import scale_topology

if TYPE_CHECKING:
    from ..bounds import Bound
    from ..plan import Plan
    from ..results import Result
    from ..topology import Topology

__all__ = ["predict", "predict_with_bound"]


def predict(plan: Plan, topology: Topology, chunk: int, goodput: float) -> Result | None:
    """Simulated result of ``plan`` on ``topology`` with bandwidths scaled by ``goodput`` (None
    if the simulator does not handle this plan)."""
    try:
        from ..sim import simulate

        return simulate(plan, scale_topology(topology, goodput), chunk_size=chunk)
    except NotImplementedError:
        return None


def predict_with_bound(
    plan: Plan, topology: Topology | None, chunk: int, goodput: float
) -> tuple[Result | None, Bound | None]:
    """(prediction, bound) of a run: both None without a topology; the bound (per-destination
    max-flows) for broadcasts only."""
    if topology is None:
        return None, None
    predicted = predict(plan, topology, chunk, goodput)
    bound = None
    if plan.collective == "broadcast" and plan.source is not None:
        from ..bounds import broadcast_bounds

        bound = broadcast_bounds(topology, plan.source, plan.destinations)
    return predicted, bound
