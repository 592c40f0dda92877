"""SimGrid platform XML: import (DTD v3 and v4.x) and export (v4.1).

SimGrid describes a network as *resources* (``<link>``) listed along routes between
netpoints (hosts and routers), grouped in zones with a routing mode. topocast's model is a
graph: nodes (hosts, switches) joined by links, with optional explicit node-path routes. The
import infers a graph that crosses the same links as SimGrid's routes.

Mapping (what each SimGrid element becomes)
-------------------------------------------
* ``<host>`` -> a host; ``<router>`` -> a switch (it only forwards).
* ``<link>`` sharing policy: ``SHARED`` (SimGrid's default: both directions share one
  capacity) -> ``sharing: shared``; ``SPLITDUPLEX``/``FULLDUPLEX`` -> ``duplex`` (one capacity
  per direction); ``FATPIPE`` -> ``fatpipe``; ``WIFI`` -> ``shared``.
* ``<cluster>`` (``topology="FLAT"`` only), as SimGrid builds it::

        host_1 ... host_n                 hosts: prefix + radical + suffix
           \\  |   /      private links (bw, lat, sharing_policy; SPLITDUPLEX -> duplex)
          <cluster id>    one switch per cluster (named after the cluster)
              |           backbone (bb_bw, bb_lat; bb_sharing_policy SHARED -> shared,
           router         FATPIPE -> fatpipe); the router is router_id or
                          prefix + id + "_router" + suffix, the cluster's gateway

  Difference: in SimGrid a host-to-host route *inside* a cluster crosses the backbone
  (private up, backbone, private down); here it turns at the cluster switch and does not.
  Traffic leaving the cluster crosses the backbone in both. Without ``bb_bw`` the router is
  the cluster switch itself. ``load_simgrid(..., exact=True)`` (CLI ``topology convert
  --simgrid-exact``) maps a cluster with a backbone exactly as SimGrid routes it, with one-way
  links: ``host -UP-> <id> -backbone-> <id>-out -DOWN-> host`` and connectors
  ``<id>-out -> router -> <id>``, so every route, intra-cluster ones included, crosses the
  backbone once (the graph is then no tree; a SHARED private link becomes two one-way links).
  ``limiter_link`` and ``loopback_*`` are ignored.
* A zone with ``routing="Cluster"`` (hosts with ``<host_link up= down=>``, ``<backbone>``,
  ``<router>``) is mapped the same way: one switch named after the zone, each host joined to
  it by its up/down links (one link with ``bandwidth``/``bandwidth_ba`` when they are two,
  ``l_UP``/``l_DOWN`` halves of one SPLITDUPLEX link -> that link), backbone switch-router.
* Routes (``<route>``, ``<zoneRoute>``/``<ASroute>`` between their gateways, with
  ``link_ctn`` lists, ``symmetrical``): each is a chain of links from its source netpoint to
  its destination netpoint. We give every link two ends and unify them along every chain
  (shortest chains first): the first link's entry end *is* the source, each link's exit end
  *is* the next link's entry end, the last exit *is* the destination. Ends that never become
  a host or router are synthetic junction switches (``j0``, ``j1``, ...). A Floyd/Dijkstra
  zone whose routes are single links thus becomes those links as direct edges, and the
  hierarchical platforms shipped here (g5k, griffon, gdx) become trees.
* When the routes cannot be drawn as a graph whose edges are the links (unification would
  glue two netpoints together or a link to itself; ``small_platform.xml`` is such a list of
  hand-made routes: e.g. Tremblay->Bourassa ends with links 6,7 and Fafard->Bourassa with
  8,6,7, while Jacquelin->Fafard crosses 6 then 9, the Tremblay-Jupiter link), the whole
  platform is imported as an exact *route graph* instead: each direction in which a route
  crosses link ``L`` is a one-way link ``L.in -> L.out`` (``L.rin -> L.rout`` backwards),
  one-way connector edges (fatpipe, 1e15 B/s, 0 s) join consecutive links, and every route
  between two hosts is an explicit route. Every flow crosses exactly SimGrid's links and no
  path can bypass one, so bounds stay finite. Limit: a SHARED link crossed in both
  directions becomes two one-way links of its full bandwidth (opposite flows do not share).
* A link that single-link routes use between more than two netpoints (a shared bus such as
  ``gdx_main`` or griffon's ``backbone``) cannot be one edge: it becomes a hub switch
  ``<id>-bus`` with one spoke per netpoint (the link's bandwidth and sharing, half its
  latency, so a route through the hub has the link's latency). Difference: in SimGrid all
  flows over the bus share one capacity; here only flows that share a spoke do. With
  ``exact=True`` the bus is one one-way link ``<id>-bus -> <id>-bus-out`` that every endpoint
  reaches and leaves through one-way connectors, so all its flows share it, as in SimGrid.
* A link that routes cross in one direction only becomes a one-way link (SimGrid cannot use
  the other direction either).
* Parallel links (several SimGrid links between the same two nodes) are merged, because the
  model allows one link per node pair: if each is used in one direction only (an
  asymmetric pair, as :func:`save_simgrid` writes) they become one link with
  ``bandwidth``/``bandwidth_ba``; otherwise bandwidths are summed and the larger latency kept.
* Routes: every host pair takes the links SimGrid's own route crosses, in SimGrid's order
  (:mod:`topocast.topology.simgrid_routing` reproduces SimGrid's zone routing: declared
  routes, Floyd chains of them, gateways through nested zones). Where that route is not the
  fewest-hop path of the graph — typically two hosts behind one intermediate switch whose
  declared routes go up to the site gateway and back down, crossing the uplink twice — it is
  kept as an explicit node path; a link crossed twice then counts twice in the simulator, as
  in SimGrid. Pairs are checked within each zone (every pair up to 400 hosts); the tests
  compare every pair, or a large sample, with SimGrid 3.32's ``route_to``. A SimGrid route
  that the graph cannot draw (a cluster's intra-cluster route crosses its backbone; use
  ``exact=True``) keeps topocast's path, and ``Topology.notes`` says how many pairs.
  The max-flow bound does not look at routes: it is the bound of the graph, which a detour
  can only lower the achievable rate below.
* ``Topology.notes`` lists what the import left out: routers and links no route uses,
  attributes not modelled (speeds, cores, properties), and bare bandwidths that look like
  bit/s (SimGrid reads a bare number as bytes/s; so does topocast, with a warning).
* Ignored: ``src == dst`` routes (loopback), ``bypassRoute``, host speeds and properties,
  traces. Unsupported elements (``peer``, ``cabinet``, ``include``,
  non-FLAT clusters) raise an error naming the element.

Units follow SimGrid: bandwidth ``Bps`` (default, bytes/s), ``kBps``..``EBps``, ``KiBps``..,
bits with ``bps``; latency ``s`` (default), ``ms``, ``us``, ``ns``, ``ps``, ``m``, ``h``,
``d``, ``w``.
"""

