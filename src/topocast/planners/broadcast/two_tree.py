"""Two-tree broadcast over Stable Broadcast's levels: full bandwidth with logarithmic depth.

Reference: P. Sanders, J. Speck, J. L. Träff, "Two-tree algorithms for full bandwidth
broadcast, reduction and scan", Parallel Computing 35(12), 2009, pp. 581-594 (NCCL ships the
same construction as its "double binary tree", src/graph/trees.cc); docs/algorithms.md
section 11.

From the paper and NCCL's construction ([S:2tree, S:NCCL]):

* the message is split into two halves; each half is broadcast along its own binary tree
  spanning every process, both trees at once;
* every process is interior (two children) in at most one tree, so it receives each half once
  and sends at most two copies of one half, no more than a pipeline's one copy of the whole
  message (the paper numbers the processes in order and shifts T2 by one against T1);
* the depth is about log2 n instead of the n of a pipeline.

Ours ([I]):

* **Where the trees run.** The hosts are grouped by their routes from the source
  (:func:`route_hierarchy`: on a tree network, the hosts behind each switch link), and both
  trees are composed group by group (:func:`nested_two_tree`): inside a group its sub-groups
  play the paper's processes (interior in one tree, leaf in the other, attached breadth-first),
  and each tree enters every group exactly once. A group then receives two half-streams and
  sends out at most two over its link, as much as a depth-first chain crossing that link once
  each way, so the trees keep the chains' rates even where links between switches are no
  faster than the hosts' (the paper's in-order trees enter a group in the middle of the order
  several times). The price is depth: about log2 of the group size per level of groups, and
  at least one hop per switch on the way down (every group is entered once).
* **Heterogeneous hosts.** ``stable``'s nested destination sets S_1 ⊇ S_2 ⊇ ... (hosts that
  can take more get more trees) each get a two-tree; the rate V_n of level n (V_n / 2 per
  tree) comes from a small LP over the links the two-trees really cross (HiGHS):
  maximise Σ_n |S_n| V_n with Σ_n uses_n(e) V_n / 2 <= c(e) for every link or shared cable e.
* **Rate classes where routes are fixed** (docs/algorithms.md 0.3, 11.3; cumulative layers
  as in McCanne, Jacobson, Vetterli, "Receiver-driven Layered Multicast", SIGCOMM 1996):
  nested classes of the route shares (:func:`._trees.route_shares`) are planned beside
  ``stable``'s levels, each also with the slowest class as leaves; the rate LP first keeps
  every class at the largest common fraction of ``FLOOR_SHARE`` of its route share, then
  maximises Σ_n |S_n| V_n; the largest aggregate is planned.
* **Byte layout.** ``stable``'s folded staged layout (docs/algorithms.md 1.4) with two
  streams per level: level L carries the complement of what every stream of the levels
  j < L has delivered by ``t_L = M / (V_1 + ... + V_L)``, its first half on T1 and its second
  half on T2, so a host of S_1..S_L holds the message at t_L, as in ``stable``.
* Every hop is pipelined and paced at its tree's rate; hops follow the topology's routes.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Sequence
from itertools import chain, repeat, starmap
from typing import TYPE_CHECKING, TypeAlias

import numpy as np

from ...errors import PlanError
from ...lp import capacity_scale, limited_rows, solve
from ...memory import paused_gc
from ...plan import Broadcast, Plan, Transfer
from ..registration import register_planner
from ._compact import DEFAULT_RATE_TOLERANCE, check_rate_tolerance, compact_nested
from ._layout import _prefix
from ._trees import (
    Pipeline,
    e1_rates,
    prefix_sets,
    resource_arrays,
    route_shares,
    routes_fixed,
    within_capacity,
)
from .stable import stable_pipelines

if TYPE_CHECKING:
    from ...topology import Topology

__all__ = ["plan_two_tree", "route_hierarchy", "nested_two_tree", "RouteOrder"]

#: how route-ordered positions nest (:func:`route_hierarchy`): a position, or a list of pieces
Nesting: TypeAlias = "int | list[Nesting]"


def route_hierarchy(
    topology: Topology,
    source: str,
    members: Sequence[str],
    routes: dict[str, tuple[int, ...]] | None = None,
    ranked: RouteOrder | None = None,
) -> tuple[list[str], Nesting]:
    """The members in route order and how they nest: ``(order, nesting)``.

    ``order`` sorts the members by their route from ``source`` (directed link ids,
    lexicographically), so the hosts behind any link of those routes form one contiguous run.
    ``nesting`` groups the positions 0..n-1 of ``order``: a run is cut at every boundary whose
    two hosts share the fewest leading route links (their routes part nearest the source); each
    piece is a position (int) or a nested list. On a tree network the pieces are exactly the
    hosts behind each switch link, and a hop into a piece crosses that link [I].
    ``routes``: the members' routes from ``source``, when the caller has them; ``ranked``: a
    :class:`RouteOrder` of a superset of the members (then ``routes`` is not needed).
    """
    if ranked is None:
        if routes is None:
            routes = {m: topology.route(source, m) for m in members}
        ranked = RouteOrder({m: routes[m] for m in members})
    order, shared = ranked.restrict(members)
    return order, _nesting(shared)


class RouteOrder:
    """Hosts sorted by their routes from the source, and the leading links each shares with
    the next (the longest common prefix array of the sorted routes).

    Two routes of a sorted run share exactly the fewest leading links of any neighbouring
    pair between them (as for sorted strings), so a subset's order and its neighbours' shared
    links are read off the whole set's without comparing routes again [I]."""

    def __init__(self, routes: dict[str, tuple[int, ...]]) -> None:
        self.routes = routes
        self.order = sorted(routes, key=routes.__getitem__)
        self.rank = {m: i for i, m in enumerate(self.order)}
        self.lcp = np.array(
            [_common_prefix(routes[u], routes[v]) for u, v in zip(self.order, self.order[1:])], dtype=np.int64
        )

    def positions(self, members: Sequence[str]) -> np.ndarray:
        """The members' ranks in the sorted order, ascending."""
        rank = self.rank
        return np.sort(np.fromiter((rank[m] for m in members), dtype=np.int64, count=len(members)))

    def shared_between(self, pos: np.ndarray) -> np.ndarray:
        """Leading route links each ranked position in ``pos`` (ascending) shares with the next."""
        if len(pos) < 2:
            return np.zeros(0, dtype=np.int64)
        return np.minimum.reduceat(self.lcp[: pos[-1]], pos[:-1])

    def restrict(self, members: Sequence[str]) -> tuple[list[str], np.ndarray]:
        """The members in route order and the leading links each shares with the next."""
        pos = self.positions(members)
        order = self.order
        return [order[i] for i in pos.tolist()], self.shared_between(pos)


