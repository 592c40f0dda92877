"""Reading a platform file: zones, hosts, routers, links, clusters and routes (both for the
graph inference and for SimGrid's own routing)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import defaultdict
from typing import NamedTuple, Protocol

from ...errors import TopologyError
from ..model import PhysicalLink
from .routing import SgZone
from .units import _policy, _radical, _sg_bandwidth, _sg_time

#: The pseudo-zone for the <platform> element itself (SimGrid's root zone is its one child).
_PLATFORM_ZONE = "<platform>"

#: Capacity of a connector edge (bytes/s): never the bottleneck of a real platform.
CONNECTOR_BANDWIDTH = 1e15


class _Statement(NamedTuple):
    """One route of the file between two netpoints, as the graph inference reads it."""

    src: str
    dst: str
    links: list[str]  # link ids, in route order
    symmetrical: bool
    explicit: bool  # a route of a Full/RuleBased zone (host to host), not a zone route
    where: str  # the element, for errors
    directions: list[str]  # per link: UP, DOWN or NONE


class _Platform:
    def __init__(self, source: str, exact: bool = False) -> None:
        self.source = source
        self.exact = exact
        self.hosts: list[str] = []
        self.hosts_set: set[str] = set()  # the hosts, filled once the whole file is read
        self.routers: list[str] = []
        self.switches: list[str] = []  # cluster switches
        self.netpoints: set[str] = set()
        self.links: dict[str, tuple[float, float, str]] = {}  # id -> (bw, lat, sharing)
        self.direct: list[PhysicalLink] = []  # edges known without inference (clusters)
        self.statements: list[_Statement] = []
        self.zones: dict[str, SgZone] = {}  # SimGrid's zone tree, for the router (simgrid.routing)
        self.zone_of: dict[str, str] = {}  # netpoint -> englobing zone
        self.policy: dict[str, str] = {}  # link id -> SimGrid sharing policy as written
        self.ignored: dict[str, int] = defaultdict(int)  # element/attribute -> how often ignored

    def add_node(self, name: str, kind: str, where: str, zone: str | None = None) -> None:
        if name in self.netpoints:
            raise TopologyError(f"duplicate name {name!r}", source=self.source, element=where)
        self.netpoints.add(name)
        {"host": self.hosts, "router": self.routers, "switch": self.switches}[kind].append(name)
        if zone is not None:  # a SimGrid netpoint: a vertex of its zone, in document order
            self.zone_of[name] = zone
            self.zones[zone].vertices.append(name)

    def inside(self, netpoint: str, zid: str) -> bool:
        """Whether ``netpoint`` lies in zone ``zid`` or in one of its descendants."""
        z = self.zone_of.get(netpoint)
        while z is not None:
            if z == zid:
                return True
            z = self.zones[z].parent
        return False

    def open_zone(self, zid: str, routing: str, parent: str | None, where: str) -> SgZone:
        if zid in self.zones or zid in self.netpoints:
            raise TopologyError(f"duplicate zone id {zid!r}", source=self.source, element=where)
        z = SgZone(zid, routing.lower(), parent)
        self.zones[zid] = z
        if parent is not None:  # a child zone is a vertex (netpoint) of its parent
            self.zones[parent].vertices.append(zid)
            self.zones[parent].recursive = True
        return z


def _desc(e: ET.Element) -> str:
    keys = [k for k in ("id", "src", "dst") if e.get(k) is not None]
    return f"<{e.tag} " + " ".join(f'{k}="{e.get(k)}"' for k in keys) + ">"


def _zone_children(zone: ET.Element) -> list[str]:
    out = []
    for c in zone:
        if c.tag in ("zone", "AS", "cluster") and (zid := c.get("id")) is not None:  # ids checked on parsing
            out.append(zid)
    return out


def _parse_zone(p: _Platform, zone: ET.Element, routing: str, zid: str) -> None:
    """Read one zone (``zid``, already opened in ``p.zones``) and, recursively, its children."""
    deferred: list[ET.Element] = []
    local_hosts: list[str] = []
    local_routers: list[str] = []
    host_links: list[ET.Element] = []
    backbone: str | None = None
    for e in zone:
        tag = e.tag
        where = _desc(e)
        if tag in ("zone", "AS"):
            child = e.get("id")
            if child is None:
                raise TopologyError("missing id", source=p.source, element=where)
            child_routing = e.get("routing") or "Full"
            p.open_zone(child, child_routing, zid, where)
            _parse_zone(p, e, child_routing, child)
        elif tag == "host":
            host = _req(e, "id", p)
            p.add_node(host, "host", where, zid)
            local_hosts.append(host)
            _note_ignored(p, e)
        elif tag == "router":
            router = _req(e, "id", p)
            p.add_node(router, "router", where, zid)
            local_routers.append(router)
        elif tag == "host_link":
            host_links.append(e)
        elif tag in ("link", "backbone"):
            if tag == "backbone":
                backbone = e.get("id")
            lid = _req(e, "id", p)
            if lid in p.links:
                raise TopologyError(f"duplicate link id {lid!r}", source=p.source, element=where)
            p.links[lid] = (
                _sg_bandwidth(_req(e, "bandwidth", p), f"{where}: bandwidth", p.source),
                _sg_time(e.get("latency", "0"), f"{where}: latency", p.source),
                _policy(e.get("sharing_policy"), "SHARED", f"{where}: sharing_policy", p.source),
            )
            p.policy[lid] = (e.get("sharing_policy") or "SHARED").upper()
            _note_ignored(p, e)
        elif tag == "cluster":
            _parse_cluster(p, e, zid)
        elif tag in ("route", "zoneRoute", "ASroute"):
            deferred.append(e)
        elif tag in (
            "bypassRoute",
            "bypassZoneRoute",
            "bypassASroute",
            "prop",
            "config",
            "trace",
            "trace_connect",
            "actor",
            "process",
            "storage_type",
            "storage",
            "mount",
            "disk",
            "random",
            "model_prop",
        ):
            p.ignored[f"<{tag}>"] += 1
            continue
        else:
            raise TopologyError(f"unsupported SimGrid element <{tag}>", source=p.source, element=where)
    if routing.lower() == "cluster":
        _cluster_zone(p, zone, local_hosts, local_routers, host_links, backbone)
        p.zones[zid].star = {
            _req(hl, "id", p): ((_star_res(p, _req(hl, "up", p), "UP"),), (_star_res(p, _req(hl, "down", p), "DOWN"),))
            for hl in host_links
        }
        p.zones[zid].backbone = backbone
    elif host_links:
        raise TopologyError(
            '<host_link> is only supported in a zone with routing="Cluster"',
            source=p.source,
            element=_desc(host_links[0]),
        )
    # Routes after the nodes and links of the zone (and of its children) are known.
    for e in deferred:
        _parse_route(p, zone, routing, e, zid)


#: Attributes of hosts and links that topocast reads; any other is listed as ignored.
_READ_ATTRIBUTES = {"id", "bandwidth", "latency", "sharing_policy"}


def _note_ignored(p: _Platform, e: ET.Element) -> None:
    """Count what topocast does not model (host speeds, cores, properties, ...) to report it."""
    for attr in e.attrib:
        if attr not in _READ_ATTRIBUTES:
            p.ignored[f"<{e.tag} {attr}=>"] += 1
    for c in e:
        p.ignored[f"<{e.tag}><{c.tag}>"] += 1


def _star_res(p: _Platform, lid: str, direction: str) -> str:
    """SimGrid resource of a host_link end: ``l`` or, for a SPLITDUPLEX link, ``l_UP``/``l_DOWN``."""
    base, half = _resolve_link(p, lid, "<host_link>")
    if p.policy.get(base) in ("SPLITDUPLEX", "FULLDUPLEX"):
        return f"{base}_{half if half != 'NONE' else direction}"
    return base


def _resolve_link(p: _Platform, lid: str, where: str) -> tuple[str, str]:
    """(declared link id, direction) for a host_link end: ``l2_UP`` names link ``l2``'s up half."""
    if lid in p.links:
        return lid, "NONE"
    for suffix in ("_UP", "_DOWN"):
        if lid.endswith(suffix) and lid[: -len(suffix)] in p.links:
            return lid[: -len(suffix)], suffix[1:]
    raise TopologyError(f"{lid!r} names no declared <link>", source=p.source, element=where)


