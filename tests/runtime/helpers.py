"""Small topologies and hand-made plans for runtime and testbed tests."""

from topocast.plan import Plan, Transfer
from topocast.topology.model import PhysicalLink, Topology

MBIT = 1e6 / 8


def two_switch(slow=10, cross=40, fast=200, name="hetero-2switch"):
    """Switch A: s, a1..a3 at ``fast``; switch B: b1..b3 at ``fast``, b4 at ``slow``; A-B at ``cross`` (Mbit/s)."""
    hosts = ["s", "a1", "a2", "a3", "b1", "b2", "b3", "b4"]
    links = [PhysicalLink(h, "swA", fast * MBIT) for h in hosts[:4]]
    links += [PhysicalLink(h, "swB", fast * MBIT) for h in hosts[4:7]]
    links += [PhysicalLink("b4", "swB", slow * MBIT), PhysicalLink("swA", "swB", cross * MBIT)]
    return Topology(name, hosts, ["swA", "swB"], links)


def chain_plan(size, rate_cap=None):
    """s -> a (capped), a -> b and a -> c pipelined, c -> d pipelined."""
    t = [
        Transfer.of("s", "a", 0, size, rate_cap=rate_cap),
        Transfer.of("a", "b", 0, size, pipelined=True),
        Transfer.of("a", "c", 0, size, pipelined=True),
        Transfer.of("c", "d", 0, size, pipelined=True),
    ]
    return Plan.broadcast("s", size, ["a", "b", "c", "d"], t, planner="chain")
