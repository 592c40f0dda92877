"""Switches and link bandwidths from timed transfers only (networks whose latencies tell
nothing apart, like the emulated testbed).

Our own design (docs/experiments/probe.md), after the bandwidth-map step of Shirai, Saito,
Taura (HPDC 2007) and the shared-bottleneck tests of network tomography (two transfers slow
each other down only when they cross a common link that limits them):

1. **Groups (leaf switches), by contention.** Hosts are placed one at a time, tried against
   each group G found so far. With two or more members in G: x->g1 started together with
   o1->g2 (and o2->g3) from outsiders o: in a tree whose hosts hang off leaf switches these
   share G's downlink unless x is behind G's switch, so x joins G when nothing slows down.
   With one member y: z->x and w->y from two hosts z, w of other groups share a link only
   when x and y sit behind one switch, so x joins when they slow down. "Slow" means at
   least ``SLOWDOWN`` below the same transfers without the probe's (alone, or the load
   together). A host that joins no group starts its own; the first two members of each
   group are checked again at the end with the first test. Cost: about two measurement
   rounds per group tried, O(N·g) in all (g groups).
2. **Access links.** Within each group, a ring of transfers (each host sends to the next
   and receives from the previous one, all at once, both ring directions) uses every host's
   link once each way and no switch-to-switch link; all groups run their rings together
   (they share no link). A transfer's rate is at most each of its links', so a host's
   up/down rate is read from the fastest transfers it sent/received in any measurement: the
   median of those within ``SLOWDOWN`` of the fastest (robust to one lucky sample); a link
   that only one sample supports is flagged uncertain.
3. **Between groups.** For each pair of groups, up to ``FLOWS_PER_PAIR`` transfers each way,
   started together (distinct senders and receivers): their total is what the path between
   the groups carries, or the hosts' sum when that is smaller (then the estimate is only a
   lower bound, flagged ``at_least``). O(g²) measurements.
4. **The switch tree**, by single linkage on these group-pair rates (a tree's bottleneck
   rates form an ultrametric: the rate between two groups is the smallest link on their
   path): the fastest-connected groups are joined first, under a switch; each joining link's
   rate per direction is the largest group-pair rate across it.

Nearly equal rates are grouped into levels (``levels``) so that the planners see a few
distinct values, not one per link; an estimate whose samples spread more than
``UNCERTAIN_SPREAD`` is flagged uncertain.

Limits (documented): a switch whose uplink never limits two transfers cannot be seen (its
hosts are placed under the switch above; for bandwidth that is the same network); a
switch with a single host merges into the host's link (a chain of links is one link).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["BandwidthTree", "Estimate", "host_link_estimate", "infer_bandwidth_tree", "levels"]

SLOWDOWN = 0.15  # transfers this close to their hosts' rates were not limited by the path
NOISE_PRIOR = 0.05  # the relative run-to-run spread assumed before any was measured
NOISE_FACTOR = 3.0  # a slowdown this many times the spread is contention, not noise
MIN_THRESHOLD, MAX_THRESHOLD = 0.08, 0.35
REPEATS = 2  # extra measurements of a borderline contention test
FLOWS_PER_PAIR = 3
NEAR_TOP = 0.06  # a host link's samples this close to its fastest are all its own link's rate
UNCERTAIN_SPREAD = 0.25
LEVEL_GAP = 0.1  # clusters of groups joined at rates this close go under one switch
LEVEL_WIDTH = 0.06  # a level of link rates spans at most this much (relative)

Bulk = Callable[[list, float], list]  # (flows [(src, dst)], duration) -> rates in bytes/s


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


class _Prober:
    def __init__(self, bulk: Bulk, duration: float):
        self.bulk, self.duration = bulk, duration
        self.count = 0
        self.best_up: dict[str, list] = {}
        self.best_down: dict[str, list] = {}
        self.alone: dict[tuple, float] = {}
        self.together: dict[tuple, list] = {}
        self.differences: list[float] = []  # |r1 / r2 - 1| of one transfer measured twice alike

    def run(self, flows: list) -> list[float]:
        rates = self.bulk(flows, self.duration)
        self.count += len(flows)
        for (s, d), r in zip(flows, rates):
            self.best_up.setdefault(s, []).append(r)
            self.best_down.setdefault(d, []).append(r)
        return rates

    def together_rates(self, flows: tuple) -> list[float]:
        if flows not in self.together:
            self.together[flows] = self.run(list(flows))
        return self.together[flows]

    def alone_rate(self, flow: tuple) -> float:
        if flow not in self.alone:
            self.alone[flow] = self.run([flow])[0]
        return self.alone[flow]

    def repeat(self, flows: list, before: list[float]) -> list[float]:
        """Measure ``flows`` again; their differences to ``before`` feed the noise estimate."""
        again = self.run(flows)
        self.differences += [abs(a / b - 1) for a, b in zip(again, before) if a > 0 and b > 0]
        return again

    def calibrate(self, hosts: list) -> None:
        """The run-to-run noise: disjoint pairs of hosts (both directions) measured twice."""
        flows = [(hosts[i], hosts[i + 1]) for i in range(0, len(hosts) - 1, 2)]
        flows += [(d, s) for s, d in flows]
        self.repeat(flows, self.run(flows))

    @property
    def noise(self) -> float:
        """A transfer's relative spread from one measurement to the next: the median of the
        differences seen (for two measurements with relative spread s each, about s)."""
        return statistics.median(self.differences) if self.differences else NOISE_PRIOR

    @property
    def threshold(self) -> float:
        """The slowdown taken as contention: ``NOISE_FACTOR`` times the noise, within bounds."""
        return min(MAX_THRESHOLD, max(MIN_THRESHOLD, NOISE_FACTOR * self.noise))


def infer_bandwidth_tree(hosts: list, bulk: Bulk, duration: float = 0.5) -> BandwidthTree:
    """Steps 1-4 of the module comment; ``bulk(flows, duration)`` starts the transfers
    together and returns each one's rate."""
    pr = _Prober(bulk, duration)
    pr.calibrate(hosts)
    groups = _group(hosts, pr)
    _rings(groups, pr)
    pair_rates = _between_groups(groups, pr)
    tree = _link_tree(groups, pr, pair_rates)
    tree.measurements = pr.count
    tree.noise, tree.threshold = pr.noise, pr.threshold
    return tree


