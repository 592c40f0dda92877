"""An independent, slow, obviously-correct reference for ``topocast.sim.simulate``.

Written from docs/design.md "Simulator" and the docstring of ``topocast.plan`` only (not from
``sim/engine.py``), for small plans in tests. Everything is exact rational arithmetic
(``fractions.Fraction``): no tolerances, no snapping, so every equality below is exact.

Semantics implemented
---------------------
* A transfer is *ready* when every transfer in ``after`` is done and

  - store-and-forward (or pipelined whose sender holds the bytes from the start): its sender
    holds every byte it sends, from ``initial`` or from *completed* transfers;
  - pipelined with an upstream ``u`` (explicit, else the first transfer into the sender whose
    sequence contains ours contiguously, found by ``topocast.check.find_upstream``): ``u`` has
    finished, or is flowing and has delivered ``base + min(chunk, size)`` bytes of its
    sequence, where ``base`` is our offset in ``u``'s sequence.
* A sender injects its ready transfers one at a time in plan order; each injection occupies
  the sender for Δ(src, dst); then the transfer waits its route's latency (no bandwidth), then
  flows.
* Flowing transfers share bandwidth max-min fairly (water-filling below) under: resource
  capacities (one per direction of a duplex link, one per cable of a shared link, counted
  once per crossing), per-flow caps (rate_cap, fatpipe bandwidths), and pipelining: a
  pipelined transfer's sent bytes never exceed ``A = clamp(sent_u - base - chunk, 0, size)``
  while its upstream is flowing (``size`` once the upstream has delivered everything); when
  ``sent == A`` its rate is at most ``dA/dt`` (0 on the flat part, the upstream's rate on the
  slope).
* A host holds a byte from the first moment any transfer delivers it (a transfer delivers its
  sequence in order, fluidly); its completion time is when it holds every wanted byte. This
  is computed after the run from each transfer's exact piecewise-linear progress.
* ``reduce=True`` transfers keep the receiver busy ``nbytes * gamma(dst)`` after the data
  arrived before they count as complete (only used for readiness/after here).
"""

from __future__ import annotations

from collections import defaultdict
from fractions import Fraction as F

from topocast.check import find_upstream

INF = None  # "no bound" marker for caps


class ReferenceError_(Exception):
    pass


def maxmin(res_of: dict, capacity: dict, cap: dict, parent: dict) -> dict:
    """Exact max-min fair rates.

    res_of[f]: list of resources f crosses (repetition = crosses twice);
    capacity[r]: Fraction; cap[f]: Fraction or None; parent[f]: flow that bounds f or None.
    """
    active = set(res_of)
    rate = {}
    remaining = dict(capacity)
    level = F(0)
    while active:
        count = defaultdict(int)
        for f in active:
            for r in res_of[f]:
                count[r] += 1
        incs = [remaining[r] / c for r, c in count.items()]
        incs += [cap[f] - level for f in active if cap[f] is not None]
        if not incs:
            raise ReferenceError_("unbounded flow")
        inc = min(incs)
        assert inc >= 0
        level += inc
        for r, c in count.items():
            remaining[r] -= inc * c
        frozen = {f for f in active if cap[f] is not None and cap[f] == level}
        frozen |= {f for f in active if any(remaining[r] == 0 for r in res_of[f])}
        # children of frozen flows freeze with them (transitively)
        grew = True
        while grew:
            grew = False
            for f in active:
                if f not in frozen and parent.get(f) is not None and parent[f] not in active:
                    frozen.add(f)
                    grew = True
                if f not in frozen and parent.get(f) in frozen:
                    frozen.add(f)
                    grew = True
        assert frozen, "water-filling made no progress"
        for f in frozen:
            rate[f] = level
        active -= frozen
    return rate


def _fr(x) -> F:
    return F(x)  # exact value of a float / int