from __future__ import annotations

import math
import re
import warnings
import xml.etree.ElementTree as ET
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

from ..errors import TopologyError, TopologyWarning
from .model import PhysicalLink, Topology
from .simgrid_routing import SgZone, SimGridRouter

#: The pseudo-zone for the <platform> element itself (SimGrid's root zone is its one child).
_PLATFORM_ZONE = "<platform>"

__all__ = ["load_simgrid", "save_simgrid", "simgrid_xml"]

# ---------------------------------------------------------------------- units (SimGrid's)
_NUM = r"([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)"
_BW_PREFIX = {
    "": 1.0,
    "k": 1e3,
    "K": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
    "Ki": 2.0**10,
    "Mi": 2.0**20,
    "Gi": 2.0**30,
    "Ti": 2.0**40,
    "Pi": 2.0**50,
    "Ei": 2.0**60,
}
_TIME_EXACT = {
    "": Decimal(1),
    "s": Decimal(1),
    "ms": Decimal("1e-3"),
    "us": Decimal("1e-6"),
    "ns": Decimal("1e-9"),
    "ps": Decimal("1e-12"),
    "m": Decimal(60),
    "h": Decimal(3600),
    "d": Decimal(86400),
    "w": Decimal(604800),
}


def _sg_bandwidth(text: str, where: str, source: str) -> float:
    m = re.fullmatch(r"\s*" + _NUM + r"\s*([A-Za-z]*)\s*", text or "")
    if not m:
        raise TopologyError(
            f"cannot read bandwidth {text!r} (expected e.g. 1.25E8, 125MBps, 1Gbps)", source=source, element=where
        )
    value, unit = m.group(1), m.group(2)
    if unit == "":
        bw = float(value)
    else:
        u = re.fullmatch(r"([kKMGTPE]i?)?(Bps|bps)", unit)
        if not u or (u.group(1) or "") not in _BW_PREFIX:
            raise TopologyError(
                f"unknown bandwidth unit {unit!r} in {text!r} (SimGrid: Bps, MBps, Gbps, KiBps, ...)",
                source=source,
                element=where,
            )
        # exact decimal arithmetic: 8.158MBps is exactly 8158000 B/s
        d = Decimal(value) * Decimal(_BW_PREFIX[u.group(1) or ""])
        bw = float(d / 8 if u.group(2) == "bps" else d)
    if not (math.isfinite(bw) and bw > 0):
        raise TopologyError(f"bandwidth must be positive, got {text!r}", source=source, element=where)
    return bw


#: Line rates in bit/s (10 Mbit/s Ethernet .. 400 Gbit/s); a bare bandwidth equal to one of
#: them was probably written in bit/s: SimGrid reads it as bytes/s, 8 times as fast.
_LINE_RATES_BPS = {1e7, 1e8, 1e9, 2.5e9, 5e9, 1e10, 2.5e10, 4e10, 5e10, 1e11, 2e11, 4e11}