def _common_prefix(r1, r2) -> int:
    n = 0
    for x, y in zip(r1, r2):
        if x != y:
            break
        n += 1
    return n


def _nesting(shared: np.ndarray) -> Nesting:
    """The nesting of positions 0..len(shared) cut at the fewest shared links
    (:func:`route_hierarchy`)."""
    if not len(shared):
        return 0
    top: list[Nesting] = []
    todo = [(0, len(shared), top)]  # (first, last position, the piece's list to fill)
    while todo:  # iterative: a line of a thousand switches nests a thousand deep
        a, b, piece = todo.pop()
        inner = shared[a:b]
        cuts = (a + np.flatnonzero(inner == inner.min())).tolist()
        for s, e in zip([a] + [c + 1 for c in cuts], cuts + [b]):
            if s == e:
                piece.append(s)
            else:
                sub: list[Nesting] = []
                piece.append(sub)
                todo.append((s, e, sub))
    return top


def nested_two_tree(nesting: Nesting, n: int, memo: _PieceMemo | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Parents (position, -1: fed by the source) of positions 0..n-1 in the trees T1 and T2.

    The paper's invariant [S:2tree]: every host sends at most two half-streams in all, so a
    host interior in one tree (two children) is a leaf of the other. Ours [I]: the trees are
    composed piece by piece over ``nesting`` (:func:`route_hierarchy`) so that each tree enters
    every piece exactly once; a piece then sends out at most two half-streams over its link,
    as much as one pipeline crossing it once, and the trees stay about log2 deep per level of
    nesting.

    Slots: a piece of k hosts has 2k sending slots (two half-streams each), its trees use
    2(k-1), so two are left for hops out of the piece; its parent piece says how many of them
    T1 and T2 get (1+1, 2+0 or 0+2). Inside a piece the sub-pieces play the paper's hosts
    (:func:`_roles`), and each tree is grown by :func:`_attach`. ``memo``: pieces built
    before (:class:`_PieceMemo`), shared by the levels of a plan.
    """
    parents = (np.full(n, -1, dtype=np.int64), np.full(n, -1, dtype=np.int64))
    if isinstance(nesting, int):
        return parents
    memo = _PieceMemo() if memo is None else memo
    pre, todo = [], [nesting]  # composite pieces, parents before children
    while todo:
        piece = todo.pop()
        pre.append(piece)
        todo.extend(q for q in piece if not isinstance(q, int))
    size: dict[int, int] = {}
    shape: dict[int, int | None] = {}  # None: not a run of consecutive positions
    start: dict[int, int] = {}
    for piece in reversed(pre):
        size[id(piece)] = sum(1 if isinstance(q, int) else size[id(q)] for q in piece)
        shape[id(piece)], start[id(piece)] = memo.shape(piece, shape, start, size)
    need = {id(nesting): (1, 1)}  # the top level's two spare slots stay unused
    roles, todo, made = {}, [nesting], []
    while todo:  # parents before children; a piece built alike before is not entered
        piece = todo.pop()
        if memo.known(shape[id(piece)], need[id(piece)]):
            continue
        made.append(piece)
        roles[id(piece)] = _roles([1 if isinstance(q, int) else size[id(q)] for q in piece], need[id(piece)])
        for q, role in zip(piece, roles[id(piece)][3]):
            if not isinstance(q, int):
                need[id(q)] = role
                todo.append(q)
    built: dict[int, tuple] = {}  # piece -> (roots, spare slots, depths), each per tree
    for piece in reversed(made):
        t1, t2, mixed, role = roles[id(piece)]
        sub = {}
        for i, q in enumerate(piece):
            if isinstance(q, int):
                sub[i] = _single(q, role[i])
            else:
                sub[i] = built.get(id(q)) or memo.place(shape[id(q)], need[id(q)], start[id(q)], parents)
        out = [
            _attach(inner, mixed, leaves, need[id(piece)][t], sub, t, parents[t])
            for t, (inner, leaves) in enumerate(((t1, t2), (t2, t1)))
        ]
        built[id(piece)] = ((out[0][0], out[1][0]), (out[0][1], out[1][1]), (out[0][2], out[1][2]))
        memo.keep(shape[id(piece)], need[id(piece)], start[id(piece)], size[id(piece)], built[id(piece)], parents)
    if id(nesting) not in built:
        memo.place(shape[id(nesting)], need[id(nesting)], start[id(nesting)], parents)
    return parents


class _PieceMemo:
    """Pieces already built, by shape and slot role, for the levels of one plan [I].

    A piece that is a run of consecutive positions is built the same way wherever the run
    starts (:func:`_attach` compares positions only with each other), so its trees are kept
    relative to its first position and copied to any piece of the same shape (the same
    nesting of the same sizes) and role: switches of equal size, and the switches a level
    shares with the one before."""

    def __init__(self) -> None:
        self.ids: dict[tuple[int, ...], int] = {}
        self.built: dict[tuple[int, tuple[int, int]], tuple] = {}

    def shape(self, piece, shape, start, size) -> tuple[int | None, int]:
        """(shape id or None, first position) of ``piece``, its sub-pieces' known."""
        key: list[int] = []
        first, nxt = -1, None
        for q in piece:
            if isinstance(q, int):
                q_shape, q_start, q_size = -1, q, 1
            else:
                q_shape, q_start, q_size = shape[id(q)], start[id(q)], size[id(q)]
            if q_shape is None or (nxt is not None and q_start != nxt):
                return None, 0
            first = q_start if nxt is None else first
            nxt = q_start + q_size
            key.append(q_shape)
        return self.ids.setdefault(tuple(key), len(self.ids)), first

    def known(self, shape_id, need) -> bool:
        return shape_id is not None and (shape_id, need) in self.built

    def keep(self, shape_id, need, first, size, built, parents) -> None:
        """Record a piece just built (its sub-pieces' parents are final; its root's are not)."""
        if shape_id is None:
            return
        (r1, r2), (s1, s2), depths = built
        blocks = []
        for par in parents:
            block = par[first : first + size].copy()
            blocks.append(np.where(block >= 0, block - first, -1))
        slots = tuple([(d, pos - first) for d, pos in sl] for sl in (s1, s2))
        self.built[(shape_id, need)] = (blocks, (r1 - first, r2 - first), slots, depths)

    def place(self, shape_id, need, first, parents) -> tuple:
        """Write a known piece's trees at ``first``; its (roots, spare slots, depths)."""
        blocks, (r1, r2), slots, depths = self.built[(shape_id, need)]
        for par, block in zip(parents, blocks):
            par[first : first + len(block)] = np.where(block >= 0, block + first, -1)
        s1, s2 = ([(d, pos + first) for d, pos in sl] for sl in slots)
        return (r1 + first, r2 + first), (s1, s2), depths


def _single(pos: int, role: tuple[int, int]):
    """One host as a piece: root of both trees, its slots all at its own depth 0."""
    return (pos, pos), ([(0, pos)] * role[0], [(0, pos)] * role[1]), (0, 0)


def _roles(sizes: list[int], need: tuple[int, int]):
    """Which sub-pieces give their two spare slots to T1, to T2, or one to each.

    Those interior in T1 give both to T1, those interior in T2 to T2, at most one gives one
    to each; the counts follow from the slots each tree needs (k - 1 hops plus ``need``).
    Large sub-pieces alternate between the two trees' interiors, so each tree has some near
    its root [I]. Returns (T1-interior, T2-interior, mixed, role per sub-piece).
    """
    k = len(sizes)
    both = (k - 1 + need[0]) % 2
    n_t1 = (k - 1 + need[0] - both) // 2
    n_t2 = k - both - n_t1
    by_size = sorted(range(k), key=lambda i: -sizes[i])
    t1: list[int] = []
    t2: list[int] = []
    for i in by_size[: k - both]:
        (t1 if len(t1) < n_t1 and (len(t1) <= len(t2) or len(t2) == n_t2) else t2).append(i)
    mixed = by_size[k - both :]
    role = [(1, 1)] * k
    for i in t1:
        role[i] = (2, 0)
    for i in t2:
        role[i] = (0, 2)
    return t1, t2, mixed, role


def _attach(inner, mixed, leaves, reserve, built, t, parent) -> tuple[int, list, int]:
    """Tree ``t`` over sub-pieces: returns its root, ``reserve`` spare slots, its depth.

    Greedy [I]: the deepest sub-piece hangs from the shallowest free slot (the reserved slots,
    which the caller hangs whole pieces from, count as deepest), except that a sub-piece
    giving this tree no slot waits while taking the last free slot would strand the others.
    With single hosts (depth 0) this is the breadth-first heap: interior hosts, then leaves.
    """

    def deepest_first(items):
        return deque(sorted(items, key=lambda i: -built[i][2][t]))

    queues = (deepest_first(inner), deepest_first(mixed), deque([None] * reserve) + deepest_first(leaves))
    first = (queues[0] or queues[1]).popleft()
    free = [(d, 0, pos) for d, pos in built[first][1][t]]
    heapq.heapify(free)
    reserved, tick, depth = [], 1, built[first][2][t]
    while any(queues):
        strands = len(free) < 2 and bool(queues[0] or queues[1])
        allowed = [q for q in queues[: 2 if strands else 3] if q]
        queue = max(allowed, key=lambda q: math.inf if q[0] is None else built[q[0]][2][t])
        i = queue.popleft()
        d, _, pos = heapq.heappop(free)
        if i is None:
            reserved.append((d, pos))
            continue
        roots, slots, depths = built[i]
        parent[roots[t]] = pos
        depth = max(depth, d + 1 + depths[t])
        for rd, rpos in slots[t]:
            heapq.heappush(free, (d + 1 + rd, tick, rpos))
            tick += 1
    return built[first][0][t], reserved, depth


def _levels(pipelines):
    """Distinct nested destination sets of stable's trees (member order of their first tree);
    nested sets are equal exactly when they are as large."""
    out: list[list[str]] = []
    for p in pipelines:
        if not out or p.n_members != len(out[-1]):
            out.append(list(p.members))
    return out


def _hops(members, parents, source):
    """(sender, receiver) hops of one tree, parents before children, and the tree's depth."""
    parents = np.asarray(parents, dtype=np.int64)
    # depth = ancestors, by pointer jumping: every position keeps an ancestor and how far up
    # it is; each round adds the ancestor's distance and jumps to its ancestor, so the
    # distances double and log2(depth) rounds reach the root
    up = parents.copy()
    depth = (up >= 0).astype(np.int64)
    live = np.flatnonzero(up >= 0)
    while len(live):
        above = up[live]
        depth[live] += depth[above]
        up[live] = up[above]
        live = live[up[live] >= 0]
    order = np.argsort(depth, kind="stable")
    names = np.array([*members, source], dtype=object)  # parent -1 (the source) reads the last
    hops = list(zip(names[parents[order]].tolist(), names[order].tolist()))
    return hops, int(depth.max(initial=-1)) + 1


def _hop_uses(topology, hops, res_of, n_res) -> np.ndarray:
    """How many times the hops' routes cross every resource (one count per crossing)."""
    links = np.fromiter(chain.from_iterable(starmap(topology.route, hops)), dtype=np.int64)
    return np.bincount(res_of[links], minlength=n_res)


def _level_uses(topology, trees, known) -> np.ndarray:
    """Per resource (rows) and level (columns), the uses of the level's two trees, each
    crossing at half the level's rate. ``known``: the column of a tree pair already counted
    (by identity: the families of a plan share the pairs they build alike)."""
    res_of, cap = resource_arrays(topology)
    columns = []
    for pair in trees:
        seen = known.get(id(pair))
        if seen is None or seen[0] is not pair:  # the pair itself is kept: its id is never reused
            seen = known[id(pair)] = (pair, 0.5 * _hop_uses(topology, chain(*pair), res_of, len(cap)))
        columns.append(seen[1])
    return np.stack(columns, axis=1) if columns else np.zeros((len(cap), 0))


def _rates(topology, uses, sizes, stable_rates, floors=None):
    """LP rates V_n of the levels (each tree at V_n / 2), feasible on every resource
    (``uses``: :func:`_level_uses`).

    Level 1 keeps at least 10^-6 of stable's rate (or half of its largest feasible rate, if
    that is less) so that every destination completes. ``floors[L]``: the least total rate
    V_1 + ... + V_L of a host whose last level is L, kept when the links allow it (the LP
    is solved without them otherwise) [I]. Resources whose row (uses and capacity) repeats
    another's are written once: the same programme, with far fewer rows where many hosts'
    links are used alike."""
    _, cap = resource_arrays(topology)
    rows = limited_rows(uses.sum(axis=1) > 0, cap)
    scale = capacity_scale(cap[rows])
    if not len(rows):  # no limited link in the way: keep stable's rates
        return np.resize(np.asarray(stable_rates, float), len(sizes))
    # level 1 alone at half its largest feasible rate is feasible, so the floor never makes
    # the LP infeasible (the trees may cross links slower than 10^-6 of stable's rate)
    first = uses[rows, 0]
    level1_max = float((cap[rows][first > 0] / first[first > 0]).min()) if (first > 0).any() else math.inf
    floor = min(stable_rates[0] * 1e-6, level1_max / 2)
    bounds = [(floor / scale, None)] + [(0, None)] * (len(sizes) - 1)
    a_ub, b_ub = _distinct_rows(uses[rows], cap[rows] / scale)
    if floors is not None:
        sol = _floored(np.asarray(sizes, float), a_ub, b_ub, bounds, np.asarray(floors, float) / scale)
        if sol.status == 0:
            return within_capacity(np.maximum(sol.x[: len(sizes)], 0.0), a_ub, b_ub) * scale
    sol = solve(
        -np.asarray(sizes, float), a_ub, b_ub, bounds, problem="two_tree: the rate LP", error=_topology_plan_error
    )
    return within_capacity(np.maximum(sol.x, 0.0), a_ub, b_ub) * scale


def _distinct_rows(a_ub: np.ndarray, b_ub: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows of ``a_ub x <= b_ub`` without repeats (each kept where it first appears)."""
    first: dict[bytes, int] = {}
    for i, row in enumerate(np.column_stack([a_ub, b_ub])):
        first.setdefault(row.tobytes(), i)
    keep = list(first.values())
    return a_ub[keep], b_ub[keep]


def _topology_plan_error(message: str) -> PlanError:
    return PlanError(message, element="topology")


def _floored(sizes, a_ub, b_ub, bounds, floors):
    """The rate LP with floors, max-min first [I]: the largest fraction θ <= 1 of every
    level's floor that all levels can keep at once (V_1 + ... + V_L >= θ floor_L), then the
    largest Σ_n |S_n| V_n that keeps θ."""
    k = len(sizes)
    cumulative = -np.tril(np.ones((k, k)))
    # step 1: maximise θ (the last variable)
    a1 = np.vstack([np.hstack([a_ub, np.zeros((len(a_ub), 1))]), np.hstack([cumulative, floors[:, None]])])
    b1 = np.concatenate([b_ub, np.zeros(k)])
    first = solve(np.append(np.zeros(k), -1.0), a1, b1, list(bounds) + [(0, 1)], problem=None)
    if first.status != 0:
        return first
    theta = max(float(first.x[-1]) * (1 - 1e-9), 0.0)
    # step 2: the aggregate, every level kept at θ of its floor
    return solve(-sizes, np.vstack([a_ub, cumulative]), np.concatenate([b_ub, -theta * floors]), bounds, problem=None)


def two_stream_layout(
    size: int, rates: Sequence[float]
) -> list[tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]]:
    """Byte sequences (T1, T2) of every level: stable's folded staged layout, two streams a level.

    Level L carries the complement of the union over j < L of the first
    ``floor(M V_j / (2 R_L))`` bytes of both streams of level j (what they have delivered at
    ``t_L = M / R_L``), split in two halves; both streams run at V_L / 2 and end at t_L.
    """
    out: list[tuple[list[tuple[int, int]], list[tuple[int, int]]]] = []
    total = 0.0
    for L, v in enumerate(rates):
        total += v
        taken = []
        for j in range(L):
            p = int(math.floor(size * rates[j] / (2 * total)))
            taken.extend(_prefix(out[j][0], p))
            taken.extend(_prefix(out[j][1], p))
        taken.sort()
        comp, pos = [], 0
        for off, ln in taken:
            if off > pos:
                comp.append((pos, off - pos))
            pos = max(pos, off + ln)
        if pos < size:
            comp.append((pos, size - pos))
        half = sum(ln for _, ln in comp) // 2
        first = _prefix(comp, half)
        out.append((first, _suffix(comp, half)))
    return [(tuple(a), tuple(b)) for a, b in out]


def _suffix(seq, p):
    """What is left of ``seq`` after its first ``p`` bytes."""
    out = []
    for off, ln in seq:
        if p >= ln:
            p -= ln
            continue
        out.append((off + p, ln - p))
        p = 0
    return out


@register_planner(
    "broadcast",
    "two_tree",
    summary="two-tree (double binary tree) per Stable Broadcast level (or, where routes are fixed, per rate class of the routes, slowest hosts as leaves), half the message on each tree, built switch by switch so no link carries more than a pipeline; depth ~log2 n per switch level; LP rates",
    reference="Sanders, Speck, Träff. Two-tree algorithms for full bandwidth broadcast, reduction and scan. Parallel Computing 35(12), 2009",
)
def plan_two_tree(
    topology: Topology, request: Broadcast, *, seed: int | None = None, rate_tolerance: float = DEFAULT_RATE_TOLERANCE
) -> Plan:
    """Plan a two-tree broadcast per level of ``stable``'s nested trees.

    ``rate_tolerance``: fraction of stable's expected aggregate bandwidth that may be given up
    to merge its levels (as in ``stable``). ``seed`` is accepted for interface uniformity;
    the algorithm is deterministic.
    """
    check_rate_tolerance(rate_tolerance)
    dests = request.resolve(topology)
    src, size = request.source, int(request.size)
    pipes, _ = stable_pipelines(topology, src, dests)
    pipes, _ = compact_nested(pipes, dests, rate_tolerance)
    levels = _levels(pipes)
    if not levels or set(levels[0]) != set(dests):
        missing = sorted(set(dests) - set(levels[0] if levels else ()))
        raise PlanError(
            f"two_tree: destinations {missing[:5]} cannot be reached with positive bandwidth over two-way links",
            element="destinations",
        )
    level_rates = [sum(p.rate for p in pipes if p.n_members == len(m)) for m in levels]  # nested: sizes tell
    levels, trees, depth, rates = _best_levels(topology, src, dests, levels, level_rates)
    keep = [n for n in range(len(levels)) if rates[n] > 0]
    levels, trees, rates = [levels[n] for n in keep], [trees[n] for n in keep], [float(rates[n]) for n in keep]
    transfers = _transfers(trees, two_stream_layout(size, rates), rates)
    per_host = e1_rates([Pipeline(m, r) for m, r in zip(levels, rates)], dests)
    notes = {
        "levels": len(levels),
        "level_rates": rates[:64],
        "depth": depth,
        "expected_aggregate_bandwidth": float(sum(per_host.values())),
    }
    params = {"rate_tolerance": rate_tolerance}
    return Plan.broadcast(src, size, dests, transfers, planner="two_tree", params=params, notes=notes)


#: Most rate classes by route share (:func:`._trees.prefix_sets`): two trees each.
MAX_CLASSES = 12


def _best_levels(topology, source, dests, levels, level_rates):
    """(levels, trees, depth, rates): stable's levels; where routes are fixed, also rate
    classes by route share (:func:`._trees.route_shares`), each with and without its slowest
    hosts as leaves (:func:`_level_trees`); the largest aggregate (:func:`_score`) wins."""
    shares = route_shares(topology, source, dests) if routes_fixed(topology) else None
    families = [(levels, level_rates)]
    if shares is not None:
        rank = {d: i for i, d in enumerate(dests)}
        classes = [sorted(s, key=rank.__getitem__) for s in prefix_sets(dests, shares, MAX_CLASSES)]
        families.append((classes, level_rates[:1]))
    best = None
    ranked = RouteOrder({m: topology.route(source, m) for m in dests})
    built: dict = {}  # trees of a level, shared by the families that plan it alike
    memo = _PieceMemo()  # pieces of the levels' trees, shared by every level
    known: dict = {}  # resource uses of a level's trees
    for family, floor_rates in families:
        floors = _floors(family, shares)
        planned = None
        for leaves in (False, True) if shares is not None else (False,):
            trees, depth = _level_trees(topology, source, family, leaves, ranked, built, memo)
            if planned is not None and all(a is b for a, b in zip(trees, planned)):
                continue  # no level took leaves: the same trees, rates and score as just planned
            planned = trees
            sizes = [len(m) for m in family]
            rates = _rates(topology, _level_uses(topology, trees, known), sizes, floor_rates, floors)
            score = _score(family, rates)
            if best is None or score > best[0] * (1 + 1e-12):
                best = (score, family, trees, depth, rates)
    return best[1:]


def _level_trees(topology, source, levels, leaves=False, ranked=None, built=None, memo=None):
    """The two trees (hops, parents first) of every level, and the deepest tree's depth.

    ``leaves``: the hosts of the first level only (the slowest class) are leaves of its two
    trees instead of members, when the hosts of the next level are at least as many: they
    send nothing, so they hold no one back (docs/algorithms.md 11.3) [I]. ``ranked``: the
    hosts' :class:`RouteOrder` from the source; ``built``: trees already built for a level
    (by its set of members, and its leaves in order when it has leaves), reused: the trees
    of a set do not depend on the order its members are listed in (route order); ``memo``:
    the pieces built so far (:class:`_PieceMemo`)."""
    trees, depth = [], 0
    if ranked is None and levels:
        ranked = RouteOrder({m: topology.route(source, m) for m in levels[0]})
    built = {} if built is None else built
    for n, members in enumerate(levels):
        nxt = set(levels[n + 1]) if n + 1 < len(levels) else set()
        last = [m for m in members if m not in nxt]
        relays = [m for m in members if m in nxt]
        as_leaves = bool(leaves and n == 0 and last and len(relays) >= len(last))
        key = (frozenset(relays), tuple(last)) if as_leaves else (frozenset(members), None)
        if key not in built:
            built[key] = _level_pair(source, relays if as_leaves else members, last if as_leaves else [], ranked, memo)
        pair, d = built[key]
        depth = max(depth, d)
        trees.append(pair)
    return trees, depth


def _level_pair(source, members, leaves, ranked, memo=None):
    """A level's two trees over ``members`` (hops, parents first) with ``leaves`` hung from
    them, and the deeper tree's depth."""
    pos = ranked.positions(members)
    order = [ranked.order[i] for i in pos.tolist()]
    nesting = _nesting(ranked.shared_between(pos))
    pair, depth = [], 0
    for parents in nested_two_tree(nesting, len(order), memo):
        hops, d = _hops(order, parents, source)
        pair.append(hops)
        depth = max(depth, d)
    if leaves:
        for t, parent_of in enumerate(_leaf_parents(ranked, pos, leaves)):
            pair[t].extend((parent_of[x], x) for x in leaves)
        depth += 1
    return pair, depth


def _leaf_parents(ranked, relay_pos, leaves):
    """Per tree, the relay each leaf hangs from: among the relays whose route from the source
    shares most with the leaf's, the two with the fewest leaves so far (one per tree; the
    same relay when there is one), so that no relay's link takes many leaves.

    ``relay_pos``: the relays' ranks in ``ranked`` (ascending). The relays sharing most with a
    leaf are a run of the route order around it: the shared links fall (weakly) with the
    distance in that order [I]."""
    order, lcp = ranked.order, ranked.lcp
    relays = [order[i] for i in relay_pos.tolist()]
    between = ranked.shared_between(relay_pos)  # each relay with the next
    count = dict.fromkeys(relays, 0)
    first, second = {}, {}
    for x in leaves:
        q = ranked.rank[x]
        k = int(np.searchsorted(relay_pos, q))  # relays k-1 and k are the leaf's neighbours
        left = int(lcp[relay_pos[k - 1] : q].min()) if k > 0 else -1
        right = int(lcp[q : relay_pos[k]].min()) if k < len(relays) else -1
        top = max(left, right)
        lo, hi = k, k  # the run [lo, hi) of relays sharing ``top`` links with the leaf
        if left == top:
            lo -= 1
            while lo > 0 and between[lo - 1] >= top:
                lo -= 1
        if right == top:
            hi += 1
            while hi < len(relays) and between[hi - 1] >= top:
                hi += 1
        near = sorted(relays[lo:hi], key=count.__getitem__)
        first[x], second[x] = near[0], near[1] if len(near) > 1 else near[0]
        count[first[x]] += 1
        count[second[x]] += 1
    return first, second


def _score(levels, rates) -> float:
    """Σ_n |S_n| V_n: the aggregate the levels' rates give."""
    return float(sum(len(m) * float(v) for m, v in zip(levels, rates)))


#: The share of its route share (:func:`._trees.route_shares`) the rate LP keeps every host
#: at when it can [I]: above one half, so that a host still gets half of it after the trees'
#: fill (their hop latencies) is paid.
FLOOR_SHARE = 0.6


def _floors(levels, shares):
    """Per level L, FLOOR_SHARE of the smallest route share of the hosts whose last level
    is L: what the rate LP keeps them at when it can (None without shares)."""
    if shares is None:
        return None
    out = []
    for n, members in enumerate(levels):
        nxt = set(levels[n + 1]) if n + 1 < len(levels) else set()
        last = [shares[d] for d in members if d not in nxt]
        out.append(FLOOR_SHARE * min(last, default=0.0))
    return np.array(out)


def _transfers(trees, layout, rates) -> list[Transfer]:
    """Pipelined, paced transfers along both trees of every level (a hop's upstream is the
    hop into its sender: hops are listed parents first)."""
    out: list[Transfer] = []
    with paused_gc():
        for n, (pair, seqs, v) in enumerate(zip(trees, layout, rates)):
            for t, (hops, seq) in enumerate(zip(pair, seqs)):
                if not seq:
                    continue
                first = len(out)
                into = {w: first + k for k, (_, w) in enumerate(hops)}
                senders = [u for u, _ in hops]
                out.extend(
                    map(
                        Transfer,
                        senders,
                        [w for _, w in hops],
                        repeat(seq),
                        repeat(True),
                        map(into.get, senders),
                        repeat(()),
                        repeat(v / 2),
                        repeat(None),
                        repeat(False),
                        repeat(f"level {n + 1} tree {t + 1}"),
                    )
                )
    return out
