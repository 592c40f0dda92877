"""Property tests of the simulator against an independent exact reference (tests/sim/reference.py).

1. ``progressive_filling``: feasible and max-min fair (bottleneck certificate), coupled children
   never above their parent, and equal to an exact water-filling.
2. ``simulate`` vs ``reference_simulate`` on random small topologies (trees and meshes, duplex /
   shared / fatpipe links, asymmetric bandwidths, latencies, injection times) with broadcast
   plans of every registered planner and random DAGs of transfers (store-and-forward,
   pipelined sub-ranges, multi-range sequences, ``after``, rate caps, bytes received twice).
3. Invariants: per-host rate <= max-flow bound, single transfers >= latency + size/bottleneck,
   determinism to the bit, no SimulationError on plans check_plan accepts.
"""

from __future__ import annotations

import math
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from topocast import Broadcast, Plan, Topology, Transfer, broadcast_bounds, check_plan, simulate
from topocast.planners import available_planners
from topocast.sim.maxmin import progressive_filling
from topocast.topology.model import PhysicalLink as L

sys.path.insert(0, str(Path(__file__).parent))
from reference import maxmin as ref_maxmin  # noqa: E402
from reference import reference_simulate  # noqa: E402

REL = 1e-9
# TOPOCAST_SIM_EXAMPLES=10 multiplies every example count by 10 (long soak runs)
SCALE = float(__import__("os").environ.get("TOPOCAST_SIM_EXAMPLES", "1"))
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
BROADCAST_PLANNERS = [p for p in available_planners("broadcast")]

# Bandwidths with many ties and simple ratios, plus a few awkward ones.
BWS = [10.0, 20.0, 25.0, 50.0, 100.0, 100.0, 1000.0, 125e6, 3.0, 7.0]
LATS = [0.0, 0.0, 0.0, 1e-6, 0.001, 0.05, 2.0]


def close(a, b, rel=REL):
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-9)


# ------------------------------------------------------------------ 1. max-min certificate
@st.composite
def maxmin_instances(draw):
    n_res = draw(st.integers(1, 6))
    n_flows = draw(st.integers(1, 9))
    capacity = np.array([draw(st.sampled_from(BWS)) for _ in range(n_res)])
    pairs = []
    caps = []
    for f in range(n_flows):
        rs = draw(st.lists(st.integers(0, n_res - 1), min_size=0, max_size=4))
        if not rs:
            cap = draw(st.sampled_from(BWS))
        else:
            cap = draw(st.one_of(st.just(math.inf), st.sampled_from(BWS), st.sampled_from(list(capacity))))
        caps.append(cap)
        pairs += [(f, r) for r in rs]
    children = [[] for _ in range(n_flows)]
    for f in range(1, n_flows):
        if draw(st.booleans()):
            children[draw(st.integers(0, f - 1))].append(f)
    pf = np.array([p[0] for p in pairs], dtype=np.int64)
    pr = np.array([p[1] for p in pairs], dtype=np.int64)
    return pf, pr, capacity, np.array(caps, dtype=float), children


@settings(max_examples=int(400 * SCALE), **SETTINGS)
@given(maxmin_instances())
def test_progressive_filling_is_feasible_and_max_min_fair(inst):
    pf, pr, capacity, caps, children = inst
    n = len(caps)
    rate = progressive_filling(pf, pr, capacity, caps, children)
    parent = {c: p for p in range(n) for c in children[p]}
    eps = 1e-9
    load = np.zeros(len(capacity))
    np.add.at(load, pr, rate[pf])
    assert (rate >= 0).all()
    assert (load <= capacity * (1 + eps)).all(), (load, capacity)
    assert (rate <= caps * (1 + eps)).all()
    for c, p in parent.items():
        assert rate[c] <= rate[p] * (1 + eps)
    saturated = load >= capacity * (1 - eps)
    for f in range(n):
        if rate[f] >= caps[f] * (1 - eps):
            continue
        if f in parent and rate[f] >= rate[parent[f]] * (1 - eps):
            continue
        ok = False
        for r in pr[pf == f]:
            if saturated[r] and rate[f] >= rate[pf[pr == r]].max() * (1 - eps):
                ok = True
        assert ok, f"flow {f} (rate {rate[f]}) has no bottleneck"
    # and it is THE max-min allocation (unique): exact water-filling agrees
    res_of = {f: [int(r) for r in pr[pf == f]] for f in range(n)}
    cap_fr = {f: None if math.isinf(caps[f]) else Fraction(caps[f]) for f in range(n)}
    exact = ref_maxmin(res_of, {r: Fraction(c) for r, c in enumerate(capacity)}, cap_fr, parent)
    for f in range(n):
        assert close(rate[f], float(exact[f]), 1e-9), (f, rate[f], float(exact[f]))


