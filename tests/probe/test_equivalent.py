"""probe.equivalent: the bandwidth-equivalent form of a tree (what host-to-host transfers can
tell apart) and host groups."""

from __future__ import annotations

from topocast.probe.equivalent import bandwidth_equivalent, host_groups
from topocast.topology.io import loads

MBIT = 125_000


def topo(links: str, hosts: str, switches: str):
    return loads(f"name: t\nhosts: [{hosts}]\nswitches: [{switches}]\nlinks:\n{links}", "t.yaml")


def test_a_link_that_can_never_be_full_is_contracted():
    # two hosts of 100 Mbit/s on each side: at most 200 Mbit/s cross s1-s2 (300: never full)
    t = topo(
        "".join(
            f"  - {{a: {h}, b: {s}, bandwidth: 100Mbps}}\n"
            for h, s in (("a", "s1"), ("b", "s1"), ("c", "s2"), ("d", "s2"))
        )
        + "  - {a: s1, b: s2, bandwidth: 300Mbps}\n",
        "a, b, c, d",
        "s1, s2",
    )
    eq = bandwidth_equivalent(t)
    assert len(eq.switches) == 1
    assert host_groups(eq) == {frozenset("abcd")}
    assert host_groups(t) == {frozenset("ab"), frozenset("cd")}


def test_a_link_full_in_one_direction_stays():
    t = topo(
        "".join(
            f"  - {{a: {h}, b: {s}, bandwidth: 100Mbps}}\n"
            for h, s in (("a", "s1"), ("b", "s1"), ("c", "s2"), ("d", "s2"))
        )
        + "  - {a: s1, b: s2, bandwidth: 300Mbps, bandwidth_ba: 150Mbps}\n",
        "a, b, c, d",
        "s1, s2",
    )
    assert host_groups(bandwidth_equivalent(t)) == {frozenset("ab"), frozenset("cd")}


def test_chains_and_empty_switches_go():
    # a - s1 - s2 - {b, c}, and an empty switch s3 off s1: a-s2 is one link of the smaller rates
    t = topo(
        "  - {a: a, b: s1, bandwidth: 100Mbps}\n"
        "  - {a: s1, b: s2, bandwidth: 40Mbps, bandwidth_ba: 60Mbps}\n"
        "  - {a: s2, b: b, bandwidth: 100Mbps}\n"
        "  - {a: s2, b: c, bandwidth: 100Mbps}\n"
        "  - {a: s1, b: s3, bandwidth: 10Mbps}\n",
        "a, b, c",
        "s1, s2, s3",
    )
    eq = bandwidth_equivalent(t)
    assert list(eq.switches) == ["s2"]
    (link,) = [pl for pl in eq.physical_links if "a" in (pl.a, pl.b)]
    assert {link.a, link.b} == {"a", "s2"}
    assert eq.capacity("a", "s2") == 40 * MBIT and eq.capacity("s2", "a") == 60 * MBIT
