"""Graph inference: the links of a platform placed as the edges of a graph that crosses the
same links as SimGrid's routes (or, when no such graph exists, an exact route graph)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Literal, NamedTuple

from ...errors import TopocastError
from ..model import PhysicalLink
from .parse import CONNECTOR_BANDWIDTH, _Platform

# What the inference glues together along the routes: netpoints, the two ends of each link,
# and the junctions between two buses crossed in a row; a bus is crossed through its hub.
_Netpoint = tuple[Literal["n"], str]
_LinkEnd = tuple[Literal["l"], str, int]  # (link id, end 0 or 1)
_Junction = tuple[Literal["fresh"], int]
_Element = _Netpoint | _LinkEnd | _Junction
_Bus = tuple[Literal["bus"], str]


class _RawLink(NamedTuple):
    """An inferred link before parallel ones between the same two nodes are merged."""

    u: str
    v: str
    bandwidth: float
    latency: float
    sharing: str
    name: str
    directed: bool = False


#: (raw links, explicit routes, extra switches, directed uses per link id)
_Inferred = tuple[list[_RawLink], dict[tuple[str, str], tuple[str, ...]], list[str], dict[str, set[tuple[str, str]]]]


class _UF:
    """Union-find over link ends and netpoints; a class holds at most one netpoint (its label)
    and never both ends of one link."""

    def __init__(self) -> None:
        self.parent: dict[_Element, _Element] = {}
        self.label: dict[_Element, str] = {}  # root -> netpoint name
        self.links: dict[_Element, set[str]] = {}  # root -> set of link ids with an end in the class

    def find(self, x: _Element) -> _Element:
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

    def can_union(self, a: _Element, b: _Element) -> bool:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return True
        la, lb = self.label.get(ra), self.label.get(rb)
        if la is not None and lb is not None and la != lb:
            return False
        return not (self.links.get(ra, set()) & self.links.get(rb, set()))

    def union(self, a: _Element, b: _Element) -> _Element:
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


class _Inconsistent(TopocastError):
    """The routes cannot be drawn as a graph whose edges are the SimGrid links."""


def _infer(p: _Platform) -> _Inferred:
    """Graph of the platform: unified link ends when the routes allow, else resources."""
    try:
        return _infer_graph(p)
    except _Inconsistent:
        return _infer_resources(p)


def _infer_resources(p: _Platform) -> _Inferred:
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
    raw: list[_RawLink] = []

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
            sharing = "fatpipe" if sharing == "fatpipe" else "duplex"
            raw.append(_RawLink(u, v, bw, lat, sharing, lid if forward else f"{lid} (back)", directed=True))
        return made[key]

    conns: set[tuple[str, str]] = set()

    def connect(u: str, v: str) -> None:
        if (u, v) not in conns:
            conns.add((u, v))
            raw.append(_RawLink(u, v, CONNECTOR_BANDWIDTH, 0.0, "fatpipe", f"connector:{u}>{v}", directed=True))

    def walk(a: str, b: str, links: list[str], forwards: list[bool]) -> tuple[str, ...]:
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


def _infer_graph(p: _Platform) -> _Inferred:
    """Unify link ends along every route.

    Returns (raw links, explicit routes, extra switches, directed uses per link id).
    """
    bus = _buses(p)
    uf, spokes, chains = _unify(p, bus)
    names = _Names(p, uf, bus)
    raw = _graph_links(p, bus, uf, spokes, names)
    routes, uses = _route_paths(p, bus, chains, names)
    return raw, routes, names.extra_switches, uses


def _buses(p: _Platform) -> set[str]:
    """Step 1: buses = links that single-link routes use between > 2 netpoints."""
    ends: dict[str, set[str]] = defaultdict(set)
    for a, b, links, *_ in p.statements:
        if len(links) == 1:
            ends[links[0]] |= {a, b}
    return {lid for lid, e in ends.items() if len(e) > 2}


def _unify(
    p: _Platform, bus: set[str]
) -> tuple[_UF, set[tuple[str, _Element]], list[tuple[int, list[_Element | _Bus]]]]:
    """Step 2: glue each route's netpoints and link ends together, shortest routes first.

    Returns the union-find, the spokes (bus id, element) and, per statement, the elements
    its route visits. Raises :class:`_Inconsistent` when a route cannot be glued."""
    uf = _UF()
    for n in p.netpoints:
        uf.find(("n", n))
        uf.label[("n", n)] = n
    spokes: set[tuple[str, _Element]] = set()  # (bus id, element)
    chains: list[tuple[int, list[_Element | _Bus]]] = []  # (statement index, elements visited)
    fresh = 0
    order = sorted(range(len(p.statements)), key=lambda i: (len(p.statements[i].links), i))
    for i in order:
        a, b, links, sym, explicit, where, _dirs = p.statements[i]
        cur: _Element = ("n", a)
        visited: list[_Element | _Bus] = [cur]
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
            ein, eout = _entry_and_exit(uf, cur, lid, last=k == len(links) - 1, end=("n", b))
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
    return uf, spokes, chains


def _entry_and_exit(uf: _UF, cur: _Element, lid: str, *, last: bool, end: _Netpoint) -> tuple[_LinkEnd, _LinkEnd]:
    """The end of link ``lid`` a route at ``cur`` enters by, and the one it leaves by."""
    e0: _LinkEnd = ("l", lid, 0)
    e1: _LinkEnd = ("l", lid, 1)
    rc = uf.find(cur)
    if uf.find(e0) == rc:
        entry = 0
    elif uf.find(e1) == rc:
        entry = 1
    else:
        # step 2a: prefer an entry end that can be glued to the current node and is
        # still free, and whose exit can reach the route's end when it is the last link
        choices = []
        for ent in (0, 1):
            ein, eout = (e0, e1) if ent == 0 else (e1, e0)
            ok = uf.can_union(cur, ein)
            ok_end = not last or uf.can_union(eout, end)
            free = uf.find(ein) == ein
            choices.append((not ok, not ok_end, not free, ent))
        choices.sort()
        entry = choices[0][3]
    return (e0, e1) if entry == 0 else (e1, e0)


class _Names:
    """Step 3: the name of each class of glued elements: its netpoint, or a fresh junction
    switch ``jN``; each bus gets a hub switch (and, for an exact platform, a hub-out).
    Fresh names are handed out in the order they are first asked for."""

    def __init__(self, p: _Platform, uf: _UF, bus: set[str]):
        self.uf = uf
        self.used = set(p.netpoints)
        self.extra_switches: list[str] = []
        self.junctions: dict[_Element, str] = {}
        self.bus = {lid: self.fresh(f"{lid}-bus") for lid in sorted(bus)}
        self.bus_out: dict[str, str] = {}

    def fresh(self, name: str) -> str:
        """``name`` (with ``_`` appended until unused), recorded as an extra switch."""
        while name in self.used:
            name += "_"
        self.used.add(name)
        self.extra_switches.append(name)
        return name

    def of(self, el: _Element | _Bus) -> str:
        if el[0] == "bus":
            return self.bus[el[1]]
        r = self.uf.find(el)
        if r in self.uf.label:
            return self.uf.label[r]
        if r not in self.junctions:
            self.junctions[r] = self.fresh(f"j{len(self.junctions)}")
        return self.junctions[r]


def _graph_links(
    p: _Platform, bus: set[str], uf: _UF, spokes: set[tuple[str, _Element]], names: _Names
) -> list[_RawLink]:
    """The links between the named classes: each used SimGrid link between its two ends'
    classes, and each bus as spokes to its hub (exact: one resource hub -> hub-out)."""
    raw: list[_RawLink] = []
    for lid, (bw, lat, sharing) in p.links.items():
        if lid in bus:
            continue
        if ("l", lid, 0) not in uf.parent:
            continue  # declared, never used by a route
        u, v = names.of(("l", lid, 0)), names.of(("l", lid, 1))
        if u == v:
            raise _Inconsistent(f"link {lid}")
        raw.append(_RawLink(u, v, bw, lat, sharing, lid))
    if p.exact:
        # one resource per bus: every endpoint -> hub -> hub-out -> every endpoint (one-way)
        for lid in sorted(bus):
            out = names.bus_out[lid] = names.fresh(f"{names.bus[lid]}-out")
            bw, lat, sharing = p.links[lid]
            one_way = "fatpipe" if sharing == "fatpipe" else "duplex"
            raw.append(_RawLink(names.bus[lid], out, bw, lat, one_way, lid, directed=True))
    spoke_seen = set()
    for lid, el in sorted(spokes, key=lambda s: (s[0], str(s[1]))):
        n = names.of(el)
        if (lid, n) in spoke_seen:
            continue
        spoke_seen.add((lid, n))
        bw, lat, sharing = p.links[lid]
        if p.exact:
            hub, out = names.bus[lid], names.bus_out[lid]
            raw.append(_RawLink(n, hub, CONNECTOR_BANDWIDTH, 0.0, "fatpipe", f"connector:{n}>{hub}", directed=True))
            raw.append(_RawLink(out, n, CONNECTOR_BANDWIDTH, 0.0, "fatpipe", f"connector:{out}>{n}", directed=True))
        else:
            raw.append(_RawLink(n, names.bus[lid], bw, lat / 2.0, sharing, f"{lid}@{n}"))
    return raw


def _route_paths(
    p: _Platform, bus: set[str], chains: list[tuple[int, list[_Element | _Bus]]], names: _Names
) -> tuple[dict[tuple[str, str], tuple[str, ...]], dict[str, set[tuple[str, str]]]]:
    """Step 4: node paths of explicit routes, and the directed uses of each link (for merging)."""
    routes: dict[tuple[str, str], tuple[str, ...]] = {}
    uses: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for i, visited in chains:
        a, b, links, sym, explicit, where, _dirs = p.statements[i]
        path = [a]
        for step in visited[1:]:
            if p.exact and step[0] == "bus":
                path += [names.bus[step[1]], names.bus_out[step[1]]]
                continue
            n = names.of(step)
            if n != path[-1]:
                path.append(n)
        if path[-1] != b:
            path.append(b)
        li = [lid for lid in links if lid not in bus]
        for lid in li:
            u, v = names.of(("l", lid, 0)), names.of(("l", lid, 1))
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
                    if back[k] in names.bus_out.values() and back[k + 1] in names.bus.values():
                        back[k], back[k + 1] = back[k + 1], back[k]
                routes.setdefault((b, a), tuple(back))
    return routes, uses


def _merge(raw: list[_RawLink], uses: Mapping[str, set[tuple[str, str]]]) -> list[PhysicalLink]:
    """One PhysicalLink per node pair (see the module docstring for the rule)."""
    groups: dict[tuple[str, str] | frozenset[str], list[_RawLink]] = {}  # in first-seen order
    for r in raw:
        key: tuple[str, str] | frozenset[str] = (r.u, r.v) if r.directed else frozenset((r.u, r.v))
        groups.setdefault(key, []).append(r)
    out = []
    for g in groups.values():
        if len(g) == 1 or g[0].directed:  # one link, or one-way links (never parallel)
            for r in g:
                u, v, directed = r.u, r.v, r.directed
                us = uses.get(r.name, set())
                if not directed and len(us) == 1:
                    # no route crosses it the other way: SimGrid cannot use that direction
                    (u, v), directed = next(iter(us)), True
                out.append(PhysicalLink(u, v, r.bandwidth, r.latency, None, r.sharing, r.name, directed=directed))
            continue
        u, v = g[0].u, g[0].v
        one_way = {}
        for r in g:
            us = uses.get(r.name, set())
            if len(us) == 1:
                one_way[r.name] = next(iter(us))
        if len(g) == 2 and len(one_way) == 2 and len(set(one_way.values())) == 2:
            fwd = next(r for r in g if one_way[r.name] == (u, v))
            back = next(r for r in g if one_way[r.name] == (v, u))
            out.append(
                PhysicalLink(
                    u,
                    v,
                    fwd.bandwidth,
                    max(fwd.latency, back.latency),
                    back.bandwidth if back.bandwidth != fwd.bandwidth else None,
                    "duplex",
                    f"{fwd.name}+{back.name}",
                )
            )
            continue
        bw = sum(r.bandwidth for r in g)
        lat = max(r.latency for r in g)
        shar = g[0].sharing if all(r.sharing == g[0].sharing for r in g) else "duplex"
        out.append(PhysicalLink(u, v, bw, lat, None, shar, "+".join(r.name for r in g)))
    return out