def _cluster_zone(
    p: _Platform,
    zone: ET.Element,
    hosts: list[str],
    routers: list[str],
    host_links: list[ET.Element],
    backbone: str | None,
) -> None:
    """A zone with routing="Cluster": hosts with <host_link up= down=>, an optional
    <backbone> and an optional <router>, mapped as <cluster> is (see the module docstring)."""
    zid = _req(zone, "id", p)
    where = _desc(zone)
    router = routers[0] if routers else None
    if backbone is not None:
        switch = zid if zid not in p.netpoints else f"{zid}-switch"
        p.add_node(switch, "switch", where)
        if router is not None:
            bw, lat, sharing = p.links[backbone]
            p.direct.append(PhysicalLink(switch, router, bw, lat, None, sharing, backbone))
    elif router is not None:
        switch = router
    else:
        raise TopologyError("a Cluster zone needs a <backbone> or a <router>", source=p.source, element=where)
    linked: set[str] = set()
    for hl in host_links:
        h = _req(hl, "id", p)
        hw = _desc(hl)
        if h not in hosts:
            raise TopologyError(f"{h!r} is not a host of this zone", source=p.source, element=hw)
        up, _ = _resolve_link(p, _req(hl, "up", p), hw)
        down, _ = _resolve_link(p, _req(hl, "down", p), hw)
        ubw, ulat, usharing = p.links[up]
        dbw, dlat, _ = p.links[down]
        if up == down:
            p.direct.append(PhysicalLink(h, switch, ubw, ulat, None, usharing, up))
        else:  # two resources, one per direction
            p.direct.append(
                PhysicalLink(h, switch, ubw, max(ulat, dlat), dbw if dbw != ubw else None, "duplex", f"{up}+{down}")
            )
        linked.add(h)
    for h in hosts:
        if h not in linked:
            raise TopologyError(f"host {h!r} of a Cluster zone has no <host_link>", source=p.source, element=where)


