"""Export: a topocast Topology as a SimGrid platform (version 4.1)."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path

from ...errors import TopologyError
from ..model import PhysicalLink, Topology


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
            routing = "Floyd" if t.n_nodes <= 300 else "DijkstraCache"
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

    def lid_for(i: int, pl: PhysicalLink, tag: str = "") -> str:
        base = pl.name or f"{pl.a}_{pl.b}"
        lid = base + tag
        while lid in used_ids:
            lid = f"{base}{tag}#{i}"
            i += 1
        used_ids.add(lid)
        return lid

    def add_link(lid: str, bw: float, lat: str, policy: str) -> None:
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
            add_link(l2, pl.reverse_bandwidth, lat, "SHARED")
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


def save_simgrid(t: Topology, path: str | os.PathLike[str], routing: str = "auto") -> None:
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