def _bit_rate_warning(root: ET.Element) -> str | None:
    """A warning when bare bandwidths (no unit: bytes/s for SimGrid) look like bit/s."""
    bare = [
        float(v)
        for e in root.iter()
        for k, v in e.attrib.items()
        if k in ("bandwidth", "bw", "bb_bw") and re.fullmatch(r"\s*" + _NUM + r"\s*", v)
    ]
    suspects = sorted({b for b in bare if b in _LINE_RATES_BPS})
    if not suspects:
        return None
    v = suspects[0]
    return (
        f"{sum(1 for b in bare if b in _LINE_RATES_BPS)} bandwidths are bare numbers that look like bit/s "
        f"(e.g. {v:g}): they are read as SimGrid reads them, bytes/s ({v * 8 / 1e9:g} Gbit/s); "
        f"if the file means bit/s, write the unit (e.g. {v / 1e9:g}Gbps)"
    )


def _sg_time(text: str, where: str, source: str) -> float:
    m = re.fullmatch(r"\s*" + _NUM + r"\s*([a-z]*)\s*", text or "0")
    if not m or m.group(2) not in _TIME_EXACT:
        raise TopologyError(
            f"cannot read latency {text!r} (SimGrid: s, ms, us, ns, or a bare number of seconds)",
            source=source,
            element=where,
        )
    t = float(Decimal(m.group(1)) * _TIME_EXACT[m.group(2)])
    if not (math.isfinite(t) and t >= 0):
        raise TopologyError(f"latency must be >= 0, got {text!r}", source=source, element=where)
    return t


_POLICY = {"SHARED": "shared", "SPLITDUPLEX": "duplex", "FULLDUPLEX": "duplex", "FATPIPE": "fatpipe", "WIFI": "shared"}


def _policy(text: str | None, default: str, where: str, source: str) -> str:
    p = (text or default).upper()
    if p not in _POLICY:
        raise TopologyError(
            f"unknown sharing_policy {text!r} (expected SHARED, SPLITDUPLEX or FATPIPE)", source=source, element=where
        )
    return _POLICY[p]


def _radical(text: str, where: str, source: str) -> list[int]:
    out: list[int] = []
    for part in (text or "").split(","):
        part = part.strip()
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not m:
            raise TopologyError(
                f"cannot read radical {text!r} (expected e.g. 1-29,58,60)", source=source, element=where
            )
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) else lo
        out.extend(range(lo, hi + 1))
    return out


# ---------------------------------------------------------------------- parsing
class _Platform:
    def __init__(self, source: str, exact: bool = False):
        self.source = source
        self.exact = exact
        self.hosts: list[str] = []
        self.routers: list[str] = []
        self.switches: list[str] = []  # cluster switches
        self.netpoints: set[str] = set()
        self.links: dict[str, tuple[float, float, str]] = {}  # id -> (bw, lat, sharing)
        self.direct: list[PhysicalLink] = []  # edges known without inference (clusters)
        # (src, dst, [link ids], symmetrical, explicit-route?, element description, [directions])
        self.statements: list[tuple] = []
        self.zones: dict[str, SgZone] = {}  # SimGrid's zone tree, for the router (simgrid_routing)
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
        if c.tag in ("zone", "AS", "cluster"):
            out.append(c.get("id"))
    return out


def _parse_zone(p: _Platform, zone: ET.Element, routing: str, zid: str) -> None:
    """Read one zone (``zid``, already opened in ``p.zones``) and, recursively, its children."""
    deferred = []
    local_hosts: list[str] = []
    local_routers: list[str] = []
    host_links: list[ET.Element] = []
    backbone: str | None = None
    for e in zone:
        tag = e.tag
        where = _desc(e)
        if tag in ("zone", "AS"):
            if e.get("id") is None:
                raise TopologyError("missing id", source=p.source, element=where)
            child_routing = e.get("routing") or "Full"
            p.open_zone(e.get("id"), child_routing, zid, where)
            _parse_zone(p, e, child_routing, e.get("id"))
        elif tag == "host":
            p.add_node(_req(e, "id", p), "host", where, zid)
            local_hosts.append(e.get("id"))
            _note_ignored(p, e)
        elif tag == "router":
            p.add_node(_req(e, "id", p), "router", where, zid)
            local_routers.append(e.get("id"))
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
            hl.get("id"): ((_star_res(p, hl.get("up"), "UP"),), (_star_res(p, hl.get("down"), "DOWN"),))
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


