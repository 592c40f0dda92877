"""Bandwidth-proportional hierarchical allreduce, pipelined in segments (docs/algorithms.md 5.7).

References: the reduce-scatter + allgather decomposition of Rabenseifner (ICCS 2004); the
two-level grid allreduce that reduces inside each cluster and crosses the wide-area link once
per byte, in the middle stage (Matsuda et al., GridMPI, Cluster 2006, docs/algorithms.md 5.6);
the per-host and per-cut lower bounds of bandwidth-optimal collectives (Patarasuk & Yuan,
JPDC 2009; Zhao & Krishnamurthy, "Bandwidth Optimal Pipeline Schedule for Collective
Communication", arXiv 2305.18461, 2023): a host must send its vector once and receive the
result once, a cut must be crossed once per byte in each direction.

Ours [I]: who owns which part of the reduction, and the pipeline.

1. (ownership) in each cluster of ``p`` hosts, host ``h`` owns a share ``f_h`` of every
   segment. A host sends ``(1 + (p - 1) f_h) M`` bytes and receives as many (its vector
   minus its share, the other members' pieces of its share, its share across the wide-area
   link, then its reduced share to the ``p - 1`` others), so the shares that minimise the
   slowest host's time ``max_h (1 + (p - 1) f_h) M / B_h`` are a water-filling over the NIC
   bandwidths ``B_h`` (:func:`ownership_shares`): a host much slower than the rest owns
   nothing and only sends its vector once and receives the result once;
2. (reduce-scatter) every member sends each owner its piece of the segment (``reduce``),
   one piece after the other in segment order, so a slow host streams its vector in order
   while the result of the earlier segments comes back;
3. (wide area) with several clusters, the segment is cut at every cluster's piece boundaries;
   the owners of each cell exchange their cluster's partial sum all-to-all (``reduce``), each
   byte crossing each inter-cluster cut once in each direction; the halves of an exchange wait
   for the same transfers (the reduce-scatter into every owner of the cell);
4. (allgather) each owner copies its reduced piece to every other member of its cluster.

Segments: ``segments`` (default: one per ``SEGMENT`` of message, at most ``MAX_SEGMENTS``, and
fewer when the plan would exceed ``MAX_TRANSFERS`` transfers). With ``K`` segments the slowest
host's time is about ``(1 + 1/K) M / B_slow`` (it receives the last segment after sending it).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from ...plan import Transfer
from .._collective import clusters_for, nic_bandwidth, switch_groups
from ..registration import register_planner
from ._common import allreduce_hosts, allreduce_plan

if TYPE_CHECKING:
    from ...plan import Allreduce, Broadcast, Plan
    from ...topology import Topology

__all__ = ["plan_proportional", "ownership_shares", "reduction_groups", "segment_count"]

SEGMENT = 256 << 10  # message units (bytes, or elements when planned in elements) per segment
MAX_SEGMENTS = 16
MAX_TRANSFERS = 4000  # keeps planning, checking and simulating fast on large clusters


def ownership_shares(bandwidths: list[float], groups: int = 2) -> list[float]:
    """The shares ``f_h`` (summing to 1) minimising ``max_h (1 + c f_h) / B_h`` with
    ``c = p + groups - 3`` (step 1: a member of one of ``groups`` clusters sends and receives
    ``(1 + c f_h) M``). Owners are the fastest ``k`` hosts for the largest ``k`` whose slowest
    member still gets a non-negative share; then ``f_h = (B_h / level - 1) / c`` with
    ``level = sum of their B / (c + k)``. Equal shares when ``c <= 0`` (the load does not
    depend on them)."""
    p = len(bandwidths)
    c = p + groups - 3
    if c <= 0:
        return [1.0 / p] * p
    order = sorted(range(p), key=lambda i: -bandwidths[i])
    total, level, k = 0.0, 0.0, 0
    for i in order:
        if k and bandwidths[i] < (total + bandwidths[i]) / (c + k + 1):
            break  # adding it would give it a negative share
        total += bandwidths[i]
        k += 1
        level = total / (c + k)
    shares = [0.0] * p
    for i in order[:k]:
        shares[i] = (bandwidths[i] / level - 1) / c
    scale = sum(shares)  # 1 up to rounding
    return [s / scale for s in shares]


def reduction_groups(
    topology: Topology, hosts: Sequence[str], clusters: str | Iterable[Iterable[str]] | None = None
) -> list[list[str]]:
    """The clusters (``clusters=``, else detected as for ``gridmpi``); on one cluster, the
    hosts of each switch, so that every inter-switch link is crossed once per byte."""
    groups = clusters_for(topology, hosts, clusters)
    if clusters is None and len(groups) == 1:
        groups = list(switch_groups(topology, hosts).values())
    return groups


def _cut(offset: int, length: int, shares: list[float]) -> list[tuple[int, int]]:
    """``(start, end)`` of each host's piece of ``[offset, offset + length)`` by ``shares``."""
    out, acc, start = [], 0.0, offset
    for s in shares:
        acc += s
        end = offset + round(acc * length)
        out.append((start, end))
        start = end
    out[-1] = (out[-1][0], offset + length)
    return out


