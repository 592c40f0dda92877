"""Compact plans on many-level networks: fewer rated trees for a bounded loss (docs/planners.md).

On a network where almost every link has its own bandwidth, the capacity-subtraction loop of
``stable`` / ``fpfr`` (and the LP of ``optimal`` / ``balanced_multicast``) yields one tree per
distinct bottleneck, so a plan has hosts x levels transfers, most of them carrying a sliver of
bandwidth. Ours ([I]): drop trees while no host loses more than ``rate_tolerance`` of its
own expected rate (E1, docs/algorithms.md 0.2), so each host keeps its guarantee to that
fraction, and the aggregate loses at most that fraction too.

* Nested trees (``stable``, ``optimal``; T_1 ⊇ T_2 ⊇ ...): removing tree ``s`` folds its rate into
  the next kept tree ``q`` (same hosts minus those that left after ``s``). A host whose last
  tree was in ``[s, q)`` then gets the cumulative rate of the kept tree before ``s``; every other
  host keeps its rate. Folding is only done when tree ``q`` uses every link at most as often as
  tree ``s`` (true for sub-pipelines of one depth-first order on a tree topology), so the merged
  plan never asks a link for more than the original plan did, and only when every host it
  slows keeps ``1 - rate_tolerance`` of its unmerged rate. Among the allowed removals the one
  that costs the aggregate least goes first.
* Parallel spanning trees (``fpfr``, ``balanced_multicast``; every host gets ΣV): trees that are
  the same pipeline are merged (lossless), then the slowest trees are dropped while their rates
  sum to at most ``rate_tolerance`` x ΣV (every host's own rate).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ...errors import InputError
from ._trees import Arborescence, Pipeline, shared_arborescence

__all__ = ["DEFAULT_RATE_TOLERANCE", "check_rate_tolerance", "compact_nested", "compact_parallel"]

# Fraction of its own expected rate a host may lose when a planner drops trees. The plan sizes
# and losses, measured on the generators' networks, are in docs/performance.md.
DEFAULT_RATE_TOLERANCE = 1e-4


def check_rate_tolerance(value: float, option: str = "rate_tolerance") -> float:
    """``value`` as a float in [0, 0.5), or InputError naming ``option`` and the range."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        v = math.nan
    if not (0.0 <= v < 0.5):
        raise InputError(f"must be a fraction of each host's rate in [0, 0.5), got {value!r}", element=option)
    return v


def _dominated(small: Pipeline, big: Pipeline) -> bool:
    """True when ``small`` uses no link more often than ``big`` does."""
    if small.link_uses.items() <= big.link_uses.items():  # the common case, as a set test
        return True
    uses = big.link_uses
    return all(uses.get(lid, 0) >= u for lid, u in small.link_uses.items())


def compact_nested(
    pipelines: Sequence[Pipeline], destinations: Sequence[str], tolerance: float
) -> tuple[list[Pipeline], float]:
    """Drop nested trees while no host loses more than ``tolerance`` of its own rate.

    Returns (trees, loss of the E1 aggregate in bytes/s). A host's own rate is its E1 rate in
    the unmerged plan (on a symmetric tree, Stable Broadcast's: its max-flow). ``pipelines``
    are nested (each tree's members are a subset of the previous tree's); if they are not,
    they are returned unchanged.
    """
    k = len(pipelines)
    if k < 2 or tolerance <= 0:
        return list(pipelines), 0.0
    arb = shared_arborescence(pipelines)
    levels = _last_trees(pipelines, destinations) if arb is None else _last_trees_over(arb, pipelines, destinations)
    if levels is None:  # not nested
        return list(pipelines), 0.0
    hosts_at = np.bincount(levels, minlength=k).tolist()
    cum = np.cumsum([p.rate for p in pipelines]).tolist()
    kept = list(range(k))
    hosts_from = hosts_at[:]  # hosts whose last tree lies in [kept[j], kept[j+1])
    # the fastest own rate among those hosts (their last tree's cumulative rate): removing
    # kept[j] gives them cum[kept[j-1]], which must stay within the tolerance of it
    top_from = [cum[i] if hosts_at[i] else 0.0 for i in range(k)]
    loss = 0.0
    legal: dict[tuple[int, int], bool] = {}
    while len(kept) > 1:
        best = None
        for j in range(1, len(kept)):
            s, before = kept[j], kept[j - 1]
            if top_from[s] - cum[before] > tolerance * top_from[s]:
                continue  # some host would fall more than the tolerance below its own rate
            q = kept[j + 1] if j + 1 < len(kept) else None
            if q is not None:
                key = (q, s)
                if key not in legal:
                    # sub-pipelines of one depth-first order over tree paths: a subset of the
                    # active hosts walks a subset of the links, so a later tree never uses more
                    legal[key] = arb is not None or _dominated(pipelines[q], pipelines[s])
                if not legal[key]:
                    continue
            cost = (cum[s] - cum[before]) * hosts_from[s]
            if best is None or cost < best[0]:
                best = (cost, j)
        if best is None:
            break
        cost, j = best
        loss += cost
        s, before = kept[j], kept[j - 1]
        hosts_from[before] += hosts_from[s]
        top_from[before] = max(top_from[before], top_from[s])
        del kept[j]
    out = []
    prev = 0.0
    for s in kept:
        out.append(pipelines[s].with_rate(cum[s] - prev))
        prev = cum[s]
    return out, loss


def _last_trees(pipelines: Sequence[Pipeline], destinations: Sequence[str]) -> np.ndarray | None:
    """Index of the last tree each destination (of the first tree) belongs to; None if the
    trees are not nested."""
    wanted = set(destinations)
    last = {}  # destination -> index of the last tree it belongs to
    for i, p in enumerate(pipelines):
        members = set(p.members)
        if i and not members <= set(pipelines[i - 1].members):
            return None
        for m in members & wanted:
            last[m] = i
    return np.array(list(last.values()), dtype=np.int64)


def _last_trees_over(
    arb: Arborescence, pipelines: Sequence[Pipeline], destinations: Sequence[str]
) -> np.ndarray | None:
    """:func:`_last_trees` for pipelines over one arborescence, on its position arrays."""
    count = np.zeros(arb.size, dtype=np.int64)  # trees holding each position
    prev = None
    for p in pipelines:
        active = p.active
        assert active is not None  # pipelines over an arborescence
        if prev is not None and np.any(active & ~prev):
            return None
        count += active
        prev = active
    pos = arb.pos[[arb.topology.index(d) for d in destinations]]
    trees = count[np.sort(pos[pos >= 0])]  # in preorder, the first tree's member order
    return trees[trees > 0] - 1


def compact_parallel(pipelines: Sequence[Pipeline], tolerance: float) -> tuple[list[Pipeline], float]:
    """Merge identical spanning pipelines, then drop the slowest within ``tolerance`` x ΣV.

    Returns (trees, rate given up in bytes/s per host)."""
    merged: dict[tuple, Pipeline] = {}
    for p in pipelines:
        key = (tuple(p.members), None if p.paths is None else tuple(p.paths))
        if key in merged:
            m = merged[key]
            merged[key] = m.with_rate(m.rate + p.rate)
        else:
            merged[key] = p.with_rate(p.rate)
    out = list(merged.values())
    total = sum(p.rate for p in out)
    budget = tolerance * total
    dropped = 0.0
    for p in sorted(out, key=lambda p: p.rate):
        if len(out) == 1 or dropped + p.rate > budget or not math.isfinite(p.rate):
            break
        dropped += p.rate
        out.remove(p)
    return out, dropped
