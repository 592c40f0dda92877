"""An independent, slow, obviously-correct reference for ``topocast.sim.simulate``.

Written from docs/design.md "Simulator" and the docstring of ``topocast.plan`` only (not from
``sim/engine.py``), for plans of up to a few thousand transfers in tests. Everything is exact
rational arithmetic (GMP's ``mpq`` through gmpy2, else ``fractions.Fraction``): no tolerances,
no snapping, so every equality below is exact.

Semantics implemented
---------------------
* A transfer is *ready* when every transfer in ``after`` is done and

  - store-and-forward (or pipelined whose sender holds the bytes from the start): its sender
    holds every byte it sends, from ``initial`` or from *completed* transfers;
  - pipelined with an upstream ``u`` (explicit, else the first transfer into the sender whose
    sequence contains ours contiguously, found by ``topocast.plan.graph.find_upstream``): ``u`` has
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

import heapq
from collections import defaultdict
from fractions import Fraction

try:  # GMP rationals: the same exact arithmetic, several times faster on long runs
    from gmpy2 import mpq as F
except ImportError:  # pragma: no cover - gmpy2 comes with the [test] extra
    F = Fraction

from topocast.plan.graph import find_upstream

INF = None  # "no bound" marker for caps


class ReferenceError_(Exception):
    pass


def maxmin(res_of: dict, capacity: dict, cap: dict, parent: dict) -> dict:
    """Exact max-min fair rates by water-filling.

    res_of[f]: list of resources f crosses (repetition = crosses twice);
    capacity[r]: Fraction; cap[f]: Fraction or None; parent[f]: flow that bounds f or None.

    Every flow still rising sits at the common level L. With ``frozen[r]`` the rates of the
    flows on r that stopped and ``count[r]`` the crossings of r by flows still rising, r
    saturates at ``L_r = (capacity[r] - frozen[r]) / count[r]``; a flow with a cap stops at
    its cap. So the next level is the smallest L_r or cap (a heap), and only the resources of
    the flows that stop get a new L_r.
    """
    children = defaultdict(list)
    for f, p in parent.items():
        if p is not None:
            children[p].append(f)
    count = defaultdict(int)
    flows_on = defaultdict(set)
    for f, rs in res_of.items():
        for r in rs:
            count[r] += 1
            flows_on[r].add(f)
    frozen = defaultdict(F)
    level_of = {}  # resource -> its current saturation level
    heap: list = []  # (level, tie-break, resource)

    def update(r):
        if count[r] == 0:
            level_of.pop(r, None)
            return
        level_of[r] = (capacity[r] - frozen[r]) / count[r]
        heapq.heappush(heap, (level_of[r], len(heap), r))

    for r in count:
        update(r)
    caps = sorted((c, f) for f, c in cap.items() if c is not None and f in res_of)
    active = set(res_of)
    rate = {}
    level = F(0)
    k = 0  # next cap in ``caps``
    while active:
        while heap and level_of.get(heap[0][2]) != heap[0][0]:
            heapq.heappop(heap)  # stale: the resource's level changed since
        while k < len(caps) and caps[k][1] not in active:
            k += 1
        nxt = [x for x in (heap[0][0] if heap else None, caps[k][0] if k < len(caps) else None) if x is not None]
        if not nxt:
            raise ReferenceError_("unbounded flow")
        level = min(nxt)
        assert level >= 0
        stop = set()
        while heap and heap[0][0] == level:
            _, _, r = heapq.heappop(heap)
            if level_of.get(r) == level:
                stop |= flows_on[r] & active
        while k < len(caps) and caps[k][0] == level:
            if caps[k][1] in active:
                stop.add(caps[k][1])
            k += 1
        # children of stopped flows stop with them (transitively)
        stack = list(stop)
        while stack:
            for c in children[stack.pop()]:
                if c in active and c not in stop:
                    stop.add(c)
                    stack.append(c)
        assert stop, "water-filling made no progress"
        touched = set()
        for f in stop:
            rate[f] = level
            active.discard(f)
            for r in res_of[f]:
                count[r] -= 1
                frozen[r] += level
                flows_on[r].discard(f)
                touched.add(r)
        for r in touched:
            update(r)
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
            u, off = find_upstream(plan, i)
            if u is not None:
                up[i], base[i] = u, F(off)

    # Holdings from initial + completed transfers, as sets of (a, b) merged lazily; a host's
    # version counts its changes, so a sender found short of bytes is looked at again only
    # once it received more.
    held = defaultdict(list)
    version = defaultdict(int)
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

    def receive(i):
        held[tr[i].dst].extend((o, o + l) for o, l in tr[i].ranges)
        version[tr[i].dst] += 1

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
    # the transfers in each state (sets, walked in plan order where order matters)
    # pending: every transfer in its ``after`` is done; the others wait in ``unmet`` (how many
    # of their ``after`` are not done yet) until the last one is
    pending, queued, timed, flowing = set(), set(), set(), set()
    unmet = {i: len(set(t.after)) for i, t in enumerate(tr) if t.after}
    dependents = defaultdict(list)
    for i, t in enumerate(tr):
        for a in set(t.after):
            dependents[a].append(i)
    pending.update(i for i in range(n) if i not in unmet)
    short_of_data = {}  # pending transfer -> its sender's version when it lacked bytes

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
        assert all(st[a] == DONE for a in t.after)
        u = up[i]
        if u is not None:
            if finished_flow(u):
                return True
            return st[u] == FLOW and sent[u] >= base[i] + min(chunk, size[i])
        if short_of_data.get(i) == version[t.src]:
            return False
        if covers(t.src, t.ranges):
            return True
        short_of_data[i] = version[t.src]
        return False

    def done(i):
        st[i] = DONE
        t_done[i] = now
        receive(i)
        for d in dependents[i]:
            unmet[d] -= 1
            if unmet[d] == 0:
                del unmet[d]
                pending.add(d)

    events = 0
    while True:
        # ---- instantaneous transitions at `now`, to a fixpoint
        changed = True
        while changed:
            changed = False
            for i in sorted(pending):
                if ready(i):
                    pending.discard(i)
                    queued.add(i)
                    st[i] = QUEUED
                    changed = True
            for i in sorted(timed | flowing):
                if st[i] == LAT and timer[i] <= now:
                    st[i] = FLOW
                    timed.discard(i)
                    flowing.add(i)
                    t_start[i] = now
                    traj[i].append((now, F(0)))
                    changed = True
                if st[i] == FLOW and sent[i] == size[i]:
                    flowing.discard(i)
                    if gamma[i] > 0:
                        st[i] = RED
                        timer[i] = now + gamma[i]
                        timed.add(i)
                    else:
                        done(i)
                    changed = True
                if st[i] == RED and timer[i] <= now:
                    timed.discard(i)
                    done(i)
                    changed = True
            if changed:
                continue
            # inject only once every transfer that becomes ready at `now` is known, so
            # transfers ready at the same instant go in plan order
            for i in sorted(queued):  # plan order
                if busy_until[tr[i].src] <= now:
                    d = _fr(topo.injection(tr[i].src, tr[i].dst))
                    busy_until[tr[i].src] = now + d
                    st[i] = LAT
                    queued.discard(i)
                    timed.add(i)
                    timer[i] = now + d + lat[i]
                    changed = True
        if len(pending) + len(unmet) + len(queued) + len(timed) + len(flowing) == 0:
            break
        events += 1
        if events > max_events:
            raise ReferenceError_("too many events")

        # ---- rates
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
        cand = [timer[i] - now for i in timed]
        cand += [busy_until[tr[i].src] - now for i in queued]
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
        for i in pending:
            u = up[i]
            if u is not None and st[u] == FLOW and rate[u] > 0:
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
