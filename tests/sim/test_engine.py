"""Simulator cases with exact answers (relative error below 1e-9)."""

import math

import pytest

from topocast import Plan, SimulationError, Topology, Transfer, check_plan, simulate
from topocast.topology.model import PhysicalLink as L

REL = 1e-9


def close(a, b):
    return math.isclose(a, b, rel_tol=REL, abs_tol=1e-12)


def independent(transfers, *, size=None, chunk_size=0):
    """A plan of given transfers where each src initially holds exactly what it sends."""
    size = size or max(off + ln for t in transfers for off, ln in t.ranges)
    initial, wanted = {}, {}
    for t in transfers:
        initial.setdefault(t.src, []).extend(t.ranges)
        wanted.setdefault(t.dst, []).extend(t.ranges)
    return Plan("redistribute", size, tuple(transfers), initial, wanted, planner="test", chunk_size=chunk_size)


def star(bws, latency=0.0, **kw):
    """Hosts h0..hn on one switch; bws[i] = bandwidth of h_i's link (both directions)."""
    hosts = [f"h{i}" for i in range(len(bws))]
    links = [L(h, "sw", float(bw), latency) for h, bw in zip(hosts, bws)]
    return Topology("star", hosts, ["sw"], links, **kw)


def test_one_transfer_on_one_link_is_latency_plus_size_over_bandwidth():
    """One transfer alone: latency + size / bandwidth (SimGrid's convention)."""
    t = Topology("pair", ["a", "b"], [], [L("a", "b", 125e6, 0.002)])
    plan = independent([Transfer.of("a", "b", 0, 10**9)])
    r = simulate(plan, t)
    assert close(r.per_host["b"].time, 0.002 + 1e9 / 125e6)
    assert close(r.makespan, 8.002)


def test_k_transfers_share_a_link_equally():
    """k equal transfers over one link each get bandwidth/k and finish together."""
    k = 5
    t = Topology("pair", ["a", "b"], [], [L("a", "b", 1000.0, 0.5)])
    plan = independent([Transfer.of("a", "b", i * 100, 100) for i in range(k)])
    r = simulate(plan, t)
    for start, end in r.transfer_times:
        assert close(start, 0.5)
        assert close(end, 0.5 + k * 100 / 1000.0)


def test_unequal_transfers_sharing_a_link_reallocate_after_completion():
    """Two flows share 100 B/s; the short one ends at 2 s, the long one then gets it all."""
    t = Topology("pair", ["a", "b"], [], [L("a", "b", 100.0)])
    plan = independent([Transfer.of("a", "b", 0, 100), Transfer.of("a", "b", 100, 300)])
    r = simulate(plan, t)
    assert close(r.transfer_times[0][1], 2.0)
    assert close(r.transfer_times[1][1], 2.0 + 200 / 100.0)


def parking_lot():
    #  hA1,hA2 - x1 --(1 B/s)--> x2 --(2 B/s)--> x3 - hC1, hC2 ;  hB1, hB2 on x2
    hosts = ["hA1", "hA2", "hB1", "hB2", "hC1", "hC2"]
    links = [
        L("x1", "x2", 1.0),
        L("x2", "x3", 2.0),
        L("hA1", "x1", 100.0),
        L("hA2", "x1", 100.0),
        L("hB1", "x2", 100.0),
        L("hB2", "x2", 100.0),
        L("hC1", "x3", 100.0),
        L("hC2", "x3", 100.0),
    ]
    return Topology("parking-lot", hosts, ["x1", "x2", "x3"], links)


def test_parking_lot_max_min_differs_from_equal_split():
    """Long flow + one short flow per link; link 1 has capacity 1, link 2 capacity 2.

    Max-min: link 1 saturates first, so the long flow and flow 1 get 0.5 each and flow 2 gets
    2 - 0.5 = 1.5 (an equal split of link 2 would give it 1).
    """
    t = parking_lot()
    plan = independent(
        [
            Transfer.of("hA1", "hC1", 0, 1),  # long flow: x1->x2->x3
            Transfer.of("hA2", "hB1", 1, 1),  # link 1 only
            Transfer.of("hB2", "hC2", 2, 3),  # link 2 only
        ]
    )
    r = simulate(plan, t)
    assert close(r.transfer_times[0][1], 2.0)  # 1 B at 0.5 B/s
    assert close(r.transfer_times[1][1], 2.0)
    assert close(r.transfer_times[2][1], 2.0)  # 3 B at 1.5 B/s (equal split: 3 s)


def test_parking_lot_rates_change_after_a_completion():
    """When the long flow ends, flow 2 takes all of link 2."""
    t = parking_lot()
    plan = independent(
        [
            Transfer.of("hA1", "hC1", 0, 1),
            Transfer.of("hA2", "hB1", 1, 1),
            Transfer.of("hB2", "hC2", 2, 6),
        ]
    )
    r = simulate(plan, t)
    # until t=2: flow 2 at 1.5 -> 3 B sent; then alone at 2 B/s -> 3 B more in 1.5 s
    assert close(r.transfer_times[2][1], 3.5)


