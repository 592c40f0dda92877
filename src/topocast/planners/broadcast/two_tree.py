"""Two-tree broadcast over Stable Broadcast's levels: full bandwidth with logarithmic depth.

Reference: P. Sanders, J. Speck, J. L. Träff, "Two-tree algorithms for full bandwidth
broadcast, reduction and scan", Parallel Computing 35(12), 2009, pp. 581-594 (NCCL ships the
same construction as its "double binary tree", src/graph/trees.cc); docs/algorithms.md
section 11.

From the paper and NCCL's construction ([S:2tree, S:NCCL]):

* the message is split into two halves; each half is broadcast along its own binary tree
  spanning every process, both trees at once;
* tree T1 is the binary tree of an in-order numbering: the leaves are the odd numbers, a node
  whose lowest set bit is 2^k (k >= 1) has the children ``i - 2^(k-1)`` and, if it exists,
  ``i + 2^(k-1)`` (or, past the end, the largest ``i + 2^j <= n``); tree T2 is T1 shifted by
  one, so every process is interior in at most one tree: it receives each half once and sends
  at most two copies of one half, no more than a pipeline's one copy of the whole message;
* the depth is about log2 n instead of the n of a pipeline.

Ours ([I]):

* **Where the trees run.** The numbering is the depth-first order of ``stable``'s trees
  (docs/algorithms.md 1.2): a subtree of the in-order tree is a contiguous run of that order,
  so most hops stay inside one switch and the few long hops cross the backbone.
* **Heterogeneous hosts.** ``stable``'s nested destination sets S_1 ⊇ S_2 ⊇ ... (hosts that
  can take more get more trees) each get a two-tree; the rate V_n of level n (V_n / 2 per
  tree) comes from a small LP over the links the two-trees really cross (HiGHS):
  maximise Σ_n |S_n| V_n with Σ_n uses_n(e) V_n / 2 <= c(e) for every link or shared cable e.
* **Byte layout.** ``stable``'s folded staged layout (docs/algorithms.md 1.4) with two
  streams per level: level L carries the complement of what every stream of the levels
  j < L has delivered by ``t_L = M / (V_1 + ... + V_L)``, its first half on T1 and its second
  half on T2, so a host of S_1..S_L holds the message at t_L, as in ``stable``.
* Every hop is pipelined and paced at its tree's rate; hops follow the topology's routes.
"""

from __future__ import annotations

import math

import numpy as np

from ...errors import PlanError
from ...plan import Broadcast, Plan, Transfer
from ..registry import register_planner
from ._compact import DEFAULT_RATE_TOLERANCE, check_rate_tolerance, compact_nested
from ._trees import Pipeline, _prefix, e1_rates, resource_arrays
from .stable import stable_pipelines

__all__ = ["plan_two_tree", "full_tree_parents", "two_tree_parents"]


def full_tree_parents(weights: np.ndarray) -> np.ndarray:
    """Parent position of every position 0..L-1 (L odd) of a full binary tree (-1: root).

    In-order, the tree alternates leaf, interior, leaf, ...: even positions are leaves, odd
    positions have two children, as in the in-order trees of [S:2tree, S:NCCL]. Which full tree
    is ours [I]: the root of a range is the valid position next to the heaviest boundary
    ``weights[k]`` (between positions k and k+1) of the range (ties: nearest the middle), so
    the trees split at the backbones first and cross each one only a few times; inside a
    stretch of equal boundaries (one switch) the split is balanced, so the depth is about
    log2 L plus one level per distinct heavier boundary on the way.
    """
    size = len(weights) + 1
    parent = np.full(size, -1, dtype=np.int64)
    w = np.concatenate(([0.0], np.asarray(weights, float), [0.0]))  # w[k]: boundary left of k
    stack = [(0, size - 1, -1)]
    while stack:
        a, b, up = stack.pop()
        if a == b:
            parent[a] = up
            continue
        cand = np.arange(a + 1, b, 2)  # r - a odd: both sides have odd length
        score = np.maximum(w[cand], w[cand + 1])
        best = cand[score == score.max()]
        r = int(best[np.argmin(np.abs(2 * best - (a + b)))])
        parent[r] = up
        stack.append((a, r - 1, r))
        stack.append((r + 1, b, r))
    return parent


