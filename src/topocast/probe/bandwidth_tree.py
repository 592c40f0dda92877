"""Switches and link bandwidths from timed transfers only (networks whose latencies tell
nothing apart, like the emulated testbed).

Our own design (docs/experiments/probe.md), after the bandwidth-map step of Shirai, Saito,
Taura (HPDC 2007) and the shared-bottleneck tests of network tomography (a transfer runs
slower than its two hosts allow only when a link on its path limits it: a slow one, or one
shared with other transfers):

1. **Groups, by a round robin.** Every pair of hosts, both directions, in N - 1 rounds of
   disjoint pairs: in each round every host sends one transfer and receives one, so no host
   link is shared and every switch-to-switch link carries as many transfers as the round
   sends across it. A transfer more than the contention threshold slower than its hosts'
   rates separates its two hosts: they are under different switches. A host's rate is read
   from its fastest confirmed readings (``estimates.confirmed_top``: a lone fastest reading
   is measured twice more, so that one lucky reading cannot make every other transfer of
   the host look slowed down). The threshold is ``NOISE_FACTOR`` times the measured noise
   (the first round measured twice; the spread of its transfers that ran at their hosts'
   rates both times), within bounds; rounds with a transfer near the threshold are measured
   once more and the rates averaged. Hosts under one switch are never separated from each
   other: the groups are the cliques of never-separated hosts, the heaviest first, each
   host weighing one more than the hosts it was separated from (a pair across a link that
   its round left idle is not separated, but a whole group rarely is; a slow host fits
   many cliques and weighs little). A host whose own link is too slow to fill any
   switch-to-switch link is separated from nobody: it is placed by contention tests on
   totals between hosts sure of their group (``_under_candidate``:
   transfers between its group and the candidate group fill the link between them, one way
   and then the other; does the host's own transfer take its share of that total?), and a
   host left alone though never separated from some group joins it. Before that, each
   group of four hosts or more (and at most half of all hosts) runs a round robin of its
   own, all groups at once (``_split_by_own_round_robins``): a link inside a supposed group
   that only two or more of its transfers at once can fill is filled there, where the round
   robin of all hosts sent its pairs across it one at a time.
   Cost: N(N - 1) transfers, in N - 1 rounds, plus the repeated ones and the groups' own
   round robins (fewer than N / 2 rounds, each measured at most twice): O(N) rounds.
2. **Between groups.** For each pair of groups, up to ``FLOWS_PER_PAIR`` transfers each way,
   started together (distinct senders and receivers): their total is what the path between
   the groups carries (or less, when the hosts cannot fill it). O(g²) measurements.
3. **The switch tree**, by single linkage on these group-pair rates (a tree's bottleneck
   rates form an ultrametric: the rate between two groups is the smallest link on their
   path): the fastest-connected groups are joined first, under a switch. The ultrametric
   cannot tell a star of groups from a chain (``_LevelTree``): where three or more groups
   join at one level, each is tested for lying between the others (it takes in from two of
   them at once more than one link carries, and neither loses anything: one round per
   group, and per pair of groups at a group found to have two links or more); a group
   joining such a chain, or two groups joined alone, later is linked to the group its link
   meets, found the same way; two such clusters joining each other are linked between the
   group of each that the link meets (tested from both sides).
   Without such evidence the groups stay under one new switch, as before.
4. **Link rates**: every link of that tree measured as on a known tree (``link_rates``),
   the host links from the round robin's transfers; each link between switches in a round
   of its own (the tree may be wrong, and transfers that share no link on it may share one
   in fact), and never below what the step-2 transfers carried across it alone.

Limits (documented): a switch-to-switch link that no round of the round robin fills goes
unseen (its two switches are inferred as one); for bandwidth that is the same network only
when no other set of transfers can fill it either (``equivalent``).
"""

from __future__ import annotations

import inspect
import math
import statistics
from collections.abc import Callable

import networkx as nx

from .estimates import RETAKES, SLOWDOWN, BandwidthTree, Estimate, FlowSamples, disjoint_rounds, levels, round_robin
from .link_rates import measure_links

__all__ = ["infer_bandwidth_tree", "levels"]

NOISE_PRIOR = 0.05  # the relative run-to-run spread assumed before any was measured
NOISE_FACTOR = 4.0  # a slowdown this many times the spread is contention, not noise
MIN_THRESHOLD, MAX_THRESHOLD = 0.1, 0.35
REPEATS = 3  # extra measurements of an undecided contention test
FLOWS_PER_PAIR = 3
SAME_PROFILE = 0.8  # a separated pair agreeing on this share of the others is re-measured
LEVEL_GAP = 0.1  # clusters of groups joined at rates this close go under one switch
# a transfer slower than its hosts allow by this many times the threshold separates them
# even when a short window's reading is coarse: its receiver need not wait for a finer one
# (``runtime.probing.RateWatch``); a transfer near the threshold still is read finely
CLEARLY_SLOW = 2.0

Bulk = Callable[[list, float], list]  # (flows [(src, dst)], duration) -> rates in bytes/s


