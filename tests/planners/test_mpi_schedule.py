"""The MPI skeletons build their plans in bulk (``MPISchedule._step`` on shared, normalised
chunks); the plans are the very plans of scheduling every operation one by one."""

from collections import defaultdict

import pytest

from topocast.plan import Allreduce, Broadcast, Transfer, normalize_ranges
from topocast.planners import get_planner
from topocast.planners._collective import MPISchedule
from topocast.topology.generators import multi_cluster_tree, random_tree

BROADCAST = ("mpich", "scatter_allgather_ring", "scatter_allgather_rdb", "gridmpi", "far_first", "topology_aware")
ALLREDUCE = ("ring", "rabenseifner", "two_tier", "gridmpi", "recursive_doubling")


def _one_by_one(self, ops, *, extra_after=()):
    """``MPISchedule.step`` as it was written first: every operation normalised and looked up
    against a copy of the frontier, one after the other."""
    old = dict(self.frontier)
    made = {}
    touched = defaultdict(list)
    for src, dst, ranges, reduce, label in ops:
        ranges = normalize_ranges(ranges)
        if not ranges:
            continue
        after = tuple(sorted(set(old.get(src, ())) | set(old.get(dst, ())) | set(extra_after)))
        i = self.add(Transfer(src, dst, ranges, after=after, reduce=reduce, label=label))
        made[(src, dst)] = i
        touched[src].append(i)
        touched[dst].append(i)
    for h, idx in touched.items():
        self.frontier[h] = tuple(idx)
    return made


def _plans(topo, sizes, source):
    out = []
    for size in sizes:
        out += [get_planner("broadcast", name)(topo, Broadcast(source, size)) for name in BROADCAST]
        out += [get_planner("allreduce", name)(topo, Allreduce(size)) for name in ALLREDUCE]
    return out


@pytest.mark.parametrize("seed", range(6))
def test_bulk_steps_make_the_plans_of_one_operation_at_a_time(seed, monkeypatch):
    """Random trees and two-level cluster trees of 2 to 23 hosts, sizes that leave chunks short
    or empty, any source: the same transfers, in the same order, with the same ``after``."""
    hosts = 2 + 4 * seed - (seed % 2)
    trees = [random_tree(hosts, max(1, hosts // 4), seed=seed)]
    if hosts >= 6:
        trees.append(multi_cluster_tree(hosts, n_clusters=2, seed=seed))
    for topo in trees:
        sizes = (hosts - 1, 3 * hosts + 1, 10**6 + seed)
        source = topo.hosts[seed % hosts]
        bulk = _plans(topo, sizes, source)
        monkeypatch.setattr(MPISchedule, "step", _one_by_one)
        monkeypatch.setattr(MPISchedule, "_step", lambda self, ops, extra: _one_by_one(self, ops, extra_after=extra))
        one = _plans(topo, sizes, source)
        monkeypatch.undo()
        assert [p.transfers for p in bulk] == [p.transfers for p in one]
