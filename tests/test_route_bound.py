"""The route-aware bounds (``topocast.bounds.route``): no plan on the routes beats them.

* On a tree whose routes are the tree's own, with the same bandwidth both ways, they equal
  Σ max-flow (Stable Broadcast reaches it).
* On small platforms they are at least every packing of rated trees over the routes (found
  by enumerating every tree) and at least the LP over the rate of every host pair's transfer.
* The aggregate bound holds for plans that finish hosts one after another, which beat the
  steady bound; simulated plans never exceed it.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from topocast.bounds import broadcast_bounds
from topocast.bounds.route import route_bounds, routes_are_fixed, solve_route_bounds
from topocast.plan import Broadcast, Plan, Transfer
from topocast.planners.registry import get_planner
from topocast.sim import simulate
from topocast.topology.generators import random_tree
from topocast.topology.model import PhysicalLink, Topology
from topocast.topology.multisite import multi_site_platform

quick = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _bounds(topo, src):
    b = broadcast_bounds(topo, src)
    return b, route_bounds(topo, src, b.per_host_rate)


@quick
@given(st.integers(2, 30), st.integers(0, 8), st.booleans(), st.integers(0, 10**6))
def test_equal_to_the_max_flow_sum_on_symmetric_trees(n, s, leaves, seed):
    """Stable Broadcast's result, which ``route_bounds`` takes on such trees without the LP:
    the LP itself finds Σ max-flow, and each host's own bound is its max-flow."""
    topo = random_tree(n, s, hosts_as_leaves=leaves, seed=seed)
    src = topo.hosts[seed % n]
    b, rb = _bounds(topo, src)
    solved = solve_route_bounds(topo, src, b.per_host_rate)
    assert routes_are_fixed(topo)
    for bound in (rb, solved):
        assert bound.steady == pytest.approx(b.aggregate_bandwidth, rel=1e-9)
        assert bound.aggregate == pytest.approx(b.aggregate_bandwidth, rel=1e-9)
        for h, rate in b.per_host_rate.items():
            assert bound.per_host_rate[h] == pytest.approx(rate, rel=1e-9)


@quick
@given(st.integers(2, 14), st.integers(0, 5), st.integers(0, 10**6))
def test_never_above_the_max_flow_sum_and_never_beaten_by_a_plan(n, s, seed):
    topo = random_tree(n, s, asymmetric=True, seed=seed)
    src = topo.hosts[seed % n]
    b, rb = _bounds(topo, src)
    assert rb.steady <= rb.aggregate * (1 + 1e-9) and rb.aggregate <= b.aggregate_bandwidth * (1 + 1e-9)
    for name in ("stable", "depth_first", "dijkstra", "flat"):
        res = simulate(get_planner("broadcast", name)(topo, Broadcast(src, 10**12)), topo)
        assert res.aggregate_bandwidth <= rb.aggregate * (1 + 1e-9), name
        for h, r in res.per_host.items():
            assert r.rate <= rb.per_host_rate[h] * (1 + 1e-9), (name, h)
    stable = simulate(get_planner("broadcast", "stable")(topo, Broadcast(src, 10**12)), topo)
    assert stable.aggregate_bandwidth <= rb.steady * (1 + 1e-9)  # constant rates: the steady bound holds


# ------------------------------------------------------------------ small platforms, exhaustively
def _uses(topo, route) -> np.ndarray:
    """Capacity units a route takes from each resource (a link crossed twice counts twice)."""
    load = np.zeros(len(topo.resource_capacity))
    for lid in route:
        for res in (topo.link_resource[lid], topo.link_direction_resource[lid]):
            if res >= 0:
                load[res] += 1
    return load


def _trees(hosts, src):
    """Every arborescence rooted at ``src`` over every subset of hosts: (members, edges)."""
    others = [h for h in hosts if h != src]
    for k in range(1, len(others) + 1):
        for members in itertools.combinations(others, k):
            nodes = (src, *members)
            for parents in itertools.product(nodes, repeat=k):
                par = dict(zip(members, parents))
                if any(par[m] == m for m in members):
                    continue
                ok = True
                for m in members:  # every member reaches the source
                    seen, x = set(), m
                    while x != src and ok:
                        if x in seen:
                            ok = False
                        seen.add(x)
                        x = par[x]
                if ok:
                    yield members, [(par[m], m) for m in members]


def _packing_optimum(topo, src) -> float:
    """max Σ_d r_d over rated trees on the routes (r_d = Σ of the rates of d's trees)."""
    cols, gain = [], []
    for members, edges in _trees(topo.hosts, src):
        cols.append(sum(_uses(topo, topo.route(u, v)) for u, v in edges))
        gain.append(len(members))
    a = np.array(cols).T
    res = linprog(-np.array(gain, float), A_ub=a, b_ub=topo.resource_capacity, method="highs")
    assert res.status == 0
    return -res.fun