# ---------------------------------------------------------------- step 1: groups
def _contend(pr: _Prober, probe: tuple, *load: tuple) -> bool:
    """Does ``probe`` started together with the ``load`` transfers slow down, or slow them
    down (against the probe alone and the load without it: a shared link that limits)?
    "Slow" is relative to the measured noise (``_Prober.threshold``). A slowdown near the
    threshold (within a factor 2 either way) is measured up to ``REPEATS`` times more, with
    fresh baselines, and the ratios averaged: one noisy round must not decide."""
    flows = [probe, *load]
    together = pr.run(flows)
    base = _baseline(pr, probe, load)
    ratios = [_slowest_ratio(together, base)]
    for _ in range(REPEATS):
        theta = pr.threshold
        slowdown = 1 - statistics.fmean(ratios)
        if not theta / 2 < slowdown < 2 * theta:
            break
        together = pr.repeat(flows, together)
        base = _baseline(pr, probe, load, fresh=True)
        ratios.append(_slowest_ratio(together, base))
    return 1 - statistics.fmean(ratios) > pr.threshold


def _baseline(pr: _Prober, probe: tuple, load: tuple, fresh: bool = False) -> list[float]:
    if fresh:  # measured again alike: the differences feed the noise estimate
        old = [pr.alone.pop(probe, None), *(pr.together.pop(load, None) or [pr.alone.pop(load[0], None)])]
        new = _baseline(pr, probe, load)
        pr.differences += [abs(a / b - 1) for a, b in zip(new, old) if a and b]
        return new
    return [pr.alone_rate(probe)] + (pr.together_rates(load) if len(load) > 1 else [pr.alone_rate(load[0])])


