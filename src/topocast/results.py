"""Prediction (simulated) and run (measured) results: one shape for both.

Per host: the time it held everything it wanted (s) and its receive rate
(wanted bytes / that time, bytes/s); the makespan (s); the aggregate bandwidth
(sum of the receiving hosts' rates, bytes/s; the Stable Broadcast paper's metric).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["HostResult", "Result", "aggregate_from_times"]


@dataclass(frozen=True, slots=True)
class HostResult:
    time: float  # seconds from the start until the host held every byte it wanted
    rate: float  # bytes/s = wanted bytes / time
    completed: bool = True
    reason: str = ""  # why a host did not complete (runs only)

    def to_json(self) -> dict[str, object]:
        d: dict[str, object] = {"time": self.time, "rate": self.rate}
        if not self.completed:
            d["completed"] = False
            d["reason"] = self.reason
        return d


@dataclass(frozen=True)
class Result:
    """A prediction or a measurement of one plan.

    ``kind`` is ``"predicted"`` or ``"measured"``. ``transfer_times`` holds, per transfer,
    (start of data flow, end) in seconds when known.
    """

    algorithm: str
    per_host: Mapping[str, HostResult]
    makespan: float
    aggregate_bandwidth: float
    kind: str = "predicted"
    transfer_times: tuple[tuple[float, float], ...] = ()
    extra: Mapping[str, object] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        return {
            "algorithm": self.algorithm,
            "aggregate_bandwidth": self.aggregate_bandwidth,
            "makespan": self.makespan,
            "per_host": {h: r.to_json() for h, r in self.per_host.items()},
        }


def aggregate_from_times(
    wanted_bytes: Mapping[str, int], times: Mapping[str, float]
) -> tuple[dict[str, HostResult], float, float]:
    """Per-host results, makespan and aggregate bandwidth from completion times.

    A host with time 0 (wanted nothing or held it all) gets rate ``inf`` and is left out of
    the aggregate; a host that never completed (time ``inf``) contributes 0.
    """
    per_host: dict[str, HostResult] = {}
    aggregate = 0.0
    makespan = 0.0
    for h, nbytes in wanted_bytes.items():
        t = times[h]
        rate = nbytes / t if t > 0 else math.inf
        per_host[h] = HostResult(float(t), float(rate) if math.isfinite(t) else 0.0, completed=math.isfinite(t))
        if math.isfinite(rate):
            aggregate += rate if math.isfinite(t) else 0.0
        makespan = max(makespan, t)
    return per_host, float(makespan), float(aggregate)
