"""Every latency/grid broadcast planner passes check_plan on built-in and generated
topologies, for power-of-two and other host counts."""

import pytest

from topocast.plan import Broadcast
from topocast.plan.check import check_plan
from topocast.planners import get_planner
from topocast.topology import Topology, load_topology
from topocast.topology.generators import multi_cluster_tree, two_cluster_grid
from topocast.topology.model import PhysicalLink

PLANNERS = [
    "binomial",
    "essp",
    "scatter_allgather_ring",
    "scatter_allgather_rdb",
    "far_first",
    "topology_aware",
    "speed_aware",
    "mpich",
]
TWO_CLUSTER = ["gridmpi"]
BUILTINS = ["stable-example", "two-clusters", "hetero-2switch", "uniform-2switch", "fat-tree-k4", "grid-long-fast"]


def switch(p, bw=125e6, latency=25e-6):
    hosts = [f"h{i}" for i in range(p)]
    return Topology(f"switch-{p}", hosts, ["sw"], [PhysicalLink(h, "sw", bw, latency) for h in hosts])


def generated():
    for p in (1, 2, 3, 5, 6, 7, 8, 12, 16):
        yield switch(p)
    for n in (1, 3, 4):
        yield two_cluster_grid(n)
    yield multi_cluster_tree(23, n_clusters=3, bandwidth="mixed", seed=2)


TOPOLOGIES = [load_topology(f"builtin:{b}") for b in BUILTINS] + list(generated())


@pytest.mark.parametrize("topo", TOPOLOGIES, ids=lambda t: t.name)
@pytest.mark.parametrize("name", PLANNERS)
def test_planner_passes_check_plan(name, topo):
    for size in (1, 1000, 777_777):
        for source in {topo.hosts[0], topo.hosts[-1]}:
            if len(topo.hosts) == 1:
                continue
            plan = get_planner("broadcast", name)(topo, Broadcast(source, size))
            check_plan(plan, topo)
            assert plan.planner == name


@pytest.mark.parametrize(
    "topo",
    [t for t in TOPOLOGIES if t.name.startswith("two-cluster") or t.name in ("two-clusters", "grid-long-fast")],
    ids=lambda t: t.name,
)
def test_gridmpi_passes_check_plan_on_two_clusters(topo):
    for size in (1, 1000, 777_777):
        for source in (topo.hosts[0], topo.hosts[-1]):
            plan = get_planner("broadcast", "gridmpi")(topo, Broadcast(source, size))
            check_plan(plan, topo)


def test_gridmpi_on_one_cluster_is_van_de_geijn():
    topo = switch(8)
    plan = get_planner("broadcast", "gridmpi")(topo, Broadcast("h0", 8000))
    check_plan(plan, topo)
    assert plan.notes["connections"] == 0 and plan.notes["connections_rule"] == "single cluster"
    vdg = get_planner("broadcast", "scatter_allgather_ring")(topo, Broadcast("h0", 8000))
    assert [(t.src, t.dst, t.ranges) for t in plan.transfers] == [(t.src, t.dst, t.ranges) for t in vdg.transfers]


def test_gridmpi_three_clusters():
    topo = multi_cluster_tree(23, n_clusters=3, bandwidth="mixed", seed=2)
    groups = "h00,h01,h02,h03,h04,h05,h06;h07,h08,h09,h10,h11,h12,h13,h14;h15,h16,h17,h18,h19,h20,h21,h22"
    for size in (1, 1000, 10**6):
        plan = get_planner("broadcast", "gridmpi")(topo, Broadcast("h08", size), clusters=groups, connections=2)
        check_plan(plan, topo)
        assert plan.notes["connections"] == 2 and len(plan.notes["clusters"]) == 3


def test_subset_of_destinations():
    topo = switch(9)
    req = Broadcast("h4", 5000, destinations=("h1", "h2", "h7", "h8", "h0"))
    for name in PLANNERS:
        plan = get_planner("broadcast", name)(topo, req)
        check_plan(plan, topo)
        assert set(plan.wanted) == {"h0", "h1", "h2", "h7", "h8"}
        assert {t.src for t in plan.transfers} | {t.dst for t in plan.transfers} <= {"h0", "h1", "h2", "h4", "h7", "h8"}


def test_binomial_tree_shape_is_mpich():
    """Relative rank r receives from r minus its lowest set bit; root serves 4, 2, 1 in order."""
    topo = switch(8)
    plan = get_planner("broadcast", "binomial")(topo, Broadcast("h3", 100))
    edges = [(t.src, t.dst) for t in plan.transfers]
    rel = lambda h: (int(h[1:]) - 3) % 8  # noqa: E731
    for s, d in edges:
        r = rel(d)
        assert rel(s) == r - (r & -r)
    root_sends = [rel(d) for s, d in edges if s == "h3"]
    assert root_sends == [4, 2, 1]
    # blocking sends: each send of the root waits for the previous one
    idx = [i for i, t in enumerate(plan.transfers) if t.src == "h3"]
    assert idx[0] in plan.transfers[idx[1]].after and idx[1] in plan.transfers[idx[2]].after