def _req(e: ET.Element, attr: str, p: _Platform) -> str:
    v = e.get(attr)
    if v is None or v == "":
        raise TopologyError(f"missing attribute {attr!r}", source=p.source, element=_desc(e))
    return v


def _parse_cluster(p: _Platform, e: ET.Element, parent: str) -> None:
    where = _desc(e)
    cid = _req(e, "id", p)
    zone = p.open_zone(cid, "cluster", parent, where)
    topo = (e.get("topology") or "FLAT").upper()
    if topo != "FLAT":
        raise TopologyError(f"cluster topology {topo} is not supported (only FLAT)", source=p.source, element=where)
    prefix, suffix = e.get("prefix", ""), e.get("suffix", "")
    radical = _radical(_req(e, "radical", p), f"{where}: radical", p.source)
    bw = _sg_bandwidth(_req(e, "bw", p), f"{where}: bw", p.source)
    lat = _sg_time(e.get("lat", "0"), f"{where}: lat", p.source)
    sharing = _policy(e.get("sharing_policy"), "SPLITDUPLEX", f"{where}: sharing_policy", p.source)
    router = e.get("router_id") or f"{prefix}{cid}_router{suffix}"
    hosts = [f"{prefix}{i}{suffix}" for i in radical]
    for h in hosts:
        p.add_node(h, "host", where, cid)
    for attr in e.attrib:
        if attr in (
            "power",
            "speed",
            "core",
            "availability_file",
            "state_file",
            "limiter_link",
            "loopback_bw",
            "loopback_lat",
        ):
            p.ignored[f"<cluster {attr}=>"] += 1
    # SimGrid's resources for the router (simgrid.routing): private link i, then the backbone
    split = sharing == "duplex"
    zone.star = {
        h: (
            (f"{cid}_link_{i}_UP",) if split else (f"{cid}_link_{i}",),
            (f"{cid}_link_{i}_DOWN",) if split else (f"{cid}_link_{i}",),
        )
        for i, h in zip(radical, hosts)
    }
    bb_bw_text = e.get("bb_bw")
    zone.backbone = f"{cid}_backbone" if bb_bw_text else None
    if bb_bw_text:
        bb_bw = _sg_bandwidth(bb_bw_text, f"{where}: bb_bw", p.source)
        bb_lat = _sg_time(e.get("bb_lat", "0"), f"{where}: bb_lat", p.source)
        bb_sharing = _policy(e.get("bb_sharing_policy"), "SHARED", f"{where}: bb_sharing_policy", p.source)
        switch = cid if cid not in p.netpoints else f"{cid}-switch"
        p.add_node(switch, "switch", where)
        p.add_node(router, "router", where, cid)
        if p.exact:
            # SimGrid's ClusterZone exactly: every route crosses the backbone once.
            #   host -UP-> switch -backbone-> switch-out -DOWN-> host;  switch-out -> router -> switch
            out = f"{switch}-out"
            while out in p.netpoints:
                out += "_"
            p.add_node(out, "switch", where)
            one_way = "fatpipe" if bb_sharing == "fatpipe" else "duplex"
            p.direct.append(PhysicalLink(switch, out, bb_bw, bb_lat, None, one_way, f"{cid}_backbone", directed=True))
            p.direct.append(
                PhysicalLink(
                    out, router, CONNECTOR_BANDWIDTH, 0.0, None, "fatpipe", f"connector:{out}>{router}", directed=True
                )
            )
            p.direct.append(
                PhysicalLink(
                    router,
                    switch,
                    CONNECTOR_BANDWIDTH,
                    0.0,
                    None,
                    "fatpipe",
                    f"connector:{router}>{switch}",
                    directed=True,
                )
            )
            priv = "fatpipe" if sharing == "fatpipe" else "duplex"
            for i, h in zip(radical, hosts):
                p.direct.append(PhysicalLink(h, switch, bw, lat, None, priv, f"{cid}_link_{i}_UP", directed=True))
                p.direct.append(PhysicalLink(out, h, bw, lat, None, priv, f"{cid}_link_{i}_DOWN", directed=True))
            return
        p.direct.append(PhysicalLink(switch, router, bb_bw, bb_lat, None, bb_sharing, f"{cid}_backbone"))
    else:
        switch = router
        p.add_node(router, "router", where, cid)
    for i, h in zip(radical, hosts):
        p.direct.append(PhysicalLink(h, switch, bw, lat, None, sharing, f"{cid}_link_{i}"))


