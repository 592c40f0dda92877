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
   of ``stable`` (:func:`._layout.nested_layout`): a host's simulated rate is the LP's
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
   bandwidth (ties: the pipelines). Simulating is the expensive part, so each structure first
   gets a rate ceiling computed from its transfers alone (caps, narrowest links, chain fill
   latencies, max-flow bounds; :func:`rate_ceiling`); they are simulated by decreasing
   ceiling, and one whose ceiling lies below the best prediction so far is not simulated.
   Predictions the caller already made (``topocast compare``) are reused.

What it is not: a proof of optimality over all routings. Packing Steiner trees is NP-hard
and routing alone can stay below the max-flow bound (docs/algorithms.md 8); the notes report the
remaining gap to that bound, which is an upper bound on what any plan could add.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from ...bounds import broadcast_bounds
from ...lp import capacity_scale, limited_rows, solve
from ...plan import Broadcast, Plan, ranges_length
from ..registration import register_planner
from ._compact import DEFAULT_RATE_TOLERANCE, check_rate_tolerance
from ._trees import (
    Arborescence,
    e1_rates,
    has_reverse,
    pipeline_over,
    prefix_sets,
    resource_arrays,
    route_shares,
    routes_fixed,
    undirected_tree,
    within_capacity,
)
from .stable import plan_from_nested, stable_pipelines

if TYPE_CHECKING:
    from ...bounds import Bound
    from ...results import Result
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


def _dest_rows(topology, dests) -> np.ndarray:
    """Row of each topology node among ``dests`` (-1 for the others)."""
    row = np.full(topology.n_nodes, -1, dtype=np.int64)
    row[[topology.index(d) for d in dests]] = np.arange(len(dests))
    return row


def _column_key(topology, p) -> tuple[bytes, bytes, bytes]:
    """What makes two columns the same: their destination set and their link uses."""
    links, uses = np.unique(p.link_ids(), return_counts=True)
    return np.sort(p.member_nodes(topology)).tobytes(), links.tobytes(), uses.tobytes()


def _solve(cols, topology, dests, floors, res_of, cap):
    """One LP solve (HiGHS, sparse). Returns (x, objective, link duals y, floor duals mu)."""
    from scipy.sparse import coo_matrix, vstack

    if not cols:  # linprog rejects an empty objective
        return None
    n_res = len(cap)
    scale = capacity_scale(cap)
    drow = _dest_rows(topology, dests)
    ri, rj, fi, fj = [], [], [], []
    for j, c in enumerate(cols):
        res = res_of[c.link_ids()]  # one entry per use: the sparse matrix sums them
        ri.append(res)
        rj.append(np.full(len(res), j, dtype=np.int64))
        rows_of = drow[c.member_nodes(topology)]
        rows_of = rows_of[rows_of >= 0]
        fi.append(rows_of)
        fj.append(np.full(len(rows_of), j, dtype=np.int64))
    r_i, r_j, f_i, f_j = (np.concatenate(v) for v in (ri, rj, fi, fj))
    a_cap = coo_matrix((np.ones(len(r_i)), (r_i, r_j)), shape=(n_res, len(cols))).tocsr()
    used_rows = np.zeros(n_res, dtype=bool)
    used_rows[r_i] = True
    rows = limited_rows(used_rows, cap)
    a_fl = coo_matrix((-np.ones(len(f_i)), (f_i, f_j)), shape=(len(dests), len(cols)))
    a = vstack([a_cap[rows], a_fl]).tocsr()
    obj = -np.array([float(c.n_members) for c in cols])
    # floors relaxed by a hair so round-off in stable's own rates never makes the LP infeasible
    b = np.concatenate([cap[rows] / scale, -np.asarray(floors) / scale * (1 - 1e-9)])
    sol = solve(obj, a, b, (0, None), problem=None)
    if sol.status != 0:  # floors the columns cannot meet yet: the caller prices more
        return None
    lam = sol.ineqlin.marginals  # <= 0 for a minimisation
    y = np.zeros(n_res)
    y[rows] = -lam[: len(rows)]
    mu = -lam[len(rows) :]
    x = within_capacity(np.maximum(sol.x, 0.0), a_cap[rows], cap[rows] / scale)
    return x * scale, float(np.dot(-obj, x)) * scale, y, mu


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
    mu_node = np.zeros(topology.n_nodes)
    mu_node[[topology.index(d) for d in dests]] = mu
    for k, s in enumerate(level_sets):
        active = np.zeros(arb.size, dtype=bool)
        idx = arb.pos[[topology.index(d) for d in s]]
        active[idx[idx >= 0]] = True
        active[0] = False
        p = pipeline_over(arb, active)
        profit = float(np.sum(1.0 + mu_node[p.member_nodes(topology)])) - float(np.sum(y[res_of[p.link_ids()]]))
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
    evaluated: Evaluated | None = None,
) -> Plan:
    """Maximise Σ_d r(d): the LP plan over nested pipelines, or another structure the
    simulator predicts better (step 4).

    ``evaluated``: name -> (plan, simulated result) or error, of step 4's candidates already
    planned with their defaults and simulated (fluid) on this input by the caller
    (``topocast compare``); they are not planned and simulated again. When it is a dict, the
    predictions made here are added to it (the pipelines' under ``"optimal"``), so that the
    caller need not simulate the returned plan again."""
    from ...errors import PlanError

    check_rate_tolerance(rate_tolerance)
    dests = request.resolve(topology)
    bound = broadcast_bounds(topology, request.source, dests)
    try:
        plan = _plan_pipelines(
            topology, request, bound, max_rounds=max_rounds, max_sets=max_sets, rate_tolerance=rate_tolerance
        )
    except PlanError as exc:
        # no two-way depth-first pipeline reaches some destination (a one-way SimGrid route
        # graph): step 4's relay trees follow the routes and may still reach every host
        params = {"max_rounds": max_rounds, "max_sets": max_sets, "rate_tolerance": rate_tolerance}
        return _best_other(topology, request, exc, params=params, evaluated=evaluated)
    return shallower_if_better(topology, request, plan, bound.per_host_rate, evaluated)


