"""Fluid, flow-level simulator of a Plan on a Topology (docs/design.md, "Simulator"): the
event loop.

The simulator is four rooms joined here: the state machine of the transfers
(``sim.state``: statuses, dependencies, routes, progress), the coverage bookkeeping of the
hosts (``sim.coverage``), the rate solving (``sim.rates``) and the agenda of events
(``sim.agenda``). The loop settles every instantaneous transition at the current time
(``_instant``), has the rates recomputed where they can change, asks the agenda for the next
events, advances the clock and fires them (``_settle``).

Cost follows the work: an event costs what it changes, not the size of the plan
(docs/performance.md, "Plans of millions of transfers", says what each room saves).
Deterministic: no randomness, ties broken by transfer index.

Times are seconds, sizes bytes, rates bytes/s.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from ..errors import SimulationError
from ..memory import paused_gc
from ..plan import Plan
from ..results import Result, aggregate_from_times
from . import tuning
from .agenda import Events
from .compiled import CompiledRates, compiled_available
from .coverage import Coverage
from .loop import loop_inputs, run_loop
from .rates import Rates, SmallRates
from .state import DONE, EV_ACTIVATE, EV_CATCH, EV_DONE, EV_FREE, FLOWING, LATENCY, REDUCING, REL, Transfers

if TYPE_CHECKING:
    from ..topology import Topology

__all__ = ["simulate"]


CORES = ("fast", "reference", "compiled")
# events between two calls of simulate's on_progress
PROGRESS_EVERY = 256


class _Sim(Transfers, Coverage, Rates, SmallRates, CompiledRates, Events):
    def __init__(
        self,
        plan: Plan,
        topology: Topology,
        chunk_size: int | None,
        core: str = "fast",
        on_progress: Callable[[int, int], object] | None = None,
    ) -> None:
        self.on_progress = on_progress  # on_progress(done, total), every PROGRESS_EVERY events
        self._init_transfers(plan, topology, chunk_size)
        self._init_coverage(plan)
        self._init_agenda()
        self._init_rates(core)

    def run(self) -> Result:
        # a transfer behind an upstream is looked at when its upstream starts or ends
        self.to_check = np.flatnonzero((self.waiting == 0) & (self.upstream < 0)).tolist()
        self._check_hosts(np.flatnonzero(self.wants))
        # every step at one instant fires an event that changes a transfer's state for good
        # (starts, catches up, is released, ends ...), so the number of steps without time
        # passing is bounded by a few per transfer; past that the engine is stuck
        still, still_limit = 0, 8 * self.n + 1000
        events, on_progress = 0, self.on_progress
        while True:
            events += 1
            if on_progress is not None and events % PROGRESS_EVERY == 0:
                on_progress(self.n_done, self.n)
            self._instant()
            if self.n_done == self.n:
                break
            self._update_rates()
            dt, hits, phases, senders = self._next_events()
            if not math.isfinite(dt):
                self._deadlock()
            t_prev = self.t
            self.t = t_prev + dt
            still = still + 1 if self.t == t_prev else 0  # dt may be below the clock's resolution
            if still > still_limit:
                self._stuck(hits)
            if self.redundant:
                # before completions are processed, so a host covered mid-interval gets
                # its exact time rather than the time of the event
                self._credit_covered(t_prev)
            self._settle(hits, phases, senders)
        return self._result()

    def _instant(self) -> None:
        """Instantaneous transitions at time t, until nothing changes."""
        while True:
            changed = False
            if self.to_check:
                todo, self.to_check = self.to_check, []
                for i in todo:
                    self._consider(i)
                changed = True
            latency, reducing = self._due()
            if latency:
                self._start_flows(latency)
                changed = True
            if reducing:
                self._complete(reducing)
                changed = True
            if changed or self.to_check:
                continue
            # Inject only once every transfer that becomes ready at this instant is
            # known, so that transfers ready at the same time go in plan order.
            if not self._inject():
                break

    def _due(self) -> tuple[list[int], list[int]]:
        """Transfers whose LATENCY / REDUCING phase ends now, each in index order."""
        due = self.phase_due
        self.phase_due = []
        heap = self.phase_heap
        limit = self.t * (1 + REL)
        while heap and heap[0][0] <= limit:
            due.append(heapq.heappop(heap)[1])
        latency = sorted({i for i in due if self.status[i] == LATENCY})
        reducing = sorted({i for i in due if self.status[i] == REDUCING})
        return latency, reducing

    def _settle(self, hits: np.ndarray, phases: list[int], senders: list[str]) -> None:
        """Snap values at the new time and fire the events that are due (``hits``: kinds and
        transfers of the flow events, in firing order)."""
        kinds, idx = np.reshape(hits, (2, -1))
        finished = idx[kinds == EV_DONE].tolist()
        # the others in order: a transfer caught up reads its upstream's state
        others = kinds != EV_DONE
        for kind, i in zip(kinds[others].tolist(), idx[others].tolist()):
            if kind == EV_CATCH:
                self._set_sent(i, self._avail(i))
                self.dirty.add(i)
                if self.sent0[i] >= self.size[i] * (1 - REL):
                    finished.append(i)
            elif kind == EV_ACTIVATE:
                self.activated[i] = True
                self.to_check.append(i)
            else:
                (self.released if kind == EV_FREE else self.unblocked)[i] = True
                self.dirty.add(i)
                # released having sent every byte (caught up with an upstream that ends now):
                # it ends now too, before its sender injects what this instant made ready
                if kind == EV_FREE and self._sent(i) >= self.size[i] * (1 - REL):
                    finished.append(i)
        self.phase_due.extend(phases)
        for src in senders:
            if self.sender_free[src] < self.t * (1 + REL):
                self.sender_free[src] = min(self.sender_free[src], self.t)
            self.ready_senders.add(src)
        finished = [i for i in sorted(set(finished)) if self.status[i] == FLOWING]
        if finished:
            self._finish_flows(finished)

    def _deadlock(self) -> None:
        stuck = np.flatnonzero(self.status != DONE)[:5].tolist()
        tr = self.plan.transfers
        why = []
        for i in stuck:
            t = tr[i]
            if self.waiting[i] > 0:
                reason = "waits for transfers in 'after' that never complete"
            elif self.upstream[i] >= 0:
                reason = f"waits for its upstream transfer {int(self.upstream[i])}"
            elif self.status[i] == FLOWING:
                reason = "gets no bandwidth"
            else:
                reason = f"its sender {t.src!r} never holds its bytes"
            why.append(f"transfer {i} ({t.src}->{t.dst}) {reason}")
        raise SimulationError(
            f"plan of {self.plan.planner or 'unnamed planner'} cannot complete at t={self.t:.6g} s: " + "; ".join(why)
        )

    def _stuck(self, hits: np.ndarray) -> None:
        kinds = ("done", "catch up", "released", "unblocked", "activated")
        fired = np.reshape(hits, (2, -1))[:, :5].tolist()
        events = ", ".join(f"transfer {i} {kinds[k]}" for k, i in zip(*fired)) or "phase ends"
        raise SimulationError(
            f"plan of {self.plan.planner or 'unnamed planner'}: the simulator makes no progress at "
            f"t={self.t:.9g} s (events {events} keep recurring); this is a bug in topocast's "
            "simulator, please report it with the plan and topology"
        )

    def _result(self) -> Result:
        times = {}
        for h in self.wanted:
            times[h] = self.host_done.get(h, math.inf)
        per_host, makespan, aggregate = aggregate_from_times(self.wanted_bytes, times)
        transfer_times = tuple(zip(self.flow_start.tolist(), self.t_done.tolist()))
        return Result(
            algorithm=self.plan.planner,
            per_host=per_host,
            makespan=makespan,
            aggregate_bandwidth=aggregate,
            kind="predicted",
            transfer_times=transfer_times,
        )


def simulate(
    plan: Plan,
    topology: Topology,
    *,
    chunk_size: int | None = None,
    core: str = "fast",
    on_progress: Callable[[int, int], object] | None = None,
) -> Result:
    """Predict how ``plan`` runs on ``topology`` (fluid max-min model; docs/design.md "Simulator").

    Parameters
    ----------
    plan : Plan
    topology : Topology
    chunk_size : int, optional
        Pipelining granularity in bytes (overrides ``plan.chunk_size``; 0 = ideal fluid).
    core : {"fast", "reference", "compiled"}
        How rates are solved: "reference" solves every group of flows on numpy arrays;
        "fast" (default) solves small groups on Python scalars, and moves to compiled
        kernels once a simulation has solved many groups, when numba is installed;
        "compiled" solves every group on compiled kernels (needs numba). "fast" (from
        ``tuning.LOOP_AFTER`` transfers, numba installed) and "compiled" run plans without
        pipelining, injection times or bytes received twice (the MPI collectives) on a
        compiled event loop (``sim.loop``). All give the same predictions
        (tests/sim/test_cores.py compares them).
    on_progress : callable, optional
        ``on_progress(done, total)``: transfers done so far and in all, called every few
        hundred events (a progress display; an exception it raises stops the simulation).

    Returns
    -------
    Result
        Per host: time (s) it held every wanted byte, and rate = wanted bytes / time (bytes/s);
        makespan; aggregate bandwidth (sum of per-host rates).

    Raises
    ------
    SimulationError
        When the plan cannot complete (dependency deadlock, a sender that never gets its data).
    """
    if core not in CORES:
        raise ValueError(f"core must be one of {', '.join(CORES)}, not {core!r}")
    with paused_gc():
        sim = _Sim(plan, topology, chunk_size, core, on_progress)
        return _compiled_loop(sim, core) or sim.run()


def _compiled_loop(sim: _Sim, core: str) -> Result | None:
    """The prediction from the compiled event loop (``sim.loop``), when the core asks for
    it and the plan qualifies; None otherwise. The fast core takes it only from
    ``tuning.LOOP_AFTER`` transfers (numba's import costs about what the engine's loop
    spends on a few hundred events)."""
    if core == "reference" or (core == "fast" and (sim.n < tuning.LOOP_AFTER or not compiled_available())):
        return None
    inputs = loop_inputs(sim)
    if inputs is None:
        return None
    return run_loop(sim, inputs, sim.on_progress, PROGRESS_EVERY)
