"""Multi-site SimGrid platforms: Floyd zones whose declared routes go up to the site gateway.

A family of platforms in the style of multi-site grid descriptions written for SimGrid (one
zone per site, routes declared host -> gateway, sites joined by zone routes), for measuring
planners and bounds where the routes, not the graph, decide what a transfer crosses::

        site zone (routing="Floyd")                      world zone (routing="Floyd")
        h0 h1 ... h{m-1}   h{m} ...                     site0 --wan-- site1 --wan-- site3
          \\ |   /            \\                                 \\
          nic links          nic links                         site2    (a random tree of
             |  (junction)      |                                        zone routes)
          up-s0              up-s1        one uplink per intermediate switch
              \\             /
               gw-site0   (router: the site's gateway)

* Each host's declared route goes to its site's gateway: ``h -> gw`` crosses ``nic-h`` then
  the uplink ``up-...`` of the intermediate switch it sits behind. The switch is no
  netpoint of the file (as in many real descriptions): Floyd chains ``h1 -> gw -> h2`` for two
  hosts behind the same switch, so their route crosses the uplink twice, up and back down,
  instead of turning at the switch. The importer infers the switch as a junction of the two
  links and keeps those routes as explicit routes.
* Sites are joined by wide-area zone routes between their gateways along a random tree;
  Floyd chains the other site pairs through it.
* Every link is ``SHARED`` (SimGrid's default: both directions share one capacity).
* Latencies are drawn per link in 1-5 ms (quarter-millisecond steps).
* 1-3 % of the hosts (at least one, never the first host, the natural source) are slow: a
  tenth of the others' speed and a tenth of their link's bandwidth.

:func:`multi_site_xml` gives the platform file's text; :func:`multi_site_platform` the
Topology that ``load_simgrid`` reads from it (what ``topology generate multi-site`` saves as
``.yaml``/``.json``; a ``.xml`` output is the text itself). The same seed gives the same
platform. Host count: ``n_hosts``, or drawn in 300-1,500 with the seed; small counts (from 2)
make the small variant the tests use.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from ..errors import InputError
from .model import Topology

__all__ = ["multi_site_xml", "multi_site_platform", "MULTI_SITE_HOSTS"]

#: The family's host counts when none is given (drawn with the seed, inclusive).
MULTI_SITE_HOSTS = (300, 1500)

_NIC = 1.0  # GB/s: a fast host's link
_UPLINK = 10.0  # GB/s: an intermediate switch's uplink to the gateway
_WAN = 10.0  # GB/s: a wide-area link between two gateways
_SLOW = 10  # a slow host has a tenth of the others' speed and link bandwidth


def _latency(rng: np.random.Generator) -> str:
    """A latency in 1-5 ms, in quarter-millisecond steps (exact in the file)."""
    return f"{int(rng.integers(4, 21)) * 250}us"


def _sizes(rng: np.random.Generator, total: int, lo: int, hi: int) -> list[int]:
    """Split ``total`` into parts drawn in ``lo..hi`` (the last part takes the rest)."""
    sizes: list[int] = []
    left = total
    while left > 0:
        k = min(left, int(rng.integers(lo, hi + 1)))
        sizes.append(k)
        left -= k
    return sizes


def _link(lid: str, gbps: float, rng: np.random.Generator) -> str:
    return f'<link id="{lid}" bandwidth="{gbps:g}GBps" latency="{_latency(rng)}" sharing_policy="SHARED"/>'


def _route(src: str, dst: str, links: list[str]) -> str:
    return f'<route src="{src}" dst="{dst}">' + "".join(f'<link_ctn id="{l}"/>' for l in links) + "</route>"


def multi_site_xml(
    n_hosts: int | None = None, *, seed: int = 0, n_sites: int | None = None, name: str | None = None
) -> str:
    """The SimGrid platform (version 4.1) of the family for ``seed`` (see the module docstring).

    ``n_sites`` defaults to a draw in 2-8 (fewer for small platforms: at least two hosts per
    site); intermediate switches carry 8-48 hosts each (2-6 on platforms under 100 hosts).
    """
    rng = np.random.default_rng(seed)
    if n_hosts is None:
        n_hosts = int(rng.integers(MULTI_SITE_HOSTS[0], MULTI_SITE_HOSTS[1] + 1))
    if n_hosts < 2:
        raise InputError(f"need at least 2 hosts, got {n_hosts}", element="multi_site")
    most_sites = max(1, min(8, n_hosts // 2))
    if n_sites is None:
        n_sites = int(rng.integers(min(2, most_sites), most_sites + 1))
    if not 1 <= n_sites <= max(1, n_hosts // 2):
        raise InputError(f"need 1 <= sites <= hosts / 2, got {n_sites} sites for {n_hosts} hosts", element="sites")
    per_switch = (8, 48) if n_hosts >= 100 else (2, 6)
    width = len(str(n_hosts - 1))
    hosts = [f"h{i:0{width}d}" for i in range(n_hosts)]
    n_slow = max(1, round(n_hosts * float(rng.uniform(0.01, 0.03))))
    slow = set((rng.permutation(n_hosts - 1)[: min(n_slow, n_hosts - 1)] + 1).tolist())
    # Site sizes: as even as possible, then each site cut into switches.
    base, extra = divmod(n_hosts, n_sites)
    zones: list[str] = []
    first = 0
    for s in range(n_sites):
        size = base + (1 if s < extra else 0)
        gw = f"gw-site{s}"
        links: list[str] = []
        routes: list[str] = []
        members = [
            f'<host id="{hosts[i]}" speed="{"100Mf" if i in slow else "1Gf"}"/>' for i in range(first, first + size)
        ]
        for k, count in enumerate(_sizes(rng, size, *per_switch)):
            up = f"up-site{s}-sw{k}"
            links.append(_link(up, _UPLINK, rng))
            for i in range(first, first + count):
                nic = f"nic-{hosts[i]}"
                links.append(_link(nic, _NIC / _SLOW if i in slow else _NIC, rng))
                routes.append(_route(hosts[i], gw, [nic, up]))
            first += count
        zones.append(
            f'<zone id="site{s}" routing="Floyd">\n  '
            + "\n  ".join(members + [f'<router id="{gw}"/>'] + links + routes)
            + "\n</zone>"
        )
    # Sites joined along a random tree of wide-area zone routes (Floyd chains the rest).
    order = rng.permutation(n_sites).tolist()
    wan_links: list[str] = []
    zone_routes: list[str] = []
    for k in range(1, n_sites):
        a, b = order[int(rng.integers(0, k))], order[k]
        lid = f"wan-site{a}-site{b}"
        wan_links.append(_link(lid, _WAN, rng))
        zone_routes.append(
            f'<zoneRoute src="site{a}" dst="site{b}" gw_src="gw-site{a}" gw_dst="gw-site{b}">'
            f'<link_ctn id="{lid}"/></zoneRoute>'
        )
    title = name or f"multi-site-{n_hosts}h-{n_sites}s-s{seed}"
    return (
        "<?xml version='1.0'?>\n"
        '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
        f"<!-- {title}: topocast topology generate multi-site -->\n"
        '<platform version="4.1">\n'
        '<zone id="world" routing="Floyd">\n' + "\n".join(zones + wan_links + zone_routes) + "\n</zone>\n</platform>\n"
    )


def multi_site_platform(
    n_hosts: int | None = None, *, seed: int = 0, n_sites: int | None = None, name: str | None = None
) -> Topology:
    """The Topology ``load_simgrid`` reads from :func:`multi_site_xml` (same arguments)."""
    from .simgrid import load_simgrid

    text = multi_site_xml(n_hosts, seed=seed, n_sites=n_sites, name=name)
    with tempfile.TemporaryDirectory(prefix="topocast-multisite-") as tmp:
        path = Path(tmp) / "platform.xml"
        path.write_text(text)
        topo = load_simgrid(path)
    title = name or f"multi-site-{len(topo.hosts)}h-s{seed}"
    return topo.replace(name=title, source=None)
