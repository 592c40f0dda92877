"""Built-in examples: all load, and the advertised properties hold."""

import pytest

from topocast.errors import TopologyError
from topocast.topology import load_topology
from topocast.topology.builtin import builtin_names, builtin_topology

MBIT = 125_000


@pytest.mark.parametrize("name", builtin_names())
def test_every_builtin_loads(name):
    t = load_topology(f"builtin:{name}")
    assert t.hosts and t.physical_links
    assert t.source == f"builtin:{name}"


def test_required_names_present():
    names = set(builtin_names())
    assert {"stable-example", "two-clusters", "hetero-2switch", "uniform-2switch"} <= names
    assert any("fat-tree" in n for n in names) and any("multi-cluster" in n for n in names)


def test_unknown_builtin_lists_names():
    with pytest.raises(TopologyError) as ei:
        load_topology("builtin:nope")
    assert "two-clusters" in str(ei.value) and "builtin:nope" in str(ei.value)


def _stable_trees(t, source):
    """The stable-broadcast construction of docs/algorithms.md 1.2 on a tree (test oracle)."""
    res = {i: t.link_bandwidth[i] for i in range(len(t.links))}
    dests = [h for h in t.hosts if h != source]
    trees = []
    while True:
        order = [d for d in dests if all(res[l] > 1e-9 for l in t.route(source, d))]
        # DFS preorder of the tree = hosts in the order of the file here
        if not order:
            return trees
        hops = list(zip([source] + order[:-1], order))
        uses = {}
        for u, v in hops:
            for l in t.route(u, v):
                uses[l] = uses.get(l, 0) + 1
        v = min(res[l] / n for l, n in uses.items())
        for l, n in uses.items():
            res[l] -= v * n
        trees.append((order, v))


def test_stable_example_one_spanning_two_partial():
    t = builtin_topology("stable-example")
    assert t.hosts == ("S", "A", "B", "C") and t.is_tree()
    trees = _stable_trees(t, "S")
    assert [o for o, _ in trees] == [["A", "B", "C"], ["A", "B"], ["A"]]
    assert [v / MBIT for _, v in trees] == [100, 200, 300]
    # each destination gets its single-transfer bandwidth
    assert {d: t.route_bandwidth("S", d) / MBIT for d in "ABC"} == {"A": 600, "B": 300, "C": 100}


def test_hetero_and_uniform_2switch():
    h = builtin_topology("hetero-2switch")
    u = builtin_topology("uniform-2switch")
    names = ("s", "a1", "a2", "a3", "b1", "b2", "b3", "b4")
    assert h.hosts == names and u.hosts == names
    assert h.route_bandwidth("s", "b4") == 10 * MBIT
    assert h.route_bandwidth("s", "b1") == 40 * MBIT
    assert h.route_bandwidth("s", "a2") == 200 * MBIT
    assert {pl.bandwidth for pl in u.physical_links} == {200 * MBIT}


def test_two_clusters():
    t = builtin_topology("two-clusters")
    assert len(t.hosts) == 8 and t.hosts[0] == "s"
    bws = sorted({pl.bandwidth for pl in t.physical_links})
    assert bws[0] * 10 == bws[-1]  # some host links are 10x slower
    assert t.route_nodes("s", "b1") == ("s", "swA", "swB", "b1")
