"""Max-min fair rates by progressive filling, with rate caps and pipelining couplings.

All active flows start at rate 0 and rise together. A flow stops rising ("freezes") when

* a shared resource it crosses is saturated,
* it reaches its own cap (pacing ``rate_cap`` or a fatpipe link's bandwidth), or
* it is *coupled* to an upstream flow that froze: a pipelined transfer that has caught up with
  the bytes its sender has received can go no faster than the transfer feeding it.

Frozen flows keep their rate; the others go on rising. This is the classic water-filling
definition of max-min fairness (Bertsekas & Gallager, Data Networks, 6.5.2), plus the
coupling constraint ``rate(child) <= rate(parent)``, which progressive filling honours by
freezing a coupled child together with its parent.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["compact_ids", "progressive_filling", "progressive_filling_small"]

_REL = 1e-12
# list ranking: about one step in this many leads a walk (_steps_to_end)
RULER_GAP = 16


def progressive_filling(
    pair_flow: np.ndarray,
    pair_res: np.ndarray,
    capacity: np.ndarray,
    flow_cap: np.ndarray,
    children: list[list[int]] | None = None,
    *,
    parent: np.ndarray | None = None,
) -> np.ndarray:
    """Max-min fair rates (bytes/s) of ``len(flow_cap)`` flows.

    Parameters
    ----------
    pair_flow, pair_res : int arrays of equal length
        Incidence: flow ``pair_flow[k]`` crosses resource ``pair_res[k]``.
    capacity : float array
        Capacity of every resource (bytes/s).
    flow_cap : float array
        Per-flow upper bound (``inf`` when none).
    children : list of lists, optional
        ``children[f]``: flows coupled to ``f`` (they freeze when ``f`` freezes).
    parent : int array, optional
        The same coupling given the other way: ``parent[c]`` is the flow ``c`` is coupled to
        (-1: none). Each flow has at most one parent, and the couplings form a forest.
    """
    n = len(flow_cap)
    rate = np.zeros(n)
    if n == 0:
        return rate
    # Only the resources the flows cross matter; each round works on the pairs of the flows
    # still rising, so a round costs what is left, not the whole problem.
    used_res, pr = compact_ids(pair_res, len(capacity))
    capacity = capacity[used_res].astype(float)
    n_res = len(capacity)
    remaining = capacity.copy()
    pf = pair_flow
    flow_cap = np.asarray(flow_cap, dtype=float)
    active = np.ones(n, dtype=bool)
    act = np.arange(n)  # indices of the active flows
    level = 0.0
    if children is not None and parent is None:
        parent = np.full(n, -1, dtype=np.int64)
        for p, kids in enumerate(children):
            parent[kids] = p
    subtree = _Subtrees(parent) if parent is not None and (parent >= 0).any() else None
    while True:
        count = np.bincount(pr, minlength=n_res)
        used = count > 0
        inc = np.inf
        if used.any():
            inc = float(np.min(remaining[used] / count[used]))
        act_cap = flow_cap[act]
        inc = min(inc, float(act_cap.min()) - level)
        if not np.isfinite(inc):
            # Nothing bounds the remaining flows: a plan/topology error upstream.
            raise ValueError("a flow crosses no shared resource and has no rate cap")
        inc = max(inc, 0.0)
        level += inc
        remaining -= inc * count
        saturated = used & (remaining <= _REL * capacity)
        newly = np.zeros(n, dtype=bool)
        newly[act[act_cap <= level * (1 + _REL)]] = True
        if saturated.any():
            newly[pf[saturated[pr]]] = True
        if not newly.any():
            # Numerical corner: freeze the flows closest to their limit to guarantee progress.
            newly[act[act_cap <= act_cap.min() * (1 + 1e-9)]] = True
            if not newly.any():
                newly[act] = True
        if subtree is not None:
            newly |= subtree.below(newly) & active
        rate[newly] = level
        active &= ~newly
        act = np.flatnonzero(active)
        if not len(act):
            return rate
        keep = active[pf]
        pf, pr = pf[keep], pr[keep]


def compact_ids(ids: np.ndarray, bound: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(ids, return_inverse=True)`` of ids in ``[0, bound)``: by a pass over a
    table of ``bound`` flags when ``ids`` fill a good part of it (no sort), else by sorting."""
    if len(ids) * 8 < bound:
        return np.unique(ids, return_inverse=True)
    present = np.zeros(bound, dtype=bool)
    present[ids] = True
    return np.flatnonzero(present), (np.cumsum(present) - 1)[ids]


