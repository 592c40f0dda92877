"""``optimal``: maximise the aggregate bandwidth Σ_d r(d) with routing only (no coding).

Reference: goes beyond Takahashi et al., "A Stable Broadcast Algorithm", CCGrid 2008, whose
stated future work is "an algorithm that maximizes aggregate bandwidth in general graph
topologies" [S:SB-slides 36]; LP over trees with column generation as suggested for Balanced
Multicasting in docs/algorithms.md section 3; bounds of section 8.

Everything here is ours ([I]):

1. Run ``stable``. If its E1 aggregate already equals the max-flow bound Σ_d maxflow(S->d)
   (always the case on symmetric trees), nothing can do better: return its trees.
2. Otherwise solve, by column generation, the LP

       max  Σ_c |D_c| x_c
       s.t. Σ_c uses_c(e) x_c <= c(e)                  for every link (resource) e
            Σ_{c: d ∈ D_c} x_c >= r_stable(d)          for every destination d
            x >= 0

   over depth-first pipelines c (column = one pipeline, rate x_c, destination set D_c).
   Destination sets are restricted to the nested level sets of ``stable``
   (D_1 ⊇ D_2 ⊇ ...), so whatever the LP picks can be run exactly with the staged byte layout
   of ``stable`` (:func:`._trees.nested_layout`): a host's simulated rate is the LP's
   Σ_{c ∋ d} x_c. The floor constraints make the result a Pareto improvement over ``stable``
   for every host (never worse on any topology, by construction: stable's trees are the
   starting columns and a feasible solution). Pricing (heuristic, not exact - exact pricing
   is a prize-collecting Steiner problem): for each level set, a pipeline over the shortest-path
   tree by dual link prices (general graphs) or over the fixed tree with the children whose
   up-link is dearest visited last (tree topologies, where only the child order matters);
   a column enters when its reduced profit is positive. Stops when no column enters, or after
   ``max_rounds`` rounds.
3. Keep the better (E1 aggregate) of the LP plan and stable's plan; ``plan.notes`` reports the
   bound, the achieved aggregate, the gap to the bound, the method and the rounds.
4. E1 ignores latency: a pipeline through n hosts fills in about n hop latencies. Plan the
   shallow structures as well, ``two_tree`` (depth about log2 n, docs/algorithms.md 11) and,
   up to 256 destinations, ``dijkstra``'s widest relay tree, and the unpaced ``depth_first``
   pipeline; predict each with the simulator and keep the one with the largest aggregate
   bandwidth (ties: the pipelines).

What it is not: a proof of optimality over all routings. Packing Steiner trees is NP-hard
and routing alone can stay below the max-flow bound (docs/algorithms.md 8); the notes report the
remaining gap to that bound, which is an upper bound on what any plan could add.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from ...bounds import broadcast_bounds
from ...plan import Broadcast, Plan
from ..registry import register_planner
from ._compact import DEFAULT_RATE_TOLERANCE, check_rate_tolerance
from ._trees import Arborescence, e1_rates, has_reverse, pipeline_over, resource_arrays, undirected_tree
from .stable import plan_from_nested, stable_pipelines

if TYPE_CHECKING:
    from ...topology import Topology

__all__ = ["plan_optimal"]


def _level_sets(pipelines):
    """Distinct destination sets of the nested stable trees, largest first."""
    sets = []
    for p in pipelines:
        s = frozenset(p.members)
        if not sets or s != sets[-1]:
            sets.append(s)
    return sets


def _solve(cols, _unused, dests, floors, res_of, cap):
    """One LP solve (HiGHS, sparse). Returns (x, objective, link duals y, floor duals mu)."""
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix, vstack

    if not cols:  # linprog rejects an empty objective
        return None
    n_res = len(cap)
    finite = np.isfinite(cap)
    scale = float(cap[finite].max()) if finite.any() else 1.0
    didx = {d: i for i, d in enumerate(dests)}
    ri, rj, rv, fi, fj = [], [], [], [], []
    for j, c in enumerate(cols):
        for lid, u in c.link_uses.items():
            ri.append(res_of[lid])
            rj.append(j)
            rv.append(u)
        for m in c.members:
            i = didx.get(m)
            if i is not None:
                fi.append(i)
                fj.append(j)
    a_cap = coo_matrix((rv, (ri, rj)), shape=(n_res, len(cols))).tocsr()
    used_rows = np.zeros(n_res, dtype=bool)
    used_rows[np.asarray(ri, dtype=np.int64)] = True
    rows = np.flatnonzero(finite & used_rows)
    a_fl = coo_matrix((-np.ones(len(fi)), (fi, fj)), shape=(len(dests), len(cols)))
    a = vstack([a_cap[rows], a_fl]).tocsr()
    obj = -np.array([float(len(c.members)) for c in cols])
    # floors relaxed by a hair so round-off in stable's own rates never makes the LP infeasible
    b = np.concatenate([cap[rows] / scale, -np.asarray(floors) / scale * (1 - 1e-9)])
    sol = linprog(obj, A_ub=a, b_ub=b, bounds=(0, None), method="highs")
    if sol.status != 0:
        return None
    lam = sol.ineqlin.marginals  # <= 0 for a minimisation
    y = np.zeros(n_res)
    y[rows] = -lam[: len(rows)]
    mu = -lam[len(rows) :]
    return np.maximum(sol.x, 0.0) * scale, -sol.fun * scale, y, mu


def _price(topology, source, arb_fixed, level_sets, y, mu, dests, res_of, rev):
    """Candidate pipelines (one per level set) built against the dual link prices ``y``."""
    if arb_fixed is not None:
        # tree topology: only the child order matters; visit the dearest up-link last
        arb = Arborescence.dfs(topology, source, key=lambda l: (y[res_of[rev[l]]], int(topology.link_dst[l])))
    else:
        from scipy.sparse import csr_matrix
        from scipy.sparse.csgraph import dijkstra

        finite_w = y[res_of] + 1e-6 * (y.max() + 1.0)  # small hop cost: prefer short paths at equal price
        two = has_reverse(topology)  # the pipeline walks tree links back up
        n = topology.n_nodes
        g = csr_matrix((finite_w[two], (topology.link_src[two], topology.link_dst[two])), shape=(n, n))
        _, pred = dijkstra(g, directed=True, indices=topology.index(source), return_predecessors=True)
        plink = np.full(n, -1, dtype=np.int64)
        for v in range(n):
            u = pred[v]
            if u >= 0:
                plink[v] = topology._pair_to_link[(topology.nodes[u], topology.nodes[v])]
        arb = Arborescence.from_parent_links(
            topology, source, plink, child_key=lambda l: (y[res_of[rev[l]]], int(topology.link_dst[l]))
        )
    out = []
    mu_of = dict(zip(dests, mu))
    for k, s in enumerate(level_sets):
        active = np.zeros(arb.size, dtype=bool)
        idx = [arb.pos[topology.index(d)] for d in s]
        active[[i for i in idx if i >= 0]] = True
        active[0] = False
        p = pipeline_over(arb, active)
        profit = sum(1.0 + mu_of.get(m, 0.0) for m in p.members) - sum(u * y[res_of[l]] for l, u in p.link_uses.items())
        out.append((profit, k, p))
    return out


@register_planner(
    "broadcast",
    "optimal",
    summary="Max aggregate bandwidth (routing only): stable, then LP column generation over nested pipelines; two_tree, dijkstra or depth_first where the simulator predicts more",
    reference="Ours; extends Takahashi et al. CCGrid 2008 (future work) with an LP as in den Burger et al. SC 2005",
)
def plan_optimal(
    topology: Topology,
    request: Broadcast,
    *,
    seed: int | None = None,
    max_rounds: int = 30,
    max_sets: int = 40,
    rate_tolerance: float = DEFAULT_RATE_TOLERANCE,
) -> Plan:
    """Maximise Σ_d r(d): the LP plan over nested pipelines, or another structure the
    simulator predicts better (step 4)."""
    from ...errors import PlanError

    check_rate_tolerance(rate_tolerance)
    try:
        plan = _plan_pipelines(
            topology, request, max_rounds=max_rounds, max_sets=max_sets, rate_tolerance=rate_tolerance
        )
    except PlanError as exc:
        # no two-way depth-first pipeline reaches some destination (a one-way SimGrid route
        # graph): step 4's relay trees follow the routes and may still reach every host
        params = {"max_rounds": max_rounds, "max_sets": max_sets, "rate_tolerance": rate_tolerance}
        return _best_other(topology, request, exc, params=params)
    return shallower_if_better(topology, request, plan)


#: Step 4's other structures, and the most destinations each is tried for (``dijkstra``'s
#: greedy costs O(n^3): minutes for 1,500 hosts). ``depth_first`` is the unpaced pipeline
#: (no staged layout, so no rounding in the byte split: it can end a few bytes earlier).
CANDIDATES = {"two_tree": None, "dijkstra": 256, "depth_first": None}


def _predicted_candidates(topology, request: Broadcast, n_dests: int):
    """(name, plan, predicted aggregate bandwidth) of every step-4 candidate that plans."""
    from ...errors import TopocastError
    from ...sim import simulate
    from ..registry import get_planner

    for name, most in CANDIDATES.items():
        if most is not None and n_dests > most:
            continue
        try:
            plan = get_planner("broadcast", name)(topology, request)
        except TopocastError:
            continue
        yield name, plan, simulate(plan, topology).aggregate_bandwidth


#: Step 4 runs always up to SMALL destinations, and above only when the pipelines' fill
#: (summed hop latencies down the longest chain) is at least FILL_SHARE of the transfer time:
#: below that a shallower structure cannot gain more than about that share, and simulating
#: every candidate would dominate the planning time on thousands of hosts.
SMALL = 256
FILL_SHARE = 1e-4


def _fill_time(topology, plan: Plan) -> float:
    """Latency down the longest chain of pipelined hops (route latencies summed)."""
    lat = topology.link_latency
    reach = [0.0] * len(plan.transfers)
    for i, t in enumerate(plan.transfers):
        links = (
            topology.route(t.src, t.dst)
            if t.path is None
            else [topology._pair_to_link[(a, b)] for a, b in zip(t.path, t.path[1:])]
        )
        up = reach[t.upstream] if t.upstream is not None and t.upstream < i else 0.0
        reach[i] = up + float(sum(lat[l] for l in links))
    return max(reach, default=0.0)


def _transfer_time(plan: Plan) -> float:
    """Message size over the mean expected rate of a destination."""
    mean = float(plan.notes.get("expected_aggregate_bandwidth", 0.0)) / max(len(plan.wanted), 1)
    return plan.size / mean if mean > 0 else math.inf


def shallower_if_better(topology: Topology, request: Broadcast, plan: Plan) -> Plan:
    """Step 4: another structure (``two_tree``, ``dijkstra``, ``depth_first``) instead of
    ``plan`` when the simulator predicts it more aggregate bandwidth (long pipelines pay
    their fill time, docs/algorithms.md 11). Ties keep ``plan``."""
    from ...sim import simulate

    if len(plan.wanted) > SMALL and _fill_time(topology, plan) < FILL_SHARE * _transfer_time(plan):
        return plan  # nothing to gain from a shallower structure: skip the simulations
    scores = {"pipelines": simulate(plan, topology).aggregate_bandwidth}
    best_name, best = "pipelines", plan
    for name, other, bw in _predicted_candidates(topology, request, len(plan.wanted)):
        scores[name] = bw
        if bw > scores[best_name] * (1 + 1e-9):
            best_name, best = name, other
    notes = {**plan.notes, "predicted_aggregate_bandwidth": scores}
    if best is plan:
        return replace(plan, notes=notes)
    notes.update(best.notes, method=f"{best_name}: the simulator predicts more than the pipelines")
    return replace(best, planner="optimal", params=plan.params, notes=notes)


def _best_other(topology, request: Broadcast, error, *, params) -> Plan:
    """Step 4 without a pipelines plan: the best candidate, or ``error`` if none plans."""
    scored = list(_predicted_candidates(topology, request, len(request.resolve(topology))))
    if not scored:
        raise error
    name, best, bw = max(scored, key=lambda c: c[2])
    notes = {
        **best.notes,
        "predicted_aggregate_bandwidth": {n: b for n, _, b in scored},
        "method": f"{name}: no depth-first pipeline reaches every destination ({error})",
    }
    return replace(best, planner="optimal", params=params, notes=notes)


def _plan_pipelines(topology, request: Broadcast, *, max_rounds: int, max_sets: int, rate_tolerance: float) -> Plan:
    """Steps 1-3: maximise Σ_d r(d) over nested rated pipelines; never worse than ``stable``
    for any host (up to ``rate_tolerance`` of the aggregate, given up to merge trees, as in
    ``stable``)."""
    dests = request.resolve(topology)
    src = request.source
    bound = broadcast_bounds(topology, src, dests)
    pipes, info = stable_pipelines(topology, src, dests)
    r_stable = e1_rates(pipes, dests)
    agg_stable = float(sum(r_stable.values()))
    params = {"max_rounds": max_rounds, "max_sets": max_sets, "rate_tolerance": rate_tolerance}
    notes: dict[str, object] = {
        "bound_aggregate_bandwidth": bound.aggregate_bandwidth,
        "stable_aggregate_bandwidth": agg_stable,
    }
    reaches_bound = not math.isfinite(bound.aggregate_bandwidth) or agg_stable >= bound.aggregate_bandwidth * (1 - 1e-9)
    if pipes and reaches_bound:
        notes.update(
            method="stable reaches the max-flow bound",
            gap_to_bound=max(0.0, 1 - agg_stable / bound.aggregate_bandwidth)
            if math.isfinite(bound.aggregate_bandwidth) and bound.aggregate_bandwidth > 0
            else 0.0,
            rounds=0,
        )
    if not pipes or reaches_bound:
        # without pipes, no two-way depth-first pipeline leaves the source (e.g. a one-way
        # SimGrid route graph): the LP's columns walk the same links, so there is nothing to
        # improve on; plan_from_nested raises stable's PlanError naming the unreachable
        # destinations
        return plan_from_nested(
            topology,
            request,
            dests,
            pipes,
            info,
            planner="optimal",
            params=params,
            notes=notes,
            rate_tolerance=rate_tolerance,
        )

    # step 2: column generation, over two chains of destination sets
    res_of, cap = resource_arrays(topology)
    rev = np.array([topology._pair_to_link.get((l.dst, l.src), i) for i, l in enumerate(topology.links)])
    arb_fixed = True if undirected_tree(topology) else None
    # chain A: stable's level sets, stable's trees as first columns, floors = stable's rates
    # (a per-host Pareto improvement); chain B: prefixes of the destinations sorted by bound
    # (largest first), floors = 1e-6 x stable's rates (only so that every host completes).
    sets_a = _level_sets(pipes)
    by_bound = sorted(dests, key=lambda d: (-bound.per_host_rate[d], dests.index(d)))
    cuts = [
        k
        for k in range(1, len(by_bound) + 1)
        if k == len(by_bound) or bound.per_host_rate[by_bound[k]] < bound.per_host_rate[by_bound[k - 1]]
    ]
    sets_b = [frozenset(by_bound[:k]) for k in reversed(cuts)]
    zero = np.zeros(len(cap))
    seed_b = [p for _, _, p in _price(topology, src, arb_fixed, sets_b, zero, np.zeros(len(dests)), dests, res_of, rev)]
    floors = np.array([r_stable[d] for d in dests])
    best = (agg_stable, pipes, "stable (LP found nothing better)", 0, 0)
    for label, sets, init, fl in (
        ("A: stable level sets", sets_a, list(pipes), floors),
        ("B: destinations by bound", sets_b, seed_b, floors * 1e-6),
    ):
        out = _column_generation(
            topology, src, dests, sets, init, fl, res_of, cap, rev, arb_fixed, max_rounds, max_sets
        )
        if out is None:
            continue
        lp_pipes, agg, rounds, ncols = out
        if agg > best[0] * (1 + 1e-12):
            best = (agg, lp_pipes, f"LP column generation over nested pipelines, chain {label}", rounds, ncols)
    agg, chosen, method, rounds, ncols = best
    notes.update(method=method, rounds=rounds, columns=ncols, gap_to_bound=1 - agg / bound.aggregate_bandwidth)
    return plan_from_nested(
        topology,
        request,
        dests,
        chosen,
        info,
        planner="optimal",
        params=params,
        notes=notes,
        rate_tolerance=rate_tolerance,
    )


def _column_generation(topology, src, dests, sets, cols, floors, res_of, cap, rev, arb_fixed, max_rounds, max_sets):
    """Column generation over pipelines whose destination sets are in the chain ``sets``.

    Returns (nested rated pipelines, E1 aggregate, rounds, columns) or None if the LP fails.
    """
    from ._trees import Pipeline

    if len(sets) > max_sets:  # price a spread of the sets (always the spanning one)
        pick = np.unique(np.linspace(0, len(sets) - 1, max_sets).round().astype(int))
        price_sets = [sets[i] for i in pick]
    else:
        price_sets = sets
    cols = list(cols)
    seen = {(frozenset(p.members), tuple(sorted(p.link_uses.items()))) for p in cols}
    best = None
    rounds = 0
    for rounds in range(1, max_rounds + 1):
        out = _solve(cols, None, dests, floors, res_of, cap)
        if out is None:
            break
        x, val, y, mu = out
        best = (x.copy(), list(cols))
        added = 0
        for profit, _, p in _price(topology, src, arb_fixed, price_sets, y, mu, dests, res_of, rev):
            key = (frozenset(p.members), tuple(sorted(p.link_uses.items())))
            if profit > 1e-9 and key not in seen:
                seen.add(key)
                cols.append(p)
                added += 1
        if not added:
            break
    if best is None:
        return None
    x, cols = best
    keep = x > 1e-12 * max(float(x.max()), 1.0)
    chosen = [c for c, k in zip(cols, keep) if k]
    rates = x[keep]
    # nested order: largest destination set first (all sets come from one chain)
    order = sorted(range(len(chosen)), key=lambda i: -len(chosen[i].members))
    lp_pipes = [Pipeline(chosen[i].members, float(rates[i]), chosen[i].paths, chosen[i].link_uses) for i in order]
    r = e1_rates(lp_pipes, dests)
    if min(r.values(), default=1.0) <= 0.0:
        return None
    return lp_pipes, float(sum(r.values())), rounds, len(cols)
