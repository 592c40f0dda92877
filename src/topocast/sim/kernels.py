"""Compiled kernels of the rate room (``sim.compiled``): the solve of one group of flows,
the search for flows outside it that may lose their bottleneck, and the write-back of the
new rates, on flat arrays with numba.

Each kernel performs the operations of its scalar counterpart in ``sim.rates.SmallRates``
and ``sim.maxmin.progressive_filling_small`` in the same order (the same sums, comparisons
and roundings), so that the rates are the same to the last bit as those of the reference
core. Compiled once per machine: ``cache=True`` writes the machine code next to this file
(``__pycache__``) or, when that folder is read-only, in numba's per-user cache (or
``NUMBA_CACHE_DIR``).

Imported only by ``simulate(..., core="compiled")``: numba's import and the first compile
cost seconds that a small simulation or the runtime's start-up must not pay.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

REL = 1e-12
# a resource at this share of its capacity is saturated (as in sim.rates)
SATURATED = 1 - 1e-9


@njit(cache=True)
def group_routes(comp, res_ptr, res_idx, route_of, local_of):
    """The routes of flows ``comp`` over local resource ids (first appearance order): CSR
    (``route_ptr``, ``route_loc``) and the global id of every local one (``used``).
    ``local_of`` is scratch indexed by global resource id, -1 everywhere on entry and exit."""
    n = len(comp)
    total = 0
    for k in range(n):
        r = route_of[comp[k]]
        total += res_ptr[r + 1] - res_ptr[r]
    route_ptr = np.empty(n + 1, dtype=np.int64)
    route_loc = np.empty(total, dtype=np.int64)
    used = np.empty(total, dtype=np.int64)
    n_used = 0
    p = 0
    for k in range(n):
        route_ptr[k] = p
        r = route_of[comp[k]]
        for j in range(res_ptr[r], res_ptr[r + 1]):
            g = res_idx[j]
            if local_of[g] < 0:
                local_of[g] = n_used
                used[n_used] = g
                n_used += 1
            route_loc[p] = local_of[g]
            p += 1
    route_ptr[n] = p
    for u in range(n_used):
        local_of[used[u]] = -1
    return route_ptr, route_loc, used[:n_used].copy()


@njit(cache=True)
def _csr_by(keys_ptr, keys, n_keys, n_rows):
    """Rows ``0..n_rows-1`` each listing keys: the transpose, key -> rows (rows ascending,
    with repetitions), as CSR."""
    count = np.zeros(n_keys + 1, dtype=np.int64)
    for p in range(keys_ptr[n_rows]):
        count[keys[p] + 1] += 1
    for u in range(n_keys):
        count[u + 1] += count[u]
    fill = count[:-1].copy()
    rows = np.empty(keys_ptr[n_rows], dtype=np.int64)
    for k in range(n_rows):
        for p in range(keys_ptr[k], keys_ptr[k + 1]):
            u = keys[p]
            rows[fill[u]] = k
            fill[u] += 1
    return count, rows


@njit(cache=True)
def _children(parent):
    """The coupling forest top-down: the flows coupled to each flow (ascending), as CSR."""
    n = len(parent)
    kids_ptr = np.zeros(n + 1, dtype=np.int64)
    n_kids = 0
    for c in range(n):
        if parent[c] >= 0:
            kids_ptr[parent[c] + 1] += 1
            n_kids += 1
    for k in range(n):
        kids_ptr[k + 1] += kids_ptr[k]
    fill = kids_ptr[:-1].copy()
    kids = np.empty(n_kids, dtype=np.int64)
    for c in range(n):
        if parent[c] >= 0:
            kids[fill[parent[c]]] = c
            fill[parent[c]] += 1
    return kids_ptr, kids


@njit(cache=True)
def progressive_filling(route_ptr, route_loc, capacity, flow_cap, parent):
    """``maxmin.progressive_filling_small`` on arrays (the same rounds and operations):
    max-min rates of flows with routes over local resources, caps, and coupling ``parent``
    (-1: none)."""
    n = len(flow_cap)
    n_res = len(capacity)
    rate = np.zeros(n)
    if n == 0:
        return rate
    remaining = capacity.copy()
    users_ptr, users = _csr_by(route_ptr, route_loc, n_res, n)
    count = np.diff(users_ptr)
    kids_ptr, kids = _children(parent)
    coupled = len(kids) > 0
    active = np.ones(n, dtype=np.bool_)
    act = np.arange(n)
    n_act = n
    live = np.empty(n_res, dtype=np.int64)
    n_live = 0
    for r in range(n_res):
        if count[r]:
            live[n_live] = r
            n_live += 1
    full = REL * capacity
    newly = np.empty(n + len(users), dtype=np.int64)
    stack = np.empty(n + 1, dtype=np.int64)
    level = 0.0
    while True:
        inc = math.inf
        for q in range(n_live):
            r = live[q]
            share = remaining[r] / count[r]
            if share < inc:
                inc = share
        cap_min = flow_cap[act[0]]
        for q in range(1, n_act):
            if flow_cap[act[q]] < cap_min:
                cap_min = flow_cap[act[q]]
        x = cap_min - level
        if x < inc:
            inc = x
        if not math.isfinite(inc):
            raise ValueError("a flow crosses no shared resource and has no rate cap")
        if 0.0 > inc:
            inc = 0.0
        level += inc
        bound = level * (1 + REL)
        n_new = 0
        for q in range(n_act):
            if flow_cap[act[q]] <= bound:
                newly[n_new] = act[q]
                n_new += 1
        for q in range(n_live):
            r = live[q]
            remaining[r] -= inc * count[r]
            if remaining[r] <= full[r]:
                for p in range(users_ptr[r], users_ptr[r + 1]):
                    if active[users[p]]:
                        newly[n_new] = users[p]
                        n_new += 1
        if n_new == 0:
            # numerical corner, as in maxmin.progressive_filling
            for q in range(n_act):
                if flow_cap[act[q]] <= cap_min * (1 + 1e-9):
                    newly[n_new] = act[q]
                    n_new += 1
            if n_new == 0:
                for q in range(n_act):
                    newly[q] = act[q]
                n_new = n_act
        for q in range(n_new):
            f = newly[q]
            if active[f]:
                active[f] = False
                rate[f] = level
                for p in range(route_ptr[f], route_ptr[f + 1]):
                    count[route_loc[p]] -= 1
        if coupled:
            # every active flow coupled below a newly frozen one freezes with it
            for q in range(n_new):
                top = 0
                h = newly[q]
                for p in range(kids_ptr[h], kids_ptr[h + 1]):
                    stack[top] = kids[p]
                    top += 1
                while top:
                    top -= 1
                    f = stack[top]
                    if active[f]:
                        active[f] = False
                        rate[f] = level
                        for p in range(route_ptr[f], route_ptr[f + 1]):
                            count[route_loc[p]] -= 1
                    for p in range(kids_ptr[f], kids_ptr[f + 1]):
                        stack[top] = kids[p]
                        top += 1
        m = 0
        for q in range(n_act):
            if active[act[q]]:
                act[m] = act[q]
                m += 1
        n_act = m
        if n_act == 0:
            return rate
        m = 0
        for q in range(n_live):
            if count[live[q]]:
                live[m] = live[q]
                m += 1
        n_live = m


@njit(cache=True)
def solve_group(comp, res_ptr, res_idx, route_of, capacity, usage, rate, cap_now, coupled_now, residual, local_of):
    """``SmallRates._solve_small`` on arrays: max-min rates of flows ``comp`` (sorted,
    closed under coupling) on the capacity the other flowing transfers leave (``residual``)
    or on the whole of it. Returns the rates, the group's routes (``group_routes``), the
    coupling as positions in ``comp`` and the flows held below their upstream's rate."""
    route_ptr, route_loc, used = group_routes(comp, res_ptr, res_idx, route_of, local_of)
    n = len(comp)
    n_used = len(used)
    free = np.empty(n_used)
    if residual:
        own = np.zeros(n_used)
        for k in range(n):
            old = rate[comp[k]]
            for p in range(route_ptr[k], route_ptr[k + 1]):
                own[route_loc[p]] += old
        for u in range(n_used):
            x = capacity[used[u]] - usage[used[u]] + own[u]
            free[u] = 0.0 if 0.0 > x else x  # max(x, 0.0) as Python's max
    else:
        for u in range(n_used):
            free[u] = capacity[used[u]]
    parent = np.full(n, -1, dtype=np.int64)
    for k in range(n):
        if coupled_now[comp[k]] >= 0:
            parent[k] = np.searchsorted(comp, coupled_now[comp[k]])
    caps = cap_now[comp]
    rates = progressive_filling(route_ptr, route_loc, free, caps, parent)
    behind = np.zeros(0, dtype=np.int64)
    n_behind = 0
    for k in range(n):
        if parent[k] >= 0 and rates[k] < rates[parent[k]]:
            n_behind += 1
    if n_behind:
        behind = np.empty(n_behind, dtype=np.int64)
        n_behind = 0
        for k in range(n):
            if parent[k] >= 0 and rates[k] < rates[parent[k]]:
                behind[n_behind] = comp[k]
                n_behind += 1
    return rates, route_ptr, route_loc, used, parent, behind


