"""two_tree: the double binary tree's structure, its byte layout, and full bandwidth with a
shallow depth where a pipeline pays its fill time."""

import dataclasses

import numpy as np
import pytest

from topocast import Broadcast, Topology, broadcast_bounds, check_plan, simulate
from topocast.bounds.relay import relay_ceiling
from topocast.errors import InputError
from topocast.planners import get_planner
from topocast.planners.broadcast.two_tree import nested_two_tree, route_hierarchy, two_stream_layout
from topocast.topology.generators import multi_cluster_tree
from topocast.topology.model import PhysicalLink as L


def _depths(parents):
    depth = []
    for j in range(len(parents)):
        d, k, seen = 0, j, set()
        while parents[k] >= 0:
            assert k not in seen, "cycle"
            seen.add(k)
            k = int(parents[k])
            d += 1
        depth.append(d)
    return depth


def _random_nesting(rng, positions):
    """A random nesting of ``positions`` (lists of two or more pieces, ints at the leaves)."""
    if len(positions) == 1:
        return positions[0]
    k = int(rng.integers(2, min(len(positions), 6) + 1))
    cuts = np.sort(rng.choice(np.arange(1, len(positions)), size=k - 1, replace=False))
    return [_random_nesting(rng, part.tolist()) for part in np.split(np.asarray(positions), cuts)]


def _pieces(nesting):
    if isinstance(nesting, int):
        return [[nesting]]
    out, mine = [], []
    for p in nesting:
        sub = _pieces(p)
        out.extend(sub)
        mine.extend(sub[-1])
    return out + [mine]


@pytest.mark.parametrize("n", [*range(1, 20), 63, 64, 100, 333])
def test_two_trees_span_every_host_send_two_halves_and_enter_each_piece_once(n):
    rng = np.random.default_rng(n)
    for nesting in (list(range(n)) if n > 1 else 0, _random_nesting(rng, list(range(n)))):
        t1, t2 = nested_two_tree(nesting, n)
        sent = np.zeros(n, dtype=np.int64)
        for parents in (t1, t2):
            assert (parents == -1).sum() == 1  # one root, fed by the source
            sent += np.bincount(parents[parents >= 0], minlength=n)
            _depths(parents)  # a tree: no cycle
            for piece in _pieces(nesting):
                inside = np.zeros(n, dtype=bool)
                inside[piece] = True
                entries = [j for j in piece if parents[j] < 0 or not inside[parents[j]]]
                assert len(entries) == 1, (piece, entries)
        assert sent.max(initial=0) <= 2  # at most two half-streams out of any host


def _repeating_nesting(rng, first, sizes):
    """Switches of the given sizes (runs of consecutive positions from ``first``), grouped at
    random into sites: shapes that repeat within a nesting and between nestings."""
    switches, pos = [], first
    for k in sizes:
        switches.append(list(range(pos, pos + k)) if k > 1 else pos)
        pos += k
    cuts = np.sort(rng.choice(np.arange(1, len(switches)), size=min(3, len(switches) - 1), replace=False))
    sites = [s.tolist() if len(s) > 1 else s[0] for s in np.split(np.array(switches, dtype=object), cuts)]
    return sites, pos


def test_pieces_built_once_are_copied_exactly(monkeypatch):
    """The piece memo (one per plan) gives the trees the pieces built afresh give."""
    from topocast.planners.broadcast import two_tree

    rng = np.random.default_rng(5)
    cases = []
    for _ in range(12):
        sizes = rng.choice([1, 2, 3, 5, 8, 8, 13], size=int(rng.integers(3, 9))).tolist()
        cases.append(_repeating_nesting(rng, 0, sizes))
    memo = two_tree._PieceMemo()
    kept = [nested_two_tree(nesting, n, memo) for nesting, n in cases]
    assert memo.built  # some pieces recorded (and reused: the sizes repeat)
    monkeypatch.setattr(two_tree._PieceMemo, "known", lambda self, shape_id, need: False)
    for (nesting, n), got in zip(cases, kept):
        for mine, fresh in zip(got, nested_two_tree(nesting, n)):
            assert (mine == fresh).all()


def test_depth_is_logarithmic_inside_one_switch():
    for n in (7, 100, 1000):
        for parents in nested_two_tree(list(range(n)), n):
            assert max(_depths(parents)) <= int(np.ceil(np.log2(n + 2)))


def test_a_line_of_switches_nests_deeper_than_the_recursion_limit():
    # hosts 0, 1, ... behind a line of 1,500 switches: piece j = hosts j.. (docs/algorithms.md
    # 11.3: every piece is entered once per tree, so the depth is at least the line's length)
    n = 1500
    nesting: list = [n - 2, n - 1]
    for j in range(n - 3, -1, -1):
        nesting = [j, nesting]
    for parents in nested_two_tree(nesting, n):
        assert (parents == -1).sum() == 1
        entries = np.zeros(n + 1, dtype=np.int64)  # hop p -> k with p < j <= k enters piece j
        for k, p in enumerate(parents.tolist()):
            if p < k:
                entries[p + 1] += 1
                entries[k + 1] -= 1
        assert (np.cumsum(entries)[:n] == 1).all()
        assert max(_depths(parents)) >= n - 1