def _cluster_zone(p: _Platform, zone, hosts, routers, host_links, backbone) -> None:
    """A zone with routing="Cluster": hosts with <host_link up= down=>, an optional
    <backbone> and an optional <router>, mapped as <cluster> is (see the module docstring)."""
    zid = zone.get("id")
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
    linked = set()
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
    # SimGrid's resources for the router (simgrid_routing): private link i, then the backbone
    split = sharing == "duplex"
    zone.star = {
        h: (
            (f"{cid}_link_{i}_UP",) if split else (f"{cid}_link_{i}",),
            (f"{cid}_link_{i}_DOWN",) if split else (f"{cid}_link_{i}",),
        )
        for i, h in zip(radical, hosts)
    }
    zone.backbone = f"{cid}_backbone" if e.get("bb_bw") else None
    if e.get("bb_bw"):
        bb_bw = _sg_bandwidth(e.get("bb_bw"), f"{where}: bb_bw", p.source)
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
    out = []
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


def _route_declarer(p: _Platform, zid: str, e: ET.Element, where: str):
    """A function that records route ``e`` in zone ``zid``'s table as SimGrid resources.

    A SPLITDUPLEX link is two resources, ``l_UP`` and ``l_DOWN``; the reverse of a symmetrical
    route crosses the links in reverse order and a split-duplex link in the other direction
    (SimGrid's ``get_link_list_impl(backroute=True)``).
    """
    zone = p.zones[zid]
    fwd, back = [], []
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
        if gw_src is not None:
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


def _add_statement(p, src, dst, lks, sym, explicit, where):
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
    p.statements.append((src, dst, links, sym, explicit, where, dirs))


# ---------------------------------------------------------------------- graph inference
class _UF:
    """Union-find over link ends and netpoints; a class holds at most one netpoint (its label)
    and never both ends of one link."""

    def __init__(self):
        self.parent: dict = {}
        self.label: dict = {}  # root -> netpoint name
        self.links: dict = {}  # root -> set of link ids with an end in the class

    def find(self, x):
        parent = self.parent
        if x not in parent:
            parent[x] = x
            if x[0] == "l":
                self.links[x] = {x[1]}
            return x
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:
            parent[x], x = root, parent[x]
        return root

    def can_union(self, a, b) -> bool:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return True
        la, lb = self.label.get(ra), self.label.get(rb)
        if la is not None and lb is not None and la != lb:
            return False
        return not (self.links.get(ra, set()) & self.links.get(rb, set()))

    def union(self, a, b):
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return ra
        la, lb = self.label.get(ra), self.label.get(rb)
        self.parent[rb] = ra
        if la is None and lb is not None:
            self.label[ra] = lb
        self.label.pop(rb, None)
        self.links.setdefault(ra, set()).update(self.links.pop(rb, set()))
        return ra


#: Capacity of a connector edge (bytes/s): never the bottleneck of a real platform.
CONNECTOR_BANDWIDTH = 1e15


class _Inconsistent(Exception):
    """The routes cannot be drawn as a graph whose edges are the SimGrid links."""


def _infer(p: _Platform):
    """Graph of the platform: unified link ends when the routes allow, else resources."""
    try:
        return _infer_graph(p)
    except _Inconsistent:
        return _infer_resources(p)


def _infer_resources(p: _Platform):
    """Exact route graph for platforms whose routes are not a graph of links.

    Every direction in which a route crosses SimGrid link ``L`` becomes a one-way link
    ``L.in -> L.out`` (forward; ``L.rin -> L.rout`` backward); one-way connector edges join
    each route's consecutive links and its two netpoints. So every route crosses exactly
    SimGrid's links, in order, and no path can bypass a link (a connector only leads into a
    link or out of one). Limit: a SHARED link crossed in both directions becomes two one-way
    links of its full bandwidth, so opposite flows do not share it as they do in SimGrid.
    """
    used = set(p.netpoints)
    made: dict[tuple[str, bool], tuple[str, str]] = {}
    extra: list[str] = []
    raw: list[tuple] = []

    def fresh(n: str) -> str:
        while n in used:
            n += "_"
        used.add(n)
        extra.append(n)
        return n

    def ends(lid: str, forward: bool) -> tuple[str, str]:
        key = (lid, forward)
        if key not in made:
            tag = ("in", "out") if forward else ("rin", "rout")
            u, v = fresh(f"{lid}.{tag[0]}"), fresh(f"{lid}.{tag[1]}")
            bw, lat, sharing = p.links[lid]
            made[key] = (u, v)
            raw.append(
                (
                    u,
                    v,
                    bw,
                    lat,
                    "fatpipe" if sharing == "fatpipe" else "duplex",
                    lid if forward else f"{lid} (back)",
                    True,
                )
            )
        return made[key]

    conns: set[tuple[str, str]] = set()

    def connect(u: str, v: str) -> None:
        if (u, v) not in conns:
            conns.add((u, v))
            raw.append((u, v, CONNECTOR_BANDWIDTH, 0.0, "fatpipe", f"connector:{u}>{v}", True))

    def walk(a, b, links, forwards):
        path = [a]
        for lid, fwd in zip(links, forwards):
            ein, eout = ends(lid, fwd)
            connect(path[-1], ein)
            path += [ein, eout]
        connect(path[-1], b)
        path.append(b)
        return tuple(path)

    routes: dict[tuple[str, str], tuple[str, ...]] = {}
    for a, b, links, sym, explicit, where, dirs in p.statements:
        fwd = [d != "DOWN" for d in dirs]
        path = walk(a, b, links, fwd)
        back = walk(b, a, links[::-1], [not f for f in fwd[::-1]]) if sym else None
        if explicit and a in p.hosts_set and b in p.hosts_set:
            routes[(a, b)] = path
            if back is not None:
                routes.setdefault((b, a), back)
    return raw, routes, extra, {}


