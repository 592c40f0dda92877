"""The topocast topology file (YAML or JSON, the same keys): load and save.

Format (docs/design.md, "Topology file")::

    name: two-clusters
    hosts: [s, a1, a2, b1, b2]          # hosts send, receive, store and relay data
    switches: [swA, swB]                # switches and routers only forward
    links:                              # full duplex: one entry = two directed links
      - {a: s,   b: swA, bandwidth: 1Gbps, latency: 50us}
      - {a: swA, b: swB, bandwidth: 100Mbps, latency: 5ms, bandwidth_ba: 50Mbps}
      - {a: a1,  b: swA, bandwidth: 1Gbps, sharing: shared, name: nic-a1}
      - {a: a2,  b: swA, bandwidth: 1Gbps, directed: true}   # one-way link a -> b
    routes:                             # optional; default: fewest hops
      - {src: a1, dst: b1, path: [a1, swA, swB, b1]}
    injection:                          # optional: per-send injection time Δ (Mateescu)
      default: 20us                     # applied to every host
      hosts: {s: 50us}
      pairs: [{src: s, dst: a1, time: 10us}]
    reduction:                          # optional: reduction speed (γ = 1 / rate, s/byte)
      default: 1GB/s
      hosts: {a1: 500MB/s}
    attrs: {s: {site: lyon}}            # optional: free-form node attributes

Units are parsed here and only here (:mod:`topocast.units`); a bare number is bytes/s or
seconds. ``sharing`` is ``duplex`` (default), ``shared`` or ``fatpipe`` (see the model).

Every error is a :class:`~topocast.errors.TopologyError` naming the file (with the line when
the YAML/JSON parser gives one), the element (``links[3] (a-b): bandwidth``) and what was
expected.

Saving writes human units (``1Gbps``, ``50us``) when they read back to exactly the same
float, otherwise bare numbers (Python's shortest round-tripping repr), so
``load(save(t))`` gives equal links, routes, injection and reduction values.
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from ..errors import InputError, TopologyError
from ..units import format_bandwidth_exact, format_time_exact, parse_bandwidth, parse_time
from .fields import (
    bandwidth_value,
    cached_quantity,
    check_keys,
    expect,
    fail,
    node_name,
    node_names,
    time_value,
)
from .measured import measured_notes, parse_measured
from .model import SHARING_POLICIES, PhysicalLink, Topology

__all__ = ["load_file", "save_file", "loads", "dumps"]

TOP_KEYS = ("name", "hosts", "switches", "links", "routes", "injection", "reduction", "attrs", "measured")
LINK_KEYS = ("a", "b", "bandwidth", "latency", "bandwidth_ba", "sharing", "name", "directed")
ROUTE_KEYS = ("src", "dst", "path")


# ---------------------------------------------------------------------- YAML with line marks
class _MDict(dict):
    line: int | None = None


class _MList(list):
    line: int | None = None


class _MarkLoader(yaml.SafeLoader):
    """SafeLoader that remembers the line of every mapping and sequence (1-based)."""


def _construct_mapping(loader: _MarkLoader, node: yaml.MappingNode) -> _MDict:
    loader.flatten_mapping(node)
    d = _MDict()
    for k_node, v_node in node.value:
        key = loader.construct_object(k_node, deep=True)
        try:
            hash(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(None, None, f"unhashable key {key!r}", k_node.start_mark) from None
        if key in d:
            m = k_node.start_mark
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", m)
        d[key] = loader.construct_object(v_node, deep=True)
    d.line = node.start_mark.line + 1
    return d


def _construct_sequence(loader: _MarkLoader, node: yaml.SequenceNode) -> _MList:
    out = _MList(loader.construct_object(c, deep=True) for c in node.value)
    out.line = node.start_mark.line + 1
    return out


_MarkLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_MarkLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_sequence)


# ---------------------------------------------------------------------- parsing
def _parse_text(text: str, source: str | None, fmt: str | None) -> object:
    """YAML or JSON text -> Python objects (mappings/sequences carry their line)."""
    if fmt == "json":
        try:
            json.loads(text)
        except json.JSONDecodeError as exc:
            raise TopologyError(
                f"malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}", source=source
            ) from None
    try:
        # JSON is (for our purposes) YAML, so both go through the marking loader.
        return yaml.load(text, Loader=_MarkLoader)  # noqa: S506 - SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        ctx = getattr(exc, "context", None)
        what = f"{ctx}: {problem}" if ctx else problem
        if mark is not None:
            msg = f"malformed {'JSON' if fmt == 'json' else 'YAML'} at line {mark.line + 1}, column {mark.column + 1}: {what}"
        else:
            msg = f"malformed {'JSON' if fmt == 'json' else 'YAML'}: {what}"
        raise TopologyError(msg, source=source) from None


def _plain_link(ld: object, seen: Mapping[str, str]) -> PhysicalLink | None:
    """The link of ``ld`` when it is a plain two-way link between declared names with a
    bandwidth and perhaps a latency (what generators write, 100,000 times); None for anything
    else, which :func:`_checked_link` reads with every check and its message."""
    if type(ld) is not dict or not ld.keys() <= _PLAIN_LINK_KEYS:
        return None
    a, b, bw, lat = ld.get("a"), ld.get("b"), ld.get("bandwidth"), ld.get("latency", 0)
    if type(a) is not str or type(b) is not str or a == b or a not in seen or b not in seen:
        return None
    if not isinstance(bw, (str, int, float)) or isinstance(bw, bool):
        return None
    if not isinstance(lat, (str, int, float)) or isinstance(lat, bool):
        return None
    try:
        bw_value = cached_quantity(parse_bandwidth, bw)
        lat_value = cached_quantity(parse_time, lat)
    except InputError:
        return None
    if not (bw_value > 0 and lat_value >= 0):
        return None
    return PhysicalLink(a, b, bw_value, lat_value, None, "duplex", None, directed=False)


_PLAIN_LINK_KEYS = frozenset(("a", "b", "bandwidth", "latency"))


def _checked_link(i: int, ld: object, seen: Mapping[str, str], source: str | None, raw_links: list) -> PhysicalLink:
    """Link ``i`` of the file with every check (a clear error naming the link and field)."""
    el = f"links[{i}]"
    ld = expect(ld, dict, source, raw_links, el, "a mapping {a, b, bandwidth, ...}")
    if "a" in ld and "b" in ld:
        el = f"links[{i}] ({ld['a']}-{ld['b']})"
    check_keys(ld, LINK_KEYS, source, el)
    for k in ("a", "b", "bandwidth"):
        if k not in ld:
            raise fail(source, ld, el, f"missing {k!r}")
    a = node_name(ld["a"], source, ld, f"{el}: a")
    b = node_name(ld["b"], source, ld, f"{el}: b")
    for end, key in ((a, "a"), (b, "b")):
        if end not in seen:
            raise fail(source, ld, f"{el}: {key}", f"{end!r} is not a declared host or switch")
    bw = bandwidth_value(ld["bandwidth"], source, ld, f"{el}: bandwidth")
    bw_ba = None
    if ld.get("bandwidth_ba") is not None:
        bw_ba = bandwidth_value(ld["bandwidth_ba"], source, ld, f"{el}: bandwidth_ba")
        if bw_ba == bw:
            bw_ba = None  # symmetric after all: one canonical form
    lat = time_value(ld.get("latency", 0), source, ld, f"{el}: latency")
    sharing = ld.get("sharing", "duplex")
    if sharing not in SHARING_POLICIES:
        raise fail(source, ld, f"{el}: sharing", f"expected one of {', '.join(SHARING_POLICIES)}, got {sharing!r}")
    lname = ld.get("name")
    if lname is not None:
        lname = node_name(lname, source, ld, f"{el}: name")
    directed = ld.get("directed", False)
    if not isinstance(directed, bool):
        raise fail(source, ld, f"{el}: directed", f"expected true or false, got {directed!r}")
    if a == b:
        raise fail(source, ld, el, f"a link must join two different nodes, got {a!r} twice")
    return PhysicalLink(a, b, bw, lat, bw_ba, sharing, lname, directed=directed)


def from_data(data: object, source: str | None = None, *, default_name: str = "topology") -> Topology:
    """Build a :class:`Topology` from already-parsed YAML/JSON data."""
    if data is None:
        raise TopologyError("the file is empty (expected a mapping with hosts and links)", source=source)
    data = expect(data, dict, source, data, None, "a mapping with keys name, hosts, switches, links, ...")
    check_keys(data, TOP_KEYS, source, "top level")
    name = data.get("name", default_name)
    if isinstance(name, bool) or not isinstance(name, (str, int, float)):
        raise fail(source, data, "name", f"expected a string, got {name!r}")
    hosts, switches, seen = _declared_nodes(data, source)
    links = _links(data, source, seen)
    routes = _routes(data, source, seen)
    injection_time, injection_pair = _injection(data, source, hosts)
    reduction = _reduction(data, source, hosts)
    attrs = _attrs(data, source, seen)
    measured = parse_measured(data.get("measured"), links, source, data)
    try:
        return Topology(
            str(name),
            hosts,
            switches,
            links,
            routes=routes,
            injection_time=injection_time,
            injection_pair=injection_pair,
            reduction_cost=reduction,
            attrs=attrs,
            source=source,
            measured=measured,
            notes=measured_notes(measured),
        )
    except InputError as exc:
        raise TopologyError(exc.message, source=exc.source or source, element=exc.element) from None


def _declared_nodes(data: dict, source: str | None) -> tuple[list[str], list[str], dict[str, str]]:
    """The hosts, the switches, and each name's kind ("hosts" or "switches"); no name twice."""
    if "hosts" not in data:
        raise fail(source, data, "hosts", "missing (expected a list of host names)")
    hosts = node_names(data.get("hosts"), source, data, "hosts")
    switches = node_names(data.get("switches"), source, data, "switches")
    seen: dict[str, str] = {}
    for kind, lst in (("hosts", hosts), ("switches", switches)):
        for i, n in enumerate(lst):
            if n in seen:
                raise fail(source, data.get(kind), f"{kind}[{i}] ({n})", f"duplicate name {n!r} (already in {seen[n]})")
            seen[n] = kind
    return hosts, switches, seen


