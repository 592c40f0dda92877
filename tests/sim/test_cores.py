"""The fast and compiled cores against the reference core (``simulate(..., core=...)``): the
same predictions to 1e-12 relative on random plans (hypothesis), the MPI ring and pipelines of
the broadcast planners, and allreduce plans; the scalar and compiled progressive fillings
against the array one on random max-min instances, to the last bit. The compiled core's tests
skip when numba is not installed (its first use compiles the kernels, a few seconds)."""

from __future__ import annotations

import importlib.util
import math
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topocast import Allreduce, Broadcast, check_plan, simulate
from topocast.errors import SimulationError
from topocast.planners import get_planner
from topocast.sim import engine, tuning
from topocast.sim.loop import loop_inputs
from topocast.sim.maxmin import progressive_filling, progressive_filling_small
from topocast.topology.generators import random_tree

sys.path.insert(0, str(Path(__file__).parent))
from test_large_plans import random_plan  # noqa: E402
from test_properties import SCALE, SETTINGS, dag_plans, maxmin_instances, topologies  # noqa: E402

REL = 1e-12
HAS_NUMBA = importlib.util.find_spec("numba") is not None


CORES = ["fast", pytest.param("compiled", marks=pytest.mark.skipif(not HAS_NUMBA, reason="numba is not installed"))]


def assert_cores_agree(plan, topo, chunk_size=None, core="fast"):
    fast = simulate(plan, topo, chunk_size=chunk_size, core=core)
    ref = simulate(plan, topo, chunk_size=chunk_size, core="reference")
    for h, r in ref.per_host.items():
        assert math.isclose(fast.per_host[h].time, r.time, rel_tol=REL, abs_tol=0), h
    assert fast.makespan == pytest.approx(ref.makespan, rel=REL, abs=0)
    for i, ((s, d), (rs, rd)) in enumerate(zip(fast.transfer_times, ref.transfer_times)):
        assert math.isclose(s, rs, rel_tol=REL, abs_tol=0), i
        assert math.isclose(d, rd, rel_tol=REL, abs_tol=0), i
    return fast


@settings(max_examples=int(300 * SCALE), **SETTINGS)
@given(maxmin_instances())
def test_scalar_filling_is_the_array_filling_to_the_bit(inst):
    pf, pr, capacity, caps, children = inst
    routes = [[] for _ in caps]
    for f, r in zip(pf.tolist(), pr.tolist()):
        routes[f].append(r)
    parent = [-1] * len(caps)
    for p, kids in enumerate(children):
        for c in kids:
            parent[c] = p
    try:
        want = progressive_filling(pf, pr, capacity, caps, children=children)
    except ValueError:
        with pytest.raises(ValueError):
            progressive_filling_small(routes, capacity.tolist(), caps.tolist(), parent)
        return
    got = progressive_filling_small(routes, capacity.tolist(), caps.tolist(), parent)
    assert np.array_equal(np.array(got), want)


