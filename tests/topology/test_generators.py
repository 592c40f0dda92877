"""Generators: deterministic per seed, the shapes and bandwidth settings they promise."""

import numpy as np
import pytest

from topocast.errors import InputError
from topocast.topology.generators import (
    MBIT,
    MULTI_CLUSTER_SETTINGS,
    fat_tree,
    multi_cluster_tree,
    random_network,
    random_tree,
    two_cluster_grid,
)


def _key(t):
    return (t.name, t.hosts, t.switches, t.physical_links)


@pytest.mark.parametrize("setting", sorted(MULTI_CLUSTER_SETTINGS))
@pytest.mark.parametrize("asym", [False, True])
def test_multi_cluster_deterministic_and_shaped(setting, asym):
    t1 = multi_cluster_tree(200, n_clusters=12, bandwidth=setting, asymmetric=asym, seed=7)
    t2 = multi_cluster_tree(200, n_clusters=12, bandwidth=setting, asymmetric=asym, seed=7)
    t3 = multi_cluster_tree(200, n_clusters=12, bandwidth=setting, asymmetric=asym, seed=8)
    assert _key(t1) == _key(t2)
    assert t1.physical_links != t3.physical_links
    assert len(t1.hosts) == 200 and len(t1.switches) == 12
    assert t1.is_tree()
    # hosts are leaves, spread evenly
    deg = {n: 0 for n in t1.nodes}
    per_switch = {s: 0 for s in t1.switches}
    for pl in t1.physical_links:
        deg[pl.a] += 1
        deg[pl.b] += 1
        for x, y in ((pl.a, pl.b), (pl.b, pl.a)):
            if t1.is_host(x):
                per_switch[y] += 1
    assert all(deg[h] == 1 for h in t1.hosts)
    assert set(per_switch.values()) <= {16, 17}
    host_dist, switch_dist = MULTI_CLUSTER_SETTINGS[setting]
    for pl in t1.physical_links:
        dist = host_dist if (t1.is_host(pl.a) or t1.is_host(pl.b)) else switch_dist
        for bw in (pl.bandwidth, pl.reverse_bandwidth):
            mbit = bw / MBIT
            assert mbit == int(mbit)  # exact integer Mbit/s
            if dist[0] == "u":
                assert dist[1] <= mbit <= dist[2]
            elif dist[0] == "c":
                assert mbit in (dist[1], dist[2])
            else:
                assert mbit == dist[1]
    if asym and setting != "switch-uniform-100-1000":
        assert not t1.is_symmetric()
    if not asym:
        assert t1.is_symmetric()


def test_multi_cluster_mixed_is_roughly_half():
    t = multi_cluster_tree(2000, n_clusters=50, bandwidth="mixed", seed=1)
    bws = np.array([pl.bandwidth for pl in t.physical_links]) / MBIT
    assert set(bws.tolist()) == {100.0, 1000.0}
    assert 0.45 < (bws == 100).mean() < 0.55


def test_multi_cluster_10000_hosts():
    t = multi_cluster_tree(10_000, n_clusters=100, bandwidth="uniform-100-1000", asymmetric=True, seed=3)
    assert len(t.hosts) == 10_000 and len(set(t.hosts)) == 10_000


def test_multi_cluster_bad_setting():
    with pytest.raises(InputError, match="unknown bandwidth setting"):
        multi_cluster_tree(10, n_clusters=2, bandwidth="uniform-1-2", seed=0)


def test_two_cluster_grid():
    t = two_cluster_grid(4, nic="1Gbps", wan="10Gbps", wan_latency="10ms", seed=0)
    assert len(t.hosts) == 8 and t.switches == ("swA", "swB")
    assert t.route_nodes("a0", "b3") == ("a0", "swA", "swB", "b3")
    assert t.route_bandwidth("a0", "b3") == 125e6
    assert t.route_latency("a0", "b3") == pytest.approx(10e-3 + 2 * 50e-6)
    s1 = two_cluster_grid(5, slow_hosts=3, seed=4)
    s2 = two_cluster_grid(5, slow_hosts=3, seed=4)
    assert _key(s1) == _key(s2)
    slow = [pl.a for pl in s1.physical_links if pl.bandwidth == 12.5e6]
    assert len(slow) == 3 and "a0" not in slow