def _links(data: dict, source: str | None, seen: Mapping[str, str]) -> list[PhysicalLink]:
    """The links, with no directed pair twice and no link name twice."""
    links: list[PhysicalLink] = []
    pairs_seen: dict[tuple[str, str], int] = {}  # directed pair -> index of its link
    raw_links = data.get("links") or []
    raw_links = expect(raw_links, list, source, data, "links", "a list of links")
    for i, ld in enumerate(raw_links):
        link = _plain_link(ld, seen) or _checked_link(i, ld, seen, source, raw_links)
        a, b = link.a, link.b
        for pair in ((a, b),) if link.directed else ((a, b), (b, a)):
            if pair in pairs_seen:
                raise fail(
                    source,
                    ld,
                    f"links[{i}] ({a}-{b})",
                    f"duplicate link {pair[0]}->{pair[1]} (already in links[{pairs_seen[pair]}]); "
                    "merge parallel links into one (sum their bandwidths)",
                )
            pairs_seen[pair] = i
        links.append(link)
    lnames = Counter(l.name for l in links if l.name is not None)
    for i, l in enumerate(links):
        if l.name is not None and lnames[l.name] > 1:
            raise fail(source, raw_links[i], f"links[{i}] ({l.a}-{l.b}): name", f"duplicate link name {l.name!r}")
    return links


