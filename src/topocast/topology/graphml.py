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
import os
import re
import statistics
import xml.etree.ElementTree as ET
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import TypedDict

from ..errors import TopologyError
from ..units import prefix_factor
from .model import PhysicalLink, Topology
from .xmlfile import read_xml

__all__ = ["load_graphml", "graphml_summary", "speed_from_label", "geo_distance_m"]

_NS = "{http://graphml.graphdrawing.org/xmlns}"

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
    factor = prefix_factor(m.group(2).upper()) if m else None  # labels write m for mega
    if m and factor is not None:
        return float(m.group(1)) * factor
    m = re.fullmatch(r"\s*(e1|e3|t1|t3|ds3)\s*", s, re.I)
    if m:
        return _NAMED[m.group(1).lower()]
    return None


class _Graph:
    def __init__(self, source: str) -> None:
        self.source = source
        self.name = Path(source).stem
        self.nodes: list[tuple[str, dict[str, str]]] = []  # (graphml id, data by attr name)
        self.edges: list[tuple[str, str, dict[str, str]]] = []


def _data(element: ET.Element, keys: Mapping[str, str]) -> dict[str, str]:
    """The ``<data>`` children of ``element`` by attribute name (the key id when undeclared);
    a ``<data>`` without a ``key`` names nothing and is skipped."""
    out: dict[str, str] = {}
    for d in element.findall(f"{_NS}data"):
        key = d.get("key")
        if key is not None:
            out[keys.get(key, key)] = d.text or ""
    return out


def _parse(path: str | os.PathLike[str]) -> _Graph:
    source = str(path)
    root = read_xml(source)
    tag = root.tag.replace(_NS, "")
    if tag != "graphml":
        raise TopologyError(f"expected a <graphml> root element, got <{tag}>", source=source)
    keys: dict[str, str] = {}
    for k in root.iter(f"{_NS}key"):
        key_id = k.get("id")
        if key_id is not None:
            keys[key_id] = k.get("attr.name") or key_id
    g = _Graph(source)
    graph = root.find(f"{_NS}graph")
    if graph is None:
        raise TopologyError("no <graph> element", source=source)
    for d in graph.findall(f"{_NS}data"):
        key = d.get("key")
        if key is not None and keys.get(key) == "label" and d.text:
            g.name = d.text.strip() or g.name
    for n in graph.iter(f"{_NS}node"):
        data = _data(n, keys)
        nid = n.get("id")
        if nid is None:
            raise TopologyError("a <node> has no id", source=source)
        g.nodes.append((nid, data))
    for e in graph.iter(f"{_NS}edge"):
        data = _data(e, keys)
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


def _edge_speed(data: Mapping[str, str]) -> tuple[float | None, str]:
    """(bits/s or None, where it came from)."""
    raw = data.get("LinkSpeedRaw")
    if raw not in (None, ""):
        try:
            v = float(raw)
            if v > 0:
                return v, "LinkSpeedRaw"
        except ValueError:
            pass
    labelled = speed_from_label(data.get("LinkLabel"))
    if labelled:
        return labelled, "LinkLabel"
    return None, ""


def _float(x: str | None) -> float | None:
    if x is None:
        return None
    try:
        return float(x)
    except ValueError:
        return None


class GraphmlSummary(TypedDict):
    """What :func:`graphml_summary` counts (bandwidths in bytes/s, None without any speed)."""

    name: str
    nodes: int
    edges: int
    self_loops: int
    parallel_edges: int
    edges_with_speed: int
    edges_without_speed: list[str]
    speed_from_label: int
    components: int
    bandwidth_min: float | None
    bandwidth_median: float | None
    bandwidth_max: float | None


def graphml_summary(path: str | os.PathLike[str]) -> GraphmlSummary:
    """Counts for ``topology show``; works whether or not every edge has a speed.

    Keys: name, nodes, edges (including parallel ones), self_loops, parallel_edges,
    edges_with_speed, edges_without_speed (list of "A-B"), speed_from_label, components,
    bandwidth_min/median/max (bytes/s, over edges with a speed).
    """
    g = _parse(path)
    names = _names(g)
    ids = set(names)
    missing: list[str] = []
    speeds: list[float] = []
    from_label = 0
    pairs: dict[frozenset[str], int] = {}
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

    def find(x: str) -> str:
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


def load_graphml(
    path: str | os.PathLike[str], default_bandwidth: float | None = None, *, geo_latency: bool = False
) -> Topology:
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
    missing: list[str] = []
    # Parallel edges merge into one link: its ends (in first-seen order), summed bandwidth and
    # how many edges it stands for.
    ends: dict[frozenset[str], tuple[str, str]] = {}
    merged_bw: dict[frozenset[str], float] = defaultdict(float)
    merged_count: dict[frozenset[str], int] = defaultdict(int)
    n_real = 0
    for a, b, data in g.edges:
        for x in (a, b):
            if x not in names:
                raise TopologyError(f"edge {a}-{b} names an undeclared node {x!r}", source=source)
        if a == b:
            continue
        n_real += 1
        v, _ = _edge_speed(data)
        bw: float | None
        if v is None:
            missing.append(f"{names[a]}-{names[b]}")
            bw = default_bandwidth
        else:
            bw = v / 8.0
        key = frozenset((a, b))
        ends.setdefault(key, (a, b))
        if bw is not None:
            merged_bw[key] += bw
        merged_count[key] += 1
    if missing and default_bandwidth is None:
        shown = ", ".join(missing[:10]) + (", ..." if len(missing) > 10 else "")
        raise TopologyError(
            f"edges without LinkSpeedRaw: {shown} ({len(missing)} of {n_real}); pass --default-bandwidth "
            "(e.g. --default-bandwidth 1Gbps) to give them one",
            source=source,
        )
    coords: dict[str, tuple[float, float]] = {}
    for nid, data in g.nodes:
        lat, lon = _float(data.get("Latitude")), _float(data.get("Longitude"))
        if lat is not None and lon is not None:
            coords[nid] = (lat, lon)
    links = []
    for key, (a, b) in ends.items():
        latency = 0.0
        if geo_latency and a in coords and b in coords:
            latency = geo_distance_m(*coords[a], *coords[b]) / FIBRE_SPEED_M_S
        count = merged_count[key]
        name = None if count == 1 else f"{count} parallel edges"
        links.append(PhysicalLink(names[a], names[b], merged_bw[key], latency, name=name))
    attrs: dict[str, dict[str, object]] = {}
    for nid, data in g.nodes:
        node_attrs: dict[str, object] = {"id": nid}
        lat, lon = _float(data.get("Latitude")), _float(data.get("Longitude"))
        if lat is not None:
            node_attrs["lat"] = lat
        if lon is not None:
            node_attrs["lon"] = lon
        if data.get("Internal", "") != "":
            node_attrs["internal"] = int(_float(data["Internal"]) or 0)
        if data.get("type"):
            node_attrs["type"] = data["type"]
        attrs[names[nid]] = node_attrs
    return Topology(g.name, [names[nid] for nid, _ in g.nodes], [], links, attrs=attrs, source=source)