class _Subtrees:
    """The coupling forest as an Euler tour (enter and leave steps of a depth-first walk), so
    that "every flow below one of these" is a few vectorised steps: the flows below ``v``
    are those entered between ``v``'s enter and leave steps, and marking those spans is a
    running sum. The tour is ordered by list ranking (``_steps_to_end``), without a
    Python loop over the flows."""

    def __init__(self, parent: np.ndarray) -> None:
        n = len(parent)
        kid = np.flatnonzero(parent >= 0)
        kid = kid[np.argsort(parent[kid], kind="stable")]  # grouped by parent
        par = parent[kid]
        has_kids = np.zeros(n, dtype=bool)
        has_kids[par] = True
        roots = np.flatnonzero(has_kids & (parent < 0))
        # step ids: enter v = 2 v, leave v = 2 v + 1 (steps of flows outside the forest unused)
        nxt = np.full(2 * n, -1, dtype=np.int64)
        first_kid = np.ones(len(kid), dtype=bool)
        first_kid[1:] = par[1:] != par[:-1]
        last_kid = np.append(first_kid[1:], True)[: len(kid)]
        nxt[2 * par[first_kid]] = 2 * kid[first_kid]  # enter v -> enter first child
        leaf = kid[~has_kids[kid]]
        nxt[2 * leaf] = 2 * leaf + 1  # enter leaf -> leave leaf
        nxt[2 * kid[~last_kid] + 1] = 2 * kid[1:][~last_kid[:-1]]  # leave v -> enter next sibling
        nxt[2 * kid[last_kid] + 1] = 2 * par[last_kid] + 1  # leave last child -> leave parent
        nxt[2 * roots[:-1] + 1] = 2 * roots[1:]  # one tour through every tree
        steps = np.concatenate((2 * roots, 2 * kid, 2 * roots + 1, 2 * kid + 1))
        dist = _steps_to_end(nxt, steps)
        pos = np.zeros(2 * n, dtype=np.int64)
        pos[steps] = len(steps) - 1 - dist[steps]
        self.enter = pos[0::2]
        self.leave = pos[1::2]
        self.n_steps = len(steps)
        nodes = np.concatenate((roots, kid))
        self.by_enter = np.full(len(steps), -1, dtype=np.int64)
        self.by_enter[self.enter[nodes]] = nodes
        self.has_kids = has_kids

    def below(self, marked: np.ndarray) -> np.ndarray:
        """Bool over the flows: below (or at) a marked flow that has coupled children."""
        heads = np.flatnonzero(marked & self.has_kids)
        out = np.zeros(len(marked), dtype=bool)
        if not len(heads):
            return out
        diff = np.zeros(self.n_steps + 1, dtype=np.int64)
        np.add.at(diff, self.enter[heads], 1)
        np.add.at(diff, self.leave[heads] + 1, -1)
        covered = self.by_enter[np.cumsum(diff[:-1]) > 0]
        out[covered[covered >= 0]] = True
        return out


