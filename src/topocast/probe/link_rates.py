"""Every link's bandwidth, each direction, on a tree whose shape is known (the latency tree).

Shirai, Saito, Taura, "A Fast Topology Inference" (HPDC 2007), the bandwidth-map step: once
the tree is known, each link is measured by transfers across it, and measurements that do
not share a link run at the same time. Our reading of what to measure
(docs/experiments/probe.md):

* **host links**: every pair of hosts under one switch, both directions, in a round-robin
  tournament (n - 1 rounds of disjoint pairs; all switches at once). A host link's rate in a
  direction is read from the fastest transfers it carried (``estimates.host_link_estimate``).
  A host that met no switch mate faster than itself (the fastest under its switch, or its
  only host) has not been shown its own link by any single transfer: it gets a **fan test**
  (our addition): ``FAN`` transfers to its nearest hosts at once, and ``FAN`` from them,
  whose total its own link limits.
* **switch-to-switch links**: for a link with sides A and B, ``k`` transfers from distinct
  hosts of A to distinct hosts of B started together, and ``k`` the other way, from the hosts
  nearest the link (``k`` = the smaller side's host count, at most ``MAX_FLOWS``). Their sum is
  the link's rate, unless every transfer ran as fast as its own hosts allow: then the link
  never limited them and the estimate is a lower bound (``at_least``), written as the most
  its hosts can ever send across it (so that the planners never see it as a bottleneck).
  Measured twice, the fastest total counting once another reading confirms it; a lone
  fastest total is measured again and outvoted by the median (``_edge_readings``).
* **packing**: the measurements are packed first-fit into rounds in which no two use the
  same link in the same direction (they cannot slow each other down).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

from .estimates import NEAR_TOP, RETAKES, SLOWDOWN, BandwidthTree, Estimate, FlowSamples, round_robin

__all__ = ["measure_links"]

MAX_FLOWS = 4  # transfers each way across a switch-to-switch link

Bulk = Callable[[list, float], list]


EDGE_REPEATS = 2  # measurements of each link between switches (the fastest confirmed counts)
FAN = 3  # transfers of a host's fan test
FAN_REPEATS = 2  # measurements of each fan test (two readings that agree confirm each other)
# a mate whose link is this much faster than a host's showed the host's own link: twice the
# spread allowed between readings of one link (``NEAR_TOP``), since both estimates carry it
FASTER_MATE = 2 * NEAR_TOP


def measure_links(
    adj: dict,
    hosts: list,
    switches: list,
    bulk: Bulk,
    duration: float,
    known: FlowSamples | None = None,
    pack_edges: bool = True,
) -> BandwidthTree:
    """Measure every link of the tree ``adj`` (node -> neighbours) between ``hosts`` and
    ``switches``; ``bulk(flows, duration)`` starts transfers together and returns their rates.
    ``known``: the readings of transfers that already met every other host under its
    switch (then no round robin is run again). ``pack_edges`` False: each link between
    switches measured in a round of its own (for a tree that may be wrong)."""
    run = _Runner(adj, hosts, bulk, duration, known)
    if known is None:
        run.tasks(_round_robin_tasks(adj, hosts, switches))
    fans = _fan_tasks(adj, hosts, run.samples, run.speed())
    for (_, _, (h, side)), totals in zip(fans, _fan_totals(run, fans)):
        for total in totals:
            run.samples.add_total(h, side, total)
    # a host's lone fastest reading measured twice more, alone on its links (``confirmed_top``)
    again = run.samples.unconfirmed_tops()
    for _ in range(RETAKES):
        run.tasks([("again", [f], None) for f in again], retake=True)
    host_up = {h: run.samples.host_up(h) for h in hosts}
    host_down = {h: run.samples.host_down(h) for h in hosts}
    edges = _edge_tasks(adj, hosts, switches, run.speed())
    readings = _edge_readings(run, edges, pack_edges)
    tree = BandwidthTree(groups=_groups(adj, hosts, switches), switches=list(switches), measurements=run.count)
    for h in hosts:
        (sw,) = adj[h]
        tree.links[(h, sw)] = (run.samples.written(h, 0), run.samples.written(h, 1))
    for k, (_, flows, (a, b)) in enumerate(edges):
        n = len(flows) // 2
        ab = _edge_estimate(flows[:n], readings[k][0], host_up, host_down, adj, a, b)
        ba = _edge_estimate(flows[n:], readings[k][1], host_up, host_down, adj, b, a)
        tree.links[(a, b)] = (ab, ba)
    return tree


def _edge_readings(run: _Runner, edges: list, pack: bool = True) -> list[tuple[list[float], list[float]]]:
    """Per link between switches, the transfers' rates to count each way.

    Other traffic and scheduling only ever slow a transfer down: of repeated measurements of
    a link, the fastest is the best estimate of what it carries (our reading). But a lone
    fastest reading may be luck, as for a host's link (``estimates.confirmed_top``): a link
    whose fastest total is more than ``NEAR_TOP`` above every other is measured ``RETAKES``
    times more, and the reading whose total is the median of that one and the new ones counts.
    """
    repeats = [run.tasks(edges, pack=pack) for _ in range(EDGE_REPEATS)]
    halves = [len(flows) // 2 for _, flows, _ in edges]
    ways = [
        [[r[k][:n] for r in repeats], [r[k][n:] for r in repeats]] for k, n in enumerate(halves)
    ]  # per link, per way: every reading
    unsure = [k for k, both in enumerate(ways) if any(_lone_fastest(w) for w in both)]
    if unsure:
        extra = [run.tasks([edges[k] for k in unsure], pack=pack) for _ in range(RETAKES)]
        for j, k in enumerate(unsure):
            n = halves[k]
            for way, part in zip(ways[k], (slice(0, n), slice(n, None))):
                if _lone_fastest(way):
                    retaken = sorted([max(way, key=sum), *(e[j][part] for e in extra)], key=sum)
                    way[:] = [retaken[len(retaken) // 2]]  # the median reading, alone
    return [(max(there, key=sum), max(back, key=sum)) for there, back in ways]


def _fan_totals(run: _Runner, fans: list) -> list[list[float]]:
    """Each fan test's totals: ``FAN_REPEATS`` readings, and ``RETAKES`` more where the
    fastest is not confirmed by another (``confirmed_top``)."""
    totals: list[list[float]] = [[] for _ in fans]
    for _ in range(FAN_REPEATS):
        for k, rates in enumerate(run.tasks(fans)):
            totals[k].append(sum(rates))
    unsure = [k for k, t in enumerate(totals) if _lone_top(t)]
    for _ in range(RETAKES):
        for k, rates in zip(unsure, run.tasks([fans[k] for k in unsure])):
            totals[k].append(sum(rates))
    return totals


def _lone_fastest(readings: list[list[float]]) -> bool:
    """The fastest total is more than ``NEAR_TOP`` above every other reading's."""
    return _lone_top([sum(r) for r in readings])


