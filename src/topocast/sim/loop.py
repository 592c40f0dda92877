"""The whole event loop compiled (``sim.loop_kernels``, numba) for the plans whose events
need none of the reference engine's general machinery: the MPI collectives' plans
(rings, recursive doubling, binomial trees, Rabenseifner), whose transfers by the hundred
thousand made the Python loop's cost per event the whole cost (docs/performance.md, "The
simulator beside SMPI").

A plan qualifies (``loop_inputs``) when no transfer is pipelined, no sender has an
injection time, every transfer carries bytes over a route that bounds its rate, and no host
receives a byte twice or a byte it held; and when each transfer's bytes are, at its sender,
either all held from the start or all brought by other transfers, each byte by exactly one.
Then a transfer is ready once a counter reaches zero: its ``after`` predecessors and the
transfers bringing its bytes each count one. Other plans take the engine's loop.

The compiled loop performs the reference engine's operations in the same order, so its
predictions are the reference core's (tests/sim/test_cores.py). A plan that cannot complete
is handed back to the engine, which says why.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from ..intervals import inside_grouped, merge_grouped, overlaps_grouped
from ..plan.graph import csr_rows
from .state import DONE

if TYPE_CHECKING:
    from ..results import Result
    from .engine import _Sim

__all__ = ["loop_inputs", "run_loop"]


def loop_inputs(sim: _Sim) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The readiness counters of a plan that qualifies for the compiled loop (``need``, and
    as CSR the transfers each transfer's end counts down), or None."""
    a = sim.arrays
    n = sim.n
    if n == 0 or (sim.upstream >= 0).any() or (sim.inject > 0).any() or (sim.size <= 0).any() or sim.redundant:
        return None
    bounded = (np.diff(sim.res_ptr) > 0)[sim.route_of] | np.isfinite(sim.flow_cap)
    if not bounded.all() or sim.is_redundant[sim.dst_id].any():
        return None
    if a.seq_off.size and (int(a.seq_off.max() + a.seq_len.max()) + 1) * (len(a.host_name) + 1) >= 2**62:
        return None
    providers = _providers(sim)
    if providers is None:
        return None
    before, after = np.repeat(np.arange(n), np.diff(sim.dep_ptr)), sim.dep_idx
    before = np.concatenate((before, providers[0]))
    after = np.concatenate((after, providers[1]))
    order = np.argsort(before, kind="stable")
    next_ptr = np.searchsorted(before[order], np.arange(n + 1))
    need = np.bincount(after, minlength=n).astype(np.int64)
    return need, next_ptr.astype(np.int64), after[order].astype(np.int64)


def _providers(sim: _Sim) -> tuple[np.ndarray, np.ndarray] | None:
    """(provider, transfer) pairs: the transfers into each transfer's sender that bring the
    bytes it sends; None when some transfer's bytes are partly held from the start, or not
    each brought exactly once."""
    a = sim.arrays
    n = sim.n
    pos, counts = csr_rows(a.seq_ptr, a.seq_of)
    owner = np.repeat(np.arange(n), counts)
    start = a.seq_off[pos]
    end = start + a.seq_len[pos]
    src, dst = a.src[owner], a.dst[owner]
    # a transfer's own ranges are disjoint
    g, s, e = merge_grouped(owner, start, end)
    if not np.array_equal(np.bincount(g, weights=e - s, minlength=n), a.nbytes.astype(float)):
        return None
    init = [(a.host_id[h], off, off + ln) for h, rs in sim.plan.initial.items() for off, ln in rs]
    held = merge_grouped(*np.array(init, dtype=np.int64).reshape(-1, 3).T)
    inside = np.bincount(owner, weights=inside_grouped(src, start, end, held), minlength=n) == counts
    meets = np.bincount(owner, weights=overlaps_grouped(src, start, end, held), minlength=n) > 0
    if (meets & ~inside).any():
        return None
    # what each host that sends bytes it received receives, each byte once
    needy = ~inside[owner]
    into = np.isin(dst, src[needy])
    order = np.lexsort((start[into], dst[into]))
    h_in, s_in, e_in, o_in = (x[into][order] for x in (dst, start, end, owner))
    if ((h_in[1:] == h_in[:-1]) & (s_in[1:] < e_in[:-1])).any():
        return None
    span = int(max(end.max(), 1)) + 1
    lo = np.searchsorted(h_in * span + e_in, src[needy] * span + start[needy], side="right")
    hi = np.searchsorted(h_in * span + s_in, src[needy] * span + end[needy], side="left")
    k = np.maximum(hi - lo, 0)
    piece = np.repeat(np.arange(len(lo)), k)
    j = np.repeat(lo, k) + np.arange(len(piece)) - np.repeat(np.cumsum(k) - k, k)
    got = np.minimum(e_in[j], end[needy][piece]) - np.maximum(s_in[j], start[needy][piece])
    brought = np.bincount(owner[needy][piece], weights=got, minlength=n)
    if not np.array_equal(brought[~inside], a.nbytes[~inside].astype(float)):
        return None
    pairs = np.unique(o_in[j] * n + owner[needy][piece])
    return pairs // n, pairs % n