def test_route_hierarchy_groups_the_hosts_behind_each_switch_link():
    topo = multi_cluster_tree(40, n_clusters=8, bandwidth="mixed", seed=3)
    src = topo.hosts[0]
    order, nesting = route_hierarchy(topo, src, topo.hosts[1:])
    assert sorted(order) == sorted(topo.hosts[1:])
    pieces = {frozenset(order[j] for j in piece) for piece in _pieces(nesting)}
    for lid in range(len(topo.links)):  # the hosts whose route from src crosses a switch link
        a, b = topo.nodes[topo.link_src[lid]], topo.nodes[topo.link_dst[lid]]
        if topo.is_host(a) or topo.is_host(b):
            continue
        behind = frozenset(h for h in order if lid in topo.route(src, h))
        assert not behind or behind in pieces, (a, b)


@pytest.mark.parametrize("rates", [[1.0], [3.0, 1.0], [5.0, 2.0, 2.0, 0.5]])
def test_two_stream_layout_tiles_the_message_at_each_level_end(rates):
    size = 1_000_003
    layout = two_stream_layout(size, rates)
    total = 0.0
    for level, (a, b) in enumerate(layout):
        total += rates[level]
        t_end = size / total
        held = np.zeros(size, dtype=bool)
        for j in range(level):
            p = int(np.floor(size * rates[j] / (2 * total)))
            for stream in layout[j]:
                left = p
                for off, ln in stream:
                    take = min(ln, left)
                    held[off : off + take] = True
                    left -= take
        for stream in (a, b):
            nbytes = sum(ln for _, ln in stream)
            # whole bytes: each of the 2L floors above may leave one byte more to this level
            assert nbytes <= rates[level] / 2 * t_end + level + 1
            for off, ln in stream:
                held[off : off + ln] = True
        assert held.all(), level


def _star(n, latency, sharing="duplex"):
    hosts = [f"h{i}" for i in range(n)]
    links = [L(h, "sw", 125e6, latency, sharing=sharing) for h in hosts]
    return Topology(f"star-{n}-{sharing}", hosts, ["sw"], links)


def test_full_bandwidth_where_a_pipeline_pays_its_fill():
    topo = _star(64, 2e-3)
    req = Broadcast("h0", 10**9)
    bound = broadcast_bounds(topo, "h0").aggregate_bandwidth
    plan = get_planner("broadcast", "two_tree")(topo, req)
    check_plan(plan, topo)
    tt = simulate(plan, topo).aggregate_bandwidth / bound
    st = simulate(get_planner("broadcast", "stable")(topo, req), topo).aggregate_bandwidth / bound
    assert plan.notes["depth"] <= 7
    assert tt >= 0.99 > st  # 63 hops x 4 ms of fill against 7 x 4 ms


def test_half_duplex_hosts_reach_the_relay_ceiling():
    topo = _star(32, 1e-3, sharing="shared")
    plan = get_planner("broadcast", "two_tree")(topo, Broadcast("h0", 10**9))
    check_plan(plan, topo)
    bound = broadcast_bounds(topo, "h0")
    ceiling = relay_ceiling(topo, "h0", bound.per_host_rate)
    assert simulate(plan, topo).aggregate_bandwidth >= 0.95 * ceiling


def test_heterogeneous_levels_stay_under_the_bound():
    topo = multi_cluster_tree(24, n_clusters=4, bandwidth="mixed", asymmetric=True, seed=2)
    topo = topo.replace(links=[dataclasses.replace(pl, latency=1e-3) for pl in topo.physical_links])
    plan = get_planner("broadcast", "two_tree")(topo, Broadcast(topo.hosts[0], 10**9))
    check_plan(plan, topo)
    bound = broadcast_bounds(topo, topo.hosts[0])
    result = simulate(plan, topo)
    assert set(result.per_host) == set(topo.hosts[1:])
    for h, r in result.per_host.items():
        assert 0 < r.rate <= bound.per_host_rate[h] * (1 + 1e-9)


@pytest.mark.parametrize("setting", ["mixed", "switch-uniform-100-1000"])
def test_switch_links_as_slow_as_host_links_cost_no_bandwidth(setting):
    # each tree enters every switch subtree once: the trees load no link more than stable's
    # chains, so the LP keeps stable's rates and the shallow trees win on the fill
    topo = multi_cluster_tree(120, n_clusters=12, bandwidth=setting, seed=4)
    topo = topo.replace(links=[dataclasses.replace(pl, latency=2e-3) for pl in topo.physical_links])
    req = Broadcast(topo.hosts[0], 10**9)
    plan = get_planner("broadcast", "two_tree")(topo, req)
    check_plan(plan, topo)
    stable = get_planner("broadcast", "stable")(topo, req)
    expected = plan.notes["expected_aggregate_bandwidth"]
    assert expected == pytest.approx(stable.notes["expected_aggregate_bandwidth"], rel=1e-6)
    bound = broadcast_bounds(topo, req.source).aggregate_bandwidth
    assert simulate(plan, topo).aggregate_bandwidth >= 0.95 * bound