def _links_of(p: _Platform, e: ET.Element) -> list[tuple[str, str]]:
    """(link id, direction) of every link_ctn (direction UP/DOWN/NONE)."""
    out: list[tuple[str, str]] = []
    for c in e:
        if c.tag != "link_ctn":
            continue
        lid = _req(c, "id", p)
        if lid not in p.links:
            raise TopologyError(f"link_ctn {lid!r} names no declared <link>", source=p.source, element=_desc(e))
        out.append((lid, (c.get("direction") or "NONE").upper()))
    return out


def _parse_route(p: _Platform, zone: ET.Element, routing: str, e: ET.Element, zid: str) -> None:
    where = _desc(e)
    declare = _route_declarer(p, zid, e, where)
    sym = (e.get("symmetrical") or "YES").upper() == "YES"
    links = _links_of(p, e)
    rule = routing.lower() == "rulebased"
    explicit = routing.lower() in ("full", "rulebased")
    if e.tag == "route":
        src, dst = _req(e, "src", p), _req(e, "dst", p)
        if rule:
            pairs = [
                (a, b)
                for a in sorted(p.netpoints)
                for b in sorted(p.netpoints)
                if a != b and re.fullmatch(src, a) and re.fullmatch(dst, b)
            ]
        else:
            pairs = [(src, dst)]
        for a, b in pairs:
            _add_statement(p, a, b, links, sym, explicit, where)
            declare(a, b, None, None, first_wins=rule)
        return
    gsrc, gdst = _req(e, "gw_src", p), _req(e, "gw_dst", p)
    if not rule:
        _add_statement(p, gsrc, gdst, links, sym, False, where)
        declare(_req(e, "src", p), _req(e, "dst", p), gsrc, gdst)
        return
    # RuleBased zoneRoute: src/dst are regexes over the child zones; $Nsrc / $Ndst in the
    # gateways are the groups of the source / destination match.
    src_re, dst_re = _req(e, "src", p), _req(e, "dst", p)
    kids = _zone_children(zone)
    for za in kids:
        ma = re.fullmatch(src_re, za)
        if not ma:
            continue
        for zb in kids:
            mb = re.fullmatch(dst_re, zb)
            if za == zb or not mb:
                continue
            ga, gb = gsrc, gdst
            for i, g in enumerate(ma.groups(), 1):
                ga, gb = ga.replace(f"${i}src", g), gb.replace(f"${i}src", g)
            for i, g in enumerate(mb.groups(), 1):
                ga, gb = ga.replace(f"${i}dst", g), gb.replace(f"${i}dst", g)
            if ga not in p.netpoints or gb not in p.netpoints:
                continue  # the rule does not apply to this pair (e.g. a zone with no gateway)
            _add_statement(p, ga, gb, links, sym, False, where)
            declare(za, zb, ga, gb, first_wins=True)