def _slowest_ratio(together: list[float], base: list[float]) -> float:
    return min((r / b if b > 0 else 1.0) for r, b in zip(together, base))


def _outside(hosts: list, groups: list, avoid: set, near: str | None = None) -> list:
    """Hosts not in ``avoid``: first members of placed groups (largest first), then hosts
    not placed yet: the one after ``near`` in the list (hosts are often listed by place),
    then from the far end of the list."""
    placed = [g[0] for g in sorted(groups, key=len, reverse=True) if g[0] not in avoid]
    grouped = {h for g in groups for h in g}
    unplaced = [h for h in hosts if h not in avoid and h not in grouped]
    after = [h for h in unplaced if near is not None and hosts.index(h) > hosts.index(near)][:1]
    return list(dict.fromkeys(placed + after + unplaced[::-1]))


def _joins(hosts: list, groups: list, g: list, x: str, pr: _Prober) -> bool | None:
    """Does x sit behind g's switch? None when no test can be made yet."""
    if len(g) >= 2:
        # x -> g[0] and o -> g[1] share g's downlink unless x is inside g; with two outsiders
        # (from different places) the downlink is loaded even when one of them is slowed
        # by a link of its own
        others = _outside(hosts, groups, {x, *g}, near=x)
        if not others:
            return None
        return not _contend(pr, (x, g[0]), *[(o, m) for o, m in zip(others[:2], g[1:])])
    # a lone y: z -> x and w -> y share a link when x and y sit behind one switch (or when
    # z and w do: so z and w come from two different groups when there are two; from one
    # group otherwise, whose uplink may then be what they share: ``_recheck`` catches that)
    y = g[0]
    others = [grp for grp in sorted(groups, key=len, reverse=True) if grp is not g]
    if len(others) >= 2:
        z, w = others[0][0], others[1][0]
    elif others and len(others[0]) >= 2:
        z, w = others[0][0], others[0][1]
    else:
        rest = _outside(hosts, groups, {x, y})
        if len(rest) < 2:
            return None
        z, w = rest[0], rest[1]
    return _contend(pr, (z, x), (w, y))


def _recheck(hosts: list, groups: list, pr: _Prober) -> list[list]:
    """The first two members of each group of three or more were paired by the weaker
    test: check each against the rest of its group with the outsider test."""
    out = []
    for g in groups:
        if len(g) >= 3:
            for m in list(g[:2]):
                rest = [h for h in g if h != m]
                if _joins(hosts, groups, rest, m, pr) is False:
                    g.remove(m)
                    out.append([m])
        out.append(g)
    return out


def _group(hosts: list, pr: _Prober) -> list[list]:
    groups: list[list] = []
    for x in hosts:
        for g in sorted(groups, key=len, reverse=True):
            if _joins(hosts, groups, g, x, pr):
                g.append(x)
                break
        else:
            groups.append([x])
    return _recheck(hosts, groups, pr)


# ---------------------------------------------------------------- step 2: access links
def _rings(groups: list, pr: _Prober) -> None:
    for direction in (1, -1):
        flows = []
        for g in groups:
            if len(g) >= 2:
                ring = g if direction == 1 else g[::-1]
                flows += [(ring[i], ring[(i + 1) % len(ring)]) for i in range(len(ring))]
                if len(ring) == 2 and direction == -1:
                    flows = flows[:-2]  # a pair's two directions were both in the first ring
        if flows:
            pr.run(flows)


# ---------------------------------------------------------------- step 3: between groups
def _between_groups(groups: list, pr: _Prober) -> dict:
    """(i, j) -> Estimate of what group i sends to group j in all."""
    out = {}
    for i in range(len(groups)):
        for j in range(i + 1, len(groups)):
            k = min(FLOWS_PER_PAIR, len(groups[i]), len(groups[j]))
            a, b = groups[i][:k], groups[j][:k]
            flows = [(a[n], b[n]) for n in range(k)] + [(b[n], a[(n + 1) % k]) for n in range(k)]
            rates = pr.run(flows)
            for src, dst, fs, rs in ((i, j, flows[:k], rates[:k]), (j, i, flows[k:], rates[k:])):
                out[(src, dst)] = (sum(rs), rs, fs)
    return out


