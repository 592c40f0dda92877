"""OGGP's bottleneck search (``ggp._bottleneck``: Hopcroft-Karp at the upper bound, then a
threshold-descent augmenting search over candidate edges).

Ties may make it pick another optimal matching than earlier versions did, so schedules are
not compared with a reference; what is checked, on the same ``E`` and starting matching:
the *value* equals a plain reference search (binary search over all distinct weights with a
fresh maximum matching per probe), the matching left behind is perfect, within the support,
and its smallest weight is that value; on tiny matrices the value is the brute-force maximum
over all perfect matchings of the smallest weight. Peeling with it stays exact.
"""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import maximum_bipartite_matching

import topocast.planners.redistribute.ggp as ggp_mod
from topocast.planners.redistribute.ggp import _bottleneck, peel_schedule, regular_graph
from topocast.redistribute import dense_pattern, random_pattern, validate_schedule


def _perfect_at(E, t) -> bool:
    m = maximum_bipartite_matching(csr_matrix((E >= t).astype(np.int8)), perm_type="column")
    return bool((m >= 0).all())


def _reference_value(E) -> int:
    """Largest t (a weight of E) such that E >= t has a perfect matching (support > 0)."""
    vals = np.unique(E[E > 0])
    lo, hi = 0, vals.size - 1  # vals[lo] feasible (weight-regular / perfect support), find last
    assert _perfect_at(E, vals[0])
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _perfect_at(E, vals[mid]):
            lo = mid
        else:
            hi = mid - 1
    return int(vals[lo])


def _brute_value(E) -> int:
    N = E.shape[0]
    best = 0
    for p in itertools.permutations(range(N)):
        w = E[np.arange(N), p]
        if (w > 0).all():
            best = max(best, int(w.min()))
    return best


def _start_matching(E, rng, drop_some=True):
    """A perfect matching of the support, some of its edges then freed (as in the peels)."""
    N = E.shape[0]
    mr = np.asarray(maximum_bipartite_matching(csr_matrix((E > 0).astype(np.int8)), perm_type="column"), dtype=np.int64)
    assert (mr >= 0).all()
    mc = np.full(N, -1, dtype=np.int64)
    mc[mr] = np.arange(N)
    if drop_some:
        for r in rng.choice(N, size=rng.integers(0, N + 1), replace=False):
            if rng.random() < 0.5:
                mc[mr[r]] = -1
                mr[r] = -1
    return mr, mc


def _check(E, mr, mc, cap=None, work=None):
    E0 = E.copy()
    b = _bottleneck(E, mr, mc, cap, work)
    N = E.shape[0]
    assert (E == E0).all()  # the search does not touch the weights
    assert (np.sort(mr) == np.arange(N)).all() and (mc[mr] == np.arange(N)).all()  # perfect
    w = E[np.arange(N), mr]
    assert (w > 0).all()  # within the support
    assert int(w.min()) == b  # its smallest weight is the returned value
    return b


def _regular(m, k, unit=1):
    x = -(-np.asarray(m, dtype=np.int64) // unit)
    x = x[x.sum(axis=1) > 0][:, x.sum(axis=0) > 0]
    E, _pad, _R = regular_graph(x, int(min(k, *x.shape)))
    return E


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("k, unit", [(3, 1), (5, 1), (5, 2_000_000), (12, 1)])
def test_value_equals_reference_random(seed, k, unit):
    rng = np.random.default_rng(seed)
    E = _regular(random_pattern(15, 12, 90, seed=seed).matrix, k, unit)
    mr, mc = _start_matching(E, rng)
    assert _check(E, mr, mc) == _reference_value(E)


@pytest.mark.parametrize("seed", range(3))
def test_value_equals_reference_dense_with_cap_and_work(seed):
    """Dense weight-regular matrices (the benchmark's shape), upper bound ``cap`` given, the
    candidate cache ``work`` reused across calls with decreasing weights, as in the peels."""
    rng = np.random.default_rng(seed)
    E = _regular(dense_pattern(30, 25, seed=seed).matrix, 6)
    mr, mc = _start_matching(E, rng, drop_some=False)
    work: dict = {}
    cap = None
    for _ in range(25):
        ref = _reference_value(E)
        b = _check(E, mr, mc, cap, work)
        assert b == ref
        cap = b
        N = E.shape[0]
        E[np.arange(N), mr] -= b  # peel: weights only decrease
        if E.sum() == 0:
            break


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 6).flatmap(
        lambda n: st.lists(
            st.lists(st.one_of(st.just(0), st.integers(1, 6)), min_size=n, max_size=n), min_size=n, max_size=n
        )
    ),
    st.integers(0, 2**32 - 1),
)
def test_tiny_matrices_brute_force(rows, seed):
    """Tie-heavy small weights; value = max over all perfect matchings of the min weight."""
    E = np.array(rows, dtype=np.int64)
    # keep only matrices whose support has a perfect matching
    if not _perfect_at(E, 1) or not (E > 0).any():
        return
    rng = np.random.default_rng(seed)
    mr, mc = _start_matching(E, rng)
    ref = _brute_value(E)
    cap = None
    if rng.random() < 0.5:
        cap = ref + int(rng.integers(0, 3))  # any valid upper bound
    assert _check(E, mr, mc, cap) == ref
    assert _reference_value(E) == ref


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 6).flatmap(
        lambda n1: st.integers(1, 6).flatmap(
            lambda n2: st.lists(
                st.lists(st.one_of(st.just(0), st.integers(1, 9)), min_size=n2, max_size=n2), min_size=n1, max_size=n1
            )
        )
    ),
    st.integers(1, 6),
)
def test_every_peel_value_matches_reference(rows, k):
    """Whole OGGP schedules on small tie-heavy matrices: at every peel the search's value
    equals the reference value on the same E, and the schedule is valid."""
    m = np.array(rows)
    calls = []
    orig = ggp_mod._bottleneck

    def checked(E, mr, mc, cap=None, work=None):
        ref = _reference_value(E)
        b = _check(E, mr, mc, cap, work)
        calls.append((b, ref))
        return b

    ggp_mod._bottleneck = checked
    try:
        s = peel_schedule(m, k, unit=1, bottleneck=True, algorithm="oggp")
    finally:
        ggp_mod._bottleneck = orig
    assert all(b == ref for b, ref in calls)
    if m.sum():
        validate_schedule(s, m, k)


def test_candidates_widened_when_the_answer_is_far_below_the_cap():
    """A cap far above the answer: the first candidate band holds no perfect matching, the
    search must widen it (down to the whole support) and still return the exact value."""
    rng = np.random.default_rng(7)
    E = _regular(dense_pattern(20, 20, seed=7).matrix, 5)
    mr, mc = _start_matching(E, rng)
    ref = _reference_value(E)
    assert _check(E, mr, mc, cap=int(E.max()) * 4) == ref
