"""GGP — Generic Graph Peeling (Wagner & Jeannot, IPDPS 2004; INRIA RR-5077; Cohen, Jeannot,
Padoy & Wagner, IEEE TPDS 2006), as used by Jeannot & Wagner, AINA 2006.

Schedules a redistribution as KPBS steps: each step a matching of at most ``k`` transfers,
preemption allowed, a barrier between steps (see :mod:`topocast.redistribute.kpbs`).

Which reading we implemented
----------------------------
The reconstruction of docs/algorithms.md 7.3 [I/R] (which lists what each source gives:
a 2-approximation in IPDPS 2004, an 8/3-approximation for both in TPDS 2006):

1. weights: with ``beta > 0`` every block is *normalised* to whole units of ``beta``
   (``x = ceil(bytes / (beta * nic))``) — this bounds the number of steps; with ``beta = 0``
   the unit is one byte (exact integer peeling, which reaches the optimum ``eta``);
2. the bipartite graph is made *weight-regular* with common weight
   ``R = max(W_x, ceil(P_x / k))``: idle padding on real pairs (north-west corner) brings the
   total to ``k R``, then ``n1 - k`` fictitious receivers and ``n2 - k`` fictitious senders
   take every vertex's remaining slack (north-west corner; no fictitious-fictitious edge);
3. *peeling*: repeatedly take a perfect matching of the support (one exists in a
   weight-regular bipartite graph), remove its smallest weight ``s`` from each of its edges;
   the real pairs in the matching — exactly ``k`` V1-V2 pairs, as fictitious vertices must
   match into the other real side — send ``min(s * unit, what is left)`` bytes of real data
   (real data before padding). A peel with no real data is dropped. GGP takes any perfect
   matching: ours keeps the previous one and re-augments only where an edge dropped to zero.
4. [I] post-pass: consecutive steps with the same set of pairs are merged (saves beta).

Guarantees we test [I]: every step is a matching of at most ``k`` real transfers; each block
is sent exactly once; with ``beta = 0`` the transfer time equals ``eta = max(P/k, W)``;
with normalisation the cost stays below ``8/3 (eta + beta s(G))`` (the journal's ratio).

OGGP's bottleneck search (``bottleneck=True``, :func:`_bottleneck`)
--------------------------------------------------------------------
Every OGGP peel takes a *bottleneck* perfect matching of the support: its smallest weight is
as large as possible. The value is exact; among equally bottlenecked matchings any may be
taken. Per peel: the previous bottleneck ``hi`` bounds the new one from above (weights only
decrease); one Hopcroft-Karp run (scipy, C) on ``E >= hi`` rebuilds the matching there; if it
is not perfect, a threshold descent finishes it: augmenting searches from the free rows and
from the free columns at once, over the few hundred edges just below ``hi`` (Python lists),
lowering the threshold ``t`` only when one side's alternating search is closed at ``t`` —
then no augmenting path, hence (Berge) no perfect matching, exists above the best edge
leaving the closed set, and ``t`` drops to exactly that weight. When every row is matched,
``t`` is the bottleneck: a perfect matching within ``E >= t`` exists and none above. The
matching then adopted is a fresh Hopcroft-Karp matching of ``E >= t`` (a tie-break that
gives fewer peels than keeping the augmented one). Its cost is measured in
docs/experiments/redistribution.md, "Speed".
"""

from __future__ import annotations

from heapq import heappop, heappush
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ...errors import InputError
from ...plan import Redistribution
from ...redistribute.kpbs import Schedule, schedule_to_plan
from ...redistribute.matrix import Platform, resolve_platform
from ..registration import register_planner

if TYPE_CHECKING:
    from ...plan import Plan
    from ...topology import Topology

__all__ = ["ggp", "peel_schedule", "regular_graph"]


def _nw_corner(supply, demand):
    """North-west corner rule: ``(i, j, amount)`` moving ``supply`` to ``demand`` (equal totals)."""
    supply = [int(x) for x in supply]
    demand = [int(x) for x in demand]
    out = []
    i = j = 0
    while i < len(supply) and j < len(demand):
        a = min(supply[i], demand[j])
        if a > 0:
            out.append((i, j, a))
            supply[i] -= a
            demand[j] -= a
        if supply[i] == 0:
            i += 1
        if j < len(demand) and demand[j] == 0:
            j += 1
    return out