def run_loop(sim: _Sim, inputs: tuple, on_progress: Callable[[int, int], object] | None, every: int) -> Result | None:
    """Simulate on the compiled loop; None when the plan cannot complete (the engine then
    finds and reports why)."""
    from . import loop_kernels as lk  # numba: imported only by simulations that take this loop

    n = sim.n
    need, next_ptr, next_idx = inputs
    routes = len(sim.res_ptr) - 1
    simple = np.array([len(set(sim.res_idx[a:b].tolist())) == b - a for a, b in zip(sim.res_ptr[:-1], sim.res_ptr[1:])])
    rp_route = np.repeat(np.arange(routes), np.diff(sim.res_ptr))
    n_res = len(sim.capacity)

    def ints(k, fill=-1):
        return np.full(k, fill, dtype=np.int64)

    def heap():
        return ints(n), ints(n), np.zeros(n), ints(1, 0)

    net = (sim.res_ptr.astype(np.int64), sim.res_idx.astype(np.int64), sim.route_of.astype(np.int64))
    net += (np.asarray(sim.capacity, dtype=float), simple, rp_route)
    tr = (sim.size, sim.latency.astype(float), sim.reduce_delay, sim.flow_cap.astype(float), next_ptr, next_idx)
    status = np.zeros(n, dtype=np.int8)
    flow_start, t_done = np.full(n, math.nan), np.full(n, math.nan)
    fl = (status, flow_start, t_done, np.zeros(n), np.zeros(n), np.zeros(n), np.full(n, math.nan), need.copy())
    rr = (np.zeros(n_res), ints(n_res, 0), ints(n), ints(n_res))
    mem = (ints(n), ints(n), ints(n), ints(n), ints(routes), ints(routes, 0))
    mem += (ints(len(rp_route)), ints(len(rp_route)), ints(n_res), rp_route)
    buf = (ints(n), ints(n), ints(n_res), np.zeros(n_res, dtype=np.bool_), ints(n))
    marks = (np.zeros(n, dtype=np.bool_), np.zeros(n, dtype=np.bool_))
    clock = np.zeros(1)
    ist = ints(9, 0)
    ready = np.flatnonzero(need == 0)
    buf[0][: len(ready)] = ready[::-1]
    ist[lk.N_CHECK] = len(ready)
    fh, ph = heap(), heap()
    still_limit = 8 * n + 1000
    while True:
        code = lk.run(net, tr, fl, rr, mem, fh, ph, buf, marks, clock, ist, every if on_progress else 0, still_limit)
        if code != lk.PAUSE:
            break
        on_progress(int(ist[lk.N_DONE]), n)
    if code != lk.FINISHED:
        return None
    return _result(sim, flow_start, t_done, float(clock[0]))


def _result(sim: _Sim, flow_start: np.ndarray, t_done: np.ndarray, t: float) -> Result:
    """The prediction: each wanted host is done when its last incoming transfer is (or at
    the start, receiving none) if it then holds every byte it wants (always, for allreduce)."""
    a = sim.arrays
    sim.status[:] = DONE
    sim.t = t
    sim.flow_start, sim.t_done = flow_start, t_done
    sim.done_in = np.bincount(sim.dst_id, minlength=len(a.host_name))
    for h in sim.wanted:
        k = a.host_id[h]
        into = a.incoming(k)
        if sim.allreduce or sim._held(k).covers_ranges(sim.wanted[h]):
            sim.host_done[h] = float(t_done[into].max()) if len(into) else 0.0
    return sim._result()