def _infer_graph(p: _Platform):
    """Unify link ends along every route.

    Returns (raw links, explicit routes, extra switches, directed uses per link id).
    """
    # step 1: buses = links that single-link routes use between > 2 netpoints
    ends: dict[str, set[str]] = defaultdict(set)
    for a, b, links, *_ in p.statements:
        if len(links) == 1:
            ends[links[0]] |= {a, b}
    bus = {lid for lid, e in ends.items() if len(e) > 2}

    uf = _UF()
    for n in p.netpoints:
        uf.find(("n", n))
        uf.label[("n", n)] = n
    spokes: set[tuple[str, object]] = set()  # (bus id, element)
    chains = []  # (statement index, list of elements visited)
    fresh = 0
    order = sorted(range(len(p.statements)), key=lambda i: (len(p.statements[i][2]), i))
    for i in order:
        a, b, links, sym, explicit, where, _dirs = p.statements[i]
        cur = ("n", a)
        visited = [cur]
        for k, lid in enumerate(links):
            if lid in bus:
                spokes.add((lid, cur))
                visited.append(("bus", lid))
                if k == len(links) - 1:
                    cur = ("n", b)
                else:
                    fresh += 1
                    cur = ("fresh", fresh)
                spokes.add((lid, cur))
                visited.append(cur)
                continue
            e0, e1 = ("l", lid, 0), ("l", lid, 1)
            rc = uf.find(cur)
            if uf.find(e0) == rc:
                entry = 0
            elif uf.find(e1) == rc:
                entry = 1
            else:
                # step 2a: prefer an entry end that can be glued to the current node and is
                # still free, and whose exit can reach the route's end when it is the last link
                last = k == len(links) - 1
                choices = []
                for ent in (0, 1):
                    ein, eout = (e0, e1) if ent == 0 else (e1, e0)
                    ok = uf.can_union(cur, ein)
                    ok_end = not last or uf.can_union(eout, ("n", b))
                    free = uf.find(ein) == ein
                    choices.append((not ok, not ok_end, not free, ent))
                choices.sort()
                entry = choices[0][3]
            ein, eout = (e0, e1) if entry == 0 else (e1, e0)
            if uf.find(ein) != uf.find(cur):
                if uf.can_union(cur, ein):
                    uf.union(cur, ein)
                else:
                    raise _Inconsistent(where)
            cur = eout
            visited.append(cur)
        if uf.find(cur) != uf.find(("n", b)):
            if uf.can_union(cur, ("n", b)):
                uf.union(cur, ("n", b))
            else:
                raise _Inconsistent(where)
        chains.append((i, visited))

    # step 3: name the classes
    names: dict = {}
    used = set(p.netpoints)
    extra_switches: list[str] = []
    bus_names: dict[str, str] = {}
    for lid in sorted(bus):
        hub = f"{lid}-bus"
        while hub in used:
            hub += "_"
        used.add(hub)
        extra_switches.append(hub)
        bus_names[lid] = hub

    def name_of(el):
        if isinstance(el, tuple) and el[0] == "bus":
            return bus_names[el[1]]
        r = uf.find(el)
        if r in uf.label:
            return uf.label[r]
        if r not in names:
            n = f"j{len(names)}"
            while n in used:
                n += "_"
            used.add(n)
            names[r] = n
            extra_switches.append(n)
        return names[r]

    raw: list[tuple[str, str, float, float, str, str]] = []  # (u, v, bw, lat, sharing, name)
    for lid, (bw, lat, sharing) in p.links.items():
        if lid in bus:
            continue
        if ("l", lid, 0) not in uf.parent:
            continue  # declared, never used by a route
        u, v = name_of(("l", lid, 0)), name_of(("l", lid, 1))
        if u == v:
            raise _Inconsistent(f"link {lid}")
        raw.append((u, v, bw, lat, sharing, lid))
    bus_out: dict[str, str] = {}
    if p.exact:
        # one resource per bus: every endpoint -> hub -> hub-out -> every endpoint (one-way)
        for lid in sorted(bus):
            out = f"{bus_names[lid]}-out"
            while out in used:
                out += "_"
            used.add(out)
            extra_switches.append(out)
            bus_out[lid] = out
            bw, lat, sharing = p.links[lid]
            raw.append((bus_names[lid], out, bw, lat, "fatpipe" if sharing == "fatpipe" else "duplex", lid, True))
    spoke_seen = set()
    for lid, el in sorted(spokes, key=lambda s: (s[0], str(s[1]))):
        n = name_of(el)
        if (lid, n) in spoke_seen:
            continue
        spoke_seen.add((lid, n))
        bw, lat, sharing = p.links[lid]
        if p.exact:
            hub, out = bus_names[lid], bus_out[lid]
            raw.append((n, hub, CONNECTOR_BANDWIDTH, 0.0, "fatpipe", f"connector:{n}>{hub}", True))
            raw.append((out, n, CONNECTOR_BANDWIDTH, 0.0, "fatpipe", f"connector:{out}>{n}", True))
        else:
            raw.append((n, bus_names[lid], bw, lat / 2.0, sharing, f"{lid}@{n}"))

    # step 4: node paths of explicit routes (directed uses of each link, for merging)
    routes: dict[tuple[str, str], tuple[str, ...]] = {}
    uses: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for i, visited in chains:
        a, b, links, sym, explicit, where, _dirs = p.statements[i]
        path = [a]
        for el in visited[1:]:
            if p.exact and isinstance(el, tuple) and el[0] == "bus":
                path += [bus_names[el[1]], bus_out[el[1]]]
                continue
            n = name_of(el)
            if n != path[-1]:
                path.append(n)
        if path[-1] != b:
            path.append(b)
        li = [lid for lid in links if lid not in bus]
        for lid in li:
            u, v = name_of(("l", lid, 0)), name_of(("l", lid, 1))
            for x, y in zip(path, path[1:]):
                if {x, y} == {u, v}:
                    uses[lid].add((x, y))
                    if sym:
                        uses[lid].add((y, x))
        if explicit and a in p.hosts_set and b in p.hosts_set and len(set(path)) == len(path):
            routes[(a, b)] = tuple(path)
            if sym:
                back = list(reversed(path))
                for k in range(len(back) - 1):  # a bus is crossed hub -> hub-out both ways
                    if back[k] in bus_out.values() and back[k + 1] in bus_names.values():
                        back[k], back[k + 1] = back[k + 1], back[k]
                routes.setdefault((b, a), tuple(back))
    return raw, routes, extra_switches, uses


