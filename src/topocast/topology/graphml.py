"""Internet Topology Zoo GraphML import.

Reference: Knight, Nguyen, Falkner, Bowden, Roughan, "The Internet Topology Zoo", IEEE JSAC
29(9), 2011 (files under CC BY 4.0, from the Topology Zoo's site; docs/topology.md).

Mapping [our readings marked I]:

* Every node (a PoP) becomes a **host** that can send, receive, store and relay, named by its
  ``label`` (made unique: ``London``, ``London-2``, ...; ``node<id>`` when it has none). Its
  GraphML id is kept in ``attrs[name]["id"]``, with ``lat``/``lon`` (``Latitude`` /
  ``Longitude``), ``internal`` and ``type`` when present. Nodes with ``Internal = 0`` (other
  networks) and ``hyperedge`` nodes are kept as hosts too [I]: they are where traffic enters
  or leaves the network, and dropping them would disconnect some graphs.
* Edge speed: ``LinkSpeedRaw`` (bit/s) / 8 -> bytes/s. When it is absent, the ``LinkLabel``
  is read if it names a speed: ``OC-192c`` (n x 51.84 Mbit/s), ``STM-16`` (n x 155.52 Mbit/s),
  ``10Gb/s``, ``2.5 Gbps``, ``100 Mbit/s``, ``E1``/``E3``/``T1``/``T3``; a range such as
  ``100-155 Mbit/s`` (Uninett, WIDE) reads as its upper value [I]. Otherwise the edge has
  no speed: :func:`load_graphml` then needs ``default_bandwidth`` (bytes/s) or fails with an
  error naming those edges. :func:`graphml_summary` never fails for that.
* Edges are read as undirected (as the Zoo draws them), whatever ``edgedefault`` says.
* Parallel edges between the same two PoPs (the model allows one link per pair) are merged
  into one link whose bandwidth is the **sum** of theirs (several circuits in parallel);
  self-loops are dropped.
* No latency in the data: links get 0 s, unless ``geo_latency=True`` (CLI ``topology convert
  --geo-latency``): then a link's latency is the great-circle distance between its two PoPs
  (``Latitude``/``Longitude``, Earth radius 6371 km) divided by 2e8 m/s (light in fibre) [I];
  a real fibre path is longer, so this is a lower bound. Links with an end lacking
  coordinates keep 0 s.
* A disconnected graph fails with the model's error naming an unreachable host (we do not
  silently drop components). (None of the Zoo files the tests read is disconnected.)
"""

from __future__ import annotations

import math
import re
import statistics
from pathlib import Path

from ..errors import TopologyError
from .model import PhysicalLink, Topology
from .xmlfile import read_xml

__all__ = ["load_graphml", "graphml_summary", "speed_from_label", "geo_distance_m"]

_NS = "{http://graphml.graphdrawing.org/xmlns}"