class _Prober:
    """Rounds of transfers and what they showed: every host's readings, the repeated
    transfers (the noise), the contention tests' loads."""

    def __init__(self, bulk: Bulk, duration: float):
        self.bulk, self.duration = bulk, duration
        self.count = 0
        self.samples = FlowSamples()
        self.repeats: list[tuple] = []  # (flow, rate, rate again) of transfers measured twice alike
        self.load_alone: dict[tuple, list[float]] = {}  # a contention test's load -> its totals alone
        # a bulk that takes per-transfer bounds and totals (``ProbeSession.bulk``) can end a
        # round as soon as what is read of it has settled
        self.bounded = {"below", "totals"} <= set(inspect.signature(bulk).parameters)

    def run(self, flows: list, separating: bool = False, totals: list | None = None) -> list[float]:
        """Measure ``flows`` together, their rates taken as readings of their hosts' links.
        ``separating``: only whether each transfer ran slower than its hosts allow by more
        than the threshold matters (not the exact rate of one that clearly did:
        ``CLEARLY_SLOW``), not totals. ``totals``: sets of flows (indices) of which only the
        total is used (``ProbeSession.bulk``)."""
        rates = self._bulk(flows, separating, totals)
        self.count += len(flows)
        self.samples.add(flows, rates)
        return rates

    def run_unsampled(self, flows: list, separating: bool = False) -> list[float]:
        """Measure ``flows`` without taking their rates as readings of their hosts' links."""
        self.count += len(flows)
        return self._bulk(flows, separating)

    def run_apart(self, sets: list[list], separating: bool = False) -> list[list[float]]:
        """Measure flow sets whose traffic cannot meet (the caller says why) in one round, as
        if each ran alone: each set's rates. Not taken as readings of the hosts' links."""
        rates = self.run_unsampled([f for flows in sets for f in flows], separating)
        out, pos = [], 0
        for flows in sets:
            out.append(rates[pos : pos + len(flows)])
            pos += len(flows)
        return out

    def _bulk(self, flows: list, separating: bool, totals: list | None = None) -> list[float]:
        if not self.bounded:
            return self.bulk(flows, self.duration)
        share = max(0.0, 1 - CLEARLY_SLOW * self.threshold)
        below = [share * self.allowed(*f) or None for f in flows] if separating else None
        return self.bulk(flows, self.duration, below=below, totals=totals)  # type: ignore[call-arg]

    def fastest(self, hosts: list) -> list:
        """``hosts``, fastest first (their fastest confirmed readings)."""
        return sorted(hosts, key=lambda h: -self.samples.speed(h))

    def repeat(self, flows: list, before: list[float], separating: bool = False) -> list[float]:
        """Measure ``flows`` again; their differences to ``before`` feed the noise estimate
        (transfers that ran at their hosts' rates both times only: ``separating`` cuts
        short none of them)."""
        again = self.run(flows, separating)
        self.repeats += [(f, a, b) for f, a, b in zip(flows, again, before) if a > 0 and b > 0]
        return again

    def allowed(self, src: str, dst: str) -> float:
        """The fastest a transfer src -> dst can run: its hosts' link rates so far."""
        return min(self.samples.host_up(src).value, self.samples.host_down(dst).value)

    @property
    def noise(self) -> float:
        """A transfer's relative spread from one measurement to the next, among the transfers
        that ran at their hosts' rates both times (nothing else limited them: the spread a
        same-switch pair shows; a shared link's split between TCP flows varies much more):
        the median of |r1 / r2 - 1| (for two measurements with relative spread s each, about
        s); ``NOISE_PRIOR`` until three such pairs of readings exist."""
        free = [abs(a / b - 1) for f, a, b in self.repeats if min(a, b) >= (1 - SLOWDOWN) * self.allowed(*f)]
        return statistics.median(free) if len(free) >= 3 else NOISE_PRIOR

    @property
    def threshold(self) -> float:
        """The slowdown taken as contention: ``NOISE_FACTOR`` times the noise, within bounds."""
        return min(MAX_THRESHOLD, max(MIN_THRESHOLD, NOISE_FACTOR * self.noise))


def infer_bandwidth_tree(hosts: list, bulk: Bulk, duration: float = 0.5) -> BandwidthTree:
    """Steps 1-4 of the module comment; ``bulk(flows, duration)`` starts the transfers
    together and returns each one's rate."""
    pr = _Prober(bulk, duration)
    groups = _group_by_round_robin(hosts, pr)
    pair_rates = _between_groups(groups, pr)
    switches, links, floors = _switch_tree(groups, pair_rates, _LevelTree(pr, groups, pair_rates))
    # step 4: every link of that tree measured as on a known tree (``link_rates``), the host
    # links from the round robin's transfers and the fan tests
    adj: dict = {}
    for a, b in links:
        adj.setdefault(a, []).append(b)
        adj.setdefault(b, []).append(a)
    # the tree is inferred: transfers that share no link on it may share one in fact, so
    # each link between switches is measured in a round of its own
    tree = measure_links(adj, hosts, switches, bulk, duration, known=pr.samples, pack_edges=False)
    _raise_to_floors(tree, floors)
    tree.groups = [list(g) for g in groups]
    tree.measurements += pr.count
    tree.noise, tree.threshold = pr.noise, pr.threshold
    tree.by_contention = True
    return tree


