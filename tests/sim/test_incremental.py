"""The incremental simulator's own paths against the exact reference (tests/sim/reference.py):
events handled on Python scalars or on arrays, max-min recomputed locally (growing the set of
flows until every flow outside it keeps its bottleneck) or for every flowing transfer at
once; and the vectorised helpers they rest on, against plain versions."""

from __future__ import annotations

import math
import random
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from topocast import Broadcast, Plan, Transfer, check_plan
from topocast.errors import SimulationError
from topocast.intervals import Holdings, IntervalSet, inside_grouped, merge_grouped, overlaps_grouped
from topocast.planners import get_planner
from topocast.sim import agenda, engine, maxmin, tuning
from topocast.sim.maxmin import _Subtrees
from topocast.topology.generators import random_tree
from topocast.topology.io import loads

sys.path.insert(0, str(Path(__file__).parent))
from test_large_plans import assert_agree, random_plan  # noqa: E402


@pytest.mark.parametrize(
    "limit, floor, small",
    [
        (tuning.LOCAL_COMPONENT_LIMIT, tuning.LOCAL_COMPONENT_MIN, tuning.SMALL),
        (2, 2, tuning.SMALL),
        (10**9, 10**9, 0),
        (10**9, 10**9, 10**9),
    ],
    ids=["default", "global-recompute", "arrays-only", "scalars-only"],
)
def test_every_rate_path_agrees_with_reference(monkeypatch, limit, floor, small):
    monkeypatch.setattr(tuning, "LOCAL_COMPONENT_LIMIT", limit)
    monkeypatch.setattr(tuning, "LOCAL_COMPONENT_MIN", floor)
    monkeypatch.setattr(tuning, "SMALL", small)
    topo = random_tree(40, 10, min_mbit=100, max_mbit=1000, asymmetric=True, seed=5)
    plan = random_plan(topo, 250, 5)
    check_plan(plan, topo)
    assert_agree(plan, topo)


def _rates_checked_against_a_full_recompute(monkeypatch, plan, topo) -> list[int]:
    """Simulate ``plan``, checking after every event that the rates kept by the local
    recomputation are the max-min rates of all flowing transfers computed from scratch (to
    1e-9); the number of flowing transfers at each checked event."""
    update = engine._Sim._update_rates
    events = []

    def checked(self):
        update(self)
        flowing = np.array(sorted(self.flowing), dtype=np.int64)
        if len(flowing):
            dirty = set(self.dirty)
            full = self._solve(flowing, residual=False)[0]
            self.dirty = dirty
            np.testing.assert_allclose(self.rate[flowing], full, rtol=1e-9, atol=0)
            events.append(len(flowing))

    monkeypatch.setattr(engine._Sim, "_update_rates", checked)
    engine.simulate(plan, topo)
    return events


def test_local_recompute_matches_a_full_one_at_every_event(monkeypatch):
    """After every event, the rates kept by the local recomputation are the max-min rates of
    all flowing transfers computed from scratch (to 1e-9)."""
    topo = random_tree(40, 10, min_mbit=100, max_mbit=1000, seed=6)
    plan = random_plan(topo, 300, 6)
    events = _rates_checked_against_a_full_recompute(monkeypatch, plan, topo)
    assert len(events) > 100 and max(events) > 10


@pytest.mark.parametrize("planner", ["scatter_allgather_rdb", "mpich"])
def test_exchanges_over_shared_links_agree_with_reference(monkeypatch, planner):
    """MPI exchanges over a tree: a flow that ends frees a link that many exchanges share, the
    recomputed group grows past a quarter of the flowing transfers and every one is
    recomputed; the predictions agree with the reference, and the kept rates with a full
    recomputation after every event."""
    topo = random_tree(24, 6, min_mbit=100, max_mbit=1000, seed=3)
    plan = get_planner("broadcast", planner)(topo, Broadcast(topo.hosts[0], 10**8))
    assert_agree(plan, topo)
    solve, solved = engine._Sim._solve, []

    def counted(self, comp, residual):
        solved.append(residual)
        return solve(self, comp, residual)

    monkeypatch.setattr(tuning, "LOCAL_COMPONENT_MIN", 4)
    monkeypatch.setattr(engine._Sim, "_solve", counted)
    engine.simulate(plan, topo)
    assert solved.count(True) > 10 and solved.count(False) > 10  # local and global recomputations
    _rates_checked_against_a_full_recompute(monkeypatch, plan, topo)


