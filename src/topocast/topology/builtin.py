"""Built-in example topologies, addressed as ``builtin:NAME`` (``builtin:list`` lists them).

The first host of each is the natural broadcast source. ``topocast topology convert
builtin:NAME file.yaml`` writes one out as a starting point for your own file.
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import TopologyError
from .model import PhysicalLink, Topology

__all__ = ["builtin_topology", "builtin_names", "builtin_summary", "BUILTINS"]

MBIT = 125_000  # bytes/s per Mbit/s


def _L(a, b, mbit, latency=0.0, mbit_ba=None, **kw) -> PhysicalLink:
    return PhysicalLink(a, b, mbit * MBIT, latency, None if mbit_ba is None else mbit_ba * MBIT, **kw)


def stable_example() -> Topology:
    """The Stable Broadcast slides' example: source S, destinations A, B, C (Mbit/s)::

                S
                | 1000
               sw0
          600 /    \\ 500
             A     sw1
               300 /  \\ 100
                  B    C

    Single-transfer bandwidths b(A)=600, b(B)=300, b(C)=100 Mbit/s. The stable algorithm
    (docs/algorithms.md 1.2) makes T1 = S,A,B,C (spanning, V1 = 100: sw1-C saturates), T2 = S,A,B
    (partial, V2 = 200: sw1-B saturates) and T3 = S,A (partial, V3 = 300: sw0-A saturates),
    so r(A) = 600, r(B) = 300, r(C) = 100 and the aggregate is 1000 Mbit/s, the bound.
    """
    links = [
        _L("S", "sw0", 1000),
        _L("sw0", "A", 600),
        _L("sw0", "sw1", 500),
        _L("sw1", "B", 300),
        _L("sw1", "C", 100),
    ]
    return Topology("stable-example", ["S", "A", "B", "C"], ["sw0", "sw1"], links)


def two_clusters() -> Topology:
    """Two clusters of 4 hosts joined by a slower wide-area link (source ``s`` in cluster A)::

          s   a1  a2  a3                   b1  b2  b3  b4
        1G \\ 1G| 1G| /100M            1G \\ 1G| 100M| /1G
              swA ===== 500 Mbit/s, 5 ms ===== swB

    Host links 1 Gbit/s with 50 us latency, except a3 and b3 at 100 Mbit/s (10x slower).
    Small enough for a quick ``topocast compare builtin:two-clusters --source s``.
    """
    hosts = ["s", "a1", "a2", "a3", "b1", "b2", "b3", "b4"]
    slow = {"a3", "b3"}
    links = [_L(h, "swA" if h in ("s", "a1", "a2", "a3") else "swB", 100 if h in slow else 1000, 50e-6) for h in hosts]
    links.append(_L("swA", "swB", 500, 5e-3, name="wan"))
    return Topology("two-clusters", hosts, ["swA", "swB"], links)


def _two_switch(name: str, slow_mbit: int, inter_mbit: int) -> Topology:
    hosts = ["s", "a1", "a2", "a3", "b1", "b2", "b3", "b4"]
    links = [_L(h, "swA", 200) for h in hosts[:4]]
    links += [_L(h, "swB", 200) for h in hosts[4:7]]
    links.append(_L("b4", "swB", slow_mbit))
    links.append(_L("swA", "swB", inter_mbit))
    return Topology(name, hosts, ["swA", "swB"], links)


def hetero_2switch() -> Topology:
    """Two switches, one slow host and a slow inter-switch link (Mbit/s)::

          s  a1  a2  a3               b1  b2  b3  b4
        200\\ 200| 200| /200       200\\ 200| 200| /10
               swA ------- 40 ------- swB

    Small enough to emulate on one machine (total well under a few hundred Mbit/s per link).
    """
    return _two_switch("hetero-2switch", 10, 40)


def uniform_2switch() -> Topology:
    """``hetero-2switch`` with every link at 200 Mbit/s (the homogeneous control case)."""
    return _two_switch("uniform-2switch", 200, 200)


def fat_tree_k4() -> Topology:
    """A 4-ary fat-tree, 16 hosts, 20 switches, every link 1 Gbit/s (see ``generators.fat_tree``)."""
    from .generators import fat_tree

    return fat_tree(4, bandwidth="1Gbps", name="fat-tree-k4")


def multi_cluster() -> Topology:
    """The Stable Broadcast study's setting at 100 hosts: 10 clusters, links 100 or 1000 Mbit/s.

    ``multi_cluster_tree(100, n_clusters=10, bandwidth="mixed", seed=1)``; source ``h00``.
    """
    from .generators import multi_cluster_tree

    return multi_cluster_tree(100, n_clusters=10, bandwidth="mixed", seed=1, name="multi-cluster")


def multi_cluster_asym() -> Topology:
    """As ``multi-cluster`` but uniform 100-1000 Mbit/s drawn per direction (asymmetric)."""
    from .generators import multi_cluster_tree

    return multi_cluster_tree(
        100, n_clusters=10, bandwidth="uniform-100-1000", asymmetric=True, seed=1, name="multi-cluster-asym"
    )


def grid_long_fast() -> Topology:
    """GridMPI's long-and-fast setting: 2 x 8 hosts, 1 Gbit/s NICs, 10 Gbit/s WAN with 10 ms."""
    from .generators import two_cluster_grid

    return two_cluster_grid(8, nic="1Gbps", wan="10Gbps", wan_latency="10ms", name="grid-long-fast")


def redistribution_2x8() -> Topology:
    """The redistribution experiment's platform: 2 x 8 hosts, 100 Mbit/s NICs, 400 Mbit/s backbone (k = 4)::

          a0 ... a7                          b0 ... b7
        100 \\ ... / 100                 100 \\ ... / 100
              swA ====== backbone 400 ====== swB

    Senders ``a0..a7``, receivers ``b0..b7`` (the names ``topocast redistribute --pattern``
    generates); the backbone carries k = 400 / 100 = 4 transfers without contention
    (Jeannot & Wagner, AINA 2006, scaled to an emulated network on one machine).
    """
    hosts = [f"a{i}" for i in range(8)] + [f"b{i}" for i in range(8)]
    links = [_L(h, "swA" if h[0] == "a" else "swB", 100) for h in hosts]
    links.append(_L("swA", "swB", 400, name="backbone"))
    return Topology("redistribution-2x8", hosts, ["swA", "swB"], links)


BUILTINS: dict[str, Callable[[], Topology]] = {
    "stable-example": stable_example,
    "two-clusters": two_clusters,
    "hetero-2switch": hetero_2switch,
    "uniform-2switch": uniform_2switch,
    "fat-tree-k4": fat_tree_k4,
    "multi-cluster": multi_cluster,
    "multi-cluster-asym": multi_cluster_asym,
    "grid-long-fast": grid_long_fast,
    "redistribution-2x8": redistribution_2x8,
}


def builtin_names() -> list[str]:
    """Names accepted by ``builtin:NAME``."""
    return list(BUILTINS)


def builtin_summary(name: str) -> str:
    """First line of the example's docstring."""
    doc = " ".join((BUILTINS[name].__doc__ or "").split("\n\n")[0].split())
    return doc.rstrip(":").replace("``", "")


def builtin_topology(name: str) -> Topology:
    """The built-in topology ``name`` (a fresh object each call)."""
    fn = BUILTINS.get(name)
    if fn is None:
        raise TopologyError(
            f"unknown built-in topology {name!r} (expected one of: {', '.join(BUILTINS)})",
            source=f"builtin:{name}",
        )
    t = fn()
    return t.replace(source=f"builtin:{name}")
