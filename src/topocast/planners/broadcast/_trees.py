"""Shared machinery of the bandwidth-oriented broadcast planners (docs/algorithms.md 0.2, 1-3).

* :class:`Arborescence` - a rooted tree over the topology's nodes in DFS preorder, as numpy
  arrays, so that the depth-first pipeline of any set of destinations ("tracing every
  destination", docs/algorithms.md 1.2) and the links it uses are computed without Python loops
  over hosts.
* :func:`residual_pipelines` - the capacity-subtraction loop shared by Stable Broadcast
  (partial trees allowed) and FPFR (spanning trees only).
* the byte layouts and transfers of rated pipelines are in :mod:`._layout`.
* :func:`e1_rates`, :func:`e2_rates` - the analytic evaluators E1 and E2 of docs/algorithms.md 0.2.
* :func:`chain_links` - the links a pipeline's hops really cross where the topology fixes
  routes (declared routes that go up to a gateway and back): every planner that counts a
  pipeline's link uses counts them here, so none plans on capacity its routes do not give.

Ours ([I]): every design decision in this module. The papers give the capacity-subtraction loop
and the staged transfer only in prose; the preorder/Euler-tour formulation, the drop rule for
exhausted up-links, and the epsilon are our readings.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, TypedDict
from weakref import WeakKeyDictionary

import numpy as np

from ...errors import PlanError

if TYPE_CHECKING:
    from _typeshed import SupportsRichComparison

    from ...topology import Topology

__all__ = [
    "Arborescence",
    "Pipeline",
    "residual_pipelines",
    "e1_rates",
    "e2_rates",
    "resource_arrays",
    "pipeline_over",
    "undirected_tree",
    "PipelineInfo",
    "shared_arborescence",
    "routes_fixed",
    "route_excess",
    "chain_links",
    "route_shares",
    "prefix_sets",
    "within_capacity",
]

EPS_REL = 1e-9


_TREE: WeakKeyDictionary[Topology, bool] = WeakKeyDictionary()


def undirected_tree(topology: Topology) -> bool:
    """True for a tree of two-way links (then every host pair has one route: the tree path).
    Cached per topology: the pipelines ask it once per hop list."""
    known = _TREE.get(topology)
    if known is None:
        known = topology.is_two_way_tree()
        _TREE[topology] = known
    return known


def has_reverse(topology: Topology) -> np.ndarray:
    """Bool per directed link: the opposite direction exists (false only for one-way links)."""
    pair = topology._pair_to_link
    return np.array([(l.dst, l.src) in pair for l in topology.links], dtype=bool)


def routes_fixed(topology: Topology) -> bool:
    """True when the topology declares routes: every transfer then follows ``route(u, v)``
    and a planner gives no explicit path (docs/algorithms.md 0.3)."""
    return bool(topology.routes)


_EXCESS: WeakKeyDictionary[Topology, dict[tuple[int, int], tuple[int, ...]]] = WeakKeyDictionary()


def route_excess(topology: Topology, iu: int, iv: int) -> tuple[int, ...]:
    """Directed links the route from node ``iu`` to node ``iv`` crosses beyond the tree path,
    one entry per extra use, on a tree of two-way links.

    On a tree every walk from u to v crosses the tree path, so a declared route is the tree
    path plus excursions that go out and come back (a hairpin through a gateway): the
    excess is the route's multiset of links minus the tree path's. Pairs without a declared
    route follow the tree path (no excess). Cached per topology and pair [I].
    """
    cache = _excess_cache(topology)
    key = (iu, iv)
    out = cache.get(key)
    if out is None:
        names = topology.nodes
        out = ()
        if (names[iu], names[iv]) in topology.routes:
            extra = Counter(topology.route(names[iu], names[iv]))
            extra.subtract(topology._tree_route(iu, iv) or ())
            out = tuple(sorted(extra.elements()))
        cache[key] = out
    return out


def _excess_cache(topology: Topology) -> dict[tuple[int, int], tuple[int, ...]]:
    """The per-topology cache of :func:`route_excess`."""
    cache = _EXCESS.get(topology)
    if cache is None:
        cache = _EXCESS[topology] = {}
    return cache


def _hops_excess(topology: Topology, seq: list[int]) -> list[tuple[int, ...]]:
    """:func:`route_excess` of the hops ``seq[k] -> seq[k + 1]``: one read of the cache each,
    the route only for a pair not seen before."""
    cache = _excess_cache(topology)
    pairs = list(zip(seq, seq[1:]))
    found = list(map(cache.get, pairs))
    return [route_excess(topology, *pair) if e is None else e for pair, e in zip(pairs, found)]


def _hop_route_links(arb: Arborescence, active: np.ndarray) -> np.ndarray:
    """Extra link uses of the chain's hops where routes are fixed (one entry per use): the
    excess over the tree paths on a tree, every hop's whole route on a general graph (whose
    arborescence paths the transfers do not follow)."""
    topo = arb.topology
    seq = arb.node[np.concatenate(([0], np.flatnonzero(active)))].tolist()
    if undirected_tree(topo):
        extra = _hops_excess(topo, seq)
    else:
        names = topo.nodes
        extra = [topo.route(names[a], names[b]) for a, b in zip(seq, seq[1:])]
    return np.fromiter(itertools.chain.from_iterable(extra), dtype=np.int64)


def chain_links(arb: Arborescence, active: np.ndarray) -> np.ndarray:
    """Directed link ids the depth-first pipeline through ``active`` crosses, one entry per
    use: the Euler tour of :meth:`Arborescence.chain_usage`, plus, where routes are fixed,
    what the routes add (:func:`route_excess`); on a general graph with fixed routes, the
    hops' routes alone."""
    topo = arb.topology
    if routes_fixed(topo) and not undirected_tree(topo):
        return _hop_route_links(arb, active)
    down_used, up_used = arb.chain_usage(active)
    base = np.concatenate((arb.down[down_used], arb.up[up_used]))
    if not routes_fixed(topo):
        return base
    return np.concatenate((base, _hop_route_links(arb, active)))