def _merge(raw, uses) -> list[PhysicalLink]:
    """One PhysicalLink per node pair (see the module docstring for the rule)."""
    groups: dict = {}
    order: list = []
    for r in raw:
        key = (r[0], r[1]) if len(r) == 7 else frozenset((r[0], r[1]))
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(r)
    out = []
    for key in order:
        g = groups[key]
        if len(g) == 1 or len(g[0]) == 7:  # one link, or one-way links (never parallel)
            for r in g:
                u, v, bw, lat, sharing, name = r[:6]
                directed = len(r) == 7 and r[6]
                us = uses.get(name, set())
                if not directed and len(us) == 1:
                    # no route crosses it the other way: SimGrid cannot use that direction
                    (u, v), directed = next(iter(us)), True
                out.append(PhysicalLink(u, v, bw, lat, None, sharing, name, directed=directed))
            continue
        u, v = g[0][0], g[0][1]
        one_way = {}
        for x, y, bw, lat, sharing, name in g:
            us = uses.get(name, set())
            if len(us) == 1:
                one_way[name] = next(iter(us))
        if len(g) == 2 and len(one_way) == 2 and len(set(one_way.values())) == 2:
            fwd = next(r for r in g if one_way[r[5]] == (u, v))
            back = next(r for r in g if one_way[r[5]] == (v, u))
            out.append(
                PhysicalLink(
                    u,
                    v,
                    fwd[2],
                    max(fwd[3], back[3]),
                    back[2] if back[2] != fwd[2] else None,
                    "duplex",
                    f"{fwd[5]}+{back[5]}",
                )
            )
            continue
        bw = 0.0
        bw_ba = 0.0
        for x, y, b, lat, sharing, name in g:
            bw += b
            bw_ba += b
        lat = max(r[3] for r in g)
        shar = g[0][4] if all(r[4] == g[0][4] for r in g) else "duplex"
        out.append(PhysicalLink(u, v, bw, lat, None, shar, "+".join(r[5] for r in g)))
    return out