def _steps_to_end(nxt: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """List ranking: for each of ``steps``, the steps that follow it in the linked list
    ``nxt`` (successor, -1 at the end), in an array indexed like ``nxt``.

    Pointer jumping costs the list's length times the log of it. On a long list, rulers
    (the head and about one step in RULER_GAP, picked by a hash of the step) first walk
    together to the next ruler, one step per round; only the rulers' short list is then
    ranked by pointer jumping, and each step is its ruler's rank less its distance from it."""
    is_ruler = _rulers(nxt, steps)
    rulers = np.flatnonzero(is_ruler)
    ruler_of = np.zeros(len(nxt), dtype=np.int64)  # for each step: its ruler's position in rulers
    ruler_of[rulers] = np.arange(len(rulers))
    offset = np.zeros(len(nxt), dtype=np.int64)  # ... and its distance from it
    weight = np.zeros(len(rulers), dtype=np.int64)  # steps from a ruler to the next (or to the end)
    next_ruler = np.full(len(rulers), -1, dtype=np.int64)
    walker, at, walked = np.arange(len(rulers)), nxt[rulers], np.ones(len(rulers), dtype=np.int64)
    while len(walker):
        stop = at < 0
        stop[~stop] = is_ruler[at[~stop]]
        weight[walker[stop]] = walked[stop] - (at[stop] < 0)
        next_ruler[walker[stop]] = np.where(at[stop] < 0, -1, ruler_of[np.maximum(at[stop], 0)])
        walker, at, walked = walker[~stop], at[~stop], walked[~stop]
        ruler_of[at] = walker
        offset[at] = walked
        at, walked = nxt[at], walked + 1
    dist = np.zeros(len(nxt), dtype=np.int64)
    dist[steps] = _pointer_jumping(weight, next_ruler)[ruler_of[steps]] - offset[steps]
    return dist


def _rulers(nxt: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """Bool indexed like ``nxt``: the steps that lead a walk (every step of a short list)."""
    is_ruler = np.zeros(len(nxt), dtype=bool)
    if len(steps) < 4 * RULER_GAP * RULER_GAP:
        is_ruler[steps] = True
        return is_ruler
    # a multiplicative hash spreads the rulers along any order of the steps
    is_ruler[steps[(steps * 2654435761) & 0xFFFFFFFF < 2**32 // RULER_GAP]] = True
    succ = nxt[steps]
    has_pred = np.zeros(len(nxt), dtype=bool)
    has_pred[succ[succ >= 0]] = True
    is_ruler[steps[~has_pred[steps]]] = True  # every head
    return is_ruler


def _pointer_jumping(weight: np.ndarray, nxt: np.ndarray) -> np.ndarray:
    """Per element of the linked list ``nxt`` (-1 at the end): the sum of ``weight`` from it
    to the end."""
    rank = weight.copy()
    jump = nxt.copy()
    live = np.flatnonzero(jump >= 0)
    while len(live):
        rank[live] += rank[jump[live]]
        jump[live] = jump[jump[live]]
        live = live[jump[live] >= 0]
    return rank


def progressive_filling_small(
    routes: list[list[int]], capacity: list[float], flow_cap: list[float], parent: list[int] | None = None
) -> list[float]:
    """``progressive_filling`` on Python scalars, for problems of a few dozen flows, where
    numpy's cost per call outweighs the work: the same rounds and the same floating-point
    operations in the same order, so the same rates to the last bit.

    ``routes[f]``: the resources (ids into ``capacity``) flow ``f`` crosses, with
    repetitions; ``parent[f]``: the flow ``f`` is coupled to (-1: none)."""
    n = len(routes)
    rate = [0.0] * n
    if n == 0:
        return rate
    remaining = list(capacity)
    count = [0] * len(capacity)
    users: list[list[int]] = [[] for _ in capacity]
    for f, route in enumerate(routes):
        for r in route:
            count[r] += 1
            users[r].append(f)
    kids: list[list[int]] | None = None
    if parent is not None and max(parent) >= 0:
        kids = [[] for _ in range(n)]
        for c, p in enumerate(parent):
            if p >= 0:
                kids[p].append(c)
    active = [True] * n
    act = list(range(n))
    # resources some rising flow crosses (on the others a round changes nothing)
    live = [r for r, c in enumerate(count) if c]
    full = [_REL * c for c in capacity]
    level = 0.0
    while True:
        inc = math.inf
        for r in live:
            share = remaining[r] / count[r]
            if share < inc:
                inc = share
        cap_min = min([flow_cap[f] for f in act])
        inc = min(inc, cap_min - level)
        if not math.isfinite(inc):
            raise ValueError("a flow crosses no shared resource and has no rate cap")
        inc = max(inc, 0.0)
        level += inc
        bound = level * (1 + _REL)
        newly = [f for f in act if flow_cap[f] <= bound]
        for r in live:
            remaining[r] -= inc * count[r]
            if remaining[r] <= full[r]:
                newly.extend(f for f in users[r] if active[f])
        if not newly:
            # numerical corner, as in progressive_filling
            newly = [f for f in act if flow_cap[f] <= cap_min * (1 + 1e-9)] or act
        if kids is not None:
            newly.extend(_below(newly, kids, active))
        for f in newly:
            if active[f]:
                active[f] = False
                rate[f] = level
                for r in routes[f]:
                    count[r] -= 1
        act = [f for f in act if active[f]]
        if not act:
            return rate
        live = [r for r in live if count[r]]


def _below(heads: list[int], kids: list[list[int]], active: list[bool]) -> list[int]:
    """The active flows in the coupling subtrees under ``heads``."""
    out = []
    stack = [c for h in heads for c in kids[h]]
    while stack:
        f = stack.pop()
        if active[f]:
            out.append(f)
        stack.extend(kids[f])
    return out