def route_shares(topology: Topology, source: str, destinations: Sequence[str]) -> dict[str, float]:
    """Per destination, its share of the narrowest resource its routes in must cross:
    ``min_e c(e) / n(e)`` over the resources e on both its route from ``source`` and its
    route from its neighbour in depth-first order (a host near it), ``n(e)`` counting the
    destinations whose such resources include e.

    A heuristic ordering of the destinations by the rate their routes leave them when every
    one takes its part [I]: a link every route from the source crosses (the source's own)
    is no one's limit, a switch's uplink that declared routes send its hosts through (even
    from each other) is; on a tree without declared routes it is each host's own link, the
    max-flow bound's order. Not a bound (relays change the counts).
    """
    res_of, cap = resource_arrays(topology)
    order = [topology.nodes[i] for i in Arborescence.dfs(topology, source).node.tolist()]
    wanted = set(destinations)
    chain = [h for h in order if h in wanted] or list(destinations)
    near = {d: chain[k - 1] if k else (chain[1] if len(chain) > 1 else source) for k, d in enumerate(chain)}
    destinations = list(dict.fromkeys(destinations))
    # (destination, resource) pairs as keys k * n_res + r, k the destination's index
    n_res = len(cap)
    route = topology.route

    def pairs(senders) -> np.ndarray:
        links = [route(u, d) for u, d in zip(senders, destinations)]
        k = np.repeat(np.arange(len(links), dtype=np.int64), [len(r) for r in links])
        return np.unique(k * n_res + res_of[np.fromiter(itertools.chain.from_iterable(links), dtype=np.int64)])

    from_source = pairs([source] * len(destinations))
    from_near = pairs([near.get(d, source) if near.get(d, source) != d else source for d in destinations])
    both = np.intersect1d(from_source, from_near, assume_unique=True)  # sorted by destination
    dest_of, res = np.divmod(both, n_res)
    count = np.bincount(res, minlength=n_res).astype(float)
    share = np.full(len(destinations), math.inf)
    np.minimum.at(share, dest_of, cap[res] / count[res])
    return dict(zip(destinations, share.tolist()))


