"""A tree of hosts and switches from round-trip times between hosts (an additive metric).

Reference: Shirai, Saito, Taura, "A Fast Topology Inference — a building block for
network-aware parallel processing", HPDC 2007 (docs/experiments/probe.md): the round-trip
time between two hosts is the sum of the delays of the links on their path, so the RTTs form
a *tree metric*, and hosts can be inserted one at a time into the tree of those already
placed with few measurements each: one per switch visited on the way down plus one per
branch tried at a switch, O(N·(d + Δ)) in all (d: the tree's depth in hops, Δ: the largest
number of branches tried at one switch), far fewer than the N(N-1)/2 pairs.

Insertion of host x (our reading of the paper's insertion step, with the placement written as
Gromov products, as in the network-tomography literature):

1. take a placed host u and another placed host b; the point where x's branch leaves the path
   u..b lies at distance ``(d(u,x) + d(u,b) - d(x,b)) / 2`` from u (the Gromov product
   ``(x|b)_u``), and x hangs ``d(u,x) - (x|b)_u`` away from it;
2. when that point falls inside a link, a new switch splits the link there and x hangs off it;
3. when it falls on a switch v that has other branches, x may leave the tree further inside
   one of them: for each branch, one measurement to a host c in it gives ``(x|c)_v``; a
   positive one means x leaves inside that branch: repeat step 1 from v towards c. When no
   branch claims x, x hangs off v.

Noise tolerance (ours): positions within ``threshold`` of an existing node snap to it, and
at the end switches joined by a link shorter than ``threshold`` are merged (the paper merges
switches closer than a threshold too). Hosts are always leaves: a host that measures as lying
on the tree (pendant ~0) hangs off it with a link of the length measured, never below 0.
Every measurement is kept (``measured``), so each pair is measured at most once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["LatencyTree", "infer_latency_tree", "merge_short_links"]


@dataclass
class LatencyTree:
    """An inferred tree: ``adj[node][neighbour] = length`` (the metric's units, e.g. RTT
    seconds), hosts and switches, and the distances measured to build it."""

    hosts: list
    switches: list = field(default_factory=list)
    adj: dict = field(default_factory=dict)
    measured: dict = field(default_factory=dict)  # frozenset({a, b}) -> distance

    def edges(self) -> list[tuple[str, str, float]]:
        seen, out = set(), []
        for a, nbrs in self.adj.items():
            for b, w in nbrs.items():
                if frozenset((a, b)) not in seen:
                    seen.add(frozenset((a, b)))
                    out.append((a, b, w))
        return out

    def host_groups(self) -> dict[str, list[str]]:
        """switch -> the hosts hanging off it."""
        return {s: sorted(n for n in self.adj[s] if n not in self.switches) for s in self.switches}

    # ----------------------------------------------------------------- tree helpers
    def _link(self, a: str, b: str, w: float) -> None:
        self.adj.setdefault(a, {})[b] = w
        self.adj.setdefault(b, {})[a] = w

    def _unlink(self, a: str, b: str) -> None:
        del self.adj[a][b]
        del self.adj[b][a]

    def distances_from(self, src: str) -> tuple[dict, dict]:
        """Tree distances and parents (towards ``src``) of every node."""
        dist: dict[str, float] = {src: 0.0}
        parent: dict[str, str | None] = {src: None}
        stack = [src]
        while stack:
            u = stack.pop()
            for v, w in self.adj.get(u, {}).items():
                if v not in dist:
                    dist[v], parent[v] = dist[u] + w, u
                    stack.append(v)
        return dist, parent

    def path(self, a: str, b: str) -> list[str]:
        _, parent = self.distances_from(a)
        out = [b]
        while out[-1] != a:
            out.append(parent[out[-1]])
        return out[::-1]

    def branch_host(self, v: str, w: str) -> str | None:
        """A host in the branch of ``v`` entered through its neighbour ``w`` (the nearest)."""
        best: str | None = None
        best_d = float("inf")
        dist = {w: self.adj[v][w]}
        stack = [w]
        while stack:
            u = stack.pop()
            if u not in self.switches and dist[u] < best_d:
                best, best_d = u, dist[u]
            for x, wx in self.adj[u].items():
                if x != v and x not in dist:
                    dist[x] = dist[u] + wx
                    stack.append(x)
        return best

    def new_switch(self) -> str:
        k = len(self.switches)
        name = f"sw{k}"
        while name in self.adj or name in self.hosts:
            k += 1
            name = f"sw{k}"
        self.switches.append(name)
        self.adj[name] = {}
        return name


def infer_latency_tree(hosts: list, measure: Callable[[str, str], float], threshold: float) -> LatencyTree:
    """Insert ``hosts`` one by one (see the module comment); ``measure(a, b)`` returns the
    additive distance (RTT) between two hosts; ``threshold`` is the shortest link length
    told apart from noise."""
    tree = LatencyTree(list(hosts))

    def d(a: str, b: str) -> float:
        key = frozenset((a, b))
        if key not in tree.measured:
            tree.measured[key] = float(measure(a, b))
        return tree.measured[key]

    if len(hosts) == 1:
        tree.adj[hosts[0]] = {}
        return tree
    a, b = hosts[0], hosts[1]
    hub = tree.new_switch()
    tree._link(a, hub, d(a, b) / 2)
    tree._link(hub, b, d(a, b) / 2)
    first = True
    for x in hosts[2:]:
        _insert(tree, x, d, threshold)
        if first:  # the first split point is only known once a third host is placed
            first = False
            _respread_first(tree, a, b, hub, d)
    merge_short_links(tree, threshold)
    return tree


def _respread_first(tree: LatencyTree, a: str, b: str, hub: str, d) -> None:
    """The two-host start puts the hub half-way; when the third host landed on one of its
    links instead of on the hub, the hub has degree 2: dissolve it."""
    if hub in tree.adj and len(tree.adj[hub]) == 2:
        (p, wp), (q, wq) = tree.adj[hub].items()
        tree._unlink(hub, p)
        tree._unlink(hub, q)
        tree._link(p, q, wp + wq)
        del tree.adj[hub]
        tree.switches.remove(hub)


def _insert(tree: LatencyTree, x: str, d, threshold: float) -> None:
    u = tree.hosts[0]
    b = next(h for h in tree.hosts if h != u and h in tree.adj)
    du = d(u, x)
    db = d(x, b)
    while True:
        path = tree.path(u, b)
        dist, _ = tree.distances_from(u)
        dub = dist[b]
        t = min(max((du + dub - db) / 2, 0.0), dub)
        pendant = max(du - t, 0.0)
        node, edge = _point_on_path(path, dist, t, threshold)
        if edge is not None:
            p, q, off = edge
            s = tree.new_switch()
            w = tree.adj[p][q]
            tree._unlink(p, q)
            tree._link(p, s, off)
            tree._link(s, q, w - off)
            tree._link(s, x, pendant)
            return
        on_path = {path[i - 1] for i in range(1, len(path)) if path[i] == node}
        on_path |= {path[i + 1] for i in range(len(path) - 1) if path[i] == node}
        claimed = None
        for w in list(tree.adj[node]):
            if w in on_path:
                continue
            c = tree.branch_host(node, w)
            if c is None:
                continue
            dvc = tree.distances_from(node)[0][c]
            if (pendant + dvc - d(x, c)) / 2 > threshold:
                claimed = c
                break
        if claimed is None:
            if node not in tree.switches:  # hosts stay leaves: branch off just before the host
                ((p, w),) = tree.adj[node].items()
                s = tree.new_switch()
                tree._unlink(node, p)
                off = min(threshold, w / 2)
                tree._link(p, s, w - off)
                tree._link(s, node, off)
                tree._link(s, x, pendant)
                return
            tree._link(node, x, pendant)
            return
        u, du, b, db = node, pendant, claimed, d(x, claimed)


def _point_on_path(path: list, dist: dict, t: float, threshold: float):
    """(node, None) when distance ``t`` along ``path`` is within ``threshold`` of a node,
    else (None, (p, q, offset from p)) for the link it falls in."""
    for n in path:
        if abs(dist[n] - t) <= threshold:
            return n, None
    for p, q in zip(path, path[1:]):
        if dist[p] < t < dist[q]:
            return None, (p, q, t - dist[p])
    return path[-1], None


def merge_short_links(tree: LatencyTree, threshold: float) -> None:
    """Contract switch-switch links shorter than ``threshold`` (noise, not a real link)."""
    changed = True
    while changed:
        changed = False
        for a, b, w in tree.edges():
            if w < threshold and a in tree.switches and b in tree.switches:
                tree._unlink(a, b)
                for n, wn in list(tree.adj[b].items()):
                    tree._unlink(b, n)
                    tree._link(a, n, wn + w / 2 if n in tree.switches else wn)
                del tree.adj[b]
                tree.switches.remove(b)
                changed = True
                break