def _pair_lp(topo, src, maxflow) -> float:
    """The LP over every host pair's rate f_uv on its route, r_d <= Σ_u f_ud, r_d <= out_S."""
    hosts = list(topo.hosts)
    dests = [h for h in hosts if h != src]
    pairs = [(u, v) for u in hosts for v in hosts if u != v]
    n_p, n_r = len(pairs), len(dests)
    rows, rhs = [], []
    for res in range(len(topo.resource_capacity)):
        row = np.zeros(n_p + n_r)
        for k, (u, v) in enumerate(pairs):
            row[k] = _uses(topo, topo.route(u, v))[res]
        rows.append(row)
        rhs.append(topo.resource_capacity[res])
    for j, d in enumerate(dests):
        row = np.zeros(n_p + n_r)
        row[n_p + j] = 1
        for k, (u, v) in enumerate(pairs):
            if v == d:
                row[k] = -1
        rows.append(row)
        rhs.append(0.0)
        row = np.zeros(n_p + n_r)
        row[n_p + j] = 1
        for k, (u, v) in enumerate(pairs):
            if u == src:
                row[k] = -1
        rows.append(row)
        rhs.append(0.0)
    c = np.r_[np.zeros(n_p), -np.ones(n_r)]
    bounds = [(0, None)] * n_p + [(0, maxflow[d]) for d in dests]
    res = linprog(c, A_ub=np.array(rows), b_ub=np.array(rhs), bounds=bounds, method="highs")
    assert res.status == 0
    return -res.fun


def _small_platforms():
    yield multi_site_platform(4, seed=1)  # two sites of two hosts
    yield multi_site_platform(5, seed=3)
    yield multi_site_platform(5, seed=4, n_sites=1)  # one site: every pair up to the gateway and back
    yield random_tree(4, 2, asymmetric=True, seed=7)
    # a star on shared links with one declared route that goes out to a far switch and back
    links = [
        PhysicalLink("s", "sw", 4.0, sharing="shared"),
        PhysicalLink("a", "sw", 3.0, sharing="shared"),
        PhysicalLink("b", "sw", 5.0),
        PhysicalLink("sw", "far", 2.0, sharing="shared"),
        PhysicalLink("c", "far", 6.0),
    ]
    routes = {("a", "b"): ("a", "sw", "far", "sw", "b")}
    yield Topology("detour", ["s", "a", "b", "c"], ["sw", "far"], links, routes=routes)


@pytest.mark.parametrize("topo", list(_small_platforms()), ids=lambda t: t.name)
def test_at_least_every_packing_of_trees_and_the_pair_lp(topo):
    for src in topo.hosts[:2]:
        b, rb = _bounds(topo, src)
        packing = _packing_optimum(topo, src)
        pair = _pair_lp(topo, src, b.per_host_rate)
        assert packing <= pair * (1 + 1e-9)  # the pair LP relaxes every packing
        assert pair <= rb.steady * (1 + 1e-9)  # and the route-aware bound relaxes the pair LP
        assert rb.steady <= b.aggregate_bandwidth * (1 + 1e-9)


def test_routes_up_to_the_gateway_and_back_count_twice():
    """One site, one switch, n hosts on 1 GB/s links under a 10 GB/s shared uplink: every
    route into a host crosses the uplink down, every route out of it crosses it up, so the
    uplink carries Σ r + Σ out <= 10 GB/s with Σ r <= Σ out: Σ r <= 5 GB/s."""
    hosts = [f"h{i}" for i in range(40)]
    links = [PhysicalLink(h, "j", 1e9, sharing="shared") for h in hosts]
    links.append(PhysicalLink("j", "gw", 1e10, sharing="shared"))
    routes = {(a, b): (a, "j", "gw", "j", b) for a in hosts for b in hosts if a != b}
    topo = Topology("one-switch", hosts, ["j", "gw"], links, routes=routes)
    _, rb = _bounds(topo, "h0")
    assert rb.steady == pytest.approx(5e9, rel=1e-6)


def test_a_plan_that_finishes_hosts_one_after_another_beats_the_steady_bound_not_the_aggregate():
    """The source sends at C; the destinations can hardly send (up-links of 1 B/s). Served one
    after another, host k finishes at k M / C: Σ M / T = C (1 + 1/2 + ... + 1/n) > C."""
    n, cap, size = 4, 1e9, 10**9
    hosts = ["s"] + [f"d{i}" for i in range(n)]
    links = [PhysicalLink("s", "sw", cap, bandwidth_ba=1.0)]
    links += [PhysicalLink(h, "sw", 1.0, bandwidth_ba=cap) for h in hosts[1:]]
    topo = Topology("one-by-one", hosts, ["sw"], links)
    b, rb = _bounds(topo, "s")
    transfers = tuple(Transfer.of("s", d, 0, size, after=(k - 1,) if k else ()) for k, d in enumerate(hosts[1:]))
    plan = Plan.broadcast("s", size, hosts[1:], transfers)
    res = simulate(plan, topo)
    harmonic = sum(1 / k for k in range(1, n + 1))
    assert res.aggregate_bandwidth == pytest.approx(cap * harmonic, rel=1e-6)
    assert rb.steady < res.aggregate_bandwidth
    assert res.aggregate_bandwidth <= rb.aggregate * (1 + 1e-9)
    assert rb.aggregate == pytest.approx(cap * harmonic, rel=1e-6)