def _routes(data: dict, source: str | None, seen: Mapping[str, str]) -> dict[tuple[str, str], tuple[str, ...]]:
    """The declared routes: (src, dst) -> the nodes in between."""
    routes: dict[tuple[str, str], tuple[str, ...]] = {}
    raw_routes = data.get("routes") or []
    raw_routes = expect(raw_routes, list, source, data, "routes", "a list of {src, dst, path}")
    for i, rd in enumerate(raw_routes):
        el = f"routes[{i}]"
        rd = expect(rd, dict, source, raw_routes, el, "a mapping {src, dst, path}")
        check_keys(rd, ROUTE_KEYS, source, el)
        for k in ROUTE_KEYS:
            if k not in rd:
                raise fail(source, rd, el, f"missing {k!r}")
        src = node_name(rd["src"], source, rd, f"{el}: src")
        dst = node_name(rd["dst"], source, rd, f"{el}: dst")
        el = f"routes[{i}] ({src}->{dst})"
        path = tuple(node_names(rd["path"], source, rd, f"{el}: path"))
        for n in path:
            if n not in seen:
                raise fail(source, rd, f"{el}: path", f"{n!r} is not a declared host or switch")
        if (src, dst) in routes:
            raise fail(source, rd, el, "duplicate route for this pair")
        routes[(src, dst)] = path
    return routes