def load_simgrid(path, *, exact: bool = False) -> Topology:
    """Read a SimGrid platform file (see the module docstring for the mapping).

    ``exact=True`` maps each ``<cluster>`` with a backbone as SimGrid routes it (every route,
    intra-cluster ones included, crosses the backbone once) and each bus as one resource, with
    one-way links, instead of the default tree (see the module docstring).
    """
    source = str(path)
    try:
        root = ET.parse(source).getroot()
    except FileNotFoundError:
        raise TopologyError("no such file", source=source) from None
    except ET.ParseError as exc:
        line, col = exc.position
        raise TopologyError(
            f"malformed XML at line {line}, column {col + 1}: {exc.msg if hasattr(exc, 'msg') else exc}", source=source
        ) from None
    except OSError as exc:
        raise TopologyError(f"cannot read the file ({exc})", source=source) from None
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
    declared, unmapped, unrouted = _declared_routes(p, topo)
    if unmapped:
        notes.append(
            f"{unmapped} host pairs: SimGrid's route cannot be drawn on the imported graph (a cluster "
            "route crossing its backbone, see --simgrid-exact); topocast routes them itself"
        )
    for note in unrouted:
        notes.append(
            note
            if " " in note
            else f"zone {note!r}: its routing mode is not reproduced; topocast computes its routes itself"
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


def _declared_routes(p: _Platform, topo: Topology):
    """Explicit node paths for the host pairs whose SimGrid route differs from topocast's own.

    Returns (routes, number of pairs that cannot be drawn on the graph, unsupported zones).
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
    out: dict[tuple[str, str], tuple[str, ...]] = {}
    unmapped = unmapped_clusters
    no_route: list[tuple[str, str]] = []
    for group in groups:
        for a in group:
            for b in group:
                if a == b or (a, b) in topo.routes:
                    continue
                try:
                    resources = _route_or_none(router, a, b, skip)
                except TopologyError:
                    no_route.append((a, b))  # SimGrid would fail on this pair
                    continue
                if resources is None:
                    continue
                path = walker.walk(a, b, resources)
                if path is None:
                    unmapped += 1
                elif path != topo.route_nodes(a, b):
                    out[(a, b)] = path
    if no_route:
        unrouted.append(
            f"{len(no_route)} host pairs the file gives no route (SimGrid cannot route them; "
            f"topocast takes the fewest-hop path), e.g. {no_route[0][0]} -> {no_route[0][1]}"
        )
    return out, unmapped, unrouted


def _route_or_none(router: SimGridRouter, a: str, b: str, skip: set[str]):
    """SimGrid's route, or None when a zone on the way is one whose routing is not reproduced."""
    for chain in (router._chain_of(a), router._chain_of(b)):
        if skip.intersection(chain):
            return None
    return router.route(a, b)


class _RouteWalker:
    """Draw a list of SimGrid resources as a node path on the imported graph.

    Each resource is a named edge of the graph (one-way or both ways); a bus is two spokes via
    its hub; connector edges (the exact mode's and the route graph's) are crossed freely
    between two resources.
    """

    def __init__(self, topo: Topology):
        self.by_name: dict[str, list[tuple[str, str]]] = defaultdict(list)
        self.connector: dict[str, set[str]] = defaultdict(set)
        self.hubs: dict[str, str] = {}
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

    def walk(self, src: str, dst: str, resources: list[str]) -> tuple[str, ...] | None:
        path, cur, bus = [src], src, None
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
            path += step[0] + [step[1]]
            cur = step[1]
            bus = self.hubs.get(cur)
        hop = self._hop(cur, dst, bus)
        if hop is None:
            return None
        return tuple(path + hop)


# ---------------------------------------------------------------------- export
def _fnum(x: float) -> str:
    return repr(float(x))


#: Above this many hosts, ``routing="auto"`` writes Floyd/DijkstraCache instead of Full.
FULL_ROUTING_MAX_HOSTS = 100


def simgrid_xml(t: Topology, routing: str = "auto") -> str:
    """The SimGrid v4.1 platform text of ``t`` (see :func:`save_simgrid`)."""
    if routing == "auto":
        if len(t.hosts) <= FULL_ROUTING_MAX_HOSTS:
            routing = "Full"
        else:
            routing = "Floyd" if len(t.nodes) <= 300 else "DijkstraCache"
    if routing not in ("Full", "Floyd", "Dijkstra", "DijkstraCache"):
        raise TopologyError(
            f"unknown SimGrid routing {routing!r} (expected auto, Full, Floyd, Dijkstra or DijkstraCache)"
        )
    platform = ET.Element("platform", version="4.1")
    zone = ET.SubElement(platform, "zone", id=t.name or "topology", routing=routing)
    for h in t.hosts:
        ET.SubElement(zone, "host", id=h, speed="1Gf")
    for sw in t.switches:
        ET.SubElement(zone, "router", id=sw)
    used_ids: set[str] = set()

    def lid_for(i, pl, tag=""):
        base = pl.name or f"{pl.a}_{pl.b}"
        lid = base + tag
        while lid in used_ids:
            lid = f"{base}{tag}#{i}"
            i += 1
        used_ids.add(lid)
        return lid

    def add_link(lid, bw, lat, policy):
        ET.SubElement(zone, "link", id=lid, bandwidth=_fnum(bw) + "Bps", latency=lat, sharing_policy=policy)

    # hop[(physical index, forward?)] = (SimGrid link id, direction or None)
    hop: dict[tuple[int, bool], tuple[str, str | None]] = {}
    for i, pl in enumerate(t.physical_links):
        lat = _fnum(pl.latency) + "s"
        asym = pl.bandwidth_ba is not None and pl.bandwidth_ba != pl.bandwidth
        if pl.directed:
            l1 = lid_for(i, pl)
            add_link(l1, pl.bandwidth, lat, "FATPIPE" if pl.sharing == "fatpipe" else "SHARED")
            hop[(i, True)] = (l1, None)
        elif pl.sharing == "duplex" and asym:
            l1, l2 = lid_for(i, pl, "_ab"), lid_for(i, pl, "_ba")
            add_link(l1, pl.bandwidth, lat, "SHARED")
            add_link(l2, pl.bandwidth_ba, lat, "SHARED")
            hop[(i, True)], hop[(i, False)] = (l1, None), (l2, None)
        elif pl.sharing == "duplex":
            l1 = lid_for(i, pl)
            add_link(l1, pl.bandwidth, lat, "SPLITDUPLEX")
            hop[(i, True)], hop[(i, False)] = (l1, "UP"), (l1, "DOWN")
        else:
            # SimGrid has one capacity per link: an asymmetric shared/fatpipe link keeps a->b.
            l1 = lid_for(i, pl)
            add_link(l1, pl.bandwidth, lat, "SHARED" if pl.sharing == "shared" else "FATPIPE")
            hop[(i, True)], hop[(i, False)] = (l1, None), (l1, None)

    # One-link route per link direction (the graph, for Floyd/Dijkstra; kept in Full so that
    # routers stay netpoints), then in Full every host pair's topocast route (overriding).
    routes: dict[tuple[str, str], list[tuple[str, str | None]]] = {}
    for i, pl in enumerate(t.physical_links):
        routes[(pl.a, pl.b)] = [hop[(i, True)]]
        if not pl.directed:
            routes[(pl.b, pl.a)] = [hop[(i, False)]]
    if routing == "Full":
        links = t.links
        for u in t.hosts:
            for v in t.hosts:
                if u == v:
                    continue
                lids = t.route(u, v)
                routes[(u, v)] = [
                    hop[(links[k].physical, links[k].src == t.physical_links[links[k].physical].a)] for k in lids
                ]
    for (a, b), lks in routes.items():
        r = ET.SubElement(zone, "route", src=a, dst=b, symmetrical="NO")
        for lid, direction in lks:
            if direction:
                ET.SubElement(r, "link_ctn", id=lid, direction=direction)
            else:
                ET.SubElement(r, "link_ctn", id=lid)
    ET.indent(platform, space="  ")
    body = ET.tostring(platform, encoding="unicode")
    note = (
        "every host pair has its topocast route"
        if routing == "Full"
        else "SimGrid computes shortest paths; explicit topocast routes are not exported"
    )
    header = (
        "<?xml version='1.0'?>\n"
        '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
        f"<!-- written by topocast from {t.name!r}: {len(t.hosts)} hosts, {len(t.switches)} routers, "
        f"{len(t.physical_links)} links; {routing} routing: {note} -->\n"
    )
    return header + body + "\n"


def save_simgrid(t: Topology, path, routing: str = "auto") -> None:
    """Write ``t`` as a SimGrid v4.1 platform (one zone).

    Hosts are ``<host speed="1Gf">``, switches ``<router>``; each physical link is one
    ``<link>`` with a one-link ``<route>`` per direction (``symmetrical="NO"``): duplex ->
    SPLITDUPLEX with ``direction`` UP (a->b) / DOWN (b->a); an asymmetric duplex link -> two
    SHARED links, one per direction; shared -> SHARED; fatpipe -> FATPIPE; a one-way
    (``directed``) link -> one link and a one-way route.

    ``routing``: ``"Full"`` also writes, for every ordered host pair, the route topocast uses
    (so SimGrid replays exactly topocast's paths, explicit routes included); it is quadratic in
    the number of hosts, so ``"auto"`` (default) uses it up to
    :data:`FULL_ROUTING_MAX_HOSTS` hosts and otherwise ``"Floyd"`` (up to 300 nodes) or
    ``"DijkstraCache"``, where SimGrid computes shortest paths itself (same paths on trees;
    ties may differ on other graphs; explicit routes are lost).
    """
    path = str(path)
    try:
        Path(path).write_text(simgrid_xml(t, routing), encoding="utf-8")
    except OSError as exc:
        raise TopologyError(f"cannot write the file ({exc})", source=path) from None
