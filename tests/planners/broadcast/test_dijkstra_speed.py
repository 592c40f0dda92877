"""``dijkstra``'s load-aware greedy at scale: the lazy re-evaluation and the all-pairs tree
routes give exactly the tree of the plain greedy (every candidate re-evaluated each step)."""

import numpy as np
import pytest

from topocast.planners.broadcast.dijkstra import _route_matrix, _tree_route_matrix, dijkstra_tree
from topocast.topology.generators import fat_tree, multi_cluster_tree, random_tree


def plain_greedy(topology, source, destinations):
    """The definition, step by step: every (u in tree, v not) pair re-evaluated at every step."""
    hosts = [source, *destinations]
    h = len(hosts)
    mat = _route_matrix(topology, hosts)
    cap = np.append(topology.link_bandwidth, np.inf)
    load = np.zeros(len(cap))
    in_tree = np.zeros(h, dtype=bool)
    in_tree[0] = True
    rate = np.zeros(h)
    rate[0] = np.inf
    hops = []
    for _ in range(h - 1):
        cand = np.minimum(rate[:, None], (cap / (load + 1.0))[mat].min(axis=2))
        cand[~in_tree, :] = -1.0
        cand[:, in_tree] = -1.0
        u, v = divmod(int(np.argmax(cand)), h)
        in_tree[v] = True
        rate[v] = cand[u, v]
        r = mat[u, v]
        load[r[r < len(topology.links)]] += 1.0
        hops.append((hosts[u], hosts[v]))
    return hops


TOPOLOGIES = [
    *(random_tree(60, 15, min_mbit=100, max_mbit=1000, asymmetric=a, seed=s) for s in (1, 2) for a in (False, True)),
    random_tree(40, 8, min_mbit=100, max_mbit=100, seed=3),  # every link equal: ties everywhere
    multi_cluster_tree(48, n_clusters=6, bandwidth="mixed", seed=4),
    fat_tree(4),  # not a tree: routes by search
]


@pytest.mark.parametrize("topo", TOPOLOGIES, ids=lambda t: t.name)
def test_lazy_greedy_builds_the_plain_greedy_tree(topo):
    src, dests = topo.hosts[0], topo.hosts[1:]
    assert dijkstra_tree(topo, src, dests) == plain_greedy(topo, src, dests)


@pytest.mark.parametrize("topo", [t for t in TOPOLOGIES if t.is_tree()], ids=lambda t: t.name)
def test_all_pairs_tree_routes_are_the_topology_routes(topo):
    hosts = topo.hosts[::-1]  # any order, source first or not
    mat = _tree_route_matrix(topo, hosts)
    pad = len(topo.links)
    for i, u in enumerate(hosts):
        for j, v in enumerate(hosts):
            assert tuple(int(x) for x in mat[i, j] if x != pad) == (topo.route(u, v) if u != v else ())


def plain_routed_greedy(topology, source, destinations):
    """The definition on declared routes: a hop is worth ``min(rate[u], c(e) / (load(e) + k))``
    over the resources e its route crosses k times, every candidate re-evaluated each step."""
    from collections import Counter

    from topocast.planners.broadcast._trees import resource_arrays

    hosts = [source, *destinations]
    res_of, cap = resource_arrays(topology)
    uses = {
        (i, j): Counter(res_of[list(topology.route(u, v))].tolist())
        for i, u in enumerate(hosts)
        for j, v in enumerate(hosts)
        if i != j
    }
    load = np.zeros(len(cap))
    rate = {0: np.inf}
    hops = []
    while len(rate) < len(hosts):
        best, pick = -1.0, None
        for (i, j), route in uses.items():
            if i in rate and j not in rate:
                val = min([rate[i], *(cap[e] / (load[e] + k) for e, k in route.items())])
                if val > best:
                    best, pick = val, (i, j)
        i, j = pick
        rate[j] = best
        for e, k in uses[pick].items():
            load[e] += k
        hops.append((hosts[i], hosts[j]))
    return hops


