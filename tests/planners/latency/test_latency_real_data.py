"""Latency/grid planners on every real topology in ../shared/data (SimGrid, OptorSim, Zoo)
with at most 100 hosts: plans pass check_plan (no simulation, to stay fast).

The data sits beside the repository (../shared/data); a user's clone has none, so these tests
skip with a reason when it is absent.
"""

from pathlib import Path

import pytest

from topocast.plan import Allreduce, Broadcast
from topocast.plan.check import check_plan
from topocast.planners import get_planner
from topocast.topology import load_topology

DATA = Path(__file__).resolve().parents[3] / ".." / "shared" / "data"
pytestmark = pytest.mark.skipif(
    not DATA.is_dir(), reason=f"shared data not found at {DATA} (only in the project workspace)"
)

FILES = sorted(
    p
    for sub in ("simgrid", "topology-zoo")
    if (DATA / sub).is_dir()
    for p in (DATA / sub).iterdir()
    if p.suffix in (".xml", ".conf", ".graphml")
)
BCAST = [
    "binomial",
    "essp",
    "scatter_allgather_ring",
    "scatter_allgather_rdb",
    "far_first",
    "gridmpi",
    "topology_aware",
    "speed_aware",
    "mpich",
]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_latency_planners_on_real_files(path):
    topo = load_topology(str(path), default_bandwidth=125e6)
    if len(topo.hosts) > 100:
        pytest.skip(f"{len(topo.hosts)} hosts: too large for a quick check")
    for name in BCAST:
        check_plan(get_planner("broadcast", name)(topo, Broadcast(topo.hosts[0], 10**6)), topo)
    for name in ("recursive_doubling", "rabenseifner", "gridmpi"):
        check_plan(get_planner("allreduce", name)(topo, Allreduce(10**6)), topo)
