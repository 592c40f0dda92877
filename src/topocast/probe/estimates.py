"""What the probe's bandwidth inference produces and the helpers both of its paths share
(``link_rates`` on a known tree, ``bandwidth_tree`` by contention): an estimate per link
direction with the samples behind it, the inferred tree, host link rates from samples,
round-robin rounds of disjoint pairs, and rate levels."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

__all__ = [
    "BandwidthTree",
    "Estimate",
    "FlowSamples",
    "confirmed_top",
    "disjoint_rounds",
    "host_link_estimate",
    "levels",
    "round_robin",
]

SLOWDOWN = 0.15  # transfers this close to their hosts' rates were not limited by the path
NEAR_TOP = 0.06  # a host link's samples this close to its fastest are all its own link's rate
UNCERTAIN_SPREAD = 0.25
# the rate written for a host link is re-centred on its readings within this much either
# side of the estimate (twice the spread a reading of one link shows, ``NEAR_TOP`` / 2)
CENTRE_BAND = NEAR_TOP
CENTRE_STEPS = 3
CENTRE_READINGS = 3  # fewer readings near it: the estimate is their median already
# a transfer whose partner's link reads below this share of a host's estimate may have run at
# the partner's rate: not a reading of the host's own link (one reading's spread below it)
PARTNER_SLOWER = 1 - NEAR_TOP / 2
LEVEL_WIDTH = 0.06  # a level of link rates spans at most this much (relative)
RETAKES = 2  # further readings of a host's lone fastest transfer


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
    by_contention: bool = False  # the switch tree was inferred (not given by latencies)
    # ambiguous hub -> the explanations that contention experiments left standing (``ambiguity``)
    standing: dict = field(default_factory=dict)


def host_link_estimate(samples: list, confirmed: list | None = None) -> Estimate:
    """A host link's rate: every transfer it carried ran at most this fast; the samples
    within ``NEAR_TOP`` of the fastest confirmed one (``confirmed_top``) are the ones its own
    link limited (the others met a slower link, a slower partner or company), their median
    the estimate. A link that only ever carried one transfer is uncertain."""
    top = confirmed_top(samples, confirmed)
    near = sorted(r for r in samples if (1 - NEAR_TOP) * top <= r <= top) or [0.0]
    return Estimate(statistics.median(near), near, single=len(samples) < 2)


def confirmed_top(samples: list, confirmed: list | None = None) -> float:
    """The fastest sample that is confirmed: by itself (``confirmed[i]``: a transfer measured
    again) or by another sample within ``NEAR_TOP`` below it; the fastest sample when none
    is. A lone reading above all the others may be luck (docs/experiments/probe.md shows a
    testbed link read that fast): ``FlowSamples.unconfirmed_tops`` has it measured twice more,
    and the median of its readings counts (a lucky reading and one slowed down by other
    traffic are both outvoted)."""
    flags = confirmed or [False] * len(samples)
    ordered = sorted(zip(samples, flags), reverse=True)
    for k, (value, sure) in enumerate(ordered):
        if sure or (k + 1 < len(ordered) and ordered[k + 1][0] >= (1 - NEAR_TOP) * value):
            return value
    return ordered[0][0] if ordered else 0.0


class FlowSamples:
    """Every rate read per transfer (src, dst), and each host's send and receive samples
    from them: one per reading, except that a transfer measured again because its reading
    was a host's lone fastest (``retake``) gives the median of that reading and the new
    ones, confirmed (``confirmed_top``)."""

    def __init__(self) -> None:
        self.by_flow: dict[tuple, list[float]] = {}
        self.retaken: dict[tuple, list[float]] = {}  # the lone fastest reading, then the new ones
        self._estimates: dict[tuple, Estimate] = {}  # (host, side) -> estimate, until new readings
        self.totals: dict[tuple, list[float]] = {}  # (host, side) -> its fan tests' totals

    def add_total(self, h: str, side: int, total: float) -> None:
        """The total of transfers that ``h`` sent (``side`` 0) or received (1) at once: a
        sample of its link, even where each partner alone is slower than it."""
        self._estimates.clear()
        self.totals.setdefault((h, side), []).append(total)

    def add(self, flows: list, rates: list[float]) -> None:
        self._estimates.clear()
        for f, r in zip(flows, rates):
            self.by_flow.setdefault(tuple(f), []).append(r)

    def retake(self, flows: list, rates: list[float]) -> None:
        self._estimates.clear()
        for f, r in zip(map(tuple, flows), rates):
            self.retaken.setdefault(f, [max(self.by_flow.get(f, [r]))]).append(r)
            self.by_flow.setdefault(f, []).append(r)

    def samples(self, h: str, side: int, slower_than: float = 0.0) -> tuple[list[float], list[bool]]:
        """Host ``h``'s samples as sender (``side`` 0) or receiver (1), and which of them
        are confirmed by themselves; ``slower_than``: without the transfers whose partner's
        link reads below it (their partner may have set their rate), where more than this
        one transfer shows the partner's link."""
        values: list[float] = []
        sure: list[bool] = []
        for f, rates in self.by_flow.items():
            if f[side] != h:
                continue
            if slower_than and _reads_below(self._estimate(f[1 - side], 1 - side), slower_than):
                continue
            if f in self.retaken:
                rest = list(rates)
                for r in self.retaken[f]:
                    rest.remove(r)
                values += [*rest, statistics.median(self.retaken[f])]
                sure += [False] * len(rest) + [True]
            else:
                values += rates
                sure += [False] * len(rates)
        totals = self.totals.get((h, side), [])
        return values + totals, sure + [False] * len(totals)

    def host_up(self, h: str) -> Estimate:
        return self._estimate(h, 0)

    def host_down(self, h: str) -> Estimate:
        return self._estimate(h, 1)

    def _estimate(self, h: str, side: int) -> Estimate:
        if (h, side) not in self._estimates:
            self._estimates[(h, side)] = host_link_estimate(*self.samples(h, side))
        return self._estimates[(h, side)]

    def written(self, h: str, side: int) -> Estimate:
        """The rate to write for ``h``'s link (``side`` 0: up, 1: down). ``host_up`` and
        ``host_down`` take the median of the readings near the fastest confirmed one: the
        upper half of those that noise spreads around the link's rate, about one noise
        width above it, which is right for telling whether a transfer ran slower than its
        hosts allow but makes a plan that counts on it finish late. Here the estimate is
        re-centred (``CENTRE_STEPS`` times) on the median of the readings of the host's own
        link within ``CENTRE_BAND`` of it either way, where there are ``CENTRE_READINGS`` of
        them at least: readings slowed by other traffic further than that stay out, and so
        do the transfers whose partner's link reads below ``PARTNER_SLOWER`` times the
        estimate (the partner may have set their rate, a few percent below the host's)."""
        est = self._estimate(h, side)
        values, _ = self.samples(h, side, PARTNER_SLOWER * est.value)
        centre = est.value
        for _ in range(CENTRE_STEPS):
            near = [r for r in values if abs(r - centre) <= CENTRE_BAND * centre]
            if len(near) < CENTRE_READINGS:
                break
            centre = statistics.median(near)
        return Estimate(min(centre, est.value), est.samples, est.at_least, est.single)

    def speed(self, h: str) -> float:
        """The host's fastest confirmed reading, either way."""
        return max(confirmed_top(*self.samples(h, 0)), confirmed_top(*self.samples(h, 1)))

    def unconfirmed_tops(self) -> list[tuple]:
        """The transfers whose reading is a host's fastest (sent or received) and that
        nothing confirms (``confirmed_top``): to be measured twice more (``retake``)."""
        out: list[tuple] = []
        hosts = {h for f in self.by_flow for h in f}
        for h in sorted(hosts):
            for side in (0, 1):
                values, sure = self.samples(h, side)
                ordered = sorted(zip(values, sure), reverse=True)
                if (
                    not ordered
                    or ordered[0][1]
                    or (len(ordered) > 1 and ordered[1][0] >= (1 - NEAR_TOP) * ordered[0][0])
                    or ordered[0][0] in self.totals.get((h, side), ())  # a fan test: measured twice
                ):
                    continue
                flow = max((f for f in self.by_flow if f[side] == h), key=lambda f: max(self.by_flow[f]))
                if flow not in out:
                    out.append(flow)
        return out


def _reads_below(est: Estimate, rate: float) -> bool:
    """The link of ``est`` reads below ``rate``, on more than one reading."""
    return not est.single and est.value < rate


def disjoint_rounds(flows: list[tuple]) -> list[list[tuple]]:
    """``flows`` packed first-fit into rounds in which no host sends twice or receives
    twice (no host link carries two of them)."""
    rounds: list[tuple[list, set, set]] = []
    for s, d in flows:
        for members, senders, receivers in rounds:
            if s not in senders and d not in receivers:
                members.append((s, d))
                senders.add(s)
                receivers.add(d)
                break
        else:
            rounds.append(([(s, d)], {s}, {d}))
    return [m for m, _, _ in rounds]


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
    however evenly the values are spread); each level is its smallest member, so that no link
    is written faster than it was measured (a plan that counts on a few percent more than a
    link carries loses more than a plan that leaves them unused)."""
    out: dict[float, float] = {}
    run: list[float] = []
    for v in sorted(values):
        if run and v > run[0] * (1 + gap):
            out.update({x: run[0] for x in run})
            run = []
        run.append(v)
    out.update({x: run[0] for x in run})
    return out