def prefix_sets(dests: Sequence[str], key: Mapping[str, float], most: int | None = None) -> list[frozenset[str]]:
    """Nested destination sets, largest first: prefixes of ``dests`` sorted by ``key``
    (largest first), cut where the key drops; ``most`` keeps a spread of that many (always
    the whole set)."""
    rank = {d: i for i, d in enumerate(dests)}
    order = sorted(dests, key=lambda d: (-key[d], rank[d]))
    cuts = [k for k in range(1, len(order) + 1) if k == len(order) or key[order[k]] < key[order[k - 1]]]
    sets = [frozenset(order[:k]) for k in reversed(cuts)]
    if most is not None and len(sets) > most:
        sets = [sets[i] for i in np.unique(np.linspace(0, len(sets) - 1, most).round().astype(int))]
    return sets


def within_capacity(x: np.ndarray, uses, capacity: np.ndarray) -> np.ndarray:
    """LP rates ``x`` scaled down, if need be, so that ``uses @ x <= capacity`` holds exactly:
    HiGHS meets its constraints to a feasibility tolerance (about 1e-7 of the scaled
    capacities), and a plan never asks a link for more than it has."""
    load = np.asarray(uses @ x, dtype=float).ravel()
    over = np.max(load / capacity, initial=1.0)
    return x / over if over > 1.0 else x


def _excess_receivers(arb: Arborescence, active: np.ndarray, exhausted: np.ndarray, res_of: np.ndarray) -> np.ndarray:
    """Positions whose hop in crosses an exhausted resource beyond its tree path (fixed routes)."""
    pos = np.flatnonzero(active)
    seq = arb.node[np.concatenate(([0], pos))].tolist()
    topo = arb.topology
    tree = undirected_tree(topo)
    names = topo.nodes
    bad = []
    for k, (a, b) in enumerate(zip(seq, seq[1:])):
        hop = route_excess(topo, a, b) if tree else topo.route(names[a], names[b])
        if hop and exhausted[res_of[list(hop)]].any():
            bad.append(int(pos[k]))
    return np.array(bad, dtype=np.int64)


def unreachable_error(planner: str, info: PipelineInfo, dests: Sequence[str]) -> PlanError:
    """PlanError for destinations no depth-first pipeline can reach (one-way links only)."""
    missing = info.get("unreachable") or list(dests)
    return PlanError(
        f"{planner}: no depth-first pipeline reaches {', '.join(missing[:5])}"
        f"{' ...' if len(missing) > 5 else ''} over two-way links",
        element="destinations",
    )


def resource_arrays(topology: Topology) -> tuple[np.ndarray, np.ndarray]:
    """(resource id per directed link, capacity per resource in bytes/s).

    [I, ours] A fatpipe link (SimGrid's FATPIPE: every flow may use its full bandwidth, no
    sharing) is planned as a dedicated resource of its bandwidth per direction. The
    simulator would let any number of parallel flows each take the full bandwidth, so a
    planner that subtracted nothing from it would build the same tree forever; planning it as
    one link is conservative (plans never rely on unlimited parallel flows) and keeps every
    capacity finite, so each capacity-subtraction round saturates a resource and ends.
    Each directed link maps to one resource, so the slow direction of an asymmetric shared
    cable maps to its own (direction) resource.
    """
    res_of = topology.link_resource.copy()
    cap = topology.resource_capacity.astype(float)
    # [I] the slow direction of an asymmetric shared cable is planned on its own resource
    # (its tighter limit); the coupling with the other direction is left to the simulator
    slow = topology.link_direction_resource >= 0
    res_of[slow] = topology.link_direction_resource[slow]
    fat = np.flatnonzero(res_of < 0)
    res_of[fat] = len(cap) + np.arange(len(fat))
    cap = np.append(cap, topology.link_bandwidth[fat].astype(float))
    return res_of, cap


