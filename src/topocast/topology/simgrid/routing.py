"""SimGrid's routing, reproduced: which links a SimGrid route crosses between two netpoints.

A SimGrid platform is a tree of zones. Every host, router and child zone is a *vertex* of the
zone that contains it; a zone routes only between its own vertices, and a route between two
netpoints of different zones is assembled from the zones on the way (SimGrid's
``NetZoneImpl::get_global_route``):

1. find the common ancestor zone of the two netpoints and, below it, the two child zones that
   hold them (or the netpoints themselves when they are vertices of the ancestor);
2. ask the ancestor for its local route between those two vertices; a route between two
   child zones (``<zoneRoute>``) names a gateway in each;
3. prepend the route from the source to the source gateway and append the route from the
   destination gateway to the destination, each found the same way (recursively).

Local routes, per routing mode (SimGrid 3.32, ``src/kernel/routing/*Zone.cpp``):

* ``Full`` — the declared route, nothing else (a missing route is an error);
* ``Floyd`` — shortest chains of declared routes, a route's cost being its number of links;
  Floyd–Warshall over the vertices in declaration order with SimGrid's tie rule (an equal-cost
  chain found later never replaces one found earlier). In a zone that has child zones,
  consecutive routes of a chain whose gateways differ are joined by the global route between
  those gateways;
* ``Cluster`` and ``<cluster>`` — a star: the source's private link up, the backbone once,
  the destination's private link down (the router has no private link);
* ``RuleBased`` (version-3 files; SimGrid 4 no longer reads it) — the first rule that matches.

A route keeps every link it crosses, in order, including a link crossed twice (up to a gateway
and back down): the simulator then counts that link twice, as SimGrid's sharing does.
Link names are SimGrid's resource names: a SPLITDUPLEX link ``l`` is two resources, ``l_UP``
and ``l_DOWN``; a symmetrical route's reverse crosses its links in reverse order and a
split-duplex link in the other direction.

Not reproduced: ``Dijkstra``/``DijkstraCache``, ``Vivaldi``, ``Wifi``, ``Star`` and the
non-FLAT cluster topologies (the importer routes those zones itself and says so), bypass
routes and loopback links.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...errors import TopologyError

__all__ = ["SgZone", "SimGridRouter", "ROUTED_MODES"]

#: Routing modes whose routes :class:`SimGridRouter` reproduces.
ROUTED_MODES = ("full", "floyd", "cluster", "rulebased", "none")


@dataclass
class SgZone:
    """One SimGrid zone as the importer read it."""

    name: str
    routing: str  # lower case: full, floyd, dijkstra, cluster, rulebased, ...
    parent: str | None
    vertices: list[str] = field(default_factory=list)  # hosts, routers, child zones, in file order
    recursive: bool = False  # the zone has child zones (SimGrid's RoutingMode::recursive)
    # (src vertex, dst vertex) -> (SimGrid resources, gw_src, gw_dst); gateways only for zone routes
    routes: dict[tuple[str, str], tuple[tuple[str, ...], str | None, str | None]] = field(default_factory=dict)
    star: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] | None = None  # cluster: host -> (up, down)
    backbone: str | None = None


class SimGridRouter:
    """The links (SimGrid resource names, in order) of SimGrid's route between two netpoints."""

    def __init__(self, zones: dict[str, SgZone], zone_of: dict[str, str], source: str = "<platform>"):
        self.zones = zones
        self.zone_of = zone_of
        self.source = source
        self._floyd: dict[str, tuple[dict[str, int], list[list[int]]]] = {}
        self._chain: dict[str, list[str]] = {}

    def supported(self, zone: str) -> bool:
        return self.zones[zone].routing in ROUTED_MODES

    # -- step 1: zones from the root down to a netpoint
    def _chain_of(self, netpoint: str) -> list[str]:
        chain = self._chain.get(netpoint)
        if chain is None:
            chain = []
            z: str | None = self.zone_of[netpoint]
            while z is not None:
                chain.append(z)
                z = self.zones[z].parent
            chain.reverse()
            self._chain[netpoint] = chain
        return chain

    def route(self, src: str, dst: str) -> list[str]:
        """SimGrid's ``get_global_route(src, dst)`` as a list of resource names."""
        return [link for piece in self.route_pieces(src, dst) for link in piece]

    def route_pieces(self, src: str, dst: str) -> list[tuple[str, ...]]:
        """:meth:`route` as the pieces it is assembled from, in order (their concatenation):
        declared routes, a cluster's private links and backbone. The pieces are the zones'
        own tuples, so a caller that walks every host pair can work on each piece once."""
        zs, zd = self.zone_of[src], self.zone_of[dst]
        if zs == zd:
            return self._local_pieces(zs, src, dst)[0]
        cs, cd = self._chain_of(src), self._chain_of(dst)
        k = 0
        while k < min(len(cs), len(cd)) and cs[k] == cd[k]:
            k += 1
        common = cs[k - 1]
        src_vertex = cs[k] if k < len(cs) else src  # the child zone holding src, or src itself
        dst_vertex = cd[k] if k < len(cd) else dst
        # steps 2 and 3
        pieces, gw_src, gw_dst = self._local_pieces(common, src_vertex, dst_vertex)
        out: list[tuple[str, ...]] = []
        if src_vertex != src:
            out += self.route_pieces(src, self._gateway(gw_src, src_vertex, "gw_src"))
        out += pieces
        if dst_vertex != dst:
            out += self.route_pieces(self._gateway(gw_dst, dst_vertex, "gw_dst"), dst)
        return out

    def _gateway(self, gw: str | None, zone: str, which: str) -> str:
        if gw is None:
            raise TopologyError(
                f"the route into zone {zone!r} names no {which} (declare it with a <zoneRoute>)", source=self.source
            )
        return gw

    def local(self, zid: str, src: str, dst: str) -> tuple[tuple[str, ...], str | None, str | None]:
        """The zone's own route between two of its vertices: (resources, gw_src, gw_dst)."""
        pieces, gw_src, gw_dst = self._local_pieces(zid, src, dst)
        return tuple(link for piece in pieces for link in piece), gw_src, gw_dst

    def _local_pieces(self, zid: str, src: str, dst: str) -> tuple[list[tuple[str, ...]], str | None, str | None]:
        """:meth:`local` as pieces (:meth:`route_pieces`)."""
        zone = self.zones[zid]
        if zone.routing == "cluster":
            return self._star(zone, src, dst)
        if zone.routing == "floyd":
            return self._floyd_route(zone, src, dst)
        if zone.routing in ("full", "rulebased", "none"):
            r = zone.routes.get((src, dst))
            if r is None:
                raise TopologyError(
                    f"zone {zid!r} ({zone.routing}) declares no route from {src!r} to {dst!r}", source=self.source
                )
            return [r[0]], r[1], r[2]
        raise TopologyError(f"routing={zone.routing!r} of zone {zid!r} is not reproduced", source=self.source)

    # -- Cluster / <cluster>: a star around the backbone
    def _star(self, zone: SgZone, src: str, dst: str):
        star = zone.star or {}
        pieces: list[tuple[str, ...]] = []
        if src in star:
            pieces.append(star[src][0])
        if zone.backbone is not None:
            pieces.append((zone.backbone,))
        if dst in star:
            pieces.append(star[dst][1])
        return pieces, None, None

    # -- Floyd: chains of declared routes, cost = number of links
    def _floyd_tables(self, zone: SgZone) -> tuple[dict[str, int], list[list[int]]]:
        tables = self._floyd.get(zone.name)
        if tables is not None:
            return tables
        index = {v: i for i, v in enumerate(zone.vertices)}
        n = len(index)
        inf = np.iinfo(np.int64).max // 4
        cost = np.full((n, n), inf, dtype=np.int64)
        pred = np.full((n, n), -1, dtype=np.int64)
        for (a, b), (links, _, _) in zone.routes.items():
            if a != b:
                cost[index[a], index[b]] = len(links)
                pred[index[a], index[b]] = index[a]
        # FloydZone::do_seal: for c, a, b: replace when a->c->b is strictly cheaper (or a->b
        # unknown). Row c and column c do not change during round c, so a round is one
        # vectorised step with the same result as SimGrid's loops.
        for c in range(n):
            via = cost[:, c, None] + cost[None, c, :]
            better = (cost[:, c, None] < inf) & (cost[None, c, :] < inf) & (via < cost)
            better[c, :] = False
            better[:, c] = False
            if better.any():
                cost = np.where(better, via, cost)
                pred = np.where(better, pred[c][None, :], pred)
        tables = (index, pred.tolist())  # read one entry at a time: lists are faster
        self._floyd[zone.name] = tables
        return tables

    def _floyd_route(self, zone: SgZone, src: str, dst: str):
        index, pred = self._floyd_tables(zone)
        s, cur = index[src], index[dst]
        row = pred[s]
        stack = []
        while True:
            p = row[cur]
            if p < 0:
                raise TopologyError(
                    f"zone {zone.name!r} (Floyd) has no chain of routes from {src!r} to {dst!r}", source=self.source
                )
            stack.append(zone.routes[(zone.vertices[p], zone.vertices[cur])])
            cur = p
            if cur == s:
                break
        stack.reverse()
        pieces: list[tuple[str, ...]] = []
        prev_gw_dst = None
        for r_links, gw_src, gw_dst in stack:
            if zone.recursive and prev_gw_dst is not None and gw_src is not None and prev_gw_dst != gw_src:
                pieces += self.route_pieces(prev_gw_dst, gw_src)
            pieces.append(r_links)
            prev_gw_dst = gw_dst
        gw_first, gw_last = (stack[0][1], stack[-1][2]) if zone.recursive else (None, None)
        return pieces, gw_first, gw_last
