"""Topology model: validation errors, routing, sharing policies."""

import pytest

from topocast import Topology, TopologyError
from topocast.topology.model import PhysicalLink as L


def two_switch():
    return Topology(
        "t",
        ["s", "a", "b"],
        ["x", "y"],
        [L("s", "x", 100.0, 1e-3), L("a", "x", 50.0), L("x", "y", 10.0, 5e-3, bandwidth_ba=20.0), L("b", "y", 100.0)],
    )


def test_route_is_fewest_hops_and_reports_links():
    t = two_switch()
    assert t.route_nodes("s", "b") == ("s", "x", "y", "b")
    assert t.route_bandwidth("s", "b") == 10.0
    assert t.route_bandwidth("b", "s") == 20.0
    assert t.route_latency("s", "b") == pytest.approx(6e-3)


def test_route_ties_broken_by_widest_bottleneck():
    # two 2-hop paths a->b: via x (bottleneck 10) or via y (bottleneck 50)
    t = Topology(
        "tie", ["a", "b"], ["x", "y"], [L("a", "x", 10.0), L("x", "b", 100.0), L("a", "y", 50.0), L("y", "b", 100.0)]
    )
    assert t.route_nodes("a", "b") == ("a", "y", "b")


def test_explicit_routes_win():
    t = Topology(
        "r",
        ["a", "b"],
        ["x", "y"],
        [L("a", "x", 10.0), L("x", "b", 100.0), L("a", "y", 50.0), L("y", "b", 100.0)],
        routes={("a", "b"): ("a", "x", "b")},
    )
    assert t.route_nodes("a", "b") == ("a", "x", "b")


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(hosts=["a", "a"], links=[]), "duplicate name"),
        (dict(hosts=["a", "b"], links=[L("a", "z", 1.0)]), "not a declared host or switch"),
        (dict(hosts=["a", "b"], links=[L("a", "b", 0.0)]), "positive"),
        (dict(hosts=["a", "b"], links=[L("a", "b", -5.0)]), "positive"),
        (dict(hosts=["a", "b"], links=[L("a", "b", 1.0, bandwidth_ba=0.0)]), "bandwidth_ba"),
        (dict(hosts=["a", "b", "c"], links=[L("a", "b", 1.0)]), "cannot be reached"),
        (dict(hosts=["a", "b"], links=[L("a", "b", 1.0), L("b", "a", 2.0)]), "duplicate link"),
        (dict(hosts=["a", "b"], links=[L("a", "b", 1.0, sharing="weird")]), "sharing"),
    ],
)
def test_invalid_topologies_name_the_element(kwargs, match):
    with pytest.raises(TopologyError, match=match) as err:
        Topology("bad", kwargs["hosts"], [], kwargs["links"], source="bad.yaml")
    assert str(err.value).startswith("bad.yaml: ")


def test_shared_link_is_one_resource_fatpipe_none():
    t = Topology("p", ["a", "b", "c"], [], [L("a", "b", 10.0, sharing="shared"), L("b", "c", 10.0, sharing="fatpipe")])
    ab, ba = t.link_id("a", "b"), t.link_id("b", "a")
    assert t.link_resource[ab] == t.link_resource[ba] >= 0
    assert t.link_resource[t.link_id("b", "c")] == -1


def test_injection_and_gamma_defaults():
    t = Topology("i", ["a", "b"], [], [L("a", "b", 1.0)], injection_time={"a": 2.0}, injection_pair={("a", "b"): 3.0})
    assert t.injection("a", "b") == 3.0
    assert t.injection("b", "a") == 0.0
    assert t.gamma("a") == 0.0


def test_directed_link_has_one_direction_only():
    one_way = Topology(
        "o",
        ["a", "b", "c"],
        ["x"],
        [L("a", "x", 5.0), L("x", "b", 5.0), L("b", "c", 1.0), L("c", "x", 9.0, directed=True)],
    )
    assert one_way.route_nodes("c", "a") == ("c", "x", "a")
    with pytest.raises(TopologyError):
        one_way.link_id("x", "c")