def chain_topology(bws, latencies=None):
    """h0 - h1 - ... - hn in a line; bws[i] is the link h_i - h_{i+1}."""
    n = len(bws) + 1
    hosts = [f"h{i}" for i in range(n)]
    lat = latencies or [0.0] * len(bws)
    links = [L(hosts[i], hosts[i + 1], float(b), float(l)) for i, (b, l) in enumerate(zip(bws, lat))]
    return Topology("chain", hosts, [], links)


def pipeline_plan(hosts, size, chunk_size=0):
    transfers = [
        Transfer(u, v, ((0, size),), pipelined=True, upstream=k - 1 if k else None)
        for k, (u, v) in enumerate(zip(hosts, hosts[1:]))
    ]
    return Plan.broadcast(hosts[0], size, hosts[1:], transfers, planner="chain", chunk_size=chunk_size)


@pytest.mark.parametrize("bws", [(100, 10, 50), (10, 100, 50), (50, 100, 10)])
def test_pipelined_chain_rate_is_its_slowest_link_so_far(bws):
    """Host i of a pipeline receives at the minimum hop rate up to it."""
    t = chain_topology(bws)
    hosts = list(t.hosts)
    plan = pipeline_plan(hosts, 1000)
    check_plan(plan, t)
    r = simulate(plan, t)
    for i, h in enumerate(hosts[1:]):
        assert close(r.per_host[h].rate, min(bws[: i + 1]))


def test_pipelined_chain_latencies_add_up():
    """Each hop's latency delays its first byte: total = sum of latencies + size / slowest."""
    t = chain_topology((100, 100, 100), (0.1, 0.2, 0.3))
    plan = pipeline_plan(list(t.hosts), 1000)
    r = simulate(plan, t)
    assert close(r.per_host["h1"].time, 0.1 + 10.0)
    assert close(r.per_host["h2"].time, 0.3 + 10.0)
    assert close(r.per_host["h3"].time, 0.6 + 10.0)


def test_pipelined_chain_with_chunks_trails_by_one_chunk_per_hop():
    """With chunk c, a pipelined hop trails its upstream by one chunk: + c / rate per hop."""
    t = chain_topology((100, 100, 100))
    plan = pipeline_plan(list(t.hosts), 1000, chunk_size=50)
    r = simulate(plan, t)
    assert close(r.per_host["h1"].time, 10.0)
    assert close(r.per_host["h2"].time, 10.5)
    assert close(r.per_host["h3"].time, 11.0)


def test_slow_child_does_not_slow_its_sibling():
    """A relay stores what it receives: its slow child only slows itself."""
    # s -(100)- r ; r -(100)- fast ; r -(10)- slow
    t = Topology(
        "fork",
        ["s", "r", "fast", "slow"],
        [],
        [L("s", "r", 100.0), L("r", "fast", 100.0), L("r", "slow", 10.0)],
    )
    tr = [
        Transfer("s", "r", ((0, 1000),), pipelined=True),
        Transfer("r", "fast", ((0, 1000),), pipelined=True, upstream=0),
        Transfer("r", "slow", ((0, 1000),), pipelined=True, upstream=0),
    ]
    plan = Plan.broadcast("s", 1000, ["r", "fast", "slow"], tr, planner="fork")
    check_plan(plan, t)
    r = simulate(plan, t)
    assert close(r.per_host["r"].time, 10.0)
    assert close(r.per_host["fast"].time, 10.0)
    assert close(r.per_host["slow"].time, 100.0)


def test_asymmetric_link_uses_each_direction_bandwidth():
    """bandwidth_ba sets b->a; a->b keeps bandwidth."""
    t = Topology("asym", ["a", "b"], [], [L("a", "b", 100.0, 0.0, bandwidth_ba=25.0)])
    plan = independent([Transfer.of("a", "b", 0, 100), Transfer.of("b", "a", 100, 100)])
    r = simulate(plan, t)
    assert close(r.transfer_times[0][1], 1.0)
    assert close(r.transfer_times[1][1], 4.0)


def test_shared_link_splits_capacity_between_directions():
    """A half-duplex (shared) cable: both directions share one capacity."""
    t = Topology("half", ["a", "b"], [], [L("a", "b", 100.0, sharing="shared")])
    plan = independent([Transfer.of("a", "b", 0, 100), Transfer.of("b", "a", 100, 100)])
    r = simulate(plan, t)
    assert close(r.transfer_times[0][1], 2.0)
    assert close(r.transfer_times[1][1], 2.0)


def test_fatpipe_link_caps_each_flow_without_sharing():
    t = Topology("fat", ["a", "b"], [], [L("a", "b", 100.0, sharing="fatpipe")])
    plan = independent([Transfer.of("a", "b", 0, 100), Transfer.of("a", "b", 100, 100)])
    r = simulate(plan, t)
    assert close(r.makespan, 1.0)


def test_rate_cap_is_honoured_and_leftover_capacity_goes_to_others():
    t = Topology("pair", ["a", "b"], [], [L("a", "b", 100.0)])
    plan = independent([Transfer.of("a", "b", 0, 20, rate_cap=20.0), Transfer.of("a", "b", 20, 80)])
    r = simulate(plan, t)
    assert close(r.transfer_times[0][1], 1.0)
    assert close(r.transfer_times[1][1], 1.0)