# ---------------------------------------------------------------- step 4: the switch tree
def host_link_estimate(samples: list) -> Estimate:
    """A host link's rate: every transfer it carried ran at most this fast; the samples
    within ``NEAR_TOP`` of the fastest are the ones its own link limited (the others met a
    slower link, a slower partner or company), their median the estimate. A link that only
    ever carried one transfer is uncertain."""
    top = max(samples, default=0.0)
    near = sorted(r for r in samples if r >= (1 - NEAR_TOP) * top) or [0.0]
    return Estimate(statistics.median(near), near, single=len(samples) < 2)


def _up(pr: _Prober, h: str) -> Estimate:
    return host_link_estimate(pr.best_up.get(h, []))


def _down(pr: _Prober, h: str) -> Estimate:
    return host_link_estimate(pr.best_down.get(h, []))


def _link_tree(groups: list, pr: _Prober, pair_rates: dict) -> BandwidthTree:
    tree = BandwidthTree(groups=[list(g) for g in groups])
    names = iter(f"sw{i}" for i in range(10 * len(groups) + 10))
    # every group of two or more hosts gets its leaf switch; a lone host is its own node
    node_of = []
    for g in groups:
        if len(g) >= 2:
            sw = next(names)
            tree.switches.append(sw)
            for h in g:
                tree.links[(h, sw)] = (_up(pr, h), _down(pr, h))
            node_of.append(sw)
        else:
            node_of.append(g[0])
    if len(groups) == 1:
        return tree
    # single linkage on the groups' pair rates (both directions' smaller one)
    clusters = {i: [i] for i in range(len(groups))}
    top = {i: node_of[i] for i in range(len(groups))}

    def rate(ci: list, cj: list) -> float:
        return max(min(pair_rates[(a, b)][0], pair_rates[(b, a)][0]) for a in ci for b in cj)

    while len(clusters) > 1:
        keys = list(clusters)
        best = max((rate(clusters[a], clusters[b]), a, b) for a in keys for b in keys if a < b)
        level = best[0]
        # every cluster joined at (nearly) this rate goes under one new switch
        members = {best[1], best[2]}
        for c in keys:
            if c not in members and any(rate(clusters[c], clusters[m]) >= (1 - LEVEL_GAP) * level for m in members):
                members.add(c)
        if len(clusters) == len(members) == 2 and all(top[m] in tree.switches for m in members):
            a, b = sorted(members)
            tree.links[(top[a], top[b])] = _across(clusters[a], clusters[b], pair_rates, pr)
            clusters = {a: clusters[a] + clusters[b]}
            break
        sw = next(names)
        tree.switches.append(sw)
        merged: list = []
        everyone = [g for cl in clusters.values() for g in cl]
        for c in sorted(members):
            rest = [g for g in everyone if g not in clusters[c]]
            tree.links[(top[c], sw)] = _across(clusters[c], rest, pair_rates, pr)
        for c in sorted(members):
            merged += clusters.pop(c)
        new = min(members)
        clusters[new] = merged
        top[new] = sw
    return tree


def _across(side: list, other: list, pair_rates: dict, pr: _Prober) -> tuple:
    """(side->other, other->side) estimates: the largest group-pair total across the cut; a
    lower bound when each transfer ran about as fast as its own hosts' links allow (the
    path may carry more than they could send)."""

    def est(srcs, dsts) -> Estimate:
        best, flows = 0.0, []
        for a in srcs:
            for b in dsts:
                total, _, fs = pair_rates[(a, b)]
                if total > best:
                    best, flows = total, fs
        hosts_limit = sum(min(_up(pr, s).value, _down(pr, d).value) for s, d in flows)
        return Estimate(best, [best], at_least=best >= (1 - SLOWDOWN) * hosts_limit)

    return est(side, other), est(other, side)


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
