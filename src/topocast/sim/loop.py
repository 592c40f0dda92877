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
transfers bringing its bytes each count one. Other plans take the engine's loop. ``sim`` below is the engine's simulator object
(``engine._Sim``), whose arrays the loop reads.

The compiled loop performs the reference engine's operations in the same order, so its
predictions are the reference core's (tests/sim/test_cores.py). A plan that cannot complete
is handed back to the engine, which says why.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..intervals import merge_grouped
from ..plan.graph import csr_rows
from . import tuning
from .state import DONE

if TYPE_CHECKING:
    from ..results import Result

__all__ = ["loop_inputs", "run_loop"]


def loop_inputs(sim: Any) -> dict | None:
    """What the compiled loop needs beyond the engine's arrays, for a plan that qualifies
    (None otherwise): per transfer, the segments of its bytes its sender does not hold from
    the start and, per segment, the transfers that bring it (any one will do); per host
    that may receive bytes twice, the byte of each transfer's sequence at which each of its
    wanted segments arrives (``coverage``)."""
    n = sim.n
    if n == 0 or (sim.upstream >= 0).any() or (sim.inject > 0).any() or (sim.size <= 0).any():
        return None
    bounded = (np.diff(sim.res_ptr) > 0)[sim.route_of] | np.isfinite(sim.flow_cap)
    if not bounded.all():
        return None
    try:
        from . import loop_kernels as lk  # numba: imported only by simulations that take this loop
    except (ImportError, RuntimeError, OSError):
        return None  # numba missing or unusable (nowhere to cache): the engine's loop

    a = sim.arrays
    pos, counts = csr_rows(a.seq_ptr, a.seq_of)
    owner = np.repeat(np.arange(n), counts)
    start = a.seq_off[pos]
    end = start + a.seq_len[pos]
    order = np.lexsort((start, a.dst[owner]))
    n_hosts = len(a.host_name)
    received = (np.searchsorted(a.dst[owner][order], np.arange(n_hosts + 1)), start[order], end[order])
    init = [(a.host_id[h], off, off + ln) for h, rs in sim.plan.initial.items() for off, ln in rs]
    g, s, e = merge_grouped(*np.array(init, dtype=np.int64).reshape(-1, 3).T)
    held = (np.searchsorted(g, np.arange(n_hosts + 1)), s, e)
    seg_query, _, car_seg, car_piece = lk.cover_segments(a.src[owner], start, end, *received, *held)
    seg_owner = owner[seg_query]
    provider = owner[order][car_piece]
    by_provider = np.argsort(provider, kind="stable")
    out = {
        "need": sim.waiting.astype(np.int64) + np.bincount(seg_owner, minlength=n),
        "prov_ptr": np.searchsorted(provider[by_provider], np.arange(n + 1)),
        "prov_seg": car_seg[by_provider],
        "seg_owner": seg_owner,
    }
    out.update(_coverage_queries(sim, owner[order], sim.seq_pos[pos][order], received, held))
    return out


def _coverage_queries(sim: Any, piece_owner, piece_pos, received, held) -> dict:
    """For the wanted hosts that may receive bytes twice: their wanted segments not held
    from the start, and for each transfer the positions in its sequence (ascending) at which
    it delivers the last byte of a segment it carries (a threshold; ``q_ptr`` CSR)."""
    from . import loop_kernels as lk

    a, n = sim.arrays, sim.n
    hosts = sorted(a.host_id[h] for h in sim.redundant)
    wanted = [(k, off, off + ln) for k in hosts for off, ln in sim.wanted[a.host_name[k]]]
    # contiguous columns: the kernel then has one signature (one cache entry to load)
    q_host, q_start, q_end = np.array(wanted, dtype=np.int64).reshape(-1, 3).T.copy()
    seg_query, seg_end, car_seg, car_piece = lk.cover_segments(q_host, q_start, q_end, *received, *held)
    carrier = piece_owner[car_piece]
    threshold = piece_pos[car_piece] + seg_end[car_seg] - received[1][car_piece]
    order = np.lexsort((threshold, carrier))
    return {
        "q_ptr": np.searchsorted(carrier[order], np.arange(n + 1)),
        "q_pos": threshold[order].astype(float),
        "q_seg": car_seg[order],
        "seg_host": q_host[seg_query],
        "cover_hosts": np.array(hosts, dtype=np.int64),
    }


