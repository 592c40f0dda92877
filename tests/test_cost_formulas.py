"""Closed forms (topocast.bounds.cost) against the simulator.

* MPICH Hockney formulas (docs/algorithms.md 5.2-5.4) on a homogeneous switch: within 1 %
  (alpha = 2 x link latency, beta = 1 / link bandwidth, gamma = the hosts' reduction cost);
* GridMPI formulas on a two-cluster grid with a long, fat wide-area link: our step-by-step
  forms exactly, the slides' simplified forms within their (p-1)/p factors;
* the gain of the modified algorithms in GridMPI's normalised throughput.
"""

import pytest

from topocast.bounds import cost
from topocast.plan import Allreduce, Broadcast
from topocast.planners import get_planner
from topocast.sim import simulate
from topocast.topology import Topology
from topocast.topology.generators import two_cluster_grid
from topocast.topology.model import PhysicalLink

BW, LAT, GAMMA = 125e6, 25e-6, 2e-10


def switch(p, gamma=0.0):
    hosts = [f"h{i}" for i in range(p)]
    return Topology(
        f"switch-{p}",
        hosts,
        ["sw"],
        [PhysicalLink(h, "sw", BW, LAT) for h in hosts],
        reduction_cost={h: gamma for h in hosts} if gamma else None,
    )


def predicted(collective, name, topo, size, **params):
    req = Broadcast(topo.hosts[0], size) if collective == "broadcast" else Allreduce(size)
    return simulate(get_planner(collective, name)(topo, req, **params), topo).makespan


SIZES = [1, 4096, 1 << 20, 48 << 20]  # latency-bound ... bandwidth-bound, no special case
ALPHA, BETA = cost.hockney_params(BW, LAT)


@pytest.mark.parametrize("p", [2, 4, 5, 8, 12, 16])
def test_hockney_broadcast_formulas(p):
    topo = switch(p)
    for n in SIZES:
        n = max(n // p * p, p)  # chunks of equal size, as in the formulas
        assert predicted("broadcast", "binomial", topo, n) == pytest.approx(
            cost.binomial_bcast(n, p, ALPHA, BETA), rel=0.01
        )
        assert predicted("broadcast", "scatter_allgather_ring", topo, n) == pytest.approx(
            cost.scatter_ring_bcast(n, p, ALPHA, BETA), rel=0.01
        )
        if p & (p - 1) == 0:
            assert predicted("broadcast", "scatter_allgather_rdb", topo, n) == pytest.approx(
                cost.scatter_rdb_bcast(n, p, ALPHA, BETA), rel=0.01
            )


@pytest.mark.parametrize("p", [2, 4, 5, 8, 12, 16])
def test_hockney_allreduce_formulas(p):
    topo = switch(p, gamma=GAMMA)
    for n in SIZES:
        n = max(n // p * p, p)
        for name, f in (
            ("ring", cost.ring_allreduce),
            ("recursive_doubling", cost.recursive_doubling_allreduce),
            ("rabenseifner", cost.rabenseifner_allreduce),
        ):
            if name == "rabenseifner":
                pof2 = 1 << (p.bit_length() - 1)
                n = max(n // pof2 * pof2, pof2)
            assert predicted("allreduce", name, topo, n) == pytest.approx(f(n, p, ALPHA, BETA, GAMMA), rel=0.01), name


def test_small_is_latency_bound_large_is_bandwidth_bound():
    topo = switch(16)
    small = predicted("broadcast", "binomial", topo, 1)
    big = predicted("broadcast", "binomial", topo, 1 << 30)
    assert small == pytest.approx(4 * ALPHA, rel=1e-3)
    assert big == pytest.approx(4 * (1 << 30) / BW, rel=1e-3)


def grid(p):
    # GridMPI's setting: 1 Gbps NICs, 10 Gbps wide-area link with 10 ms delay
    return two_cluster_grid(p, nic="1Gbps", wan="10Gbps", wan_latency="10ms", lan_latency="50us")


@pytest.mark.parametrize("p", [4, 8])
def test_gridmpi_formulas(p):
    topo = grid(p)
    B = 125e6
    L = topo.route_latency("a0", "b0")  # 10 ms + 2 x 50 us
    alpha = 2 * 50e-6
    for M in (1 << 20, 64 << 20):
        M = M // p * p
        cases = [
            (
                "broadcast",
                "far_first",
                cost.far_first_bcast_model(M, B, L, p, alpha),
                cost.far_first_bcast_paper(M, B, L),
            ),
            ("broadcast", "gridmpi", cost.gridmpi_bcast_model(M, B, L, p, alpha), cost.gridmpi_bcast_paper(M, B, L, p)),
            (
                "allreduce",
                "two_tier",
                cost.two_tier_allreduce_model(M, B, L, p, alpha),
                cost.two_tier_allreduce_paper(M, B, L),
            ),
            (
                "allreduce",
                "gridmpi",
                cost.gridmpi_allreduce_model(M, B, L, p, alpha),
                cost.gridmpi_allreduce_paper(M, B, L, p),
            ),
        ]
        for coll, name, model, paper in cases:
            t = predicted(coll, name, topo, M)
            assert t == pytest.approx(model, rel=0.01), (coll, name)
            if M > 1 << 20:  # bandwidth terms dominate the intra-cluster latencies
                assert (p - 1) / p * paper <= t <= paper, (coll, name)


def test_gridmpi_uses_backbone_over_nic_connections():
    topo = grid(16)
    plan = get_planner("broadcast", "gridmpi")(topo, Broadcast("a00", 1 << 20))
    assert plan.notes["connections"] == 10  # 10 Gbps / 1 Gbps
    plan = get_planner("allreduce", "gridmpi")(grid(4), Allreduce(1 << 20))
    assert plan.notes["connections"] == 4  # limited by the cluster size


def test_modified_algorithms_gain_in_gridmpi_throughput():
    """GridMPI plots throughput = M x nodes / time (bcast), M x nodes^2 / time (allreduce);
    the modified algorithms must beat far-first / two-tier for long messages."""
    p = 8
    topo = grid(p)
    M = 64 << 20
    hosts = 2 * p
    bc = {n: cost.bcast_throughput(M, hosts, predicted("broadcast", n, topo, M)) for n in ("far_first", "gridmpi")}
    ar = {n: cost.allreduce_throughput(M, hosts, predicted("allreduce", n, topo, M)) for n in ("two_tier", "gridmpi")}
    assert bc["gridmpi"] > 1.4 * bc["far_first"]
    assert ar["gridmpi"] > 2.0 * ar["two_tier"]
    # with one connection the modified broadcast pays M/B on the wide-area link too
    one = predicted("broadcast", "gridmpi", topo, M, connections=1)
    assert one > predicted("broadcast", "gridmpi", topo, M)
