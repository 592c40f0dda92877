"""Predictions for a redistribution and the schedule-or-not decision (Jeannot & Wagner, AINA
2006, sections 3 and 5: "we are able to accurately predict the redistribution time with or
without scheduling and thus able to choose for each pattern whether or not to schedule").

For a request on a topology :func:`predict` gives, per approach:

* ``lower_bound``: ``eta = max(P/k, W)`` (and ``eta + beta s(G)`` for schedules);
* ``model``: the paper's prediction — the discrete-event fair-sharing estimate ``eta_o`` for
  brute force, ``sum_steps (beta + m_step)`` for a schedule;
* ``simulated``: the fluid simulator (:func:`topocast.sim.simulate`) on the plan, plus
  ``beta * steps`` for schedules (the simulator knows no set-up cost), or ``None`` when the
  simulator is not available.

:func:`decide` compares brute force with the best schedule and returns the predicted gain
``(T_brute - T_sched) / T_brute``; scheduling pays when the gain is positive (above
``threshold``). [I] The paper also notes that computing a schedule takes time: we report the
planner's own run time beside the decision and count it only on request (``count_planning``:
it does not scale with the data size, the transfers do).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ...plan import Redistribution
from ...redistribute.kpbs import brute_force_plan, brute_force_time, fluid_lower_bound, lower_bound, schedule_to_plan
from ...redistribute.matrix import resolve_platform

if TYPE_CHECKING:
    from ...plan import Plan
    from ...topology import Topology

__all__ = ["Prediction", "Decision", "predict", "decide", "simulate_plan"]

SCHEDULERS = ("ggp", "oggp")


@dataclass(frozen=True)
class Prediction:
    """Predicted times (seconds) of one approach."""

    approach: str
    lower_bound: float
    model: float
    simulated: float | None
    steps: int  # 0 for brute force
    transfers: int
    plan_seconds: float = 0.0  # time to compute the plan
    plan: object = field(default=None, repr=False, compare=False)
    schedule: object = field(default=None, repr=False, compare=False)

    def to_json(self) -> dict:
        return {
            "approach": self.approach,
            "lower_bound": self.lower_bound,
            "model": self.model,
            "simulated": self.simulated,
            "steps": self.steps,
            "transfers": self.transfers,
            "plan_seconds": self.plan_seconds,
        }


def simulate_plan(plan: Plan, topology: Topology, beta_steps: float = 0.0) -> float | None:
    """Fluid-simulator makespan of ``plan`` plus ``beta_steps`` seconds; ``None`` if the
    simulator is not available in this build."""
    try:
        from ...sim import simulate

        res = simulate(plan, topology)
    except NotImplementedError:
        return None
    return float(res.makespan) + beta_steps


def predict(
    topology: Topology,
    request: Redistribution,
    *,
    approaches: Sequence[str] = ("brute_force",) + SCHEDULERS,
    simulate: bool = True,
    barrier: str = "longest",
) -> tuple[list[Prediction], dict]:
    """Predictions for each approach, and a dict describing the platform and the bounds."""
    from .ggp import schedule_request

    plat = resolve_platform(request, topology)
    m = request.matrix
    beta = request.beta
    lb_k = lower_bound(m, plat.k, nic=plat.nic, beta=beta)
    send_cap = np.asarray(plat.send_nic) / plat.nic
    recv_cap = np.asarray(plat.recv_nic) / plat.nic
    bf_bound = fluid_lower_bound(m, plat.ratio * plat.nic, plat.send_nic, plat.recv_nic)
    out = []
    for a in approaches:
        if a == "brute_force":
            t0 = time.perf_counter()
            plan = brute_force_plan(request)
            est = brute_force_time(m, plat.ratio, nic=plat.nic, send_cap=send_cap, recv_cap=recv_cap)
            dt = time.perf_counter() - t0
            sim = simulate_plan(plan, topology) if simulate else None
            out.append(Prediction(a, bf_bound, est, sim, 0, len(plan.transfers), dt, plan))
        elif a in SCHEDULERS:
            t0 = time.perf_counter()
            sched, _ = schedule_request(topology, request, bottleneck=(a == "oggp"))
            dt = time.perf_counter() - t0
            plan = schedule_to_plan(
                sched, request, nic=plat.nic, beta=beta, planner=a, params={"k": plat.k}, barrier=barrier
            )
            cost = sched.cost(beta, plat.nic)
            sim = simulate_plan(plan, topology, beta * sched.n_steps) if simulate else None
            out.append(Prediction(a, lb_k.total, cost, sim, sched.n_steps, len(plan.transfers), dt, plan, sched))
        else:
            from ...errors import InputError

            raise InputError(f"unknown approach {a!r}; expected brute_force, ggp or oggp", element="approach")
    info = {
        "senders": len(request.senders),
        "receivers": len(request.receivers),
        "messages": int((m > 0).sum()),
        "total_bytes": int(m.sum()),
        "nic_bytes_per_s": plat.nic,
        "k": plat.k,
        "backbone_ratio": plat.ratio,
        "k_from": "request" if plat.k_given else "topology",
        "beta": beta,
        "bounds": lb_k.to_json(),
        "homogeneous": plat.homogeneous,
    }
    if not plat.homogeneous:
        info["note"] = (
            "heterogeneous NICs: brute force uses each host's NIC; schedules (KPBS is homogeneous) "
            "size steps with the slowest NIC, so their model is pessimistic"
        )
    return out, info


@dataclass(frozen=True)
class Decision:
    """Whether to schedule, with the predicted times (seconds) and gain."""

    schedule: bool
    best: str  # "brute_force", "ggp" or "oggp"
    brute_force_time: float
    scheduled_time: float
    gain: float  # (brute - scheduled) / brute; > 0 means scheduling is faster
    basis: str  # "model" or "simulated"
    predictions: tuple[Prediction, ...]
    info: dict

    def to_json(self) -> dict:
        return {
            "schedule": self.schedule,
            "best": self.best,
            "brute_force_time": self.brute_force_time,
            "scheduled_time": self.scheduled_time,
            "gain": self.gain,
            "basis": self.basis,
            "predictions": [p.to_json() for p in self.predictions],
            "platform": self.info,
        }


def decide(
    topology: Topology,
    request: Redistribution,
    *,
    basis: str = "model",
    threshold: float = 0.0,
    simulate: bool | None = None,
    count_planning: bool = False,
) -> Decision:
    """Schedule or not: compare brute force with the cheaper of GGP and OGGP.

    ``basis="model"`` uses the paper's predictions (``eta_o`` vs ``sum (beta + m_i)``);
    ``basis="simulated"`` uses the fluid simulator (falls back to the model if unavailable).
    Scheduling is chosen when the predicted gain exceeds ``threshold`` (a fraction).
    ``count_planning``: add the measured time to compute each schedule to its predicted time
    (the paper notes it is "not negligible").
    """
    if basis not in ("model", "simulated"):
        from ...errors import InputError

        raise InputError(f"basis must be 'model' or 'simulated', got {basis!r}", element="basis")
    if simulate is None:
        simulate = basis == "simulated"
    preds, info = predict(topology, request, simulate=simulate)
    used = basis

    def t(p):
        base = p.simulated if (used == "simulated" and p.simulated is not None) else p.model
        return base + (p.plan_seconds if count_planning and p.approach != "brute_force" else 0.0)

    if basis == "simulated" and any(p.simulated is None for p in preds):
        used = "model"
    bf = next(p for p in preds if p.approach == "brute_force")
    sched = min((p for p in preds if p.approach != "brute_force"), key=lambda p: (t(p), p.steps))
    tb, ts = t(bf), t(sched)
    gain = (tb - ts) / tb if tb > 0 else 0.0
    do = gain > threshold
    return Decision(do, sched.approach if do else "brute_force", tb, ts, gain, used, tuple(preds), info)
