"""Topology generators: multi-cluster switch trees, two-cluster grids, fat-trees, random trees.

Every generator takes ``seed=`` and returns the same :class:`Topology` for the same arguments
and seed (``numpy.random.default_rng(seed)``; draws are integers so the result does not depend
on floating-point summation order). Random bandwidths are drawn as INTEGER Mbit/s, so each is
exactly ``mbit * 125_000`` bytes/s.

The first host of every generated topology is the natural broadcast source.

References: the multi-cluster trees and their four bandwidth settings follow the Stable
Broadcast study (Takahashi, Saito, Shibata, Taura, CCGrid 2008; docs/algorithms.md 1.6); the
two-cluster grid is GridMPI's "long and fast" setting (two clusters, one wide-area link);
the fat-tree is Al-Fares, Loukissas, Vahdat, "A scalable, commodity data center network
architecture", SIGCOMM 2008.

Our readings [I]: the slides do not give cluster sizes, the switch tree's shape or how hosts
are spread; we spread hosts evenly over the clusters (sizes differ by at most one) and join
the cluster switches into a uniform random recursive tree (switch i attaches to a uniformly
chosen earlier switch, after a random relabelling). Units are not given on the slides; we use
Mbit/s.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from ..memory import BYTES_PER_NODE, check_fits
from ..units import parse_bandwidth, parse_time
from .model import PhysicalLink, Topology
from .multisite import multi_site_platform

__all__ = [
    "MULTI_CLUSTER_SETTINGS",
    "multi_cluster_tree",
    "two_cluster_grid",
    "fat_tree",
    "random_tree",
    "GENERATORS",
]

MBIT = 125_000  # bytes/s in one Mbit/s (exact)

#: Bandwidth settings of the Stable Broadcast study, Mbit/s:
#: name -> (host-link distribution, switch-link distribution); ("u", lo, hi) is uniform over
#: the integers lo..hi, ("c", a, b) picks a or b with probability 1/2, ("k", v) is constant.
MULTI_CLUSTER_SETTINGS = {
    "uniform-500-1000": (("u", 500, 1000), ("u", 500, 1000)),
    "uniform-100-1000": (("u", 100, 1000), ("u", 100, 1000)),
    "mixed": (("c", 100, 1000), ("c", 100, 1000)),
    "switch-uniform-100-1000": (("k", 1000), ("u", 100, 1000)),
}


def _draw(rng: np.random.Generator, dist, n: int) -> np.ndarray:
    """``n`` integer Mbit/s values from ``dist`` (see MULTI_CLUSTER_SETTINGS)."""
    kind = dist[0]
    if kind == "u":
        return rng.integers(dist[1], dist[2] + 1, size=n)
    if kind == "c":
        return np.where(rng.integers(0, 2, size=n) == 0, dist[1], dist[2])
    return np.full(n, dist[1], dtype=np.int64)


def _bw(value, field: str) -> float:
    bw = parse_bandwidth(value, field=field)
    if not bw > 0:
        raise InputError(f"must be positive, got {value!r}", element=field)
    return bw


def _lat(value, field: str) -> float:
    t = parse_time(value, field=field)
    if t < 0:
        raise InputError(f"must be >= 0, got {value!r}", element=field)
    return t


def _dist_of(bandwidth, field: str):
    """A bandwidth argument: a value with unit (constant) or ``uniform-LO-HI`` / ``mixed-A-B`` (Mbit/s)."""
    if isinstance(bandwidth, str):
        parts = bandwidth.split("-")
        if parts[0] in ("uniform", "mixed") and len(parts) == 3 and all(p.isdigit() for p in parts[1:]):
            lo, hi = int(parts[1]), int(parts[2])
            if lo <= 0 or hi < lo:
                raise InputError(f"expected 0 < LO <= HI in {bandwidth!r}", element=field)
            return ("u" if parts[0] == "uniform" else "c", lo, hi)
    return ("bytes", _bw(bandwidth, field))


def _draw_bytes(rng, dist, n: int) -> np.ndarray:
    if dist[0] == "bytes":
        return np.full(n, dist[1], dtype=float)
    return _draw(rng, dist, n).astype(float) * MBIT


def _links(a, b, fwd, back, latency, asymmetric):
    out = []
    for x, y, f, r in zip(a, b, fwd.tolist(), back.tolist()):
        out.append(PhysicalLink(x, y, float(f), latency, float(r) if asymmetric and r != f else None))
    return out


def _random_tree_parents(rng: np.random.Generator, n: int) -> list[int]:
    """Parent of node i (i >= 1) in a uniform random recursive tree over a random relabelling."""
    if n <= 1:
        return [-1] * n
    perm = rng.permutation(n)  # perm[k] = node placed k-th
    attach = rng.integers(0, np.arange(1, n)).tolist()  # attach[k-1] uniform in 0..k-1
    parent = [-1] * n
    for k in range(1, n):
        parent[int(perm[k])] = int(perm[attach[k - 1]])
    return parent


def multi_cluster_tree(
    n_hosts: int,
    *,
    n_clusters: int,
    bandwidth: str = "mixed",
    asymmetric: bool = False,
    latency: str | float = 0.0,
    seed: int = 0,
    name: str | None = None,
) -> Topology:
    """Clusters of hosts under switches, the switches joined into a random tree.

    The Stable Broadcast study's simulated topologies (docs/algorithms.md 1.6)::

                      sw0 ---- sw3
                     /   \\       \\            switches: a random tree
                  sw1     sw2     ...
                 / | \\    / | \\
               h0 h1 h2  h3 h4 h5   ...      hosts: leaves, ~n_hosts/n_clusters per switch

    ``bandwidth`` (Mbit/s, integers; see :data:`MULTI_CLUSTER_SETTINGS`):

    * ``"uniform-500-1000"`` / ``"uniform-100-1000"``: every link uniform in the range;
    * ``"mixed"``: every link 100 or 1000 with probability 1/2;
    * ``"switch-uniform-100-1000"``: host links 1000, switch-to-switch links uniform 100-1000.

    ``asymmetric=True`` draws each direction separately (``bandwidth_ba``). Hosts are named
    ``h0 .. h{n-1}`` (cluster by cluster), switches ``sw0 ..``; ``latency`` applies to every
    link. Builds 10,000 hosts in well under a second.
    """
    if n_hosts < 1 or n_clusters < 1:
        raise InputError("n_hosts and n_clusters must be >= 1", element="multi_cluster_tree")
    if bandwidth not in MULTI_CLUSTER_SETTINGS:
        raise InputError(
            f"unknown bandwidth setting {bandwidth!r} (expected one of {', '.join(MULTI_CLUSTER_SETTINGS)})",
            element="bandwidth",
        )
    n_clusters = min(n_clusters, n_hosts)
    lat = _lat(latency, "latency")
    check_fits(
        (n_hosts + n_clusters) * BYTES_PER_NODE,
        f"a topology of {n_hosts + n_clusters:,} nodes",
        element="multi_cluster_tree",
    )
    rng = np.random.default_rng(seed)
    host_dist, switch_dist = MULTI_CLUSTER_SETTINGS[bandwidth]
    width = len(str(n_hosts - 1))
    hosts = [f"h{i:0{width}d}" for i in range(n_hosts)]
    swidth = len(str(n_clusters - 1))
    switches = [f"sw{i:0{swidth}d}" for i in range(n_clusters)]
    # step 1: spread hosts evenly (cluster sizes differ by at most one)
    base, extra = divmod(n_hosts, n_clusters)
    cluster_of = np.repeat(np.arange(n_clusters), [base + (1 if c < extra else 0) for c in range(n_clusters)])
    # step 2: random tree over the switches
    parent = _random_tree_parents(rng, n_clusters)
    # step 3: bandwidths (integers, Mbit/s), one draw per direction when asymmetric
    hf = _draw(rng, host_dist, n_hosts)
    hb = _draw(rng, host_dist, n_hosts) if asymmetric else hf
    ns = n_clusters - 1
    sf = _draw(rng, switch_dist, ns)
    sb = _draw(rng, switch_dist, ns) if asymmetric else sf
    links = _links(hosts, [switches[c] for c in cluster_of.tolist()], hf * MBIT, hb * MBIT, lat, asymmetric)
    children = [i for i in range(n_clusters) if parent[i] >= 0]
    links += _links(
        [switches[parent[i]] for i in children], [switches[i] for i in children], sf * MBIT, sb * MBIT, lat, asymmetric
    )
    name = name or f"multi-cluster-{n_hosts}h-{n_clusters}c-{bandwidth}{'-asym' if asymmetric else ''}-s{seed}"
    return Topology(name, hosts, switches, links)


def two_cluster_grid(
    n_per_cluster: int,
    *,
    nic: str | float = "1Gbps",
    wan: str | float = "10Gbps",
    wan_latency: str | float = "10ms",
    lan_latency: str | float = "50us",
    slow_hosts: int = 0,
    slow_nic: str | float = "100Mbps",
    seed: int = 0,
    name: str | None = None,
) -> Topology:
    """Two clusters, each hosts on one switch, joined by one wide-area link::

        a0  a1 ... a{n-1}                 b0  b1 ... b{n-1}
          \\  |     /                         \\  |     /
            swA ======== wan, wan_latency ======== swB
            (nic, lan_latency per host link)

    GridMPI's "long and fast" setting: a fast, long wide-area link between clusters. ``a0`` is
    the natural source. ``slow_hosts`` hosts (chosen with ``seed``, never ``a0``) get
    ``slow_nic`` instead of ``nic``.
    """
    if n_per_cluster < 1:
        raise InputError("n_per_cluster must be >= 1", element="two_cluster_grid")
    nic_b, wan_b, slow_b = _bw(nic, "nic"), _bw(wan, "wan"), _bw(slow_nic, "slow_nic")
    wan_l, lan_l = _lat(wan_latency, "wan_latency"), _lat(lan_latency, "lan_latency")
    width = len(str(n_per_cluster - 1))
    a = [f"a{i:0{width}d}" for i in range(n_per_cluster)]
    b = [f"b{i:0{width}d}" for i in range(n_per_cluster)]
    hosts = a + b
    if not 0 <= slow_hosts <= len(hosts) - 1:
        raise InputError(f"slow_hosts must be between 0 and {len(hosts) - 1}", element="slow_hosts")
    rng = np.random.default_rng(seed)
    slow = set((rng.permutation(len(hosts) - 1)[:slow_hosts] + 1).tolist())
    links = []
    for i, h in enumerate(hosts):
        sw = "swA" if i < n_per_cluster else "swB"
        links.append(PhysicalLink(h, sw, slow_b if i in slow else nic_b, lan_l))
    links.append(PhysicalLink("swA", "swB", wan_b, wan_l, name="wan"))
    return Topology(name or f"two-cluster-{n_per_cluster}x2", hosts, ["swA", "swB"], links)


def fat_tree(
    k: int, *, bandwidth: str | float = "1Gbps", latency: str | float = 0.0, seed: int = 0, name: str | None = None
) -> Topology:
    """A k-ary fat-tree (Al-Fares et al. 2008): k pods, k^3/4 hosts, 5k^2/4 switches::

                   c0      c1      c2      c3          (k/2)^2 core switches
                   | \\    / \\     / \\    / |
                 p0a0   p0a1   p1a0   p1a1  ...      k/2 aggregation switches per pod
                   |  X  |      |  X  |               (each joined to every edge of its pod;
                 p0e0   p0e1   p1e0   p1e1  ...       agg j to cores j*k/2 .. j*k/2+k/2-1)
                 / \\     / \\    / \\    / \\
               h0  h1  h2  h3 h4  h5 h6  h7  ...     k/2 hosts per edge switch

    ``bandwidth`` is a value with unit for every link (``"1Gbps"``) or a random setting in
    Mbit/s, ``"uniform-LO-HI"`` (integers) or ``"mixed-A-B"`` (A or B, p=1/2), drawn per link
    with ``seed``. Routing is topocast's default (fewest hops, widest bottleneck).
    """
    if k < 2 or k % 2:
        raise InputError(f"k must be an even number >= 2, got {k}", element="fat_tree")
    dist = _dist_of(bandwidth, "bandwidth")
    lat = _lat(latency, "latency")
    rng = np.random.default_rng(seed)
    half = k // 2
    n_hosts = k * half * half
    width = len(str(n_hosts - 1))
    hosts = [f"h{i:0{width}d}" for i in range(n_hosts)]
    cores = [f"c{i}" for i in range(half * half)]
    aggs = [[f"p{p}a{j}" for j in range(half)] for p in range(k)]
    edges = [[f"p{p}e{j}" for j in range(half)] for p in range(k)]
    ends: list[tuple[str, str]] = []
    for p in range(k):
        for e in range(half):
            for i in range(half):
                ends.append((hosts[(p * half + e) * half + i], edges[p][e]))
    for p in range(k):
        for e in range(half):
            for a in range(half):
                ends.append((edges[p][e], aggs[p][a]))
    for p in range(k):
        for a in range(half):
            for c in range(half):
                ends.append((aggs[p][a], cores[a * half + c]))
    bws = _draw_bytes(rng, dist, len(ends))
    links = [PhysicalLink(x, y, float(bw), lat) for (x, y), bw in zip(ends, bws.tolist())]
    switches = cores + [s for pod in aggs for s in pod] + [s for pod in edges for s in pod]
    return Topology(name or f"fat-tree-k{k}", hosts, switches, links)


def random_tree(
    n_hosts: int,
    n_switches: int = 0,
    *,
    min_mbit: int = 10,
    max_mbit: int = 1000,
    asymmetric: bool = False,
    hosts_as_leaves: bool = True,
    latency: str | float = 0.0,
    seed: int = 0,
    name: str | None = None,
) -> Topology:
    """A random tree of switches and hosts with random bandwidths, for property tests::

                 sw0                   switches: a random recursive tree
                /   \\
             sw1     h2                hosts hang under switches (hosts_as_leaves) or
            /  \\       \\               anywhere in the tree (hosts may relay)
          h0    h1      h3

    Bandwidths are integers in ``min_mbit .. max_mbit`` Mbit/s (uniform), each direction drawn
    separately when ``asymmetric``. With ``n_switches == 0`` the hosts themselves form the
    tree. Hosts ``h0..``, switches ``sw0..``.
    """
    if n_hosts < 1 or n_switches < 0:
        raise InputError("need n_hosts >= 1 and n_switches >= 0", element="random_tree")
    check_fits(
        (n_hosts + n_switches) * BYTES_PER_NODE, f"a topology of {n_hosts + n_switches:,} nodes", element="random_tree"
    )
    if not 1 <= min_mbit <= max_mbit:
        raise InputError("need 1 <= min_mbit <= max_mbit", element="random_tree")
    lat = _lat(latency, "latency")
    rng = np.random.default_rng(seed)
    hosts = [f"h{i}" for i in range(n_hosts)]
    switches = [f"sw{i}" for i in range(n_switches)]
    ends: list[tuple[str, str]] = []
    if n_switches == 0 or not hosts_as_leaves:
        nodes = hosts + switches
        parent = _random_tree_parents(rng, len(nodes))
        ends = [(nodes[parent[i]], nodes[i]) for i in range(len(nodes)) if parent[i] >= 0]
    else:
        parent = _random_tree_parents(rng, n_switches)
        ends = [(switches[parent[i]], switches[i]) for i in range(n_switches) if parent[i] >= 0]
        # every host under a random switch
        under = rng.integers(0, n_switches, size=n_hosts)
        ends += [(switches[int(s)], h) for h, s in zip(hosts, under.tolist())]
    # drop switches that ended up as useless leaves? No: they are harmless (never on a route).
    dist = ("u", min_mbit, max_mbit)
    f = _draw(rng, dist, len(ends)) * MBIT
    b = _draw(rng, dist, len(ends)) * MBIT if asymmetric else f
    links = _links([x for x, _ in ends], [y for _, y in ends], f, b, lat, asymmetric)
    return Topology(name or f"random-tree-{n_hosts}h-{n_switches}s-s{seed}", hosts, switches, links)


#: Generators by CLI kind name.
GENERATORS = {
    "multi-cluster": multi_cluster_tree,
    "two-cluster": two_cluster_grid,
    "fat-tree": fat_tree,
    "random-tree": random_tree,
    "multi-site": multi_site_platform,
}
