"""The redistribution experiments of docs/experiments/redistribution.md.

* :func:`ratio_experiment`: on many random patterns (the paper's: 10 x 10 hosts, k = 5, sizes
  uniform in [10 MB, x MB]), the distribution of GGP cost / lower bound and OGGP cost / lower
  bound, with beta = 0 (bound ``eta``) and beta > 0 (bound ``eta + beta s(G)``), and the
  brute-force estimate next to the best schedule (the predicted gain of scheduling);
* :func:`agreement_experiment`: the discrete-event brute-force estimate against the fluid
  simulator on the same patterns and platform.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from ..plan import Redistribution
from ..redistribute.kpbs import brute_force_plan, brute_force_time, lower_bound, schedule_to_plan
from ..redistribute.matrix import MB, random_pattern, two_cluster_topology

__all__ = ["ratio_experiment", "agreement_experiment", "summarize"]

NIC = 100e6 / 8  # 100 Mbit/s, the paper's cards


def _pattern(rng: np.random.Generator, n: int = 10) -> Redistribution:
    """A random pattern as in the paper: fixed count of messages, sizes U[10 MB, x MB]."""
    messages = int(rng.integers(1, n * n + 1))
    x = float(rng.choice([10, 20, 30, 40, 50, 60, 70, 80])) * MB
    return random_pattern(n, n, messages, x, seed=int(rng.integers(2**31)))


def summarize(values: npt.ArrayLike) -> dict[str, float]:
    """Count, min, median, 90th and 99th percentiles, max and mean of ``values`` ({} if none)."""
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return {}
    q = np.percentile(v, [0, 50, 90, 99, 100])
    return {
        "n": int(v.size),
        "min": q[0],
        "median": q[1],
        "p90": q[2],
        "p99": q[3],
        "max": q[4],
        "mean": float(v.mean()),
    }


def ratio_experiment(
    n_patterns: int = 1000, *, seed: int = 0, k: int = 5, n: int = 10, betas: Sequence[float] = (0.0, 0.01, 0.5)
) -> dict[str, object]:
    """Cost / lower bound of GGP and OGGP on ``n_patterns`` random patterns, per beta (s)."""
    from ..planners.redistribute.ggp import peel_schedule, unit_for

    rng = np.random.default_rng(seed)
    pats = [_pattern(rng, n) for _ in range(n_patterns)]
    out: dict[str, object] = {"patterns": n_patterns, "k": k, "nic_bytes_per_s": NIC, "hosts": n, "seed": seed}
    bf_over_lb: list[float] = []
    gain: dict[float, list[float]] = {b: [] for b in betas}
    # per beta (its JSON key): cost / lower bound and steps of each algorithm, the step bound
    samples: dict[str, dict[str, list[float]]] = {}
    t0 = time.perf_counter()
    for r in pats:
        m = r.matrix
        bf = brute_force_time(m, k, nic=NIC)
        bf_over_lb.append(bf / lower_bound(m, k, nic=NIC).eta)
        for beta in betas:
            lb = lower_bound(m, k, nic=NIC, beta=beta)
            u = unit_for(beta, NIC)
            costs = {}
            for name, bott in (("ggp", False), ("oggp", True)):
                s = peel_schedule(m, k, unit=u, bottleneck=bott, algorithm=name)
                c = s.cost(beta, NIC)
                costs[name] = c
                d = samples.setdefault(
                    str(beta), {"ggp": [], "oggp": [], "ggp_steps": [], "oggp_steps": [], "step_bound": []}
                )
                d[name].append(c / lb.total)
                d[f"{name}_steps"].append(s.n_steps)
            d["step_bound"].append(lb.steps)
            best = min(costs.values())
            gain[beta].append((bf - best) / bf)
    seconds = time.perf_counter() - t0
    per_beta: dict[str, dict[str, dict[str, float]]] = {}
    for beta_key, d in samples.items():
        ratios: dict[str, dict[str, float]] = {}
        for name in ("ggp", "oggp"):
            ratios[f"{name}_ratio"] = summarize(d[name])
            steps = np.asarray(d[f"{name}_steps"])
            ratios[f"{name}_steps_over_bound"] = summarize(steps / np.maximum(1, np.asarray(d["step_bound"])))
        per_beta[beta_key] = ratios
    out["beta"] = per_beta
    out["seconds"] = seconds
    out["brute_force_over_lower_bound"] = summarize(bf_over_lb)
    out["gain_of_best_schedule"] = {str(b): summarize(g) for b, g in gain.items()}
    out["fraction_scheduling_pays"] = {str(b): float(np.mean(np.asarray(g) > 0)) for b, g in gain.items()}
    return out


def agreement_experiment(
    n_patterns: int = 100, *, seed: int = 1, k: int = 5, n: int = 10, beta: float = 0.0
) -> dict[str, object]:
    """Brute-force estimate vs the fluid simulator (and schedule model vs simulator)."""
    from ..planners.redistribute.ggp import peel_schedule, unit_for
    from ..sim import simulate

    rng = np.random.default_rng(seed)
    rel_bf: list[float] = []
    rel_sched: list[float] = []
    topo = two_cluster_topology(n, n, nic=NIC, k=k)
    for _ in range(n_patterns):
        r = _pattern(rng, n)
        r = r.with_(senders=topo.hosts[:n], receivers=topo.hosts[n:], beta=beta)
        est = brute_force_time(r.matrix, k, nic=NIC)
        sim = simulate(brute_force_plan(r), topo).makespan
        rel_bf.append((sim - est) / est)
        s = peel_schedule(r.matrix, k, unit=unit_for(beta, NIC))
        plan = schedule_to_plan(s, r, nic=NIC, beta=beta, planner="ggp", params={}, barrier="full")
        sim_s = simulate(plan, topo).makespan + beta * s.n_steps
        model = s.cost(beta, NIC)
        rel_sched.append((sim_s - model) / model)
    return {
        "patterns": n_patterns,
        "k": k,
        "beta": beta,
        "brute_force_sim_minus_estimate_rel": summarize(rel_bf),
        "schedule_sim_minus_model_rel": summarize(rel_sched),
    }


def stress_experiment(n_patterns: int = 1000, *, seed: int = 2) -> dict[str, object]:
    """Worst cases beyond the paper's setting: random cluster sizes (1-20 each), k (1-25,
    often above both clusters), density, sizes spanning 4 orders of magnitude, and beta from
    1e-3 to 10 times the mean message time. Returns the ratio distribution per algorithm."""
    from ..planners.redistribute.ggp import peel_schedule, unit_for

    rng = np.random.default_rng(seed)
    ratios: dict[str, list[float]] = {"ggp": [], "oggp": []}
    worst: dict[str, dict[str, float] | None] = {"ggp": None, "oggp": None}
    t0 = time.perf_counter()
    for _ in range(n_patterns):
        n1, n2 = (int(x) for x in rng.integers(1, 21, 2))
        k = int(rng.integers(1, 26))
        density = float(rng.uniform(0.05, 1.0))
        sizes = np.round(10 ** rng.uniform(5, 9, (n1, n2))).astype(np.int64)
        m = np.where(rng.random((n1, n2)) < density, sizes, 0)
        if m.sum() == 0:
            m[0, 0] = 10**6
        mean_t = float(m[m > 0].mean()) / NIC
        beta = mean_t * float(10 ** rng.uniform(-3, 1))
        lb = lower_bound(m, k, nic=NIC, beta=beta)
        for name, bott in (("ggp", False), ("oggp", True)):
            s = peel_schedule(m, k, unit=unit_for(beta, NIC), bottleneck=bott)
            r = s.cost(beta, NIC) / lb.total
            ratios[name].append(r)
            so_far = worst[name]
            if so_far is None or r > so_far["ratio"]:
                worst[name] = {
                    "ratio": r,
                    "n1": n1,
                    "n2": n2,
                    "k": k,
                    "beta_over_mean_message": beta / mean_t,
                    "messages": int((m > 0).sum()),
                    "steps": s.n_steps,
                    "step_bound": lb.steps,
                }
    return {
        "patterns": n_patterns,
        "seed": seed,
        "seconds": time.perf_counter() - t0,
        "ggp_ratio": summarize(ratios["ggp"]),
        "oggp_ratio": summarize(ratios["oggp"]),
        "worst": worst,
    }
