"""A GGP redistribution plan performed on a tiny emulated two-cluster network (root only)."""

import math

import numpy as np

from topocast.plan import Redistribution
from topocast.planners.redistribute.ggp import ggp
from topocast.redistribute import two_cluster_topology
from topocast.runtime import TestbedLauncher, perform

NIC = 100e6 / 8  # 100 Mbit/s


def test_ggp_plan_runs_on_the_testbed(testbed_factory):
    from topocast.testbed import counters

    # 2 x 2 hosts, backbone = one NIC (k = 1): every step is a single transfer behind a barrier
    topo = two_cluster_topology(2, 2, nic=NIC, backbone=NIC)
    m = np.array([[400_000, 250_000], [0, 600_000]])
    req = Redistribution(m, ("a0", "a1"), ("b0", "b1"))
    plan = ggp(topo, req, barrier="full")
    assert plan.notes["k"] == 1 and plan.notes["steps"] >= 3
    st = testbed_factory(topo)
    before = counters(st)
    out = perform(plan, topo, launcher=TestbedLauncher(st), chunk_size=64 * 1024, timeout=60)
    after = counters(st)

    # every byte arrived (each receiver's digest over its blocks was checked) and crossed the links
    assert out.failed == {} and out.warnings == []
    for h, want in (("b0", 400_000), ("b1", 850_000)):
        assert after[h]["e0"]["rx"] - before[h]["e0"]["rx"] >= want

    # the measured result has the shape of a prediction
    r = out.result
    assert r.kind == "measured" and set(r.per_host) == {"b0", "b1"}
    assert all(x.completed and 0 < x.time < math.inf for x in r.per_host.values())
    assert r.makespan == max(x.time for x in r.per_host.values())
    assert len(r.transfer_times) == len(plan.transfers)
    assert all(0 <= a <= b for a, b in r.transfer_times)
    # cannot beat the backbone (1.25 MB at 100 Mbit/s) but for the emulated link's token
    # bucket: after each barrier the idle link may send HTB_BURST seconds of its rate at once
    # (three steps, three refills); generous upper limit against a busy CPU
    from topocast.testbed.net import HTB_BURST

    assert 1_250_000 / NIC - plan.notes["steps"] * HTB_BURST < r.makespan < 20
    # the barriers held: no byte of step s + 1 arrived before step s was complete
    step = [int(t.label.split()[1]) for t in plan.transfers]
    for s in range(1, max(step) + 1):
        prev_end = max(b for (a, b), x in zip(r.transfer_times, step) if x == s - 1)
        start = min(a for (a, b), x in zip(r.transfer_times, step) if x == s)
        assert start >= prev_end, (s, start, prev_end)
        # ... and no sender of step s + 1 was released before (relayed completions)
        ready = min(out.send_times[i][0] for i, x in enumerate(step) if x == s)
        assert ready >= prev_end, (s, ready, prev_end)
    assert set(out.send_times) == set(range(len(plan.transfers)))