# --------------------------------------------------------------------------- arborescence
class Arborescence:
    """A tree rooted at ``root`` over (a subset of) the topology's nodes, in DFS preorder.

    Arrays are indexed by preorder position ``i`` (0 = root):

    * ``node[i]``: topology node index; ``parent[i]``: preorder position of the parent (-1);
    * ``end[i]``: one past the last position of the subtree of ``i``;
    * ``down[i]`` / ``up[i]``: directed link ids parent->node / node->parent (-1 at the root);
    * ``depth[i]``.
    """

    __slots__ = ("topology", "node", "parent", "end", "down", "up", "depth", "pos", "_by_depth")
    _by_depth: list[np.ndarray] | None

    def __init__(
        self,
        topology: Topology,
        node: Sequence[int] | np.ndarray,
        parent: Sequence[int] | np.ndarray,
        down: Sequence[int] | np.ndarray,
        up: Sequence[int] | np.ndarray,
    ) -> None:
        self.topology = topology
        self.node = np.asarray(node, dtype=np.int64)
        self.parent = np.asarray(parent, dtype=np.int64)
        self.down = np.asarray(down, dtype=np.int64)
        self.up = np.asarray(up, dtype=np.int64)
        n = len(self.node)
        depth = np.zeros(n, dtype=np.int64)
        for i in range(1, n):  # parents come first in preorder
            depth[i] = depth[self.parent[i]] + 1
        self.depth = depth
        # subtree ends: process in reverse preorder
        end = np.arange(1, n + 1, dtype=np.int64)
        par = self.parent.tolist()
        e = end.tolist()
        for i in range(n - 1, 0, -1):
            p = par[i]
            if e[i] > e[p]:
                e[p] = e[i]
        self.end = np.asarray(e, dtype=np.int64)
        pos = np.full(topology.n_nodes, -1, dtype=np.int64)
        pos[self.node] = np.arange(n)
        self.pos = pos
        self._by_depth = None

    @classmethod
    def dfs(
        cls,
        topology: Topology,
        root: str,
        *,
        usable: np.ndarray | None = None,
        key: Callable[[int], SupportsRichComparison] | None = None,
    ) -> Arborescence:
        """DFS from ``root`` over directed links with ``usable[link]`` (default: all).

        Neighbours are visited by ``key(link)`` ascending (default: node index), so the result
        is deterministic. On a tree topology this is the unique rooted tree.
        """
        r = topology.index(root)
        link_dst = topology.link_dst
        out = topology._out
        pair = topology._pair_to_link
        names = topology.nodes
        seen = np.zeros(topology.n_nodes, dtype=bool)
        node: list[int] = []
        parent: list[int] = []
        down: list[int] = []
        up: list[int] = []
        # stack of (node index, parent position, down link)
        stack = [(r, -1, -1)]
        while stack:
            x, p, lid = stack.pop()
            if seen[x]:
                continue
            seen[x] = True
            my = len(node)
            node.append(x)
            parent.append(p)
            down.append(lid)
            if lid >= 0:
                up.append(pair.get((names[x], names[int(topology.link_src[lid])]), -1))
            else:
                up.append(-1)
            nbr = [l for l in out[x] if not seen[link_dst[l]] and (usable is None or usable[l])]
            if key is None:
                nbr.sort(key=lambda l: int(link_dst[l]))
            else:
                nbr.sort(key=key)
            for l in reversed(nbr):
                stack.append((int(link_dst[l]), my, l))
        return cls(topology, node, parent, down, up)

    @classmethod
    def from_parent_links(
        cls,
        topology: Topology,
        root: str,
        plink: np.ndarray,
        *,
        child_key: Callable[[int], SupportsRichComparison] | None = None,
    ) -> Arborescence:
        """Arborescence from ``plink[node]`` = directed link into the node (-1: root/unreached).

        Children are visited by ``child_key(link into child)`` ascending (default: node index).
        """
        r = topology.index(root)
        link_src = topology.link_src
        children: dict[int, list[int]] = {}
        for x in np.flatnonzero(plink >= 0).tolist():
            children.setdefault(int(link_src[plink[x]]), []).append(x)
        names = topology.nodes
        pair = topology._pair_to_link
        node: list[int] = []
        parent: list[int] = []
        down: list[int] = []
        up: list[int] = []
        stack = [(r, -1)]
        while stack:
            x, p = stack.pop()
            my = len(node)
            node.append(x)
            parent.append(p)
            lid = int(plink[x]) if x != r else -1
            down.append(lid)
            up.append(pair.get((names[x], names[int(link_src[lid])]), -1) if lid >= 0 else -1)
            kids = children.get(x, [])
            if child_key is None:
                kids.sort()
            else:
                kids.sort(key=lambda c: child_key(int(plink[c])))
            for c in reversed(kids):
                stack.append((c, my))
        return cls(topology, node, parent, down, up)

    @property
    def size(self) -> int:
        return len(self.node)

    def by_depth(self) -> list[np.ndarray]:
        if self._by_depth is None:
            order = np.argsort(self.depth, kind="stable")
            d = self.depth[order]
            cuts = np.flatnonzero(np.diff(d)) + 1
            self._by_depth = [g for g in np.split(order, cuts) if len(g) and self.depth[g[0]] > 0]
        return self._by_depth

    def chain_usage(self, active: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Links used by the depth-first pipeline through the ``active`` positions.

        ``active`` is a bool array over preorder positions (root excluded). The pipeline visits
        active nodes in preorder; the hop between consecutive ones follows the tree path (up to
        the lowest common ancestor, then down), so together the hops walk an Euler tour of the
        Steiner subtree: the down link into ``i`` is used once iff the subtree of ``i`` holds an
        active node, and the up link out of ``i`` is used once iff, in addition, some active
        node comes after the subtree (the chain has to leave it). Returns (down_used, up_used)
        as bool arrays over positions.
        """
        cs = np.concatenate(([0], np.cumsum(active, dtype=np.int64)))
        inside = cs[self.end] - cs[:-1]
        after = cs[-1] - cs[self.end]
        down_used = inside > 0
        down_used[0] = False
        up_used = down_used & (after > 0)
        return down_used, up_used

    def path_ok(self, link_ok: np.ndarray) -> np.ndarray:
        """Bool over positions: every down link on the path root -> i satisfies ``link_ok``."""
        ok = np.ones(self.size, dtype=bool)
        for g in self.by_depth():
            ok[g] = ok[self.parent[g]] & link_ok[self.down[g]]
        return ok

    def hop_path(self, a: int, b: int) -> tuple[str, ...]:
        """Node path from position ``a`` to position ``b`` along the tree (up to the LCA, then down)."""
        names = self.topology.nodes
        up_part = [a]
        down_part = [b]
        x, y = a, b
        dx, dy = self.depth[x], self.depth[y]
        while dx > dy:
            x = int(self.parent[x])
            dx -= 1
            up_part.append(x)
        while dy > dx:
            y = int(self.parent[y])
            dy -= 1
            down_part.append(y)
        while x != y:
            x = int(self.parent[x])
            up_part.append(x)
            y = int(self.parent[y])
            down_part.append(y)
        down_part.pop()  # the LCA is already in up_part
        return tuple(names[self.node[i]] for i in up_part + down_part[::-1])


# --------------------------------------------------------------------------- pipelines
class Pipeline:
    """One rated overlay chain: ``source -> members[0] -> members[1] -> ...`` at ``rate`` bytes/s.

    ``paths[k]`` is the node path of hop k (None: the topology's route is the tree path);
    ``link_uses`` maps a directed link id to the number of hops crossing it (E1 check).

    A pipeline of an :class:`Arborescence` (:meth:`over`) keeps only the bool array of its
    active preorder positions, shared with every copy made by :meth:`with_rate`: the member
    names and the link uses are built on first access. The capacity-subtraction loop finds
    one tree per bottleneck level, hundreds on networks with all-distinct bandwidths; most are
    merged away (:mod:`._compact`) before anyone reads their members, so hosts x levels names
    and link counts are never materialised.
    """

    __slots__ = ("rate", "paths", "_members", "_link_uses", "arborescence", "active")

    def __init__(
        self,
        members: Sequence[str] | None,
        rate: float,
        paths: list[tuple[str, ...]] | None = None,
        link_uses: dict[int, int] | None = None,
        *,
        arborescence: Arborescence | None = None,
        active: np.ndarray | None = None,
    ) -> None:
        self.rate = rate
        self.paths = paths
        self._members = None if members is None else list(members)
        self._link_uses = link_uses if link_uses is not None or arborescence is not None else {}
        self.arborescence = arborescence  # set only for pipelines over an arborescence's tree paths
        self.active = active  # bool over the arborescence's preorder positions (root excluded)

    @classmethod
    def over(cls, arb: Arborescence, active: np.ndarray, rate: float) -> Pipeline:
        """The depth-first pipeline of ``arb`` through the ``active`` positions (tree paths)."""
        return cls(None, rate, arborescence=arb, active=active)

    def with_rate(self, rate: float) -> Pipeline:
        """The same chain at another rate (sharing its arrays and lists)."""
        out = Pipeline(self._members, rate, self.paths, self._link_uses, arborescence=self.arborescence)
        out._members = self._members  # no copy of the (possibly large) member list
        out.active = self.active
        return out

    @property
    def members(self) -> list[str]:
        if self._members is None:
            arb = self.arborescence
            assert arb is not None and self.active is not None
            names = arb.topology.nodes
            self._members = [names[i] for i in arb.node[self.active].tolist()]
        return self._members

    @property
    def link_uses(self) -> dict[int, int]:
        if self._link_uses is None:
            arb = self.arborescence
            assert arb is not None and self.active is not None
            uses: dict[int, int] = {}
            for lid in chain_links(arb, self.active).tolist():
                uses[lid] = uses.get(lid, 0) + 1
            self._link_uses = uses
        return self._link_uses

    def link_ids(self) -> np.ndarray:
        """Directed link ids the hops cross, one entry per use."""
        if self._link_uses is None and self.arborescence is not None and self.active is not None:
            return chain_links(self.arborescence, self.active)
        uses = self.link_uses
        ids = np.fromiter(uses.keys(), dtype=np.int64, count=len(uses))
        return np.repeat(ids, np.fromiter(uses.values(), dtype=np.int64, count=len(uses)))

    def member_nodes(self, topology: Topology) -> np.ndarray:
        """The members' node indices, in chain order."""
        if self._members is None and self.arborescence is not None:
            return self.arborescence.node[self.active]
        return np.array([topology.index(m) for m in self.members], dtype=np.int64)

    @property
    def n_members(self) -> int:
        """Number of members (without building their names)."""
        if self._members is None and self.active is not None:
            return int(np.count_nonzero(self.active))
        return len(self.members)

    def __repr__(self) -> str:
        return f"Pipeline({self.n_members} members, rate={self.rate!r})"


def shared_arborescence(pipelines: Sequence[Pipeline]) -> Arborescence | None:
    """The arborescence every pipeline runs over (tree paths), or None if they do not share one."""
    arb = pipelines[0].arborescence if pipelines else None
    if arb is None or any(p.arborescence is not arb for p in pipelines):
        return None
    return arb


def pipeline_over(arb: Arborescence, active: np.ndarray, rate: float = 0.0) -> Pipeline:
    """The depth-first pipeline of ``arb`` through the ``active`` positions (rate as given)."""
    return _pipeline_from(arb, active, rate, _explicit_paths(arb.topology), chain_links(arb, active))


def _explicit_paths(topology: Topology) -> bool:
    """Hops carry the arborescence's paths on a general graph without declared routes; on a
    tree (one path) and wherever routes are fixed they follow the topology's routes."""
    return not undirected_tree(topology) and not routes_fixed(topology)


def _pipeline_from(
    arb: Arborescence, active: np.ndarray, rate: float, explicit_paths: bool, links: np.ndarray
) -> Pipeline:
    """The pipeline through ``active``; ``links``: its link uses (:func:`chain_links`)."""
    if not explicit_paths and undirected_tree(arb.topology):
        return Pipeline.over(arb, active.copy(), rate)
    topo = arb.topology
    names = topo.nodes
    pos = np.flatnonzero(active)
    members = [names[i] for i in arb.node[pos].tolist()]
    seq = [0] + pos.tolist()
    paths = [arb.hop_path(a, b) for a, b in zip(seq, seq[1:])] if explicit_paths else None
    uses: dict[int, int] = {}
    for lid in links.tolist():
        uses[lid] = uses.get(lid, 0) + 1
    return Pipeline(members, rate, paths, uses)


class PipelineInfo(TypedDict):
    """What :func:`residual_pipelines` reports beside its pipelines."""

    dropped: list[str]  # destinations removed by the exhausted-up-link rule
    unreachable: list[str]  # destinations the first tree does not reach
    tree_topology: bool


def residual_pipelines(
    topology: Topology, source: str, destinations: Sequence[str], *, partial: bool, max_trees: int | None = None
) -> tuple[list[Pipeline], PipelineInfo]:
    """The capacity-subtraction loop of FPFR (``partial=False``) / Stable Broadcast (``partial=True``).

    step 1: trace every still-included destination depth-first over links with positive
    residual capacity (a depth-first pipeline); step 2: its throughput is the bottleneck
    ``min res(e) / uses(e)``; step 3: subtract it. Stable Broadcast keeps going with partial
    trees over the destinations whose down path is still positive (nested: T1 ⊇ T2 ⊇ ...);
    FPFR stops at the first tree that cannot reach every destination.

    On a tree topology the DFS tree is fixed and every step is a handful of numpy operations
    over the nodes; on a general graph the DFS is redone over the positive residual links
    each round (neighbours by decreasing residual capacity) and hops get explicit paths.

    Returns (pipelines, info) where info holds ``dropped`` (destinations removed by the
    exhausted-up-link rule), ``unreachable`` and ``tree_topology``.
    """
    res_of, cap = resource_arrays(topology)
    res = cap.copy()
    finite = np.isfinite(cap)
    eps = EPS_REL * (cap[finite].max() if finite.any() else 1.0)
    is_tree = undirected_tree(topology)
    fixed = routes_fixed(topology)
    two_way = has_reverse(topology)  # the chain walks every tree link down and back up
    dest_idx = np.array([topology.index(d) for d in destinations], dtype=np.int64)
    want = np.zeros(topology.n_nodes, dtype=bool)
    want[dest_idx] = True
    info: PipelineInfo = {"dropped": [], "unreachable": [], "tree_topology": bool(is_tree)}
    pipelines: list[Pipeline] = []
    n_res = len(cap)
    arb = Arborescence.dfs(topology, source) if is_tree else None
    target = None  # number of destinations the first tree reaches (FPFR: every tree must)
    while max_trees is None or len(pipelines) < max_trees:
        link_ok = res[res_of] > eps
        if not is_tree:
            resid = res[res_of]
            arb = Arborescence.dfs(
                topology, source, usable=link_ok & two_way, key=lambda l: (-resid[l], int(topology.link_dst[l]))
            )
        assert arb is not None  # built before the loop on a tree, just above otherwise
        # step 1: the destinations still included (positive down path), in DFS preorder
        active = want[arb.node] & arb.path_ok(link_ok)
        active[0] = False
        if target is None:
            target = int(active.sum())
            reached = np.zeros(topology.n_nodes, dtype=bool)
            reached[arb.node[active]] = True
            info["unreachable"] = [topology.nodes[i] for i in dest_idx.tolist() if not reached[i]]
        if not active.any() or (not partial and int(active.sum()) < target):
            break
        # drop rule for exhausted up-links (asymmetric capacities), docs/algorithms.md 1.3
        while True:
            links = chain_links(arb, active)
            uses = np.bincount(res_of[links], minlength=n_res)
            over = (uses > 0) & (res <= eps)
            if not over.any():
                break
            bad = np.zeros(arb.size, dtype=bool)
            if is_tree or not fixed:  # the chain's Euler tour is what its hops cross
                down_used, up_used = arb.chain_usage(active)
                bad = (up_used & over[res_of[np.maximum(arb.up, 0)]]) | (
                    down_used & over[res_of[np.maximum(arb.down, 0)]]
                )
                bad[0] = False
            if fixed and not bad.any():  # a hop's route beyond the tree paths crosses it
                bad[_excess_receivers(arb, active, over, res_of)] = True
            if not bad.any():  # nothing to drop: the bottleneck below is zero and the loop ends
                break
            for i in np.flatnonzero(bad).tolist():
                gone = np.flatnonzero(active[i : arb.end[i]]) + i
                info["dropped"].extend(topology.nodes[arb.node[g]] for g in gone.tolist())
                active[i : arb.end[i]] = False
        if not active.any() or (not partial and int(active.sum()) < target):
            break
        # step 2: throughput = bottleneck; step 3: subtract it
        used = uses > 0
        v = float(np.min(res[used] / uses[used]))
        if math.isinf(v):  # only fatpipe links: no bandwidth limit in the model
            v = float(cap[finite].max()) if finite.any() else 1.0
        if not v > eps:
            break
        res[used] -= v * uses[used]
        res[used & finite] = np.maximum(res[used & finite], 0.0)
        pipelines.append(_pipeline_from(arb, active, v, _explicit_paths(topology), links))
        # nesting: later trees only serve destinations of this one
        want[:] = False
        want[arb.node[active]] = True
    return pipelines, info


# --------------------------------------------------------------------------- evaluators
def e1_rates(pipelines: Sequence[Pipeline], destinations: Sequence[str]) -> dict[str, float]:
    """E1 (rated trees): ``r(d) = Σ_{n: d ∈ T_n} V_n`` (docs/algorithms.md 0.2)."""
    arb = shared_arborescence(pipelines)
    if arb is not None:  # per preorder position, without building member names
        at = np.zeros(arb.size)
        for p in pipelines:
            at[p.active] += p.rate  # same additions, in the same order, as the loop below
        pos = arb.pos[[arb.topology.index(d) for d in destinations]]
        got = np.where(pos >= 0, at[np.maximum(pos, 0)], 0.0).tolist()
        return dict(zip(destinations, got))
    r = dict.fromkeys(destinations, 0.0)
    for p in pipelines:
        for m in p.members:
            if m in r:
                r[m] += p.rate
    return r


def e2_rates(topology: Topology, hops: Sequence[tuple[str, str]], source: str) -> dict[str, float]:
    """E2 (unrated single structure): equal split of every link among the hops crossing it;
    ``r(v) = min(r(parent), hop rate)`` (docs/algorithms.md 0.2). ``hops`` in parent-first order."""
    load: dict[int, int] = {}
    routes = [topology.route(u, v) for u, v in hops]
    for r in routes:
        for lid in r:
            load[lid] = load.get(lid, 0) + 1
    bw = topology.link_bandwidth
    rate = {source: math.inf}
    for (u, v), r in zip(hops, routes):
        h = min((bw[l] / load[l] for l in r), default=math.inf)
        rate[v] = min(rate.get(u, 0.0), h)
    rate.pop(source)
    return rate
