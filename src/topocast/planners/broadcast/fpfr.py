"""FPFR (Fast Parallel File Replication): several spanning depth-first pipelines in parallel.

Reference: R. Izmailov, S. Ganguly, N. Tu, "Fast Parallel File Replication in Data Grid",
GGF-10, March 2004; as described in the Stable Broadcast slides [S:SB-slides 16-19];
docs/algorithms.md section 2.4.

Paper: iteratively create a spanning tree T_n by tracing every destination, set V_n to its
bottleneck, subtract V_n from the remaining bandwidth; each tree sends a different fraction of
the data in parallel (T1 the former part, T2 the latter part).

Ours ([I]): the tree is the depth-first pipeline of :mod:`._trees` (the Stable Broadcast
authors label FPFR "Depth-First"; on a tree topology FPFR outputs one depth-first pipeline);
the loop stops at the first tree that cannot reach every destination; tree n carries the
contiguous fraction V_n / ΣV of the message and every hop is paced at V_n, so all hosts finish
together at M / ΣV.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ...plan import Broadcast, Plan
from ..registration import register_planner
from ._compact import DEFAULT_RATE_TOLERANCE, check_rate_tolerance, compact_parallel
from ._layout import contiguous_layout, pipeline_transfers
from ._trees import e1_rates, residual_pipelines, unreachable_error

if TYPE_CHECKING:
    from ...topology import Topology
    from ._trees import Pipeline, PipelineInfo

__all__ = ["plan_fpfr", "fpfr_pipelines"]


def fpfr_pipelines(
    topology: Topology, source: str, destinations: Sequence[str], *, max_trees: int | None = None
) -> tuple[list[Pipeline], PipelineInfo]:
    """The rated spanning pipelines of FPFR and the loop's info dict."""
    return residual_pipelines(topology, source, destinations, partial=False, max_trees=max_trees)


@register_planner(
    "broadcast",
    "fpfr",
    summary="FPFR: spanning depth-first pipelines on residual capacities, data split by throughput, paced",
    reference="Izmailov, Ganguly, Tu. Fast Parallel File Replication in Data Grid. GGF-10, 2004",
)
def plan_fpfr(
    topology: Topology,
    request: Broadcast,
    *,
    seed: int | None = None,
    max_trees: int | None = None,
    rate_tolerance: float = DEFAULT_RATE_TOLERANCE,
) -> Plan:
    """Plan an FPFR broadcast. ``max_trees`` caps the number of spanning trees;
    ``rate_tolerance``: fraction of ΣV that may be given up to drop the slowest trees."""
    tolerance = check_rate_tolerance(rate_tolerance)
    dests = request.resolve(topology)
    pipelines, info = fpfr_pipelines(topology, request.source, dests, max_trees=max_trees)
    if info["unreachable"] or not pipelines:
        raise unreachable_error("fpfr", info, dests)
    n_before = len(pipelines)
    pipelines, dropped = compact_parallel(pipelines, tolerance)
    seqs = contiguous_layout(request.size, [p.rate for p in pipelines])
    transfers = pipeline_transfers(request.source, pipelines, seqs)
    rates = e1_rates(pipelines, dests)
    notes = {
        "trees": len(pipelines),
        "tree_rates": [p.rate for p in pipelines[:64]],
        "expected_aggregate_bandwidth": float(sum(rates.values())),
    }
    if n_before != len(pipelines):
        notes["trees_before_merging"] = n_before
        notes["merging_loss_aggregate_bandwidth"] = dropped * len(dests)
    params = {"max_trees": max_trees, "rate_tolerance": rate_tolerance}
    return Plan.broadcast(request.source, request.size, dests, transfers, planner="fpfr", params=params, notes=notes)