def _lone_top(totals: list[float]) -> bool:
    """The largest of ``totals`` is more than ``NEAR_TOP`` above every other."""
    ordered = sorted(totals, reverse=True)
    return len(ordered) > 1 and ordered[1] < (1 - NEAR_TOP) * ordered[0]


class _Runner:
    """Runs measurement tasks packed into rounds; keeps every host's send/receive samples."""

    def __init__(self, adj: dict, hosts: list, bulk: Bulk, duration: float, known: FlowSamples | None):
        self.adj, self.bulk, self.duration = adj, bulk, duration
        self.hosts = hosts
        self.samples = known if known is not None else FlowSamples()
        self.count = 0
        # a bulk that reads totals (``ProbeSession.bulk``) ends a round once they settle
        self.totals = "totals" in inspect.signature(bulk).parameters

    def speed(self) -> dict[str, float]:
        """Each host's fastest confirmed transfer so far, either way."""
        return {h: self.samples.speed(h) for h in self.hosts}

    def tasks(self, tasks: list, retake: bool = False, pack: bool = True) -> list[list[float]]:
        """Each task's rates, in order (``retake``: transfers measured again,
        ``FlowSamples.retake``; ``pack`` False: each task in a round of its own)."""
        results: list = [None] * len(tasks)
        for round_ in _pack(self.adj, tasks) if pack else [[k] for k in range(len(tasks))]:
            flows = [f for k in round_ for f in tasks[k][1]]
            extra = {"totals": _totals(tasks, round_)} if self.totals else {}
            rates = self.bulk(flows, self.duration, **extra)
            self.count += len(flows)
            pos = 0
            for k in round_:
                results[k] = rates[pos : pos + len(tasks[k][1])]
                pos += len(tasks[k][1])
            (self.samples.retake if retake else self.samples.add)(flows, rates)
        return results


