"""The network model: hosts, switches and directed links with bandwidth and latency.

A :class:`Topology` is immutable. It is built from *physical* links (one entry per cable, as in
the topology file); each becomes two directed links. Units inside: bytes/s and seconds.

Sharing policies of a physical link (``sharing``):

* ``"duplex"`` (default): each direction has its own capacity (full duplex);
* ``"shared"``: both directions share one capacity (SimGrid's SHARED, half duplex);
* ``"fatpipe"``: no sharing at all; every flow may use up to the bandwidth (SimGrid's FATPIPE).

Routing: ``route(u, v)`` gives the directed links a transfer from host ``u`` to host ``v``
crosses. Explicit routes (``routes``) win; otherwise the path with the fewest hops, ties broken
by the widest bottleneck, then by node order (deterministic).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, TypedDict, Unpack

import numpy as np

from ..errors import InputError, TopologyError

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["PhysicalLink", "Link", "Topology", "SHARING_POLICIES"]

SHARING_POLICIES = ("duplex", "shared", "fatpipe")


@dataclass(frozen=True, slots=True)
class PhysicalLink:
    """One cable between nodes ``a`` and ``b`` (one entry of the topology file).

    ``bandwidth`` is a->b and, unless ``bandwidth_ba`` is given, also b->a (bytes/s);
    ``latency`` in seconds applies to both directions. ``directed=True`` makes a one-way link
    (a->b only), used for the connectors of imported SimGrid route graphs.
    """

    a: str
    b: str
    bandwidth: float
    latency: float = 0.0
    bandwidth_ba: float | None = None
    sharing: str = "duplex"
    name: str | None = None
    directed: bool = False

    @property
    def reverse_bandwidth(self) -> float:
        return self.bandwidth if self.bandwidth_ba is None else self.bandwidth_ba


@dataclass(frozen=True, slots=True)
class Link:
    """A directed link ``src -> dst`` (bytes/s, seconds). ``physical`` indexes the cable."""

    src: str
    dst: str
    bandwidth: float
    latency: float
    sharing: str
    physical: int


def _where(p: int, pl: PhysicalLink) -> str:
    """How an error names physical link ``p``."""
    return f"link {p} ({pl.a}-{pl.b})" if pl.name is None else f"link {pl.name!r} ({pl.a}-{pl.b})"


# The tree rooted at node 0 (parent, depth, up link, down link per node), see Topology._rooted_tree.
_RootedTree = tuple[list[int], list[int], list[int], list[int]]


class TopologyFields(TypedDict, total=False):
    """The constructor arguments of a :class:`Topology`, for :meth:`Topology.replace`."""

    name: str
    hosts: Iterable[str]
    switches: Iterable[str]
    links: Iterable[PhysicalLink]
    routes: Mapping[tuple[str, str], Sequence[str]] | None
    injection_time: Mapping[str, float] | None
    injection_pair: Mapping[tuple[str, str], float] | None
    reduction_cost: Mapping[str, float] | None
    attrs: Mapping[str, Mapping] | None
    source: str | None
    notes: Iterable[str]
    measured: Mapping | None
    check_connected: bool


@dataclass(frozen=True, eq=False)
class Topology:
    """An immutable network: hosts (store, send, relay), switches (forward only), links.

    Parameters
    ----------
    name : str
    hosts, switches : sequence of str
        Node names; unique across both lists. Host order is rank order.
    links : sequence of PhysicalLink
    routes : mapping (src, dst) -> node path, optional
        Explicit routes; a path starts at ``src`` and ends at ``dst``. Routes are directed:
        give both directions when they differ.
    injection_time : mapping host -> seconds
        Per-send injection time Δ of a host (Mateescu & Taylor); default 0.
    injection_pair : mapping (src, dst) -> seconds
        Δ for one (sender, receiver) pair; overrides the host value.
    reduction_cost : mapping host -> seconds per byte
        γ of a host, charged when it combines received data (allreduce); default 0.
    attrs : mapping node -> dict
        Free-form attributes kept from imported files (ids, coordinates, ...).
    source : str, optional
        Where the topology came from (file name), used in error messages.
    notes : sequence of str
        What an importer left out or changed, in words (``topology show`` prints them).
    measured : mapping, optional
        How a probed topology was obtained (``topocast probe``: measurement count, duration,
        each estimate's spread); checked by the loader (``topology.io``), kept as data.
    """

    name: str
    hosts: tuple[str, ...]
    switches: tuple[str, ...]
    physical_links: tuple[PhysicalLink, ...]
    routes: Mapping[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)
    injection_time: Mapping[str, float] = field(default_factory=dict)
    injection_pair: Mapping[tuple[str, str], float] = field(default_factory=dict)
    reduction_cost: Mapping[str, float] = field(default_factory=dict)
    attrs: Mapping[str, Mapping] = field(default_factory=dict)
    source: str | None = None
    notes: tuple[str, ...] = ()
    measured: Mapping = field(default_factory=dict)
    # derived in __init__ (not arguments, not compared): every node, every directed link, and
    # per directed link (index = link id) its end nodes' indices, bandwidth, latency and the
    # shared resources it draws on (-1: none), with each resource's capacity
    nodes: tuple[str, ...] = field(init=False, repr=False, compare=False)
    links: tuple[Link, ...] = field(init=False, repr=False, compare=False)
    link_src: np.ndarray = field(init=False, repr=False, compare=False)
    link_dst: np.ndarray = field(init=False, repr=False, compare=False)
    link_bandwidth: np.ndarray = field(init=False, repr=False, compare=False)
    link_latency: np.ndarray = field(init=False, repr=False, compare=False)
    link_resource: np.ndarray = field(init=False, repr=False, compare=False)
    link_direction_resource: np.ndarray = field(init=False, repr=False, compare=False)
    resource_capacity: np.ndarray = field(init=False, repr=False, compare=False)
    # lookups and caches for the queries below
    _index: dict[str, int] = field(init=False, repr=False, compare=False)
    _host_set: frozenset[str] = field(init=False, repr=False, compare=False)
    _pair_to_link: dict[tuple[str, str], int] = field(init=False, repr=False, compare=False)
    _out: tuple[tuple[int, ...], ...] = field(init=False, repr=False, compare=False)
    _route_cache: dict[tuple[str, str], tuple[int, ...]] = field(init=False, repr=False, compare=False)
    _bfs_cache: dict[int, tuple[np.ndarray, np.ndarray]] = field(init=False, repr=False, compare=False)
    _rooted: _RootedTree | None = field(init=False, repr=False, compare=False)

    # ------------------------------------------------------------------ construction
    def __init__(
        self,
        name: str,
        hosts: Iterable[str],
        switches: Iterable[str] = (),
        links: Iterable[PhysicalLink] = (),
        *,
        routes: Mapping[tuple[str, str], Sequence[str]] | None = None,
        injection_time: Mapping[str, float] | None = None,
        injection_pair: Mapping[tuple[str, str], float] | None = None,
        reduction_cost: Mapping[str, float] | None = None,
        attrs: Mapping[str, Mapping] | None = None,
        source: str | None = None,
        notes: Iterable[str] = (),
        measured: Mapping | None = None,
        check_connected: bool = True,
    ) -> None:
        s = object.__setattr__
        s(self, "name", str(name))
        s(self, "hosts", tuple(hosts))
        s(self, "switches", tuple(switches))
        s(self, "physical_links", tuple(links))
        s(self, "routes", MappingProxyType({k: tuple(v) for k, v in (routes or {}).items()}))
        s(self, "injection_time", MappingProxyType(dict(injection_time or {})))
        s(self, "injection_pair", MappingProxyType(dict(injection_pair or {})))
        s(self, "reduction_cost", MappingProxyType(dict(reduction_cost or {})))
        s(self, "attrs", MappingProxyType({k: MappingProxyType(dict(v)) for k, v in (attrs or {}).items()}))
        s(self, "source", source)
        s(self, "notes", tuple(notes))
        s(self, "measured", MappingProxyType(dict(measured or {})))
        from ..memory import BYTES_PER_NODE, check_fits

        size = len(self.hosts) + len(self.switches) + len(self.physical_links) + len(self.routes)
        check_fits(size * BYTES_PER_NODE, f"a topology of {size:,} nodes, links and routes", element=source)
        self._build(check_connected)

    def _err(self, element: str, message: str) -> TopologyError:
        return TopologyError(message, source=self.source, element=element)

    def _build(self, check_connected: bool) -> None:
        s = object.__setattr__
        nodes = self.hosts + self.switches
        if not self.hosts:
            raise self._err("hosts", "a topology needs at least one host")
        index: dict[str, int] = {}
        for i, n in enumerate(nodes):
            if not isinstance(n, str) or not n:
                raise self._err("hosts/switches", f"node names must be non-empty strings, got {n!r}")
            if n in index:
                raise self._err(f"node {n!r}", "duplicate name (each host and switch needs a unique name)")
            index[n] = i
        s(self, "nodes", nodes)
        s(self, "_index", index)
        s(self, "_host_set", frozenset(self.hosts))

        directed: list[Link] = []
        pair_to_link: dict[tuple[str, str], int] = {}
        isfinite = math.isfinite
        for p, pl in enumerate(self.physical_links):
            a, b, bw_ab, bw_ba, lat = pl.a, pl.b, pl.bandwidth, pl.reverse_bandwidth, pl.latency
            # the checks are plain comparisons (a topology may have 100,000 links); the
            # element naming the link is only formatted for an error
            if a not in index or b not in index:
                end = a if a not in index else b
                raise self._err(_where(p, pl), f"endpoint {end!r} is not a declared host or switch")
            if a == b:
                raise self._err(_where(p, pl), "a link must join two different nodes")
            if pl.sharing not in SHARING_POLICIES:
                raise self._err(_where(p, pl), f"sharing {pl.sharing!r} is not one of {', '.join(SHARING_POLICIES)}")
            for label, bw in (("bandwidth", bw_ab), ("bandwidth_ba", bw_ba)):
                if not (isinstance(bw, (int, float)) and isfinite(bw) and bw > 0):
                    raise self._err(_where(p, pl), f"{label} must be a positive number of bytes/s, got {bw!r}")
            if not (isfinite(lat) and lat >= 0):
                raise self._err(_where(p, pl), f"latency must be >= 0 seconds, got {lat!r}")
            ends = ((a, b, bw_ab),) if pl.directed else ((a, b, bw_ab), (b, a, bw_ba))
            for u, v, bw in ends:
                if (u, v) in pair_to_link:
                    raise self._err(
                        _where(p, pl), f"duplicate link between {u!r} and {v!r} (merge parallel links into one)"
                    )
                pair_to_link[(u, v)] = len(directed)
                directed.append(Link(u, v, float(bw), float(lat), pl.sharing, p))
        s(self, "links", tuple(directed))
        s(self, "_pair_to_link", pair_to_link)

        # Arrays for the simulator and the bounds (index = directed link id).
        n_links = len(directed)
        s(self, "link_src", np.fromiter((index[l.src] for l in directed), dtype=np.int64, count=n_links))
        s(self, "link_dst", np.fromiter((index[l.dst] for l in directed), dtype=np.int64, count=n_links))
        s(self, "link_bandwidth", np.fromiter((l.bandwidth for l in directed), dtype=float, count=n_links))
        s(self, "link_latency", np.fromiter((l.latency for l in directed), dtype=float, count=n_links))
        # Shared resources: one per direction (duplex), one per cable (shared); fatpipe links
        # are not a shared resource (resource id -1): they only cap each flow.
        resource: list[int] = []
        capacity: list[float] = []
        shared_res: dict[int, int] = {}
        for l in directed:
            if l.sharing == "fatpipe":
                resource.append(-1)
            elif l.sharing == "shared":
                if l.physical not in shared_res:
                    shared_res[l.physical] = len(capacity)
                    capacity.append(l.bandwidth)
                resource.append(shared_res[l.physical])
            else:
                resource.append(len(capacity))
                capacity.append(l.bandwidth)
        # The slow direction of an asymmetric shared cable is one more resource: its flows
        # share the cable with the other direction AND, together, stay within their own
        # direction's bandwidth (a per-flow cap would let two flows take twice that).
        extra = [-1] * n_links
        for i, l in enumerate(directed):
            if l.sharing == "shared" and l.bandwidth < capacity[resource[i]]:
                extra[i] = len(capacity)
                capacity.append(l.bandwidth)
        s(self, "link_resource", np.array(resource, dtype=np.int64))
        s(self, "link_direction_resource", np.array(extra, dtype=np.int64))
        s(self, "resource_capacity", np.asarray(capacity, dtype=float))

        adj: list[list[int]] = [[] for _ in nodes]  # outgoing directed link ids per node
        for i, l in enumerate(directed):
            adj[index[l.src]].append(i)
        s(self, "_out", tuple(tuple(a) for a in adj))
        s(self, "_route_cache", {})
        s(self, "_bfs_cache", {})
        s(self, "_rooted", None)  # the tree rooted at node 0, for tree routes

        # Explicit routes: check them now so errors name the route.
        for (u, v), path in self.routes.items():
            where = f"route {u}->{v}"
            if u not in index or v not in index:
                raise self._err(where, "route endpoints must be declared nodes")
            if len(path) < 2 or path[0] != u or path[-1] != v:
                raise self._err(where, f"path must start at {u!r} and end at {v!r}, got {list(path)}")
            for x, y in zip(path, path[1:]):
                if (x, y) not in pair_to_link:
                    raise self._err(where, f"no link from {x!r} to {y!r} on the path")

        for h, t in self.injection_time.items():
            if h not in self._host_set or not (t >= 0):
                raise self._err(f"injection {h!r}", "injection time needs a declared host and a time >= 0")
        for (u, v), t in self.injection_pair.items():
            if u not in self._host_set or v not in self._host_set or not (t >= 0):
                raise self._err(f"injection {u}->{v}", "injection time needs two declared hosts and a time >= 0")
        for h, g in self.reduction_cost.items():
            if h not in self._host_set or not (g >= 0):
                raise self._err(f"reduction {h!r}", "reduction cost needs a declared host and seconds/byte >= 0")

        if check_connected and len(self.hosts) > 1:
            self._check_connected()

    def _reach(self, start: int, reverse: bool) -> np.ndarray:
        """Nodes reachable from ``start`` (to ``start`` with ``reverse``), as a bool array."""
        seen = [False] * len(self.nodes)  # a list: per-item numpy indexing is slow here
        seen[start] = True
        todo = [start]
        ends = self.link_src if reverse else self.link_dst
        starts = self.link_dst if reverse else self.link_src
        nbrs: list[list[int]] = [[] for _ in self.nodes]
        for a, b in zip(starts.tolist(), ends.tolist()):
            nbrs[a].append(b)
        while todo:
            x = todo.pop()
            for y in nbrs[x]:
                if not seen[y]:
                    seen[y] = True
                    todo.append(y)
        return np.array(seen, dtype=bool)

    def _check_connected(self) -> None:
        first = self._index[self.hosts[0]]
        fwd = self._reach(first, reverse=False)
        bwd = self._reach(first, reverse=True)
        for h in self.hosts[1:]:
            i = self._index[h]
            if not (fwd[i] and bwd[i]):
                direction = "from" if not fwd[i] else "to"
                raise self._err(
                    f"host {h!r}",
                    f"cannot be reached {direction} host {self.hosts[0]!r}: every host must be connected to the others",
                )

    # ------------------------------------------------------------------ queries
    @property
    def n_nodes(self) -> int:
        return len(self.nodes)

    def index(self, node: str) -> int:
        """Node index (hosts first, in order, then switches)."""
        try:
            return self._index[node]
        except KeyError:
            raise self._err(f"node {node!r}", "unknown node") from None

    def is_host(self, node: str) -> bool:
        return node in self._host_set

    def not_a_host(self, name: object) -> str:
        """The one wording of "``name`` is not a host of this topology", listing its first hosts."""
        shown = ", ".join(self.hosts[:8]) + (", ..." if len(self.hosts) > 8 else "")
        return f"{name!r} is not a host of topology {self.name!r} (hosts: {shown})"

    def require_host(self, name: str, *, element: str | None = None, error: type[InputError] = InputError) -> str:
        """``name`` when it is a host of this topology; otherwise ``error`` (:class:`InputError`
        or a subclass, e.g. :class:`PlanError` for a request) naming ``element``."""
        if name in self._host_set:
            return name
        raise error(self.not_a_host(name), element=element)

    def has_node(self, node: str) -> bool:
        return node in self._index

    def link_id(self, u: str, v: str) -> int:
        """Directed link id from ``u`` to ``v`` (KeyError-free: raises TopologyError)."""
        try:
            return self._pair_to_link[(u, v)]
        except KeyError:
            raise self._err(f"link {u}->{v}", "no such directed link") from None

    def has_link(self, u: str, v: str) -> bool:
        """True when a directed link ``u -> v`` exists."""
        return (u, v) in self._pair_to_link

    def out_links(self, node: str) -> tuple[int, ...]:
        return self._out[self.index(node)]

    def neighbors(self, node: str) -> list[str]:
        return [self.links[i].dst for i in self._out[self.index(node)]]

    def capacity(self, u: str, v: str) -> float:
        return self.links[self.link_id(u, v)].bandwidth

    def injection(self, u: str, v: str) -> float:
        """Per-send injection time Δ(u, v) in seconds (0 unless set)."""
        if self.injection_pair:
            t = self.injection_pair.get((u, v))
            if t is not None:
                return t
        return self.injection_time.get(u, 0.0)

    def gamma(self, host: str) -> float:
        """Reduction cost γ of ``host`` in seconds per byte (0 unless set)."""
        return self.reduction_cost.get(host, 0.0)

    # ------------------------------------------------------------------ routing
    def _bfs(self, src: int) -> tuple[np.ndarray, np.ndarray]:
        """Fewest-hop tree from ``src``, ties -> widest bottleneck -> lowest node index.

        Returns (parent link id per node, -1 if none/unreached; bottleneck per node).
        """
        cached = self._bfs_cache.get(src)
        if cached is not None:
            return cached
        n = len(self.nodes)
        dist = np.full(n, -1, dtype=np.int64)
        width = np.zeros(n)
        parent = np.full(n, -1, dtype=np.int64)
        dist[src] = 0
        width[src] = np.inf
        frontier = [src]
        bw = self.link_bandwidth
        dst_of = self.link_dst
        while frontier:
            nxt: dict[int, None] = {}
            for x in frontier:
                # Routes may cross hosts: in the Topology Zoo every PoP stores and routes.
                for lid in self._out[x]:
                    y = int(dst_of[lid])
                    d = dist[y]
                    w = min(width[x], bw[lid])
                    if d == -1:
                        dist[y] = dist[x] + 1
                        width[y] = w
                        parent[y] = lid
                        nxt[y] = None
                    elif d == dist[x] + 1 and (w > width[y] or (w == width[y] and x < self.link_src[parent[y]])):
                        width[y] = w
                        parent[y] = lid
            frontier = sorted(nxt)
        result = (parent, width)
        self._bfs_cache[src] = result
        return result

    def _rooted_tree(self) -> _RootedTree:
        """The tree rooted at node 0, for :meth:`_tree_route`: (parent, depth, up link,
        down link) per node; -1 where none (the root, an unreached node, a one-way cable)."""
        cached = self._rooted
        if cached is not None:
            return cached
        n = len(self.nodes)
        neighbours: list[list[int]] = [[] for _ in range(n)]
        for u, v in zip(self.link_src.tolist(), self.link_dst.tolist()):  # both ways: a one-way cable still joins
            neighbours[u].append(v)
            neighbours[v].append(u)
        parent = [-1] * n
        depth = [-1] * n
        up = [-1] * n
        down = [-1] * n
        pair = self._pair_to_link
        names = self.nodes
        depth[0] = 0
        frontier = [0]
        while frontier:  # breadth first from the root: a node's parent comes first
            nxt = []
            for p in frontier:
                for y in neighbours[p]:
                    if depth[y] == -1:
                        parent[y], depth[y] = p, depth[p] + 1
                        up[y] = pair.get((names[y], names[p]), -1)
                        down[y] = pair.get((names[p], names[y]), -1)
                        nxt.append(y)
            frontier = nxt
        result: _RootedTree = (parent, depth, up, down)
        object.__setattr__(self, "_rooted", result)
        return result

    def _tree_route(self, iu: int, iv: int) -> tuple[int, ...] | None:
        """The only path from node ``iu`` to ``iv`` on a tree (None: there is none): up to
        the lowest common ancestor, then down. Costs the path's length, with no search per
        source, so routing every pair a plan uses stays linear in its transfers."""
        parent, depth, up, down = self._rooted_tree()
        if depth[iu] < 0 or depth[iv] < 0:
            return None
        rise: list[int] = []
        fall: list[int] = []
        a, b = iu, iv
        while depth[a] > depth[b]:
            rise.append(up[a])
            a = parent[a]
        while depth[b] > depth[a]:
            fall.append(down[b])
            b = parent[b]
        while a != b:
            rise.append(up[a])
            fall.append(down[b])
            a, b = parent[a], parent[b]
        links = rise + fall[::-1]
        return None if -1 in links else tuple(links)

    def route(self, u: str, v: str) -> tuple[int, ...]:
        """Directed link ids crossed by a transfer from node ``u`` to node ``v``."""
        key = (u, v)
        r = self._route_cache.get(key)
        if r is not None:
            return r
        if u == v:
            r = ()
        elif key in self.routes:
            path = self.routes[key]
            r = tuple(self._pair_to_link[(x, y)] for x, y in zip(path, path[1:]))
        elif self.is_tree():  # one path between any two nodes: no search, no ties to break
            r = self._tree_route(self.index(u), self.index(v))
            if r is None:
                raise self._err(f"route {u}->{v}", "no path between these nodes")
        else:
            iu, iv = self.index(u), self.index(v)
            parent, _ = self._bfs(iu)
            if parent[iv] == -1:
                raise self._err(f"route {u}->{v}", "no path between these nodes")
            links = []
            x = iv
            while x != iu:
                lid = int(parent[x])
                links.append(lid)
                x = int(self.link_src[lid])
            r = tuple(reversed(links))
        self._route_cache[key] = r
        return r

    def path_links(self, path: Sequence[str]) -> tuple[int, ...]:
        """Directed link ids along an explicit node path (raises if a hop has no link)."""
        return tuple(self.link_id(x, y) for x, y in zip(path, path[1:]))

    def route_nodes(self, u: str, v: str) -> tuple[str, ...]:
        """Node path of ``route(u, v)``."""
        r = self.route(u, v)
        if not r:
            return (u,)
        return (u,) + tuple(self.links[i].dst for i in r)

    def route_bandwidth(self, u: str, v: str) -> float:
        """Bottleneck bandwidth of ``route(u, v)`` alone (bytes/s)."""
        r = self.route(u, v)
        return float(self.link_bandwidth[list(r)].min()) if r else float("inf")

    def route_latency(self, u: str, v: str) -> float:
        """Sum of link latencies along ``route(u, v)`` (seconds)."""
        r = self.route(u, v)
        return float(self.link_latency[list(r)].sum()) if r else 0.0

    # ------------------------------------------------------------------ helpers
    def is_tree(self) -> bool:
        """True when the physical links form a tree (connected, no cycles)."""
        return len(self.physical_links) == len(self.nodes) - 1

    def is_two_way_tree(self) -> bool:
        """True for a tree of two-way links: every host pair has one path, the tree's."""
        return self.is_tree() and not any(pl.directed for pl in self.physical_links)

    def is_symmetric(self) -> bool:
        """True when every cable has the same bandwidth in both directions."""
        return all(pl.bandwidth_ba is None or pl.bandwidth_ba == pl.bandwidth for pl in self.physical_links)

    def to_networkx(self) -> nx.DiGraph:
        """A ``networkx.DiGraph`` with ``capacity`` (bytes/s) and ``latency`` (s) on edges."""
        import networkx as nx

        g = nx.DiGraph(name=self.name)
        for h in self.hosts:
            g.add_node(h, kind="host")
        for sw in self.switches:
            g.add_node(sw, kind="switch")
        for l in self.links:
            g.add_edge(l.src, l.dst, capacity=l.bandwidth, latency=l.latency, sharing=l.sharing)
        return g

    def replace(self, **changes: Unpack[TopologyFields]) -> Topology:
        """A copy with some constructor arguments changed."""
        kwargs: TopologyFields = {
            "name": self.name,
            "hosts": self.hosts,
            "switches": self.switches,
            "links": self.physical_links,
            "routes": dict(self.routes),
            "injection_time": dict(self.injection_time),
            "injection_pair": dict(self.injection_pair),
            "reduction_cost": dict(self.reduction_cost),
            "attrs": {k: dict(v) for k, v in self.attrs.items()},
            "source": self.source,
            "notes": self.notes,
            "measured": dict(self.measured),
        }
        kwargs.update(changes)
        return Topology(**kwargs)

    def __repr__(self) -> str:
        return (
            f"Topology({self.name!r}, {len(self.hosts)} hosts, {len(self.switches)} switches, "
            f"{len(self.physical_links)} links)"
        )