def _raise_to_floors(tree: BandwidthTree, floors: dict) -> None:
    """A link direction measured below its floor (what the transfers between groups carried
    across it, alone: ``_switch_tree``) takes the floor: a reading that low met traffic that
    the inferred tree does not show."""
    for (a, b), (ab, ba) in tree.links.items():
        low_ab, low_ba = floors.get((a, b), 0.0), floors.get((b, a), 0.0)
        tree.links[(a, b)] = (
            ab if ab.value >= low_ab else Estimate(low_ab, [low_ab]),
            ba if ba.value >= low_ba else Estimate(low_ba, [low_ba]),
        )


# ---------------------------------------------------------------- step 1: groups
def _group_by_round_robin(hosts: list, pr: _Prober) -> list[list]:
    """Every pair of hosts, both directions, in rounds of disjoint pairs: in each round every
    host sends one transfer and receives one, so host links are never shared and a transfer
    slower than its two hosts allow crossed a switch-to-switch link that limited it (slow, or
    shared with the round's other transfers): its hosts are under different switches. The
    groups are the heaviest cliques of hosts never so separated (``_heaviest_cliques_first``),
    checked by their own round robins, and the hosts that no transfer separated from a
    second group are placed by contention tests."""
    rounds = [pairs + [(b, a) for a, b in pairs] for pairs in round_robin(hosts)]
    rate: dict[tuple, list] = {}
    for k, flows in enumerate(rounds):
        rates = pr.run(flows, separating=True)
        if k == 0:  # the same round twice: the noise, under a realistic load
            rates = [(a + b) / 2 for a, b in zip(rates, pr.repeat(flows, rates, separating=True))]
        for f, r in zip(flows, rates):
            rate.setdefault(f, []).append(r)
    # a host's lone fastest reading is measured twice more (``estimates.confirmed_top``)
    for flows in disjoint_rounds(pr.samples.unconfirmed_tops()) * RETAKES:
        pr.samples.retake(flows, pr.run_unsampled(flows))
    for flows in _borderline_rounds(rounds, rate, pr):
        for f, r in zip(flows, pr.repeat(flows, [statistics.fmean(rate[f]) for f in flows], separating=True)):
            rate[f].append(r)
    # a separation that the two hosts' other separations contradict (a transfer between
    # two hosts under one switch slowed down by a stall of this shared machine): its round
    # twice more, and the median reading decides (``_deficit``)
    for flows in _contradicted_rounds(rounds, rate, pr, hosts):
        for _ in range(2):
            for f, r in zip(flows, pr.repeat(flows, [statistics.fmean(rate[f]) for f in flows], separating=True)):
                rate[f].append(r)
    together = _together(hosts, pr, rate)
    groups = _heaviest_cliques_first(together, hosts)
    split = _split_by_own_round_robins(groups, pr)
    if split:
        together.remove_edges_from(split)
        groups = _heaviest_cliques_first(together, hosts)
    return _adopt_lone_hosts(_settle_ambiguous(groups, together, pr), together)


def _split_by_own_round_robins(groups: list[list], pr: _Prober) -> list[tuple]:
    """The pairs of hosts that a group's own round robin separates. In the round robin of
    all hosts a group's pairs meet in different rounds, each beside whatever else its round
    sends: a link inside a supposed group that only two or more of its own transfers can
    fill (two switches of fast hosts, joined by a link faster than any one of them) is
    filled by chance only. Here each group of four hosts or more runs its own round robin,
    all groups at once (their hosts are distinct: no host link is shared), so that each
    round sends about half of the group's hosts across any split of it at once (a smaller
    group has a single host on one side of any split, and its transfers cross the link one
    at a time however they are paired). Not a group of more than half of all hosts: a round
    of the round robin of all hosts pairs about |G|²/2N of its hosts with each other, more
    than half as many as its own round would (for one switch over all hosts, the same
    rounds again). A transfer slower than its hosts by the threshold in its round and again
    when the round is measured once more separates its two hosts."""
    hosts = sum(len(g) for g in groups)
    own = [round_robin(g) for g in groups if 4 <= len(g) <= hosts / 2]
    out: list[tuple] = []
    for k in range(max((len(r) for r in own), default=0)):
        # The groups' k-th rounds share one round of the network (``run_apart``): a group
        # whose hosts are under one switch sends over its own host links only, which no
        # other transfer of the round uses (each host is in one group and in one pair of
        # its round), so nothing can slow its transfers down and no false separation can
        # come of the others; a group that spans a link between switches sends across it,
        # and whatever else meets it there only slows its transfers further, which is the
        # split this step looks for.
        sets = [[*r[k], *((b, a) for a, b in r[k])] for r in own if k < len(r)]
        slow = set().union(*(_slowed(pr, f, r) for f, r in zip(sets, pr.run_apart(sets, separating=True))))
        if slow:
            again = set().union(*(_slowed(pr, f, r) for f, r in zip(sets, pr.run_apart(sets, separating=True))))
            out += sorted(slow & again)
    return out