def test_store_and_forward_waits_for_the_whole_range():
    """A non-pipelined relay forwards only after it has received everything."""
    t = chain_topology((100, 100))
    tr = [Transfer.of("h0", "h1", 0, 1000), Transfer.of("h1", "h2", 0, 1000)]
    plan = Plan.broadcast("h0", 1000, ["h1", "h2"], tr, planner="sf")
    r = simulate(plan, t)
    assert close(r.per_host["h2"].time, 20.0)


def test_injection_time_serialises_sends_of_one_host():
    """With Δ, the source injects one message at a time: k-th send starts after kΔ."""
    t = star([1e12, 1e12, 1e12, 1e12], latency=0.0, injection_time={"h0": 1.0})
    tr = [Transfer.of("h0", h, 0, 1) for h in ("h1", "h2", "h3")]
    plan = Plan.broadcast("h0", 1, ["h1", "h2", "h3"], tr, planner="flat")
    r = simulate(plan, t)
    for k, h in enumerate(("h1", "h2", "h3"), start=1):
        assert math.isclose(r.per_host[h].time, k * 1.0 + 2 / 1e12, rel_tol=1e-9)


def test_after_dependencies_are_respected():
    t = Topology("pair", ["a", "b"], [], [L("a", "b", 100.0)])
    plan = independent([Transfer.of("a", "b", 0, 100), Transfer.of("a", "b", 100, 100, after=(0,))])
    r = simulate(plan, t)
    assert close(r.transfer_times[1][0], 1.0)
    assert close(r.transfer_times[1][1], 2.0)


def test_host_credited_when_two_transfers_cover_it_before_either_ends():
    """Bytes arriving twice: the host completes when every byte has arrived once."""
    # a receives [0,100) from s1 (ascending) and [50,100)+[0,50) from s2: covered at 0.5 s
    t = Topology("two", ["s1", "s2", "a"], ["sw"], [L("s1", "sw", 100.0), L("s2", "sw", 100.0), L("a", "sw", 1000.0)])
    tr = [Transfer("s1", "a", ((0, 100),)), Transfer("s2", "a", ((50, 50), (0, 50)))]
    plan = Plan("broadcast", 100, tuple(tr), {"s1": ((0, 100),), "s2": ((0, 100),)}, {"a": ((0, 100),)}, planner="x")
    r = simulate(plan, t)
    assert close(r.per_host["a"].time, 0.5)


def test_deterministic_to_the_last_bit():
    t = parking_lot()
    plan = independent(
        [Transfer.of("hA1", "hC1", 0, 7), Transfer.of("hA2", "hB1", 7, 3), Transfer.of("hB2", "hC2", 10, 11)]
    )
    a = simulate(plan, t)
    b = simulate(plan, t)
    assert a.transfer_times == b.transfer_times
    assert a.aggregate_bandwidth == b.aggregate_bandwidth


def test_deadlock_is_reported():
    t = Topology("pair", ["a", "b"], [], [L("a", "b", 100.0)])
    tr = [Transfer.of("b", "a", 0, 10)]  # b never holds the bytes
    plan = Plan("broadcast", 10, tuple(tr), {"a": ((0, 10),)}, {"a": ((0, 10),)}, planner="bad")
    with pytest.raises(SimulationError, match="never holds"):
        simulate(plan, t)


@pytest.mark.parametrize(
    ("collective", "planner"), [("broadcast", "scatter_allgather_rdb"), ("allreduce", "rabenseifner")]
)
def test_unpipelined_schedule_is_the_general_one_to_the_bit(monkeypatch, collective, planner):
    """Flows without an upstream queue only their completion (``Events._schedule_done``):
    the same events, to the last bit, as the general computation of every kind."""
    from topocast import Allreduce, Broadcast
    from topocast.planners import get_planner
    from topocast.sim import tuning
    from topocast.sim.agenda import Events
    from topocast.topology.generators import random_tree

    monkeypatch.setattr(tuning, "LOOP_AFTER", 10**9)  # the engine's loop, where _schedule runs
    topo = random_tree(24, 6, min_mbit=100, max_mbit=1000, seed=3)
    request = Broadcast(topo.hosts[0], 1 << 20) if collective == "broadcast" else Allreduce(1 << 20)
    plan = get_planner(collective, planner)(topo, request)
    calls = []
    done_only = Events._schedule_done
    monkeypatch.setattr(Events, "_schedule_done", lambda self, *a: calls.append(1) or done_only(self, *a))
    fast = simulate(plan, topo)
    assert calls  # the plan takes the path under test
    monkeypatch.setattr(
        Events,
        "_schedule_done",
        lambda self, idx, r, size, s: self._schedule_pipelined(idx, r, size, s, self.upstream[idx]),
    )
    general = simulate(plan, topo)
    assert fast.makespan == general.makespan
    assert fast.transfer_times == general.transfer_times
    assert fast.per_host == general.per_host
