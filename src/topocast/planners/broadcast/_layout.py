"""Byte layouts and transfers of rated pipelines (docs/algorithms.md 1.4): what each tree of a
bandwidth planner carries, and the paced, pipelined transfers along its hops.

* :func:`nested_layout` - the byte layout that folds the staged re-send of Stable Broadcast
  (docs/algorithms.md 1.4) into one continuous stream per tree (see the function's docstring).
* :func:`contiguous_layout` - FPFR / Balanced Multicasting's split: a contiguous part per tree.
* :func:`pipeline_transfers` - rated pipelines + byte sequences -> Transfers (paced, pipelined).

Ours ([I]): the integer byte layout and the pacing; the papers give the staged transfer only
in prose.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import repeat
from typing import TYPE_CHECKING

from ...memory import BYTES_PER_RANGE, BYTES_PER_TRANSFER, check_fits, paused_gc
from ...plan import Transfer

if TYPE_CHECKING:
    from ._trees import Pipeline

__all__ = ["nested_layout", "contiguous_layout", "pipeline_transfers"]


# --------------------------------------------------------------------------- byte layouts
def _prefix(seq: list[tuple[int, int]], p: int) -> list[tuple[int, int]]:
    out = []
    for off, ln in seq:
        if p <= 0:
            break
        take = ln if ln <= p else p
        out.append((off, take))
        p -= take
    return out


def nested_layout(size: int, rates: Sequence[float]) -> list[tuple[tuple[int, int], ...]]:
    """Byte sequences for nested rated trees T_1 ⊇ T_2 ⊇ ... (rates V_1, V_2, ...).

    The staged transfer of docs/algorithms.md 1.4 as one continuous stream per tree [I, ours]:
    with ``R_L = V_1 + ... + V_L`` and ``t_L = M / R_L``, tree 1 carries ``[0, M)`` in order
    and tree L carries, in increasing byte order, the complement of the union over ``j < L``
    of the first ``p_{j,L} = floor(M V_j / R_L)`` bytes of tree j's sequence.

    Why it works: tree L's sequence has ``M - Σ_{j<L} p_{j,L} ≈ V_L t_L`` bytes, so at rate V_L
    it ends at t_L; the prefixes of trees ``j < L`` at t_L are disjoint (tree L-1 was built
    disjoint from the prefixes of trees ``< L-1`` at ``t_{L-1} > t_L``, and prefixes only
    shrink going back in time), so at t_L the prefixes of trees 1..L tile ``[0, M)`` exactly:
    a host in T_1..T_L (not T_{L+1}) holds every byte at ``t_L = M / R_L``. Integer floors keep
    the tiling exact in bytes; a level finishes at most ``(L-1) / V_L`` seconds late.
    Cost: O(K^2) intervals for K trees.
    """
    size = int(size)
    seqs: list[list[tuple[int, int]]] = []
    total = 0.0
    for L, v in enumerate(rates):
        total += v
        if L == 0:
            seqs.append([(0, size)])
            continue
        taken = []
        for j in range(L):
            p = int(math.floor(size * rates[j] / total))
            taken.extend(_prefix(seqs[j], p))
        taken.sort()
        comp = []
        pos = 0
        for off, ln in taken:
            if off > pos:
                comp.append((pos, off - pos))
            pos = max(pos, off + ln)
        if pos < size:
            comp.append((pos, size - pos))
        seqs.append(comp)
    return [tuple(s) for s in seqs]


def contiguous_layout(size: int, rates: Sequence[float]) -> list[tuple[tuple[int, int], ...]]:
    """FPFR / Balanced Multicasting split: tree n carries a contiguous fraction ``V_n / ΣV``
    (T1 the former part, T2 the latter part, [S:SB-slides 18]), so all trees end together."""
    size = int(size)
    total = float(sum(rates))
    out: list[tuple[tuple[int, int], ...]] = []
    start = 0
    acc = 0.0
    for n, v in enumerate(rates):
        acc += v
        stop = size if n == len(rates) - 1 else int(round(size * acc / total))
        out.append(((start, stop - start),) if stop > start else ())
        start = stop
    return out


# --------------------------------------------------------------------------- transfers
def pipeline_transfers(
    source: str,
    pipelines: Sequence[Pipeline],
    sequences: Sequence[tuple[tuple[int, int], ...]],
    *,
    capped: bool = True,
    label: str = "tree",
) -> list[Transfer]:
    """One paced, pipelined transfer per hop of every pipeline, carrying that tree's sequence.

    Hop k of tree n is pipelined with ``upstream`` = hop k-1 of the same tree; every hop is
    capped at the tree's rate V_n (pacing, docs/algorithms.md 1.4). Trees with an empty sequence are
    skipped.
    """
    n_transfers = sum(p.n_members for p, seq in zip(pipelines, sequences) if seq)
    check_fits(
        sum(p.n_members * (BYTES_PER_TRANSFER + BYTES_PER_RANGE * len(seq)) for p, seq in zip(pipelines, sequences)),
        f"a plan of {n_transfers:,} transfers over {len(pipelines):,} trees",
        element="plan",
        hint="merge trees with a larger --rate-tolerance, or plan for fewer hosts",
    )
    out: list[Transfer] = []
    with paused_gc():
        for n, (p, seq) in enumerate(zip(pipelines, sequences)):
            if not seq:
                continue
            members = p.members
            first = len(out)
            # hop k: members[k-1] -> members[k], pipelined behind hop k-1 (built by map: a tree
            # may have 100,000 hops)
            out.extend(
                map(
                    Transfer,
                    [source, *members[:-1]],
                    members,
                    repeat(seq),
                    repeat(True),
                    [None, *range(first, first + len(members) - 1)],
                    repeat(()),
                    repeat(float(p.rate) if capped else None),
                    repeat(None) if p.paths is None else p.paths,
                    repeat(False),
                    repeat(f"{label} {n + 1}"),
                )
            )
    return out
