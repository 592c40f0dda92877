"""Checking a topology file against the network (``probe.verify``) on the fake network:
a plan's transfers run on the true network, the watch names the link that disagrees, and a
measurement alone corrects it."""

import pytest

from topocast.probe.verify import compared, record, remeasure, suspect_links, verify_plan, watcher
from topocast.runtime.adapt import with_link_rates
from topocast.topology.generators import random_network

from .fake_network import FakeNetwork, watch_on_truth

GOODPUT = 0.955


def _busiest_link(plan, topo):
    """The directed link the most transfers of ``plan`` cross."""
    count: dict = {}
    for t in plan.transfers:
        for lk in topo.route(t.src, t.dst):
            count[lk] = count.get(lk, 0) + 1
    return max(count, key=lambda lk: (count[lk], -lk))


def _check(believed, truth, seed, seconds=4.0):
    source = believed.hosts[0]
    plan = verify_plan(believed, source, seconds, GOODPUT)
    watched = watcher(plan, believed, GOODPUT, 64 << 10)
    watch_on_truth(watched, truth, seconds, goodput=GOODPUT, seed=seed)
    suspects = suspect_links(watched)
    fake = FakeNetwork(truth, goodput=GOODPUT, noise=0.03, seed=seed)
    corrected, entries = remeasure(believed, suspects, fake.bulk, GOODPUT)
    return corrected, entries, watched


@pytest.mark.parametrize("seed", [3, 11, 29])
def test_a_link_the_file_overstates_is_found_and_corrected(seed):
    believed = random_network(seed, min_hosts=8, max_hosts=12)
    plan = verify_plan(believed, believed.hosts[0], 4.0, GOODPUT)
    wrong = _busiest_link(plan, believed)  # the file says 4x what this link carries
    truth = with_link_rates(believed, {wrong: believed.links[wrong].bandwidth / 4})
    corrected, entries, watched = _check(believed, truth, seed)
    assert compared(watched)["slower_than_predicted"] >= 1
    got = corrected.links[wrong].bandwidth
    assert got == pytest.approx(truth.links[wrong].bandwidth, rel=0.1), entries
    for lk, link in enumerate(corrected.links):  # nothing else moved away from the truth
        if link.bandwidth != believed.links[lk].bandwidth:
            assert link.bandwidth == pytest.approx(truth.links[lk].bandwidth, rel=0.1), entries


@pytest.mark.parametrize("seed", [5, 17])
def test_a_right_file_is_left_alone(seed):
    truth = random_network(seed, min_hosts=8, max_hosts=12)
    corrected, entries, watched = _check(truth, truth, seed)
    assert entries == [] and corrected is truth
    assert compared(watched)["slower_than_predicted"] == 0


def test_what_was_checked_goes_into_measured_and_reads_back(tmp_path):
    from topocast.topology.io import load_file, save_file

    believed = random_network(3, min_hosts=8, max_hosts=12)
    plan = verify_plan(believed, believed.hosts[0], 4.0, GOODPUT)
    wrong = _busiest_link(plan, believed)
    truth = with_link_rates(believed, {wrong: believed.links[wrong].bandwidth / 4})
    corrected, entries, watched = _check(believed, truth, 3)
    topo = record(corrected, {"seconds": 4.0, **compared(watched), "links": entries})
    save_file(topo, tmp_path / "net.yaml")
    back = load_file(tmp_path / "net.yaml")
    assert back.measured["verified"]["links"][0]["outcome"] == "corrected"
    assert any(n.startswith("verified: ") for n in back.notes)
    assert back.links[wrong].bandwidth == pytest.approx(corrected.links[wrong].bandwidth, rel=1e-3)
