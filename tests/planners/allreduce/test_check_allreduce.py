"""The contribution checker catches double counting, missing contributions and races."""

import pytest

from topocast.errors import PlanError
from topocast.plan import Plan, Transfer
from topocast.plan.check import check_plan
from topocast.plan.check_allreduce import contribution_sets
from topocast.topology import Topology
from topocast.topology.model import PhysicalLink


def topo(n=3):
    hosts = [f"h{i}" for i in range(n)]
    return Topology("t", hosts, ["sw"], [PhysicalLink(h, "sw", 1e9) for h in hosts])


def plan(transfers, n=3, size=10):
    hosts = [f"h{i}" for i in range(n)]
    whole = ((0, size),)
    return Plan(
        "allreduce", size, tuple(transfers), {h: whole for h in hosts}, {h: whole for h in hosts}, planner="test"
    )


def T(s, d, off=0, ln=10, **kw):
    return Transfer.of(f"h{s}", f"h{d}", off, ln, **kw)


def test_reduce_then_broadcast_is_correct():
    p = plan([T(0, 2, reduce=True), T(1, 2, reduce=True), T(2, 0, after=(0, 1)), T(2, 1, after=(0, 1))])
    check_plan(p, topo())
    final = contribution_sets(p)
    assert final["h0"] == [(0, 10, frozenset({"h0", "h1", "h2"}))]


def test_double_counting_is_an_error():
    p = plan(
        [
            T(0, 1, reduce=True),
            T(1, 2, reduce=True, after=(0,)),
            T(0, 2, reduce=True, after=(1,)),
            T(2, 0, after=(2,)),
            T(2, 1, after=(2,)),
        ]
    )
    with pytest.raises(PlanError, match="h0 twice"):
        check_plan(p, topo())


def test_missing_contribution_is_an_error():
    p = plan([T(0, 2, reduce=True), T(2, 0, after=(0,)), T(2, 1, after=(0,))])
    with pytest.raises(PlanError, match="without the contributions of h1"):
        check_plan(p, topo())


def test_copy_replaces_the_value():
    # h1's own contribution is overwritten by a copy of h0's: h1 ends without its own
    p = plan([T(0, 1), T(1, 2, reduce=True, after=(0,)), T(2, 0, after=(1,)), T(2, 1, after=(1,))])
    with pytest.raises(PlanError, match="without the contributions of h1"):
        check_plan(p, topo())


def test_exchange_with_the_same_predecessors_is_race_free():
    p = plan([T(0, 1, reduce=True), T(1, 0, reduce=True)], n=2)
    check_plan(p, topo(2))


def test_exchange_with_different_predecessors_is_a_race():
    # h0 -> h2 reduce first; then h0 <-> h1 where only h0's side waits for it
    p = plan([T(2, 0, reduce=True), T(0, 1, reduce=True, after=(0,)), T(1, 0, reduce=True)])
    with pytest.raises(PlanError, match="may or may not"):
        check_plan(p, topo())


def test_unordered_copies_race():
    p = plan([T(0, 2), T(1, 2), T(2, 0, after=(0, 1))])
    with pytest.raises(PlanError, match="races"):
        check_plan(p, topo())


def test_per_range_tracking():
    # two halves reduced at different hosts, then exchanged by copies
    p = plan(
        [
            T(1, 0, 0, 5, reduce=True),
            T(0, 1, 5, 5, reduce=True),
            T(2, 0, 0, 5, reduce=True, after=(0, 1)),
            T(2, 1, 5, 5, reduce=True, after=(0, 1)),
            T(0, 1, 0, 5, after=(2, 3)),
            T(1, 0, 5, 5, after=(2, 3)),
            T(0, 2, 0, 5, after=(2, 3)),
            T(1, 2, 5, 5, after=(2, 3)),
        ]
    )
    check_plan(p, topo())
