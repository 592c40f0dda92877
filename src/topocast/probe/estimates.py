"""What the probe's bandwidth inference produces and the helpers both of its paths share
(``link_rates`` on a known tree, ``bandwidth_tree`` by contention): an estimate per link
direction with the samples behind it, the inferred tree, host link rates from samples,
round-robin rounds of disjoint pairs, and rate levels."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

__all__ = ["BandwidthTree", "Estimate", "host_link_estimate", "levels", "round_robin"]

SLOWDOWN = 0.15  # transfers this close to their hosts' rates were not limited by the path
NEAR_TOP = 0.06  # a host link's samples this close to its fastest are all its own link's rate
UNCERTAIN_SPREAD = 0.25
LEVEL_WIDTH = 0.06  # a level of link rates spans at most this much (relative)


@dataclass
class Estimate:
    """One link direction's bandwidth: the value written, the samples behind it."""

    value: float
    samples: list = field(default_factory=list)
    at_least: bool = False  # the transfers could not fill the link: a lower bound
    single: bool = False  # one sample only where several were expected

    @property
    def spread(self) -> float:
        if len(self.samples) < 2 or self.value <= 0:
            return 0.0
        return (max(self.samples) - min(self.samples)) / statistics.median(self.samples)

    @property
    def uncertain(self) -> bool:
        return self.single or self.spread > UNCERTAIN_SPREAD


@dataclass
class BandwidthTree:
    """Hosts grouped under switches; ``links`` maps (a, b) to (a->b, b->a) estimates."""

    groups: list
    switches: list = field(default_factory=list)
    links: dict = field(default_factory=dict)
    measurements: int = 0
    noise: float = 0.0  # measured relative run-to-run spread of a transfer's rate
    threshold: float = 0.0  # the slowdown taken as contention (from the noise)


def host_link_estimate(samples: list) -> Estimate:
    """A host link's rate: every transfer it carried ran at most this fast; the samples
    within ``NEAR_TOP`` of the fastest are the ones its own link limited (the others met a
    slower link, a slower partner or company), their median the estimate. A link that only
    ever carried one transfer is uncertain."""
    top = max(samples, default=0.0)
    near = sorted(r for r in samples if r >= (1 - NEAR_TOP) * top) or [0.0]
    return Estimate(statistics.median(near), near, single=len(samples) < 2)


def round_robin(members: list) -> list[list[tuple]]:
    """Every pair of ``members`` once, as rounds of disjoint pairs (the circle method of a
    round-robin tournament: n - 1 rounds, n / 2 pairs each; one member sits out each round
    when n is odd)."""
    circle = list(members) + ([None] if len(members) % 2 else [])
    n = len(circle)
    rounds = []
    for _ in range(n - 1):
        pairs = [(circle[i], circle[n - 1 - i]) for i in range(n // 2)]
        rounds.append([(a, b) for a, b in pairs if a is not None and b is not None])
        circle = [circle[0], circle[-1], *circle[1:-1]]
    return rounds


def levels(values: list[float], gap: float = LEVEL_WIDTH) -> dict[float, float]:
    """Map every value to its level: values sorted and cut where the next one is more than
    ``gap`` (relative) above the level's smallest (so a level never spans more than ``gap``,
    however evenly the values are spread); each level is its members' median."""
    out: dict[float, float] = {}
    run: list[float] = []
    for v in sorted(values):
        if run and v > run[0] * (1 + gap):
            m = statistics.median(run)
            out.update({x: m for x in run})
            run = []
        run.append(v)
    if run:
        m = statistics.median(run)
        out.update({x: m for x in run})
    return out
