"""OGGP's bottleneck search takes its candidate weights lazily (the few largest, from a
partial sort) instead of sorting all of them every peel. The probes it makes — and so the
matchings it adopts and the schedule — must be exactly those of the plain search over the
full sorted list, kept here as the reference."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topocast.planners.redistribute.ggp as ggp_mod
from topocast.planners.redistribute.ggp import _TopDistinct, peel_schedule
from topocast.redistribution import dense_pattern, random_pattern


def _reference_bottleneck(E, mate_r, mate_c, cap=None):
    """The search before the lazy candidates (full ``np.unique`` every peel), verbatim."""
    N = E.shape[0]
    ar = np.arange(N)
    lo = E[ar, mate_r].min()
    hi = min(E.max(axis=1).min(), E.max(axis=0).min())
    if cap is not None:
        hi = min(hi, cap)
    if hi <= lo:
        return int(lo)

    def probe(t) -> bool:
        S = E >= t
        mr, mc = mate_r.copy(), mate_c.copy()
        bad = np.flatnonzero(E[ar, mr] < t)
        if bad.size > 4:
            mr = np.asarray(ggp_mod.maximum_bipartite_matching(ggp_mod._csr(S), perm_type="column"), dtype=np.int64)
            if not (mr >= 0).all():
                return False
            mc[mr] = ar
        else:
            mc[mr[bad]] = -1
            mr[bad] = -1
            for r in bad:
                if not ggp_mod._augment(S, mr, mc, int(r)):
                    return False
        mate_r[:] = mr
        mate_c[:] = mc
        return True

    if probe(hi):
        return int(hi)
    cand = np.unique(E[(E > lo) & (E < hi)])
    a, b = -1, len(cand) - 1
    step = 1
    while a < b:
        mid = len(cand) - step
        if mid <= a:
            break
        if probe(cand[mid]):
            a = mid
            break
        b = mid - 1
        step *= 2
    while a < b:
        mid = (a + b + 1) // 2
        if probe(cand[mid]):
            a = mid
        else:
            b = mid - 1
    return int(lo if a < 0 else cand[a])


def _both(m, k, unit, monkeypatch):
    new = peel_schedule(m, k, unit=unit, bottleneck=True, algorithm="oggp")
    with monkeypatch.context() as mp:
        mp.setattr(ggp_mod, "_bottleneck", _reference_bottleneck)
        ref = peel_schedule(m, k, unit=unit, bottleneck=True, algorithm="oggp")
    return new, ref


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("k, unit", [(3, 1), (5, 1), (5, 2_000_000), (12, 1)])
def test_same_schedule_as_the_full_search_random(seed, k, unit, monkeypatch):
    m = random_pattern(15, 12, 90, seed=seed).matrix
    new, ref = _both(m, k, unit, monkeypatch)
    assert new.steps == ref.steps and new.info == ref.info


@pytest.mark.parametrize("k, unit", [(4, 1), (10, 1), (10, 500_000)])
def test_same_schedule_as_the_full_search_dense(k, unit, monkeypatch):
    m = dense_pattern(25, 20, seed=3).matrix
    new, ref = _both(m, k, unit, monkeypatch)
    assert new.steps == ref.steps and new.info == ref.info


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 6).flatmap(
        lambda n1: st.integers(1, 6).flatmap(
            lambda n2: st.lists(st.lists(st.one_of(st.just(0), st.integers(1, 9)), min_size=n2, max_size=n2), min_size=n1, max_size=n1)
        )
    ),
    st.integers(1, 6),
)
def test_same_schedule_small_matrices_with_ties(rows, k):
    """Small weights: many equal values, so the lazy prefix often holds few distinct ones."""
    m = np.array(rows)
    new = peel_schedule(m, k, unit=1, bottleneck=True, algorithm="oggp")
    orig = ggp_mod._bottleneck
    ggp_mod._bottleneck = _reference_bottleneck
    try:
        ref = peel_schedule(m, k, unit=1, bottleneck=True, algorithm="oggp")
    finally:
        ggp_mod._bottleneck = orig
    assert new.steps == ref.steps


@given(st.lists(st.integers(0, 30), max_size=400))
def test_top_distinct_matches_sorted_unique(vals):
    v = np.array(vals, dtype=np.int64)
    ref = np.unique(v)[::-1]
    top = _TopDistinct(v)
    for r in (1, 2, 5, 64, 65, 200):
        assert top.has(r) == (r <= ref.size)
        if r <= ref.size:
            assert top.get(r) == ref[r - 1]
    assert top.count() == ref.size


def test_top_distinct_grows_past_the_first_partition():
    rng = np.random.default_rng(1)
    v = rng.integers(0, 10**6, 5000)
    ref = np.unique(v)[::-1]
    top = _TopDistinct(v)
    assert top.get(1) == ref[0] and top.desc.size < ref.size  # a prefix only
    for r in (64, 65, 300, 1000, ref.size):
        assert top.get(r) == ref[r - 1]
    assert not top.has(ref.size + 1) and top.count() == ref.size