class _Declare(Protocol):
    def __call__(
        self, src: str, dst: str, gw_src: str | None, gw_dst: str | None, first_wins: bool = False
    ) -> None: ...


def _route_declarer(p: _Platform, zid: str, e: ET.Element, where: str) -> _Declare:
    """A function that records route ``e`` in zone ``zid``'s table as SimGrid resources.

    A SPLITDUPLEX link is two resources, ``l_UP`` and ``l_DOWN``; the reverse of a symmetrical
    route crosses the links in reverse order and a split-duplex link in the other direction
    (SimGrid's ``get_link_list_impl(backroute=True)``).
    """
    zone = p.zones[zid]
    fwd: list[str] = []
    back: list[str] = []
    for lid, direction in _links_of(p, e):
        if p.policy.get(lid) in ("SPLITDUPLEX", "FULLDUPLEX"):
            if direction not in ("UP", "DOWN"):
                raise TopologyError(
                    f'link_ctn {lid!r} is SPLITDUPLEX: it needs direction="UP" or "DOWN"',
                    source=p.source,
                    element=where,
                )
            fwd.append(f"{lid}_{direction}")
            back.append(f"{lid}_{'DOWN' if direction == 'UP' else 'UP'}")
        else:
            fwd.append(lid)
            back.append(lid)
    sym = (e.get("symmetrical") or "YES").upper() == "YES"

    def declare(src: str, dst: str, gw_src: str | None, gw_dst: str | None, first_wins: bool = False) -> None:
        if first_wins and (src not in zone.vertices or dst not in zone.vertices):
            return  # a RuleBased pattern also matches netpoints of other zones
        for a, b in ((src, dst),):
            if a not in zone.vertices or b not in zone.vertices:
                raise TopologyError(
                    f"{a if a not in zone.vertices else b!r} is not a host, router or zone directly "
                    f"inside zone {zid!r}",
                    source=p.source,
                    element=where,
                )
        if gw_src is not None and gw_dst is not None:  # a zone route names both gateways
            for z, gw in ((src, gw_src), (dst, gw_dst)):
                if not p.inside(gw, z):
                    raise TopologyError(f"gateway {gw!r} is not inside zone {z!r}", source=p.source, element=where)
        entries = [((src, dst), (tuple(fwd), gw_src, gw_dst))]
        if sym:
            entries.append(((dst, src), (tuple(reversed(back)), gw_dst, gw_src)))
        for key, value in entries:
            old = zone.routes.get(key)
            if old is None:
                zone.routes[key] = value
            elif old != value and not first_wins:
                raise TopologyError(
                    f"route {key[0]} -> {key[1]} is declared twice with different links "
                    f'({" ".join(old[0])} / {" ".join(value[0])}); add symmetrical="NO" to a '
                    "route whose reverse is declared separately",
                    source=p.source,
                    element=where,
                )

    return declare


def _add_statement(
    p: _Platform, src: str, dst: str, lks: list[tuple[str, str]], sym: bool, explicit: bool, where: str
) -> None:
    links = [lid for lid, _ in lks]
    dirs = [d for _, d in lks]
    for n in (src, dst):
        if n not in p.netpoints:
            raise TopologyError(
                f"{n!r} is not a declared host, router or cluster router", source=p.source, element=where
            )
    if src == dst:
        return  # loopback: not modelled
    if not links:
        raise TopologyError(
            "a route between two different netpoints needs at least one link_ctn", source=p.source, element=where
        )
    p.statements.append(_Statement(src, dst, links, sym, explicit, where, dirs))