def _slowed(pr: _Prober, flows: list, rates: list[float]) -> set:
    """The transfers slower than their two hosts allow by more than the threshold."""
    return {(s, d) for (s, d), r in zip(flows, rates) if _shortfall(pr, s, d, r) > pr.threshold}


def _together(hosts: list, pr: _Prober, rate: dict) -> nx.Graph:
    """The hosts, joined where no transfer between them separated them (``_separated``)."""
    together = nx.Graph()
    together.add_nodes_from(hosts)
    together.add_edges_from(
        (x, y) for i, x in enumerate(hosts) for y in hosts[i + 1 :] if not _separated(pr, rate, x, y)
    )
    return together


def _heaviest_cliques_first(together, hosts: list) -> list[list]:
    """Hosts under one switch are never separated from each other (a clique of ``together``);
    hosts under different switches were separated at least once, except for the odd pair
    whose round left their link idle, and a slow host, whose transfers fill no link between
    switches, is separated from hardly anyone: it fits many cliques, and the largest clique
    can take in the slow hosts of other switches in place of its own fast ones. So each
    host weighs one more than the hosts it was separated from (what its place rests on),
    and the heaviest clique is taken first, then the heaviest of the rest."""
    separations = {h: len(hosts) - 1 - together.degree(h) for h in hosts}
    groups: list[list] = []
    left = together.copy()
    while left.number_of_nodes():
        # ties go to the clique of the earliest hosts (the same answer on every run)
        best = min(
            nx.find_cliques(left),
            key=lambda c: (-sum(1 + separations[h] for h in c), -len(c), sorted(hosts.index(h) for h in c)),
        )
        groups.append(sorted(best, key=hosts.index))
        left.remove_nodes_from(best)
    return groups


def _settle_ambiguous(groups: list[list], together, pr: _Prober) -> list[list]:
    """A host never separated from another group either (its link too slow to load the
    switch-to-switch link in any round) is placed by contention (``_under_candidate``): of
    the groups it could belong to, those on whose side of the bottleneck towards its own
    group it lies, and of these the one on whose side it lies against each other (a host
    under a switch between its group's and a candidate's lies on the candidate's side of
    their bottleneck, and of every group's beyond)."""
    for x in [h for g in groups for h in g]:
        home = next(g for g in groups if x in g)
        cands = [g for g in groups if g is not home and all(together.has_edge(x, m) for m in g)]
        sides = [c for c in cands if _under_candidate(pr, together, x, home, c)]
        if sides:
            best = sides[0]
            for c in sides[1:]:
                if _under_candidate(pr, together, x, best, c):
                    best = c
            home.remove(x)
            best.append(x)
    return [g for g in groups if g]


def _under_candidate(pr: _Prober, together, x: str, home: list, cand: list) -> bool:
    """Is x under the switch of the candidate group C rather than its group H's? Load
    transfers fill the link between H and C if they can, and a probe transfer of x runs
    beside them (``_contend``). Only a meeting is evidence (a load that fills no link meets
    nothing), so two tests, the second when the first shows none:

    1. load from H's members sure to be there (separated from C) to C's fastest, probe
       x -> another host of C: it meets the load when x is behind H's link (x stays);
    2. load from C to H, probe x -> another host of H: it meets the load when x is under C
       (x moves).

    When neither meets its load, x stays in H."""
    # only hosts separated from the other group are sure to be where their group is (a slow
    # host put in either group by the cliques may not be): they alone carry the load and
    # receive the probe
    sure = pr.fastest([m for m in home if m != x and not all(together.has_edge(m, c) for c in cand)])
    into = pr.fastest([c for c in cand if not all(together.has_edge(c, m) for m in home if m != x)])
    k = min(len(sure), len(into) - 1, FLOWS_PER_PAIR)
    if k >= 1 and _contend(pr, (x, into[k]), *[(sure[i], into[i]) for i in range(k)]):
        return False
    k = min(len(into), len(sure) - 1, FLOWS_PER_PAIR)
    return k >= 1 and _contend(pr, (x, sure[k]), *[(into[i], sure[i]) for i in range(k)])


def _adopt_lone_hosts(groups: list[list], together) -> list[list]:
    """A host left alone although never separated from the members of some group (another
    host took its place in that group's clique and has moved on since) joins the largest
    such group: all that crosses a link between it and that group starts or ends at the host
    itself, so its own link fills first and that link can never be full (``equivalent``)."""
    for lone in [g for g in groups if len(g) == 1]:
        (x,) = lone
        fits = [g for g in groups if g is not lone and g and all(together.has_edge(x, m) for m in g)]
        if fits:
            max(fits, key=len).append(x)
            lone.clear()
    return [g for g in groups if g]


def _deficit(pr: _Prober, rate: dict, s: str, d: str) -> float:
    """How much slower s -> d ran than its two hosts allow (0: not at all), by the median
    of its readings."""
    return _shortfall(pr, s, d, statistics.median(rate[(s, d)]))


