"""Max-flow bounds: trees (peeling), cycles (networkx max-flow), fatpipe links."""

import pytest

from topocast import Topology, broadcast_bounds
from topocast.topology.model import PhysicalLink as L


def test_tree_bound_is_path_minimum():
    t = Topology(
        "tree",
        ["s", "a", "b", "c"],
        ["x", "y"],
        [
            L("s", "x", 100.0),
            L("a", "x", 30.0),
            L("x", "y", 50.0, bandwidth_ba=5.0),
            L("b", "y", 80.0),
            L("c", "y", 20.0),
        ],
    )
    b = broadcast_bounds(t, "s")
    assert b.per_host_rate == {"a": 30.0, "b": 50.0, "c": 20.0}
    assert b.aggregate_bandwidth == 100.0
    assert b.common_rate == 20.0
    # from b the asymmetric link limits everyone on the other side
    assert broadcast_bounds(t, "b").per_host_rate["a"] == 5.0


def test_two_disjoint_paths_add_up():
    # s -> d by two paths of 10 and 15: max-flow 25, more than any single route
    t = Topology(
        "diamond", ["s", "d"], ["x", "y"], [L("s", "x", 10.0), L("x", "d", 10.0), L("s", "y", 15.0), L("y", "d", 15.0)]
    )
    assert broadcast_bounds(t, "s").per_host_rate["d"] == pytest.approx(25.0)


def test_hosts_may_relay_in_the_bound():
    # ring of hosts: s-a-b-s; b receives both directly and via a
    t = Topology("ring", ["s", "a", "b"], [], [L("s", "a", 10.0), L("a", "b", 10.0), L("b", "s", 10.0)])
    assert broadcast_bounds(t, "s").per_host_rate == {"a": 20.0, "b": 20.0}


def test_fatpipe_is_unbounded_in_the_bound():
    t = Topology("fp", ["s", "a"], ["x"], [L("s", "x", 1e9, sharing="fatpipe"), L("a", "x", 10.0)])
    assert broadcast_bounds(t, "s").per_host_rate["a"] == 10.0
