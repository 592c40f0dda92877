"""``probe --verify`` on the emulated network: the file says a host's downlink carries
five times what it does; a few seconds of a plan find it, a measurement alone corrects it
(root only)."""

import pytest

from topocast.probe.verify import verify_network
from topocast.runtime.adapt import with_link_rates
from topocast.runtime.launchers import TestbedLauncher
from topocast.topology.model import PhysicalLink, Topology

MBIT = 1e6 / 8
GOODPUT = 0.955


def test_a_link_the_file_overstates_is_corrected_by_the_check(testbed_factory):
    hosts = ["s", "r1", "r2", "r3"]
    truth = Topology("star4", hosts, ["sw"], [PhysicalLink(h, "sw", 40 * MBIT) for h in hosts])
    down = truth.links.index(next(lk for lk in truth.links if (lk.src, lk.dst) == ("sw", "r1")))
    truth = with_link_rates(truth, {down: 8 * MBIT})
    believed = with_link_rates(truth, {down: 40 * MBIT})
    st = testbed_factory(truth)
    corrected, summary = verify_network(
        believed,
        "s",
        TestbedLauncher(st),
        lambda: TestbedLauncher(st),
        seconds=4.0,
        goodput=GOODPUT,
        fair_uplink=True,
    )
    assert summary["slower_than_predicted"] >= 1, summary
    fixed = {e["link"]: e for e in summary["links"] if e["outcome"] == "corrected"}
    assert set(fixed) == {"sw->r1"}, summary
    assert corrected.links[down].bandwidth == pytest.approx(8 * MBIT, rel=0.15), summary
    assert corrected.measured["verified"]["links"] == summary["links"]