def _shortfall(pr: _Prober, s: str, d: str, reading: float) -> float:
    """How much slower than its two hosts allow a reading of s -> d is (relative)."""
    allow = pr.allowed(s, d)
    return 1 - reading / allow if allow > 0 else 0.0


def _separated(pr: _Prober, rate: dict, x: str, y: str) -> bool:
    return max(_deficit(pr, rate, x, y), _deficit(pr, rate, y, x)) > pr.threshold


def _contradicted_rounds(rounds: list, rate: dict, pr: _Prober, hosts: list) -> list[list]:
    """The rounds of the separated pairs whose two hosts are separated from the same other
    hosts (at least ``SAME_PROFILE`` of them): hosts under different switches differ at least
    on each other's switch mates."""
    sep = {(x, y): _separated(pr, rate, x, y) for x in hosts for y in hosts if x != y}
    suspect = set()
    for i, x in enumerate(hosts):
        for y in hosts[i + 1 :]:
            others = [h for h in hosts if h not in (x, y)]
            if sep[(x, y)] and others:
                same = sum(sep[(x, h)] == sep[(y, h)] for h in others) / len(others)
                if same >= SAME_PROFILE:
                    suspect |= {(x, y), (y, x)}
    return [flows for flows in rounds if suspect & set(flows)]


def _borderline_rounds(rounds: list, rate: dict, pr: _Prober) -> list[list]:
    """The rounds with a transfer whose deficit is near the threshold (within a factor 1.5
    either way), to be measured once more so that one noisy round does not decide."""
    theta = pr.threshold
    return [flows for flows in rounds if any(theta / 1.5 < _deficit(pr, rate, s, d) < 1.5 * theta for s, d in flows)]


def _contend(pr: _Prober, probe: tuple, *load: tuple) -> bool:
    """Does ``probe`` share a full link with the ``load`` transfers? The load's total alone
    (L0) against its total beside the probe (L1): where they share a link the load fills,
    the link's total stays the same and the load loses what the probe carries (score
    (L0 - L1) / probe's rate about 1); elsewhere it loses nothing (about 0). Totals, not each
    transfer's slowdown: TCP splits a shared link unevenly and differently every time, but
    the total is steady (the load's totals alone serve every probe tested beside the same
    load). Normalized by the probe's own rate, a slow host (its link far below
    the shared one) is tested as surely as a fast one. The score is taken again (load alone,
    then with the probe) while the decision at 1/2 lies within two standard errors of the
    mean, ``REPEATS`` times at most; the standard error from the measured noise (and the
    scores' own spread once there are several)."""
    flows = [probe, *load]
    scores: list[float] = []
    totals = pr.load_alone.setdefault(tuple(load), [])  # shared by the tests of other hosts
    while True:
        if len(totals) <= len(scores):
            totals.append(sum(pr.run(list(load))))
        alone = totals[len(scores)]
        rates = pr.run(flows)
        scores.append((alone - sum(rates[1:])) / rates[0] if rates[0] > 0 else 0.0)
        spread = math.sqrt(2) * pr.noise * alone / max(rates[0], 1e-9)
        if len(scores) >= 2:
            spread = max(spread, statistics.stdev(scores))
        mean = statistics.fmean(scores)
        if abs(mean - 0.5) > 2 * spread / math.sqrt(len(scores)) or len(scores) > REPEATS:
            return mean > 0.5


# ---------------------------------------------------------------- step 2: access links
# ---------------------------------------------------------------- step 3: between groups
def _between_groups(groups: list, pr: _Prober) -> dict:
    """(i, j) -> (total, rates, flows): what group i sends to group j in all, from the
    fastest members of each (slow ones could not fill the path between the groups)."""

    out = {}
    for i in range(len(groups)):
        for j in range(i + 1, len(groups)):
            k = min(FLOWS_PER_PAIR, len(groups[i]), len(groups[j]))
            a, b = pr.fastest(groups[i])[:k], pr.fastest(groups[j])[:k]
            flows = [(a[n], b[n]) for n in range(k)] + [(b[n], a[(n + 1) % k]) for n in range(k)]
            rates = pr.run(flows, totals=[range(k), range(k, 2 * k)])  # each way's total counts
            for src, dst, fs, rs in ((i, j, flows[:k], rates[:k]), (j, i, flows[k:], rates[k:])):
                out[(src, dst)] = (sum(rs), rs, fs)
    return out


