"""What a real network delivers compared with its topology file: the TCP goodput factor, and a
plan and a topology scaled by it (docs/design.md, "Performing plans").

A link shaped to rate R carries TCP payload at ``goodput x R`` (headers, acknowledgements).
Predictions of a run simulate the topology with every bandwidth scaled by that factor, and a
plan's rate caps (computed for the file's rates) are scaled by it before the agents pace to
them; ``topocast probe`` divides measured rates by it to write link rates.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ..errors import InputError

if TYPE_CHECKING:
    from ..plan import Plan
    from ..topology import Topology

__all__ = ["GOODPUT_TESTBED", "check_goodput", "scale_caps", "scale_topology"]

#: TCP goodput / HTB rate on the emulated network (measured: docs/experiments/runtime.md).
GOODPUT_TESTBED = 0.955


def check_goodput(goodput: float, element: str = "--goodput") -> float:
    """``goodput`` if it is a fraction in (0, 1]; otherwise an :class:`InputError` naming ``element``."""
    if not 0 < goodput <= 1:
        raise InputError("expected a fraction in (0, 1]", element=element)
    return goodput


def scale_caps(plan: Plan, factor: float) -> Plan:
    """The plan with every rate cap multiplied by ``factor`` (goodput of the real links)."""
    if factor == 1.0:
        return plan
    return replace(
        plan,
        transfers=tuple(
            replace(t, rate_cap=None if t.rate_cap is None else t.rate_cap * factor) for t in plan.transfers
        ),
    )


def scale_topology(topology: Topology, factor: float) -> Topology:
    """The topology with every link's bandwidth, both directions, multiplied by ``factor``."""
    if factor == 1.0:
        return topology
    links = [
        replace(
            pl,
            bandwidth=pl.bandwidth * factor,
            bandwidth_ba=None if pl.bandwidth_ba is None else pl.bandwidth_ba * factor,
        )
        for pl in topology.physical_links
    ]
    return topology.replace(links=links)
