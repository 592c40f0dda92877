"""Predictions, the schedule-or-not decision, and agreement with the fluid simulator."""

import numpy as np
import pytest

from topocast.experiments.redistribute import agreement_experiment, ratio_experiment
from topocast.plan import Redistribution
from topocast.plan.check import check_plan
from topocast.planners.redistribute.decide import decide, predict
from topocast.redistribute import fig2_pattern, random_pattern, two_cluster_topology
from topocast.topology.generators import two_cluster_grid

NIC = 12.5e6


def _fig2_topo(r):
    return two_cluster_topology(3, 3, nic=NIC, k=2, senders=r.senders, receivers=r.receivers)


def test_fig2_predictions_and_simulator():
    r = fig2_pattern(unit=10**7)  # 10 MB blocks at 12.5 MB/s: 0.8 s per unit
    topo = _fig2_topo(r)
    preds, info = predict(topo, r)
    by = {p.approach: p for p in preds}
    assert info["bounds"]["eta"] == pytest.approx(1.6)
    assert by["brute_force"].model == pytest.approx(2.0)  # 2.5 units
    assert by["brute_force"].simulated == pytest.approx(2.0)
    for a in ("ggp", "oggp"):
        assert by[a].model == pytest.approx(1.6) and by[a].simulated == pytest.approx(1.6)
        check_plan(by[a].plan, topo)


@pytest.mark.parametrize("k", [2, 3, 4, 8])
def test_fig2_generalised_to_k(k):
    """k unit messages and one of 2 units on disjoint pairs: brute force 2 + 1/k, schedules 2."""
    r = fig2_pattern(unit=10**7, k=k)
    assert r.k == k and r.matrix.shape == (k + 1, k + 1) and int(r.matrix.sum()) == (k + 2) * 10**7
    topo = two_cluster_topology(k + 1, k + 1, nic=NIC, k=k, senders=r.senders, receivers=r.receivers)
    by = {p.approach: p for p in predict(topo, r)[0]}
    unit = 10**7 / NIC
    assert by["brute_force"].model == pytest.approx((2 + 1 / k) * unit)
    assert by["brute_force"].simulated == pytest.approx((2 + 1 / k) * unit)
    for a in ("ggp", "oggp"):
        assert by[a].model == pytest.approx(2 * unit) and by[a].simulated == pytest.approx(2 * unit)


def test_fig2_default_is_the_paper_figure():
    r = fig2_pattern(unit=5)
    assert r.k == 2 and r.senders == ("a1", "a2", "a3") and r.receivers == ("b1", "b2", "b3")
    assert np.array_equal(r.matrix, np.diag([5, 5, 10]))


def test_decide_gain_and_beta():
    r = fig2_pattern(unit=10**7)
    d = decide(_fig2_topo(r), r)
    assert d.schedule and d.gain == pytest.approx(0.2) and d.best in ("ggp", "oggp")
    r2 = r.with_(beta=0.5)  # two set-ups of 0.5 s cost more than the 0.4 s gained
    d2 = decide(_fig2_topo(r2), r2)
    assert not d2.schedule and d2.best == "brute_force" and d2.gain < 0
    d3 = decide(_fig2_topo(r), r, basis="simulated")
    assert d3.basis == "simulated" and d3.gain == pytest.approx(0.2)


def test_single_message_nothing_to_gain():
    r = Redistribution(np.array([[10**7, 0], [0, 0]]), ("a0", "a1"), ("b0", "b1"))
    d = decide(two_cluster_topology(2, 2, nic=NIC, k=1), r)
    assert d.gain == pytest.approx(0.0) and not d.schedule


def test_k_from_topology_generator():
    topo = two_cluster_grid(10, nic="100Mbps", wan="500Mbps", wan_latency="0s", lan_latency="0s")
    r = random_pattern(10, 10, 20, seed=2)
    r = r.with_(senders=topo.hosts[:10], receivers=topo.hosts[10:])
    preds, info = predict(topo, r)
    assert info["k"] == 5 and info["k_from"] == "topology"
    bf = next(p for p in preds if p.approach == "brute_force")
    assert bf.simulated == pytest.approx(bf.model, rel=1e-9)


def test_brute_force_estimate_agrees_with_simulator():
    res = agreement_experiment(6, seed=4)
    for key in ("brute_force_sim_minus_estimate_rel", "schedule_sim_minus_model_rel"):
        assert abs(res[key]["min"]) < 1e-9 and abs(res[key]["max"]) < 1e-9
    res = agreement_experiment(3, seed=5, beta=0.05)
    assert abs(res["schedule_sim_minus_model_rel"]["max"]) < 1e-9


def test_ratio_experiment_small():
    res = ratio_experiment(8, seed=3, betas=(0.0, 0.2))
    for beta, d in res["beta"].items():
        for name in ("ggp", "oggp"):
            assert d[f"{name}_ratio"]["max"] <= 8 / 3
            assert d[f"{name}_ratio"]["min"] >= 1 - 1e-9
    assert res["beta"]["0.0"]["ggp_ratio"]["max"] == pytest.approx(1.0, abs=1e-6)


def test_count_planning_adds_the_planner_time():
    r = fig2_pattern(unit=10**7)
    d = decide(_fig2_topo(r), r, count_planning=True)
    best = next(p for p in d.predictions if p.approach == d.best)
    assert d.scheduled_time == pytest.approx(1.6 + best.plan_seconds)


def test_heterogeneous_nics_brute_force_matches_simulator():
    """[I] extension: per-host NIC capacities in the fair-sharing estimate (fluid simulator agrees)."""
    from topocast.topology.model import PhysicalLink, Topology

    a, b = ("a0", "a1", "a2"), ("b0", "b1", "b2")
    nics = {"a0": 125e6, "a1": 125e6, "a2": 12.5e6, "b0": 125e6, "b1": 12.5e6, "b2": 125e6}
    links = [PhysicalLink(h, "swA" if h[0] == "a" else "swB", bw) for h, bw in nics.items()]
    links.append(PhysicalLink("swA", "swB", 62.5e6))
    topo = Topology("hetero", a + b, ("swA", "swB"), links)
    rng = np.random.default_rng(0)
    for _ in range(5):
        m = rng.integers(0, 50, (3, 3)) * 10**6
        r = Redistribution(m, a, b)
        preds, info = predict(topo, r, approaches=("brute_force",))
        assert not info["homogeneous"] and "note" in info
        bf = preds[0]
        assert bf.simulated == pytest.approx(bf.model, rel=1e-9)
        assert bf.lower_bound <= bf.model * (1 + 1e-12)