def test_bad_rate_tolerance_is_named():
    with pytest.raises(InputError, match="rate_tolerance"):
        get_planner("broadcast", "two_tree")(_star(4, 0.0), Broadcast("h0", 10**6), rate_tolerance=2)


def test_optimal_takes_two_tree_where_the_chain_fill_matters():
    req = Broadcast("h0", 10**9)
    plan = get_planner("broadcast", "optimal")(_star(300, 2e-3), req)
    assert plan.planner == "optimal" and plan.notes["method"].startswith("two_tree")
    # no latency, many hosts: the pipelines' fill is nil, step 4 does not even simulate
    flat = get_planner("broadcast", "optimal")(_star(300, 0.0), req)
    assert "predicted_aggregate_bandwidth" not in flat.notes
    assert flat.notes["method"] == "stable reaches the max-flow bound"


def test_rates_stay_feasible_when_the_trees_cross_links_far_slower_than_stables():
    """Found by the property tests: stable's one fast path (h1 -> h2 -> h0 at 125 MB/s) is
    not a path of the two trees, which cross 10 B/s links; the LP's floor for level 1 must
    not ask those links for more than they carry."""
    links = [
        L("h0", "h1", 10.0),
        L("h1", "h2", 125e6),
        L("h0", "h3", 10.0),
        L("h0", "h4", 10.0),
        L("h3", "h1", 10.0),
        L("h0", "h2", 10.0, bandwidth_ba=125e6),
    ]
    topo = Topology("slow-crossings", ["h0", "h1", "h2", "h3", "h4"], [], links)
    plan = get_planner("broadcast", "two_tree")(topo, Broadcast("h1", 1000, ("h0",)))
    check_plan(plan, topo)
    assert simulate(plan, topo).per_host["h0"].completed


@pytest.mark.parametrize("seed", [3, 8])
def test_rate_lp_written_without_repeated_rows_plans_the_same(monkeypatch, seed):
    """The rate LP keeps one of each repeated resource row: the same programme, so the same
    rates (and plan) as with every row written out."""
    from topocast.planners.broadcast import two_tree
    from topocast.topology.multisite import multi_site_platform

    topo = multi_site_platform(60, seed=seed)
    request = Broadcast(topo.hosts[0], 10**9)
    a = np.array([[1.0, 0.0], [0.5, 1.0], [1.0, 0.0], [0.5, 1.0], [1.0, 0.0]])
    b = np.array([2.0, 1.0, 2.0, 3.0, 2.0])
    kept_a, kept_b = two_tree._distinct_rows(a, b)
    assert kept_a.tolist() == [[1.0, 0.0], [0.5, 1.0], [0.5, 1.0]] and kept_b.tolist() == [2.0, 1.0, 3.0]
    fewer = get_planner("broadcast", "two_tree")(topo, request)
    monkeypatch.setattr(two_tree, "_distinct_rows", lambda a_ub, b_ub: (a_ub, b_ub))
    every = get_planner("broadcast", "two_tree")(topo, request)
    assert fewer.notes["levels"] == every.notes["levels"] > 1
    assert fewer.notes["level_rates"] == pytest.approx(every.notes["level_rates"], rel=1e-9)
    assert [(t.src, t.dst, t.ranges, t.upstream) for t in fewer.transfers] == [
        (t.src, t.dst, t.ranges, t.upstream) for t in every.transfers
    ]


def test_hops_list_parents_first_by_depth_and_count_the_depth():
    """_hops orders a tree's hops by depth (ties in position order) and gives its depth, as a
    climb from every position to its root does."""
    from topocast.planners.broadcast.two_tree import _hops

    rng = np.random.default_rng(11)
    for _ in range(300):
        n = int(rng.integers(1, 80))
        parents = [-1 if i == 0 or rng.random() < 0.05 else int(rng.integers(0, i)) for i in range(n)]
        perm = rng.permutation(n)  # positions need not be listed parents first
        shuffled = [-1] * n
        for i, p in enumerate(parents):
            shuffled[perm[i]] = -1 if p < 0 else int(perm[p])
        depth = _depths(shuffled)
        order = sorted(range(n), key=lambda j: (depth[j], j))
        members = [f"h{j}" for j in range(n)]
        want = [("src" if shuffled[j] < 0 else members[shuffled[j]], members[j]) for j in order]
        assert _hops(members, shuffled, "src") == (want, max(depth) + 1)