#: Step 4's other structures, and the most destinations each is tried for (``dijkstra``'s
#: greedy costs O(n^3): minutes for 1,500 hosts). ``depth_first`` is the unpaced pipeline
#: (no staged layout, so no rounding in the byte split: it can end a few bytes earlier).
CANDIDATES = {"two_tree": None, "dijkstra": 256, "depth_first": None}

#: A prediction made elsewhere on the same input (``topocast compare``): name -> (plan,
#: simulated result), or the planner's error message.
Evaluated = Mapping[str, "tuple[Plan, Result] | str"]


def _candidates(topology, request: Broadcast, n_dests: int, evaluated: Evaluated | None):
    """(name, plan, simulated aggregate bandwidth or None) of every step-4 candidate that plans;
    the bandwidth is known for candidates ``evaluated`` already predicted."""
    from ...errors import TopocastError
    from ..registry import get_planner

    for name, most in CANDIDATES.items():
        if most is not None and n_dests > most:
            continue
        done = (evaluated or {}).get(name)
        if isinstance(done, str):  # it did not plan this input
            continue
        if done is not None:
            yield name, done[0], done[1].aggregate_bandwidth
            continue
        try:
            plan = get_planner("broadcast", name)(topology, request)
        except TopocastError:
            continue
        yield name, plan, None


def _predicted_candidates(topology, request: Broadcast, n_dests: int, evaluated: Evaluated | None = None):
    """(name, plan, predicted aggregate bandwidth) of every step-4 candidate that plans."""
    for name, plan, bw in _candidates(topology, request, n_dests, evaluated):
        yield name, plan, _predict(name, plan, topology, evaluated) if bw is None else bw


def _predict(name: str, plan: Plan, topology: Topology, evaluated: Evaluated | None) -> float:
    """The simulated aggregate bandwidth of ``plan``, added to ``evaluated`` when it is a dict."""
    from ...sim import simulate

    result = simulate(plan, topology)
    if isinstance(evaluated, dict):
        evaluated.setdefault(name, (plan, result))
    return result.aggregate_bandwidth


#: Step 4 runs always up to SMALL destinations, and above only when the pipelines' fill
#: (summed hop latencies down the longest chain) is at least FILL_SHARE of the transfer time:
#: below that a shallower structure cannot gain more than about that share, and simulating
#: every candidate would dominate the planning time on thousands of hosts.
SMALL = 256
FILL_SHARE = 1e-4


def _hop_links(topology, t) -> Sequence[int]:
    """Directed link ids a transfer crosses (its explicit path, or the topology's route)."""
    if t.path is None:
        return topology.route(t.src, t.dst)
    return [topology._pair_to_link[(a, b)] for a, b in zip(t.path, t.path[1:])]


def _fill_time(topology, plan: Plan) -> float:
    """Latency down the longest chain of pipelined hops (route latencies summed)."""
    lat = topology.link_latency
    reach = [0.0] * len(plan.transfers)
    for i, t in enumerate(plan.transfers):
        up = reach[t.upstream] if t.upstream is not None and t.upstream < i else 0.0
        reach[i] = up + float(sum(lat[l] for l in _hop_links(topology, t)))
    return max(reach, default=0.0)


