"""Several broadcast planners on one input: each planned, checked and simulated, beside the
max-flow bound (what ``topocast compare`` prints), under an optional time limit."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ..bounds import broadcast_bounds
from ..errors import TopocastError
from ..plan import Broadcast
from ..plan.check import check_plan
from ..planners import available_planners, get_planner
from ..planners.broadcast._compact import DEFAULT_RATE_TOLERANCE
from ..sim import simulate
from ..units import format_time

if TYPE_CHECKING:
    from ..bounds import Bound
    from ..plan import Plan
    from ..planners.registry import PlannerInfo
    from ..results import Result
    from ..topology import Topology

__all__ = ["OVER_LIMIT", "PLOT_BEST", "compare", "plan_with", "plot_compare", "reused_prediction"]


def plan_with(
    info: PlannerInfo,
    topology: Topology,
    request: object,
    seed: int | None,
    rate_tolerance: float | None = None,
    evaluated: dict[str, tuple[Plan, Result] | str] | None = None,
) -> Plan:
    """Run a planner with ``seed`` and ``rate_tolerance`` (None: its default), where it takes them;
    a selector (``auto``) that takes ``evaluated`` gets the other planners' plans and results."""
    import inspect

    params = inspect.signature(info.func).parameters
    kwargs: dict[str, object] = {"seed": seed} if "seed" in params else {}
    if rate_tolerance is not None and "rate_tolerance" in params:
        kwargs["rate_tolerance"] = rate_tolerance
    if evaluated is not None and "evaluated" in params:
        kwargs["evaluated"] = evaluated
    return info(topology, request, **kwargs)


def compare(
    topology: Topology,
    source: str,
    size: int,
    algorithms: Sequence[str] | None = None,
    destinations: Sequence[str] | None = None,
    *,
    chunk_size: int = 0,
    seed: int | None = 0,
    on_step: Callable[[str], object] | None = None,
    rate_tolerance: float | None = None,
    time_limit: float | None = None,
    on_progress: Callable[[str, int, int], object] | None = None,
) -> tuple[Bound, list[tuple[str, Result | str]]]:
    """Plan, check and simulate each algorithm; returns (bound, [(name, Result or error str)]).
    ``on_step(name)`` is called after each algorithm, ``on_progress(name, done, total)``
    while it is simulated (transfers; a progress display).

    ``time_limit`` (seconds, wall time): an algorithm whose planning and simulation take
    longer, or whose simulation is on course to take more than twice as long once a quarter
    of the limit has passed, is stopped; its entry says so (``OVER_LIMIT``) with the time
    the projection gives.

    Selectors (``auto``) run last and choose among the plans and predictions already made
    here (same seed, rate tolerance and chunk size) instead of planning everything again."""
    if algorithms is None:
        infos = available_planners("broadcast")
    else:
        infos = [get_planner("broadcast", a) for a in algorithms]
    request = Broadcast(source, size, tuple(destinations) if destinations else None)
    dests = request.resolve(topology)
    bound = broadcast_bounds(topology, source, dests)
    outcome: dict[str, Result | str] = {}
    evaluated: dict[str, tuple[Plan, Result] | str] = {}  # name -> (plan, result) or error, for the selectors
    # ``optimal`` compares other planners' default plans by their fluid prediction: it may
    # reuse ours when they are the same (no chunk, the default rate tolerance)
    reusable = not chunk_size and rate_tolerance in (None, DEFAULT_RATE_TOLERANCE)
    for info in sorted(infos, key=_run_order):  # stable: table order kept
        watch = _Watch(info.name, time_limit, on_progress)
        try:
            if "selector" in info.tags:
                # a selector adds its own predictions (the plan's chunk size) to its copy
                scratch = dict(evaluated)
                plan = plan_with(info, topology, request, seed, rate_tolerance, scratch)
                known = evaluated if chunk_size else scratch
                res = reused_prediction(plan, known) or _simulated(plan, topology, chunk_size, watch)
            else:
                plan = plan_with(info, topology, request, seed, rate_tolerance, evaluated if reusable else None)
                res = reused_prediction(plan, evaluated) or _simulated(plan, topology, chunk_size, watch)
                evaluated[info.name] = (plan, res)
            outcome[info.name] = res
        except _OverLimit as over:
            outcome[info.name] = evaluated[info.name] = str(over)
        except TopocastError as exc:
            if algorithms is not None and len(infos) == 1:
                raise
            outcome[info.name] = evaluated[info.name] = f"{type(exc).__name__}: {exc}"
        if on_step is not None:
            on_step(info.name)
    return bound, [(info.name, outcome[info.name]) for info in infos]


def _run_order(info: PlannerInfo) -> int:
    """Planners that can reuse other planners' predictions run after them; selectors last."""
    import inspect

    if "selector" in info.tags:
        return 2
    return 1 if "evaluated" in inspect.signature(info.func).parameters else 0


