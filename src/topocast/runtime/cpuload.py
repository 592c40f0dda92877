"""What the CPU did during a run: the machine's busy, niced and steal shares from
/proc/stat, the worst second of hypervisor steal, and whether the CPU rather than the links
likely set the pace (reported in the run's outcome, ``runtime.coordinator.RunOutcome``)."""

from __future__ import annotations

import math
import os
from collections import deque

__all__ = [
    "StealWatch",
    "cpu_times",
    "parse_stat",
    "busy_share",
    "niced_share",
    "steal_share",
    "cpu_verdict",
    "STEAL_WARN",
]

STEAL_WARN = 0.2  # a second with at least this much steal gets a warning in the run's outcome


class StealWatch:
    """The worst ``window`` seconds of hypervisor steal during a run, from /proc/stat read at
    most every ``every`` seconds: on a shared VM, steal in the first seconds of a run makes the
    measured times late (docs/experiments/runtime.md)."""

    def __init__(self, t0: float, window: float = 1.0, every: float = 0.25, read=None):
        self.t0, self.window, self.every = t0, window, every
        self.read = read or cpu_times
        self.samples: deque = deque()
        self.peak: tuple | None = None  # (fraction, run clock at the window's end)
        self.last = -math.inf

    def tick(self, now: float) -> None:
        if now - self.last < self.every:
            return
        self.last = now
        st = self.read()
        if not st:
            return
        self.samples.append((now, st))
        # the oldest sample at least `window` before this one starts the window
        while len(self.samples) > 2 and now - self.samples[1][0] >= self.window:
            self.samples.popleft()
        t_old, old = self.samples[0]
        if now - t_old >= self.window * 0.99:
            f = steal_share(old, st)
            if f is not None and (self.peak is None or f > self.peak[0]):
                self.peak = (f, now - self.t0)


def cpu_times():
    """(busy, total, niced) jiffies of all CPUs from /proc/stat, or None.

    ``busy`` excludes the ``nice`` column: processes at nice > 0 (background jobs started
    with ``nice -n 19``) get a tiny share of a core next to the agents (weight 15 vs 1024
    at nice 19), so they do not set the run's pace; counting them made every run on a
    machine with niced background work look CPU-bound."""
    try:
        with open("/proc/stat") as fh:
            return parse_stat(fh.readline())
    except (OSError, ValueError, IndexError):
        return None


def parse_stat(line: str):
    """(busy, total, niced, steal) from the ``cpu`` line of /proc/stat (see ``cpu_times``)."""
    f = [int(x) for x in line.split()[1:]]
    idle = f[3] + (f[4] if len(f) > 4 else 0)
    nice = f[1] if len(f) > 1 else 0
    steal = f[7] if len(f) > 7 else 0
    guest = sum(f[8:10]) if len(f) > 9 else 0  # guest time is already counted in user/nice
    total = sum(f) - guest
    return total - idle - nice, total, nice, steal


def _share(a, b, k: int):
    """Field ``k`` of two ``parse_stat`` readings as a fraction of all cores' time between
    them (None without two readings, or if no time passed)."""
    if not a or not b or b[1] <= a[1]:
        return None
    return (b[k] - a[k]) / (b[1] - a[1])


def busy_share(a, b):
    return _share(a, b, 0)


def niced_share(a, b):
    return _share(a, b, 2)


def steal_share(a, b):
    return _share(a, b, 3)


def cpu_verdict(cpu: dict, wall: float, busy: float | None = None, niced: float | None = None) -> str:
    """Say when the CPU, not the links, may have set the pace: an agent that kept a core
    busy, or a machine whose cores were (nearly) all busy during the run (agents, the
    kernel's shaping and forwarding, and anything else running at nice <= 0; niced
    background work yields to the run and is reported beside, not counted)."""
    if wall <= 0:
        return ""
    ncpu = os.cpu_count() or 1
    msgs = []
    if cpu:
        busiest, busiest_cpu = max(cpu.items(), key=lambda kv: kv[1])
        if busiest_cpu / wall > 0.8:
            msgs.append(f"agent {busiest} used {busiest_cpu / wall:.0%} of a core")
    if busy is not None and busy > 0.9 and wall >= 1.0:
        share = sum(cpu.values()) / (wall * ncpu) if cpu else 0.0
        bg = f", niced background work {niced:.0%}" if niced else ""
        msgs.append(
            f"the {ncpu} cores were {busy:.0%} busy during the run (agents {share:.0%}{bg}, load average {os.getloadavg()[0]:.1f})"
        )
    return "; ".join(msgs)
