"""Gantt chart of a redistribution: one row per host, one bar per transfer slice.

Schedules (GGP/OGGP): step ``s`` starts after the previous steps and its set-up ``beta``;
each slice runs at the NIC speed from the start of its step (the KPBS model). Brute force:
every block from 0 to its completion in the discrete-event estimate.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from .kpbs import Schedule, brute_force_time

__all__ = ["schedule_bars", "brute_force_bars", "plot_gantt"]


def schedule_bars(
    schedule: Schedule, beta: float, nic: float
) -> tuple[list[tuple[int | None, int, int, float, float]], list[tuple[float, float]]]:
    """``[(step, i, j, start, end)]`` in seconds and the step boundaries ``[(start, end)]``."""
    bars: list[tuple[int | None, int, int, float, float]] = []
    steps: list[tuple[float, float]] = []
    t = 0.0
    for s, st in enumerate(schedule.steps):
        start = t + beta
        longest = 0.0
        for i, j, b in st:
            d = b / nic
            bars.append((s, i, j, start, start + d))
            longest = max(longest, d)
        steps.append((t, start + longest))
        t = start + longest
    return bars, steps


def brute_force_bars(
    matrix: npt.ArrayLike, backbone: float, nic: float
) -> tuple[list[tuple[int | None, int, int, float, float]], list[tuple[float, float]]]:
    """``[(None, i, j, 0, completion)]`` from the discrete-event estimate."""
    _, events = brute_force_time(matrix, backbone, nic=nic, return_events=True)
    return [(None, i, j, 0.0, t) for t, done in events for i, j in done], []


def plot_gantt(
    bars: Sequence[tuple[int | None, int, int, float, float]],
    steps: Sequence[tuple[float, float]],
    senders: Sequence[str],
    receivers: Sequence[str],
    path: str | os.PathLike[str],
    *,
    title: str = "",
) -> None:
    """Draw the chart (senders on top, receivers below) to ``path`` (png, pdf, svg)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    hosts = list(senders) + list(receivers)
    row = {h: r for r, h in enumerate(hosts)}
    fig_h = max(2.5, 0.28 * len(hosts) + 1.2)
    fig, ax = plt.subplots(figsize=(10, fig_h))
    cmap = plt.get_cmap("tab20")
    # one broken_barh call per host (a schedule may have 10^5 slices)
    per_host: dict[str, tuple[list, list]] = {h: ([], []) for h in hosts}
    for s, i, j, a, b in bars:
        color = cmap((j if s is None else s) % 20)
        for h in (senders[i], receivers[j]):
            per_host[h][0].append((a, b - a))
            per_host[h][1].append(color)
    for h, (spans, colors) in per_host.items():
        if spans:
            ax.broken_barh(spans, (row[h] - 0.35, 0.7), facecolors=colors, edgecolor="black", linewidth=0.3)
    if len(bars) <= 60:
        for s, i, j, a, b in bars:
            mid = (a + b) / 2
            ax.text(mid, row[senders[i]], receivers[j], ha="center", va="center", fontsize=6)
            ax.text(mid, row[receivers[j]], senders[i], ha="center", va="center", fontsize=6)
    if len(steps) <= 200:
        for a, b in steps[1:]:
            ax.axvline(a, color="grey", linewidth=0.5, linestyle=":")
    ax.axhline(len(senders) - 0.5, color="black", linewidth=0.8)
    ax.set_yticks(np.arange(len(hosts)))
    ax.set_yticklabels(hosts, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("time (s)")
    ax.set_title(title or "redistribution")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
