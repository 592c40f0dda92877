"""``check_plan``: the invariants every plan must satisfy, whatever planner made it.

Every planner's tests run it (like networkx's ``validate_flows``):

1. every transfer joins two distinct hosts of the topology, carries non-empty byte ranges
   inside the message, and has a route (its explicit ``path`` or the topology's route);
2. ``after`` and ``upstream`` name existing transfers and form no cycle; an upstream brings
   its bytes to our sender and carries our byte sequence as a contiguous run;
3. causality: no host sends bytes it cannot have had. Replaying the plan from the initial
   holdings, a store-and-forward transfer may start once its sender holds all its bytes, a
   pipelined one once its upstream may; a transfer that can never start is an error;
4. completeness: every receiving host ends with every byte it wants.

For ``allreduce`` plans step 3 and 4 track contributions instead of bytes (see
``topocast.check_allreduce`` when present); here only steps 1-2 apply to them.
"""

from __future__ import annotations

from collections import defaultdict, deque
from typing import TYPE_CHECKING

from .errors import PlanError
from .intervals import Holdings
from .plan import Plan
from .plan_graph import contiguous_offset, find_upstream, topological_order

if TYPE_CHECKING:
    from .topology import Topology

__all__ = ["check_plan", "find_upstream", "contiguous_offset"]


def check_plan(plan: Plan, topology: Topology) -> None:
    """Raise :class:`~topocast.errors.PlanError` if ``plan`` breaks an invariant (see module doc)."""
    transfers = plan.transfers
    n = len(transfers)
    size = plan.size

    def fail(i: int | None, msg: str) -> PlanError:
        where = f"transfers[{i}] ({transfers[i].src}->{transfers[i].dst})" if i is not None else None
        return PlanError(msg, source=f"plan of {plan.planner or 'unnamed planner'}", element=where)

    for h in list(plan.initial) + list(plan.wanted):
        if not topology.is_host(h):
            raise fail(None, f"host {h!r} is not a host of topology {topology.name!r}")
    for h, rs in list(plan.initial.items()) + list(plan.wanted.items()):
        for off, length in rs:
            if off < 0 or off + length > size:
                raise fail(None, f"range [{off}, {off + length}) of host {h!r} lies outside the message [0, {size})")

    # Step 1: endpoints, ranges, routes.
    for i, t in enumerate(transfers):
        if not topology.is_host(t.src) or not topology.is_host(t.dst):
            raise fail(i, "both ends of a transfer must be hosts of the topology")
        if t.src == t.dst:
            raise fail(i, "a transfer must join two different hosts")
        if not t.ranges:
            raise fail(i, "a transfer must carry at least one non-empty byte range")
        for off, length in t.ranges:
            if off < 0 or length <= 0 or off + length > size:
                raise fail(i, f"range [{off}, {off + length}) lies outside the message [0, {size})")
        if t.rate_cap is not None and not (t.rate_cap > 0):
            raise fail(i, f"rate_cap must be a positive number of bytes/s, got {t.rate_cap!r}")
        try:
            if t.path is not None:
                if t.path[0] != t.src or t.path[-1] != t.dst:
                    raise fail(i, f"path {list(t.path)} must start at {t.src!r} and end at {t.dst!r}")
                topology.path_links(t.path)
            else:
                topology.route(t.src, t.dst)
        except PlanError:
            raise
        except Exception as exc:  # TopologyError: no link / no route
            raise fail(i, f"no route: {exc}") from None

    # Step 2: dependencies.
    incoming: dict[str, list[int]] = defaultdict(list)
    for i, t in enumerate(transfers):
        incoming[t.dst].append(i)
    preds: list[list[int]] = [[] for _ in range(n)]
    upstream_of: list[int | None] = [None] * n
    for i, t in enumerate(transfers):
        for a in t.after:
            if not (0 <= a < n) or a == i:
                raise fail(i, f"'after' names transfer {a}, which does not exist (or is itself)")
            preds[i].append(a)
        if t.pipelined:
            if t.upstream is not None:
                if not (0 <= t.upstream < n) or t.upstream == i:
                    raise fail(i, f"upstream {t.upstream} does not exist")
                declared = transfers[t.upstream]
                if declared.dst != t.src:
                    raise fail(
                        i, f"upstream transfer {t.upstream} goes to {declared.dst!r}, not to our sender {t.src!r}"
                    )
                if contiguous_offset(declared.ranges, t.ranges) is None:
                    raise fail(i, f"upstream transfer {t.upstream} does not carry our byte sequence contiguously")
            up, _ = find_upstream(plan, i, incoming)
            upstream_of[i] = up
            if up is not None:
                preds[i].append(up)
    topological_order(preds, fail)

    if plan.collective == "allreduce":
        from .check_allreduce import check_allreduce

        check_allreduce(plan, topology)
        return

    # Step 3: causality replay (worklist over hosts whose holdings grew).
    # deliveries are merged per host only when that host is asked about (thousands of
    # transfers into one relay cost one merge, not thousands)
    holds = Holdings(plan.initial)
    feasible = [False] * n
    waiting_deps = [len(set(p)) for p in preds]
    dependents: list[list[int]] = [[] for _ in range(n)]
    for i, p in enumerate(preds):
        for a in set(p):
            dependents[a].append(i)
    by_src: dict[str, list[int]] = defaultdict(list)
    for i, t in enumerate(transfers):
        by_src[t.src].append(i)
    queue = deque(i for i in range(n) if waiting_deps[i] == 0)
    pending_data: dict[str, set[int]] = defaultdict(set)

    def try_start(i: int) -> bool:
        t = transfers[i]
        if t.pipelined and upstream_of[i] is not None:
            return True  # the upstream was feasible (it is a predecessor)
        return holds.merged(t.src).covers_ranges(t.ranges)

    while queue:
        i = queue.popleft()
        if feasible[i]:
            continue
        if not try_start(i):
            pending_data[transfers[i].src].add(i)
            continue
        feasible[i] = True
        t = transfers[i]
        holds.add(t.dst, t.ranges, t.nbytes)
        for d in dependents[i]:
            waiting_deps[d] -= 1
            if waiting_deps[d] == 0:
                queue.append(d)
        if pending_data.get(t.dst):
            before = holds.merged_total(t.dst)
            if holds.merged(t.dst).total != before:
                queue.extend(pending_data.pop(t.dst))
    for i in range(n):
        if not feasible[i]:
            t = transfers[i]
            if waiting_deps[i] > 0:
                raise fail(i, "never starts: it waits for a transfer that can never start")
            missing = []
            for off, length in t.ranges:
                missing.extend(holds.merged(t.src).missing(off, off + length))
            a, b = missing[0]
            raise fail(i, f"host {t.src!r} sends bytes [{a}, {b}) it never receives")

    # Step 4: completeness.
    for h, rs in plan.wanted.items():
        for off, length in rs:
            gap = holds.merged(h).missing(off, off + length)
            if gap:
                a, b = gap[0]
                raise fail(None, f"host {h!r} never receives bytes [{a}, {b}) of the message")