def test_progressive_filling_ties_many_identical_flows():
    """1000 identical flows on one resource, capped exactly at the fair share."""
    k = 1000
    pf = np.arange(k)
    pr = np.zeros(k, dtype=np.int64)
    caps = np.full(k, 0.1)
    rate = progressive_filling(pf, pr, np.array([100.0]), caps)
    assert np.allclose(rate, 0.1, rtol=1e-12)


# ------------------------------------------------------------------ topologies
@st.composite
def topologies(draw, max_nodes=7, mesh=True):
    n = draw(st.integers(2, max_nodes))
    kinds = ["h"] + [draw(st.sampled_from(["h", "h", "s"])) for _ in range(n - 1)]
    names = [f"{k}{i}" for i, k in enumerate(kinds)]
    edges = [(draw(st.integers(0, i - 1)), i) for i in range(1, n)]
    if mesh and n >= 3:
        for _ in range(draw(st.integers(0, 3))):
            a = draw(st.integers(0, n - 1))
            b = draw(st.integers(0, n - 1))
            if a != b and (a, b) not in edges and (b, a) not in edges:
                edges.append((a, b))
    links = []
    for a, b in edges:
        bw = draw(st.sampled_from(BWS))
        back = draw(st.one_of(st.none(), st.sampled_from(BWS)))
        sharing = draw(st.sampled_from(["duplex"] * 4 + ["shared", "fatpipe"]))
        links.append(L(names[a], names[b], bw, draw(st.sampled_from(LATS)), bandwidth_ba=back, sharing=sharing))
    hosts = [x for x in names if x[0] == "h"]
    switches = [x for x in names if x[0] == "s"]
    inj = {}
    if draw(st.integers(0, 3)) == 0:
        for h in hosts:
            inj[h] = draw(st.sampled_from([0.0, 0.01, 0.5]))
    assume(len(hosts) >= 2)
    return Topology("t", hosts, switches, links, injection_time=inj)


