"""The shared HiGHS helper of the capacity LPs (topocast.lp)."""

import math

import numpy as np
import pytest

from topocast.errors import LinearProgramError, PlanError, TopocastError
from topocast.lp import capacity_scale, limited_rows, solve


def test_limited_rows_keep_finite_used_resources():
    cap = np.array([5.0, math.inf, 3.0, 7.0])
    used = np.array([True, True, False, True])
    assert limited_rows(used, cap).tolist() == [0, 3]


def test_capacity_scale_is_the_largest_finite_capacity():
    assert capacity_scale(np.array([2.0, math.inf, 8.0])) == 8.0
    assert capacity_scale(np.array([math.inf])) == 1.0
    assert capacity_scale(np.array([])) == 1.0


def test_solve_finds_the_optimum_of_a_capacity_lp():
    # two columns sharing one resource of capacity 1, the second alone on one of capacity 0.25
    res = solve(
        np.array([-1.0, -1.0]), np.array([[1.0, 1.0], [0.0, 1.0]]), np.array([1.0, 0.25]), (0, None), problem="t"
    )
    assert res.status == 0
    assert -res.fun == pytest.approx(1.0)


def test_solve_names_the_problem_when_no_optimum():
    infeasible = (np.array([1.0]), np.array([[-1.0]]), np.array([-2.0]), [(0.0, 1.0)])  # x >= 2, x <= 1
    with pytest.raises(LinearProgramError, match="my bound: the LP found no optimum") as info:
        solve(*infeasible, problem="my bound")
    assert isinstance(info.value, TopocastError) and isinstance(info.value, RuntimeError)
    with pytest.raises(PlanError, match="planner x"):
        solve(*infeasible, problem="planner x", error=PlanError)
    assert solve(*infeasible, problem=None).status != 0
