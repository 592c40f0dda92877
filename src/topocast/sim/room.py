"""What the simulator's rooms read of one another, for the type checker: each room
(``state.Transfers``, ``coverage.Coverage``, ``rates.Rates``/``SmallRates``,
``compiled.CompiledRates``, ``agenda.Events``) is a mixin of ``engine._Sim`` and derives from ``Room``, which names the
attributes and methods the others own (docs/design.md, "Inside the simulator"). At run time
``Room`` is ``object``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from ..plan import Plan
    from ..plan.graph import PlanArrays

    class Room:
        # the state machine (state.Transfers)
        plan: Plan
        arrays: PlanArrays
        n: int
        t: float
        chunk: float
        size: np.ndarray
        status: np.ndarray
        sent0: np.ndarray
        t0: np.ndarray
        rate: np.ndarray
        upstream: np.ndarray
        base: np.ndarray
        released: np.ndarray
        unblocked: np.ndarray
        flow_cap: np.ndarray
        dst_id: np.ndarray
        res_ptr: np.ndarray
        res_idx: np.ndarray
        route_of: np.ndarray
        route_res: list[tuple[int, ...]]
        route_simple: list[bool]
        capacity: np.ndarray
        flowing: set[int]
        busy_senders: set[str]
        waiting_data: dict[int, set[int]]
        waiting_upstream: set[int]
        to_check: list[int]
        _sent: Callable[..., float]
        _sent_vec: Callable[..., np.ndarray]
        _flows_on: Callable[..., Any]
        _route_pairs: Callable[..., tuple[np.ndarray, np.ndarray]]
        _downstream: Callable[..., np.ndarray]
        _downstream_of: Callable[..., list[int]]
        _schedule_activation: Callable[..., None]
        _upstream_state: Callable[..., tuple[bool, float, float]]
        # coverage bookkeeping (coverage.Coverage)
        redundant: set[str]
        done_in: np.ndarray
        unmerged_bytes: np.ndarray
        left_all: np.ndarray
        left_bytes: np.ndarray
        _stale: Callable[..., None]
        _stale_all: Callable[..., None]
        _held: Callable[..., Any]
        _received: Callable[..., None]
        _schedule_coverage: Callable[..., None]
        # rate solving (rates.Rates, rates.SmallRates)
        usage: np.ndarray
        n_users: np.ndarray
        cap_now: np.ndarray
        coupled_now: np.ndarray
        started: list[int]
        dirty: set[int]
        freed: set[int]
        _couple: Callable[..., None]
        _pinned: Callable[..., bool]
        _solve_small: Callable[..., tuple[list[float], tuple]]
        _unsettled_small: Callable[..., set[int]]
        _apply_small: Callable[..., np.ndarray]
        # group solves on compiled kernels (compiled.CompiledRates)
        compile_error: str
        _init_compiled: Callable[..., bool]
        _solve_compiled: Callable[..., tuple]
        _unsettled_compiled: Callable[..., set[int]]
        _apply_compiled: Callable[..., np.ndarray]
        # the agenda (agenda.Events)
        ver: np.ndarray
        _seq: Any
        flow_heap: list[tuple]
        phase_heap: list[tuple]
        inject_heap: list[tuple]
        _schedule: Callable[..., None]
        _schedule_one: Callable[..., None]
        _compact_heap: Callable[..., None]

else:
    Room = object
