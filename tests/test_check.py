"""check_plan catches every broken invariant with a message that names the transfer."""

from dataclasses import replace

import pytest

from topocast import Plan, PlanError, Topology, Transfer, check_plan
from topocast.topology.model import PhysicalLink as L


@pytest.fixture
def topo():
    return Topology("line", ["s", "a", "b"], ["x"], [L("s", "x", 10.0), L("a", "x", 10.0), L("b", "x", 10.0)])


def bcast(transfers, size=100):
    return Plan.broadcast("s", size, ["a", "b"], transfers, planner="t")


def test_valid_relay_plan_passes(topo):
    check_plan(bcast([Transfer.of("s", "a", 0, 100), Transfer.of("a", "b", 0, 100)]), topo)


def test_pipelined_relay_passes(topo):
    check_plan(
        bcast([Transfer.of("s", "a", 0, 100, pipelined=True), Transfer.of("a", "b", 0, 100, pipelined=True)]), topo
    )


@pytest.mark.parametrize(
    "transfers, match",
    [
        ([Transfer.of("s", "a", 0, 100)], "never receives bytes \\[0, 100\\)"),
        (
            [Transfer.of("s", "a", 0, 50), Transfer.of("a", "b", 0, 100), Transfer.of("s", "a", 50, 50, after=(1,))],
            "never starts|never receives",
        ),
        ([Transfer.of("s", "a", 0, 50), Transfer.of("a", "b", 0, 100)], "host 'a' sends bytes \\[50, 100\\)"),
        ([Transfer.of("s", "zz", 0, 100)], "must be hosts"),
        ([Transfer.of("s", "s", 0, 100)], "two different hosts"),
        ([Transfer.of("s", "a", 0, 200)], "outside the message"),
        ([Transfer.of("s", "a", 0, 100, after=(5,))], "does not exist"),
        ([Transfer.of("s", "a", 0, 100, after=(1,)), Transfer.of("s", "b", 0, 100, after=(0,))], "cycle"),
        ([Transfer.of("s", "a", 0, 100, path=("s", "a"))], "no route"),
        ([Transfer.of("s", "a", 0, 100, rate_cap=0.0)], "rate_cap"),
        (
            [
                Transfer.of("s", "a", 0, 100),
                Transfer.of("a", "b", 0, 100, pipelined=True, upstream=0),
                Transfer.of("s", "b", 0, 10, pipelined=True, upstream=1),
            ],
            "goes to",
        ),
    ],
)
def test_broken_plans_are_rejected(topo, transfers, match):
    with pytest.raises(PlanError, match=match):
        check_plan(bcast(transfers), topo)


def test_plan_json_round_trip(topo, tmp_path):
    plan = bcast(
        [
            Transfer.of("s", "a", 0, 100, rate_cap=5.0, label="x"),
            Transfer.of("a", "b", 0, 100, pipelined=True, upstream=0),
        ]
    )
    f = tmp_path / "p.json"
    f.write_text(plan.dumps())
    again = Plan.load(f)
    assert again.transfers == plan.transfers
    assert dict(again.wanted) == dict(plan.wanted)


def test_bad_plan_file_is_a_clear_error(tmp_path):
    f = tmp_path / "p.json"
    f.write_text("{not json")
    with pytest.raises(PlanError, match="p.json: not valid JSON"):
        Plan.load(f)


def _random_plan(seed):
    """A valid random plan (tests/sim's generator) on a random tree, and the tree."""
    import sys
    from pathlib import Path

    from topocast.topology.generators import random_tree

    sys.path.insert(0, str(Path(__file__).parent / "sim"))
    from test_large_plans import random_plan

    topo = random_tree(20, 5, seed=seed)
    return random_plan(topo, 120, seed), topo


DEFECTS = {
    "after": (lambda t, n: replace(t, after=(*t.after, n + 3)), "'after' names transfer"),
    "range": (lambda t, n: replace(t, ranges=((0, 10**9),)), "outside the message"),
    "loop": (lambda t, n: replace(t, dst=t.src), "two different hosts"),
    "cap": (lambda t, n: replace(t, rate_cap=-1.0), "rate_cap"),
}


@pytest.mark.parametrize("defect", sorted(DEFECTS))
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_one_broken_transfer_among_many_is_named(defect, seed):
    """A plan checked on its arrays still names the broken transfer, in the same words as one
    checked transfer by transfer."""
    import random

    plan, topo = _random_plan(seed)
    check_plan(plan, topo)
    k = random.Random(seed).randrange(len(plan.transfers))
    breaks, words = DEFECTS[defect]
    transfers = list(plan.transfers)
    transfers[k] = breaks(transfers[k], len(transfers))
    with pytest.raises(PlanError, match=words) as err:
        check_plan(replace(plan, transfers=tuple(transfers)), topo)
    assert err.value.element.startswith(f"transfers[{k}] ")


def test_upstreams_are_found_for_pipelined_transfers_that_name_none(topo):
    """A pipelined transfer without a declared upstream: none when its sender holds the bytes
    from the start, else the first transfer into its sender carrying its sequence contiguously."""
    plan = bcast(
        [
            Transfer.of("s", "a", 0, 60, pipelined=True),
            Transfer.of("s", "a", 40, 60, pipelined=True),
            Transfer.of("a", "b", 50, 50, pipelined=True),
            Transfer.of("a", "b", 10, 20, pipelined=True),
            Transfer.of("s", "b", 0, 100),
        ]
    )
    check_plan(plan, topo)
    upstream, base = plan.arrays.upstreams()
    assert upstream.tolist() == [-1, -1, 1, 0, -1]
    assert base.tolist() == [0, 0, 10, 10, 0]


