"""``check_plan``: the invariants every plan must satisfy, whatever planner made it.

Every planner's tests run it (like networkx's ``validate_flows``):

1. every transfer joins two distinct hosts of the topology, carries non-empty byte ranges
   inside the message, and has a route (its explicit ``path`` or the topology's route); where
   the topology declares routes, an explicit ``path`` must be the route itself;
2. ``after`` and ``upstream`` name existing transfers and form no cycle; an upstream brings
   its bytes to our sender and carries our byte sequence as a contiguous run;
3. causality: no host sends bytes it cannot have had. Replaying the plan from the initial
   holdings, a store-and-forward transfer may start once its sender holds all its bytes, a
   pipelined one once its upstream may; a transfer that can never start is an error;
4. completeness: every receiving host ends with every byte it wants.

For ``allreduce`` plans step 3 and 4 track contributions instead of bytes (see
``topocast.plan.check_allreduce``); here only steps 1-2 apply to them.

A plan of millions of transfers is checked on its arrays (``Plan.arrays``): each rule picks
the transfers that may break it at once, and only those are looked at one by one, in plan
order, for the message.
"""

from __future__ import annotations

import itertools
from collections import defaultdict, deque
from operator import itemgetter
from typing import TYPE_CHECKING

import numpy as np

from ..errors import PlanError
from ..intervals import Holdings, IntervalSet, inside_grouped, merge_grouped
from .graph import PlanArrays, contiguous_offset, csr_rows, predecessors, topological_order
from .model import Plan
from .transfer import Transfer

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..topology import Topology

__all__ = ["check_plan"]


def check_plan(plan: Plan, topology: Topology) -> None:
    """Raise :class:`~topocast.errors.PlanError` if ``plan`` breaks an invariant (see module doc)."""
    transfers = plan.transfers

    def fail(i: int | None, msg: str) -> PlanError:
        where = f"transfers[{i}] ({transfers[i].src}->{transfers[i].dst})" if i is not None else None
        return PlanError(msg, source=f"plan of {plan.planner or 'unnamed planner'}", element=where)

    _check_holdings(plan, topology, fail)
    arrays = plan.arrays
    # Step 1: endpoints, ranges, routes.
    for i in np.flatnonzero(_endpoint_suspects(plan, topology, arrays)).tolist():
        problem = _endpoint_problem(plan, topology, i)
        if problem is not None:
            raise fail(i, problem)
    # Step 2: dependencies.
    for i in np.flatnonzero(_dependency_suspects(arrays)).tolist():
        problem = _dependency_problem(plan, i)
        if problem is not None:
            raise fail(i, problem)
    upstream = arrays.upstreams()[0]
    in_order = _waits_only_for_earlier(arrays, upstream)
    if not in_order:
        topological_order(predecessors(plan), fail)

    if plan.collective == "allreduce":
        from .check_allreduce import check_allreduce

        check_allreduce(plan, topology)
        return
    # Step 3: causality.
    if not _senders_hold_from_start(arrays, upstream) and not (in_order and _fed_in_plan_order(plan, arrays, upstream)):
        _replay(plan, predecessors(plan), upstream, fail)
    # Step 4: completeness.
    for h in _incomplete_hosts(plan, arrays):
        gap = _first_gap(plan, arrays, h)
        if gap is not None:
            raise fail(None, f"host {h!r} never receives bytes [{gap[0]}, {gap[1]}) of the message")


def _check_holdings(plan: Plan, topology: Topology, fail: Callable[[int | None, str], PlanError]) -> None:
    """Every initial holder and wanting host is a host, and their ranges lie inside the message."""
    for h in list(plan.initial) + list(plan.wanted):
        if not topology.is_host(h):
            raise fail(None, topology.not_a_host(h))
    for h, rs in list(plan.initial.items()) + list(plan.wanted.items()):
        for off, length in rs:
            if off < 0 or off + length > plan.size:
                raise fail(
                    None, f"range [{off}, {off + length}) of host {h!r} lies outside the message [0, {plan.size})"
                )


