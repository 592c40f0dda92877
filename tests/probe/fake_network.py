"""A stand-in for the agents' measurements on a known topology: bulk transfers get max-min
fair rates (the simulator's progressive filling) times a goodput factor, with multiplicative
noise; round-trip times are twice the route's latency plus a per-host stack delay, with
noise."""

from __future__ import annotations

import numpy as np

from topocast.sim.maxmin import progressive_filling


class FakeNetwork:
    def __init__(self, topology, *, goodput: float = 0.955, noise: float = 0.03, seed: int = 0):
        self.topo, self.goodput, self.noise = topology, goodput, noise
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
        return [float(r) * (1 + self.rng.normal(0, self.noise)) for r in rates]

    def rtt(self, a, b):
        rtt = 2 * self.topo.route_latency(a, b) + self.stack_delay[a] + self.stack_delay[b]
        return rtt * (1 + self.rng.normal(0, 0.001)) + abs(self.rng.normal(0, 5e-6))
