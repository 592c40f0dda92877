"""Latency-tree inference (probe.latency_tree) on synthetic RTT matrices from known trees."""

from __future__ import annotations

import numpy as np
import pytest

from topocast.probe.latency_tree import infer_latency_tree


def random_switch_tree(rng, n_switches: int, hosts_per_leaf=(2, 4)):
    """A random tree of switches (links 100 us .. 2 ms one way); every leaf switch carries
    2-4 hosts and every other switch at least one host or two child switches, so every switch
    is observable from the hosts."""
    adj: dict = {}

    def link(a, b, w):
        adj.setdefault(a, {})[b] = w
        adj.setdefault(b, {})[a] = w

    switches = [f"S{i}" for i in range(n_switches)]
    adj[switches[0]] = {}
    for i in range(1, n_switches):
        link(switches[int(rng.integers(0, i))], switches[i], float(rng.uniform(100e-6, 2e-3)))
    hosts, group = [], {}
    for s in switches:
        deg = len(adj[s])
        k = (
            int(rng.integers(*hosts_per_leaf, endpoint=True))
            if deg == 1 or n_switches == 1
            else (1 if deg == 2 else int(rng.integers(0, 2)))
        )
        for _ in range(k):
            h = f"h{len(hosts)}"
            hosts.append(h)
            group[h] = s
            link(s, h, float(rng.uniform(20e-6, 500e-6)))
    return adj, hosts, group


def tree_distances(adj, hosts):
    out = {}
    for h in hosts:
        dist, stack = {h: 0.0}, [h]
        while stack:
            u = stack.pop()
            for v, w in adj[u].items():
                if v not in dist:
                    dist[v] = dist[u] + w
                    stack.append(v)
        out[h] = dist
    return out


def splits(adj, hosts):
    """The host bipartitions made by cutting each switch-switch link (the tree's shape)."""
    hs = set(hosts)
    out = set()
    for a in adj:
        for b in adj[a]:
            if a in hs or b in hs or a > b:
                continue
            side, stack = {a}, [a]
            while stack:
                u = stack.pop()
                for v in adj[u]:
                    if v not in side and not (u == a and v == b):
                        side.add(v)
                        stack.append(v)
            part = frozenset(side & hs)
            out.add(min(part, frozenset(hs - part), key=sorted))
    return out


def grouping(adj, hosts):
    hs = set(hosts)
    return {frozenset(n for n in adj[s] if n in hs) for s in adj if s not in hs and any(n in hs for n in adj[s])}


@pytest.mark.parametrize("seed", range(12))
def test_recovers_random_trees_from_noisy_rtts(seed):
    rng = np.random.default_rng(seed)
    adj, hosts, _ = random_switch_tree(rng, int(rng.integers(1, 9)))
    dist = tree_distances(adj, hosts)
    overhead = {h: float(rng.uniform(10e-6, 40e-6)) for h in hosts}  # per-host stack delay
    calls = []

    def measure(a, b):
        calls.append((a, b))
        rtt = 2 * dist[a][b] + overhead[a] + overhead[b]
        return rtt * (1 + rng.normal(0, 0.001)) + abs(rng.normal(0, 5e-6))

    tree = infer_latency_tree(hosts, measure, threshold=60e-6)
    assert grouping(tree.adj, hosts) == grouping(adj, hosts)
    assert splits(tree.adj, hosts) == splits(adj, hosts)
    n = len(hosts)
    assert len(set(map(frozenset, calls))) == len(calls)  # never the same pair twice
    if n >= 12:
        assert len(calls) < n * (n - 1) / 2  # fewer than all pairs
    # link lengths: the inferred RTT between any two hosts matches the measured metric
    got = tree_distances(tree.adj, hosts)
    for a in hosts:
        for b in hosts:
            truth = 2 * dist[a][b] + overhead[a] + overhead[b] if a != b else 0.0
            assert got[a][b] == pytest.approx(truth, rel=0.05, abs=3 * 60e-6)


def test_measurements_grow_like_n_times_depth():
    """64 hosts in 8 clusters of 8 under one core: at most about N x (depth + degree)
    measurements (each placement visits one switch per level and tries its branches), well
    under the 2016 pairs."""
    adj: dict = {}

    def link(a, b, w):
        adj.setdefault(a, {})[b] = w
        adj.setdefault(b, {})[a] = w

    hosts = []
    for c in range(8):
        link("core", f"C{c}", 1e-3 * (1 + c % 3))
        for i in range(8):
            h = f"h{c}_{i}"
            hosts.append(h)
            link(f"C{c}", h, 50e-6)
    dist = tree_distances(adj, hosts)
    calls = []

    def measure(a, b):
        calls.append((a, b))
        return 2 * dist[a][b]

    tree = infer_latency_tree(hosts, measure, threshold=20e-6)
    assert grouping(tree.adj, hosts) == grouping(adj, hosts)
    assert len(calls) <= 64 * (3 + 8 + 2), len(calls)


def test_hosts_on_one_switch_and_tiny_inputs():
    tree = infer_latency_tree(["a"], lambda a, b: 1.0, threshold=0.1)
    assert tree.switches == []
    tree = infer_latency_tree(["a", "b"], lambda a, b: 1.0, threshold=0.1)
    assert len(tree.switches) == 1
    hosts = [f"h{i}" for i in range(6)]
    tree = infer_latency_tree(hosts, lambda a, b: 2.0 + 0.01 * ((hash(a + b) % 3) - 1), threshold=0.1)
    assert grouping(tree.adj, hosts) == {frozenset(hosts)}
