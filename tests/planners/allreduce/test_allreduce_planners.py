"""Allreduce planners: contributions checked on built-in and generated topologies."""

import pytest

from topocast.errors import PlanError
from topocast.plan import Allreduce, Broadcast
from topocast.plan.check import check_plan
from topocast.planners import available_planners, get_planner
from topocast.sim import simulate
from topocast.topology import Topology, load_topology
from topocast.topology.generators import multi_cluster_tree, two_cluster_grid
from topocast.topology.model import PhysicalLink

GENERIC = ["ring", "recursive_doubling", "rabenseifner", "two_tier"]


def switch(p, bw=125e6, latency=25e-6):
    hosts = [f"h{i}" for i in range(p)]
    return Topology(f"switch-{p}", hosts, ["sw"], [PhysicalLink(h, "sw", bw, latency) for h in hosts])


TOPOLOGIES = (
    [
        load_topology(f"builtin:{b}")
        for b in ("stable-example", "two-clusters", "hetero-2switch", "fat-tree-k4", "grid-long-fast")
    ]
    + [switch(p) for p in (1, 2, 3, 5, 6, 7, 8, 12, 16)]
    + [two_cluster_grid(n) for n in (1, 3, 5)]
    + [multi_cluster_tree(23, n_clusters=3, bandwidth="mixed", seed=2)]
)


@pytest.mark.parametrize("topo", TOPOLOGIES, ids=lambda t: t.name)
@pytest.mark.parametrize("name", GENERIC)
def test_allreduce_planner_passes_contribution_check(name, topo):
    for size in (1, 7, 1000, 999_999):
        plan = get_planner("allreduce", name)(topo, Allreduce(size))
        assert plan.collective == "allreduce"
        assert set(plan.wanted) == set(topo.hosts)
        check_plan(plan, topo)


@pytest.mark.parametrize(
    "topo",
    [t for t in TOPOLOGIES if t.name.startswith("two-cluster") or t.name in ("two-clusters", "grid-long-fast")],
    ids=lambda t: t.name,
)
def test_gridmpi_allreduce_on_two_clusters(topo):
    for size in (1, 7, 1000, 999_999):
        for conns in (None, 1, 2):
            plan = get_planner("allreduce", "gridmpi")(topo, Allreduce(size), connections=conns)
            check_plan(plan, topo)


def test_gridmpi_allreduce_unequal_clusters():
    topo = switch(7)
    for n in (1, 2, 3):
        plan = get_planner("allreduce", "gridmpi")(
            topo, Allreduce(10_000), clusters="h0,h1,h2;h3,h4,h5,h6", connections=n
        )
        check_plan(plan, topo)
        assert plan.notes["connections"] == n


def test_subset_of_hosts_and_broadcast_request():
    topo = switch(8)
    plan = get_planner("allreduce", "rabenseifner")(topo, Allreduce(1000, hosts=("h6", "h1", "h3")))
    check_plan(plan, topo)
    assert set(plan.wanted) == {"h1", "h3", "h6"}
    plan = get_planner("allreduce", "ring")(topo, Broadcast("h2", 1000, destinations=("h4", "h5")))
    check_plan(plan, topo)
    assert set(plan.wanted) == {"h2", "h4", "h5"}


def test_allreduce_planners_order_everything_with_after():
    topo = two_cluster_grid(3)
    for info in available_planners("allreduce", include_selectors=False):
        plan = info(topo, Allreduce(6000))
        assert not any(t.pipelined for t in plan.transfers)
        first = [i for i, t in enumerate(plan.transfers) if not t.after]
        # only the very first operation of each host may be free
        assert len({plan.transfers[i].src for i in first}) == len(first)


def test_reduction_cost_is_charged():
    hosts = [f"h{i}" for i in range(4)]
    topo = Topology(
        "g", hosts, ["sw"], [PhysicalLink(h, "sw", 1e9) for h in hosts], reduction_cost={h: 1e-9 for h in hosts}
    )
    base = topo.replace(reduction_cost={})
    plan = get_planner("allreduce", "recursive_doubling")(topo, Allreduce(10**6))
    with_gamma = simulate(plan, topo).makespan
    without = simulate(plan, base).makespan
    assert with_gamma == pytest.approx(without + 2 * 10**6 * 1e-9, rel=1e-9)


def test_gridmpi_allreduce_one_and_three_clusters():
    topo = switch(6)
    plan = get_planner("allreduce", "gridmpi")(topo, Allreduce(6000))
    check_plan(plan, topo)
    assert plan.notes["connections"] == 0
    topo = multi_cluster_tree(23, n_clusters=3, bandwidth="mixed", seed=2)
    groups = "h00,h01,h02,h03,h04,h05,h06;h07,h08,h09,h10,h11,h12,h13,h14;h15,h16,h17,h18,h19,h20,h21,h22"
    for n in (1, 3):
        plan = get_planner("allreduce", "gridmpi")(topo, Allreduce(99_999), clusters=groups, connections=n)
        check_plan(plan, topo)


def test_auto_allreduce_records_choice_runner_up_and_skips(monkeypatch):
    from topocast.planners import registry

    def broken(topology, request):
        raise PlanError("cannot plan this", element="test")

    info = registry.PlannerInfo("allreduce", "broken_for_test", broken, "test", "test")
    monkeypatch.setitem(registry.REGISTERED, ("allreduce", "broken_for_test"), info)
    topo = switch(8)
    plan = get_planner("allreduce", "auto")(topo, Allreduce(1 << 20))
    check_plan(plan, topo)
    notes = plan.notes
    assert plan.planner == "auto"
    assert notes["choice"] in notes["scores"] and notes["runner_up"] in notes["scores"]
    assert "cannot plan this" in notes["skipped"]["broken_for_test"]
    best = min(notes["scores"].values(), key=lambda s: s["makespan"])["makespan"]
    assert notes["scores"][notes["choice"]]["makespan"] == best
    assert notes["scores"][notes["runner_up"]]["makespan"] >= best