def segment_count(size: int, groups: list[list[str]], segments: int | None) -> int:
    """``segments`` if given, else one per ``SEGMENT`` units, at most ``MAX_SEGMENTS`` and
    at most ``MAX_TRANSFERS`` transfers in all (about ``2 p (p - 1)`` per cluster and segment)."""
    if segments is not None:
        return max(1, min(int(segments), size))
    per_segment = sum(2 * len(g) * (len(g) - 1) for g in groups) + sum(len(g) for g in groups) * len(groups)
    by_count = max(1, MAX_TRANSFERS // max(per_segment, 1))
    return max(1, min(-(-size // SEGMENT), MAX_SEGMENTS, by_count))


@register_planner(
    "allreduce",
    "proportional",
    summary="reduce-scatter with shares proportional to each host's bandwidth (slow hosts own nothing), "
    "cross-cluster exchange once per byte, allgather; pipelined in segments",
    reference="Rabenseifner, ICCS 2004 and Matsuda et al., Cluster 2006 (hierarchical reduce-scatter/allgather); "
    "ownership shares by water-filling and the segment pipeline: topocast",
)
def plan_proportional(
    topology: Topology,
    request: Allreduce | Broadcast,
    *,
    clusters: str | Iterable[Iterable[str]] | None = None,
    segments: int | None = None,
) -> Plan:
    hosts = allreduce_hosts(topology, request)
    size = request.size
    groups = reduction_groups(topology, hosts, clusters)
    shares = [ownership_shares([nic_bandwidth(topology, h) for h in g], len(groups)) for g in groups]
    k_seg = segment_count(size, groups, segments)
    transfers: list[Transfer] = []

    def add(src, dst, a, b, after, reduce, label) -> int:
        transfers.append(Transfer(src, dst, ((a, b - a),), after=tuple(sorted(after)), reduce=reduce, label=label))
        return len(transfers) - 1

    last_send: dict[str, list[int]] = defaultdict(list)  # each member's latest send
    for seg, (s0, s1) in enumerate(_cut(0, size, [1 / k_seg] * k_seg)):
        pieces = [_cut(s0, s1 - s0, f) for f in shares]  # per cluster, per member
        into: dict[str, list[int]] = defaultdict(list)  # reduce transfers into each owner, this segment
        for g, cut in zip(groups, pieces):  # step 2: reduce-scatter
            for m in g:
                for h, (a, b) in zip(g, cut):
                    if h != m and a < b:
                        i = add(m, h, a, b, last_send[m], True, f"reduce-scatter {seg}")
                        into[h].append(i)
                        last_send[m] = [i]
        final = into
        if len(groups) > 1:  # step 3: each cell exchanged among its owners
            final = defaultdict(list)
            for a, b, owners in _cells(groups, pieces):
                after = [i for h in owners for i in into[h]]
                for x in owners:
                    for y in owners:
                        if x != y:
                            final[y].append(add(x, y, a, b, after, True, f"wide area {seg}"))
        for g, cut in zip(groups, pieces):  # step 4: allgather
            for h, (a, b) in zip(g, cut):
                for m in g:
                    if m != h and a < b:
                        add(h, m, a, b, final[h], False, f"allgather {seg}")
    return allreduce_plan(
        hosts,
        size,
        transfers,
        planner="proportional",
        params={k: v for k, v in (("clusters", clusters), ("segments", segments)) if v is not None},
        notes={
            "clusters": [list(g) for g in groups],
            "shares": {h: round(f, 4) for g, fs in zip(groups, shares) for h, f in zip(g, fs)},
            "segments": k_seg,
        },
    )


def _cells(groups, pieces):
    """``(start, end, owners)``: the segment cut at every cluster's piece boundaries, with the
    owner of each cell in every cluster."""
    bounds = sorted({x for cut in pieces for a, b in cut for x in (a, b)})
    for a, b in zip(bounds, bounds[1:]):
        owners = [next(h for h, (c, d) in zip(g, cut) if c <= a < d) for g, cut in zip(groups, pieces)]
        yield a, b, owners
