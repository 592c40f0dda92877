"""GGP / OGGP schedules: validity (matchings of <= k, every byte once), optimality at beta = 0,
the approximation ratio with beta > 0, and the plans (check_plan)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topocast.intervals import IntervalSet
from topocast.plan import Redistribution
from topocast.plan.check import check_plan
from topocast.planners.redistribute.brute_force import brute_force
from topocast.planners.redistribute.ggp import ggp, peel_schedule, regular_graph
from topocast.planners.redistribute.oggp import oggp
from topocast.redistribute import fig2_pattern, lower_bound, two_cluster_topology, validate_schedule

RATIO = 8 / 3  # Cohen, Jeannot, Padoy, Wagner (TPDS 2006): both are 8/3-approximations


def _exact_eta(m, k):
    """Optimal integer transfer time with beta = 0: max(W, ceil(P / k')), k' = min(k, active)."""
    if m.sum() == 0:
        return 0
    n1 = int((m.sum(axis=1) > 0).sum())
    n2 = int((m.sum(axis=0) > 0).sum())
    kk = min(k, n1, n2)
    return max(int(m.sum(axis=1).max()), int(m.sum(axis=0).max()), -(-int(m.sum()) // kk))


matrices = (
    st.integers(1, 7)
    .flatmap(
        lambda n1: st.integers(1, 7).flatmap(
            lambda n2: st.lists(
                st.lists(st.one_of(st.just(0), st.integers(1, 60)), min_size=n2, max_size=n2), min_size=n1, max_size=n1
            )
        )
    )
    .map(np.array)
)


@settings(max_examples=120, deadline=None)
@given(matrices, st.integers(1, 9), st.booleans(), st.sampled_from([1, 5, 17]))
def test_schedule_valid_and_bounded(m, k, bottleneck, unit):
    s = peel_schedule(m, k, unit=unit, bottleneck=bottleneck)
    validate_schedule(s, m, k)
    lb = lower_bound(m, k)
    if unit == 1:  # exact peeling reaches the optimum transfer time
        assert s.transfer_time(1.0) == _exact_eta(m, k)
    else:  # beta = unit (time units of one byte): within the proven ratio
        beta = float(unit)
        total = lower_bound(m, k, beta=beta).total
        assert s.cost(beta, 1.0) <= RATIO * total + 1e-9
        assert s.n_steps <= max(1, math.ceil((lb.eta + beta * lb.steps) / beta) + 1) or m.sum() == 0


def test_edge_cases():
    # empty rows and columns
    m = np.array([[0, 0, 0], [5, 0, 3], [0, 0, 0], [2, 0, 0]])
    for k in (1, 2, 10):
        s = peel_schedule(m, k)
        validate_schedule(s, m, k)
        assert s.transfer_time(1) == _exact_eta(m, k)
    # all empty
    assert peel_schedule(np.zeros((3, 2), dtype=int), 2).n_steps == 0
    # one huge message among small ones: W dominates
    m = np.ones((4, 4), dtype=int)
    m[0, 0] = 10**9
    for k in (1, 3, 4, 8):
        for b in (False, True):
            s = peel_schedule(m, k, bottleneck=b)
            validate_schedule(s, m, k)
            assert s.transfer_time(1) == _exact_eta(m, k)
    # k = 1: steps are single messages, total = P
    m = np.array([[3, 1], [2, 5]])
    s = peel_schedule(m, 1)
    validate_schedule(s, m, 1)
    assert s.transfer_time(1) == 11 and all(len(st_) == 1 for st_ in s.steps)


def test_regular_graph_is_regular():
    rng = np.random.default_rng(0)
    for _ in range(50):
        n1, n2 = rng.integers(1, 8, 2)
        x = rng.integers(0, 30, (n1, n2))
        x[0, 0] += 1
        x = x[x.sum(axis=1) > 0][:, x.sum(axis=0) > 0]
        k = int(min(rng.integers(1, 9), *x.shape))
        E, pad, R = regular_graph(x, k)
        assert (E.sum(axis=0) == R).all() and (E.sum(axis=1) == R).all()
        n1, n2 = x.shape
        assert (E[n1:, n2:] == 0).all()


def test_fig2_schedule_two_steps():
    r = fig2_pattern(unit=10**6)
    topo = two_cluster_topology(3, 3, nic=1e6, k=2, senders=r.senders, receivers=r.receivers)
    for planner in (ggp, oggp):
        plan = planner(topo, r)
        check_plan(plan, topo)
        assert plan.notes["steps"] == 2
        assert plan.notes["predicted_cost"] == pytest.approx(2.0)
    bf = brute_force(topo, r)
    check_plan(bf, topo)
    assert bf.notes["predicted_time"] == pytest.approx(2.5) and bf.notes["lower_bound"] == pytest.approx(2.0)


def _delivered(plan):
    """Bytes each receiver gets, as interval sets, and every block range sent exactly once."""
    got = {}
    seen = IntervalSet()
    total = 0
    for t in plan.transfers:
        got.setdefault(t.dst, IntervalSet()).add_ranges(t.ranges)
        seen.add_ranges(t.ranges)
        total += t.nbytes
    return got, seen, total


@settings(max_examples=40, deadline=None)
@given(matrices, st.integers(1, 9), st.sampled_from(["ggp", "oggp", "brute_force"]), st.sampled_from([0.0, 2.0]))
def test_plans_check_and_send_every_byte_once(m, k, name, beta):
    n1, n2 = m.shape
    topo = two_cluster_topology(n1, n2, nic=10.0, k=k)
    r = Redistribution(m, topo.hosts[:n1], topo.hosts[n1:], beta=beta)
    planner = {"ggp": ggp, "oggp": oggp, "brute_force": brute_force}[name]
    plan = planner(topo, r)
    check_plan(plan, topo)
    assert plan.collective == "redistribute" and plan.size == m.sum() and plan.source is None
    got, seen, total = _delivered(plan)
    assert total == m.sum() and seen.total == m.sum()  # no byte twice
    for h, rs in plan.wanted.items():
        assert got[h].covers_ranges(rs)
    if name != "brute_force":
        steps = {}
        for t in plan.transfers:
            steps.setdefault(t.label, []).append(t)
        for lab, ts in steps.items():
            assert len(ts) <= k
            assert len({t.src for t in ts}) == len(ts) and len({t.dst for t in ts}) == len(ts)


def test_barrier_encoding():
    r = fig2_pattern(unit=10)
    topo = two_cluster_topology(3, 3, nic=10, k=2, senders=r.senders, receivers=r.receivers)
    full = ggp(topo, r)
    assert [t.after for t in full.transfers] == [(), (), (0, 1), (0, 1)]
    longest = ggp(topo, r, barrier="longest")
    assert all(len(t.after) <= 1 for t in longest.transfers)
    assert longest.transfers[2].after == longest.transfers[3].after != ()


@settings(max_examples=60, deadline=None)
@given(matrices, st.integers(0, 48), st.integers(1, 20), st.booleans(), st.sampled_from([1, 10**6]))
def test_one_huge_message_and_large_k(m, where, k, bottleneck, unit):
    """One message 10^10 times the others, k from 1 to well above either cluster size."""
    m = m.copy()
    i, j = divmod(where % m.size, m.shape[1])
    m[i, j] = 10**11
    s = peel_schedule(m, k, unit=unit, bottleneck=bottleneck)
    validate_schedule(s, m, k)
    if unit == 1:
        assert s.transfer_time(1.0) == _exact_eta(m, k)
    else:
        assert s.cost(float(unit), 1.0) <= RATIO * lower_bound(m, k, beta=float(unit)).total


@pytest.mark.parametrize("n", [4, 7])
@pytest.mark.parametrize("beta", [0.05, 1.0, 20.0])
def test_complete_matrix_k_equals_n(n, beta):
    """docs/algorithms.md 7.3: raw peeling has no constant ratio on complete n x n matrices with
    k = n when beta > 0; the normalised peeling stays within 8/3."""
    rng = np.random.default_rng(n)
    m = rng.integers(1, 100, (n, n)) * 1000
    nic = 1000.0  # message times 0.001 .. 0.1 s x 1000 = 1 .. 99 s
    unit = max(1, int(round(beta * nic)))
    lb = lower_bound(m, n, nic=nic, beta=beta)
    for bott in (False, True):
        s = peel_schedule(m, n, unit=unit, bottleneck=bott)
        validate_schedule(s, m, n)
        assert s.cost(beta, nic) <= RATIO * lb.total


def test_auto_barrier_falls_back_to_longest(monkeypatch):
    import topocast.redistribute.kpbs as kpbs

    r = fig2_pattern(unit=10)
    topo = two_cluster_topology(3, 3, nic=10, k=2, senders=r.senders, receivers=r.receivers)
    assert ggp(topo, r).notes["barrier"] == "full"
    monkeypatch.setattr(kpbs, "FULL_BARRIER_LIMIT", 3)  # fig. 2 needs 2 x 2 = 4 entries
    plan = ggp(topo, r)
    assert plan.notes["barrier"] == "longest"
    check_plan(plan, topo)