@pytest.mark.parametrize("seed", range(3))
def test_simulated_plans_on_multi_site_platforms_stay_below_the_aggregate_bound(seed):
    topo = multi_site_platform(24, seed=seed)
    src = topo.hosts[0]
    b, rb = _bounds(topo, src)
    assert rb.steady < b.aggregate_bandwidth
    for name in ("stable", "depth_first", "flat", "dijkstra"):
        res = simulate(get_planner("broadcast", name)(topo, Broadcast(src, 10**10)), topo)
        assert res.aggregate_bandwidth <= rb.aggregate * (1 + 1e-9), name
        for h, r in res.per_host.items():
            assert r.rate <= rb.per_host_rate[h] * (1 + 1e-9), (name, h)


def test_mandatory_links_match_every_route_on_a_multi_site_platform():
    """The tree walk plus the declared routes give, per host, exactly the links every route
    into it crosses (checked against all host pairs' routes)."""
    from topocast.bounds.route import _mandatory

    topo = multi_site_platform(30, seed=5)
    into = _mandatory(topo, into=True)
    out_of = _mandatory(topo, into=False)
    for k, h in enumerate(topo.hosts):
        common_in = common_out = None
        for p in topo.hosts:
            if p == h:
                continue
            cin, cout = Counter(topo.route(p, h)), Counter(topo.route(h, p))
            common_in = cin if common_in is None else common_in & cin
            common_out = cout if common_out is None else common_out & cout
        assert into[k] == common_in, h
        assert out_of[k] == common_out, h
    assert not math.isnan(sum(len(c) for c in into))


def _with_detours(topo, seed: int, share: float):
    """``topo`` with a random share of host pairs declared on a detour: the tree path with one
    extra there-and-back over a link next to one of its nodes."""
    import random

    rng = random.Random(seed)
    routes = {}
    for u in topo.hosts:
        for v in topo.hosts:
            if u == v or rng.random() > share:
                continue
            path = list(topo.route_nodes(u, v))
            k = rng.randrange(len(path))
            side = rng.choice(topo.neighbors(path[k]))
            routes[(u, v)] = tuple(path[: k + 1] + [side] + path[k:])
    return topo.replace(routes=routes)


@quick
@given(st.integers(2, 12), st.integers(0, 5), st.booleans(), st.integers(0, 10**6), st.sampled_from([0.0, 0.3, 1.0]))
def test_mandatory_links_of_the_tree_walk_and_declared_routes_are_exact(n, s, leaves, seed, share):
    from topocast.bounds.route import _mandatory

    topo = _with_detours(random_tree(n, s, hosts_as_leaves=leaves, seed=seed), seed, share)
    into, out_of = _mandatory(topo, into=True), _mandatory(topo, into=False)
    for k, h in enumerate(topo.hosts):
        others = [p for p in topo.hosts if p != h]
        want_in = want_out = None
        for p in others:
            cin, cout = Counter(topo.route(p, h)), Counter(topo.route(h, p))
            want_in = cin if want_in is None else want_in & cin
            want_out = cout if want_out is None else want_out & cout
        assert into[k] == (want_in or Counter()), h
        assert out_of[k] == (want_out or Counter()), h


@pytest.mark.parametrize("command", ["bounds", "simulate", "compare"])
def test_the_cli_reports_the_route_bounds_beside_the_max_flow_sum(tmp_path, capsys, command):
    import json

    from topocast.cli.main import main

    path = tmp_path / "ms.xml"
    assert main(["topology", "generate", "multi-site", "--hosts", "20", "--seed", "2", "-o", str(path)]) == 0
    capsys.readouterr()
    extra = {"bounds": [], "simulate": ["-a", "stable", "--size", "1GB"], "compare": ["-a", "stable", "--size", "1GB"]}
    assert main([command, str(path), "--json", *extra[command]]) == 0
    data = json.loads(capsys.readouterr().out)
    total = data["bound"]["aggregate_bandwidth"] if command != "bounds" else data["aggregate_bandwidth"]
    route = data["route_bound"]
    assert route["steady_aggregate_bandwidth"] <= route["aggregate_bandwidth"] < total
    assert data["reference"] == {"aggregate_bandwidth": route["aggregate_bandwidth"], "kind": route["kind"]}
    if command == "compare":
        (stable,) = data["results"]
        assert 0 < stable["of_reference"] <= 1 and stable["of_route_steady"] > stable["of_reference"]
    assert main([command, str(path), *extra[command]]) == 0
    assert "route bound" in capsys.readouterr().out