def _injection(
    data: dict, source: str | None, hosts: Sequence[str]
) -> tuple[dict[str, float], dict[tuple[str, str], float]]:
    """The ``injection`` section: per-host and per-pair start-up times (seconds)."""
    injection_time: dict[str, float] = {}
    injection_pair: dict[tuple[str, str], float] = {}
    inj = data.get("injection")
    if inj is None:
        return injection_time, injection_pair
    inj = expect(inj, dict, source, data, "injection", "a mapping {default, hosts, pairs}")
    check_keys(inj, ("default", "hosts", "pairs"), source, "injection")
    injection_time = _per_host(inj, "injection", hosts, source, time_value, "a mapping host -> time")
    pl = inj.get("pairs") or []
    pl = expect(pl, list, source, inj, "injection: pairs", "a list of {src, dst, time}")
    for i, pd in enumerate(pl):
        el = f"injection: pairs[{i}]"
        pd = expect(pd, dict, source, pl, el, "a mapping {src, dst, time}")
        check_keys(pd, ("src", "dst", "time"), source, el)
        for k in ("src", "dst", "time"):
            if k not in pd:
                raise fail(source, pd, el, f"missing {k!r}")
        u = node_name(pd["src"], source, pd, f"{el}: src")
        v = node_name(pd["dst"], source, pd, f"{el}: dst")
        for x in (u, v):
            if x not in hosts:
                raise fail(source, pd, el, f"{x!r} is not a declared host")
        injection_pair[(u, v)] = time_value(pd["time"], source, pd, f"{el}: time")
    return injection_time, injection_pair


def _reduction(data: dict, source: str | None, hosts: Sequence[str]) -> dict[str, float]:
    """The ``reduction`` section: each host's reduction speed."""
    red = data.get("reduction")
    if red is None:
        return {}
    red = expect(red, dict, source, data, "reduction", "a mapping {default, hosts} of reduction speeds")
    check_keys(red, ("default", "hosts"), source, "reduction")
    return _per_host(red, "reduction", hosts, source, _gamma, "a mapping host -> speed (e.g. 1GB/s)")


def _per_host(section: dict, name: str, hosts: Sequence[str], source: str | None, parse, expected: str) -> dict:
    """A section's ``default`` for every host, overridden by its ``hosts`` mapping; each value
    read by ``parse(value, source, where, element)``."""
    out: dict[str, float] = {}
    if section.get("default") is not None:
        value = parse(section["default"], source, section, f"{name}: default")
        out = dict.fromkeys(hosts, value)
    hd = expect(section.get("hosts") or {}, dict, source, section, f"{name}: hosts", expected)
    for h, v in hd.items():
        h = node_name(h, source, hd, f"{name}: hosts")
        if h not in hosts:
            raise fail(source, hd, f"{name}: hosts: {h}", f"{h!r} is not a declared host")
        out[h] = parse(v, source, hd, f"{name}: hosts: {h}")
    return out