def test_coupling_forest_spans_are_the_subtrees():
    rng = random.Random(0)
    for _ in range(300):
        n = rng.randint(1, 40)
        parent = np.full(n, -1)
        order = list(range(n))
        rng.shuffle(order)
        for k in range(1, n):
            if rng.random() < 0.7:
                parent[order[k]] = order[rng.randrange(k)]
        marked = np.array([rng.random() < 0.3 for _ in range(n)])
        expected = np.zeros(n, dtype=bool)
        for v in np.flatnonzero(marked & np.isin(np.arange(n), parent)):
            stack = [v]
            while stack:
                x = stack.pop()
                expected[x] = True
                stack.extend(np.flatnonzero(parent == x).tolist())
        assert (_Subtrees(parent).below(marked) == expected).all(), (parent, marked)


def test_merge_grouped_is_intervalset_per_group():
    rng = random.Random(1)
    for _ in range(300):
        groups = rng.randint(1, 5)
        items = []
        for _ in range(rng.randint(0, 30)):
            a = rng.randrange(50)
            items.append((rng.randrange(groups), a, a + rng.randrange(10)))
        g, s, e = (np.array([x[k] for x in items], dtype=np.int64) for k in range(3))
        mg, ms, me = merge_grouped(g, s, e)
        for k in range(groups):
            want = list(IntervalSet([(a, b - a) for gg, a, b in items if gg == k]))
            assert [(int(a), int(b)) for gg, a, b in zip(mg, ms, me) if gg == k] == want


def test_inside_and_overlaps_grouped_are_intervalset_per_group():
    rng = random.Random(3)
    for _ in range(300):
        items = [(rng.randrange(3), a, a + rng.randrange(1, 10)) for a in (rng.randrange(50) for _ in range(8))]
        merged = merge_grouped(*(np.array([x[k] for x in items], dtype=np.int64) for k in range(3)))
        sets = {g: IntervalSet([(a, b - a) for gg, a, b in items if gg == g]) for g in range(3)}
        queries = [(rng.randrange(3), a, a + rng.randrange(0, 8)) for a in (rng.randrange(55) for _ in range(10))]
        g, s, e = (np.array([q[k] for q in queries], dtype=np.int64) for k in range(3))
        inside = [sets[gg].covers(a, b) for gg, a, b in queries]
        meets = [any(x < b and a < y for x, y in sets[gg]) for gg, a, b in queries]
        assert inside_grouped(g, s, e, merged).tolist() == inside
        assert overlaps_grouped(g, s, e, merged).tolist() == meets


def test_holdings_merge_lazily_what_intervalset_merges_at_once():
    rng = random.Random(2)
    held = Holdings({"a": [(0, 10)]})
    plain = IntervalSet([(0, 10)])
    for _ in range(200):
        rs = [(rng.randrange(1000), rng.randrange(1, 20)) for _ in range(rng.randint(1, 4))]
        held.add("a", rs, sum(ln for _, ln in rs))
        plain.add_ranges(rs)
        assert held.upper_total("a") >= plain.total
        if rng.random() < 0.1:
            assert list(held.merged("a")) == list(plain)
    assert list(held.merged("a")) == list(plain) and held.upper_total("a") == plain.total


def test_event_due_below_the_clocks_resolution_fires_once():
    """A relay whose upstream is a rounding error short of releasing it: the release event is
    due less than one ulp of the clock after now. Firing it must release the relay for good
    (it used to fire again and again at the same instant)."""
    topo = loads(
        '{"name": "t", "hosts": ["h0", "h1"], "links": [{"a": "h0", "b": "h1", "bandwidth": "1Gbps"}],'
        ' "injection": {"default": "10ms", "hosts": {"h1": 0}}}',
        fmt="json",
    )
    transfers = (
        # the upstream carries the same range three times: at the relay's release its progress
        # is 3 - 6e-11 bytes, the release due 5e-19 s later
        Transfer("h0", "h1", ((0, 3), (0, 3), (0, 3)), pipelined=True),
        Transfer.of("h1", "h0", 0, 3, pipelined=True, rate_cap=10.0),
    )
    plan = Plan("redistribute", 60, transfers, {"h0": [(0, 3)]}, {"h1": [(0, 3)]})
    assert plan.chunk_size == 0
    check_plan(plan, topo)
    assert_agree(plan, topo)


