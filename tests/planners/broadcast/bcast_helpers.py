"""Shared helpers for the broadcast planner tests (hand-built topologies)."""

from topocast.topology.model import PhysicalLink, Topology


def star(name, source_bw, host_bws, *, asym=None):
    """Source S and hosts H0.. under one switch X (bandwidths in bytes/s)."""
    hosts = ["S"] + [f"H{i}" for i in range(len(host_bws))]
    links = [PhysicalLink("S", "X", source_bw)]
    for i, bw in enumerate(host_bws):
        back = None if asym is None else asym[i]
        links.append(PhysicalLink(f"H{i}", "X", bw, bandwidth_ba=back))
    return Topology(name, hosts, ["X"], links)


def triangle():
    """S, A, B pairwise joined by 10 B/s links: a general graph where two spanning pipelines exist."""
    return Topology(
        "triangle",
        ["S", "A", "B"],
        [],
        [PhysicalLink("S", "A", 10.0), PhysicalLink("S", "B", 10.0), PhysicalLink("A", "B", 10.0)],
    )


def ring_with_switches():
    """A small general graph: hosts on two switches joined by two parallel switch paths."""
    links = [
        PhysicalLink("s", "x1", 100.0),
        PhysicalLink("a", "x1", 60.0),
        PhysicalLink("b", "x2", 80.0),
        PhysicalLink("c", "x2", 30.0),
        PhysicalLink("x1", "y1", 40.0),
        PhysicalLink("y1", "x2", 40.0),
        PhysicalLink("x1", "y2", 50.0, bandwidth_ba=20.0),
        PhysicalLink("y2", "x2", 50.0),
    ]
    return Topology("ring", ["s", "a", "b", "c"], ["x1", "x2", "y1", "y2"], links)