@pytest.mark.parametrize("seed", [1, 2])
def test_lazy_greedy_on_declared_routes_builds_the_plain_greedy_tree(seed):
    from topocast.topology.multisite import multi_site_platform

    topo = multi_site_platform(24, seed=seed)
    assert topo.routes
    src, dests = topo.hosts[0], topo.hosts[1:]
    assert dijkstra_tree(topo, src, dests) == plain_routed_greedy(topo, src, dests)


def test_stale_ties_are_each_evaluated_once():
    """Many candidates tied at the top bound, all stale (a switch uplink every one of them
    crosses was just loaded): each is re-evaluated once, not once per chunk (which made the
    greedy quadratic in the ties on 1,500-host multi-site platforms)."""
    from topocast.planners.broadcast.dijkstra import REFRESH_CHUNK, first_exact

    ties = np.arange(0, 300_000, 3)
    values = np.full(300_000, 5.0)
    seen = []

    def stale(part):
        seen.append(part.copy())
        return np.full(len(part), 4.0)

    assert first_exact(ties, 5.0, stale, values) == -1
    evaluated = np.concatenate(seen)
    assert len(evaluated) == len(ties) and np.array_equal(np.sort(evaluated), ties)
    assert (values[ties] == 4.0).all()

    seen.clear()
    exact_at = ties[5000]

    def one_exact(part):
        seen.append(part.copy())
        return np.where(part >= exact_at, 5.0, 4.0)

    assert first_exact(ties, 5.0, one_exact, values) == exact_at
    assert sum(len(p) for p in seen) < 2 * 5000 + 2 * REFRESH_CHUNK


def test_lazy_greedy_evaluates_each_candidate_at_most_once_per_step(monkeypatch):
    """On a multi-site platform (declared routes through shared uplinks: large tied sets of
    stale candidates), no step of the lazy greedy re-evaluates a candidate twice."""
    from topocast.planners.broadcast import dijkstra
    from topocast.topology.multisite import multi_site_platform

    topo = multi_site_platform(160, seed=3)
    calls = []
    real = dijkstra.first_exact

    def counting(ties, top, evaluate, values):
        parts = []
        found = real(ties, top, lambda part: (parts.append(part), evaluate(part))[1], values)
        calls.append((len(ties), np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)))
        return found

    monkeypatch.setattr(dijkstra, "first_exact", counting)
    dijkstra_tree(topo, topo.hosts[0], topo.hosts[1:])
    assert calls
    for n_ties, evaluated in calls:
        assert len(evaluated) <= n_ties and len(np.unique(evaluated)) == len(evaluated)


@pytest.mark.parametrize("seed,sharing", [(5, "shared"), (6, "duplex")])
def test_every_hop_of_a_cut_rectangle_crosses_its_resource(seed, sharing):
    """The rectangles the greedy lowers when a hop loads a resource (tree platforms) hold only
    hops whose routes, declared or not, cross that resource, so ``c / (load + 1)`` bounds
    each of them; and the greedy still builds the plain greedy's tree."""
    from dataclasses import replace

    from topocast.planners.broadcast._trees import resource_arrays
    from topocast.planners.broadcast.dijkstra import _Cuts
    from topocast.topology.multisite import multi_site_platform

    topo = multi_site_platform(30, seed=seed, n_sites=3)
    topo = topo.replace(links=[replace(pl, sharing=sharing) for pl in topo.physical_links])
    hosts = list(topo.hosts)
    res_of, cap = resource_arrays(topo)
    cuts = _Cuts(topo, hosts, res_of)
    nothing = np.zeros((len(cap) + 1, len(hosts)), dtype=bool)  # no per-host term: every rectangle
    crossed = {
        (i, j): set(res_of[list(topo.route(u, v))].tolist())
        for i, u in enumerate(hosts)
        for j, v in enumerate(hosts)
        if i != j
    }
    seen = 0
    for res in range(len(cap)):
        for near, far in cuts.rectangles(res, nothing, nothing):
            for i in np.flatnonzero(near).tolist():
                for j in np.flatnonzero(far).tolist():
                    assert res in crossed[(i, j)]
                    seen += 1
    assert seen
    assert dijkstra_tree(topo, hosts[0], hosts[1:]) == plain_routed_greedy(topo, hosts[0], hosts[1:])