def _simulated(plan: Plan, topology: Topology, chunk_size: int, watch: _Watch) -> Result:
    check_plan(plan, topology)
    watch(0, len(plan.transfers))
    return simulate(plan, topology, chunk_size=chunk_size or None, on_progress=watch)


#: How compare's entry for an algorithm stopped by the time limit begins.
OVER_LIMIT = "over the time limit"


class _OverLimit(TopocastError):
    """An algorithm's planning and simulation would take longer than the time limit."""


class _Watch:
    """One algorithm's clock against ``limit`` (seconds, None: none), fed with the
    simulation's progress (transfers done, in all); passes it on to ``on_progress``."""

    def __init__(self, name: str, limit: float | None, on_progress: Callable[[str, int, int], object] | None):
        import time

        self.name, self.limit, self.on_progress = name, limit, on_progress
        self._clock = time.perf_counter
        self.start = self._clock()

    def __call__(self, done: int, total: int) -> None:
        if self.on_progress is not None:
            self.on_progress(self.name, done, total)
        if self.limit is None:
            return
        elapsed = self._clock() - self.start
        # the share of transfers done projects the whole simulation's time (nothing before the first ends)
        projected = elapsed * total / done if done else math.inf
        if elapsed > self.limit or (done and elapsed >= self.limit / 4 and projected > 2 * self.limit):
            where = (
                f"{done:,} of {total:,} transfers simulated, about {format_time(projected)} in all"
                if done
                else f"{total:,} transfers planned, none simulated yet"
            )
            raise _OverLimit(f"{OVER_LIMIT} ({format_time(self.limit)}): stopped after {format_time(elapsed)}, {where}")


def reused_prediction(plan: Plan, evaluated: dict[str, tuple[Plan, Result] | str]) -> Result | None:
    """The prediction already made on this input for ``plan``'s very transfers, holdings and
    chunk size, under ``plan``'s name: the plan a selector chose, or the structure ``optimal``
    returned (None: not made here)."""
    from dataclasses import replace

    for done in evaluated.values():
        if not isinstance(done, tuple):
            continue
        other, result = done
        same = other.transfers is plan.transfers or other.transfers == plan.transfers
        if (
            same
            and other.chunk_size == plan.chunk_size
            and other.initial == plan.initial
            and other.wanted == plan.wanted
        ):
            return replace(result, algorithm=plan.planner)
    return None


#: How many of the best algorithms the per-host panel of the compare plot shows.
PLOT_BEST = 4


def plot_compare(
    path: str | os.PathLike[str], topology: Topology, source: str, bound: Bound, results: Sequence[tuple[str, Result]]
) -> None:
    """Two panels that stay readable with any number of algorithms: (left) every algorithm's
    aggregate bandwidth as a fraction of the bound, best first, one labelled bar each; (right)
    per-host receive rates of the best few beside each host's bound, hosts sorted by bound."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    ranked = sorted(results, key=lambda nr: -nr[1].aggregate_bandwidth)
    total = bound.aggregate_bandwidth
    fig, (left, right) = plt.subplots(
        1, 2, figsize=(13, max(4.5, 0.32 * len(ranked) + 1.5)), gridspec_kw={"width_ratios": [1, 1.4]}
    )
    fracs = [r.aggregate_bandwidth / total if total > 0 else 0.0 for _, r in ranked]
    y = np.arange(len(ranked))
    left.barh(y, fracs, color=["tab:blue" if k < PLOT_BEST else "0.6" for k in range(len(ranked))])
    left.axvline(1.0, color="k", lw=1, ls="--")
    left.set_yticks(y, [name for name, _ in ranked], fontsize=8)
    left.invert_yaxis()
    for k, f in enumerate(fracs):
        left.text(min(f, 1.0) + 0.01, k, f"{100 * f:.1f} %", va="center", fontsize=7)
    left.set_xlim(0, 1.15)
    left.set_xlabel("aggregate bandwidth / bound (max-flow)")
    left.set_title("all algorithms, best first")

    hosts = sorted(bound.per_host_rate, key=lambda h: -bound.per_host_rate[h])
    x = np.arange(len(hosts))
    right.plot(x, [bound.per_host_rate[h] * 8e-6 for h in hosts], "k--", lw=1.5, label="bound (max-flow)")
    markers = "osD^"
    for k, (name, r) in enumerate(ranked[:PLOT_BEST]):
        right.plot(
            x, [r.per_host[h].rate * 8e-6 for h in hosts], marker=markers[k % len(markers)], ms=4, lw=1, label=name
        )
    if len(hosts) <= 40:
        right.set_xticks(x, hosts, rotation=60, ha="right", fontsize=7)
    else:
        right.set_xticks([])
    right.set_xlabel(f"{len(hosts)} destinations, sorted by bound")
    right.set_ylabel("receive rate (Mbit/s)")
    right.set_ylim(bottom=0)
    right.set_title(f"per host: the best {min(PLOT_BEST, len(ranked))}")
    right.legend(fontsize=8, loc="upper right", framealpha=0.9)
    fig.suptitle(f"{topology.name}: broadcast from {source}")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