@njit(cache=True)
def crowded_resources(comp, rates, route_ptr, route_loc, used, parent, capacity, usage, n_users, rate, cap_now):
    """``SmallRates._unsettled_small`` up to the flows themselves: the resources the group
    crosses that are (or become) saturated and that flows outside it cross, each with the
    rate above which a flow outside the group there may have to give way (``low``)."""
    n = len(comp)
    n_used = len(used)
    old = np.zeros(n_used)
    new = np.zeros(n_used)
    pairs = np.zeros(n_used, dtype=np.int64)
    for k in range(n):
        r_old = rate[comp[k]]
        r_new = rates[k]
        for p in range(route_ptr[k], route_ptr[k + 1]):
            u = route_loc[p]
            old[u] += r_old
            new[u] += r_new
            pairs[u] += 1
    crowded = np.empty(n_used, dtype=np.int64)
    n_crowded = 0
    for u in range(n_used):
        g = used[u]
        cap = capacity[g] * SATURATED
        if (usage[g] >= cap or usage[g] - old[u] + new[u] >= cap) and n_users[g] > pairs[u]:
            crowded[n_crowded] = u
            n_crowded += 1
    lowest = np.full(n_used, np.inf)
    if n_crowded:
        for k in range(n):
            r_new = rates[k]
            if r_new >= cap_now[comp[k]] * (1 - REL):
                continue
            if parent[k] >= 0 and r_new >= rates[parent[k]] * (1 - REL):
                continue
            for p in range(route_ptr[k], route_ptr[k + 1]):
                u = route_loc[p]
                if r_new < lowest[u]:
                    lowest[u] = r_new
    res = np.empty(n_crowded, dtype=np.int64)
    low = np.empty(n_crowded)
    for q in range(n_crowded):
        u = crowded[q]
        res[q] = used[u]
        low[q] = lowest[u] * (1 + REL)
    return res, low


@njit(cache=True)
def apply_rates(comp, rates, route_ptr, route_loc, used, rate, sent0, t0, usage, t):
    """``SmallRates._apply_small`` on arrays: the new rates of ``comp``, each changed flow's
    progress written back at time ``t`` and the usage of its resources moved; returns the
    flows whose rate changed."""
    n = len(comp)
    changed = np.empty(n, dtype=np.int64)
    delta = np.empty(n)
    m = 0
    for k in range(n):
        f = comp[k]
        new = rates[k]
        old = rate[f]
        if new != old:
            sent0[f] = sent0[f] + old * (t - t0[f])
            t0[f] = t
            rate[f] = new
            changed[m] = k
            delta[m] = new - old
            m += 1
    out = np.empty(m, dtype=np.int64)
    for q in range(m):
        k = changed[q]
        out[q] = comp[k]
        for p in range(route_ptr[k], route_ptr[k + 1]):
            usage[used[route_loc[p]]] += delta[q]
    return out
