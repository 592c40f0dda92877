"""The rate room's group solve on compiled kernels (``simulate(..., core="compiled")``):
``_solve``, ``_unsettled`` and ``_apply`` of a group of flows of any size run in
``sim.kernels`` (numba), with the operations of ``rates.SmallRates`` in the same order, so
the rates are those of the reference core to the last bit.

``CompiledRates`` is a mixin of the simulator (``engine._Sim``) beside ``Rates``; the
kernels module (and numba) is imported when a simulation asks for this core, never before.
"""

from __future__ import annotations

import importlib.util

import numpy as np

from .room import Room


def compiled_available() -> bool:
    """numba is installed (looked up without importing it)."""
    return importlib.util.find_spec("numba") is not None


class CompiledRates(Room):
    """Group solves on compiled kernels (a mixin of ``_Sim``)."""

    def _init_compiled(self) -> bool:
        """Import the kernels (numba); False, with the reason in ``compile_error``, when
        numba cannot be imported or has nowhere to cache its machine code."""
        try:
            from . import kernels  # numba: paid only by simulations on compiled kernels
        except (ImportError, RuntimeError, OSError) as e:
            self.compile_error = f"{type(e).__name__}: {e}"
            return False
        self.kernels = kernels
        self.local_of = np.full(len(self.capacity), -1, dtype=np.int64)
        return True

    def _solve_compiled(self, comp: np.ndarray, residual: bool) -> tuple[np.ndarray, tuple]:
        rates, route_ptr, route_loc, used, parent, behind = self.kernels.solve_group(
            comp,
            self.res_ptr,
            self.res_idx,
            self.route_of,
            self.capacity,
            self.usage,
            self.rate,
            self.cap_now,
            self.coupled_now,
            residual,
            self.local_of,
        )
        if len(behind):
            # a coupled flow held below its upstream's rate falls behind (as in Rates._solve)
            self.dirty.update(behind.tolist())
        return rates, (route_ptr, route_loc, used, parent)

    def _unsettled_compiled(self, group: set[int], comp: np.ndarray, rates: np.ndarray, incidence: tuple) -> set[int]:
        route_ptr, route_loc, used, parent = incidence
        crowded, lows = self.kernels.crowded_resources(
            comp,
            rates,
            route_ptr,
            route_loc,
            used,
            parent,
            self.capacity,
            self.usage,
            self.n_users,
            self.rate,
            self.cap_now,
        )
        more: set[int] = set()
        rate = self.rate
        for r, low in zip(crowded.tolist(), lows.tolist()):
            for g in self._flows_on(r):
                if g not in group and g not in more and (rate[g] > low or not self._pinned(g)):
                    more.add(g)
        return more

    def _apply_compiled(self, comp: np.ndarray, rates: np.ndarray, incidence: tuple) -> np.ndarray:
        route_ptr, route_loc, used, _ = incidence
        idx = self.kernels.apply_rates(
            comp, rates, route_ptr, route_loc, used, self.rate, self.sent0, self.t0, self.usage, self.t
        )
        if len(idx):
            self._stale_all(idx)
        return idx