def _totals(tasks: list, round_: list[int]) -> list[list[int]]:
    """The sets of a round's transfers (indices) of which only the total is read: each way
    of a link between switches, each fan test."""
    out, pos = [], 0
    for k in round_:
        kind, flows, _ = tasks[k]
        if kind == "edge":
            out += [list(range(pos, pos + len(flows) // 2)), list(range(pos + len(flows) // 2, pos + len(flows)))]
        elif kind in ("fan-out", "fan-in"):
            out.append(list(range(pos, pos + len(flows))))
        pos += len(flows)
    return out


# ---------------------------------------------------------------- the tree
def _path(adj: dict, u: str, v: str) -> list[str]:
    parent: dict[str, str | None] = {u: None}
    stack = [u]
    while stack:
        x = stack.pop()
        for y in adj[x]:
            if y not in parent:
                parent[y] = x
                stack.append(y)
    out = [v]
    while out[-1] != u:
        out.append(parent[out[-1]])  # type: ignore[arg-type]
    return out[::-1]


def _side(adj: dict, a: str, b: str, hosts: set, speed: dict | None = None) -> list[str]:
    """Hosts on a's side of the link a-b, nearest (fewest hops from a) first; among equally
    near ones the fastest first when ``speed`` is given."""
    seen, order, frontier = {a, b}, [], [a]
    while frontier:
        here = [x for x in frontier if x in hosts]
        order += sorted(here, key=lambda h: -speed[h]) if speed is not None else here
        nxt = []
        for x in frontier:
            for y in adj[x]:
                if y not in seen:
                    seen.add(y)
                    nxt.append(y)
        frontier = nxt
    return order


def _groups(adj: dict, hosts: list, switches: list) -> list[list]:
    hs = set(hosts)
    return [sorted(n for n in adj[s] if n in hs) for s in switches if any(n in hs for n in adj[s])]


def _links_of(adj: dict, flows: list) -> set:
    out = set()
    for s, d in flows:
        p = _path(adj, s, d)
        out |= set(zip(p, p[1:]))
    return out


# ---------------------------------------------------------------- the measurements
def _round_robin_tasks(adj: dict, hosts: list, switches: list) -> list:
    """Per switch: every pair of its hosts, both directions, in rounds of disjoint pairs
    (``estimates.round_robin``), so every host meets the fastest of the others and its
    own link is what limits one of its transfers."""
    hs = set(hosts)
    tasks: list = []
    for s in switches:
        for pairs in round_robin([n for n in adj[s] if n in hs]):
            tasks.append(("pairs", pairs + [(b, a) for a, b in pairs], None))
    return tasks


def _fan_tasks(adj: dict, hosts: list, samples: FlowSamples, speed: dict) -> list:
    """Fan tests of the host links that no transfer has shown: a host's send rate is shown
    by its transfer to a switch mate that receives faster (by ``FASTER_MATE``: the mate's
    link cannot have limited it); a host that has no such mate (the fastest under its
    switch, or alone there) sends to ``FAN`` hosts at once (its switch mates, the fastest
    first, then the nearest hosts beyond): together they take more than its own link
    carries, so their total is its link's rate. Receive rates alike, with ``FAN`` hosts
    sending to it at once. Each is measured ``FAN_REPEATS`` times, and ``RETAKES`` times
    more when its fastest total is not confirmed by another (``measure_links``)."""
    hs = set(hosts)
    rate = ({h: samples.host_up(h).value for h in hosts}, {h: samples.host_down(h).value for h in hosts})
    tasks: list = []
    for h in hosts:
        (sw,) = adj[h]
        mates = [m for m in adj[sw] if m in hs and m != h]
        partners = _side(adj, sw, h, hs, speed)[:FAN]
        for side, kind in ((0, "fan-out"), (1, "fan-in")):
            if partners and not any(rate[1 - side][m] > (1 + FASTER_MATE) * rate[side][h] for m in mates):
                flows = [(h, p) if side == 0 else (p, h) for p in partners]
                tasks.append((kind, flows, (h, side)))
    return tasks


def _edge_tasks(adj: dict, hosts: list, switches: list, speed: dict) -> list:
    hs, sw = set(hosts), set(switches)
    tasks = []
    for a in switches:
        for b in adj[a]:
            if b in sw and a < b:
                side_a, side_b = _side(adj, a, b, hs, speed), _side(adj, b, a, hs, speed)
                k = min(len(side_a), len(side_b), MAX_FLOWS)
                there = [(side_a[i], side_b[i]) for i in range(k)]
                back = [(side_b[i], side_a[(i + 1) % k]) for i in range(k)]
                tasks.append(("edge", there + back, (a, b)))
    return tasks


def _pack(adj: dict, tasks: list) -> list[list[int]]:
    """First-fit: task indices per round, no directed link used twice in a round."""
    rounds: list[tuple[list[int], set]] = []
    for k, (_, flows, _) in enumerate(tasks):
        links = _links_of(adj, flows)
        for members, used in rounds:
            if not used & links:
                members.append(k)
                used |= links
                break
        else:
            rounds.append(([k], set(links)))
    return [m for m, _ in rounds]


def _edge_estimate(flows, rates, host_up, host_down, adj, a, b) -> Estimate:
    """a->b: the transfers' sum, or (when the hosts limited every one of them) a lower bound
    raised to the most a's side can ever send across (the link never limits anything)."""
    total = sum(rates)
    hosts_limit = sum(min(host_up[s].value, host_down[d].value) for s, d in flows)
    if total < (1 - SLOWDOWN) * hosts_limit:
        return Estimate(total, [total])
    hs = set(host_up)
    most = min(
        sum(host_up[h].value for h in _side(adj, a, b, hs)),
        sum(host_down[h].value for h in _side(adj, b, a, hs)),
    )
    return Estimate(max(total, most), [total], at_least=True)
