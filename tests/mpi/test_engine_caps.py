"""Which rate caps the MPI progress loop paces (no MPI needed): a cap that cannot bind is
dropped, a cap below the transfer's slowest link is kept; allreduce plans keep their caps
when scaled from elements to bytes."""

from __future__ import annotations

from topocast.mpi.collectives import _scale
from topocast.mpi.engine import without_loose_caps
from topocast.plan import Broadcast, Plan, Transfer
from topocast.planners import get_planner
from topocast.topology import load_topology


def _request(topo, size):
    return Broadcast("s", size, tuple(h for h in topo.hosts if h != "s"))


def test_caps_at_the_links_rate_are_dropped():
    """uniform-2switch: balanced_multicast's chain is paced at every link's own rate."""
    topo = load_topology("builtin:uniform-2switch")
    plan = get_planner("broadcast", "balanced_multicast")(topo, _request(topo, 1 << 20))
    assert all(t.rate_cap is not None for t in plan.transfers)
    loose = without_loose_caps(plan, topo)
    assert all(t.rate_cap is None for t in loose.transfers)
    assert [(t.src, t.dst, t.ranges, t.pipelined) for t in loose.transfers] == [
        (t.src, t.dst, t.ranges, t.pipelined) for t in plan.transfers
    ]


def test_caps_that_share_a_link_are_kept():
    """two_tree gives each of two trees half of a link: those caps decide the shares."""
    topo = load_topology("builtin:uniform-2switch")
    plan = get_planner("broadcast", "two_tree")(topo, _request(topo, 1 << 20))
    assert without_loose_caps(plan, topo) is plan


def test_the_slowest_link_of_the_route_decides():
    """hetero-2switch: s -> b1 crosses the 40 Mbit/s link between the switches; a1 -> a2 does
    not. A cap of 10 MB/s binds on the first path (5 MB/s) only above it."""
    topo = load_topology("builtin:hetero-2switch")
    slow = topo.route_bandwidth("s", "b1")
    fast = topo.route_bandwidth("a1", "a2")
    assert slow < fast
    plan = Plan.broadcast(
        "s",
        100,
        ["a1", "a2", "b1"],
        [
            Transfer.of("s", "a1", 0, 100, rate_cap=fast),  # at the link's rate: loose
            Transfer.of("a1", "a2", 0, 100, rate_cap=0.5 * fast),  # binds
            Transfer.of("s", "b1", 0, 100, rate_cap=1.5 * slow),  # above the slow link: loose
        ],
    )
    caps = [t.rate_cap for t in without_loose_caps(plan, topo).transfers]
    assert caps == [None, 0.5 * fast, None]


def test_scaling_to_bytes_keeps_the_caps():
    plan = Plan.broadcast("a", 10, ["b"], [Transfer.of("a", "b", 0, 10, rate_cap=7.0)])
    scaled = _scale(plan, 8)
    assert scaled.size == 80 and scaled.transfers[0].ranges == ((0, 80),)
    assert scaled.transfers[0].rate_cap == 7.0
