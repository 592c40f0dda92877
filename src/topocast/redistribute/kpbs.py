"""KPBS: the k-Preemptive Bipartite Scheduling model, its bounds and predictions.

Reference: E. Jeannot and F. Wagner, "Scheduling Messages for Data Redistribution: an
Experimental Study", AINA 2006, sections 2 and 3;
docs/algorithms.md section 7.

Model (section 2.1 of the paper): ``m_ij`` is the time to send block (i, j) alone
(bytes / uncontended speed ``nic``); at most ``k`` transfers run at once without contention;
a *step* is a matching of at most ``k`` transfers (a host sends / receives one message per
step), lasts ``beta`` + its longest slice; preemption lets a block be split over steps. The
cost of a schedule is ``sum_steps (beta + m_step)``.

What this module gives:

* :func:`lower_bound` ``eta = max(P/k, W)`` [S] and the step-count bound
  ``s(G) = max(Delta, ceil(|E|/k))`` [I] so that ``OPT >= eta + beta * s(G)``;
* :func:`brute_force_time`: the paper's discrete-event estimate ``eta_o`` of the
  "everything at once" redistribution (section 3.1). Our reading [I]: the share of each
  communication is the max-min fair share with capacity 1 per NIC (sender and receiver)
  and ``k`` on the backbone. The paper's rule ``min(1, k/|A|)`` is the special case where every
  host has at most one active message (as in Fig. 2);
* :class:`Schedule` (steps of slices), :func:`validate_schedule`, its cost, and
  :func:`schedule_to_plan`, the Plan the simulator and the runtime perform.

How the simulator sees a schedule and beta
------------------------------------------
The plan encodes a step barrier with ``after``: every transfer of step ``s + 1`` lists every
transfer of step ``s`` (``barrier="full"``, what the runtime should perform), or only the longest
transfer of step ``s`` (``barrier="longest"``, smaller; equivalent in the fluid model because the
transfers of a step never contend and all start together). ``barrier="auto"`` (default) is
``full`` unless the after-lists would exceed 2 million entries (dense matrices peeled with
``beta = 0`` and a large k: ~10^4 steps of ~100 slices), then ``longest``. The fluid simulator knows no set-up
cost: it predicts the ``beta = 0`` time of the schedule; the scheduled prediction with set-up is
``simulated + beta * steps``, which equals ``sum_steps (beta + m_step)`` when the topology has
exactly the KPBS capacities. ``plan.notes`` carries ``beta``, ``steps``, ``step_bytes`` and the
analytic ``predicted_cost``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal, overload

import numpy as np
import numpy.typing as npt

from ..errors import InputError, PlanError
from ..plan import Plan, Redistribution, Transfer
from ..sim.maxmin import progressive_filling
from .matrix import block_offsets, make_plan

__all__ = [
    "Bounds",
    "lower_bound",
    "brute_force_time",
    "Schedule",
    "validate_schedule",
    "schedule_to_plan",
]


# ---------------------------------------------------------------------------- bounds
@dataclass(frozen=True)
class Bounds:
    """KPBS lower bounds (seconds, steps)."""

    eta: float  # max(P/k, W): transfer time no schedule (and no brute force) can beat
    p_over_k: float  # P(G) / k
    w: float  # W(G): the most loaded host's total time
    steps: int  # s(G) = max(max degree, ceil(|E| / k))
    beta: float

    @property
    def total(self) -> float:
        """``eta + beta * s(G)``: no schedule with set-up ``beta`` does better."""
        return self.eta + self.beta * self.steps

    def to_json(self) -> dict:
        return {
            "eta": self.eta,
            "P_over_k": self.p_over_k,
            "W": self.w,
            "step_bound": self.steps,
            "beta": self.beta,
            "total": self.total,
        }


def lower_bound(matrix: npt.ArrayLike, k: float, *, nic: float = 1.0, beta: float = 0.0) -> Bounds:
    """KPBS lower bounds for ``matrix`` (bytes) at ``nic`` bytes/s, ``k`` transfers, set-up ``beta`` s."""
    w = np.asarray(matrix, dtype=float) / nic
    if k <= 0:
        raise InputError(f"k must be positive, got {k}", element="k")
    p = float(w.sum())
    wmax = float(max(w.sum(axis=1).max(initial=0.0), w.sum(axis=0).max(initial=0.0)))
    nz = np.asarray(matrix) > 0
    n_edges = int(nz.sum())
    degree = int(max(nz.sum(axis=1).max(initial=0), nz.sum(axis=0).max(initial=0)))
    steps = max(degree, math.ceil(n_edges / max(1, math.floor(k)))) if n_edges else 0
    return Bounds(eta=max(p / k, wmax), p_over_k=p / k, w=wmax, steps=int(steps), beta=float(beta))


def fluid_lower_bound(
    matrix: npt.ArrayLike, backbone: float, send_nic: npt.ArrayLike, recv_nic: npt.ArrayLike
) -> float:
    """No transfer of ``matrix`` (bytes) finishes before this (s): the backbone (bytes/s) and
    every NIC (bytes/s per sender / receiver) must carry their bytes. Equals ``eta`` when all
    NICs are equal ([I] heterogeneous generalisation)."""
    m = np.asarray(matrix, dtype=float)
    t = m.sum() / backbone
    if m.size:
        t = max(
            t,
            float((m.sum(axis=1) / np.asarray(send_nic, dtype=float)).max()),
            float((m.sum(axis=0) / np.asarray(recv_nic, dtype=float)).max()),
        )
    return float(t)


# ---------------------------------------------------------------------------- brute force
def _max_min_rates(
    snd: np.ndarray, rcv: np.ndarray, n1: int, n2: int, backbone: float, send_cap=None, recv_cap=None
) -> np.ndarray:
    """Max-min fair rates (uncontended speed = 1) of flows ``snd[e] -> rcv[e]``.

    Resources: each sender NIC (capacity 1, or ``send_cap[i]``), each receiver NIC (1, or
    ``recv_cap[j]``), the backbone (``backbone``); the simulator's progressive filling shares
    them.
    """
    n = len(snd)
    cap_s = np.ones(n1) if send_cap is None else np.asarray(send_cap, dtype=float)
    cap_r = np.ones(n2) if recv_cap is None else np.asarray(recv_cap, dtype=float)
    capacity = np.concatenate((cap_s, cap_r, [float(backbone)]))
    flows = np.arange(n)
    pair_flow = np.concatenate((flows, flows, flows))
    pair_res = np.concatenate((snd, n1 + rcv, np.full(n, n1 + n2))).astype(np.int64)
    return progressive_filling(pair_flow, pair_res, capacity, np.full(n, np.inf))


@overload
def brute_force_time(
    matrix: npt.ArrayLike,
    backbone: float,
    *,
    nic: float = 1.0,
    send_cap: npt.ArrayLike | None = None,
    recv_cap: npt.ArrayLike | None = None,
    return_events: Literal[False] = False,
) -> float: ...


@overload
def brute_force_time(
    matrix: npt.ArrayLike,
    backbone: float,
    *,
    nic: float = 1.0,
    send_cap: npt.ArrayLike | None = None,
    recv_cap: npt.ArrayLike | None = None,
    return_events: Literal[True],
) -> tuple[float, list[tuple[float, list[tuple[int, int]]]]]: ...


def brute_force_time(
    matrix: npt.ArrayLike,
    backbone: float,
    *,
    nic: float = 1.0,
    send_cap: npt.ArrayLike | None = None,
    recv_cap: npt.ArrayLike | None = None,
    return_events: bool = False,
) -> float | tuple[float, list[tuple[float, list[tuple[int, int]]]]]:
    """The paper's discrete-event estimate of the brute-force redistribution time (seconds).

    Every block starts at once; the transport shares the capacity max-min fairly (NIC
    capacity 1, backbone ``backbone`` in units of the NIC speed, i.e. k); advance to the
    first completion, remove it, recompute the shares (docs/algorithms.md 7.5).

    ``send_cap`` / ``recv_cap`` (optional, in units of ``nic``): NIC capacity of each sender /
    receiver when the clusters are not homogeneous ([I] extension; the paper's model has 1).
    With ``return_events=True`` also returns the list of ``(time, finished (i, j) blocks)``.
    """
    m = np.asarray(matrix, dtype=float) / nic
    n1, n2 = m.shape
    ii, jj = np.nonzero(m > 0)
    left = m[ii, jj].copy()
    t = 0.0
    events: list[tuple[float, list[tuple[int, int]]]] = []
    while left.size:
        rate = _max_min_rates(ii, jj, n1, n2, backbone, send_cap, recv_cap)
        dt = float((left / rate).min())
        left -= rate * dt
        t += dt
        done = left <= 1e-9 * max(1.0, dt)
        if return_events:
            events.append((t, list(zip(ii[done].tolist(), jj[done].tolist()))))
        keep = ~done
        ii, jj, left = ii[keep], jj[keep], left[keep]
    return (t, events) if return_events else t


# ---------------------------------------------------------------------------- schedules
@dataclass(frozen=True)
class Schedule:
    """A KPBS schedule: steps, each a list of slices ``(sender row, receiver column, bytes)``.

    Slices of one block are sent in step order, as consecutive byte sub-ranges of the block.
    """

    steps: tuple[tuple[tuple[int, int, int], ...], ...]
    k: int
    algorithm: str = ""
    unit: int = 1  # bytes per weight unit the peeling used (beta * nic, or 1 when beta = 0)
    info: dict = field(default_factory=dict, compare=False)

    @property
    def n_steps(self) -> int:
        return len(self.steps)

    def step_bytes(self) -> list[int]:
        """Longest slice of every step (bytes)."""
        return [max(b for _, _, b in st) for st in self.steps]

    def transfer_time(self, nic: float) -> float:
        """``sum_steps m_step`` in seconds (the schedule without set-up)."""
        return sum(self.step_bytes()) / nic

    def cost(self, beta: float, nic: float) -> float:
        """``sum_steps (beta + m_step)`` in seconds (the paper's scheduled prediction)."""
        return self.n_steps * beta + self.transfer_time(nic)

    def to_json(self) -> dict:
        return {
            "algorithm": self.algorithm,
            "k": self.k,
            "unit_bytes": self.unit,
            "steps": [[list(s) for s in st] for st in self.steps],
        }


def validate_schedule(schedule: Schedule, matrix: npt.ArrayLike, k: int) -> None:
    """Raise :class:`PlanError` unless every step is a matching of at most ``k`` positive
    slices and every block's slices add up to exactly its bytes."""
    m = np.asarray(matrix, dtype=np.int64)
    sent = np.zeros_like(m)
    for s, st in enumerate(schedule.steps):
        where = f"step {s}"
        if not st:
            raise PlanError("empty step", element=where)
        if len(st) > k:
            raise PlanError(f"{len(st)} transfers in one step, more than k = {k}", element=where)
        rows = [i for i, _, _ in st]
        cols = [j for _, j, _ in st]
        if len(set(rows)) != len(rows) or len(set(cols)) != len(cols):
            raise PlanError("not a matching: a host sends or receives twice in one step", element=where)
        for i, j, b in st:
            if b <= 0:
                raise PlanError(f"slice {i}->{j} of {b} bytes (must be positive)", element=where)
            sent[i, j] += b
    if not np.array_equal(sent, m):
        i, j = map(int, np.argwhere(sent != m)[0])
        raise PlanError(f"block {i}->{j} gets {int(sent[i, j])} bytes, expected {int(m[i, j])}", element="schedule")


def brute_force_plan(request: Redistribution, planner: str = "brute_force", notes: dict | None = None) -> Plan:
    """Every block as one transfer, all at once."""
    m = request.matrix
    offs = block_offsets(m)
    transfers = [
        Transfer.of(request.senders[i], request.receivers[j], int(offs[i, j]), int(m[i, j]), label=f"block {i}->{j}")
        for i, j in zip(*np.nonzero(m))
    ]
    return make_plan(request, transfers, planner, {}, notes or {})


FULL_BARRIER_LIMIT = 2_000_000  # after-list entries; beyond this "auto" chains through the longest


def schedule_to_plan(
    schedule: Schedule,
    request: Redistribution,
    *,
    nic: float,
    beta: float,
    planner: str,
    params: dict,
    barrier: str = "auto",
    notes: dict | None = None,
) -> Plan:
    """The Plan of a schedule: one transfer per slice, a barrier between steps (module doc)."""
    if barrier not in ("full", "longest", "auto"):
        raise InputError(f"barrier must be 'full', 'longest' or 'auto', got {barrier!r}", element="barrier")
    if barrier == "auto":  # full unless the after-lists would be huge (dense, beta = 0, large k)
        sizes = [len(st) for st in schedule.steps]
        links = sum(a * b for a, b in zip(sizes, sizes[1:]))
        barrier = "full" if links <= FULL_BARRIER_LIMIT else "longest"
    m = request.matrix
    offs = block_offsets(m)
    pos = np.zeros_like(m)  # bytes of each block already scheduled
    transfers: list[Transfer] = []
    prev: tuple[int, ...] = ()
    for s, st in enumerate(schedule.steps):
        mine = []
        longest, longest_b = -1, -1
        for i, j, b in st:
            off = int(offs[i, j] + pos[i, j])
            pos[i, j] += b
            idx = len(transfers)
            transfers.append(
                Transfer.of(request.senders[i], request.receivers[j], off, int(b), after=prev, label=f"step {s}")
            )
            mine.append(idx)
            if b > longest_b:
                longest, longest_b = idx, b
        prev = tuple(mine) if barrier == "full" else (longest,)
    step_bytes = schedule.step_bytes()
    info = {
        "beta": beta,
        "k": schedule.k,
        "steps": schedule.n_steps,
        "step_bytes": step_bytes,
        "transfer_time": sum(step_bytes) / nic,
        "predicted_cost": schedule.cost(beta, nic),
        "barrier": barrier,
        "simulator_note": "the fluid simulator predicts the beta = 0 time; add beta * steps",
    }
    info.update(notes or {})
    return make_plan(request, transfers, planner, params, info)
