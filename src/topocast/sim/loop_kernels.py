"""The simulator's whole event loop as one compiled step (numba), for plans without
pipelining, injection times or bytes received twice (``sim.loop`` says which plans qualify
and prepares the arrays).

Every transition is the reference engine's (``engine._Sim``), in the same order where the
order changes a number: the instant's transitions (``_instant``), the rate room's update
(``Rates._update_rates``, ``_rebalance``, ``_rebalance_one``; the group solves are the
kernels of ``sim.kernels``), the agenda (``_next_events``) and the ends of flows
(``_finish_flows``, ``_complete``). A transfer's readiness (its ``after`` predecessors done,
its sender holding its bytes) is one counter, decremented by each predecessor and by each
transfer that brings it bytes. Each transfer has at most one pending event at a time (the
end of its latency or reduction phase, or its last byte), so the agenda is two indexed
binary heaps keyed by transfer.

State lives in arrays grouped in tuples (see ``sim.loop``) so that ``run`` can stop every
few hundred events for a progress report and resume where it stopped.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .kernels import apply_rates, crowded_resources, solve_group

REL = 1e-12
# a resource at this share of its capacity is saturated (as in sim.state and sim.rates)
SATURATED = 1 - 1e-9
PENDING, QUEUED, LATENCY, FLOWING, REDUCING, DONE = range(6)
# slots of the integer state
N_DONE, EVENTS, STILL, N_FLOWING, N_STARTED, N_CHECK, N_FREED, N_PHASE_DUE, PAUSED = range(9)
# ... and counters of the work done: group solves, flows in them, solves of every flow
SOLVES, SOLVED_FLOWS, FULL_SOLVES = range(9, 12)
# ... and tuning.LOCAL_COMPONENT_MIN and LOCAL_COMPONENT_LIMIT (read once per simulation)
COMPONENT_MIN, COMPONENT_LIMIT = range(12, 14)
# what run returns
FINISHED, PAUSE, DEADLOCK, STUCK = range(4)


@njit(cache=True, inline="always")
def _less(key, a, b):
    return key[a] < key[b] or (key[a] == key[b] and a < b)


@njit(cache=True, inline="always")
def _sift(heap, pos, key, k, size):
    """Restore the heap order around position ``k`` (up, then down)."""
    i = heap[k]
    while k > 0:
        p = (k - 1) >> 1
        j = heap[p]
        if not _less(key, i, j):
            break
        heap[k] = j
        pos[j] = k
        k = p
    while True:
        c = 2 * k + 1
        if c >= size:
            break
        if c + 1 < size and _less(key, heap[c + 1], heap[c]):
            c += 1
        j = heap[c]
        if not _less(key, j, i):
            break
        heap[k] = j
        pos[j] = k
        k = c
    heap[k] = i
    pos[i] = k


@njit(cache=True, inline="always")
def heap_set(heap, pos, key, size, i, when):
    """Transfer ``i``'s event is due at ``when`` (replacing the one it had). The heap is
    four arrays (entries, each transfer's position or -1, keys, the size in a 1-array),
    passed one by one: a tuple argument costs the hot loop a reference count per member
    and call."""
    key[i] = when
    if pos[i] < 0:
        heap[size[0]] = i
        pos[i] = size[0]
        size[0] += 1
    _sift(heap, pos, key, pos[i], size[0])


@njit(cache=True, inline="always")
def heap_remove(heap, pos, key, size, i):
    k = pos[i]
    if k < 0:
        return
    pos[i] = -1
    size[0] -= 1
    if k < size[0]:
        last = heap[size[0]]
        heap[k] = last
        pos[last] = k
        _sift(heap, pos, key, k, size[0])


@njit(cache=True, inline="always")
def heap_first(heap, key, size):
    return key[heap[0]] if size[0] else math.inf


@njit(cache=True)
def _flows_over(r, tr_next, route_head, rp_next, res_head, rp_route, n_users):
    """The flowing transfers over resource ``r`` (one entry per crossing): the routes in use
    over it (``sim.loop``'s ``mem``), and each route's flowing transfers. Arrays one by one:
    a tuple argument costs the hot loop a reference count per member and call."""
    out = np.empty(n_users[r], dtype=np.int64)
    m = 0
    q = res_head[r]
    while q >= 0:
        i = route_head[rp_route[q]]
        while i >= 0:
            out[m] = i
            m += 1
            i = tr_next[i]
        q = rp_next[q]
    return out[:m]


@njit(cache=True)
def _join(flows, net, mem, ist):
    """Each flowing transfer of ``flows`` in turn joins the flowing set, its route's flows
    and (first of its route) the routes in use over each resource. (Batches, here and in
    ``_leave`` and ``_complete``: a tuple argument costs the hot loop a reference count per
    member and call.)"""
    res_ptr, res_idx, route_of = net[0], net[1], net[2]
    flowing, flow_pos, tr_next, tr_prev, route_head, route_cnt, rp_next, rp_prev, res_head, _ = mem
    for i in flows:
        route = route_of[i]
        flow_pos[i] = ist[N_FLOWING]
        flowing[ist[N_FLOWING]] = i
        ist[N_FLOWING] += 1
        if route_cnt[route] == 0:
            for q in range(res_ptr[route], res_ptr[route + 1]):
                r = res_idx[q]
                rp_prev[q] = -1
                rp_next[q] = res_head[r]
                if res_head[r] >= 0:
                    rp_prev[res_head[r]] = q
                res_head[r] = q
        route_cnt[route] += 1
        tr_prev[i] = -1
        tr_next[i] = route_head[route]
        if route_head[route] >= 0:
            tr_prev[route_head[route]] = i
        route_head[route] = i


@njit(cache=True)
def _leave(flows, net, mem, ist):
    """The reverse of ``_join``."""
    res_ptr, res_idx, route_of = net[0], net[1], net[2]
    flowing, flow_pos, tr_next, tr_prev, route_head, route_cnt, rp_next, rp_prev, res_head, _ = mem
    for i in flows:
        route = route_of[i]
        ist[N_FLOWING] -= 1
        last = flowing[ist[N_FLOWING]]
        flowing[flow_pos[i]] = last
        flow_pos[last] = flow_pos[i]
        if tr_prev[i] >= 0:
            tr_next[tr_prev[i]] = tr_next[i]
        else:
            route_head[route] = tr_next[i]
        if tr_next[i] >= 0:
            tr_prev[tr_next[i]] = tr_prev[i]
        route_cnt[route] -= 1
        if route_cnt[route] == 0:
            for q in range(res_ptr[route], res_ptr[route + 1]):
                if rp_prev[q] >= 0:
                    rp_next[rp_prev[q]] = rp_next[q]
                else:
                    res_head[res_idx[q]] = rp_next[q]
                if rp_next[q] >= 0:
                    rp_prev[rp_next[q]] = rp_prev[q]


@njit(cache=True)
def _complete(done, t, tr, fl, buf, ist):
    """REDUCING or FLOWING -> DONE (``Transfers._complete``) for each transfer of ``done``
    in turn: what waited for it, or for the bytes it brings, may start."""
    dep_ptr, dep_idx, prov_ptr, prov_seg, seg_owner = tr[4], tr[5], tr[6], tr[7], tr[8]
    status, t_done, need, seg_done = fl[0], fl[2], fl[7], fl[8]
    to_check = buf[0]
    for i in done:
        status[i] = DONE
        t_done[i] = t
        ist[N_DONE] += 1
        for p in range(dep_ptr[i], dep_ptr[i + 1]):
            d = dep_idx[p]
            need[d] -= 1
            if need[d] == 0:
                to_check[ist[N_CHECK]] = d
                ist[N_CHECK] += 1
        # its receiver now holds the segments it brings: the transfers sending them may start
        for p in range(prov_ptr[i], prov_ptr[i + 1]):
            g = prov_seg[p]
            if not seg_done[g]:
                seg_done[g] = True
                d = seg_owner[g]
                need[d] -= 1
                if need[d] == 0:
                    to_check[ist[N_CHECK]] = d
                    ist[N_CHECK] += 1


@njit(cache=True)
def _instant(t, net, tr, fl, rr, mem, ph, buf, ist):
    """Every transition at time ``t`` (``engine._Sim._instant``): ready transfers enter
    their latency phase, phases that end now end (flows start, reductions complete)."""
    res_ptr, res_idx, route_of = net[0], net[1], net[2]
    latency = tr[1]
    status, flow_start, sent0, t0, rate = fl[0], fl[1], fl[3], fl[4], fl[5]
    n_users = rr[1]
    to_check, started, phase_due = buf[0], buf[1], buf[4]
    p_heap, p_pos, p_key, p_size = ph
    limit = t * (1 + REL)
    while True:
        changed = False
        while ist[N_CHECK]:
            ist[N_CHECK] -= 1
            i = to_check[ist[N_CHECK]]
            if status[i] == PENDING:
                status[i] = LATENCY
                heap_set(p_heap, p_pos, p_key, p_size, i, t + latency[i])
                changed = True
        while p_size[0] and heap_first(p_heap, p_key, p_size) <= limit:
            i = p_heap[0]
            heap_remove(p_heap, p_pos, p_key, p_size, i)
            phase_due[ist[N_PHASE_DUE]] = i
            ist[N_PHASE_DUE] += 1
        due = phase_due[: ist[N_PHASE_DUE]]
        reducing = due[status[due] == REDUCING]
        first_started = ist[N_STARTED]
        for i in due:
            changed = True
            if status[i] == LATENCY:
                status[i] = FLOWING
                flow_start[i] = t
                sent0[i] = 0.0
                t0[i] = t
                rate[i] = 0.0
                route = route_of[i]
                for q in range(res_ptr[route], res_ptr[route + 1]):
                    n_users[res_idx[q]] += 1
                started[ist[N_STARTED]] = i
                ist[N_STARTED] += 1
        _join(started[first_started : ist[N_STARTED]], net, mem, ist)
        _complete(reducing, t, tr, fl, buf, ist)
        ist[N_PHASE_DUE] = 0
        if not changed:
            return


@njit(cache=True)
def _resolve(j, t, sent0, t0, rate, q_ptr, q_pos, q_time, q_cur, final):
    """The times at which flow ``j`` passed its coverage thresholds (bytes of its
    sequence) up to time ``t``, from its progress since its last rate change; ``final``:
    it ends now, every threshold is passed (``sim.loop``'s ``cov``: per flow, the positions
    of its thresholds, CSR; the time each was passed; the next one to pass)."""
    k = q_cur[j]
    if k >= q_ptr[j + 1]:
        return
    r = rate[j]
    now = sent0[j] + r * (t - t0[j])
    while k < q_ptr[j + 1] and (final or q_pos[k] <= now):
        w = t0[j] + (q_pos[k] - sent0[j]) / r if r > 0 else t
        q_time[k] = t if final and w > t else w
        k += 1
    q_cur[j] = k


@njit(cache=True, inline="always")
def _pinned(g, rate, cap_now):
    return rate[g] >= cap_now[g] * (1 - REL)


@njit(cache=True)
def _rebalance_one(f, t, net, fl, rr, mem, cov):
    """``Rates._rebalance_one``: 1 if flow ``f`` alone took a new rate, 0 if it kept its rate,
    -1 when the general case must decide."""
    tr_next, route_head, rp_next, res_head, rp_route = mem[2], mem[4], mem[6], mem[8], mem[9]
    res_ptr, res_idx, route_of, capacity, route_simple = net[0], net[1], net[2], net[3], net[4]
    sent0, t0, rate, cap_now = fl[3], fl[4], fl[5], fl[6]
    usage, n_users = rr[0], rr[1]
    route = route_of[f]
    if not route_simple[route]:
        return -1
    old = rate[f]
    new = cap_now[f]
    for q in range(res_ptr[route], res_ptr[route + 1]):
        r = res_idx[q]
        x = capacity[r] - usage[r] + old
        x = 0.0 if 0.0 > x else x
        new = x if x < new else new
    if math.isinf(new):
        return -1
    low = math.inf if new >= cap_now[f] * (1 - REL) else new * (1 + REL)
    for q in range(res_ptr[route], res_ptr[route + 1]):
        r = res_idx[q]
        sat = capacity[r] * SATURATED
        if usage[r] >= sat or usage[r] - old + new >= sat:
            for g in _flows_over(r, tr_next, route_head, rp_next, res_head, rp_route, n_users):
                if g != f and (rate[g] > low or not _pinned(g, rate, cap_now)):
                    return -1
    if new == old:
        return 0
    if cov[3][f] < cov[0][f + 1]:
        _resolve(f, t, sent0, t0, rate, cov[0], cov[1], cov[2], cov[3], False)
    sent0[f] = sent0[f] + old * (t - t0[f])
    t0[f] = t
    for q in range(res_ptr[route], res_ptr[route + 1]):
        usage[res_idx[q]] += new - old
    rate[f] = new
    return 1


@njit(cache=True)
def _rebalance(touched, t, net, fl, rr, mem, cov, marks, ist):
    """``Rates._rebalance`` without couplings: max-min rates after a change at flows
    ``touched``; returns the flows whose rate changed."""
    tr_next, route_head, rp_next, res_head, rp_route = mem[2], mem[4], mem[6], mem[8], mem[9]
    res_ptr, res_idx, route_of, capacity = net[0], net[1], net[2], net[3]
    sent0, t0, rate, cap_now = fl[3], fl[4], fl[5], fl[6]
    usage, n_users, coupled_now, local_of = rr
    flowing = mem[0]
    in_group, in_more = marks
    n_flow = ist[N_FLOWING]
    limit = max(min(max(n_flow // 4, ist[COMPONENT_MIN]), ist[COMPONENT_LIMIT]), n_flow // 8)
    budget = 2 * n_flow + 64
    group = np.empty(n_flow, dtype=np.int64)
    if len(touched) <= limit:
        ng = len(touched)
        group[:ng] = touched
    else:
        ng = n_flow
        group[:] = flowing[:n_flow]
    if ng == 1:
        one = _rebalance_one(group[0], t, net, fl, rr, mem, cov)
        if one >= 0:
            return group[:one].copy()
    for k in range(ng):
        in_group[group[k]] = True
    more = np.empty(n_flow, dtype=np.int64)
    solved = 0
    while True:
        if ng > limit or solved > budget:
            comp = np.sort(flowing[:n_flow])
            ist[FULL_SOLVES] += 1
            ist[SOLVED_FLOWS] += n_flow
            rates, rp, rl, used, parent, _ = solve_group(
                comp, res_ptr, res_idx, route_of, capacity, usage, rate, cap_now, coupled_now, False, local_of
            )
            break
        solved += ng
        ist[SOLVES] += 1
        ist[SOLVED_FLOWS] += ng
        comp = np.sort(group[:ng])
        rates, rp, rl, used, parent, _ = solve_group(
            comp, res_ptr, res_idx, route_of, capacity, usage, rate, cap_now, coupled_now, True, local_of
        )
        crowded, lows = crowded_resources(comp, rates, rp, rl, used, parent, capacity, usage, n_users, rate, cap_now)
        nm = 0
        for c in range(len(crowded)):
            low = lows[c]
            for g in _flows_over(crowded[c], tr_next, route_head, rp_next, res_head, rp_route, n_users):
                if not in_group[g] and not in_more[g] and (rate[g] > low or not _pinned(g, rate, cap_now)):
                    in_more[g] = True
                    more[nm] = g
                    nm += 1
        if nm == 0:
            break
        for k in range(nm):
            in_more[more[k]] = False
            in_group[more[k]] = True
            group[ng] = more[k]
            ng += 1
    for k in range(ng):
        in_group[group[k]] = False
    q_ptr, q_pos, q_time, q_cur = cov
    for k in range(len(comp)):
        # (most flows pass no threshold: the test saves them the call)
        if rates[k] != rate[comp[k]] and q_cur[comp[k]] < q_ptr[comp[k] + 1]:
            _resolve(comp[k], t, sent0, t0, rate, q_ptr, q_pos, q_time, q_cur, False)
    return apply_rates(comp, rates, rp, rl, used, rate, sent0, t0, usage, t)


@njit(cache=True)
def _schedule(flows, t, tr, fl, fh):
    """``Events._schedule_one`` of each flow of ``flows`` without upstream: its last
    byte's time."""
    size = tr[0]
    status, sent0, t0, rate = fl[0], fl[3], fl[4], fl[5]
    heap, pos, key, n = fh
    for i in flows:
        if status[i] != FLOWING:
            continue
        r = rate[i]
        if r > 0:
            s = sent0[i] + r * (t - t0[i])
            dt = (size[i] - s) / r
            heap_set(heap, pos, key, n, i, t + (0.0 if 0.0 > dt else dt))
        else:
            heap_remove(heap, pos, key, n, i)


@njit(cache=True)
def _update_rates(t, net, tr, fl, rr, mem, cov, fh, buf, marks, ist):
    """``Rates._update_rates`` without couplings: started flows take their cap, flows on
    saturated resources that ended flows freed may gain, the rates are recomputed where they
    can change, and every flow whose rate changed (or that started) gets its next event."""
    tr_next, route_head, rp_next, res_head, rp_route = mem[2], mem[4], mem[6], mem[8], mem[9]
    flow_cap = tr[3]
    rate, cap_now = fl[5], fl[6]
    n_users = rr[1]
    started, freed, freed_mark = buf[1], buf[2], buf[3]
    in_touch = marks[1]
    touched = np.empty(ist[N_FLOWING], dtype=np.int64)
    nt = 0
    for k in range(ist[N_STARTED]):
        f = started[k]
        cap = flow_cap[f]
        cap_now[f] = cap
        r = rate[f]
        keeps = r <= cap * (1 + REL) and (r >= cap * (1 - REL) or r >= math.inf)
        if not keeps and not in_touch[f]:
            in_touch[f] = True
            touched[nt] = f
            nt += 1
    for k in range(ist[N_FREED]):
        r = freed[k]
        freed_mark[r] = False
        for g in _flows_over(r, tr_next, route_head, rp_next, res_head, rp_route, n_users):
            if not in_touch[g] and not _pinned(g, rate, cap_now):
                in_touch[g] = True
                touched[nt] = g
                nt += 1
    ist[N_FREED] = 0
    for k in range(nt):
        in_touch[touched[k]] = False
    if nt:
        _schedule(_rebalance(touched[:nt], t, net, fl, rr, mem, cov, marks, ist), t, tr, fl, fh)
    _schedule(started[: ist[N_STARTED]], t, tr, fl, fh)
    ist[N_STARTED] = 0


@njit(cache=True)
def _finish_flows(idx, t, net, tr, fl, rr, mem, cov, fh, ph, buf, ist):
    """``Transfers._finish_flows`` of flows without downstream (``idx`` ascending)."""
    res_ptr, res_idx, route_of, capacity = net[0], net[1], net[2], net[3]
    size, reduce_delay = tr[0], tr[2]
    status, sent0, t0, rate, cap_now = fl[0], fl[3], fl[4], fl[5], fl[6]
    usage, n_users = rr[0], rr[1]
    freed, freed_mark = buf[2], buf[3]
    f_heap, f_pos, f_key, f_size = fh
    q_ptr, q_pos, q_time, q_cur = cov
    for i in idx:
        if q_cur[i] < q_ptr[i + 1]:
            _resolve(i, t, sent0, t0, rate, q_ptr, q_pos, q_time, q_cur, True)
        sent0[i] = size[i]
        t0[i] = t
        heap_remove(f_heap, f_pos, f_key, f_size, i)
    # a saturated resource they leave may let the flows left on it go faster
    for i in idx:
        for q in range(res_ptr[route_of[i]], res_ptr[route_of[i] + 1]):
            r = res_idx[q]
            if usage[r] >= capacity[r] * SATURATED and not freed_mark[r]:
                freed_mark[r] = True
                freed[ist[N_FREED]] = r
                ist[N_FREED] += 1
    for i in idx:
        for q in range(res_ptr[route_of[i]], res_ptr[route_of[i] + 1]):
            usage[res_idx[q]] += -rate[i]
            n_users[res_idx[q]] -= 1
    _leave(idx, net, mem, ist)
    p_heap, p_pos, p_key, p_size = ph
    for i in idx:
        rate[i] = 0.0
        cap_now[i] = math.nan
        if reduce_delay[i] > 0:
            status[i] = REDUCING
            heap_set(p_heap, p_pos, p_key, p_size, i, t + reduce_delay[i])
    _complete(idx[reduce_delay[idx] <= 0], t, tr, fl, buf, ist)


@njit(cache=True)
def run(net, tr, fl, rr, mem, cov, fh, ph, buf, marks, clock, ist, report_every, still_limit):
    """The event loop (``engine._Sim.run``) from where the state stands; returns FINISHED,
    PAUSE (every ``report_every`` events, 0: never), DEADLOCK (nothing left to happen) or
    STUCK (time stands still)."""
    n = len(tr[0])
    phase_due = buf[4]
    f_heap, f_pos, f_key, f_size = fh
    p_heap, p_pos, p_key, p_size = ph
    while True:
        if ist[PAUSED]:
            ist[PAUSED] = 0
        else:
            ist[EVENTS] += 1
            if report_every and ist[EVENTS] % report_every == 0:
                ist[PAUSED] = 1
                return PAUSE
        t = clock[0]
        _instant(t, net, tr, fl, rr, mem, ph, buf, ist)
        if ist[N_DONE] == n:
            return FINISHED
        _update_rates(t, net, tr, fl, rr, mem, cov, fh, buf, marks, ist)
        first = min(heap_first(f_heap, f_key, f_size), heap_first(p_heap, p_key, p_size))
        if not math.isfinite(first):
            return DEADLOCK
        dt = first - t
        dt = 0.0 if 0.0 > dt else dt
        limit = t + dt + dt * 1e-12 + 1e-300
        finished = np.empty(f_size[0], dtype=np.int64)
        nf = 0
        while f_size[0] and heap_first(f_heap, f_key, f_size) <= limit:
            i = f_heap[0]
            heap_remove(f_heap, f_pos, f_key, f_size, i)
            finished[nf] = i
            nf += 1
        while p_size[0] and heap_first(p_heap, p_key, p_size) <= limit:
            i = p_heap[0]
            heap_remove(p_heap, p_pos, p_key, p_size, i)
            phase_due[ist[N_PHASE_DUE]] = i
            ist[N_PHASE_DUE] += 1
        clock[0] = t + dt
        ist[STILL] = ist[STILL] + 1 if clock[0] == t else 0
        if ist[STILL] > still_limit:
            return STUCK
        if nf:
            _finish_flows(np.sort(finished[:nf]), clock[0], net, tr, fl, rr, mem, cov, fh, ph, buf, ist)


@njit(cache=True)
def _grown(arr, size):
    """``arr`` with room for ``size`` entries (doubled when short)."""
    if size <= len(arr):
        return arr
    out = np.empty(max(size, 2 * len(arr)), dtype=arr.dtype)
    out[: len(arr)] = arr
    return out


@njit(cache=True)
def cover_segments(q_host, q_start, q_end, in_ptr, in_start, in_end, init_ptr, init_start, init_end):
    """Each query range ``[q_start, q_end)`` at host ``q_host``, cut where the pieces that
    host receives (``in_*``: per host as CSR, sorted by start) and what it holds from the
    start (``init_*``: merged, per host) begin or end: the segments not held from the start
    (their query and end) and, per segment, the received pieces covering it (pairs)."""
    seg_query = np.empty(len(q_host) + 16, dtype=np.int64)
    seg_end = np.empty(len(q_host) + 16, dtype=np.int64)
    car_seg = np.empty(len(q_host) + 16, dtype=np.int64)
    car_piece = np.empty(len(q_host) + 16, dtype=np.int64)
    n_seg = n_car = 0
    reach = np.empty(len(in_end), dtype=np.int64)  # running maximum of the ends, per host
    for h in range(len(in_ptr) - 1):
        top = -1
        for p in range(in_ptr[h], in_ptr[h + 1]):
            top = max(top, in_end[p])
            reach[p] = top
    for k in range(len(q_host)):
        h, a, b = q_host[k], q_start[k], q_end[k]
        lo, hi = in_ptr[h], in_ptr[h + 1]
        p0 = lo + np.searchsorted(reach[lo:hi], a, side="right")
        p1 = lo + np.searchsorted(in_start[lo:hi], b, side="left")
        i0, i1 = init_ptr[h], init_ptr[h + 1]
        j = i0 + np.searchsorted(init_end[i0:i1], a, side="right")
        j1 = i0 + np.searchsorted(init_start[i0:i1], b, side="left")
        cuts = np.empty(2 + 2 * max(p1 - p0, 0) + 2 * max(j1 - j, 0), dtype=np.int64)
        m = 0
        for x in (a, b):
            cuts[m] = x
            m += 1
        for p in range(p0, p1):
            for x in (in_start[p], in_end[p]):
                if a < x < b:
                    cuts[m] = x
                    m += 1
        for q in range(j, j1):
            for x in (init_start[q], init_end[q]):
                if a < x < b:
                    cuts[m] = x
                    m += 1
        cuts = np.unique(cuts[:m])
        active = np.empty(max(p1 - p0, 1), dtype=np.int64)
        n_act = 0
        nxt = p0
        for s in range(len(cuts) - 1):
            c, d = cuts[s], cuts[s + 1]
            while j < j1 and init_end[j] <= c:
                j += 1
            if j < j1 and init_start[j] <= c:
                continue  # held from the start
            while nxt < p1 and in_start[nxt] <= c:
                active[n_act] = nxt
                n_act += 1
                nxt += 1
            kept = 0
            for q in range(n_act):
                if in_end[active[q]] > c:
                    active[kept] = active[q]
                    kept += 1
            n_act = kept
            seg_query = _grown(seg_query, n_seg + 1)
            seg_end = _grown(seg_end, n_seg + 1)
            seg_query[n_seg] = k
            seg_end[n_seg] = d
            car_seg = _grown(car_seg, n_car + n_act)
            car_piece = _grown(car_piece, n_car + n_act)
            for q in range(n_act):
                car_seg[n_car] = n_seg
                car_piece[n_car] = active[q]
                n_car += 1
            n_seg += 1
    return seg_query[:n_seg], seg_end[:n_seg], car_seg[:n_car], car_piece[:n_car]
