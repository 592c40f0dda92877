"""Stable Broadcast: spanning and partial depth-first trees with capacity subtraction.

Reference: K. Takahashi, H. Saito, T. Shibata, K. Taura, "A Stable Broadcast Algorithm",
IEEE CCGrid 2008, Lyon, pp. 392-400;
docs/algorithms.md section 1.

Paper [S:SB-slides 21-23]: modify FPFR; iteratively (1) create a tree T_n by tracing every
destination, (2) set its throughput V_n to the bottleneck, (3) subtract V_n from the remaining
capacities; keep going with partial trees; send data in proportion to V_n in stages (stage 1
uses every tree; stage s re-sends, over the remaining trees, what the retired tree sent).

Ours ([I]):
* "tracing every destination" = a depth-first pipeline (DFS preorder chain, hops along the
  tree path), destinations included iff their down path still has positive residual capacity,
  so trees are nested T_1 ⊇ T_2 ⊇ ... (docs/algorithms.md 1.2); on general graphs the DFS runs
  over positive residual links, neighbours by decreasing residual capacity;
* asymmetric capacities: a destination behind an exhausted up-link is dropped from this and
  later trees (docs/algorithms.md 1.3);
* the staged re-send is folded into one continuous stream per tree
  (:func:`~._layout.nested_layout`): at ``t_L = M / (V_1+...+V_L)`` the prefixes of trees
  1..L tile the message, so a host in T_1..T_L finishes exactly at t_L. This needs
  ``Σ_n |T_n|`` transfers instead of the O(K^2 |D|) of a literal staged re-send;
* every hop of tree n is paced at V_n (rate cap); hops are pipelined (fluid chunks).

On a symmetric tree every destination gets exactly its max-flow bound b(d) (tested).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ...plan import Broadcast, Plan
from ..registration import register_planner
from ._compact import DEFAULT_RATE_TOLERANCE, check_rate_tolerance, compact_nested
from ._layout import nested_layout, pipeline_transfers
from ._trees import e1_rates, residual_pipelines

if TYPE_CHECKING:
    from ...topology import Topology
    from ._trees import Pipeline, PipelineInfo

__all__ = ["plan_stable", "stable_pipelines"]


def stable_pipelines(
    topology: Topology, source: str, destinations: Sequence[str], *, max_trees: int | None = None
) -> tuple[list[Pipeline], PipelineInfo]:
    """The rated nested trees of Stable Broadcast (steps 1-3) and the loop's info dict."""
    return residual_pipelines(topology, source, destinations, partial=True, max_trees=max_trees)


def plan_from_nested(
    topology: Topology,
    request: Broadcast,
    destinations: Sequence[str],
    pipelines: Sequence[Pipeline],
    info: PipelineInfo,
    *,
    planner: str,
    params: Mapping[str, object],
    notes: Mapping[str, object] | None = None,
    rate_tolerance: float = 0.0,
) -> Plan:
    """Plan for nested rated pipelines with the folded staged layout (shared with ``optimal``).

    ``rate_tolerance``: fraction of its own expected rate any host may lose when trees are
    merged (:func:`._compact.compact_nested`)."""
    size = int(request.size)
    n_before = len(pipelines)
    pipelines, loss = compact_nested(pipelines, destinations, check_rate_tolerance(rate_tolerance))
    seqs = nested_layout(size, [p.rate for p in pipelines])
    transfers = pipeline_transfers(request.source, pipelines, seqs)
    rates = e1_rates(pipelines, destinations)
    n = dict(notes or {})
    n.setdefault("trees", len(pipelines))
    if n_before != len(pipelines):
        n["trees_before_merging"] = n_before
        n["merging_loss_aggregate_bandwidth"] = loss
    n.setdefault("tree_rates", [p.rate for p in pipelines[:64]])
    n.setdefault("expected_aggregate_bandwidth", float(sum(rates.values())))
    if info.get("dropped"):
        n["dropped_by_up_link_rule"] = len(info["dropped"])
    missing = [d for d in destinations if rates.get(d, 0.0) <= 0.0]
    if missing:
        from ...errors import PlanError

        raise PlanError(
            f"{planner}: destinations {missing[:5]} cannot be reached with positive bandwidth "
            "by depth-first pipelines over two-way links",
            element="destinations",
        )
    return Plan.broadcast(request.source, size, destinations, transfers, planner=planner, params=params, notes=n)


@register_planner(
    "broadcast",
    "stable",
    summary="Stable Broadcast: spanning + partial depth-first trees, capacity subtraction, staged layout, paced",
    reference="Takahashi, Saito, Shibata, Taura. A Stable Broadcast Algorithm. CCGrid 2008, pp. 392-400",
)
def plan_stable(
    topology: Topology,
    request: Broadcast,
    *,
    seed: int | None = None,
    max_trees: int | None = None,
    rate_tolerance: float = DEFAULT_RATE_TOLERANCE,
) -> Plan:
    """Plan a Stable Broadcast of ``request`` over ``topology``.

    ``max_trees`` caps the number of trees (default: until no destination is left).
    ``rate_tolerance``: fraction of its own rate any host may lose when partial trees are
    merged (0: the paper's trees, one per bottleneck level; the default keeps every host at
    its max-flow on a symmetric tree to that fraction).
    ``seed`` is accepted for interface uniformity; the algorithm is deterministic.
    """
    dests = request.resolve(topology)
    pipelines, info = stable_pipelines(topology, request.source, dests, max_trees=max_trees)
    # Destinations dropped (exhausted up-link) are still in T_1: they get V_1 + ... of the trees
    # they were in, so every destination is in T_1 and receives the whole message.
    return plan_from_nested(
        topology,
        request,
        dests,
        pipelines,
        info,
        planner="stable",
        params={"max_trees": max_trees, "rate_tolerance": rate_tolerance},
        rate_tolerance=rate_tolerance,
    )