def test_transfers_ready_at_one_instant_are_injected_in_plan_order():
    """A relay's pipelined transfer ends at the instant its upstream does, which makes
    transfer 3 ready; transfer 4 becomes ready at that instant too (the relay then holds its
    bytes). Rounding puts the relay's end a step after its upstream's, at the same time: the
    relay injects only once that step is done, 3 before 4 (it injected 4 first)."""
    topo = loads(
        '{"name": "t", "hosts": ["h0", "h1"], "links": [{"a": "h0", "b": "h1", "bandwidth": 10.0}],'
        ' "injection": {"default": 0, "hosts": {"h1": 0.01}}}',
        fmt="json",
    )
    transfers = (
        Transfer("h0", "h1", ((0, 3),), pipelined=True),
        Transfer("h0", "h1", ((0, 3),), pipelined=True),
        Transfer("h1", "h0", ((0, 3),), pipelined=True),
        Transfer("h1", "h0", ((0, 3),), after=(2,), rate_cap=10.0),
        Transfer("h1", "h0", ((0, 3),), rate_cap=10.0),
    )
    plan = Plan("redistribute", 60, transfers, {"h0": [(0, 3)]}, {"h0": [(0, 3)]})
    check_plan(plan, topo)
    assert_agree(plan, topo)
    assert engine.simulate(plan, topo).transfer_times[3][0] == pytest.approx(0.61)


def test_a_simulation_that_stops_advancing_is_reported_not_a_hang(monkeypatch):
    """Should the engine ever keep firing events without time passing, it raises a
    SimulationError that says so instead of looping forever."""
    topo = random_tree(8, 2, seed=1)
    plan = random_plan(topo, 20, 1)
    calls = []

    def frozen(self):
        calls.append(1)
        assert len(calls) < 10**5, "no progress guard: the loop went on"
        return 0.0, [], [], []

    monkeypatch.setattr(engine._Sim, "_next_events", frozen)
    with pytest.raises(SimulationError, match="makes no progress"):
        engine.simulate(plan, topo)


def test_a_chain_over_shared_links_costs_at_most_a_few_full_recomputations_per_event(monkeypatch):
    """A pipeline through hosts on half-duplex links with equal rates and millisecond links:
    every flow shares a saturated link with the next, so the local recomputation grows a flow
    or two per round, each round solving the whole group again (a hundred times the flowing
    transfers per event on this chain). Past a budget of about twice the flowing transfers it
    recomputes all of them at once instead."""
    base = random_tree(200, 2, min_mbit=1000, max_mbit=1000, seed=3)
    hosts = set(base.hosts)
    topo = base.replace(
        links=[
            replace(pl, sharing="shared", latency=2.25e-3) if pl.a in hosts or pl.b in hosts else pl
            for pl in base.physical_links
        ]
    )
    plan = get_planner("broadcast", "depth_first")(topo, Broadcast(topo.hosts[0], 10**9))
    solve = engine._Sim._solve
    rebalance = engine._Sim._rebalance
    per_event = []  # [flowing transfers, flows solved] per recomputation

    def counted_solve(self, comp, residual):
        per_event[-1][1] += len(comp)
        return solve(self, comp, residual)

    def counted_rebalance(self, seeds):
        per_event.append([len(self.flowing), 0])
        return rebalance(self, seeds)

    monkeypatch.setattr(engine._Sim, "_solve", counted_solve)
    monkeypatch.setattr(engine._Sim, "_rebalance", counted_rebalance)
    engine.simulate(plan, topo)
    assert len(per_event) > 100
    worst = max(per_event, key=lambda e: e[1] - 4 * e[0])
    assert worst[1] <= 4 * worst[0] + 64, worst


@pytest.mark.parametrize("busy", [-1, 10**9], ids=["every-resource-a-set", "no-resource-a-set"])
def test_flows_over_a_resource_are_the_same_from_sets_or_routes(monkeypatch, busy):
    """The flows over a resource come from a set kept per resource or from the routes
    (``BUSY``); either way the simulation agrees with the reference."""
    monkeypatch.setattr(tuning, "BUSY", busy)
    topo = random_tree(40, 10, min_mbit=100, max_mbit=1000, asymmetric=True, seed=7)
    plan = random_plan(topo, 250, 7)
    assert_agree(plan, topo)