def _outcome(plan, topo):
    """check_plan's verdict: None, or its message."""
    try:
        check_plan(plan, topo)
    except PlanError as exc:
        return str(exc)
    return None


def _sent_too_early(plan, rng):
    """A store-and-forward transfer made to forward what its new sender receives only later
    in the plan (the replay may still find it feasible, or not)."""
    transfers = list(plan.transfers)
    k = rng.randrange(len(transfers) - 1)
    later = transfers[rng.randrange(k + 1, len(transfers))]
    if later.dst == transfers[k].dst:
        return None
    transfers[k] = replace(transfers[k], src=later.dst, ranges=later.ranges, pipelined=False, upstream=None)
    return replace(plan, transfers=tuple(transfers))


def _never_received(plan, rng):
    """A transfer made to send bytes its sender neither holds nor ever receives."""
    from topocast.intervals import IntervalSet

    transfers = list(plan.transfers)
    k = rng.randrange(len(transfers))
    src = transfers[k].src
    held = IntervalSet(plan.initial.get(src, ()))
    for t in transfers:
        if t.dst == src:
            held.add_ranges(t.ranges)
    gaps = held.missing(0, plan.size)
    if not gaps:
        return None
    a, b = gaps[rng.randrange(len(gaps))]
    transfers[k] = replace(transfers[k], ranges=((a, b - a),), pipelined=False, upstream=None)
    return replace(plan, transfers=tuple(transfers))


@pytest.mark.parametrize("seed", range(12))
def test_causality_in_plan_order_agrees_with_the_replay(seed, monkeypatch):
    """A plan whose transfers forward only what their senders hold from the start or received
    earlier in the plan passes causality without the replay; the verdict (and any message)
    is the replay's, on valid plans and on plans broken or reordered at random."""
    import random

    from topocast.plan import check

    rng = random.Random(seed)
    plan, topo = _random_plan(seed)
    variants = [plan] + [mutate(plan, rng) for mutate in (_sent_too_early, _sent_too_early, _never_received)]
    variants = [p for p in variants if p is not None]
    fast = [_outcome(p, topo) for p in variants]
    assert check._fed_in_plan_order(plan, plan.arrays, plan.arrays.upstreams()[0])
    monkeypatch.setattr(check, "_fed_in_plan_order", lambda *args: False)
    assert fast == [_outcome(p, topo) for p in variants]
    assert fast[0] is None


# ------------------------------------------------------------------ paths where routes are fixed
def _declared_route_platform():
    """Two hosts behind one switch whose declared route goes up to the gateway and back."""
    links = [L("a", "sw", 1e9), L("b", "sw", 1e9), L("sw", "gw", 1e10), L("c", "gw", 1e9)]
    routes = {("a", "b"): ("a", "sw", "gw", "sw", "b"), ("b", "a"): ("b", "sw", "gw", "sw", "a")}
    return Topology("declared", ["a", "b", "c"], ["sw", "gw"], links, routes=routes)


def test_an_explicit_path_that_is_not_the_declared_route_is_rejected():
    topo = _declared_route_platform()
    size = 1000
    turn = Transfer.of("a", "b", 0, size, path=("a", "sw", "b"))
    plan = Plan.broadcast("a", size, ["b"], [turn])
    with pytest.raises(PlanError) as exc:
        check_plan(plan, topo)
    msg = str(exc.value)
    assert "a->b" in msg or "'a'" in msg
    assert "['a', 'sw', 'b']" in msg and "['a', 'sw', 'gw', 'sw', 'b']" in msg
    # the route itself, given as a path, or no path at all: accepted
    check_plan(
        Plan.broadcast("a", size, ["b"], [Transfer.of("a", "b", 0, size, path=("a", "sw", "gw", "sw", "b"))]), topo
    )
    check_plan(Plan.broadcast("a", size, ["b"], [Transfer.of("a", "b", 0, size)]), topo)


def test_explicit_paths_stay_allowed_without_declared_routes():
    # a ring: a planner may choose the long way round
    links = [L("a", "b", 1e9), L("b", "c", 1e9), L("c", "a", 1e9)]
    topo = Topology("ring", ["a", "b", "c"], [], links)
    plan = Plan.broadcast("a", 10, ["b"], [Transfer.of("a", "b", 0, 10, path=("a", "c", "b"))])
    check_plan(plan, topo)


@pytest.mark.parametrize("name", ["depth_first", "stable", "fpfr", "optimal", "dijkstra", "two_tree"])
def test_no_planner_gives_a_path_the_platform_does_not_route(name):
    from topocast.plan import Broadcast
    from topocast.planners.registry import get_planner
    from topocast.topology.multisite import multi_site_platform

    topo = multi_site_platform(30, seed=1)
    assert topo.routes
    plan = get_planner("broadcast", name)(topo, Broadcast(topo.hosts[0], 10**8))
    check_plan(plan, topo)
    for t in plan.transfers:
        assert t.path is None or tuple(t.path) == topo.route_nodes(t.src, t.dst), (name, t)
