"""Runs that follow the network: the link estimator, the rest of a plan from current
holdings, and the watch's decisions (runtime.estimate, runtime.adapt)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topocast.intervals import IntervalSet
from topocast.plan import Broadcast, Plan, Transfer
from topocast.planners import get_planner
from topocast.runtime import adapt as adapt_module
from topocast.runtime.adapt import Adapter, continue_from, predicted_holdings
from topocast.runtime.estimate import Observation, estimate_links

from .helpers import chain_plan, two_switch

MiB = 1 << 20


def test_the_link_shared_by_the_slow_transfers_is_named_with_their_total_rate():
    # routes: 0 and 1 cross link 5 and are slow; 2 crosses link 7 (and 1's link 6) at its prediction
    obs = [
        Observation((1, 5), predicted=10.0, measured=2.0),
        Observation((6, 5), predicted=10.0, measured=3.0),
        Observation((6, 7), predicted=10.0, measured=10.0),
    ]
    cap = {1: 100.0, 5: 40.0, 6: 100.0, 7: 100.0}
    (est,) = estimate_links(obs, cap)
    assert est.link == 5 and est.capacity == pytest.approx(5.0) and est.explains == (0, 1)
    assert est.confidence == 1.0


def test_starved_transfers_say_nothing_and_nothing_slow_names_nothing():
    obs = [Observation((1, 2), 10.0, 1.0, self_limited=False), Observation((3,), 10.0, 9.5)]
    assert estimate_links(obs, {1: 10.0, 2: 10.0, 3: 10.0}) == []


def test_ties_are_listed_and_the_busiest_link_chosen():
    obs = [Observation((1, 2), 10.0, 2.0)]
    (est,) = estimate_links(obs, {1: 100.0, 2: 12.0})
    assert est.link == 2 and est.tied == (1,)


ranges_st = st.lists(st.tuples(st.integers(0, 99), st.integers(1, 30)), max_size=4)


@settings(max_examples=60, deadline=None)
@given(held=st.dictionaries(st.sampled_from("abcd"), ranges_st))
def test_the_rest_of_a_plan_brings_every_host_what_it_lacks(held):
    size = 100
    plan = chain_plan(size)  # s -> a; a -> b, a -> c; c -> d (pipelined)
    holdings = {h: IntervalSet((o, min(n, size - o)) for o, n in r if o < size) for h, r in held.items()}
    holdings["s"] = IntervalSet([(0, size)])
    rest = continue_from(plan, holdings)
    for h in "abcd":
        have = holdings.get(h, IntervalSet()).copy()
        for t in rest.transfers:
            if t.dst == h:
                have.add_ranges(t.ranges)
                assert all(holdings.get(h, IntervalSet()).missing(o, o + n) == [(o, o + n)] for o, n in t.ranges)
        assert have.covers(0, size)  # nothing lost, nothing sent that it already held
    for t in rest.transfers:
        if t.pipelined:  # a pipelined part the sender does not hold yet is brought to it by a transfer
            lack = [(o, n) for o, n in t.ranges if not holdings.get(t.src, IntervalSet()).covers(o, o + n)]
            if lack:
                into = IntervalSet([r for u in rest.transfers if u.dst == t.src for r in u.ranges])
                assert into.covers_ranges(lack)


def _feed(adapter, seconds, rates, done=()):
    """Tick the adapter as if each transfer ran at ``rates[i]`` bytes/s (the sources hold all)."""
    got = {i: 0 for i in rates}
    holdings = {"s": IntervalSet([(0, adapter.plan.size)])}
    t = 0.0
    msgs = None
    while t < seconds and msgs is None:
        t += 0.25
        for i, r in rates.items():
            got[i] = min(adapter.plan.transfers[i].nbytes, int(r * t))
        msgs = adapter.tick(t, holdings, got, set(done))
    return t, msgs


def _star_adapter(monkeypatch):
    topo = two_switch()
    info = get_planner("broadcast", "flat")

    def planner(tp):
        return info(tp, Broadcast("s", 64 * MiB))

    return Adapter(planner(topo), topo, planner, 1.0, 64 * 1024)


def test_nothing_slow_never_decides(monkeypatch):
    adapter = _star_adapter(monkeypatch)
    rates = {i: adapter.pred[i] * 0.9 for i in adapter.pred}
    _, msgs = _feed(adapter, 10.0, rates)
    assert msgs is None and adapter.reports == []


def test_a_sustained_slow_transfer_leads_to_an_estimate_and_a_report(monkeypatch):
    adapter = _star_adapter(monkeypatch)
    slow = next(i for i, t in enumerate(adapter.plan.transfers) if t.dst == "a1")
    rates = {i: adapter.pred[i] for i in adapter.pred}
    rates[slow] = adapter.pred[slow] * 0.2
    t, msgs = _feed(adapter, 10.0, rates)
    assert adapter.reports, "a transfer at a fifth of its prediction for 10 s must be noticed"
    r = adapter.reports[0]
    assert r["time"] >= adapt_module.WARMUP + adapt_module.SUSTAIN
    assert any("s->a1" in w for w in r["why"])
    assert r["changed"] and r["changed"][0]["link"] in ("s->swA", "swA->a1")
    assert "predicted_rest_old" in r and "outcome" in r
    if msgs is not None:  # re-planned: every old transfer still running is cancelled by both ends
        cancelled = {i for m in msgs.values() for i in m["cancel"]}
        assert cancelled and all(i < len(adapter.plan.transfers) + adapter.offset for i in cancelled)


# ---------------------------------------------------------------- targeted probe of tied links
def _star_chain():
    """s, r1, r2, r3 on one switch at 40 Mbit/s; a pipelined chain s -> r1 -> r2 -> r3."""
    from topocast.plan import Plan, Transfer
    from topocast.topology.model import PhysicalLink, Topology

    mbit = 1e6 / 8
    hosts = ["s", "r1", "r2", "r3"]
    topo = Topology("star4", hosts, ["sw"], [PhysicalLink(h, "sw", 40 * mbit) for h in hosts])

    def planner(tp):
        order = sorted(["r1", "r2", "r3"], key=lambda h: (-tp.route_bandwidth(h, "sw"), h))
        hops = ["s", *order]
        t = [Transfer.of(a, b, 0, 64 * MiB, pipelined=True) for a, b in zip(hops, hops[1:])]
        return Plan.broadcast("s", 64 * MiB, order, t, planner="chain", chunk_size=64 * 1024)

    return topo, planner


def _true_capacity(topo, dropped: str, rate: float) -> dict[int, float]:
    a, b = dropped.split("->")
    return {lk: (rate if (link.src, link.dst) == (a, b) else link.bandwidth) for lk, link in enumerate(topo.links)}


def _answer_probes(adapter, truth: dict[int, float], running):
    """The fake network: every bulk probe in the outbox runs beside ``running`` (Observations
    at their true rates) and gets its max-min share of the true capacities."""
    from topocast.runtime.estimate import probe_rates

    sent = [(h, m) for h, m in adapter.outgoing() if m.get("op") == "bulk"]
    routes = [tuple(adapter.topology.route(h, m["peer"])) for h, m in sent]
    rates = probe_rates(routes, running, truth)
    for (_, m), r in zip(sent, rates):
        adapter.on_measure({"type": "converged", "id": m["id"]})
    assert all(m.get("op") == "stop" for _, m in adapter.outgoing())  # all converged: all stopped together
    for (_, m), r in zip(sent, rates):
        adapter.on_measure({"type": "measured", "id": m["id"], "rate": r})
    return sent


@pytest.mark.parametrize("dropped", ["r1->sw", "sw->r2", None])
def test_a_targeted_probe_names_which_of_two_tied_links_dropped(dropped):
    from topocast.runtime.estimate import Observation

    topo, planner = _star_chain()
    adapter = Adapter(planner(topo), topo, planner, 1.0, 64 * 1024, probe=True)
    relay = next(i for i, t in enumerate(adapter.plan.transfers) if (t.src, t.dst) == ("r1", "r2"))
    # None: no link dropped, r1 -> r2 is slow for another reason (a busy machine)
    truth = _true_capacity(topo, dropped, 8e6 / 8) if dropped else {lk: x.bandwidth for lk, x in enumerate(topo.links)}
    rates = {i: adapter.pred[i] for i in adapter.pred}
    rates[relay] = 8e6 / 8  # r1 -> r2 crosses both suspects: it runs at the dropped link's rate
    holdings = {"s": IntervalSet([(0, adapter.plan.size)]), "r1": IntervalSet([(0, adapter.plan.size)])}
    t, got, sent = 0.0, {i: 0 for i in rates}, []
    while t < 10.0 and not sent:
        t += 0.25
        for i, r in rates.items():
            got[i] = int(r * t)
        assert adapter.tick(t, holdings, got, set()) is None
        if adapter.pending is not None:
            running = [
                Observation(tuple(topo.route(x.src, x.dst)), 0, rates[i]) for i, x in enumerate(adapter.plan.transfers)
            ]
            sent = _answer_probes(adapter, truth, running)
    assert sent, "tied suspects must be probed"
    crossing = {h + "->" + m["peer"] for h, m in sent}
    assert any(p.startswith("r1->") and p != "r1->r2" for p in crossing)  # r1's uplink without sw->r2
    assert any(p.endswith("->r2") and not p.startswith("r1") for p in crossing)  # sw->r2 without r1's uplink
    adapter.tick(t + 0.25, holdings, got, set())
    r = adapter.reports[-1]
    if dropped is None:  # the probes ran at the topology's rates: nothing is changed
        assert r["probe"][0]["chosen"] == "none" and r["changed"] == [] and not r["applied"]
        assert adapter.topology is topo
        return
    assert r["probe"][0]["chosen"] == dropped
    assert r["changed"][0]["link"] == dropped and dropped not in r["changed"][0]["tied"]


def test_a_probe_nobody_answers_keeps_the_busiest_suspect():
    topo, planner = _star_chain()
    adapter = Adapter(planner(topo), topo, planner, 1.0, 64 * 1024, probe=True)
    relay = next(i for i, t in enumerate(adapter.plan.transfers) if (t.src, t.dst) == ("r1", "r2"))
    rates = {i: adapter.pred[i] for i in adapter.pred}
    rates[relay] = 8e6 / 8
    holdings = {"s": IntervalSet([(0, adapter.plan.size)]), "r1": IntervalSet([(0, adapter.plan.size)])}
    got, t = {i: 0 for i in rates}, 0.0
    while t < 20.0 and not (adapter.reports and "outcome" in adapter.reports[-1]):
        t += 0.25
        for i, r in rates.items():
            got[i] = int(r * t)
        adapter.tick(t, holdings, got, set())
        adapter.outgoing()  # sent, never answered
    r = adapter.reports[-1]
    assert r["probe"][0]["outcome"].startswith("no probe answered")
    assert r["changed"][0]["link"] in ("r1->sw", "sw->r2")
    assert r["probe_seconds"] > adapt_module.PROBE_WAIT


# ---------------------------------------------------------------- holdings that lag the transfers done
def _star(hosts, mbit=40):
    from topocast.topology.model import PhysicalLink, Topology

    return Topology("star", list(hosts), ["sw"], [PhysicalLink(h, "sw", mbit * 1e6 / 8) for h in hosts])


def test_a_done_transfer_counts_as_held_when_the_holdings_lag():
    # a's last progress report predates the end of s -> a, whose TDONE came first: a's
    # pipelined transfers must not wait for bytes no transfer of the rest brings
    from topocast.sim import simulate

    size = 8 * MiB
    plan = chain_plan(size).with_chunk_size(64 * 1024)
    holdings = {"s": IntervalSet([(0, size)]), "a": IntervalSet([(0, size // 2)]), "b": IntervalSet([(0, size // 4)])}
    rest = continue_from(plan, holdings, skip={0})
    assert rest.initial["a"] == ((0, size),)
    assert not any(t.dst == "a" for t in rest.transfers)
    res = simulate(rest, _star("sabcd"), chunk_size=64 * 1024)
    assert all(h.time < float("inf") for h in res.per_host.values())


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), at=st.floats(0.05, 1.0), lag=st.floats(0.0, 0.3))
def test_the_rest_of_a_stable_plan_completes_from_any_moment_with_lagging_holdings(seed, at, lag):
    # stable's relays get their ranges from several trees; the holdings the coordinator has
    # are up to ``lag`` of the run older than the transfers it knows done
    from topocast.sim import simulate
    from topocast.topology.generators import random_tree

    topo = random_tree(7, 2, min_mbit=20, max_mbit=200, seed=seed, name="rt")
    plan = get_planner("broadcast", "stable")(topo, Broadcast(topo.hosts[0], 4 * MiB)).with_chunk_size(64 * 1024)
    res = simulate(plan, topo, chunk_size=64 * 1024)
    now = at * res.makespan
    done = {i for i, (_, end) in enumerate(res.transfer_times) if end <= now}
    holdings = predicted_holdings(plan, res.transfer_times, max(0.0, now - lag * res.makespan))
    rest = continue_from(plan, holdings, done)
    after = simulate(rest, topo, chunk_size=64 * 1024)
    assert all(h.time < float("inf") for h in after.per_host.values())


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), at=st.floats(0.05, 0.9), algorithm=st.sampled_from(["stable", "flat", "dijkstra"]))
def test_the_rest_of_a_plan_is_predicted_about_as_long_as_what_was_left(seed, at, algorithm):
    # the part a relay will receive stays pipelined behind the transfer that brings it: the
    # rest's prediction is what the adaptive run compares, so it must not turn pipelines
    # into store-and-forward (several times the remaining share)
    from topocast.sim import simulate
    from topocast.topology.generators import random_tree

    topo = random_tree(7, 2, min_mbit=20, max_mbit=200, seed=seed, name="rt")
    plan = get_planner("broadcast", algorithm)(topo, Broadcast(topo.hosts[0], 4 * MiB)).with_chunk_size(64 * 1024)
    res = simulate(plan, topo, chunk_size=64 * 1024)
    now = at * res.makespan
    done = {i for i, (_, end) in enumerate(res.transfer_times) if end <= now}
    rest = continue_from(plan, predicted_holdings(plan, res.transfer_times, now), done)
    assert now + simulate(rest, topo, chunk_size=64 * 1024).makespan <= 1.5 * res.makespan


def test_a_coordinator_busy_longer_than_the_silence_threshold_kills_no_agent(tmp_path, monkeypatch):
    """While the coordinator computes (a re-plan, a slow callback, a loaded machine) the
    agents' messages wait in its queue: that time is not their silence."""
    import time

    from topocast.runtime import make_launcher, perform, watch

    monkeypatch.setattr(watch, "SILENT_AFTER", 1.5)  # above the agents' 1 s heartbeat
    size = 1_000_000
    tr = [Transfer.of("s", "a", 0, size, rate_cap=1e6), Transfer.of("a", "b", 0, size, pipelined=True)]
    plan = Plan.broadcast("s", size, ["a", "b"], tr, planner="hand")
    stalled = []

    def on_progress(held, t):
        if not stalled and held["a"] > size * 0.2:
            stalled.append(t)
            time.sleep(2.0)  # longer than SILENT_AFTER: every agent's last word is older than that

    out = perform(plan, launcher=make_launcher("local"), on_progress=on_progress, dest_dir=str(tmp_path), timeout=30)
    assert stalled, "the run ended before the coordinator could stall"
    assert out.failed == {} and not any("silent" in w for w in out.warnings), (out.failed, out.warnings)
