"""``load_simgrid``: a platform file as a topocast Topology, with SimGrid's routes and notes on
what was left out."""

from __future__ import annotations

import os
import warnings
from collections import defaultdict
from pathlib import Path

from ...errors import TopologyError, TopologyWarning
from ..model import PhysicalLink, Topology
from ..xmlfile import read_xml
from .infer import _infer, _merge
from .parse import _PLATFORM_ZONE, _parse_zone, _Platform
from .routing import SimGridRouter
from .units import _bit_rate_warning


def load_simgrid(path: str | os.PathLike[str], *, exact: bool = False) -> Topology:
    """Read a SimGrid platform file (see the module docstring for the mapping).

    ``exact=True`` maps each ``<cluster>`` with a backbone as SimGrid routes it (every route,
    intra-cluster ones included, crosses the backbone once) and each bus as one resource, with
    one-way links, instead of the default tree (see the module docstring).
    """
    source = str(path)
    root = read_xml(source)
    if root.tag != "platform":
        raise TopologyError(f"expected a SimGrid <platform> root element, got <{root.tag}>", source=source)
    p = _Platform(source, exact)
    p.open_zone(_PLATFORM_ZONE, "none", None, "<platform>")
    _parse_zone(p, root, "Full", _PLATFORM_ZONE)
    bit_rate = _bit_rate_warning(root)
    if not p.hosts:
        raise TopologyError("the platform declares no host", source=source)
    p.hosts_set = set(p.hosts)
    raw, routes, extra, uses = _infer(p)
    links = list(p.direct) + _merge(raw, uses)
    switches = p.routers + p.switches + extra
    # Drop routers that nothing connects (declared but unused), keep everything else.
    touched = {l.a for l in links} | {l.b for l in links}
    notes = _left_out(p, links, touched) + ([bit_rate] if bit_rate else [])
    if bit_rate:
        warnings.warn(f"{source}: {bit_rate}", TopologyWarning, stacklevel=2)
    switches = [s for s in switches if s in touched]
    name = Path(source).stem
    topo = Topology(name, p.hosts, switches, links, routes=routes, source=source)
    declared, unmapped, unrouted, no_route = _declared_routes(p, topo)
    if unmapped:
        notes.append(
            f"{unmapped} host pairs: SimGrid's route cannot be drawn on the imported graph (a cluster "
            "route crossing its backbone, see --simgrid-exact); topocast routes them itself"
        )
    for zone in unrouted:
        notes.append(f"zone {zone!r}: its routing mode is not reproduced; topocast computes its routes itself")
    if no_route:
        notes.append(
            f"{len(no_route)} host pairs the file gives no route (SimGrid cannot route them; "
            f"topocast takes the fewest-hop path), e.g. {no_route[0][0]} -> {no_route[0][1]}"
        )
    if declared:
        routes = {**routes, **declared}
        notes.append(
            f"{len(declared)} host pairs follow the file's declared routes where they differ from the "
            "fewest-hop path (e.g. up to a gateway and back down)"
        )
    return Topology(name, p.hosts, switches, links, routes=routes, source=source, notes=notes)


def _left_out(p: _Platform, links: list[PhysicalLink], touched: set[str]) -> list[str]:
    """What of the file the topology does not carry, said in words (``topology show``)."""
    notes = []
    unused_routers = [r for r in p.routers if r not in touched]
    if unused_routers:
        notes.append(f"{len(unused_routers)} routers that no route uses were left out: " + _sample(unused_routers))
    carried = {part.split("@")[0].replace(" (back)", "") for pl in links for part in (pl.name or "").split("+")}
    unused_links = [lid for lid in p.links if lid not in carried and lid != "loopback"]
    if unused_links:
        notes.append(f"{len(unused_links)} links that no route uses were left out: " + _sample(unused_links))
    if p.ignored:
        notes.append("ignored (not modelled): " + ", ".join(f"{k} x{v}" for k, v in sorted(p.ignored.items())))
    return notes


def _sample(names: list[str], k: int = 5) -> str:
    return ", ".join(names[:k]) + (f", ... ({len(names) - k} more)" if len(names) > k else "")


#: Above this many hosts, only host pairs of one zone get SimGrid's declared route (the
#: pairs where declared routes go up to a gateway and back); below, every pair does.
ALL_PAIRS_MAX_HOSTS = 400