# ------------------------------------------------------------------ step 1
def _endpoint_problem(plan: Plan, topology: Topology, i: int) -> str | None:
    """What is wrong with transfer ``i``'s ends, ranges, cap or route (None: nothing)."""
    t = plan.transfers[i]
    if not topology.is_host(t.src) or not topology.is_host(t.dst):
        return "both ends of a transfer must be hosts of the topology"
    if t.src == t.dst:
        return "a transfer must join two different hosts"
    if not t.ranges:
        return "a transfer must carry at least one non-empty byte range"
    for off, length in t.ranges:
        if off < 0 or length <= 0 or off + length > plan.size:
            return f"range [{off}, {off + length}) lies outside the message [0, {plan.size})"
    if t.rate_cap is not None and not (t.rate_cap > 0):
        return f"rate_cap must be a positive number of bytes/s, got {t.rate_cap!r}"
    try:
        if t.path is not None:
            if t.path[0] != t.src or t.path[-1] != t.dst:
                return f"path {list(t.path)} must start at {t.src!r} and end at {t.dst!r}"
            topology.path_links(t.path)
            if topology.routes and tuple(t.path) != topology.route_nodes(t.src, t.dst):
                return (
                    f"path {list(t.path)} is not the platform's route {list(topology.route_nodes(t.src, t.dst))}: "
                    "the topology declares its routes, so a transfer follows its route (leave path unset)"
                )
        else:
            topology.route(t.src, t.dst)
    except PlanError:
        raise
    except Exception as exc:  # TopologyError: no link / no route
        return f"no route: {exc}"
    return None


def _endpoint_suspects(plan: Plan, topology: Topology, arrays: PlanArrays) -> np.ndarray:
    """Transfers that may break a rule of ``_endpoint_problem`` (every one that does)."""
    not_host = np.array([not topology.is_host(h) for h in arrays.host_name], dtype=bool)
    suspect = not_host[arrays.src] | not_host[arrays.dst] | (arrays.src == arrays.dst)
    suspect |= _bad_sequences(arrays, plan.size)[arrays.seq_of]
    suspect |= ~(arrays.rate_cap > 0) | arrays.has_path
    # the topology's route, looked up once per pair of hosts
    routed = np.flatnonzero(~suspect)
    pair = arrays.src[routed] * len(arrays.host_name) + arrays.dst[routed]
    pairs, first = np.unique(pair, return_index=True)
    transfers = plan.transfers
    unroutable = [k for k, i in enumerate(routed[first].tolist()) if not _has_route(topology, transfers[i])]
    suspect[routed[np.isin(pair, pairs[unroutable])]] = True
    return suspect


def _has_route(topology: Topology, t: Transfer) -> bool:
    try:
        topology.route(t.src, t.dst)
    except Exception:  # TopologyError: no link / no route
        return False
    return True


def _bad_sequences(arrays: PlanArrays, size: int) -> np.ndarray:
    """Per sequence: empty, or a range empty or outside the message."""
    bad_range = (arrays.seq_off < 0) | (arrays.seq_len <= 0) | (arrays.seq_off + arrays.seq_len > size)
    owner = np.repeat(np.arange(len(arrays.sequences)), np.diff(arrays.seq_ptr))
    return (np.bincount(owner[bad_range], minlength=len(arrays.sequences)) > 0) | (np.diff(arrays.seq_ptr) == 0)


# ------------------------------------------------------------------ step 2
def _dependency_problem(plan: Plan, i: int) -> str | None:
    """What is wrong with transfer ``i``'s ``after`` and declared ``upstream`` (None: nothing)."""
    transfers = plan.transfers
    n = len(transfers)
    t = transfers[i]
    for a in t.after:
        if not (0 <= a < n) or a == i:
            return f"'after' names transfer {a}, which does not exist (or is itself)"
    if t.pipelined and t.upstream is not None:
        if not (0 <= t.upstream < n) or t.upstream == i:
            return f"upstream {t.upstream} does not exist"
        declared = transfers[t.upstream]
        if declared.dst != t.src:
            return f"upstream transfer {t.upstream} goes to {declared.dst!r}, not to our sender {t.src!r}"
        if contiguous_offset(declared.ranges, t.ranges) is None:
            return f"upstream transfer {t.upstream} does not carry our byte sequence contiguously"
    return None


