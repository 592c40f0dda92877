"""``optimal`` predicts at least the aggregate bandwidth of every other registered broadcast
planner, on every real topology of ../shared/data and on the generators (with and without
millisecond latencies, where long pipelines pay their fill time).

Real topologies are planned for up to 12 destinations spread over the file's hosts, so that
the slow planners (``dijkstra`` on 1,500 hosts) keep the test fast; they skip with a reason
when the data is absent (a user's clone has none). Every planner is simulated on every
topology (about a minute in all): marked slow.
"""

import dataclasses
from pathlib import Path

import pytest

from topocast import Broadcast, simulate
from topocast.errors import TopocastError
from topocast.planners import available_planners, get_planner
from topocast.topology import load_topology
from topocast.topology.generators import fat_tree, multi_cluster_tree, two_cluster_grid

_ROOT = Path(__file__).resolve().parents[3]
# ../shared/data beside the repository (one level further up from a git worktree)
DATA = next(
    (d for d in (_ROOT.parent / "shared" / "data", _ROOT.parent.parent / "shared" / "data") if d.is_dir()), None
)
FILES = sorted(
    p
    for sub in ("simgrid", "topology-zoo")
    if DATA is not None and (DATA / sub).is_dir()
    for p in (DATA / sub).iterdir()
    if p.suffix in (".xml", ".conf", ".graphml")
)
OTHERS = [p.name for p in available_planners("broadcast", include_selectors=False) if p.name != "optimal"]
SIZE = 10**9
pytestmark = pytest.mark.slow
# The staged byte layouts split the message in whole bytes: a level may end (L-1)/V_L seconds
# late (docs/algorithms.md 1.4), a few parts in 10^8 of the aggregate bandwidth.
TOL = 1e-6


def _with_latency(topo, latency):
    return topo.replace(links=[dataclasses.replace(pl, latency=latency) for pl in topo.physical_links])


def _generated():
    yield multi_cluster_tree(16, n_clusters=4, bandwidth="uniform-500-1000", seed=1)
    yield _with_latency(multi_cluster_tree(16, n_clusters=3, bandwidth="uniform-500-1000", seed=2), 2e-3)
    yield _with_latency(multi_cluster_tree(16, n_clusters=5, bandwidth="mixed", asymmetric=True, seed=3), 1e-3)
    yield two_cluster_grid(4)
    yield fat_tree(4, latency=5e-3)


def _assert_optimal_is_best(topo, request):
    best = simulate(get_planner("broadcast", "optimal")(topo, request), topo).aggregate_bandwidth
    for name in OTHERS:
        try:
            plan = get_planner("broadcast", name)(topo, request)
        except (TopocastError, ValueError) as exc:  # planner limits, e.g. gridmpi needs two clusters
            print(f"{name} skipped: {exc}")
            continue
        other = simulate(plan, topo).aggregate_bandwidth
        assert best >= other * (1 - TOL), f"{topo.name}: optimal {best:.6g} < {name} {other:.6g}"


GENERATED = list(_generated())


@pytest.mark.parametrize("topo", GENERATED, ids=[f"{t.name}-{i}" for i, t in enumerate(GENERATED)])
def test_optimal_never_below_another_planner_on_generators(topo):
    _assert_optimal_is_best(topo, Broadcast(topo.hosts[0], SIZE))


@pytest.mark.skipif(not FILES, reason="../shared/data not found beside the repository (only in the project workspace)")
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_optimal_never_below_another_planner_on_real_topologies(path):
    topo = load_topology(path, default_bandwidth=125e6 if path.suffix == ".graphml" else None)
    hosts = topo.hosts
    step = max(1, len(hosts) // 13)
    dests = tuple(hosts[step::step][:12])
    _assert_optimal_is_best(topo, Broadcast(hosts[0], SIZE, dests))
