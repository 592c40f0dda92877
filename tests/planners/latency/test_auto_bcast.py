"""``auto`` broadcast: tries every registered planner, keeps the best, records why."""

import pytest

from topocast.plan import Broadcast
from topocast.plan.check import check_plan
from topocast.planners import available_planners, get_planner
from topocast.planners.broadcast.auto import TIE
from topocast.sim import simulate
from topocast.topology import load_topology
from topocast.topology.generators import two_cluster_grid


def test_auto_picks_the_smallest_predicted_makespan():
    topo = two_cluster_grid(4, wan_latency="10ms")
    req = Broadcast("a0", 1 << 20)
    plan = get_planner("broadcast", "auto")(topo, req)
    check_plan(plan, topo)
    notes = plan.notes
    assert plan.planner == "auto" and notes["criterion"] == "makespan"
    names = {i.name for i in available_planners("broadcast", include_selectors=False)}
    assert set(notes["scores"]) | set(notes["skipped"]) == names
    best = min(s["makespan"] for s in notes["scores"].values())
    assert notes["scores"][notes["choice"]]["makespan"] <= best * (1 + TIE)
    assert notes["runner_up"] != notes["choice"]
    assert simulate(plan, topo).makespan == pytest.approx(notes["scores"][notes["choice"]]["makespan"], rel=1e-12)


def test_auto_breaks_makespan_ties_by_aggregate_bandwidth():
    """On hetero-2switch the 10 Mbit/s host sets every plan's makespan; the tie must go to the
    plan with the largest aggregate bandwidth, not to the first name."""
    topo = load_topology("builtin:hetero-2switch")
    plan = get_planner("broadcast", "auto")(topo, Broadcast(topo.hosts[0], 10**8))
    scores = plan.notes["scores"]
    best = min(s["makespan"] for s in scores.values())
    tied = {n: s for n, s in scores.items() if s["makespan"] <= best * (1 + TIE)}
    assert len(tied) > 1  # the situation this test is about
    chosen = scores[plan.notes["choice"]]
    assert chosen["aggregate_bandwidth"] == max(s["aggregate_bandwidth"] for s in tied.values())
    assert chosen["aggregate_bandwidth"] > min(s["aggregate_bandwidth"] for s in tied.values())


def test_auto_on_two_clusters_prefers_full_bandwidth_over_a_hop_latency():
    """builtin:two-clusters: dijkstra ends 0.5 ms (of 80 s) before stable but has 40% less
    aggregate bandwidth; the tie rule must pick a plan at the bound."""
    from topocast import broadcast_bounds

    topo = load_topology("builtin:two-clusters")
    plan = get_planner("broadcast", "auto")(topo, Broadcast("s", 10**9))
    chosen = plan.notes["scores"][plan.notes["choice"]]
    assert chosen["aggregate_bandwidth"] == pytest.approx(broadcast_bounds(topo, "s").aggregate_bandwidth, rel=1e-3)


def test_auto_by_aggregate_bandwidth_and_skipped_reasons(monkeypatch):
    from topocast.errors import PlanError
    from topocast.planners import registry

    def broken(topology, request):
        raise PlanError("needs two clusters (test)", element="test")

    monkeypatch.setitem(
        registry.REGISTERED,
        ("broadcast", "broken_for_test"),
        registry.PlannerInfo("broadcast", "broken_for_test", broken, "test", "test"),
    )
    topo = load_topology("builtin:hetero-2switch")
    plan = get_planner("broadcast", "auto")(topo, Broadcast(topo.hosts[0], 10**6), by="aggregate_bandwidth")
    notes = plan.notes
    best = max(s["aggregate_bandwidth"] for s in notes["scores"].values())
    assert notes["scores"][notes["choice"]]["aggregate_bandwidth"] == best
    assert "two clusters" in notes["skipped"]["broken_for_test"]


def test_auto_candidates_option():
    topo = two_cluster_grid(2)
    plan = get_planner("broadcast", "auto")(topo, Broadcast("a0", 1000), candidates="binomial,essp")
    assert set(plan.notes["scores"]) == {"binomial", "essp"}