def reference_simulate(plan, topo, chunk_size=None, max_events=100000):
    """Return ``(host_time: {host: float}, transfer_times: [(flow_start, done)])``."""
    tr = plan.transfers
    n = len(tr)
    chunk = F(plan.chunk_size if chunk_size is None else chunk_size)
    size = [F(t.nbytes) for t in tr]

    # Routes -> resources, caps, latency (from the link list, not the engine's arrays).
    res_of, fcap, lat = [], [], []
    capacity = {}
    for t in tr:
        if t.path is None:
            nodes = [t.src]
            for lid in topo.route(t.src, t.dst):
                nodes.append(topo.links[lid].dst)
        else:
            nodes = list(t.path)
        res, cap, la = [], None, F(0)
        for x, y in zip(nodes, nodes[1:]):
            link = topo.links[topo.link_id(x, y)]
            pl = topo.physical_links[link.physical]
            la += _fr(link.latency)
            if link.sharing == "fatpipe":
                b = _fr(link.bandwidth)
                cap = b if cap is None else min(cap, b)
            elif link.sharing == "shared":
                # one capacity for the cable (its declared bandwidth); the flows of each
                # direction together are also limited by that direction's bandwidth
                r = ("cable", link.physical)
                capacity[r] = _fr(pl.bandwidth)
                res.append(r)
                r = ("dir", x, y)
                capacity[r] = _fr(link.bandwidth)
                res.append(r)
            else:
                r = ("dir", x, y)
                capacity[r] = _fr(link.bandwidth)
                res.append(r)
        if t.rate_cap is not None:
            rc = _fr(t.rate_cap)
            cap = rc if cap is None else min(cap, rc)
        res_of.append(res)
        fcap.append(cap)
        lat.append(la)

    incoming = defaultdict(list)
    for i, t in enumerate(tr):
        incoming[t.dst].append(i)
    up = [None] * n
    base = [F(0)] * n
    for i, t in enumerate(tr):
        if t.pipelined:
            u, off = find_upstream(plan, i, incoming)
            if u is not None:
                up[i], base[i] = u, F(off)

    # Holdings from initial + completed transfers, as sets of (a, b) merged lazily.
    held = defaultdict(list)
    for h, rs in plan.initial.items():
        held[h].extend((o, o + l) for o, l in rs)

    def covers(h, ranges):
        segs = sorted(held[h])
        for o, l in ranges:
            a, b = o, o + l
            for s, e in segs:
                if s <= a < e:
                    a = e
                if a >= b:
                    break
            if a < b:
                return False
        return True

    PENDING, QUEUED, LAT, FLOW, RED, DONE = range(6)
    st = [PENDING] * n
    sent = [F(0)] * n
    timer = [None] * n  # end of LAT / RED
    busy_until = defaultdict(lambda: F(0))
    t_start = [None] * n
    t_done = [None] * n
    traj = [[] for _ in range(n)]  # (time, sent) breakpoints while flowing
    gamma = [F(0)] * n
    for i, t in enumerate(tr):
        if t.reduce:
            gamma[i] = size[i] * _fr(topo.gamma(t.dst))
    now = F(0)

    def finished_flow(u):
        return st[u] in (RED, DONE)

    def avail(i):
        u = up[i]
        if u is None or finished_flow(u):
            return size[i]
        if st[u] != FLOW:
            return F(0)
        return min(max(sent[u] - base[i] - chunk, F(0)), size[i])

    def ready(i):
        t = tr[i]
        if any(st[a] != DONE for a in t.after):
            return False
        u = up[i]
        if u is not None:
            if finished_flow(u):
                return True
            return st[u] == FLOW and sent[u] >= base[i] + min(chunk, size[i])
        return covers(t.src, t.ranges)

    events = 0
    while True:
        # ---- instantaneous transitions at `now`, to a fixpoint
        changed = True
        while changed:
            changed = False
            for i in range(n):
                if st[i] == PENDING and ready(i):
                    st[i] = QUEUED
                    changed = True
            for i in range(n):
                if st[i] == LAT and timer[i] <= now:
                    st[i] = FLOW
                    t_start[i] = now
                    traj[i].append((now, F(0)))
                    changed = True
                if st[i] == FLOW and sent[i] == size[i]:
                    if gamma[i] > 0:
                        st[i] = RED
                        timer[i] = now + gamma[i]
                    else:
                        st[i] = DONE
                        t_done[i] = now
                        held[tr[i].dst].extend((o, o + l) for o, l in tr[i].ranges)
                    changed = True
                if st[i] == RED and timer[i] <= now:
                    st[i] = DONE
                    t_done[i] = now
                    held[tr[i].dst].extend((o, o + l) for o, l in tr[i].ranges)
                    changed = True
            if changed:
                continue
            # inject only once every transfer that becomes ready at `now` is known, so
            # transfers ready at the same instant go in plan order
            for i in range(n):  # plan order
                if st[i] == QUEUED and busy_until[tr[i].src] <= now:
                    d = _fr(topo.injection(tr[i].src, tr[i].dst))
                    busy_until[tr[i].src] = now + d
                    st[i] = LAT
                    timer[i] = now + d + lat[i]
                    changed = True
        if all(s == DONE for s in st):
            break
        events += 1
        if events > max_events:
            raise ReferenceError_("too many events")

        # ---- rates
        flowing = [i for i in range(n) if st[i] == FLOW]
        caps, parent = {}, {}
        for i in flowing:
            c = fcap[i]
            u = up[i]
            if u is not None and st[u] == FLOW and sent[i] == avail(i) < size[i]:
                if sent[u] - base[i] - chunk < 0:  # flat part: nothing new to send yet
                    c = F(0)
                else:
                    parent[i] = u
            caps[i] = c
        rate = maxmin({i: res_of[i] for i in flowing}, capacity, caps, parent) if flowing else {}

        # ---- next event (any breakpoint of any piecewise-linear quantity)
        cand = []
        for i in range(n):
            if st[i] in (LAT, RED):
                cand.append(timer[i] - now)
        for i in range(n):
            if st[i] == QUEUED:
                cand.append(busy_until[tr[i].src] - now)
        for i in flowing:
            r = rate[i]
            if r > 0:
                cand.append((size[i] - sent[i]) / r)
            u = up[i]
            if u is not None and st[u] == FLOW and rate[u] > 0:
                for x in (base[i] + chunk, base[i] + chunk + size[i]):
                    if x > sent[u]:
                        cand.append((x - sent[u]) / rate[u])
                a = avail(i)
                if sent[i] < a < size[i] and sent[u] - base[i] - chunk >= 0 and r > rate[u]:
                    cand.append((a - sent[i]) / (r - rate[u]))
        for i in range(n):
            u = up[i]
            if st[i] == PENDING and u is not None and st[u] == FLOW and rate[u] > 0:
                x = base[i] + min(chunk, size[i])
                if x > sent[u]:
                    cand.append((x - sent[u]) / rate[u])
        cand = [c for c in cand if c > 0]
        if not cand:
            raise ReferenceError_(f"deadlock at t={float(now)}")
        dt = min(cand)
        for i in flowing:
            sent[i] += rate[i] * dt
            assert sent[i] <= size[i]
            assert sent[i] <= avail(i) or up[i] is None or True
        now += dt
        for i in flowing:
            traj[i].append((now, sent[i]))
        # invariant: never ahead of the upstream
        for i in flowing:
            u = up[i]
            if u is not None and st[u] == FLOW:
                assert sent[i] <= max(F(0), sent[u] - base[i] - chunk) or sent[i] == 0, (i, sent[i], sent[u])

    # ---- host completion: byte-exact first arrival
    def first_time(i, p):
        """First time transfer i had sent >= p bytes (p > 0)."""
        pts = traj[i]
        for (t0, s0), (t1, s1) in zip(pts, pts[1:]):
            if s1 >= p:
                return t0 + (p - s0) * (t1 - t0) / (s1 - s0)
        raise AssertionError("never reached")

    host_time = {}
    for h, wanted in plan.wanted.items():
        init = [(o, o + l) for o, l in plan.initial.get(h, ())]
        into = incoming[h]
        cuts = set()
        for o, l in wanted:
            cuts |= {o, o + l}
        for a, b in init:
            cuts |= {a, b}
        for j in into:
            for o, l in tr[j].ranges:
                cuts |= {o, o + l}
        cuts = sorted(cuts)
        worst = F(0)
        for o, l in wanted:
            for a, b in zip(cuts, cuts[1:]):
                if a < o or b > o + l:
                    continue
                if any(s <= a and b <= e for s, e in init):
                    continue
                best = None
                for j in into:
                    pos = 0
                    for ro, rl in tr[j].ranges:
                        if ro <= a and b <= ro + rl:
                            tt = first_time(j, F(pos + (b - ro)))
                            best = tt if best is None else min(best, tt)
                            break  # later occurrences in j arrive later
                        pos += rl
                assert best is not None, (h, a, b)
                worst = max(worst, best)
        host_time[h] = worst
    return (
        {h: float(v) for h, v in host_time.items()},
        [(float(s), float(d)) for s, d in zip(t_start, t_done)],
    )
