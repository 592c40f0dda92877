"""Predicted time against message size for chosen planners (like the source papers' plots:
MPICH/Mateescu time vs size, GridMPI throughput vs size): each planner is planned, checked
and simulated at every size; GridMPI's normalised throughput is computed beside the time
(broadcast: size x hosts / time; allreduce: size x hosts^2 / time)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, TypedDict

from ..errors import InputError, TopocastError
from ..plan import Broadcast
from ..planners import get_planner

if TYPE_CHECKING:
    from ..topology import Topology

__all__ = ["COLLECTIVES", "SweepResult", "SweepRow", "plot_sweep", "sizes_between", "sweep"]

COLLECTIVES = ("broadcast", "allreduce")


class SweepRow(TypedDict):
    """One planner's curve: predicted times (seconds) and throughputs (bytes/s) per size, or
    ``None`` and the error when the planner failed at some size."""

    algorithm: str
    params: dict[str, object]
    times: list[float] | None
    throughput: list[float] | None
    error: str | None


class SweepResult(TypedDict):
    topology: str
    collective: str
    source: str | None
    hosts: int
    sizes: list[int]
    results: list[SweepRow]


def sizes_between(lo: int, hi: int, step: float) -> list[int]:
    """Sizes from ``lo`` up to ``hi`` (bytes), each ``step`` times the one before, rounded."""
    if lo <= 0 or hi < lo:
        raise InputError(f"need 0 < --min <= --max, got {lo} and {hi}", element="--min/--max")
    if not step > 1:
        raise InputError(f"--step must be > 1, got {step}", element="--step")
    out, x = [], float(lo)
    while x <= hi * (1 + 1e-9):
        out.append(int(round(x)))
        x *= step
    return out


def sweep(
    topology: Topology,
    collective: str,
    algorithms: Iterable[str],
    sizes: Sequence[int],
    *,
    source: str | None = None,
    options: Mapping[str, object] | None = None,
    on_step: Callable[[str], object] | None = None,
) -> SweepResult:
    """``{"sizes", "hosts", "results": [{"algorithm", "times", "throughput", "error"}]}``;
    a planner that fails gets ``None`` times and the error. ``on_step(label)`` is called after
    each simulation (a progress display)."""
    from ..bounds.cost import allreduce_throughput, bcast_throughput
    from ..plan import Allreduce
    from ..plan.check import check_plan
    from ..sim import simulate

    options = options or {}
    source = topology.require_host(source or topology.hosts[0], element="--source")
    hosts = len(topology.hosts)
    rows: list[SweepRow] = []
    for name in algorithms:
        info = get_planner(collective, name)
        accepted = inspect.signature(info.func).parameters
        kwargs = {k: v for k, v in options.items() if k in accepted}
        times: list[float] = []
        thr: list[float] = []
        error: str | None = None
        for size in sizes:
            req = Broadcast(source, size) if collective == "broadcast" else Allreduce(size)
            try:
                plan = info(topology, req, **kwargs)
                check_plan(plan, topology)
                t = simulate(plan, topology).makespan
                if on_step is not None:
                    on_step(f"{name} {size} B")
            except TopocastError as exc:
                error = str(exc)
                break
            times.append(t)
            thr.append(
                bcast_throughput(size, hosts, t) if collective == "broadcast" else allreduce_throughput(size, hosts, t)
            )
        failed = error is not None
        rows.append(
            {
                "algorithm": name,
                "params": kwargs,
                "times": None if failed else times,
                "throughput": None if failed else thr,
                "error": error,
            }
        )
    return {
        "topology": topology.name,
        "collective": collective,
        "source": source if collective == "broadcast" else None,
        "hosts": hosts,
        "sizes": list(sizes),
        "results": rows,
    }


def plot_sweep(data: SweepResult, path: str, *, throughput: bool = False, title: str | None = None) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    sizes = data["sizes"]
    markers = "os^vD<>px*h"
    for k, row in enumerate(data["results"]):
        if row["times"] is None or row["throughput"] is None:  # the planner failed: no curve
            continue
        ys = [y * 8 / 1e6 for y in row["throughput"]] if throughput else row["times"]
        label = row["algorithm"] + "".join(
            f" {a}={b}" if len(str(b)) <= 12 else f" ({a} given)" for a, b in row["params"].items()
        )
        ax.plot(sizes, ys, marker=markers[k % len(markers)], ms=4, label=label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("message size (bytes)")
    if throughput:
        unit = "size x hosts" if data["collective"] == "broadcast" else "size x hosts²"
        ax.set_ylabel(f"throughput = {unit} / time (Mbit/s)")
    else:
        ax.set_ylabel("predicted time (s)")
    ax.set_title(title or f"{data['collective']} on {data['topology']} ({data['hosts']} hosts)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