def run_loop(sim: Any, inputs: dict, on_progress: Callable[[int, int], object] | None, every: int) -> Result | None:
    """Simulate on the compiled loop; None when the plan cannot complete (the engine then
    finds and reports why)."""
    from . import loop_kernels as lk

    n = sim.n
    routes = len(sim.res_ptr) - 1
    simple = np.array([len(set(sim.res_idx[a:b].tolist())) == b - a for a, b in zip(sim.res_ptr[:-1], sim.res_ptr[1:])])
    rp_route = np.repeat(np.arange(routes), np.diff(sim.res_ptr))
    n_res = len(sim.capacity)

    def ints(k, fill=-1):
        return np.full(k, fill, dtype=np.int64)

    def heap():
        return ints(n), ints(n), np.zeros(n), ints(1, 0)

    net: tuple = (sim.res_ptr.astype(np.int64), sim.res_idx.astype(np.int64), sim.route_of.astype(np.int64))
    net += (np.asarray(sim.capacity, dtype=float), simple.astype(np.bool_), rp_route)
    tr: tuple = (sim.size, sim.latency.astype(float), sim.reduce_delay, sim.flow_cap.astype(float))
    tr += (sim.dep_ptr.astype(np.int64), sim.dep_idx.astype(np.int64))
    tr += tuple(inputs[k].astype(np.int64) for k in ("prov_ptr", "prov_seg", "seg_owner"))
    flow_start, t_done = np.full(n, math.nan), np.full(n, math.nan)
    fl: tuple = (np.zeros(n, dtype=np.int8), flow_start, t_done, np.zeros(n), np.zeros(n), np.zeros(n))
    fl += (np.full(n, math.nan), inputs["need"].copy(), np.zeros(len(inputs["seg_owner"]), dtype=np.bool_))
    rr = (np.zeros(n_res), ints(n_res, 0), ints(n), ints(n_res))
    mem: tuple = (ints(n), ints(n), ints(n), ints(n), ints(routes), ints(routes, 0))
    mem += (ints(len(rp_route)), ints(len(rp_route)), ints(n_res), rp_route)
    q_ptr = inputs["q_ptr"].astype(np.int64)
    q_time = np.full(len(inputs["q_pos"]), math.inf)
    cov = (q_ptr, inputs["q_pos"], q_time, q_ptr[:-1].copy())
    buf = (ints(n), ints(n), ints(n_res), np.zeros(n_res, dtype=np.bool_), ints(n))
    marks = (np.zeros(n, dtype=np.bool_), np.zeros(n, dtype=np.bool_))
    clock = np.zeros(1)
    ist = sim.loop_counters = ints(14, 0)
    ist[lk.COMPONENT_MIN], ist[lk.COMPONENT_LIMIT] = tuning.LOCAL_COMPONENT_MIN, tuning.LOCAL_COMPONENT_LIMIT
    ready = np.flatnonzero(inputs["need"] == 0)
    buf[0][: len(ready)] = ready[::-1]
    ist[lk.N_CHECK] = len(ready)
    fh, ph = heap(), heap()
    still_limit = 8 * n + 1000
    while True:
        code = lk.run(
            net, tr, fl, rr, mem, cov, fh, ph, buf, marks, clock, ist, every if on_progress else 0, still_limit
        )
        if code != lk.PAUSE:
            break
        if on_progress is not None:
            on_progress(int(ist[lk.N_DONE]), n)
    if code != lk.FINISHED:
        return None
    return _result(sim, inputs, flow_start, t_done, q_time, float(clock[0]))


def _result(sim: Any, inputs: dict, flow_start, t_done, q_time, t: float) -> Result:
    """The prediction. A host that receives each byte once is done when its last incoming
    transfer is (or at the start, receiving none) if it then holds every byte it wants
    (always, for allreduce); one that may receive bytes twice, when the last of its wanted
    segments first arrives."""
    a = sim.arrays
    sim.status[:] = DONE
    sim.t = t
    sim.flow_start, sim.t_done = flow_start, t_done
    sim.done_in = np.bincount(sim.dst_id, minlength=len(a.host_name))
    for h in sim.wanted:
        k = a.host_id[h]
        into = a.incoming(k)
        if h not in sim.redundant and (sim.allreduce or sim._held(k).covers_ranges(sim.wanted[h])):
            sim.host_done[h] = float(t_done[into].max()) if len(into) else 0.0
    seg_time = np.full(len(inputs["seg_host"]), math.inf)
    np.minimum.at(seg_time, inputs["q_seg"], q_time)
    host_time = dict.fromkeys(inputs["cover_hosts"].tolist(), 0.0)
    for k, w in zip(inputs["seg_host"].tolist(), seg_time.tolist()):
        host_time[k] = max(host_time[k], w)
    for k, w in host_time.items():
        if math.isfinite(w):
            sim.host_done[a.host_name[k]] = w
    return sim._result()
