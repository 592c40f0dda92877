"""KPBS bounds and the brute-force estimate (Jeannot & Wagner, AINA 2006, section 3)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topocast.errors import PlanError
from topocast.redistribute import Schedule, brute_force_time, fig2_pattern, lower_bound, validate_schedule


def test_fig2_bound_and_brute_force():
    m = fig2_pattern(unit=1).matrix
    lb = lower_bound(m, 2)
    assert lb.eta == 2.0 and lb.p_over_k == 2.0 and lb.w == 2.0
    assert lb.steps == 2  # max degree 1, 3 messages / k = 2 -> 2 steps
    t, events = brute_force_time(m, 2, return_events=True)
    assert t == pytest.approx(2.5)  # 25 % above the bound, as in the paper
    assert events[0][0] == pytest.approx(1.5) and sorted(events[0][1]) == [(0, 0), (1, 1)]


def test_figure1_cost_formula():
    # Fig. 1: steps of 5, 4 and 2 with beta = 1 cost 3 + 11 = 14
    s = Schedule((((0, 0, 5),), ((1, 1, 4),), ((0, 0, 2),)), k=2)
    assert s.cost(1.0, 1.0) == 14.0


def test_max_min_respects_nic():
    # the paper's rule min(1, k/|A|) would give 1.0 < W = 2 here (docs/algorithms.md 7.5)
    assert brute_force_time(np.array([[1, 1], [0, 0]]), 2) == pytest.approx(2.0)


def test_units_and_nic():
    m = np.array([[100, 0], [0, 300]])
    assert brute_force_time(m, 1, nic=100.0) == pytest.approx(4.0)  # both share one backbone
    assert lower_bound(m, 1, nic=100.0).eta == pytest.approx(4.0)
    assert brute_force_time(np.zeros((2, 2)), 1) == 0.0


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 6).flatmap(
        lambda n1: st.integers(1, 6).flatmap(
            lambda n2: st.lists(st.lists(st.integers(0, 20), min_size=n2, max_size=n2), min_size=n1, max_size=n1)
        )
    ),
    st.integers(1, 7),
)
def test_brute_force_never_beats_the_bound(rows, k):
    m = np.array(rows)
    t = brute_force_time(m, k)
    lb = lower_bound(m, k)
    assert t >= lb.eta - 1e-9
    assert t <= m.sum() + 1e-9  # never slower than sending one message after the other


def test_validate_schedule_rejects():
    m = np.array([[2, 1], [0, 3]])
    ok = Schedule((((0, 0, 2), (1, 1, 3)), ((0, 1, 1),)), k=2)
    validate_schedule(ok, m, 2)
    with pytest.raises(PlanError, match="more than k"):
        validate_schedule(ok, m, 1)
    with pytest.raises(PlanError, match="matching"):
        validate_schedule(Schedule((((0, 0, 2), (0, 1, 1)), ((1, 1, 3),)), k=2), m, 2)
    with pytest.raises(PlanError, match="expected 3"):
        validate_schedule(Schedule((((0, 0, 2), (1, 1, 2)), ((0, 1, 1),)), k=2), m, 2)
