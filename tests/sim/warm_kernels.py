"""Compiles the simulator's numba kernels into their cache. tests/conftest.py runs this in a
process of its own when a session starts, so that a fresh checkout's compilation (tens of CPU
seconds) runs on the second core beside other tests instead of inside the first test that
simulates on the compiled core. Run alone, it only fills the cache."""

from __future__ import annotations

import numpy as np

from topocast import Allreduce, Broadcast, simulate
from topocast.planners import get_planner
from topocast.sim import engine
from topocast.topology.generators import random_tree


def warm() -> None:
    from topocast.sim import kernels

    topo = random_tree(24, 6, min_mbit=100, max_mbit=1000, seed=4)
    source = topo.hosts[0]
    for planner, chunk in (("scatter_allgather_ring", None), ("stable", 1 << 16)):
        plan = get_planner("broadcast", planner)(topo, Broadcast(source, 1 << 24))
        simulate(plan, topo, chunk_size=chunk, core="compiled")  # the event loop, the group solves
    simulate(get_planner("allreduce", "ring")(topo, Allreduce(1 << 22)), topo, core="compiled")
    engine.loop_inputs = lambda sim: None  # the engine's own loop on compiled group solves
    plan = get_planner("broadcast", "scatter_allgather_ring")(topo, Broadcast(source, 1 << 24))
    simulate(plan, topo, core="compiled")
    route_ptr = np.array([0, 1, 2], dtype=np.int64)
    kernels.progressive_filling(
        route_ptr, np.array([0, 0]), np.array([1.0]), np.array([np.inf, 0.5]), np.array([-1, -1])
    )


if __name__ == "__main__":
    warm()
