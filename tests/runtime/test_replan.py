"""``make_replanner``: the run's broadcast planner run again, for the hosts that are there or
on a changed topology, with the run's rate-cap scaling and chunk size."""

from __future__ import annotations

from topocast.plan import Allreduce, Broadcast
from topocast.plan.check import check_plan
from topocast.planners import get_planner
from topocast.runtime.replan import make_replanner
from topocast.topology import load_topology


def _first_plan(topo, algorithm="stable"):
    return get_planner("broadcast", algorithm)(topo, Broadcast(topo.hosts[0], 1 << 20))


def test_replan_leaves_the_missing_hosts_out_and_keeps_scaling_and_chunk():
    topo = load_topology("builtin:two-clusters")
    plan = _first_plan(topo)
    replan = make_replanner(plan, topo, "stable", 0.5, 4096, None)
    gone = plan.destinations[0]
    new = replan(frozenset({gone}))
    assert set(new.destinations) == set(plan.destinations) - {gone}
    assert gone not in {h for t in new.transfers for h in (t.src, t.dst)}
    assert new.chunk_size == 4096
    check_plan(new, topo)
    unscaled = get_planner("broadcast", "stable")(topo, Broadcast(plan.source, plan.size, new.destinations))
    caps = [t.rate_cap for t in unscaled.transfers if t.rate_cap is not None]
    assert caps, "stable caps its transfers' rates"
    assert sorted(t.rate_cap for t in new.transfers if t.rate_cap is not None) == sorted(c * 0.5 for c in caps)


def test_whole_plans_every_destination_on_the_topology_it_is_given():
    topo = load_topology("builtin:two-clusters")
    plan = _first_plan(topo)
    changed = load_topology("builtin:hetero-2switch")  # the same host names, other links
    assert set(changed.hosts) == set(topo.hosts)
    new = make_replanner(plan, topo, "stable", 1.0, 0, None, whole=True)(changed)
    check_plan(new, changed)
    assert set(new.destinations) == set(plan.destinations)
    expected = get_planner("broadcast", "stable")(changed, Broadcast(plan.source, plan.size, plan.destinations))
    assert [(t.src, t.dst, t.rate_cap) for t in new.transfers] == [
        (t.src, t.dst, t.rate_cap) for t in expected.transfers
    ]
    assert [(t.src, t.dst, t.rate_cap) for t in new.transfers] != [(t.src, t.dst, t.rate_cap) for t in plan.transfers]


def test_no_replanner_without_a_topology_a_broadcast_or_a_registered_planner():
    topo = load_topology("builtin:two-clusters")
    plan = _first_plan(topo)
    assert make_replanner(plan, None, "stable", 1.0, 0, None) is None
    assert make_replanner(plan, topo, "no-such-planner", 1.0, 0, None) is None
    allreduce = get_planner("allreduce", "ring")(topo, Allreduce(1 << 20))
    assert make_replanner(allreduce, topo, "ring", 1.0, 0, None) is None
