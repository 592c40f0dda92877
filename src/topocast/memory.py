"""Refuse work that cannot fit in memory before allocating it (a clear error, not an OOM kill).

The per-item costs are measured upper estimates of CPython objects (docs/performance.md,
"Planning and simulation at scale"): they only need the right order of magnitude to tell a
plan of millions of transfers on a laptop from one that fits.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

from .errors import InputError

__all__ = ["BYTES_PER_TRANSFER", "BYTES_PER_RANGE", "BYTES_PER_NODE", "available_memory", "check_fits", "paused_gc"]

BYTES_PER_TRANSFER = 1500  # Transfer object, simulator arrays, route, dependency lists
BYTES_PER_RANGE = 150  # one (offset, length) tuple, in the plan and in the interval sets
BYTES_PER_NODE = 2000  # a topology node or link: objects, indexes, routing arrays


def available_memory() -> int | None:
    """MemAvailable of this machine in bytes (None when /proc/meminfo cannot say)."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _gib(n: float) -> str:
    return f"{n / 2**30:.1f} GiB"


def check_fits(nbytes: float, what: str, *, element: str | None = None, hint: str = "") -> None:
    """Raise InputError when ``nbytes`` (an estimate) exceeds the memory available now."""
    avail = available_memory()
    if avail is None or nbytes <= avail:
        return
    raise InputError(
        f"{what} would need about {_gib(nbytes)} of memory; {_gib(avail)} is available"
        + (f" ({hint})" if hint else ""),
        element=element,
    )


@contextmanager
def paused_gc() -> Iterator[None]:
    """Keep the cyclic garbage collector off inside: code that allocates millions of small
    objects without reference cycles (a plan's transfers, the simulator's bookkeeping) would
    otherwise have it rescan them all again and again for nothing."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