def _dependency_suspects(arrays: PlanArrays) -> np.ndarray:
    """Transfers that may break a rule of ``_dependency_problem`` (every one that does)."""
    n = arrays.n
    index = np.arange(n)
    owner = np.repeat(index, np.diff(arrays.after_ptr))
    after = arrays.after_idx
    suspect = np.zeros(n, dtype=bool)
    suspect[owner[(after < 0) | (after >= n) | (after == owner)]] = True
    up = arrays.declared_upstream
    named = arrays.pipelined & arrays.names_upstream
    suspect |= named & ((up < 0) | (up >= n) | (up == index))
    ok = np.flatnonzero(named & ~suspect)
    suspect[ok] |= arrays.dst[up[ok]] != arrays.src[ok]
    suspect[ok] |= arrays.pair_offsets(arrays.seq_of[up[ok]], arrays.seq_of[ok]) < 0
    return suspect


def _waits_only_for_earlier(arrays: PlanArrays, upstream: np.ndarray) -> bool:
    """Every transfer waits only for transfers before it in the plan: no cycle possible."""
    owner = np.repeat(np.arange(arrays.n), np.diff(arrays.after_ptr))
    return bool((arrays.after_idx < owner).all() and (upstream < np.arange(arrays.n)).all())


# ------------------------------------------------------------------ step 3
def _senders_hold_from_start(arrays: PlanArrays, upstream: np.ndarray) -> bool:
    """Every transfer not pipelined behind an upstream sends bytes its sender holds from the
    start: then each can start once the transfers it waits for have, and all of them can."""
    gated = np.flatnonzero(upstream < 0)
    n_seq = max(len(arrays.sequences), 1)
    pairs = np.unique(arrays.src[gated] * n_seq + arrays.seq_of[gated])
    return all(arrays.held_from_start(int(p) // n_seq, int(p) % n_seq) for p in pairs.tolist())


def _fed_in_plan_order(plan: Plan, arrays: PlanArrays, upstream: np.ndarray) -> bool:
    """Every transfer not pipelined behind an upstream sends bytes its sender holds from the
    start or receives in transfers earlier in the plan. When every transfer also waits only for
    earlier ones, the replay starts them all in plan order (each one's predecessors and the
    deliveries it needs come before it), so it need not run. First by sequence (an earlier
    transfer into the sender carries the very same sequence: MPI schedules forward what they
    received), then, for the others, by merging each sender's earlier deliveries."""
    gated = np.flatnonzero(upstream < 0)
    n_seq = max(len(arrays.sequences), 1)
    delivered = arrays.dst * n_seq + arrays.seq_of  # in plan order: the first of each is its earliest
    keys, first = np.unique(delivered, return_index=True)
    wanted = arrays.src[gated] * n_seq + arrays.seq_of[gated]
    at = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
    fed = (keys[at] == wanted) & (first[at] < gated)
    return _fed_by_merging(plan, arrays, gated[~fed])


def _fed_by_merging(plan: Plan, arrays: PlanArrays, rest: np.ndarray) -> bool:
    """Each transfer of ``rest`` (ascending) sends bytes its sender holds from the start or
    receives in transfers earlier in the plan (their union)."""
    if not len(rest):
        return True
    order = np.argsort(arrays.src[rest], kind="stable")
    sequences, seq_of = arrays.sequences, arrays.seq_of
    for host, group in itertools.groupby(
        zip(arrays.src[rest[order]].tolist(), rest[order].tolist()), key=itemgetter(0)
    ):
        held = IntervalSet(plan.initial.get(arrays.host_name[host], ()))
        into = iter(arrays.incoming(host).tolist())
        k = next(into, None)
        for _, i in group:
            while k is not None and k < i:
                held.add_ranges(sequences[seq_of[k]])
                k = next(into, None)
            if not held.covers_ranges(sequences[seq_of[i]]):
                return False
    return True


def _replay(
    plan: Plan, preds: list[list[int]], upstream: np.ndarray, fail: Callable[[int | None, str], PlanError]
) -> None:
    """Replay the plan from the initial holdings (worklist over hosts whose holdings grew);
    raise for the first transfer that can never start."""
    transfers = plan.transfers
    n = len(transfers)
    # deliveries are merged per host only when that host is asked about (thousands of
    # transfers into one relay cost one merge, not thousands)
    holds = Holdings(plan.initial)
    feasible = [False] * n
    waiting_deps = [len(set(p)) for p in preds]
    dependents: list[list[int]] = [[] for _ in range(n)]
    for i, p in enumerate(preds):
        for a in set(p):
            dependents[a].append(i)
    queue = deque(i for i in range(n) if waiting_deps[i] == 0)
    pending_data: dict[str, set[int]] = defaultdict(set)
    behind_upstream = (upstream >= 0).tolist()

    def try_start(i: int) -> bool:
        if behind_upstream[i]:
            return True  # the upstream was feasible (it is a predecessor)
        t = transfers[i]
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


# ------------------------------------------------------------------ step 4
def _incomplete_hosts(plan: Plan, arrays: PlanArrays) -> list[str]:
    """Wanting hosts (in ``plan.wanted`` order) that end without a byte they want, given that
    every transfer completes. A host that holds its wanted bytes from the start, or receives
    them all in one sequence, is complete without merging anything."""
    wanting = [h for h, rs in plan.wanted.items() if rs]
    wanted_of = {rs: k for k, rs in enumerate(dict.fromkeys(plan.wanted[h] for h in wanting))}
    wants = np.full(len(arrays.host_name), -1, dtype=np.int64)
    ids = np.array([arrays.host_id[h] for h in wanting], dtype=np.int64)
    wants[ids] = [wanted_of[plan.wanted[h]] for h in wanting]
    complete = np.zeros(len(arrays.host_name), dtype=bool)
    complete[ids] = [IntervalSet(plan.initial.get(h, ())).covers_ranges(plan.wanted[h]) for h in wanting]
    into = np.flatnonzero(wants[arrays.dst] >= 0)
    n_seq = max(len(arrays.sequences), 1)
    pairs, which = np.unique(wants[arrays.dst[into]] * n_seq + arrays.seq_of[into], return_inverse=True)
    wanted_values = list(wanted_of)
    covers = np.array(
        [IntervalSet(arrays.sequences[p % n_seq]).covers_ranges(wanted_values[p // n_seq]) for p in pairs.tolist()],
        dtype=bool,
    )
    complete[arrays.dst[into[covers[which]]]] = True
    rest = ids[~complete[ids]]
    if not len(rest):
        return []
    return [arrays.host_name[h] for h in _short_of_wanted(plan, arrays, rest)]


def _first_gap(plan: Plan, arrays: PlanArrays, h: str) -> tuple[int, int] | None:
    """The first wanted bytes host ``h`` never receives, as (start, end); None if none."""
    held = IntervalSet(plan.initial.get(h, ()))
    for i in arrays.incoming(arrays.host_id[h]).tolist():
        held.add_ranges(plan.transfers[i].ranges)
    for off, length in plan.wanted[h]:
        gap = held.missing(off, off + length)
        if gap:
            return gap[0]
    return None


def _short_of_wanted(plan: Plan, arrays: PlanArrays, hosts: np.ndarray) -> list[int]:
    """Of ``hosts`` (ids), those whose initial holdings and incoming transfers miss a wanted byte."""
    name = arrays.host_name
    into = arrays.incoming_idx[csr_rows(arrays.incoming_ptr, hosts)[0]]
    pos, counts = csr_rows(arrays.seq_ptr, arrays.seq_of[into])
    g = np.repeat(arrays.dst[into], counts)
    s = arrays.seq_off[pos]
    e = s + arrays.seq_len[pos]
    initial = [(k, off, off + ln) for k in hosts.tolist() for off, ln in plan.initial.get(name[k], ())]
    wanted = [(k, off, off + ln) for k in hosts.tolist() for off, ln in plan.wanted[name[k]]]
    ig, is_, ie = np.array(initial, dtype=np.int64).reshape(-1, 3).T
    merged = merge_grouped(np.concatenate((g, ig)), np.concatenate((s, is_)), np.concatenate((e, ie)))
    wg, ws, we = np.array(wanted, dtype=np.int64).reshape(-1, 3).T
    short = np.unique(wg[~inside_grouped(wg, ws, we, merged)])
    order = {k: r for r, k in enumerate(hosts.tolist())}
    return sorted(short.tolist(), key=order.__getitem__)