def test_pipelines_that_start_at_one_instant_agree_with_reference(monkeypatch):
    """Stable Broadcast on a tree without latencies: every hop of a pipeline starts at the
    instant its upstream does (found down the pipelines at once), and hosts that receive
    bytes twice have their coverage computed once per distinct problem."""
    topo = random_tree(60, 15, min_mbit=100, max_mbit=1000, seed=8)
    plan = get_planner("broadcast", "stable")(topo, Broadcast(topo.hosts[0], 10**9), rate_tolerance=0)
    starting_with, coverage_time = engine._Sim._starting_with, engine._Sim._coverage_time
    started_together, problems = [], []

    def counted_start(self, idx):
        out = starting_with(self, idx)
        started_together.append(len(out) - len(idx))
        return out

    def counted_coverage(self, *args):
        problems.append(1)
        return coverage_time(self, *args)

    monkeypatch.setattr(engine._Sim, "_starting_with", counted_start)
    monkeypatch.setattr(engine._Sim, "_coverage_time", counted_coverage)
    assert_agree(plan, topo)
    assert max(started_together) > 100
    assert 0 < len(problems) < len(plan.destinations)


def test_local_recompute_of_capped_pipelines_matches_a_full_one(monkeypatch):
    """Paced pipelines (Stable Broadcast): after every event, the rates kept when flows are
    released from their upstream at their cap are those of a full recomputation."""
    topo = random_tree(40, 10, min_mbit=100, max_mbit=1000, latency=0.002, seed=9)
    plan = get_planner("broadcast", "stable")(topo, Broadcast(topo.hosts[0], 10**9), rate_tolerance=0)
    events = _rates_checked_against_a_full_recompute(monkeypatch, plan, topo)
    assert len(events) > 50


def _pointer_jumping(nxt, steps):
    dist = np.zeros(len(nxt), dtype=np.int64)
    dist[steps] = nxt[steps] >= 0
    jump = nxt.copy()
    live = steps[jump[steps] >= 0]
    while len(live):
        dist[live] += dist[jump[live]]
        jump[live] = jump[jump[live]]
        live = live[jump[live] >= 0]
    return dist


@pytest.mark.parametrize("n", [1, 7, 1000, 1100, 5000, 40000])
def test_list_ranking_by_rulers_is_pointer_jumping(n):
    """Long lists are ranked by rulers walking to the next ruler; the ranks are those of plain
    pointer jumping, on lists of one or several chains visiting steps in random order."""
    rng = np.random.default_rng(n)
    for chains in (1, 3):
        order = rng.permutation(n + 5)[:n]
        nxt = np.full(n + 5, -1, dtype=np.int64)
        for part in np.array_split(order, chains):
            nxt[part[:-1]] = part[1:]
        steps = np.sort(order)
        assert (maxmin._steps_to_end(nxt, steps)[steps] == _pointer_jumping(nxt, steps)[steps]).all()


@pytest.mark.parametrize("size, bound", [(10, 10**6), (10**5, 1000)], ids=["sorted", "flag-table"])
def test_compact_ids_is_unique_with_inverse(size, bound):
    ids = np.random.default_rng(size).integers(0, bound, size)
    used, local = maxmin.compact_ids(ids, bound)
    want_used, want_local = np.unique(ids, return_inverse=True)
    assert (used == want_used).all() and (local == want_local).all()


def test_agenda_gives_entries_in_time_order_and_drops_stale_ones():
    rng = random.Random(4)
    runs = agenda.Agenda()
    plain = []
    for _ in range(30):
        times = np.array([rng.choice([0.5, 1.0, 2.0, rng.random() * 3]) for _ in range(rng.randint(1, 40))])
        ids = np.arange(len(plain), len(plain) + len(times))
        runs.push(times, ids)
        plain.extend(zip(times.tolist(), ids.tolist()))
    stale = {i for i in range(len(plain)) if rng.random() < 0.3}

    def valid(columns):
        return np.array([i not in stale for i in columns[1].tolist()], dtype=bool)

    runs.compact(valid)
    assert len(runs) == len(plain) - len(stale)
    live = sorted((t, i) for t, i in plain if i not in stale)
    limit = 0.0
    while live:
        first = runs.first(valid)
        assert first == live[0][0]
        limit = first + 0.25
        when, ids = runs.pop_until(limit)
        assert sorted(zip(when.tolist(), ids.tolist())) == [(t, i) for t, i in live if t <= limit]
        live = [(t, i) for t, i in live if t > limit]
    assert runs.first(valid) == math.inf and runs.pop_until(limit + 10) is None