def _attrs(data: dict, source: str | None, seen: Mapping[str, str]) -> dict[str, Any]:
    """The ``attrs`` section: free-form attributes of declared nodes, as plain data."""
    attrs = data.get("attrs") or {}
    attrs = expect(attrs, dict, source, data, "attrs", "a mapping node -> mapping")
    for n, a in attrs.items():
        if str(n) not in seen:
            raise fail(source, attrs, f"attrs: {n}", f"{n!r} is not a declared host or switch")
        expect(a, dict, source, attrs, f"attrs: {n}", "a mapping")
    return {str(n): _plain(a) for n, a in attrs.items()}


def _gamma(value: object, source: str | None, obj: object, element: str) -> float:
    """A reduction speed (bytes/s, or 'inf' for free) or {seconds_per_byte: x} -> γ (s/byte)."""
    if isinstance(value, dict):
        check_keys(value, ("seconds_per_byte",), source, element)
        g = value.get("seconds_per_byte")
        if isinstance(g, bool) or not isinstance(g, (int, float)) or not (g >= 0) or not math.isfinite(g):
            raise fail(source, value, element, f"seconds_per_byte must be a number >= 0, got {g!r}")
        return float(g)
    if isinstance(value, str) and value.strip().lower() in ("inf", "infinite"):
        return 0.0
    return 1.0 / bandwidth_value(value, source, obj, element)


def _plain(x: object) -> object:
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_plain(v) for v in x]
    return x


def _fmt_of(path: str) -> str:
    return "json" if str(path).lower().endswith(".json") else "yaml"


_FAST_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def loads(text: str, source: str | None = None, *, fmt: str | None = None) -> Topology:
    """Parse topology text (YAML or JSON; ``fmt`` defaults from ``source``'s extension).

    The text is first parsed with the fast parser (json / libyaml); only when it is invalid is
    it parsed again with the line-marking loader, so errors still give ``file:line``.
    """
    if fmt is None:
        fmt = _fmt_of(source) if source else "yaml"
    default_name = Path(source).stem if source else "topology"
    try:
        data = json.loads(text) if fmt == "json" else yaml.load(text, Loader=_FAST_LOADER)  # noqa: S506
    except (ValueError, yaml.YAMLError):
        data = _parse_text(text, source, fmt)  # raises with line and column
    try:
        return from_data(data, source, default_name=default_name)
    except TopologyError:
        marked = _parse_text(text, source, fmt)
        return from_data(marked, source, default_name=default_name)  # same error, with the line


def load_file(path: str | os.PathLike[str]) -> Topology:
    """Read a topology file (``.yaml``, ``.yml`` or ``.json``)."""
    path = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TopologyError("no such file", source=path) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TopologyError(f"cannot read the file ({exc})", source=path) from None
    return loads(text, path)


# ---------------------------------------------------------------------- writing
def _rate_for_gamma(g: float) -> str | int | float | dict[str, float]:
    """A reduction-speed value that reads back to exactly γ = ``g``."""
    if g == 0:
        return "inf"
    r = 1.0 / g
    cands = [float(f"{r:.{d}g}") for d in range(1, 18)]
    lo = hi = r
    for _ in range(4):
        lo, hi = math.nextafter(lo, 0.0), math.nextafter(hi, math.inf)
        cands += [lo, hi]
    for c in cands:
        f = format_bandwidth_exact(c, bytes_first=True)
        if 1.0 / parse_bandwidth(f) == g:
            return f
    return {"seconds_per_byte": g}