def rate_ceiling(topology, plan: Plan, per_host_bound: Mapping[str, float]) -> float:
    """An upper bound on the aggregate bandwidth the simulator can predict for ``plan``,
    without simulating it (ours, [I]; the simulator's rules of docs/design.md).

    Transfer ``t`` never runs faster than its own limit ``R_t`` (its rate cap, its route's
    narrowest link) and starts flowing no sooner than ``F_t``, the summed route latencies
    along its chain of upstreams (a pipelined transfer starts only once its upstream flows);
    a pipelined transfer never gets ahead of its upstream, nor of any transfer further up.
    So by time ``T`` it has delivered at most ``min((T - F_t)+ R_t, (T - F_b)+ R_b)`` bytes,
    ``b`` being the slowest transfer of its chain. A destination holds its ``M`` bytes no
    sooner than the ``T`` where its incoming transfers can have brought them (found by
    bisection, rounded down), nor sooner than ``M`` over its max-flow bound: its rate is at
    most ``M / T``.
    """
    n = len(plan.transfers)
    if not n or not plan.wanted:
        return 0.0
    bw = topology.link_bandwidth
    lat = topology.link_latency
    own_start, own_rate = np.zeros(n), np.zeros(n)
    slow_start, slow_rate = np.zeros(n), np.zeros(n)
    for i, t in enumerate(plan.transfers):
        links = _hop_links(topology, t)
        r = float(min((bw[l] for l in links), default=math.inf))
        if t.rate_cap is not None:
            r = min(r, t.rate_cap)
        f = float(sum(lat[l] for l in links))
        up = t.upstream if t.pipelined and t.upstream is not None and t.upstream < i else None
        if up is not None:
            f += own_start[up]
        own_start[i], own_rate[i] = f, r
        if up is not None and slow_rate[up] <= r:
            slow_start[i], slow_rate[i] = slow_start[up], slow_rate[up]
        else:
            slow_start[i], slow_rate[i] = f, r
    dests = list(plan.wanted)
    row = {d: k for k, d in enumerate(dests)}
    into = np.array([row.get(t.dst, -1) for t in plan.transfers], dtype=np.int64)
    keep = into >= 0
    into = into[keep]
    own_start, own_rate, slow_start, slow_rate = (a[keep] for a in (own_start, own_rate, slow_start, slow_rate))
    size = np.array([float(ranges_length(plan.wanted[d])) for d in dests])

    def delivered(at: np.ndarray) -> np.ndarray:
        """Most bytes each destination can hold at its time ``at``."""
        tt = at[into]
        with np.errstate(invalid="ignore"):  # inf rate x 0 time: nothing delivered yet
            by_own = np.nan_to_num(np.maximum(tt - own_start, 0.0) * own_rate, nan=0.0)
            by_slow = np.nan_to_num(np.maximum(tt - slow_start, 0.0) * slow_rate, nan=0.0)
        return np.bincount(into, weights=np.minimum(by_own, by_slow), minlength=len(dests))

    # any one incoming transfer alone would have delivered everything by ``hi``
    alone = np.maximum(own_start + size[into] / own_rate, slow_start + size[into] / slow_rate)
    hi = np.full(len(dests), np.inf)
    np.minimum.at(hi, into, alone)
    lo = np.zeros(len(dests))
    finite = np.isfinite(hi)
    for _ in range(64):
        mid = np.where(finite, (lo + hi) / 2, lo * 2 + 1.0)
        enough = delivered(mid) >= size
        hi = np.where(enough, mid, hi)
        lo = np.where(enough, lo, mid)
        finite = np.isfinite(hi)
    bound = np.array([per_host_bound.get(d, math.inf) for d in dests])
    with np.errstate(divide="ignore"):
        done = np.maximum(lo, size / bound)
        rates = np.where(done > 0, size / np.where(done > 0, done, 1.0), np.inf)
    return float(rates.sum())


def _transfer_time(plan: Plan) -> float:
    """Message size over the mean expected rate of a destination."""
    mean = float(plan.notes.get("expected_aggregate_bandwidth", 0.0)) / max(len(plan.wanted), 1)
    return plan.size / mean if mean > 0 else math.inf


