"""Linear programmes over link capacities, solved with HiGHS (``scipy.optimize.linprog``).

The planners' rate LPs and the route-aware and relay bounds all share one shape: one
column per tree, pipeline or host, one row per limited resource (``uses @ x <= capacity``),
maximised by minimising a negated objective. This module holds the parts they share:

* :func:`limited_rows` — the rows worth writing down: a resource with an infinite
  capacity bounds nothing (and ``linprog`` rejects an infinite right-hand side), and one
  no column uses is an empty row;
* :func:`capacity_scale` — the unit the capacities are written in, so that the right-hand
  sides are at most 1 and HiGHS's absolute tolerances are relative to the links (bytes/s
  run to 1e10 and beyond);
* :func:`solve` — one HiGHS call, with a clear error when it finds no optimum.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import LinearProgramError

if TYPE_CHECKING:
    from scipy.optimize import OptimizeResult

__all__ = ["capacity_scale", "limited_rows", "solve"]


def limited_rows(used: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Indices of the resources a capacity LP needs: a finite capacity, and used by some
    column (``used``: one bool per resource)."""
    return np.flatnonzero(np.isfinite(capacity) & np.asarray(used, dtype=bool))


def capacity_scale(capacity: np.ndarray) -> float:
    """The largest finite capacity of ``capacity`` (1.0 if none): divide the right-hand
    sides by it before :func:`solve`, multiply the rates by it after."""
    capacity = np.asarray(capacity, dtype=float)
    finite = np.isfinite(capacity)
    return float(capacity[finite].max()) if finite.any() else 1.0


def solve(
    objective: np.ndarray,
    a_ub: Any,
    b_ub: np.ndarray,
    bounds: Sequence[tuple[float, float | None]] | tuple[float, float | None],
    *,
    problem: str | None,
    error: Callable[[str], Exception] = LinearProgramError,
) -> OptimizeResult:
    """Minimise ``objective @ x`` subject to ``a_ub @ x <= b_ub`` and ``bounds`` with HiGHS.

    ``a_ub`` may be dense or a scipy sparse matrix. ``problem`` names what the LP computes;
    when HiGHS reports anything but an optimum, ``error`` (an exception class or factory
    taking the message) is raised with ``"<problem>: the LP found no optimum (<HiGHS's
    message>)"``. With ``problem=None`` the result is returned whatever its status, for
    callers that have a fallback and read ``status`` themselves.
    """
    from scipy.optimize import linprog

    result = linprog(objective, A_ub=a_ub, b_ub=b_ub, bounds=bounds, method="highs")
    if problem is not None and result.status != 0:
        raise error(f"{problem}: the LP found no optimum ({result.message})")
    return result