# ---------------------------------------------------------------- step 3b: a level's tree
class _LevelTree:
    """Where groups joined at one level meet. Pair rates alone cannot tell a star from a
    chain (both give every pair the same bottleneck rate), and a chain taken for a star lets
    a plan count on links that the groups share. A group z lies between x and y when x and
    y send to z over different links of z: z then takes in more from both at once than
    either brings alone (``apart``)."""

    def __init__(self, pr: _Prober, groups: list, pair_rates: dict):
        self.pr, self.groups, self.pair_rates = pr, groups, pair_rates
        self.branches: dict = {}  # group -> the groups found behind each of its links

    def resolve(self, members: list) -> list[list] | None:
        """The tree joining ``members`` (group indices) as cliques: two members joined
        directly, or three and more under a new switch, the members joined with nothing
        between them. ``None`` (keep the star) when no member lies between others, or when
        the cliques do not form a tree."""
        for z in members:
            others = [m for m in members if m != z]
            if self.inner(z, others):
                self.branches[z] = self.split(z, others)
        side = {z: {x: k for k, b in enumerate(bs) for x in b} for z, bs in self.branches.items() if z in members}
        if not side:
            return None
        adjacent = nx.Graph()
        adjacent.add_nodes_from(members)
        for i, x in enumerate(members):
            for y in members[i + 1 :]:
                if not any(side[z][x] != side[z][y] for z in side if z not in (x, y)):
                    adjacent.add_edge(x, y)
        cliques = [sorted(c) for c in nx.find_cliques(adjacent)]
        # the cliques of a tree's "nothing between" graph meet in single members
        if len(cliques) > 1 and nx.is_connected(adjacent) and sum(len(c) - 1 for c in cliques) == len(members) - 1:
            self._branches_of_tree(members, cliques)
            return cliques
        return None

    def _branches_of_tree(self, members: list, cliques: list) -> None:
        """Every member's branches in the tree the cliques make (a clique of three or more
        meets at a switch of its own)."""
        tree = nx.Graph()
        for k, clique in enumerate(cliques):
            tree.add_edges_from((m, ("hub", k)) for m in clique)
        for m in members:
            rest = tree.copy()
            rest.remove_node(m)
            parts = (sorted(x for x in c if x in members) for c in nx.connected_components(rest))
            self.branches[m] = [b for b in parts if b]

    def meets(self, x: int, parts: list) -> int | None:
        """The group of ``parts`` (a cluster already joined) whose switch the link from x
        (a group, or one of a cluster joining them) meets: x is apart from a member of each
        of that group's branches (the others, when none are known). ``None`` when no test
        shows it."""
        for m in sorted(parts, key=lambda m: -self.pair_rates[(x, m)][0]):
            others = [o for o in parts if o != m]
            reps = [b[0] for b in self.branches.get(m, [others])]
            if len(self.groups[m]) >= 2 and all(self.apart(m, x, r) for r in reps):
                return m
        return None

    def nearest(self, xs: list, parts: list) -> int:
        """The group of ``xs`` that sends fastest to a group of ``parts`` (its transfers
        there are limited by the link between the two clusters, not by links inside its own)."""
        return max(xs, key=lambda g: max(self.pair_rates[(g, m)][0] for m in parts))

    def joined(self, xs: list, at_x: int, parts: list, at: int) -> None:
        """Clusters ``xs`` and ``parts`` linked between their groups ``at_x`` and ``at``."""
        self._attached(xs, at, parts)
        self._attached(parts, at_x, xs)

    def _attached(self, xs: list, at: int, parts: list) -> None:
        """The groups ``xs`` hang off ``at``: a branch of their own there, behind ``at`` for
        the other groups of ``parts``."""
        for m in parts:
            known = [b for b in self.branches.setdefault(m, [[o for o in parts if o != m]]) if b]
            if m == at:
                known.append(list(xs))
            else:
                next(b for b in known if at in b).extend(xs)
            self.branches[m] = known

    def _into(self, z: int, senders: list) -> dict:
        """Each sender group's total into z, and what its transfers carry alone (their
        hosts' rates, within what the group sent to z in step 2), when the ``senders``
        send to z's hosts at once (z's hosts shared out in turn, the first sender first: the
        one that sent most to z in step 2 needs the most transfers to send as much again;
        each group sends from its hosts in turn)."""
        receivers = self.pr.fastest(self.groups[z])
        flows: dict = {g: [] for g in senders}
        for i, r in enumerate(receivers):
            g = senders[i % len(senders)]
            hosts = self.pr.fastest(self.groups[g])
            flows[g].append((hosts[len(flows[g]) % len(hosts)], r))
        order = [(g, f) for g in senders for f in flows[g]]
        # transfers crowded on purpose: not readings of their hosts' links
        rates = self.pr.run_unsampled([f for _, f in order])
        out = {}
        for g in senders:
            total = sum(r for (sender, _), r in zip(order, rates) if sender == g)
            alone = min(self.pair_rates[(g, z)][0], sum(self.pr.allowed(*f) for f in flows[g]))
            out[g] = (total, alone)
        return out

    def inner(self, z: int, others: list) -> bool:
        """Does z take in, from the others at once, more than any one of them brings alone
        (beyond the threshold)? Then z has links towards two of them at least."""
        if len(self.groups[z]) < 2:
            return False
        chosen = sorted(others, key=lambda x: -self.pair_rates[(x, z)][0])
        alone = max(self.pair_rates[(x, z)][0] for x in chosen)
        return sum(t for t, _ in self._into(z, chosen).values()) > (1 + self.pr.threshold) * alone

    def apart(self, z: int, x: int, y: int) -> bool:
        """Do x and y send to z over different links? Over one link that their transfers
        fill, their total is at most that link's rate (at most what the larger of them sent
        to z in step 2) and one of them loses part of what it carries alone; over two links
        neither loses anything."""
        into = self._into(z, sorted((x, y), key=lambda g: -self.pair_rates[(g, z)][0]))
        theta = self.pr.threshold
        total = sum(t for t, _ in into.values())
        # a wrong "apart" makes a chain of a star, worse than the star: half the threshold
        kept = all(t >= (1 - theta / 2) * alone for t, alone in into.values())
        return kept and total > (1 + theta) * max(self.pair_rates[(x, z)][0], self.pair_rates[(y, z)][0])

    def split(self, z: int, others: list) -> list[list]:
        """The others, by the link of z they send over (each compared with one member of each
        branch found so far)."""
        branches: list[list] = []
        for x in sorted(others, key=lambda m: -self.pair_rates[(m, z)][0]):
            home = next((b for b in branches if not self.apart(z, x, b[0])), None)
            if home is None:
                branches.append([x])
            else:
                home.append(x)
        return branches