@pytest.mark.parametrize("k", [2, 4, 6])
def test_fat_tree_counts(k):
    t = fat_tree(k)
    assert len(t.hosts) == k**3 // 4
    assert len(t.switches) == 5 * k * k // 4
    assert len(t.physical_links) == 3 * k**3 // 4
    # any two hosts in different pods are 6 hops apart
    if k >= 4:
        assert len(t.route(t.hosts[0], t.hosts[-1])) == 6


def test_fat_tree_random_bandwidth_deterministic():
    a = fat_tree(4, bandwidth="uniform-100-1000", seed=5)
    b = fat_tree(4, bandwidth="uniform-100-1000", seed=5)
    assert _key(a) == _key(b)
    assert len({pl.bandwidth for pl in a.physical_links}) > 5
    with pytest.raises(InputError):
        fat_tree(3)


@pytest.mark.parametrize("leaves", [True, False])
@pytest.mark.parametrize("asym", [True, False])
def test_random_tree(leaves, asym):
    a = random_tree(15, 6, asymmetric=asym, hosts_as_leaves=leaves, seed=11)
    b = random_tree(15, 6, asymmetric=asym, hosts_as_leaves=leaves, seed=11)
    assert _key(a) == _key(b)
    assert a.is_tree()
    for pl in a.physical_links:
        assert 10 * MBIT <= pl.bandwidth <= 1000 * MBIT
    if leaves:
        deg = {h: 0 for h in a.hosts}
        for pl in a.physical_links:
            for x in (pl.a, pl.b):
                if x in deg:
                    deg[x] += 1
        assert set(deg.values()) == {1}


def test_random_tree_hosts_only():
    t = random_tree(9, 0, seed=2)
    assert t.switches == () and t.is_tree()


def _switch_links(t):
    return [pl for pl in t.physical_links if pl.a in t.switches and pl.b in t.switches]


@pytest.mark.parametrize("shape", ["chain", "star", "hub"])
def test_random_tree_shapes(shape):
    t = random_tree(30, 5, shape=shape, switch_mbit=(40, 60), asymmetric_switch_links=True, seed=2)
    assert _key(t) == _key(random_tree(30, 5, shape=shape, switch_mbit=(40, 60), asymmetric_switch_links=True, seed=2))
    inner = _switch_links(t)
    assert len(inner) == 4
    if shape == "chain":
        assert {(pl.a, pl.b) for pl in inner} == {(f"sw{i}", f"sw{i + 1}") for i in range(4)}
    else:
        assert all(pl.a == "sw0" for pl in inner)
    for pl in inner:
        assert 40 * 125_000 <= pl.bandwidth <= 60 * 125_000
        assert 40 * 125_000 <= pl.reverse_bandwidth <= 60 * 125_000
    # every switch meant to hold hosts holds one; a star's centre none
    holders = {pl.a for pl in t.physical_links if pl.b in t.hosts}
    assert holders == ({f"sw{i}" for i in range(1, 5)} if shape == "star" else set(t.switches))
    assert any(pl.bandwidth_ba not in (None, pl.bandwidth) for pl in inner)
    assert all(pl.bandwidth_ba is None for pl in t.physical_links if pl.b in t.hosts)


def test_random_tree_default_shape_is_unchanged_by_the_shape_options():
    a = random_tree(20, 5, seed=3)
    assert _key(a) == _key(random_tree(20, 5, shape="recursive", seed=3))
    with pytest.raises(InputError, match="shape"):
        random_tree(20, 5, shape="ring")
    with pytest.raises(InputError, match="shape"):
        random_tree(20, 0, shape="chain")


def test_random_network_family():
    nets = [random_network(s, min_hosts=8, max_hosts=64) for s in range(40)]
    assert _key(nets[7]) == _key(random_network(7, min_hosts=8, max_hosts=64))
    assert all(8 <= len(t.hosts) <= 64 and len(t.switches) >= 2 for t in nets)
    assert all(10 * 125_000 <= pl.bandwidth <= 1000 * 125_000 for t in nets for pl in t.physical_links)
    assert any(pl.bandwidth_ba is not None for t in nets for pl in _switch_links(t))
    # the shapes all come up: chains (a switch with two switch neighbours, none with three)
    # and stars (one switch joined to all others)
    degrees = [sorted(sum(sw in (pl.a, pl.b) for pl in _switch_links(t)) for sw in t.switches) for t in nets]
    assert any(len(d) >= 3 and d[-1] == 2 for d in degrees)
    assert any(len(d) >= 4 and d[-1] == len(d) - 1 for d in degrees)
    with pytest.raises(InputError):
        random_network(1, min_hosts=9, max_hosts=8)