def regular_graph(x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Step (a)-(b): the weight-regular square matrix ``E`` of size ``n1 + n2 - k``.

    Returns ``(E, pad, R)``: ``E[:n1, :n2]`` = real weight + padding (``pad``), columns
    ``n2..`` are the fictitious receivers, rows ``n1..`` the fictitious senders.
    """
    n1, n2 = x.shape
    rows = x.sum(axis=1)
    cols = x.sum(axis=0)
    total = int(x.sum())
    R = int(max(rows.max(), cols.max(), -(-total // k)))
    N = n1 + n2 - k
    E = np.zeros((N, N), dtype=np.int64)
    E[:n1, :n2] = x
    # (a) padding on real pairs up to a total of k R
    slack_l = R - rows
    slack_r = R - cols
    delta = k * R - total
    pad = np.zeros_like(x)
    i = j = 0
    while delta > 0:
        while slack_l[i] == 0:
            i += 1
        while slack_r[j] == 0:
            j += 1
        a = min(slack_l[i], slack_r[j], delta)
        pad[i, j] += a
        slack_l[i] -= a
        slack_r[j] -= a
        delta -= a
    E[:n1, :n2] += pad
    # (b) fictitious vertices take the remaining slack
    for a, b, w in _nw_corner(slack_l, [R] * (n1 - k)):
        E[a, n2 + b] += w
    for a, b, w in _nw_corner([R] * (n2 - k), slack_r):
        E[n1 + a, b] += w
    return E, pad, R


def _augment(S: np.ndarray, mate_r: np.ndarray, mate_c: np.ndarray, r0: int) -> bool:
    """Augment the matching from free row ``r0`` over support ``S`` (BFS, numpy layers)."""
    row = S[r0]
    direct = np.nonzero(row & (mate_c < 0))[0]
    if direct.size:  # fast path: a free column next to r0
        c = int(direct[0])
        mate_r[r0] = c
        mate_c[c] = r0
        return True
    N = S.shape[1]
    parent = np.full(N, -1, dtype=np.int64)
    seen = np.zeros(N, dtype=bool)
    frontier = np.array([r0], dtype=np.int64)
    while frontier.size:
        sub = S[frontier]
        reach = sub.any(axis=0) & ~seen
        new = np.nonzero(reach)[0]
        if new.size == 0:
            return False
        parent[new] = frontier[sub[:, new].argmax(axis=0)]
        seen[new] = True
        free = new[mate_c[new] < 0]
        if free.size:
            c = int(free[0])
            while c != -1:
                r = int(parent[c])
                nxt = int(mate_r[r])
                mate_r[r] = c
                mate_c[c] = r
                c = nxt
            return True
        frontier = mate_c[new]
    return False


def _flip(y, par, mate_x, mate_y) -> None:
    """Augment along the parents ``par`` from ``y`` back to a root of its search: forward
    (``y`` a column, ``par`` column -> row, ``mate_x = mr``, ``mate_y = mc``) or backward (the
    same with rows and columns swapped)."""
    while y >= 0:
        x = par[y]
        nxt = mate_x[x]
        mate_x[x] = y
        mate_y[y] = x
        y = nxt


def _expand(x, ip, nbr, wt, t, par, in_other, in_mine, mate_y, queue, pend) -> int:
    """Expand node ``x`` of one side of the search over its edges >= ``t``: each unreached
    neighbour ``y`` gets parent ``x``; returns ``y`` if the other side's search reached it
    (an augmenting path), else queues ``y``'s mate and returns -1. The best edge below ``t``
    to an unreached neighbour waits in ``pend`` (max-heap of ``(-w, -j, x)``)."""
    bw = bj = -1
    for j in range(ip[x], ip[x + 1]):
        y = nbr[j]
        if par[y] >= 0:
            continue
        w = wt[j]
        if w < t:
            if w >= bw:
                bw, bj = w, j
            continue
        par[y] = x
        if in_other[y]:
            return y
        in_mine[mate_y[y]] = True
        queue.append(mate_y[y])
    if bj >= 0:
        heappush(pend, (-bw, -bj, x))
    return -1


def _best_waiting(pend, ip, nbr, wt, par):
    """Pop the best waiting edge below the threshold that still leads to an unreached node:
    ``(w, x, y)``, or None if there is none. Its node's next best edge takes its place."""
    while pend:
        nw, nj, x = heappop(pend)
        w0, j0 = -nw, -nj
        bw = bj = -1
        for j in range(ip[x], ip[x + 1]):
            w = wt[j]
            if (w < w0 or (w == w0 and j < j0)) and w >= bw and par[nbr[j]] < 0:
                bw, bj = w, j
        if bj >= 0:
            heappush(pend, (-bw, -bj, x))
        y = nbr[j0]
        if par[y] < 0:
            return w0, x, y
    return None


def _widest(t, L, roots_r, roots_c, rip, rcol, rw, cip, crow, cw, mr, mc, N):
    """Complete the matching ``mr``/``mc`` (Python lists) by threshold descent.

    Every matched edge weighs at least ``t``. Repeatedly searches an augmenting path from the
    free rows (forward) and the free columns (backward) at once over the candidate edges
    (``rip``/``rcol``/``rw``: grouped by row, ``cip``/``crow``/``cw``: by column), always
    expanding the side with fewer nodes waiting (one side is usually small). The two sides
    are the same search with rows and columns swapped (:func:`_expand`,
    :func:`_best_waiting`, :func:`_flip`). Edges below ``t`` met on the way wait in a
    max-heap per side (one entry per reached node: its best such edge; the next one is found
    when it is taken). When a side has nothing left to expand at ``t`` and its best waiting
    edge is below ``t``, its set is closed in ``E >= t``: no augmenting path exists there,
    nor for any threshold above that edge, so ``t`` drops to that edge's weight and the
    search goes on. Returns ``(t, True)`` with a perfect matching of edges >= ``t``, or
    ``(t, False)`` if a side ran out of candidate edges >= ``L`` (the candidates hold every
    edge >= ``L``, maybe a few below: the answer lies below ``L``; the caller widens them
    and calls again).
    """
    while roots_r:
        par_f = [-1] * N  # column -> the row it was reached from (forward)
        par_b = [-1] * N  # row -> the column it was reached from (backward)
        in_f = [False] * N  # rows reached forward (free rows and mates of reached columns)
        in_b = [False] * N  # columns reached backward (free columns and mates of reached rows)
        for r in roots_r:
            in_f[r] = True
        for c in roots_c:
            in_b[c] = True
        fq, bq = list(roots_r), list(roots_c)
        # per side: edges, parents, the other side's reached set, its own, mates, queue, heap
        sides = (
            (rip, rcol, rw, par_f, in_b, in_f, mc, mr, fq, []),
            (cip, crow, cw, par_b, in_f, in_b, mr, mc, bq, []),
        )
        head = [0, 0]
        meet = -1
        while meet < 0:
            s = 0 if len(fq) - head[0] <= len(bq) - head[1] else 1  # the side with less waiting
            ip, nbr, wt, par, in_other, in_mine, mate_y, _mate_x, queue, pend = sides[s]
            if head[s] < len(queue):
                x = queue[head[s]]
                head[s] += 1
                meet = _expand(x, ip, nbr, wt, t, par, in_other, in_mine, mate_y, queue, pend)
                continue
            best = _best_waiting(pend, ip, nbr, wt, par)
            if best is None:
                return t, False
            w0, x, y = best
            if w0 < L:  # (an edge that dropped below L since the candidates were taken)
                return t, False
            t = min(t, w0)  # this side's set is closed at t (or w0 >= t: a tie)
            par[y] = x
            if in_other[y]:
                meet = y
            else:
                in_mine[mate_y[y]] = True
                queue.append(mate_y[y])
        # this side's path to `meet`, then the other side's path from meet's old mate
        _, _, _, par, _, _, mate_y, mate_x, _, _ = sides[s]
        _, _, _, par_o, _, _, mate_y_o, mate_x_o, _, _ = sides[1 - s]
        z = mate_y[meet]
        _flip(meet, par, mate_x, mate_y)
        if z >= 0:
            _flip(z, par_o, mate_x_o, mate_y_o)
        roots_r = [r for r in roots_r if mr[r] < 0]
        roots_c = [c for c in roots_c if mc[c] < 0]
    return t, True


_HK_GRAPH: dict = {}  # N -> (CSR object reused, row ends)
_HK_ONES = [np.ones(1024, dtype=np.int8)]  # the CSR data (all ones), grown on demand


def _hopcroft_karp(N: int, idx: np.ndarray) -> np.ndarray:
    """Maximum matching (column of each row, -1 if free) of the edges of flat indices ``idx``
    (ascending) of an ``N x N`` matrix: scipy's Hopcroft-Karp on a reused CSR object (its
    constructor's validation costs more than the matching itself on these small graphs)."""
    from scipy.sparse import csr_matrix  # here, not at import: scipy is slow to import and most commands never need it
    from scipy.sparse.csgraph import maximum_bipartite_matching

    if N not in _HK_GRAPH:
        _HK_GRAPH[N] = (csr_matrix((N, N), dtype=np.int8), np.arange(N + 1) * N)
    A, ends = _HK_GRAPH[N]
    if _HK_ONES[0].size < idx.size:
        _HK_ONES[0] = np.ones(2 * idx.size, dtype=np.int8)
    A.data = _HK_ONES[0][: idx.size]
    A.indices = (idx % N).astype(np.int32)
    A.indptr = np.searchsorted(idx, ends).astype(np.int32)
    return maximum_bipartite_matching(A, perm_type="column")


def _bottleneck(E: np.ndarray, mate_r: np.ndarray, mate_c: np.ndarray, cap=None, work: dict | None = None) -> int:
    """Turn the matching into a *bottleneck* perfect matching of ``E`` (one whose smallest
    weight is as large as possible; OGGP) and return that weight.

    ``mate_r``/``mate_c`` (updated in place): a matching of the support (``-1``: free; edges
    that dropped to zero are allowed, they are replaced). ``cap``: a known upper bound — the
    previous peel's bottleneck (weights only decrease, so the bottleneck never increases).
    ``work``: a dict kept between the peels of one schedule (the candidate edges).

    The search (exact, threshold descent):

    1. ``hi`` = the smaller of ``cap`` and the smallest row/column maximum (the latter
       skipped while it does not bind): no perfect matching has a smallest weight above
       ``hi``. Matched edges < ``hi`` are dropped.
    2. Candidates: the edges >= a level ``L`` a little below ``hi`` (by ``hi / 32`` or twice
       the last drop; a small share of ``E``), kept for the next peels while ``hi`` stays
       within two bands of ``L`` (weights only decrease, so they remain a superset of the
       edges >= ``L``).
    3. If more than ``_HK_MIN_FREE`` rows are free, one maximum matching of ``E >= hi``
       (scipy's Hopcroft-Karp, from scratch). Perfect: the answer is ``hi``.
    4. Otherwise :func:`_widest` augments the free rows one at a time over the candidates,
       lowering the threshold ``t`` (from ``hi``) only when the alternating search from the
       free rows, or the one from the free columns, is closed at ``t``: then no augmenting
       path exists in ``E >= t'`` for any ``t'`` above the best edge leaving the closed set,
       so the matching is maximum there (Berge) and, not being perfect, no perfect matching
       exists there either; ``t`` drops to exactly that edge's weight. When every row is
       matched, all matched edges are >= ``t`` and no perfect matching exists above ``t``:
       ``t`` is the bottleneck. If the answer lies below ``L``, ``L`` is lowered (down to 1,
       the whole support) and the search resumes.
    5. Tie-break: when ``t < hi``, the matching adopted is a fresh Hopcroft-Karp matching of
       ``E >= t`` (perfect, so bottleneck ``t`` too): it gives fewer peels than keeping the
       augmented matching (docs/experiments/redistribution.md, "Speed", has the counts).
    """
    N = E.shape[0]
    ar = np.arange(N)
    work = {} if work is None else work
    hi = None if cap is None else int(cap)
    n_call = work["calls"] = work.get("calls", 0) + 1
    if hi is None or work.get("bound_binds", True) or n_call % 16 == 0:
        # the smallest row/column maximum: tighter than cap when few rows are fictitious
        # (k close to n1, n2); checked every 16th peel when it did not bind last time
        bound = int(min(E.max(axis=1).min(), E.max(axis=0).min()))
        work["bound_binds"] = hi is None or bound < hi
        hi = bound if hi is None else min(hi, bound)
    bad = E[ar, mate_r] < hi
    bad |= mate_r < 0  # (-1 read the last column)
    n_bad = int(np.count_nonzero(bad))
    if n_bad == 0:
        return hi
    if n_bad <= _HK_MIN_FREE:  # keep the rest of the matching (else Hopcroft-Karp restarts)
        drop = np.flatnonzero(bad)
        gone = mate_r[drop]
        mate_c[gone[gone >= 0]] = -1
        mate_r[drop] = -1
    flat = E.reshape(-1)
    band = max(1, hi >> _BAND_SHIFT, 2 * work.get("gap", 0))  # wider if the answers drop fast
    L = work.get("L")
    if L is not None and work.get("N") == N and hi - 2 * band <= L <= hi:
        cand = work["cand"]  # still a superset of the edges >= L: weights only decrease
    else:
        L = max(1, hi - band)
        cand = _candidates(flat, L, N)
    t = hi
    first = True
    while True:
        C, CT, structure = cand
        if first and n_bad > _HK_MIN_FREE:
            mr = _hopcroft_karp(N, C[flat[C] >= hi])
            mate_r[:] = mr
            if mr.min() >= 0:
                mate_c[mr] = ar
                work.update(L=L, cand=cand, N=N, gap=0)
                return hi
            ok = mr >= 0
            mate_c[:] = -1
            mate_c[mr[ok]] = ar[ok]
        first = False
        # one conversion to Python lists: free rows and columns, current weights, mates
        free_r = np.flatnonzero(mate_r < 0)
        free_c = np.flatnonzero(mate_c < 0)
        nf, n = free_r.size, C.size
        packed = np.concatenate((free_r, free_c, flat[C], flat[CT], mate_r, mate_c)).tolist()
        o = 2 * nf + 2 * n
        mr_l, mc_l = packed[o : o + N], packed[o + N :]
        rip, rcol, cip, crow = structure
        t, done = _widest(
            t,
            L,
            packed[:nf],
            packed[nf : 2 * nf],  # as many free columns as free rows
            rip,
            rcol,
            packed[2 * nf : 2 * nf + n],
            cip,
            crow,
            packed[2 * nf + n : o],
            mr_l,
            mc_l,
            N,
        )
        if done:
            work.update(L=L, cand=cand, N=N, gap=hi - t)
            if t < hi:  # step 5: tie-break
                mr = _hopcroft_karp(N, C[flat[C] >= t])
                if mr.min() >= 0:  # (always: the search found a perfect matching there)
                    mate_r[:] = mr
                    mate_c[mr] = ar
                    return int(t)
            mate_r[:] = mr_l
            mate_c[:] = mc_l
            return int(t)
        mate_r[:] = mr_l
        mate_c[:] = mc_l
        if L == 1:
            raise RuntimeError("no perfect matching in the support (bug)")
        L = max(1, min(L - 1, hi - 4 * max(hi - L, band)))
        cand = _candidates(flat, L, N)


def _candidates(flat: np.ndarray, L: int, N: int):
    """The edges >= ``L``: flat indices by row (row-major) and by column, and their
    structure as Python lists (row starts, columns; column starts, rows). Kept for a few
    peels: edges that drop below ``L`` stay listed, :func:`_widest` ignores them."""
    C = np.flatnonzero(flat >= L)
    rows, cols = np.divmod(C, N)
    o = np.argsort(cols, kind="stable")
    CT = C[o]
    bounds = np.arange(N + 1)
    structure = (
        np.searchsorted(rows, bounds).tolist(),
        cols.tolist(),
        np.searchsorted(cols[o], bounds).tolist(),
        rows[o].tolist(),
    )
    return C, CT, structure


_BAND_SHIFT = 5  # candidates: edges >= hi - hi / 32 (then wider if the answer is lower)
_HK_MIN_FREE = 5  # Hopcroft-Karp first when more rows than this are free


def peel_schedule(
    matrix: npt.ArrayLike,
    k: int,
    *,
    unit: int = 1,
    bottleneck: bool = False,
    merge: bool = True,
    algorithm: str = "ggp",
) -> Schedule:
    """Peel ``matrix`` (bytes) into KPBS steps (module doc, steps 1-4).

    ``unit``: bytes per weight unit (``beta * nic`` with normalisation, 1 for exact peeling);
    ``bottleneck``: use bottleneck perfect matchings (OGGP) instead of any (GGP).
    """
    m = np.asarray(matrix, dtype=np.int64)
    if k < 1:
        raise InputError(f"k must be >= 1, got {k}", element="k")
    unit = max(1, int(unit))
    act_r = np.flatnonzero(m.sum(axis=1) > 0)
    act_c = np.flatnonzero(m.sum(axis=0) > 0)
    info = {"peels": 0, "R": 0}
    if act_r.size == 0:
        return Schedule((), int(k), algorithm, unit, info)
    B = m[np.ix_(act_r, act_c)].copy()  # real bytes still to send
    n1, n2 = B.shape
    kk = int(min(k, n1, n2))
    x = -(-B // unit)  # step 1: whole units (ceil)
    E, _pad, R = regular_graph(x, kk)
    info["R"] = R
    N = E.shape[0]
    ar = np.arange(N)
    S = E > 0
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_bipartite_matching

    match = maximum_bipartite_matching(csr_matrix(S), perm_type="column")
    mate_r = np.asarray(match, dtype=np.int64)
    if (mate_r < 0).any():  # cannot happen for a weight-regular graph
        raise RuntimeError("no perfect matching in the regular graph (bug)")
    mate_c = np.full(N, -1, dtype=np.int64)
    mate_c[mate_r] = ar
    left = int(B.sum())
    raw_steps = []
    rows_real = ar[:n1]
    peels = 0
    cap = None
    work: dict = {}
    while left > 0:
        if bottleneck:
            cap = _bottleneck(E, mate_r, mate_c, cap, work)
        vals = E[ar, mate_r]
        s = int(vals.min())
        peels += 1
        # real slices of this peel
        cc = mate_r[:n1]
        sel = cc < n2
        rr = rows_real[sel]
        cc = cc[sel]
        b = B[rr, cc]
        pos = b > 0
        if pos.any():
            rr, cc, b = rr[pos], cc[pos], b[pos]
            sl = np.minimum(b, s * unit)
            B[rr, cc] = b - sl
            left -= int(sl.sum())
            raw_steps.append((rr, cc, sl))
        # subtract s along the matching; drop edges that reach zero and re-augment
        E[ar, mate_r] = vals - s
        if bottleneck:
            continue  # the next _bottleneck replaces the edges that reached zero
        zero = np.flatnonzero(vals == s)
        zc = mate_r[zero]
        S[zero, zc] = False
        mate_r[zero] = -1
        mate_c[zc] = -1
        if left == 0:
            break
        for r in zero:
            if not _augment(S, mate_r, mate_c, int(r)):
                raise RuntimeError("lost the perfect matching while peeling (bug)")
    info["peels"] = peels
    # step 4: map to original indices, merge consecutive steps with the same pairs
    steps: list[list[tuple[int, int, int]]] = []
    last_key = None
    for rr, cc, sl in raw_steps:
        key = (rr.tobytes(), cc.tobytes())
        oi = act_r[rr].tolist()
        oj = act_c[cc].tolist()
        bl = sl.tolist()
        if merge and key == last_key:
            steps[-1] = [(i, j, b0 + b1) for (i, j, b0), b1 in zip(steps[-1], bl)]
        else:
            steps.append(list(zip(oi, oj, bl)))
        last_key = key
    info["merged"] = len(raw_steps) - len(steps)
    return Schedule(tuple(tuple(st) for st in steps), int(k), algorithm, unit, info)


def unit_for(beta: float, nic: float, unit: int | None = None) -> int:
    """Bytes per weight unit: explicit ``unit``, else ``beta * nic`` (normalisation), else 1."""
    if unit is not None:
        if int(unit) < 1:
            raise InputError(f"unit must be >= 1 byte, got {unit}", element="unit")
        return int(unit)
    return max(1, int(round(beta * nic))) if beta > 0 else 1


def schedule_request(
    topology: Topology, request: Redistribution, *, bottleneck: bool, unit: int | None = None, merge: bool = True
) -> tuple[Schedule, Platform]:
    """``(schedule, platform)`` of a request on a topology."""
    plat = resolve_platform(request, topology)
    u = unit_for(request.beta, plat.nic, unit)
    sched = peel_schedule(
        request.matrix, plat.k, unit=u, bottleneck=bottleneck, merge=merge, algorithm="oggp" if bottleneck else "ggp"
    )
    return sched, plat


@register_planner(
    "redistribute",
    "ggp",
    summary="Generic Graph Peeling: steps of <= k transfers (matchings), preemption, barriers",
    reference="Wagner & Jeannot, IPDPS 2004 / Cohen, Jeannot, Padoy, Wagner, TPDS 2006 (reconstruction, docs/algorithms.md 7.3)",
)
def ggp(
    topology: Topology, request: Redistribution, *, unit: int | None = None, barrier: str = "auto", merge: bool = True
) -> Plan:
    """GGP schedule of ``request`` as a plan (``unit``: bytes per peeling unit, default beta * nic)."""
    sched, plat = schedule_request(topology, request, bottleneck=False, unit=unit, merge=merge)
    return schedule_to_plan(
        sched,
        request,
        nic=plat.nic,
        beta=request.beta,
        planner="ggp",
        params={"k": plat.k, "unit": sched.unit, "barrier": barrier, "merge": merge},
        barrier=barrier,
        notes={"peels": sched.info.get("peels"), "R": sched.info.get("R")},
    )
