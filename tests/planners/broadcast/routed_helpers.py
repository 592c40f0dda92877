"""A small multi-site platform with declared routes (SimGrid Floyd style): hosts behind an
intermediate switch reach each other up through their site gateway and back down, so the
gateway-switch link (shared by both directions) is crossed twice; one host is slow."""

import random

from topocast.topology.model import PhysicalLink, Topology


def hairpin_platform(
    sites=2, switches=2, behind=3, direct=2, *, host_bw=1e9, uplink_bw=2e9, backbone_bw=4e9, latency=2.25e-3, seed=0
):
    """``sites`` sites; each has a gateway ``gw<s>`` with ``direct`` hosts on it and
    ``switches`` intermediate switches of ``behind`` hosts each. Routes between two hosts
    behind one switch are declared through the gateway (up and back down). Every link is
    shared by both directions; one host (chosen by ``seed``) has a tenth of ``host_bw``."""
    rng = random.Random(seed)
    hosts, switches_, links, routes = [], ["bb"], [], {}
    for s in range(sites):
        gw = f"gw{s}"
        switches_.append(gw)
        links.append(PhysicalLink(gw, "bb", backbone_bw, latency, sharing="shared"))
        for d in range(direct):
            h = f"s{s}d{d}"
            hosts.append(h)
            links.append(PhysicalLink(h, gw, host_bw, latency, sharing="shared"))
        for w in range(switches):
            sw = f"sw{s}_{w}"
            switches_.append(sw)
            links.append(PhysicalLink(sw, gw, uplink_bw, latency, sharing="shared"))
            group = [f"s{s}w{w}h{i}" for i in range(behind)]
            for h in group:
                hosts.append(h)
                links.append(PhysicalLink(h, sw, host_bw, latency, sharing="shared"))
            for a in group:
                for b in group:
                    if a != b:
                        routes[(a, b)] = (a, sw, gw, sw, b)
    slow = rng.choice(hosts[1:])
    links = [
        PhysicalLink(pl.a, pl.b, pl.bandwidth / 10, pl.latency, sharing=pl.sharing) if pl.a == slow else pl
        for pl in links
    ]
    return Topology("hairpin", hosts, switches_, links, routes=routes)