_UNIT = {"k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}
_NAMED = {"e1": 2.048e6, "e3": 34.368e6, "t1": 1.544e6, "t3": 44.736e6, "ds3": 44.736e6}


def speed_from_label(label: str | None) -> float | None:
    """Bits/s named by a Zoo ``LinkLabel`` (``OC-192c``, ``10Gb/s``, ``2.5 Gbps``), else None."""
    if not label:
        return None
    s = label.strip()
    m = re.search(r"\bOC-?(\d+)c?\b", s, re.I)
    if m:
        return int(m.group(1)) * 51.84e6
    m = re.search(r"\bSTM-?(\d+)\b", s, re.I)
    if m:
        return int(m.group(1)) * 155.52e6
    m = re.search(r"(\d+(?:\.\d+)?)\s*([kmgt])\s*(?:b/s|bps|bit/s|bits/s|b\b|bit\b|e\b)", s, re.I)
    if m:
        return float(m.group(1)) * _UNIT[m.group(2).lower()]
    m = re.fullmatch(r"\s*(e1|e3|t1|t3|ds3)\s*", s, re.I)
    if m:
        return _NAMED[m.group(1).lower()]
    return None


class _Graph:
    def __init__(self, source: str):
        self.source = source
        self.name = Path(source).stem
        self.nodes: list[tuple[str, dict]] = []  # (graphml id, data by attr name)
        self.edges: list[tuple[str, str, dict]] = []


def _parse(path) -> _Graph:
    source = str(path)
    root = read_xml(source)
    tag = root.tag.replace(_NS, "")
    if tag != "graphml":
        raise TopologyError(f"expected a <graphml> root element, got <{tag}>", source=source)
    keys = {}
    for k in root.iter(f"{_NS}key"):
        keys[k.get("id")] = k.get("attr.name") or k.get("id")
    g = _Graph(source)
    graph = root.find(f"{_NS}graph")
    if graph is None:
        raise TopologyError("no <graph> element", source=source)
    for d in graph.findall(f"{_NS}data"):
        if keys.get(d.get("key")) == "label" and d.text:
            g.name = d.text.strip() or g.name
    for n in graph.iter(f"{_NS}node"):
        data = {keys.get(d.get("key"), d.get("key")): (d.text or "") for d in n.findall(f"{_NS}data")}
        nid = n.get("id")
        if nid is None:
            raise TopologyError("a <node> has no id", source=source)
        g.nodes.append((nid, data))
    for e in graph.iter(f"{_NS}edge"):
        data = {keys.get(d.get("key"), d.get("key")): (d.text or "") for d in e.findall(f"{_NS}data")}
        a, b = e.get("source"), e.get("target")
        if a is None or b is None:
            raise TopologyError("an <edge> lacks source or target", source=source)
        g.edges.append((a, b, data))
    return g


def _names(g: _Graph) -> dict[str, str]:
    out: dict[str, str] = {}
    seen: set[str] = set()
    for nid, data in g.nodes:
        base = (data.get("label") or "").strip() or f"node{nid}"
        name, k = base, 2
        while name in seen:
            name = f"{base}-{k}"
            k += 1
        seen.add(name)
        out[nid] = name
    return out


def _edge_speed(data: dict) -> tuple[float | None, str]:
    """(bits/s or None, where it came from)."""
    raw = data.get("LinkSpeedRaw")
    if raw not in (None, ""):
        try:
            v = float(raw)
            if v > 0:
                return v, "LinkSpeedRaw"
        except ValueError:
            pass
    v = speed_from_label(data.get("LinkLabel"))
    if v:
        return v, "LinkLabel"
    return None, ""


def _float(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def graphml_summary(path) -> dict:
    """Counts for ``topology show``; works whether or not every edge has a speed.

    Keys: name, nodes, edges (including parallel ones), self_loops, parallel_edges,
    edges_with_speed, edges_without_speed (list of "A-B"), speed_from_label, components,
    bandwidth_min/median/max (bytes/s, over edges with a speed).
    """
    g = _parse(path)
    names = _names(g)
    ids = set(names)
    missing, speeds, from_label = [], [], 0
    pairs: dict[frozenset, int] = {}
    loops = 0
    for a, b, data in g.edges:
        for x in (a, b):
            if x not in ids:
                raise TopologyError(f"edge {a}-{b} names an undeclared node {x!r}", source=str(path))
        if a == b:
            loops += 1
            continue
        key = frozenset((a, b))
        pairs[key] = pairs.get(key, 0) + 1
        v, where = _edge_speed(data)
        if v is None:
            missing.append(f"{names[a]}-{names[b]}")
        else:
            speeds.append(v / 8.0)
            from_label += where == "LinkLabel"
    # connected components (undirected)
    parent = {n: n for n in ids}

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for key in pairs:
        a, b = tuple(key)
        parent[find(a)] = find(b)
    comps = len({find(n) for n in ids})
    return {
        "name": g.name,
        "nodes": len(g.nodes),
        "edges": len(g.edges),
        "self_loops": loops,
        "parallel_edges": sum(c - 1 for c in pairs.values()),
        "edges_with_speed": len(speeds),
        "edges_without_speed": missing,
        "speed_from_label": from_label,
        "components": comps,
        "bandwidth_min": min(speeds) if speeds else None,
        "bandwidth_median": statistics.median(speeds) if speeds else None,
        "bandwidth_max": max(speeds) if speeds else None,
    }


EARTH_RADIUS_M = 6_371_000.0
FIBRE_SPEED_M_S = 2.0e8


def geo_distance_m(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """Great-circle (haversine) distance in metres between two points given in degrees."""
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    h = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * EARTH_RADIUS_M * math.asin(min(1.0, math.sqrt(h)))


def load_graphml(path, default_bandwidth: float | None = None, *, geo_latency: bool = False) -> Topology:
    """Read a Topology Zoo GraphML file (see the module docstring).

    ``default_bandwidth`` (bytes/s) is used for edges without a speed; without it, such edges
    raise a :class:`TopologyError` naming them.
    """
    source = str(path)
    g = _parse(source)
    names = _names(g)
    if not names:
        raise TopologyError("the graph has no node", source=source)
    if default_bandwidth is not None and not default_bandwidth > 0:
        raise TopologyError(f"default bandwidth must be positive, got {default_bandwidth!r}", source=source)
    missing = []
    merged: dict[frozenset, list] = {}
    order = []
    n_real = 0
    for a, b, data in g.edges:
        for x in (a, b):
            if x not in names:
                raise TopologyError(f"edge {a}-{b} names an undeclared node {x!r}", source=source)
        if a == b:
            continue
        n_real += 1
        v, _ = _edge_speed(data)
        if v is None:
            missing.append(f"{names[a]}-{names[b]}")
            bw = default_bandwidth
        else:
            bw = v / 8.0
        key = frozenset((a, b))
        if key not in merged:
            merged[key] = [a, b, 0.0, 0]
            order.append(key)
        if bw is not None:
            merged[key][2] += bw
        merged[key][3] += 1
    if missing and default_bandwidth is None:
        shown = ", ".join(missing[:10]) + (", ..." if len(missing) > 10 else "")
        raise TopologyError(
            f"edges without LinkSpeedRaw: {shown} ({len(missing)} of {n_real}); pass --default-bandwidth "
            "(e.g. --default-bandwidth 1Gbps) to give them one",
            source=source,
        )
    coords = {}
    for nid, data in g.nodes:
        lat, lon = _float(data.get("Latitude")), _float(data.get("Longitude"))
        if lat is not None and lon is not None:
            coords[nid] = (lat, lon)
    links = []
    for key in order:
        a, b, bw, count = merged[key]
        lat = 0.0
        if geo_latency and a in coords and b in coords:
            lat = geo_distance_m(*coords[a], *coords[b]) / FIBRE_SPEED_M_S
        links.append(PhysicalLink(names[a], names[b], bw, lat, name=None if count == 1 else f"{count} parallel edges"))
    attrs = {}
    for nid, data in g.nodes:
        a = {"id": nid}
        lat, lon = _float(data.get("Latitude")), _float(data.get("Longitude"))
        if lat is not None:
            a["lat"] = lat
        if lon is not None:
            a["lon"] = lon
        if data.get("Internal", "") != "":
            a["internal"] = int(_float(data["Internal"]) or 0)
        if data.get("type"):
            a["type"] = data["type"]
        attrs[names[nid]] = a
    return Topology(g.name, [names[nid] for nid, _ in g.nodes], [], links, attrs=attrs, source=source)