@settings(max_examples=int(150 * SCALE), **SETTINGS)
@given(st.data())
@pytest.mark.parametrize("core", CORES)
def test_cores_agree_on_random_plans(core, data):
    topo = data.draw(topologies())
    plan = data.draw(dag_plans(topo))
    chunk = data.draw(st.sampled_from([0, plan.size // 20, plan.size]))
    assert_cores_agree(plan, topo, chunk, core)


@pytest.mark.parametrize("small_solve", [tuning.SMALL_SOLVE, 10**9], ids=["default", "every-group-scalar"])
def test_cores_agree_on_a_large_random_plan(monkeypatch, small_solve):
    monkeypatch.setattr(tuning, "SMALL_SOLVE", small_solve)
    topo = random_tree(40, 10, min_mbit=100, max_mbit=1000, asymmetric=True, seed=11)
    plan = random_plan(topo, 400, 11)
    check_plan(plan, topo)
    assert_cores_agree(plan, topo)


@pytest.mark.skipif(not HAS_NUMBA, reason="numba is not installed")
@pytest.mark.parametrize("seed", [11, 12])
def test_compiled_core_agrees_on_a_large_random_plan(seed):
    topo = random_tree(40, 10, min_mbit=100, max_mbit=1000, asymmetric=True, seed=seed)
    plan = random_plan(topo, 400, seed)
    check_plan(plan, topo)
    assert_cores_agree(plan, topo, core="compiled")


@pytest.mark.parametrize("core", CORES)
@pytest.mark.parametrize(
    "planner, chunk",
    [
        ("scatter_allgather_ring", None),
        ("scatter_allgather_rdb", None),
        ("binomial", None),
        ("depth_first", None),
        ("stable", 1 << 16),
        ("fpfr", 0),
    ],
)
def test_cores_agree_on_broadcast_plans(planner, chunk, core):
    topo = random_tree(24, 6, min_mbit=100, max_mbit=1000, seed=4)
    plan = get_planner("broadcast", planner)(topo, Broadcast(topo.hosts[0], 1 << 24))
    assert_cores_agree(plan, topo, chunk, core)


@pytest.mark.parametrize("core", CORES)
@pytest.mark.parametrize("planner", ["ring", "rabenseifner", "recursive_doubling"])
def test_cores_agree_on_allreduce_plans(planner, core):
    topo = random_tree(16, 4, min_mbit=100, max_mbit=1000, seed=9)
    plan = get_planner("allreduce", planner)(topo, Allreduce(1 << 22))
    assert_cores_agree(plan, topo, core=core)


@pytest.mark.skipif(not HAS_NUMBA, reason="numba is not installed")
def test_compiled_core_agrees_on_the_ring_past_the_scalar_groups(monkeypatch):
    """A ring allgather on 64 hosts: groups of more flows than the fast core solves on
    scalars, so the compiled solve meets the array one of the reference (on the engine's
    loop with the compiled rate room; the compiled event loop has its own tests)."""
    monkeypatch.setattr(engine, "loop_inputs", lambda sim: None)
    topo = random_tree(64, 16, min_mbit=100, max_mbit=1000, seed=5)
    plan = get_planner("broadcast", "scatter_allgather_ring")(topo, Broadcast(topo.hosts[0], 1 << 24))
    assert_cores_agree(plan, topo, core="compiled")


def _store_and_forward(plan):
    """``plan`` with every pipelined transfer made store-and-forward (its sender waits for
    all its bytes), so that it may qualify for the compiled loop."""
    transfers = [replace(t, pipelined=False, upstream=None) if t.pipelined else t for t in plan.transfers]
    return replace(plan, transfers=tuple(transfers), chunk_size=0)


def _takes_the_loop(plan, topo):
    return loop_inputs(engine._Sim(plan, topo, None)) is not None


@pytest.mark.skipif(not HAS_NUMBA, reason="numba is not installed")
@settings(max_examples=int(150 * SCALE), **SETTINGS)
@given(st.data())
def test_compiled_loop_agrees_on_random_plans(data):
    """Random store-and-forward plans (``after`` links, rate caps, bytes received twice or
    held from the start, latencies; without injection times they qualify for the loop)."""
    topo = data.draw(topologies())
    plan = _store_and_forward(data.draw(dag_plans(topo)))
    assert_cores_agree(plan, topo, core="compiled")


@pytest.mark.skipif(not HAS_NUMBA, reason="numba is not installed")
@pytest.mark.parametrize(
    "collective, planner, hosts",
    [
        ("broadcast", "scatter_allgather_ring", 32),
        ("broadcast", "scatter_allgather_rdb", 32),
        ("broadcast", "binomial", 32),
        ("allreduce", "ring", 24),
        ("allreduce", "rabenseifner", 24),
        ("allreduce", "recursive_doubling", 16),
    ],
)
def test_compiled_loop_takes_and_agrees_on_mpi_plans(collective, planner, hosts):
    topo = random_tree(hosts, hosts // 4, min_mbit=100, max_mbit=1000, seed=7)
    request = Broadcast(topo.hosts[3], 1 << 24) if collective == "broadcast" else Allreduce(1 << 22)
    plan = get_planner(collective, planner)(topo, request)
    assert _takes_the_loop(plan, topo)
    assert_cores_agree(plan, topo, core="compiled")


@pytest.mark.skipif(not HAS_NUMBA, reason="numba is not installed")
@pytest.mark.parametrize("limit", [tuning.LOCAL_COMPONENT_MIN, 2], ids=["default", "global-recompute"])
def test_compiled_loop_agrees_on_the_ring_recomputing_every_flow(monkeypatch, limit):
    """Groups past the local limit are solved whole (every flowing transfer) in both."""
    monkeypatch.setattr(tuning, "LOCAL_COMPONENT_MIN", limit)
    monkeypatch.setattr(tuning, "LOCAL_COMPONENT_LIMIT", max(limit, 2))
    topo = random_tree(32, 8, min_mbit=100, max_mbit=1000, seed=5)
    plan = get_planner("broadcast", "scatter_allgather_ring")(topo, Broadcast(topo.hosts[0], 1 << 24))
    sim = engine._Sim(plan, topo, None, "compiled")
    from topocast.sim.loop import run_loop
    from topocast.sim.loop_kernels import FULL_SOLVES

    got = run_loop(sim, loop_inputs(sim), None, 256)
    assert (sim.loop_counters[FULL_SOLVES] > 0) == (limit == 2)
    ref = simulate(plan, topo, core="reference")
    assert np.array_equal(np.array(got.transfer_times), np.array(ref.transfer_times), equal_nan=True)
    assert got.per_host == ref.per_host


@pytest.mark.skipif(not HAS_NUMBA, reason="numba is not installed")
@pytest.mark.parametrize("seed", [21, 22])
def test_compiled_loop_agrees_on_a_large_random_plan(seed):
    topo = random_tree(40, 10, min_mbit=100, max_mbit=1000, asymmetric=True, seed=seed)
    plan = _store_and_forward(random_plan(topo, 400, seed))
    assert _takes_the_loop(plan, topo)
    assert_cores_agree(plan, topo, core="compiled")


@pytest.mark.skipif(not HAS_NUMBA, reason="numba is not installed")
def test_compiled_loop_reports_progress_and_hands_deadlocks_back():
    topo = random_tree(16, 4, min_mbit=100, max_mbit=1000, seed=3)
    plan = get_planner("allreduce", "ring")(topo, Allreduce(1 << 20))
    seen = []
    result = simulate(plan, topo, core="compiled", on_progress=lambda done, total: seen.append((done, total)))
    assert seen and all(total == len(plan.transfers) for _, total in seen)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    assert result.makespan == simulate(plan, topo, core="reference").makespan
    # two transfers waiting for each other: the engine explains the deadlock
    a, b = plan.transfers[0], plan.transfers[1]
    stuck = replace(plan, transfers=(replace(a, after=(1,)), replace(b, after=(0,))))
    with pytest.raises(SimulationError, match="cannot complete"):
        simulate(stuck, topo, core="compiled")


def test_unknown_core_is_refused():
    topo = random_tree(4, 1, seed=1)
    plan = get_planner("broadcast", "flat")(topo, Broadcast(topo.hosts[0], 1000))
    with pytest.raises(ValueError, match="core must be one of fast, reference, compiled"):
        simulate(plan, topo, core="numba")


@pytest.mark.skipif(not HAS_NUMBA, reason="numba is not installed")
@settings(max_examples=int(200 * SCALE), **SETTINGS)
@given(maxmin_instances())
def test_compiled_filling_is_the_array_filling_to_the_bit(inst):
    from topocast.sim import kernels

    pf, pr, capacity, caps, children = inst
    order = np.argsort(pf, kind="stable")
    route_ptr = np.searchsorted(pf[order], np.arange(len(caps) + 1))
    parent = np.full(len(caps), -1, dtype=np.int64)
    for p, kids in enumerate(children):
        parent[kids] = p
    try:
        want = progressive_filling(pf, pr, capacity, caps, children=children)
    except ValueError:
        with pytest.raises(ValueError):
            kernels.progressive_filling(route_ptr, pr[order], capacity.astype(float), caps, parent)
        return
    got = kernels.progressive_filling(route_ptr, pr[order], capacity.astype(float), caps, parent)
    assert np.array_equal(got, want)


@pytest.mark.skipif(not HAS_NUMBA, reason="numba is not installed")
def test_fast_core_moves_to_compiled_kernels_after_many_groups(monkeypatch):
    from topocast.sim.engine import _Sim

    monkeypatch.setattr(tuning, "COMPILE_AFTER", 200)
    monkeypatch.setattr(tuning, "COMPILE_PER_TRANSFER", 0)
    topo = random_tree(24, 6, min_mbit=100, max_mbit=1000, seed=4)
    plan = get_planner("broadcast", "scatter_allgather_ring")(topo, Broadcast(topo.hosts[0], 1 << 24))
    sim = _Sim(plan, topo, None, "fast")
    fast = sim.run()
    assert sim.compiled
    ref = simulate(plan, topo, core="reference")
    assert np.allclose(fast.transfer_times, ref.transfer_times, rtol=REL, atol=0)


def test_compiled_core_without_numba_is_a_clear_error(monkeypatch):
    import topocast.sim

    monkeypatch.setitem(sys.modules, "topocast.sim.kernels", None)  # import fails as without numba
    monkeypatch.delattr(topocast.sim, "kernels", raising=False)
    topo = random_tree(4, 1, seed=1)
    plan = get_planner("broadcast", "flat")(topo, Broadcast(topo.hosts[0], 1000))
    with pytest.raises(ValueError, match=r"core='compiled' needs numba \(pip install 'topocast\[fast\]'\)"):
        simulate(plan, topo, core="compiled")
    # the fast core stays on scalars when the kernels cannot be imported
    monkeypatch.setattr(tuning, "COMPILE_AFTER", 0)
    monkeypatch.setattr(tuning, "COMPILE_PER_TRANSFER", 0)
    assert simulate(plan, topo).makespan == simulate(plan, topo, core="reference").makespan
    # ... and on the engine's loop for a plan that would take the compiled loop
    monkeypatch.setitem(sys.modules, "topocast.sim.loop_kernels", None)
    monkeypatch.delattr(topocast.sim, "loop_kernels", raising=False)
    monkeypatch.setattr(tuning, "LOOP_AFTER", 0)
    assert simulate(plan, topo).makespan == simulate(plan, topo, core="reference").makespan


def test_small_simulations_do_not_import_numba():
    code = (
        "import sys; from topocast import Broadcast, simulate; from topocast.planners import get_planner;"
        "from topocast.topology.generators import random_tree;"
        "topo = random_tree(16, 4, seed=2);"
        "plan = get_planner('broadcast', 'scatter_allgather_ring')(topo, Broadcast(topo.hosts[0], 1 << 20));"
        "ma = 'numpy.ma' in sys.modules;"
        "simulate(plan, topo); assert 'numba' not in sys.modules, 'numba imported';"
        # numpy.ma (imported by np.unique of a plain array) costs a short simulation its time
        "assert ma or 'numpy.ma' not in sys.modules, 'numpy.ma imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.skipif(not HAS_NUMBA, reason="numba is not installed")
def test_fast_core_stays_on_scalars_when_flows_are_solved_about_once(monkeypatch):
    from topocast.sim.engine import _Sim

    monkeypatch.setattr(tuning, "COMPILE_AFTER", 0)
    topo = random_tree(24, 6, min_mbit=100, max_mbit=1000, seed=4)
    plan = get_planner("broadcast", "flat")(topo, Broadcast(topo.hosts[0], 1 << 24))
    sim = _Sim(plan, topo, None, "fast")
    sim.run()
    assert 0 < sim.group_flows <= tuning.COMPILE_PER_TRANSFER * len(plan.transfers)
    assert not sim.compiled