def _declared_routes(
    p: _Platform, topo: Topology
) -> tuple[dict[tuple[str, str], tuple[str, ...]], int, list[str], list[tuple[str, str]]]:
    """Explicit node paths for the host pairs whose SimGrid route differs from topocast's own.

    Returns (routes, number of pairs that cannot be drawn on the graph, zones whose routing
    is not reproduced, host pairs the file gives no route).
    """
    router = SimGridRouter(p.zones, p.zone_of, p.source)
    unrouted = sorted(z.name for z in p.zones.values() if z.name != _PLATFORM_ZONE and not router.supported(z.name))
    walker = _RouteWalker(topo)
    unmapped_clusters = 0
    if len(p.hosts) <= ALL_PAIRS_MAX_HOSTS:
        groups = [p.hosts]
    else:
        by_zone: dict[str, list[str]] = defaultdict(list)
        for h in p.hosts:
            by_zone[p.zone_of[h]].append(h)
        groups = []
        for zid, hosts in by_zone.items():
            zone = p.zones[zid]
            if zone.routing == "cluster" and zone.backbone is not None:
                # A cluster's star route (up, backbone, down) is what the exact mapping draws
                # by construction; the default mapping turns at the cluster switch instead.
                unmapped_clusters += 0 if p.exact else len(hosts) * (len(hosts) - 1)
            elif zone.routing != "cluster":
                groups.append(hosts)
    skip = set(unrouted)
    # hosts below a zone whose routing is not reproduced: SimGrid's route is not known
    unknown = {h for group in groups for h in group if skip.intersection(router._chain_of(h))}
    # on a tree of two-way links a walk is the one path between its ends iff it visits no
    # node twice, so a walk is told from topocast's own route without routing the pair
    tree = topo.is_two_way_tree()
    out: dict[tuple[str, str], tuple[str, ...]] = {}
    unmapped = unmapped_clusters
    no_route: list[tuple[str, str]] = []
    for group in groups:
        for a in group:
            if a in unknown:
                continue
            for b in group:
                if a == b or b in unknown or (a, b) in topo.routes:
                    continue
                try:
                    pieces = router.route_pieces(a, b)
                except TopologyError:
                    no_route.append((a, b))  # SimGrid would fail on this pair
                    continue
                path = walker.walk(a, b, pieces)
                if path is None:
                    unmapped += 1
                elif (len(set(path)) < len(path)) if tree else (path != topo.route_nodes(a, b)):
                    out[(a, b)] = path
    return out, unmapped, unrouted, no_route


#: What crossing a piece of route from a node gives (:meth:`_RouteWalker._advance`).
_Step = tuple[tuple[str, ...], str, str | None] | None


class _RouteWalker:
    """Draw a list of SimGrid resources as a node path on the imported graph.

    Each resource is a named edge of the graph (one-way or both ways); a bus is two spokes via
    its hub; connector edges (the exact mode's and the route graph's) are crossed freely
    between two resources.
    """

    def __init__(self, topo: Topology) -> None:
        self.by_name: dict[str, list[tuple[str, str]]] = defaultdict(list)
        self.connector: dict[str, set[str]] = defaultdict(set)
        self.hubs: dict[str, str] = {}
        self._memo: dict[tuple[str, str | None, tuple[str, ...]], _Step] = {}
        for pl in topo.physical_links:
            pairs = [(pl.a, pl.b)] if pl.directed else [(pl.a, pl.b), (pl.b, pl.a)]
            name = pl.name or ""
            if name.startswith("connector:"):
                for u, v in pairs:
                    self.connector[u].add(v)
                continue
            for part in name.split("+"):
                part = part.replace(" (back)", "")
                if "@" in part:  # a bus spoke: the bus is crossed hub-in, hub-out
                    part = part.split("@")[0]
                    self.hubs[pl.b] = part
                self.by_name[part].extend(pairs)

    def _key(self, resource: str) -> str | None:
        if resource in self.by_name:
            return resource
        for half in ("_UP", "_DOWN"):
            if resource.endswith(half) and resource[: -len(half)] in self.by_name:
                return resource[: -len(half)]
        return None

    def _hop(self, cur: str, target: str, bus: str | None) -> list[str] | None:
        if cur == target:
            return []
        if target in self.connector.get(cur, ()):
            return [target]
        if bus is not None and (cur, target) in self.by_name[bus]:
            return [target]
        for mid in self.connector.get(cur, ()):
            if target in self.connector.get(mid, ()):
                return [mid, target]
        return None

    def _advance(self, cur: str, bus: str | None, resources: tuple[str, ...]) -> _Step:
        """Cross ``resources`` from node ``cur`` (``bus``: the bus whose hub ``cur`` is):
        (nodes stepped onto, last node, its bus), or None when a resource cannot be drawn."""
        nodes: list[str] = []
        for res in resources:
            key = self._key(res)
            if key is None:
                return None
            step = None
            for u, v in self.by_name[key]:
                hop = self._hop(cur, u, bus)
                if hop is not None and (step is None or len(hop) < len(step[0])):
                    step = (hop, v)
            if step is None:
                return None
            nodes += step[0] + [step[1]]
            cur = step[1]
            bus = self.hubs.get(cur)
        return tuple(nodes), cur, bus

    def walk(self, src: str, dst: str, pieces: list[tuple[str, ...]]) -> tuple[str, ...] | None:
        """The node path of a route given as pieces of resources (``SimGridRouter.route_pieces``):
        a walk crosses the resources one after the other, so each piece, from where it starts,
        is walked once for all the host pairs whose routes hold it."""
        path, cur, bus = [src], src, None
        memo = self._memo
        for piece in pieces:
            key = (cur, bus, piece)
            if key in memo:
                step = memo[key]
            else:
                step = memo[key] = self._advance(cur, bus, piece)
            if step is None:
                return None
            path += step[0]
            cur, bus = step[1], step[2]
        hop = self._hop(cur, dst, bus)
        if hop is None:
            return None
        return tuple(path + hop)


# ---------------------------------------------------------------------- export