def two_tree_parents(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Parents (host index, -1: the source) of hosts 0..n-1 in T1 and T2.

    ``weights[k]`` is the boundary between hosts k and k+1. T1 puts host j at position j, T2
    at j+1 (shifted by one [S:2tree, S:NCCL]); a phantom leaf pads each to an odd length. Hosts
    interior in T1 (odd j) are leaves of T2 and the other way round.
    """
    n = len(weights) + 1
    out = []
    for shift in (0, 1):
        size = n + shift
        size += 1 - size % 2  # pad with one phantom leaf at the end when even
        w = np.zeros(size - 1)
        w[shift : shift + n - 1] = weights
        pos_parent = full_tree_parents(w)[shift : shift + n]
        host_parent = np.where(pos_parent >= 0, pos_parent - shift, -1)
        out.append(host_parent)  # phantoms are leaves: never anyone's parent
    return out[0], out[1]


def _levels(pipelines):
    """Distinct nested destination sets of stable's trees (member order of their first tree)."""
    out: list[list[str]] = []
    for p in pipelines:
        if not out or set(p.members) != set(out[-1]):
            out.append(list(p.members))
    return out


def _hops(members, parents, source):
    """(sender, receiver) hops of one tree, parents before children, and the tree's depth."""
    depth = np.full(len(parents), -1, dtype=np.int64)
    for j in range(len(parents)):  # parents may come later in the numbering: walk up once
        path = []
        k = j
        while k >= 0 and depth[k] < 0:
            path.append(k)
            k = int(parents[k])
        d = 0 if k < 0 else int(depth[k]) + 1
        for x in reversed(path):
            depth[x] = d
            d += 1
    order = np.argsort(depth, kind="stable")
    hops = [(source if parents[j] < 0 else members[int(parents[j])], members[int(j)]) for j in order.tolist()]
    return hops, int(depth.max(initial=-1)) + 1


def _boundaries(topology, members) -> np.ndarray:
    """Weight of the boundary between consecutive members: Σ c_max / c(e) over the links
    between their access links (the route without its first and last link).

    A tree hop over this boundary loads every link of that route; the access links carry the
    members' own traffic whatever the tree, so only the links in between (switch to switch,
    backbones) make a boundary heavy, the slower the heavier; the trees cross heavy
    boundaries as rarely as they can [I].
    """
    inv = 1.0 / topology.link_bandwidth
    top = float(topology.link_bandwidth.max())
    return np.array([top * float(inv[list(topology.route(u, v))[1:-1]].sum()) for u, v in zip(members, members[1:])])


def _rates(topology, levels_hops, sizes, stable_rates):
    """LP rates V_n of the levels (each tree at V_n / 2), feasible on every resource.

    Level 1 keeps at least 10^-6 of stable's rate so that every destination completes."""
    from scipy.optimize import linprog

    res_of, cap = resource_arrays(topology)
    uses = np.zeros((len(cap), len(levels_hops)))
    for n, hops in enumerate(levels_hops):
        for u, v in hops:
            np.add.at(uses[:, n], res_of[list(topology.route(u, v))], 0.5)
    rows = np.flatnonzero(np.isfinite(cap) & (uses.sum(axis=1) > 0))
    scale = float(cap[rows].max()) if len(rows) else 1.0
    if not len(rows):  # no limited link in the way: keep stable's rates
        return np.asarray(stable_rates, float)
    bounds = [(stable_rates[0] * 1e-6 / scale, None)] + [(0, None)] * (len(sizes) - 1)
    sol = linprog(-np.asarray(sizes, float), A_ub=uses[rows], b_ub=cap[rows] / scale, bounds=bounds, method="highs")
    if sol.status != 0:
        raise PlanError("two_tree: the rate LP found no feasible rates", element="topology")
    return np.maximum(sol.x, 0.0) * scale


def two_stream_layout(size: int, rates) -> list[tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]]:
    """Byte sequences (T1, T2) of every level: stable's folded staged layout, two streams a level.

    Level L carries the complement of the union over j < L of the first
    ``floor(M V_j / (2 R_L))`` bytes of both streams of level j (what they have delivered at
    ``t_L = M / R_L``), split in two halves; both streams run at V_L / 2 and end at t_L.
    """
    out: list[tuple[list[tuple[int, int]], list[tuple[int, int]]]] = []
    total = 0.0
    for L, v in enumerate(rates):
        total += v
        taken = []
        for j in range(L):
            p = int(math.floor(size * rates[j] / (2 * total)))
            taken.extend(_prefix(out[j][0], p))
            taken.extend(_prefix(out[j][1], p))
        taken.sort()
        comp, pos = [], 0
        for off, ln in taken:
            if off > pos:
                comp.append((pos, off - pos))
            pos = max(pos, off + ln)
        if pos < size:
            comp.append((pos, size - pos))
        half = sum(ln for _, ln in comp) // 2
        first = _prefix(comp, half)
        out.append((first, _suffix(comp, half)))
    return [(tuple(a), tuple(b)) for a, b in out]


