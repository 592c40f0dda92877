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
  the cluster switch itself. ``limiter_link`` and ``loopback_*`` are ignored.
* Routes (``<route>``, ``<zoneRoute>``/``<ASroute>`` between their gateways, with
  ``link_ctn`` lists, ``symmetrical``): each is a chain of links from its source netpoint to
  its destination netpoint. We give every link two ends and unify them along every chain
  (shortest chains first): the first link's entry end *is* the source, each link's exit end
  *is* the next link's entry end, the last exit *is* the destination. Ends that never become
  a host or router are synthetic junction switches (``j0``, ``j1``, ...). So a Full-routing
  zone with explicit link lists (``small_platform.xml``) becomes a graph of its links, and a
  Floyd/Dijkstra zone whose routes are single links becomes those links as direct edges.
* A link that single-link routes use between more than two netpoints (a shared bus such as
  ``gdx_main`` or griffon's ``backbone``) cannot be one edge: it becomes a hub switch
  ``<id>-bus`` with one spoke per netpoint (the link's bandwidth and sharing, half its
  latency, so a route through the hub has the link's latency). Difference: in SimGrid all
  flows over the bus share one capacity; here only flows that share a spoke do.
* Parallel links (several SimGrid links between the same two nodes) are merged, because the
  model allows one link per node pair: if each is used in one direction only (an
  asymmetric pair, as :func:`save_simgrid` writes) they become one link with
  ``bandwidth``/``bandwidth_ba``; otherwise bandwidths are summed and the larger latency kept.
* Explicit routes: for routes of Full/RuleBased zones whose two ends are hosts, the node path
  is kept as an explicit topocast route (both directions when symmetrical), so the simulator
  crosses exactly SimGrid's links. Everything else (Floyd, Dijkstra, routes through zone
  gateways) is routed by topocast (fewest hops, widest bottleneck); on the tree-shaped
  platforms shipped here (g5k, griffon, gdx) that is the same path SimGrid takes.
* Ignored: ``src == dst`` routes (loopback), ``bypassRoute``, host speeds and properties,
  traces. Unsupported elements (``peer``, ``cabinet``, ``host_link``, ``include``,
  non-FLAT clusters) raise an error naming the element.

Units follow SimGrid: bandwidth ``Bps`` (default, bytes/s), ``kBps``..``EBps``, ``KiBps``..,
bits with ``bps``; latency ``s`` (default), ``ms``, ``us``, ``ns``, ``ps``, ``m``, ``h``,
``d``, ``w``.
"""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from decimal import Decimal
from collections import defaultdict
from pathlib import Path

from ..errors import TopologyError
from .model import PhysicalLink, Topology

__all__ = ["load_simgrid", "save_simgrid", "simgrid_xml"]

# ---------------------------------------------------------------------- units (SimGrid's)
_NUM = r"([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)"
_BW_PREFIX = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
              "Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50, "Ei": 2.0**60}
_TIME_EXACT = {"": Decimal(1), "s": Decimal(1), "ms": Decimal("1e-3"), "us": Decimal("1e-6"), "ns": Decimal("1e-9"),
               "ps": Decimal("1e-12"), "m": Decimal(60), "h": Decimal(3600), "d": Decimal(86400), "w": Decimal(604800)}

def _sg_bandwidth(text: str, where: str, source: str) -> float:
    m = re.fullmatch(r"\s*" + _NUM + r"\s*([A-Za-z]*)\s*", text or "")
    if not m:
        raise TopologyError(f"cannot read bandwidth {text!r} (expected e.g. 1.25E8, 125MBps, 1Gbps)", source=source, element=where)
    value, unit = m.group(1), m.group(2)
    if unit == "":
        bw = float(value)
    else:
        u = re.fullmatch(r"([kKMGTPE]i?)?(Bps|bps)", unit)
        if not u or (u.group(1) or "") not in _BW_PREFIX:
            raise TopologyError(f"unknown bandwidth unit {unit!r} in {text!r} (SimGrid: Bps, MBps, Gbps, KiBps, ...)", source=source, element=where)
        # exact decimal arithmetic: 8.158MBps is exactly 8158000 B/s
        d = Decimal(value) * Decimal(_BW_PREFIX[u.group(1) or ""])
        bw = float(d / 8 if u.group(2) == "bps" else d)
    if not (math.isfinite(bw) and bw > 0):
        raise TopologyError(f"bandwidth must be positive, got {text!r}", source=source, element=where)
    return bw


def _sg_time(text: str, where: str, source: str) -> float:
    m = re.fullmatch(r"\s*" + _NUM + r"\s*([a-z]*)\s*", text or "0")
    if not m or m.group(2) not in _TIME_EXACT:
        raise TopologyError(f"cannot read latency {text!r} (SimGrid: s, ms, us, ns, or a bare number of seconds)", source=source, element=where)
    t = float(Decimal(m.group(1)) * _TIME_EXACT[m.group(2)])
    if not (math.isfinite(t) and t >= 0):
        raise TopologyError(f"latency must be >= 0, got {text!r}", source=source, element=where)
    return t


_POLICY = {"SHARED": "shared", "SPLITDUPLEX": "duplex", "FULLDUPLEX": "duplex", "FATPIPE": "fatpipe", "WIFI": "shared"}


def _policy(text: str | None, default: str, where: str, source: str) -> str:
    p = (text or default).upper()
    if p not in _POLICY:
        raise TopologyError(f"unknown sharing_policy {text!r} (expected SHARED, SPLITDUPLEX or FATPIPE)", source=source, element=where)
    return _POLICY[p]


def _radical(text: str, where: str, source: str) -> list[int]:
    out: list[int] = []
    for part in (text or "").split(","):
        part = part.strip()
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not m:
            raise TopologyError(f"cannot read radical {text!r} (expected e.g. 1-29,58,60)", source=source, element=where)
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) else lo
        out.extend(range(lo, hi + 1))
    return out


# ---------------------------------------------------------------------- parsing
class _Platform:
    def __init__(self, source: str):
        self.source = source
        self.hosts: list[str] = []
        self.routers: list[str] = []
        self.switches: list[str] = []  # cluster switches
        self.netpoints: set[str] = set()
        self.links: dict[str, tuple[float, float, str]] = {}  # id -> (bw, lat, sharing)
        self.direct: list[PhysicalLink] = []  # edges known without inference (clusters)
        # (src, dst, [link ids], symmetrical, explicit-route?, element description, [directions])
        self.statements: list[tuple] = []

    def add_node(self, name: str, kind: str, where: str) -> None:
        if name in self.netpoints:
            raise TopologyError(f"duplicate name {name!r}", source=self.source, element=where)
        self.netpoints.add(name)
        {"host": self.hosts, "router": self.routers, "switch": self.switches}[kind].append(name)


def _desc(e: ET.Element) -> str:
    keys = [k for k in ("id", "src", "dst") if e.get(k) is not None]
    return f"<{e.tag} " + " ".join(f'{k}="{e.get(k)}"' for k in keys) + ">"


def _zone_children(zone: ET.Element) -> list[str]:
    out = []
    for c in zone:
        if c.tag in ("zone", "AS", "cluster"):
            out.append(c.get("id"))
    return out


def _parse_zone(p: _Platform, zone: ET.Element, routing: str) -> None:
    deferred = []
    for e in zone:
        tag = e.tag
        where = _desc(e)
        if tag in ("zone", "AS"):
            if e.get("id") is None:
                raise TopologyError("missing id", source=p.source, element=where)
            _parse_zone(p, e, (e.get("routing") or "Full"))
        elif tag == "host":
            p.add_node(_req(e, "id", p), "host", where)
        elif tag == "router":
            p.add_node(_req(e, "id", p), "router", where)
        elif tag in ("link", "backbone"):
            lid = _req(e, "id", p)
            if lid in p.links:
                raise TopologyError(f"duplicate link id {lid!r}", source=p.source, element=where)
            p.links[lid] = (
                _sg_bandwidth(_req(e, "bandwidth", p), f"{where}: bandwidth", p.source),
                _sg_time(e.get("latency", "0"), f"{where}: latency", p.source),
                _policy(e.get("sharing_policy"), "SHARED", f"{where}: sharing_policy", p.source),
            )
        elif tag == "cluster":
            _parse_cluster(p, e)
        elif tag in ("route", "zoneRoute", "ASroute"):
            deferred.append(e)
        elif tag in ("bypassRoute", "bypassZoneRoute", "bypassASroute", "prop", "config", "trace",
                     "trace_connect", "actor", "process", "storage_type", "storage", "mount", "disk",
                     "random", "model_prop"):
            continue
        else:
            raise TopologyError(f"unsupported SimGrid element <{tag}>", source=p.source, element=where)
    # Routes after the nodes and links of the zone (and of its children) are known.
    for e in deferred:
        _parse_route(p, zone, routing, e)


def _req(e: ET.Element, attr: str, p: _Platform) -> str:
    v = e.get(attr)
    if v is None or v == "":
        raise TopologyError(f"missing attribute {attr!r}", source=p.source, element=_desc(e))
    return v


def _parse_cluster(p: _Platform, e: ET.Element) -> None:
    where = _desc(e)
    cid = _req(e, "id", p)
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
        p.add_node(h, "host", where)
    if e.get("bb_bw"):
        bb_bw = _sg_bandwidth(e.get("bb_bw"), f"{where}: bb_bw", p.source)
        bb_lat = _sg_time(e.get("bb_lat", "0"), f"{where}: bb_lat", p.source)
        bb_sharing = _policy(e.get("bb_sharing_policy"), "SHARED", f"{where}: bb_sharing_policy", p.source)
        switch = cid if cid not in p.netpoints else f"{cid}-switch"
        p.add_node(switch, "switch", where)
        p.add_node(router, "router", where)
        p.direct.append(PhysicalLink(switch, router, bb_bw, bb_lat, None, bb_sharing, f"{cid}_backbone"))
    else:
        switch = router
        p.add_node(router, "router", where)
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


def _parse_route(p: _Platform, zone: ET.Element, routing: str, e: ET.Element) -> None:
    where = _desc(e)
    sym = (e.get("symmetrical") or "YES").upper() == "YES"
    links = _links_of(p, e)
    rule = routing.lower() == "rulebased"
    explicit = routing.lower() in ("full", "rulebased")
    if e.tag == "route":
        src, dst = _req(e, "src", p), _req(e, "dst", p)
        if rule:
            pairs = [(a, b) for a in sorted(p.netpoints) for b in sorted(p.netpoints) if a != b
                     and re.fullmatch(src, a) and re.fullmatch(dst, b)]
        else:
            pairs = [(src, dst)]
        for a, b in pairs:
            _add_statement(p, a, b, links, sym, explicit, where)
        return
    gsrc, gdst = _req(e, "gw_src", p), _req(e, "gw_dst", p)
    if not rule:
        _add_statement(p, gsrc, gdst, links, sym, False, where)
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


def _add_statement(p, src, dst, lks, sym, explicit, where):
    links = [lid for lid, _ in lks]
    dirs = [d for _, d in lks]
    for n in (src, dst):
        if n not in p.netpoints:
            raise TopologyError(f"{n!r} is not a declared host, router or cluster router", source=p.source, element=where)
    if src == dst:
        return  # loopback: not modelled
    if not links:
        raise TopologyError("a route between two different netpoints needs at least one link_ctn", source=p.source, element=where)
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
    """Every used link is its own edge between two junctions ``<id>-a`` / ``<id>-b``; the
    routes join them (and their end netpoints) with connector edges, and every route of a
    Full zone between two hosts is kept as an explicit node path. Exact: each route crosses
    exactly SimGrid's links, each link is one shared resource."""
    used = set(p.netpoints)
    ends: dict[tuple[str, int], str] = {}
    extra: list[str] = []
    raw: list[tuple] = []

    def end(lid: str, slot: int) -> str:
        key = (lid, slot)
        if key not in ends:
            if (lid, 0) not in ends and (lid, 1) not in ends:
                for sl in (0, 1):
                    n = f"{lid}-{'ab'[sl]}"
                    while n in used:
                        n += "_"
                    used.add(n)
                    ends[(lid, sl)] = n
                    extra.append(n)
                bw, lat, sharing = p.links[lid]
                raw.append((ends[(lid, 0)], ends[(lid, 1)], bw, lat, sharing, lid))
        return ends[key]

    conns: set[frozenset] = set()

    def connect(u: str, v: str) -> None:
        key = frozenset((u, v))
        if key not in conns:
            conns.add(key)
            raw.append((u, v, CONNECTOR_BANDWIDTH, 0.0, "fatpipe", f"connector:{u}|{v}"))

    routes: dict[tuple[str, str], tuple[str, ...]] = {}
    for a, b, links, sym, explicit, where, dirs in p.statements:
        path = [a]
        for lid, direction in zip(links, dirs):
            entry = 1 if direction == "DOWN" else 0
            ein, eout = end(lid, entry), end(lid, 1 - entry)
            if path[-1] != ein:
                connect(path[-1], ein)
                path.append(ein)
            path.append(eout)
        connect(path[-1], b)
        path.append(b)
        if explicit and a in p.hosts_set and b in p.hosts_set:
            routes[(a, b)] = tuple(path)
            if sym:
                routes.setdefault((b, a), tuple(reversed(path)))
    return raw, routes, extra, {}


def _infer_graph(p: _Platform):
    """Unify link ends along every route.

    Returns (raw links, explicit routes, extra switches, directed uses per link id).
    """
    src = p.source
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
    spoke_seen = set()
    for lid, el in sorted(spokes, key=lambda s: (s[0], str(s[1]))):
        n = name_of(el)
        if (lid, n) in spoke_seen:
            continue
        spoke_seen.add((lid, n))
        bw, lat, sharing = p.links[lid]
        raw.append((n, bus_names[lid], bw, lat / 2.0, sharing, f"{lid}@{n}"))

    # step 4: node paths of explicit routes (directed uses of each link, for merging)
    routes: dict[tuple[str, str], tuple[str, ...]] = {}
    uses: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for i, visited in chains:
        a, b, links, sym, explicit, where, _dirs = p.statements[i]
        path = [a]
        for el in visited[1:]:
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
                routes.setdefault((b, a), tuple(reversed(path)))
    return raw, routes, extra_switches, uses


def _merge(raw, uses) -> list[PhysicalLink]:
    """One PhysicalLink per node pair (see the module docstring for the rule)."""
    groups: dict[frozenset, list] = {}
    order: list[frozenset] = []
    for r in raw:
        key = frozenset((r[0], r[1]))
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(r)
    out = []
    for key in order:
        g = groups[key]
        if len(g) == 1:
            u, v, bw, lat, sharing, name = g[0]
            out.append(PhysicalLink(u, v, bw, lat, None, sharing, name))
            continue
        u, v = g[0][0], g[0][1]
        one_way = {}
        for (x, y, bw, lat, sharing, name) in g:
            us = uses.get(name, set())
            if len(us) == 1:
                one_way[name] = next(iter(us))
        if len(g) == 2 and len(one_way) == 2 and len(set(one_way.values())) == 2:
            fwd = next(r for r in g if one_way[r[5]] == (u, v))
            back = next(r for r in g if one_way[r[5]] == (v, u))
            out.append(PhysicalLink(u, v, fwd[2], max(fwd[3], back[3]), back[2] if back[2] != fwd[2] else None,
                                    "duplex", f"{fwd[5]}+{back[5]}"))
            continue
        bw = 0.0
        bw_ba = 0.0
        for (x, y, b, lat, sharing, name) in g:
            bw += b
            bw_ba += b
        lat = max(r[3] for r in g)
        shar = g[0][4] if all(r[4] == g[0][4] for r in g) else "duplex"
        out.append(PhysicalLink(u, v, bw, lat, None, shar, "+".join(r[5] for r in g)))
    return out


def load_simgrid(path) -> Topology:
    """Read a SimGrid platform file (see the module docstring for the mapping)."""
    source = str(path)
    try:
        root = ET.parse(source).getroot()
    except FileNotFoundError:
        raise TopologyError("no such file", source=source) from None
    except ET.ParseError as exc:
        line, col = exc.position
        raise TopologyError(f"malformed XML at line {line}, column {col + 1}: {exc.msg if hasattr(exc, 'msg') else exc}",
                            source=source) from None
    except OSError as exc:
        raise TopologyError(f"cannot read the file ({exc})", source=source) from None
    if root.tag != "platform":
        raise TopologyError(f"expected a SimGrid <platform> root element, got <{root.tag}>", source=source)
    p = _Platform(source)
    _parse_zone(p, root, "Full")
    if not p.hosts:
        raise TopologyError("the platform declares no host", source=source)
    p.hosts_set = set(p.hosts)
    raw, routes, extra, uses = _infer(p)
    raw = [(u, v, bw, lat, s, n) for (u, v, bw, lat, s, n) in raw]
    links = list(p.direct) + _merge(raw, uses)
    switches = p.routers + p.switches + extra
    # Drop routers that nothing connects (declared but unused), keep everything else.
    touched = {l.a for l in links} | {l.b for l in links}
    switches = [s for s in switches if s in touched]
    return Topology(Path(source).stem, p.hosts, switches, links, routes=routes, source=source)


# ---------------------------------------------------------------------- export
def _fnum(x: float) -> str:
    return repr(float(x))


def simgrid_xml(t: Topology) -> str:
    """The SimGrid v4.1 platform text of ``t`` (see :func:`save_simgrid`)."""
    n_nodes = len(t.nodes)
    routing = "Floyd" if n_nodes <= 300 else "DijkstraCache"
    platform = ET.Element("platform", version="4.1")
    zone = ET.SubElement(platform, "zone", id=t.name or "topology", routing=routing)
    for h in t.hosts:
        ET.SubElement(zone, "host", id=h, speed="1Gf")
    for s in t.switches:
        ET.SubElement(zone, "router", id=s)
    routes = []
    used_ids = set()

    def lid_for(i, pl, tag=""):
        base = pl.name or f"{pl.a}_{pl.b}"
        lid = base + tag
        while lid in used_ids:
            lid = f"{base}{tag}#{i}"
            i += 1
        used_ids.add(lid)
        return lid

    for i, pl in enumerate(t.physical_links):
        lat = _fnum(pl.latency) + "s"
        asym = pl.bandwidth_ba is not None and pl.bandwidth_ba != pl.bandwidth
        if pl.sharing == "duplex" and asym:
            l1, l2 = lid_for(i, pl, "_ab"), lid_for(i, pl, "_ba")
            ET.SubElement(zone, "link", id=l1, bandwidth=_fnum(pl.bandwidth) + "Bps", latency=lat, sharing_policy="SHARED")
            ET.SubElement(zone, "link", id=l2, bandwidth=_fnum(pl.bandwidth_ba) + "Bps", latency=lat, sharing_policy="SHARED")
            routes.append((pl.a, pl.b, [(l1, None)], "NO"))
            routes.append((pl.b, pl.a, [(l2, None)], "NO"))
        elif pl.sharing == "duplex":
            l1 = lid_for(i, pl)
            ET.SubElement(zone, "link", id=l1, bandwidth=_fnum(pl.bandwidth) + "Bps", latency=lat, sharing_policy="SPLITDUPLEX")
            routes.append((pl.a, pl.b, [(l1, "UP")], "NO"))
            routes.append((pl.b, pl.a, [(l1, "DOWN")], "NO"))
        else:
            # SimGrid has one capacity per link: an asymmetric shared/fatpipe link keeps a->b.
            l1 = lid_for(i, pl)
            ET.SubElement(zone, "link", id=l1, bandwidth=_fnum(pl.bandwidth) + "Bps", latency=lat,
                          sharing_policy="SHARED" if pl.sharing == "shared" else "FATPIPE")
            routes.append((pl.a, pl.b, [(l1, None)], "YES"))
    for a, b, lks, sym in routes:
        r = ET.SubElement(zone, "route", src=a, dst=b, symmetrical=sym)
        for lid, direction in lks:
            if direction:
                ET.SubElement(r, "link_ctn", id=lid, direction=direction)
            else:
                ET.SubElement(r, "link_ctn", id=lid)
    ET.indent(platform, space="  ")
    body = ET.tostring(platform, encoding="unicode")
    header = ("<?xml version='1.0'?>\n"
              '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
              f"<!-- written by topocast from {t.name!r}: {len(t.hosts)} hosts, {len(t.switches)} routers, "
              f"{len(t.physical_links)} links; {routing} routing (explicit multi-hop routes are not exported) -->\n")
    return header + body + "\n"


def save_simgrid(t: Topology, path) -> None:
    """Write ``t`` as a SimGrid v4.1 platform.

    One zone with Floyd routing (DijkstraCache above 300 nodes: Full routing with a route per
    host pair, or Floyd's cubic precomputation, is too big for thousands of hosts). Hosts are
    ``<host speed="1Gf">``, switches ``<router>``; each physical link is one ``<link>`` with a
    one-link ``<route>`` per direction: duplex -> SPLITDUPLEX with ``direction`` UP (a->b) /
    DOWN (b->a); an asymmetric duplex link -> two SHARED links, one per direction; shared ->
    SHARED; fatpipe -> FATPIPE. Explicit multi-hop routes of ``t`` are not written (SimGrid
    recomputes shortest paths).
    """
    path = str(path)
    try:
        Path(path).write_text(simgrid_xml(t), encoding="utf-8")
    except OSError as exc:
        raise TopologyError(f"cannot write the file ({exc})", source=path) from None