# ---------------------------------------------------------------- step 4: the switch tree
def _switch_tree(groups: list, pair_rates: dict, level_tree: _LevelTree | None = None) -> tuple[list, list, dict]:
    """(switches, links as node pairs, floors): a switch per group of two or more hosts (a
    lone host is its own node), joined by single linkage on the groups' pair rates (both
    directions' smaller one): the fastest-connected clusters first. Groups joined at nearly
    the same rate go under one new switch, unless ``level_tree`` finds some of them between
    the others; a group joining a cluster whose groups were placed one by one is linked to
    the group it meets (``_LevelTree.meets``), else to the cluster's top; the last two
    clusters of switches are joined directly. ``floors`` maps each new link direction to
    the most that the group-pair transfers carried across it."""
    tree = _TreeBuilder(groups, pair_rates)
    while len(tree.clusters) > 1:
        members = tree.next_level()
        at = _attach_point(level_tree, members, tree.clusters, tree.parts)
        if at is not None:
            tree.attach(*at)
        elif len(tree.clusters) == len(members) == 2 and all(tree.top[m] in tree.switches for m in members):
            tree.join(*sorted(members))
        else:
            tree.join_level(members, _cliques(level_tree, members, tree.clusters))
    tree.drop_relays()
    return tree.switches, tree.links, _path_floors(tree.links, tree.node_of, pair_rates, tree.floors)


def _path_floors(links: list, node_of: list, pair_rates: dict, floors: dict) -> dict:
    """``floors`` raised so that the tree carries what the groups' transfers carried: every
    link direction on the path from group i to group j at least their total i -> j. A
    tree that gives a pair less than it was measured to carry is denied by that
    measurement (an asymmetric link between a chain's switches, taken for a link to a new
    hub, was written at the rate of the pair joined first)."""
    tree = nx.Graph(links)
    out = dict(floors)
    for (i, j), (total, _, _) in pair_rates.items():
        path = nx.shortest_path(tree, node_of[i], node_of[j])
        for u, v in zip(path, path[1:]):
            out[(u, v)] = max(out.get((u, v), 0.0), total)
    return out


