"""A stand-in for the agents' measurements on a known topology: bulk transfers get max-min
fair rates (the simulator's progressive filling) times a goodput factor, with multiplicative
noise (``uneven``: a full link split unevenly between its transfers, as TCP does);
round-trip times are twice the route's latency plus a per-host stack delay, with
noise."""

from __future__ import annotations

import numpy as np

from topocast.sim.maxmin import progressive_filling


class FakeNetwork:
    def __init__(self, topology, *, goodput: float = 0.955, noise: float = 0.03, seed: int = 0, uneven: bool = False):
        self.topo, self.goodput, self.noise, self.uneven = topology, goodput, noise, uneven
        self.rng = np.random.default_rng(seed)
        self.rounds = 0
        self.stack_delay = {h: float(self.rng.uniform(10e-6, 40e-6)) for h in topology.hosts}

    def bulk(self, flows, duration):
        self.rounds += 1
        pf, pr = [], []
        for k, (s, d) in enumerate(flows):
            for link in self.topo.route(s, d):
                pf.append(k)
                pr.append(link)
        cap = self.topo.link_bandwidth * self.goodput
        rates = progressive_filling(
            np.array(pf, dtype=np.int64), np.array(pr, dtype=np.int64), cap, np.full(len(flows), np.inf)
        )
        if self.uneven:
            rates = self._split_unevenly(flows, rates, cap)
        return [float(r) * (1 + self.rng.normal(0, self.noise)) for r in rates]

    def _split_unevenly(self, flows, rates, cap):
        """As TCP does on a full link: the transfers limited by one link share it unevenly
        (random shares, the same total)."""
        rates = np.array(rates, dtype=float)
        by_link: dict = {}
        for k, (s, d) in enumerate(flows):
            full = [
                lk
                for lk in self.topo.route(s, d)
                if abs(sum(rates[j] for j, f in enumerate(flows) if lk in self.topo.route(*f)) - cap[lk])
                < 1e-6 * cap[lk]
            ]
            if full:
                by_link.setdefault(full[0], []).append(k)
        for members in by_link.values():
            if len(members) > 1:
                w = self.rng.uniform(0.3, 1.7, len(members))
                ceiling = [min(cap[lk] for lk in self.topo.route(*flows[k])) for k in members]
                rates[members] = _share(rates[members].sum(), w, np.array(ceiling))
        return rates

    def rtt(self, a, b):
        rtt = 2 * self.topo.route_latency(a, b) + self.stack_delay[a] + self.stack_delay[b]
        return rtt * (1 + self.rng.normal(0, 0.001)) + abs(self.rng.normal(0, 5e-6))


def _share(total: float, weights, ceiling):
    """``total`` split in proportion to ``weights``, no share above its ``ceiling`` (the
    slowest link on the transfer's route: TCP never carries more than a link does); what a
    capped share leaves goes to the others, in proportion again."""
    share = np.zeros(len(weights))
    free = np.ones(len(weights), dtype=bool)
    while free.any() and total > 1e-12:
        part = total * weights * free / weights[free].sum()
        over = free & (share + part > ceiling)
        if not over.any():
            return share + part
        total -= (ceiling[over] - share[over]).sum()
        share[over] = ceiling[over]
        free &= ~over
    return share


def watch_on_truth(adapter, truth, seconds: float, *, goodput: float = 0.955, noise: float = 0.03, seed: int = 0):
    """Drive ``adapter`` (``runtime.adapt.Adapter``) as the coordinator does while its plan
    runs on ``truth``: each transfer moves at its simulated average rate on the true network
    (times ``goodput``, one noise draw per transfer), every host holds what its incoming
    transfers brought so far, and the targeted probes the adapter sends get their max-min
    share of the true links beside the transfers running then (with noise)."""
    import dataclasses

    from topocast.intervals import IntervalSet
    from topocast.runtime.estimate import Observation, probe_rates
    from topocast.sim import simulate

    rng = np.random.default_rng(seed)
    links = [
        dataclasses.replace(
            pl,
            bandwidth=pl.bandwidth * goodput,
            bandwidth_ba=None if pl.bandwidth_ba is None else pl.bandwidth_ba * goodput,
        )
        for pl in truth.physical_links
    ]
    scaled = truth.replace(links=links)
    plan = adapter.plan
    times = simulate(plan, scaled, chunk_size=adapter.chunk).transfer_times
    rate = [
        t.nbytes / (e - s) * (1 + rng.normal(0, noise)) if e > s else 0.0 for t, (s, e) in zip(plan.transfers, times)
    ]
    cap = {lk: link.bandwidth for lk, link in enumerate(scaled.links)}
    step, now = 0.1, 0.0
    while now < seconds:
        now += step
        got = {i: int(min(t.nbytes, max(0.0, now - times[i][0]) * rate[i])) for i, t in enumerate(plan.transfers)}
        done = {i for i, t in enumerate(plan.transfers) if got[i] >= t.nbytes}
        holdings = {h: IntervalSet(r) for h, r in plan.initial.items()}
        for i, t in enumerate(plan.transfers):
            left, have = got[i], holdings.setdefault(t.dst, IntervalSet())
            for off, length in t.ranges:
                if left <= 0:
                    break
                have.add_ranges([(off, min(length, left))])
                left -= length
        adapter.tick(now, holdings, got, done)
        sent = [(h, m) for h, m in adapter.outgoing() if m.get("op") == "bulk"]
        if sent:
            running = [
                Observation(tuple(truth.route(t.src, t.dst)), 0.0, rate[i])
                for i, t in enumerate(plan.transfers)
                if times[i][0] <= now < times[i][1]
            ]
            routes = [tuple(truth.route(h, m["peer"])) for h, m in sent]
            measured = probe_rates(routes, running, cap)
            for (_, m), r in zip(sent, measured):
                adapter.on_measure({"type": "measured", "id": m["id"], "rate": r * (1 + rng.normal(0, noise))})
