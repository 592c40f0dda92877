"""Balanced Multicasting: per-tree rates from a linear program over candidate spanning trees.

Reference: M. den Burger, T. Kielmann, H. E. Bal, "Balanced Multicasting: High-throughput
Communication for Grid Applications", SC 2005; docs/algorithms.md section 3.

Paper [S:BM-abs]: uses monitored bandwidth capacity and achievable bandwidth to compute
balanced multicast trees; application-level traffic shaping at the sender side avoids
self-induced congestion. [S:SB-slides 18]: the proportion of data sent through each (FPFR)
tree may be optimised by linear programming.

Ours [I]: candidate trees are the FPFR trees plus ``n_candidates`` spanning depth-first
pipelines with random neighbour orders (seeded); the LP
``max Σ_t x_t  s.t.  Σ_t uses_t(e) x_t <= c(e)`` (scipy HiGHS) sets their rates; we have no
monitored "achievable bandwidth" per connection, so that constraint family is left out. Tree t
carries the contiguous fraction x_t / Σx of the message and every hop is paced at x_t (the
sender-side shaping). Every destination gets the common rate Σx. Ties/degenerate optima: we
take what HiGHS returns (deterministic for the same input).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ...errors import PlanError
from ...lp import capacity_scale, limited_rows, solve
from ...plan import Broadcast, Plan
from ..registration import register_planner
from ._compact import DEFAULT_RATE_TOLERANCE, check_rate_tolerance, compact_parallel
from ._layout import contiguous_layout, pipeline_transfers
from ._trees import (
    Arborescence,
    e1_rates,
    has_reverse,
    pipeline_over,
    residual_pipelines,
    resource_arrays,
    unreachable_error,
    within_capacity,
)

if TYPE_CHECKING:
    from ...topology import Topology
    from ._trees import Pipeline

__all__ = ["plan_balanced_multicast", "usage_matrix", "random_spanning_pipelines"]


def usage_matrix(pipelines: Sequence[Pipeline], res_of: np.ndarray, n_res: int) -> np.ndarray:
    """Sparse-ish dense matrix uses[resource, pipeline] (resources with finite capacity only)."""
    a = np.zeros((n_res, len(pipelines)))
    for j, p in enumerate(pipelines):
        for lid, u in p.link_uses.items():
            a[res_of[lid], j] += u
    return a


def random_spanning_pipelines(
    topology: Topology, source: str, destinations: Sequence[str], n: int, seed: int | None
) -> list[Pipeline]:
    """``n`` spanning depth-first pipelines over random neighbour orders."""
    rng = np.random.default_rng(seed)
    want = np.zeros(topology.n_nodes, dtype=bool)
    want[[topology.index(d) for d in destinations]] = True
    out = []
    two_way = has_reverse(topology)
    for _ in range(n):
        prio = rng.random(len(topology.links))
        arb = Arborescence.dfs(topology, source, usable=two_way, key=lambda l: prio[l])
        active = want[arb.node].copy()
        active[0] = False
        out.append(pipeline_over(arb, active))
    return out


def lp_rates(pipelines: Sequence[Pipeline], topology: Topology) -> np.ndarray:
    """HiGHS: max Σ x_t under link capacities; returns the rates (bytes/s)."""
    res_of, cap = resource_arrays(topology)
    a = usage_matrix(pipelines, res_of, len(cap))
    scale = capacity_scale(cap)
    rows = limited_rows(a.sum(axis=1) > 0, cap)
    sol = solve(
        -np.ones(len(pipelines)), a[rows], cap[rows] / scale, (0, None), problem="balanced_multicast", error=PlanError
    )
    return within_capacity(np.maximum(sol.x, 0.0), a[rows], cap[rows] / scale) * scale


@register_planner(
    "broadcast",
    "balanced_multicast",
    summary="Balanced Multicasting: LP (HiGHS) rates over FPFR + random spanning pipelines, sender-paced",
    reference="den Burger, Kielmann, Bal. Balanced Multicasting: High-throughput Communication for Grid Applications. SC 2005",
)
def plan_balanced_multicast(
    topology: Topology,
    request: Broadcast,
    *,
    seed: int | None = None,
    n_candidates: int = 8,
    rate_tolerance: float = DEFAULT_RATE_TOLERANCE,
) -> Plan:
    """Spanning trees with LP-optimised rates; every destination receives Σx.
    ``rate_tolerance``: fraction of Σx that may be given up to drop the slowest trees."""
    tolerance = check_rate_tolerance(rate_tolerance)
    dests = request.resolve(topology)
    cands, info = residual_pipelines(topology, request.source, dests, partial=False)
    if info["unreachable"] or not cands:
        raise unreachable_error("balanced_multicast", info, dests)
    cands = cands + random_spanning_pipelines(
        topology, request.source, dests, int(n_candidates), 0 if seed is None else seed
    )
    x = lp_rates(cands, topology)
    keep = x > 1e-9 * max(float(x.max()), 1.0)
    chosen = [c for c, k in zip(cands, keep) if k]
    for c, v in zip(chosen, x[keep]):
        c.rate = float(v)
    n_before = len(chosen)
    chosen, dropped = compact_parallel(chosen, tolerance)
    seqs = contiguous_layout(request.size, [c.rate for c in chosen])
    transfers = pipeline_transfers(request.source, chosen, seqs)
    rates = e1_rates(chosen, dests)
    return Plan.broadcast(
        request.source,
        request.size,
        dests,
        transfers,
        planner="balanced_multicast",
        params={"seed": seed, "n_candidates": int(n_candidates), "rate_tolerance": rate_tolerance},
        notes={
            "trees": len(chosen),
            "candidates": len(cands),
            "tree_rates": [c.rate for c in chosen[:64]],
            "expected_aggregate_bandwidth": float(sum(rates.values())),
            **(
                {"trees_before_merging": n_before, "merging_loss_aggregate_bandwidth": dropped * len(dests)}
                if n_before != len(chosen)
                else {}
            ),
        },
    )
