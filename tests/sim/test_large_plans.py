"""The simulator against the exact reference (tests/sim/reference.py) on plans with thousands of
transfers: the event loop recomputes max-min rates only for the components an event touches,
so these check that the rates it keeps are still the exact ones, many events in."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from topocast import Broadcast, Plan, Transfer, check_plan, simulate
from topocast.planners import get_planner
from topocast.topology.generators import random_tree

sys.path.insert(0, str(Path(__file__).parent))
from reference import reference_simulate  # noqa: E402

REL = 1e-9


def assert_agree(plan, topo):
    r = simulate(plan, topo)
    ref_hosts, ref_tr = reference_simulate(plan, topo)
    for h, t in ref_hosts.items():
        assert r.per_host[h].time == pytest.approx(t, rel=REL, abs=1e-12), h
    for i, ((s, d), (rs, rd)) in enumerate(zip(r.transfer_times, ref_tr)):
        assert s == pytest.approx(rs, rel=REL, abs=1e-12) and d == pytest.approx(rd, rel=REL, abs=1e-12), i


def random_plan(topo, n_transfers: int, seed: int, window: int | None = None) -> Plan:
    """Random valid plan: store-and-forward transfers of ranges their sender will hold,
    pipelined sub-ranges of an upstream, ``after`` links and rate caps, over many senders.

    ``window``: transfer k also waits for transfer k - window, which keeps about ``window``
    transfers under way at a time (the reference's cost grows with that number times the
    number of events)."""
    rng = random.Random(seed)
    hosts = list(topo.hosts)
    size, unit = 10**6, 10**4  # 100 units
    src0 = hosts[0]
    initial = {src0: [(0, size)]}
    known: dict[str, list[tuple[int, int]]] = {h: [] for h in hosts}
    known[src0].append((0, size))
    transfers: list[Transfer] = []
    into: dict[str, list[int]] = {h: [] for h in hosts}
    for _ in range(n_transfers):
        src = rng.choice([h for h in hosts if known[h]])
        dst = rng.choice([h for h in hosts if h != src])
        kw: dict = {}
        if into[src] and rng.random() < 0.4:
            u = rng.choice(into[src])
            units = [(o + i * unit, unit) for o, ln in transfers[u].ranges for i in range(ln // unit)]
            i = rng.randrange(len(units))
            j = rng.randrange(i + 1, min(len(units), i + 30) + 1)
            ranges = []
            for o, ln in units[i:j]:
                if ranges and ranges[-1][0] + ranges[-1][1] == o:
                    ranges[-1] = (ranges[-1][0], ranges[-1][1] + ln)
                else:
                    ranges.append((o, ln))
            kw = {"pipelined": True, "upstream": u}
        else:
            o, ln = rng.choice(known[src])
            a = rng.randrange(ln // unit)
            b = rng.randrange(a + 1, min(ln // unit, a + 20) + 1)
            ranges = [(o + a * unit, (b - a) * unit)]
        after = {rng.randrange(len(transfers))} if transfers and rng.random() < 0.2 else set()
        if window and len(transfers) >= window:
            after.add(len(transfers) - window)  # at most about `window` transfers under way
        if after:
            kw["after"] = tuple(sorted(after))
        if rng.random() < 0.2:
            kw["rate_cap"] = rng.choice([2e6, 5e6, 2e7])
        into[dst].append(len(transfers))
        transfers.append(Transfer(src, dst, tuple(ranges), **kw))
        known[dst].extend(ranges)
    wanted: dict[str, list] = {}
    for t in transfers:
        if rng.random() < 0.5:
            wanted.setdefault(t.dst, []).extend(t.ranges)
    return Plan("redistribute", size, tuple(transfers), initial, wanted, planner="random-large")


@pytest.mark.slow
@pytest.mark.parametrize("asymmetric", [False, True], ids=["symmetric", "asymmetric"])
def test_stable_on_a_many_level_tree_agrees_with_reference(asymmetric):
    topo = random_tree(80, 20, min_mbit=100, max_mbit=1000, asymmetric=asymmetric, seed=2)
    plan = get_planner("broadcast", "stable")(topo, Broadcast(topo.hosts[0], 10**9), rate_tolerance=0)
    assert len(plan.transfers) > 1000
    assert_agree(plan, topo)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])
def test_random_plans_with_many_transfers_agree_with_reference(seed):
    topo = random_tree(60, 15, min_mbit=100, max_mbit=1000, asymmetric=seed % 2 == 0, seed=seed)
    plan = random_plan(topo, 500, seed)
    check_plan(plan, topo)
    assert_agree(plan, topo)


@pytest.mark.slow
def test_random_plan_with_thousands_of_transfers_agrees_with_reference():
    # a window keeps ~50 transfers under way, so the exact reference stays at seconds
    topo = random_tree(60, 15, min_mbit=100, max_mbit=1000, asymmetric=True, seed=3)
    plan = random_plan(topo, 2000, 3, window=50)
    check_plan(plan, topo)
    assert_agree(plan, topo)