def to_data(t: Topology) -> dict:
    """The file form (plain dicts/lists) of a topology."""
    data: dict = {"name": t.name, "hosts": list(t.hosts)}
    if t.switches:
        data["switches"] = list(t.switches)
    links = []
    for pl in t.physical_links:
        d = {"a": pl.a, "b": pl.b, "bandwidth": format_bandwidth_exact(pl.bandwidth)}
        if pl.latency:
            d["latency"] = format_time_exact(pl.latency)
        if pl.bandwidth_ba is not None and pl.bandwidth_ba != pl.bandwidth:
            d["bandwidth_ba"] = format_bandwidth_exact(pl.bandwidth_ba)
        if pl.sharing != "duplex":
            d["sharing"] = pl.sharing
        if pl.name is not None:
            d["name"] = pl.name
        if pl.directed:
            d["directed"] = True
        links.append(d)
    data["links"] = links
    if t.routes:
        data["routes"] = [{"src": u, "dst": v, "path": list(p)} for (u, v), p in t.routes.items()]
    if t.injection_time or t.injection_pair:
        inj: dict = {}
        it = dict(t.injection_time)
        if it and set(it) == set(t.hosts):
            default = Counter(it.values()).most_common(1)[0][0]
            inj["default"] = format_time_exact(default)
            it = {h: v for h, v in it.items() if v != default}
        if it:
            inj["hosts"] = {h: format_time_exact(v) for h, v in it.items()}
        if t.injection_pair:
            inj["pairs"] = [
                {"src": u, "dst": v, "time": format_time_exact(x)} for (u, v), x in t.injection_pair.items()
            ]
        data["injection"] = inj
    if t.reduction_cost:
        red: dict = {}
        rc = dict(t.reduction_cost)
        if set(rc) == set(t.hosts):
            default = Counter(rc.values()).most_common(1)[0][0]
            red["default"] = _rate_for_gamma(default)
            rc = {h: v for h, v in rc.items() if v != default}
        if rc:
            red["hosts"] = {h: _rate_for_gamma(v) for h, v in rc.items()}
        data["reduction"] = red
    if t.attrs:
        data["attrs"] = {n: _plain(dict(a)) for n, a in t.attrs.items() if a}
    if t.measured:
        m = {k: v for k, v in t.measured.items() if k != "duration"}
        if "duration" in t.measured:
            m["duration"] = format_time_exact(t.measured["duration"])
        data["measured"] = _plain(m)
    return data


try:  # libyaml's emitter when PyYAML was built with it
    from yaml import CSafeDumper as _BaseDumper
except ImportError:
    from yaml import SafeDumper as _BaseDumper


class _FlowDumper(_BaseDumper):
    """Block style at the top, flow style for each link/route/host list (like docs/design.md)."""


def _represent_list(dumper: yaml.SafeDumper, data: list) -> yaml.SequenceNode:
    flow = all(not isinstance(x, (dict, list)) for x in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


def _represent_dict(dumper: yaml.SafeDumper, data: dict) -> yaml.MappingNode:
    flow = all(
        not isinstance(x, (dict, list)) or (isinstance(x, list) and all(not isinstance(y, (dict, list)) for y in x))
        for x in data.values()
    )
    return dumper.represent_mapping("tag:yaml.org,2002:map", data.items(), flow_style=flow)


_FlowDumper.add_representer(list, _represent_list)
_FlowDumper.add_representer(dict, _represent_dict)


def dumps(t: Topology, fmt: str = "yaml") -> str:
    """Topology as YAML (``fmt='yaml'``) or JSON (``fmt='json'``) text."""
    data = to_data(t)
    if fmt == "json":
        return json.dumps(data, indent=1) + "\n"
    if fmt != "yaml":
        raise TopologyError(f"unknown format {fmt!r} (expected yaml or json)")
    top = {k: v for k, v in data.items()}
    # Top level and the list of links/routes in block style, each entry in flow style.
    return yaml.dump(top, Dumper=_FlowDumper, sort_keys=False, width=100, allow_unicode=True)


def save_file(t: Topology, path: str | os.PathLike[str]) -> None:
    """Write ``t`` to ``path`` (JSON for ``.json``, else YAML)."""
    path = str(path)
    try:
        Path(path).write_text(dumps(t, _fmt_of(path)), encoding="utf-8")
    except OSError as exc:
        raise TopologyError(f"cannot write the file ({exc})", source=path) from None