def _suffix(seq, p):
    """What is left of ``seq`` after its first ``p`` bytes."""
    out = []
    for off, ln in seq:
        if p >= ln:
            p -= ln
            continue
        out.append((off + p, ln - p))
        p = 0
    return out


@register_planner(
    "broadcast",
    "two_tree",
    summary="two-tree (double binary tree) per Stable Broadcast level: half the message on each tree, depth log2 n, LP rates",
    reference="Sanders, Speck, Träff. Two-tree algorithms for full bandwidth broadcast, reduction and scan. Parallel Computing 35(12), 2009",
)
def plan_two_tree(topology, request: Broadcast, *, seed=None, rate_tolerance: float = DEFAULT_RATE_TOLERANCE) -> Plan:
    """Plan a two-tree broadcast per level of ``stable``'s nested trees.

    ``rate_tolerance``: fraction of stable's expected aggregate bandwidth that may be given up
    to merge its levels (as in ``stable``). ``seed`` is accepted for interface uniformity;
    the algorithm is deterministic.
    """
    check_rate_tolerance(rate_tolerance)
    dests = request.resolve(topology)
    src, size = request.source, int(request.size)
    pipes, _ = stable_pipelines(topology, src, dests)
    pipes, _ = compact_nested(pipes, dests, rate_tolerance)
    levels = _levels(pipes)
    if not levels or set(levels[0]) != set(dests):
        missing = sorted(set(dests) - set(levels[0] if levels else ()))
        raise PlanError(
            f"two_tree: destinations {missing[:5]} cannot be reached with positive bandwidth over two-way links",
            element="destinations",
        )
    trees, depth = [], 0
    for members in levels:
        pair = []
        for parents in two_tree_parents(_boundaries(topology, members)):
            hops, d = _hops(members, parents, src)
            pair.append(hops)
            depth = max(depth, d)
        trees.append(pair)
    level_rates = [sum(p.rate for p in pipes if set(p.members) == set(m)) for m in levels]
    rates = _rates(topology, [a + b for a, b in trees], [len(m) for m in levels], level_rates)
    keep = [n for n in range(len(levels)) if rates[n] > 0]
    levels, trees, rates = [levels[n] for n in keep], [trees[n] for n in keep], [float(rates[n]) for n in keep]
    transfers = _transfers(trees, two_stream_layout(size, rates), rates)
    per_host = e1_rates([Pipeline(m, r) for m, r in zip(levels, rates)], dests)
    notes = {
        "levels": len(levels),
        "level_rates": rates[:64],
        "depth": depth,
        "expected_aggregate_bandwidth": float(sum(per_host.values())),
    }
    params = {"rate_tolerance": rate_tolerance}
    return Plan.broadcast(src, size, dests, transfers, planner="two_tree", params=params, notes=notes)


def _transfers(trees, layout, rates) -> list[Transfer]:
    """Pipelined, paced transfers along both trees of every level."""
    out: list[Transfer] = []
    for n, (pair, seqs, v) in enumerate(zip(trees, layout, rates)):
        for t, (hops, seq) in enumerate(zip(pair, seqs)):
            if not seq:
                continue
            into: dict[str, int] = {}
            for u, w in hops:
                out.append(
                    Transfer(u, w, seq, True, into.get(u), (), v / 2, None, False, f"level {n + 1} tree {t + 1}")
                )
                into[w] = len(out) - 1
    return out