class _TreeBuilder:
    """The state of ``_switch_tree``: clusters of groups (by the index of their first
    member), the node standing for each, the switches, links and floors made so far."""

    def __init__(self, groups: list, pair_rates: dict):
        self.pair_rates = pair_rates
        self.names = iter(f"sw{i}" for i in range(10 * len(groups) + 10))
        self.switches: list = []
        self.links: list = []
        self.node_of: list = []
        for g in groups:
            if len(g) >= 2:
                self.switches.append(next(self.names))
                self.links += [(h, self.switches[-1]) for h in g]
                self.node_of.append(self.switches[-1])
            else:
                self.node_of.append(g[0])
        self.clusters = {i: [i] for i in range(len(groups))}
        self.parts = {i: [i] for i in range(len(groups))}  # a cluster's groups placed one by one
        self.top = dict(enumerate(self.node_of))
        self.floors: dict = {}  # (node, node) -> the most that crossed that link direction, alone

    def floor(self, ci: list, cj: list) -> float:
        return max(self.pair_rates[(a, b)][0] for a in ci for b in cj)

    def rate(self, ci: list, cj: list) -> float:
        return max(min(self.pair_rates[(a, b)][0], self.pair_rates[(b, a)][0]) for a in ci for b in cj)

    def next_level(self) -> set:
        """The two fastest-connected clusters, and every cluster joined to them at nearly
        the same rate."""
        keys = list(self.clusters)
        level, a, b = max((self.rate(self.clusters[x], self.clusters[y]), x, y) for x in keys for y in keys if x < y)
        members = {a, b}
        for c in keys:
            if c not in members and any(
                self.rate(self.clusters[c], self.clusters[m]) >= (1 - LEVEL_GAP) * level for m in members
            ):
                members.add(c)
        return members

    def _link(self, u, v, cu: list, cv: list) -> None:
        self.links.append((u, v))
        self.floors[(u, v)], self.floors[(v, u)] = self.floor(cu, cv), self.floor(cv, cu)

    def drop_relays(self) -> None:
        """A new switch left with two links (two groups joined, then a third attached to
        one of them) relays between two nodes: one link joins them instead (the same rates
        for every set of transfers)."""
        for hub in [s for s in self.switches if s not in self.node_of]:
            ends = [lk for lk in self.links if hub in lk]
            if len(ends) == 2:
                u, v = (a if b == hub else b for a, b in ends)
                self.links = [lk for lk in self.links if hub not in lk] + [(u, v)]
                self.floors[(u, v)] = max(self.floors.get((u, hub), 0.0), self.floors.get((hub, v), 0.0))
                self.floors[(v, u)] = max(self.floors.get((v, hub), 0.0), self.floors.get((hub, u), 0.0))
                self.switches.remove(hub)

    def join(self, a: int, b: int) -> None:
        """The last two clusters, their top switches linked directly."""
        self._link(self.top[a], self.top[b], self.clusters[a], self.clusters[b])
        self.clusters[a] += self.clusters.pop(b)

    def attach(self, x: int, c: int, gx: int, g: int) -> None:
        """Cluster x linked from the switch of its group gx to that of group g of cluster c."""
        self._link(self.node_of[gx], self.node_of[g], self.clusters[x], self.clusters[c])
        self.clusters[c] += self.clusters.pop(x)
        self.parts[c] += self.parts.pop(x)

    def join_level(self, members: set, cliques: list | None) -> None:
        """The members joined as ``cliques`` (two joined directly, more under a new switch),
        or all under one new switch."""
        hubs: list = []
        first = len(self.links)
        top = self.top
        for clique in cliques or [sorted(members)]:
            if cliques and len(clique) == 2:
                self.links.append((top[clique[0]], top[clique[1]]))
            else:
                hubs.append(next(self.names))
                self.links += [(top[c], hubs[-1]) for c in clique]
        self.switches += hubs
        for (u, v), (side_u, side_v) in _sides(self.links[first:], {top[m]: m for m in members}).items():
            self.floors[(u, v)] = self.floor(
                [g for m in side_u for g in self.clusters[m]], [g for m in side_v for g in self.clusters[m]]
            )
        # the node that stands for the merged cluster at the next level: its hub, or the
        # member with the most links among them
        new_top = hubs[0] if hubs else top[max(members, key=lambda m: sum(top[m] in lk for lk in self.links[first:]))]
        keep = min(members)
        # two groups joined (a hub of two links: one link between them, in effect) are
        # placed one by one too: a group joining them later can be tested against each
        placed = cliques or (len(members) == 2 and all(len(self.clusters[c]) == 1 for c in members))
        merged = [g for c in sorted(members) for g in self.clusters.pop(c)]
        for c in members:
            self.parts.pop(c)
        self.clusters[keep], self.parts[keep], top[keep] = merged, list(merged) if placed else [], new_top


def _cliques(level_tree: _LevelTree | None, members: set, clusters: dict) -> list | None:
    """The level's tree as cliques of cluster keys (``_LevelTree.resolve``), when every
    member is a single group; ``None`` for a star."""
    if level_tree is None or len(members) < 3 or any(len(clusters[m]) != 1 for m in members):
        return None
    found = level_tree.resolve(sorted(clusters[m][0] for m in members))
    return None if found is None else [[m for m in members if clusters[m][0] in q] for q in found]


def _attach_point(level_tree: _LevelTree | None, members: set, clusters: dict, parts: dict) -> tuple | None:
    """(x, c, gx, g) when a cluster x (a lone group, or groups placed one by one) joins a
    cluster c whose groups were placed one by one, and the tests find the group g of c that
    the link between them meets, and the group gx of x that it leaves from."""
    if level_tree is None or len(members) != 2:
        return None
    x, c = sorted(members, key=lambda m: len(clusters[m]))
    if len(parts[x]) != len(clusters[x]) or len(parts[c]) < 2:
        return None
    g = level_tree.meets(level_tree.nearest(parts[x], parts[c]), parts[c])
    if g is None:
        return None
    gx = parts[x][0] if len(parts[x]) == 1 else level_tree.meets(level_tree.nearest(parts[c], parts[x]), parts[x])
    if gx is None:
        return None
    level_tree.joined(parts[x], gx, parts[c], g)
    return x, c, gx, g


def _sides(links: list, member_of: dict) -> dict:
    """For each direction of ``links`` (the tree joining one level's members, through their
    top nodes ``member_of`` and new hubs): the members on its two sides."""
    tree = nx.Graph(links)
    out = {}
    for u, v in list(tree.edges):
        tree.remove_edge(u, v)
        side = nx.node_connected_component(tree, u)
        tree.add_edge(u, v)
        mine = [m for n, m in member_of.items() if n in side]
        theirs = [m for n, m in member_of.items() if n not in side]
        out[(u, v)], out[(v, u)] = (mine, theirs), (theirs, mine)
    return out