# ------------------------------------------------------------------ random DAG plans
@st.composite
def dag_plans(draw, topo, max_transfers=7):
    hosts = list(topo.hosts)
    size = draw(st.sampled_from([60, 100, 1000, 10**6]))
    unit = size // 20
    initial = {}
    known: dict[str, list[tuple[int, int]]] = {h: [] for h in hosts}  # ranges a host will have
    for h in draw(st.lists(st.sampled_from(hosts), min_size=1, max_size=2, unique=True)):
        a = draw(st.integers(0, 19)) * unit
        b = draw(st.integers(a // unit + 1, 20)) * unit
        initial[h] = [(a, b - a)]
        known[h].append((a, b - a))
    transfers = []
    for k in range(draw(st.integers(1, max_transfers))):
        src = draw(st.sampled_from([h for h in hosts if known[h]]))
        dst = draw(st.sampled_from([h for h in hosts if h != src]))
        pipe_from = [j for j, t in enumerate(transfers) if t.dst == src]
        kw = {}
        if pipe_from and draw(st.booleans()):
            # pipelined: a contiguous run of an upstream's sequence (maybe a middle sub-range)
            u = draw(st.sampled_from(pipe_from))
            seq = [(o + i * unit, unit) for o, l in transfers[u].ranges for i in range(l // unit)]
            i = draw(st.integers(0, len(seq) - 1))
            j = draw(st.integers(i + 1, len(seq)))
            ranges = _merge(seq[i:j])
            kw = dict(pipelined=True, upstream=u if draw(st.booleans()) else None)
        else:
            ranges = []
            for _ in range(draw(st.integers(1, 3))):
                o, l = draw(st.sampled_from(known[src]))
                a = draw(st.integers(0, l // unit - 1))
                b = draw(st.integers(a + 1, l // unit))
                ranges.append((o + a * unit, (b - a) * unit))
            if draw(st.integers(0, 4)) == 0:
                kw["pipelined"] = True  # pipelined with no upstream only if the sender holds it
                if not all(_covers(initial.get(src, []), r) for r in ranges):
                    kw = {}
        if transfers and draw(st.booleans()):
            kw["after"] = tuple(sorted(set(draw(st.lists(st.integers(0, len(transfers) - 1), max_size=2)))))
        if draw(st.integers(0, 3)) == 0:
            kw["rate_cap"] = draw(st.sampled_from(BWS))
        transfers.append(Transfer(src, dst, tuple(ranges), **kw))
        known[dst].extend(ranges)
    wanted = {}
    for t in transfers:
        if draw(st.integers(0, 3)) > 0:
            wanted.setdefault(t.dst, []).extend(t.ranges)
    assume(wanted)
    return Plan("redistribute", size, tuple(transfers), initial, wanted, planner="random-dag")


def _covers(held, r):
    o, l = r
    return any(a <= o and o + l <= a + m for a, m in held)


def _merge(seq):
    out = []
    for o, l in seq:
        if out and out[-1][0] + out[-1][1] == o:
            out[-1] = (out[-1][0], out[-1][1] + l)
        else:
            out.append((o, l))
    return out


# ------------------------------------------------------------------ 2. engine vs reference
def assert_agree(plan, topo, chunk_size=None):
    r = simulate(plan, topo, chunk_size=chunk_size)
    ref_hosts, ref_tr = reference_simulate(plan, topo, chunk_size=chunk_size)
    for h, t in ref_hosts.items():
        assert close(r.per_host[h].time, t), (h, r.per_host[h].time, t)
    for i, ((s, d), (rs, rd)) in enumerate(zip(r.transfer_times, ref_tr)):
        assert close(s, rs) and close(d, rd), (i, (s, d), (rs, rd))
    return r


@settings(max_examples=int(150 * SCALE), **SETTINGS)
@given(st.data())
def test_broadcast_planners_agree_with_reference(data):
    topo = data.draw(topologies())
    source = data.draw(st.sampled_from(topo.hosts))
    others = [h for h in topo.hosts if h != source]
    dests = data.draw(st.one_of(st.none(), st.lists(st.sampled_from(others), min_size=1, unique=True)))
    planner = data.draw(st.sampled_from(BROADCAST_PLANNERS))
    size = data.draw(st.sampled_from([1000, 10**6, 10**9]))
    plan = planner(topo, Broadcast(source, size, None if dests is None else tuple(dests)))
    check_plan(plan, topo)
    chunk = data.draw(st.sampled_from([None, 0, size // 100, size // 3]))
    r = assert_agree(plan, topo, chunk)
    # 3. invariants: max-flow bound, determinism to the bit
    bound = broadcast_bounds(topo, source, plan.destinations)
    for h, hr in r.per_host.items():
        assert hr.rate <= bound.per_host_rate[h] * (1 + 1e-9), (h, hr.rate, bound.per_host_rate[h])
    r2 = simulate(plan, topo, chunk_size=chunk)
    assert r2.per_host == r.per_host and r2.transfer_times == r.transfer_times


@settings(max_examples=int(250 * SCALE), **SETTINGS)
@given(st.data())
def test_random_dag_plans_agree_with_reference(data):
    topo = data.draw(topologies())
    plan = data.draw(dag_plans(topo))
    check_plan(plan, topo)  # the generator only makes valid plans
    chunk = data.draw(st.sampled_from([0, 0, plan.size // 20, plan.size // 7, plan.size]))
    r = assert_agree(plan, topo, chunk)
    r2 = simulate(plan, topo, chunk_size=chunk)
    assert r2.per_host == r.per_host and r2.transfer_times == r.transfer_times


@settings(max_examples=int(100 * SCALE), **SETTINGS)
@given(st.data())
def test_single_transfer_takes_at_least_latency_plus_size_over_bottleneck(data):
    topo = data.draw(topologies())
    a, b = data.draw(st.lists(st.sampled_from(topo.hosts), min_size=2, max_size=2, unique=True))
    size = data.draw(st.integers(1, 10**9))
    plan = Plan("redistribute", size, (Transfer.of(a, b, 0, size),), {a: [(0, size)]}, {b: [(0, size)]})
    r = simulate(plan, topo)
    links = topo.route(a, b)
    expect = topo.injection(a, b) + topo.route_latency(a, b) + size / min(topo.links[i].bandwidth for i in links)
    # alone on its route the bound is reached exactly (shared cables: the cable's capacity)
    cap = []
    for i in links:
        l = topo.links[i]
        cap.append(topo.physical_links[l.physical].bandwidth if l.sharing == "shared" else l.bandwidth)
    exact = (
        topo.injection(a, b)
        + topo.route_latency(a, b)
        + size / min(min(cap), min(topo.links[i].bandwidth for i in links))
    )
    assert close(r.per_host[b].time, exact, 1e-9)
    if all(topo.links[i].sharing != "shared" for i in links):
        assert close(r.per_host[b].time, expect, 1e-9)


# ------------------------------------------------------------------ 4. edge cases (exact)
def _one(a, b, size, **kw):
    return Plan("redistribute", size, (Transfer.of(a, b, 0, size, **kw),), {a: [(0, size)]}, {b: [(0, size)]})


def test_asymmetric_shared_cable_caps_each_direction():
    """A shared (half-duplex) cable a-b with bandwidth 25 and bandwidth_ba 10: a flow b->a alone
    gets at most 10 B/s (found by the max-flow bound check: it used to get 25)."""
    topo = Topology("t", ["a", "b"], [], [L("a", "b", 25.0, bandwidth_ba=10.0, sharing="shared")])
    assert close(simulate(_one("b", "a", 1000), topo).per_host["a"].time, 100.0, 1e-12)
    assert close(simulate(_one("a", "b", 1000), topo).per_host["b"].time, 40.0, 1e-12)
    # both directions at once share the cable's 25 B/s: b->a stays at 10, a->b gets 15
    plan = Plan(
        "redistribute",
        2000,
        (Transfer.of("a", "b", 0, 1000), Transfer.of("b", "a", 1000, 1000)),
        {"a": [(0, 1000)], "b": [(1000, 1000)]},
        {"b": [(0, 1000)], "a": [(1000, 1000)]},
    )
    r = simulate(plan, topo)
    assert close(r.per_host["a"].time, 100.0, 1e-12)
    assert close(r.per_host["b"].time, 1000 / 15 + 0 * 1.0, 1e-12)


def test_asymmetric_shared_cable_slow_direction_is_shared_by_its_flows():
    """Two flows b->a on a shared cable 25 / 10 B/s share the slow direction's 10 B/s (5 each),
    they do not take 10 each (a per-flow cap let stable's two trees give a host 20 B/s over a
    10 B/s direction, twice its max-flow bound; found by CI's hypothesis run)."""
    topo = Topology("t", ["a", "b"], [], [L("a", "b", 25.0, bandwidth_ba=10.0, sharing="shared")])
    plan = Plan(
        "redistribute",
        2000,
        (Transfer.of("b", "a", 0, 1000), Transfer.of("b", "a", 1000, 1000)),
        {"b": [(0, 2000)]},
        {"a": [(0, 2000)]},
    )
    r = assert_agree(plan, topo)
    assert close(r.per_host["a"].time, 200.0, 1e-12)
    assert r.per_host["a"].rate <= broadcast_bounds(topo, "b").per_host_rate["a"] * (1 + 1e-12)


def test_host_that_holds_part_of_its_bytes_is_credited_at_first_arrival():
    """h1 holds [0, 3) and wants [0, 6); one transfer sends [3, 6) then [0, 3) again. h1 is
    complete after 3 bytes (0.3 s at 10 B/s), not when the transfer ends (0.6 s). The engine
    used to credit partial progress only when a host receives more bytes than it wants."""
    topo = Topology("t", ["h0", "h1"], [], [L("h0", "h1", 10.0)])
    plan = Plan(
        "redistribute", 6, (Transfer("h0", "h1", ((3, 3), (0, 3))),), {"h0": [(0, 6)], "h1": [(0, 3)]}, {"h1": [(0, 6)]}
    )
    assert close(simulate(plan, topo).per_host["h1"].time, 0.3, 1e-12)
    # a transfer whose last bytes are not wanted by the receiver
    plan = Plan("redistribute", 6, (Transfer("h0", "h1", ((0, 3), (3, 3))),), {"h0": [(0, 6)]}, {"h1": [(0, 3)]})
    assert close(simulate(plan, topo).per_host["h1"].time, 0.3, 1e-12)


def test_pipelined_transfer_shorter_than_a_chunk_takes_no_bandwidth_before_it_has_data():
    """b forwards a 3-byte range pipelined (chunk 8) while its upstream brings 6 bytes: it may
    start once the upstream delivered its 3 bytes (0.3 s) but has nothing to send until the
    upstream is done (0.6 s; delivered - chunk < 0 before). It used to ride along at the
    upstream's rate, finish at 0.6 s with bytes it never had, and steal bandwidth from T2."""
    topo = Topology("line", ["a", "b", "c"], [], [L("a", "b", 10.0), L("b", "c", 10.0)])
    plan = Plan(
        "redistribute",
        40,
        (Transfer.of("a", "b", 0, 6), Transfer.of("b", "c", 0, 3, pipelined=True), Transfer.of("b", "c", 10, 30)),
        {"a": [(0, 6)], "b": [(10, 30)]},
        {"c": [(0, 3), (10, 30)]},
        chunk_size=8,
    )
    check_plan(plan, topo)
    r = simulate(plan, topo)
    assert close(r.transfer_times[1][1], 1.2, 1e-12)  # T2 alone until 0.6 s, then 5 B/s each
    assert close(r.transfer_times[2][1], 3.3, 1e-12)
    assert close(r.per_host["c"].time, 3.3, 1e-12)
    assert_agree(plan, topo)


def _line(n, bw=10.0, lat=0.0):
    hosts = [f"n{i}" for i in range(n)]
    return Topology("line", hosts, [], [L(a, b, bw, lat) for a, b in zip(hosts, hosts[1:])])


@pytest.mark.parametrize("chunk", [0, 1, 7, 100])
@pytest.mark.parametrize("lat", [0.0, 0.25])
def test_pipelined_chain_closed_form(chunk, lat):
    """Chain n0 -> n1 -> ... -> n5 on equal links B, latency l per hop, chunk c: host k
    completes at k*l + (k-1)*c/B + S/B (each hop trails by one chunk and one latency)."""
    B, S, n = 10.0, 1000, 6
    topo = _line(n, B, lat)
    hosts = topo.hosts
    tr = [Transfer.of(a, b, 0, S, pipelined=True) for a, b in zip(hosts, hosts[1:])]
    plan = Plan.broadcast("n0", S, hosts[1:], tr, chunk_size=chunk)
    r = simulate(plan, topo)
    for k in range(1, n):
        assert close(r.per_host[hosts[k]].time, k * lat + (k - 1) * chunk / B + S / B, 1e-12), k
    assert_agree(plan, topo)


@pytest.mark.parametrize("chunk", [0, 5])
def test_pipelined_middle_subrange_and_multi_range(chunk):
    """b forwards [40, 60) of a 10 B/s upstream [0, 100) over a fast link: starts when the
    upstream reached byte 40 (+ chunk) and is then held to the upstream's pace: done when the
    upstream is at 60 + chunk. Multi-range: upstream sends (50,50),(0,50); the child's
    (90,10),(0,20) starts at position 40 of that sequence."""
    topo = Topology("t", ["a", "b", "c"], [], [L("a", "b", 10.0), L("b", "c", 1000.0)])
    plan = Plan(
        "redistribute",
        100,
        (Transfer.of("a", "b", 0, 100), Transfer.of("b", "c", 40, 20, pipelined=True)),
        {"a": [(0, 100)]},
        {"c": [(40, 20)]},
        chunk_size=chunk,
    )
    r = simulate(plan, topo)
    assert close(r.per_host["c"].time, (60 + chunk) / 10.0, 1e-12)
    assert_agree(plan, topo)
    plan = Plan(
        "redistribute",
        100,
        (Transfer("a", "b", ((50, 50), (0, 50))), Transfer("b", "c", ((90, 10), (0, 20)), pipelined=True)),
        {"a": [(0, 100)]},
        {"c": [(90, 10), (0, 20)]},
        chunk_size=chunk,
    )
    r = simulate(plan, topo)
    assert close(r.per_host["c"].time, (70 + chunk) / 10.0, 1e-12)
    assert close(r.transfer_times[1][0], (40 + min(chunk, 30)) / 10.0, 1e-12)
    assert_agree(plan, topo)


def test_injection_with_several_senders():
    """Δ = 0.5 s per send: each sender's k-th transfer starts flowing at (k+1)Δ + latency,
    independently of the other sender."""
    hosts = ["s1", "s2", "a", "b", "c", "d", "e", "f"]
    links = [L(h, "sw", 1e9, 0.01) for h in hosts]
    topo = Topology("star", hosts, ["sw"], links, injection_time={"s1": 0.5, "s2": 0.5})
    tr = [Transfer.of(s, d, 0, 10) for s, ds in (("s1", "abc"), ("s2", "def")) for d in ds]
    plan = Plan("redistribute", 10, tr, {"s1": [(0, 10)], "s2": [(0, 10)]}, {d: [(0, 10)] for d in "abcdef"})
    r = simulate(plan, topo)
    for i, (start, _) in enumerate(r.transfer_times):
        assert close(start, (i % 3 + 1) * 0.5 + 0.02, 1e-12), (i, start)
    assert_agree(plan, topo)


def test_after_chain_and_rate_caps_equal_to_capacity():
    """T0 -> T1 -> T2 by 'after' on disjoint links; caps equal to the link bandwidth (float
    ties between a cap and a saturated link)."""
    topo = _line(4, 7.0, 0.1)
    h = topo.hosts
    tr = [
        Transfer.of(h[0], h[1], 0, 70, rate_cap=7.0),
        Transfer.of(h[1], h[2], 0, 70, after=(0,), rate_cap=7.0),
        Transfer.of(h[2], h[3], 0, 70, after=(1,), rate_cap=7.0),
    ]
    plan = Plan("redistribute", 70, tr, {h[0]: [(0, 70)]}, {x: [(0, 70)] for x in h[1:]})
    r = simulate(plan, topo)
    for k in range(1, 4):
        assert close(r.per_host[h[k]].time, k * 10.1, 1e-12)
    assert_agree(plan, topo)


def test_many_identical_flows_tie_and_finish_together():
    k = 1000
    topo = Topology("pair", ["a", "b"], [], [L("a", "b", 3.0)])
    plan = Plan(
        "redistribute", k, tuple(Transfer.of("a", "b", i, 1) for i in range(k)), {"a": [(0, k)]}, {"b": [(0, k)]}
    )
    r = simulate(plan, topo)
    assert close(r.per_host["b"].time, k / 3.0, 1e-12)
    assert all(close(e, k / 3.0, 1e-12) for _, e in r.transfer_times)


def test_bytes_received_twice_are_credited_at_first_arrival():
    """c gets [0, 100) from a (100 B/s, done at 1 s) and from b (10 B/s, done at 10 s)."""
    topo = Topology("t", ["a", "b", "c"], ["sw"], [L("a", "sw", 100.0), L("b", "sw", 10.0), L("c", "sw", 1000.0)])
    plan = Plan(
        "redistribute",
        100,
        (Transfer.of("b", "c", 0, 100), Transfer.of("a", "c", 0, 100)),
        {"a": [(0, 100)], "b": [(0, 100)]},
        {"c": [(0, 100)]},
    )
    assert close(simulate(plan, topo).per_host["c"].time, 1.0, 1e-12)
    # halves from each: [0,50) from a at 100 B/s, all of it from b at 10 B/s, second half first
    plan = Plan(
        "redistribute",
        100,
        (Transfer("b", "c", ((50, 50), (0, 50))), Transfer.of("a", "c", 0, 50)),
        {"a": [(0, 100)], "b": [(0, 100)]},
        {"c": [(0, 100)]},
    )
    assert close(simulate(plan, topo).per_host["c"].time, 5.0, 1e-12)
    assert_agree(plan, topo)