def test_mpich_selection_thresholds():
    from topocast.planners.broadcast.mpich import mpich_choice

    assert mpich_choice(12287, 16) == "binomial"
    assert mpich_choice(1 << 20, 7) == "binomial"
    assert mpich_choice(12288, 16) == "scatter_allgather_rdb"
    assert mpich_choice(524287, 16) == "scatter_allgather_rdb"
    assert mpich_choice(524287, 12) == "scatter_allgather_ring"
    assert mpich_choice(524288, 16) == "scatter_allgather_ring"
    plan = get_planner("broadcast", "mpich")(switch(16), Broadcast("h0", 100_000))
    assert plan.notes["choice"] == "scatter_allgather_rdb" and plan.planner == "mpich"


def test_speed_aware_puts_slow_hosts_at_leaves():
    hosts = [f"h{i}" for i in range(8)]
    bws = [2e9, 1e9, 1e9, 2e9, 1e9, 2e9, 1e9, 2e9]  # DDR 16 Gbps / SDR 8 Gbps
    topo = Topology("sdr-ddr", hosts, ["sw"], [PhysicalLink(h, "sw", b) for h, b in zip(hosts, bws)])
    plan = get_planner("broadcast", "speed_aware")(topo, Broadcast("h0", 1 << 20))
    check_plan(plan, topo)
    senders = {t.src for t in plan.transfers}
    assert senders <= {"h0", "h3", "h5", "h7"}  # only fast hosts forward
    rel = plan.notes["rank_order"]
    assert [rel[4], rel[2], rel[6]] == ["h3", "h5", "h7"]  # largest subtrees get the fast hosts


def test_topology_aware_crosses_each_switch_link_once_in_tree_mode():
    topo = load_topology("builtin:fat-tree-k4")
    plan = get_planner("broadcast", "topology_aware")(
        topo,
        Broadcast(
            topo.hosts[0],
            1000,
        ),
        mode="tree",
    )
    check_plan(plan, topo)
    groups = plan.notes["switch_groups"]
    leaders = {g[0] for g in groups.values()}
    where = {h: k for k, g in groups.items() for h in g}
    cross = [t for t in plan.transfers if where[t.src] != where[t.dst]]
    assert len(cross) == len(groups) - 1  # one message into every other switch
    assert all(t.src in leaders and t.dst in leaders for t in cross)


def test_cluster_detection_rule():
    from topocast.planners._collective import detect_clusters, parse_clusters, switch_groups

    topo = two_cluster_grid(3)
    assert detect_clusters(topo) == [["a0", "a1", "a2"], ["b0", "b1", "b2"]]
    # no latency difference, thinned up-link (100 Mbps between switches, 1 Gbps NICs)
    links = [PhysicalLink(h, "s1", 125e6) for h in ("x", "y")] + [PhysicalLink(h, "s2", 125e6) for h in ("z", "w")]
    links.append(PhysicalLink("s1", "s2", 12.5e6))
    topo2 = Topology("thin", ["x", "y", "z", "w"], ["s1", "s2"], links)
    assert detect_clusters(topo2) == [["x", "y"], ["z", "w"]]
    assert detect_clusters(switch(4)) == [["h0", "h1", "h2", "h3"]]
    assert switch_groups(topo2) == {"s1": ["x", "y"], "s2": ["z", "w"]}
    assert parse_clusters("w,z;y,x", ["x", "y", "z", "w"]) == [["z", "w"], ["x", "y"]]
    with pytest.raises(Exception, match="no cluster"):
        parse_clusters("x,y", ["x", "y", "z"])


def test_explicit_clusters_option():
    topo = switch(6)
    plan = get_planner("broadcast", "gridmpi")(topo, Broadcast("h0", 6000), clusters="h0,h1,h2;h3,h4,h5", connections=3)
    check_plan(plan, topo)
    assert plan.notes["connections"] == 3
    wan = [t for t in plan.transfers if t.label.startswith("wan")]
    assert sorted((t.src, t.dst) for t in wan) == [("h0", "h3"), ("h1", "h4"), ("h2", "h5")]


def test_cluster_detection_ignores_slow_host_links():
    from topocast.planners._collective import detect_clusters

    # no wide-area delay, host links slower (latency) than the fat up-link: one cluster
    topo = two_cluster_grid(3, wan_latency=0.0, lan_latency="50us")
    assert len(detect_clusters(topo)) == 1


def test_all_latency_and_allreduce_planners_on_the_100_host_builtin():
    """check_plan only (no simulation), one size, the largest built-in (100 hosts, 10 clusters)."""
    from topocast.plan import Allreduce

    topo = load_topology("builtin:multi-cluster")
    for name in PLANNERS + TWO_CLUSTER:
        check_plan(get_planner("broadcast", name)(topo, Broadcast(topo.hosts[5], 999_999)), topo)
    for name in ("ring", "recursive_doubling", "rabenseifner", "two_tier", "gridmpi"):
        check_plan(get_planner("allreduce", name)(topo, Allreduce(999_999)), topo)


def test_one_way_links():
    """Hosts with separate one-way up and down links (directed physical links)."""
    hosts = [f"h{i}" for i in range(5)]
    links = []
    for h in hosts:
        links.append(PhysicalLink(h, "sw", 125e6, 1e-5, directed=True))
        links.append(PhysicalLink("sw", h, 62.5e6, 1e-5, directed=True))
    topo = Topology("one-way", hosts, ["sw"], links)
    for name in PLANNERS + TWO_CLUSTER:
        check_plan(get_planner("broadcast", name)(topo, Broadcast("h2", 10_000)), topo)