def shallower_if_better(
    topology: Topology,
    request: Broadcast,
    plan: Plan,
    per_host_bound: Mapping[str, float] | None = None,
    evaluated: Evaluated | None = None,
) -> Plan:
    """Step 4: another structure (``two_tree``, ``dijkstra``, ``depth_first``) instead of
    ``plan`` when the simulator predicts it more aggregate bandwidth (long pipelines pay
    their fill time, docs/algorithms.md 11). Ties (1e-9 relative) keep ``plan``, then the
    earlier candidate.

    The structures are simulated by decreasing :func:`rate_ceiling`, and one whose ceiling
    cannot beat the best prediction so far is not simulated (it could not be chosen);
    ``evaluated`` gives predictions already made (and takes the new ones, if a dict)."""
    if len(plan.wanted) > SMALL and _fill_time(topology, plan) < FILL_SHARE * _transfer_time(plan):
        return plan  # nothing to gain from a shallower structure: skip the simulations
    if per_host_bound is None:
        per_host_bound = broadcast_bounds(topology, request.source, list(plan.wanted)).per_host_rate
    structures = [("pipelines", plan, None), *_candidates(topology, request, len(plan.wanted), evaluated)]
    ceiling = {name: rate_ceiling(topology, p, per_host_bound) for name, p, bw in structures if bw is None}
    scores: dict[str, float] = {}
    not_simulated: dict[str, float] = {}
    # predictions already made first, then the most promising
    for name, other, bw in sorted(structures, key=lambda c: (c[2] is None, -ceiling.get(c[0], 0.0))):
        if bw is None:
            best_so_far = max(scores.values(), default=-math.inf)
            # its prediction cannot exceed the ceiling (up to round-off): clearly below the
            # best, it can neither win nor tie (ties go to the earlier structure)
            if ceiling[name] * (1 + 1e-9) < best_so_far:
                not_simulated[name] = ceiling[name]
                continue
            bw = _predict("optimal" if name == "pipelines" else name, other, topology, evaluated)
        scores[name] = bw
    best_name, best = "", plan
    for name, other, _ in structures:  # in order: a later one must be better by more than 1e-9
        if name in scores and (not best_name or scores[name] > scores[best_name] * (1 + 1e-9)):
            best_name, best = name, other
    notes = {**plan.notes, "predicted_aggregate_bandwidth": scores}
    if not_simulated:
        notes["not_simulated_rate_ceiling"] = not_simulated
    if best is plan:
        return replace(plan, notes=notes)
    notes.update(best.notes, method=f"{best_name}: the simulator predicts more than the pipelines")
    return replace(best, planner="optimal", params=plan.params, notes=notes)


def _best_other(topology, request: Broadcast, error, *, params, evaluated: Evaluated | None = None) -> Plan:
    """Step 4 without a pipelines plan: the best candidate, or ``error`` if none plans."""
    scored = list(_predicted_candidates(topology, request, len(request.resolve(topology)), evaluated))
    if not scored:
        raise error
    name, best, bw = max(scored, key=lambda c: c[2])
    notes = {
        **best.notes,
        "predicted_aggregate_bandwidth": {n: b for n, _, b in scored},
        "method": f"{name}: no depth-first pipeline reaches every destination ({error})",
    }
    return replace(best, planner="optimal", params=params, notes=notes)


def _plan_pipelines(
    topology, request: Broadcast, bound: Bound, *, max_rounds: int, max_sets: int, rate_tolerance: float
) -> Plan:
    """Steps 1-3: maximise Σ_d r(d) over nested rated pipelines; never worse than ``stable``
    for any host (up to ``rate_tolerance`` of the aggregate, given up to merge trees, as in
    ``stable``)."""
    dests = request.resolve(topology)
    src = request.source
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
    zero = np.zeros(len(cap))
    chains = [("A: stable level sets", sets_a, list(pipes), floors := np.array([r_stable[d] for d in dests]))]
    keys = [("B: destinations by bound", bound.per_host_rate)]
    if routes_fixed(topology):  # chain C: hosts behind crowded routes later (_trees.route_shares)
        keys.append(("C: destinations by route share", route_shares(topology, src, dests)))
    for label, key in keys:
        sets = prefix_sets(dests, key)
        seed = [p for _, _, p in _price(topology, src, arb_fixed, sets, zero, np.zeros(len(dests)), dests, res_of, rev)]
        chains.append((label, sets, seed, floors * 1e-6))
    best = (agg_stable, pipes, "stable (LP found nothing better)", 0, 0)
    for label, sets, init, fl in chains:
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
    if len(sets) > max_sets:  # price a spread of the sets (always the spanning one)
        pick = np.unique(np.linspace(0, len(sets) - 1, max_sets).round().astype(int))
        price_sets = [sets[i] for i in pick]
    else:
        price_sets = sets
    cols = list(cols)
    seen = {_column_key(topology, p) for p in cols}
    best = None
    rounds = 0
    for rounds in range(1, max_rounds + 1):
        out = _solve(cols, topology, dests, floors, res_of, cap)
        if out is None:
            break
        x, val, y, mu = out
        best = (x.copy(), list(cols))
        added = 0
        for profit, _, p in _price(topology, src, arb_fixed, price_sets, y, mu, dests, res_of, rev):
            key = _column_key(topology, p)
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
    order = sorted(range(len(chosen)), key=lambda i: -chosen[i].n_members)
    lp_pipes = [chosen[i].with_rate(float(rates[i])) for i in order]
    r = e1_rates(lp_pipes, dests)
    if min(r.values(), default=1.0) <= 0.0:
        return None
    return lp_pipes, float(sum(r.values())), rounds, len(cols)
