"""How a plan's transfers depend on each other: the upstream of a pipelined transfer, the
transfers each one waits for (``predecessors``), and an order in which every transfer comes
after the ones it waits for (Kahn's algorithm); and the transfers as arrays (``PlanArrays``,
``Plan.arrays``).

Shared by the plan checks (``check``, ``check_allreduce``), the simulator and the MPI engine,
so that a dependency means the same thing, and a cycle is reported in the same words,
everywhere. The plan model (``model``) builds ``PlanArrays`` on first use (``Plan.arrays``);
this module reads a plan through :class:`PlanLike` and imports only :mod:`.transfer`, so the
model and the graph do not import each other.
"""

from __future__ import annotations

import itertools
import math
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from operator import attrgetter
from typing import Protocol

import numpy as np

from ..intervals import IntervalSet
from .transfer import Ranges, Transfer

__all__ = [
    "PlanArrays",
    "PlanLike",
    "contiguous_offset",
    "csr_rows",
    "find_upstream",
    "predecessors",
    "topological_order",
]


class PlanLike(Protocol):
    """What this module reads of a plan (:class:`~topocast.plan.model.Plan` has it)."""

    @property
    def transfers(self) -> Sequence[Transfer]: ...

    @property
    def initial(self) -> Mapping[str, Ranges]: ...

    @property
    def wanted(self) -> Mapping[str, Ranges]: ...

    @property
    def arrays(self) -> PlanArrays: ...


def contiguous_offset(outer: Ranges, inner: Ranges) -> int | None:
    """Position in the flattened byte sequence ``outer`` where ``inner`` starts as a
    contiguous run, or ``None`` when it does not occur."""
    if outer == inner:
        return 0
    if not inner:
        return 0
    first_off, first_len = inner[0]
    pos = 0
    for k, (off, length) in enumerate(outer):
        if off <= first_off < off + length:
            start = pos + (first_off - off)
            # walk both sequences byte-run by byte-run
            i, j = k, 0
            o_off, o_len = first_off, off + length - first_off
            i_off, i_len = inner[0]
            while True:
                if o_off != i_off:
                    break
                step = min(o_len, i_len)
                o_off += step
                o_len -= step
                i_off += step
                i_len -= step
                if i_len == 0:
                    j += 1
                    if j == len(inner):
                        return start
                    i_off, i_len = inner[j]
                if o_len == 0:
                    i += 1
                    if i == len(outer):
                        break
                    o_off, o_len = outer[i]
        pos += length
    return None


def find_upstream(plan: PlanLike, index: int) -> tuple[int | None, int]:
    """The upstream of pipelined transfer ``index`` and our offset in its sequence.

    A declared ``upstream`` is taken as it is (offset 0 when it does not carry our sequence,
    which ``check_plan`` reports). Otherwise: ``(None, 0)`` when the sender holds the bytes from
    the start, else the first transfer into the sender whose sequence contains ours
    contiguously (``(None, 0)`` when none does, which ``check_plan`` reports).
    """
    arrays = plan.arrays
    declared = plan.transfers[index].upstream
    if declared is not None:
        off = arrays.offset(int(arrays.seq_of[declared]), int(arrays.seq_of[index]))
        return declared, 0 if off is None else off
    up, off = arrays.implicit_upstream(index)
    return (None if up < 0 else up), off


def predecessors(plan: PlanLike) -> list[list[int]]:
    """Per transfer, the transfers it waits for: its ``after``, then (when pipelined) its
    upstream (``find_upstream``). An index may appear twice; callers that count take a set.
    Assumes declared upstreams exist (``check_plan`` step 2)."""
    arrays = plan.arrays
    upstream = arrays.upstreams()[0]
    ptr, after = arrays.after_ptr.tolist(), arrays.after_idx.tolist()
    preds = [after[ptr[i] : ptr[i + 1]] for i in range(arrays.n)]
    behind = upstream >= 0
    for i, u in zip(np.flatnonzero(behind).tolist(), upstream[behind].tolist()):
        preds[i].append(u)
    return preds


def topological_order(preds: Sequence[Sequence[int]], fail: Callable[[int, str], Exception]) -> list[int]:
    """Transfers in an order that puts each after its predecessors (``preds[i]``: the indices
    transfer ``i`` waits for). A cycle raises ``fail(i, message)`` for a transfer on it."""
    n = len(preds)
    indeg = [0] * n
    succ: list[list[int]] = [[] for _ in range(n)]
    for i, p in enumerate(preds):
        for a in set(p):
            succ[a].append(i)
            indeg[i] += 1
    queue = deque(i for i in range(n) if indeg[i] == 0)
    order = []
    while queue:
        i = queue.popleft()
        order.append(i)
        for j in succ[i]:
            indeg[j] -= 1
            if indeg[j] == 0:
                queue.append(j)
    if len(order) != n:
        stuck = next(i for i in range(n) if indeg[i] > 0)
        raise fail(stuck, "dependency cycle through 'after'/'upstream'")
    return order


def csr_rows(ptr: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions of the CSR rows ``rows`` (``ptr[r]:ptr[r + 1]`` each, concatenated) and the
    length of each row."""
    starts = ptr[rows]
    lengths = ptr[rows + 1] - starts
    return np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(int(lengths.sum())), lengths


class PlanArrays:
    """A plan's transfers as arrays, built once per plan (``Plan.arrays``) and shared by the
    checks and the simulator, so that a plan of millions of transfers is walked in Python once.

    Byte sequences are interned: every hop of a tree shares its tree's tuple of ranges, so a
    plan of millions of transfers often carries a few dozen distinct sequences. ``seq_of[i]``
    is transfer ``i``'s sequence; ``seq_ptr`` / ``seq_off`` / ``seq_len`` hold the sequences'
    ranges (CSR). Hosts are numbered in name order (``host_name``, ``host_id``): every sender,
    receiver, initial holder and wanting host.
    """

    def __init__(self, plan: PlanLike) -> None:
        tr = plan.transfers
        self.n = n = len(tr)
        self._initial = plan.initial
        self._held: dict[int, IntervalSet] = {}
        names = set(map(attrgetter("src"), tr)) | set(map(attrgetter("dst"), tr)) | set(plan.initial) | set(plan.wanted)
        self.host_name = sorted(names)
        self.host_id = {h: k for k, h in enumerate(self.host_name)}
        self.src = np.fromiter(map(self.host_id.__getitem__, map(attrgetter("src"), tr)), dtype=np.int64, count=n)
        self.dst = np.fromiter(map(self.host_id.__getitem__, map(attrgetter("dst"), tr)), dtype=np.int64, count=n)
        self._intern_sequences(tr)
        self._dependencies(tr)
        self.has_path = np.fromiter((p is not None for p in map(attrgetter("path"), tr)), dtype=bool, count=n)
        caps = map(attrgetter("rate_cap"), tr)
        self.rate_cap = np.fromiter((math.inf if c is None else c for c in caps), dtype=float, count=n)
        order = np.argsort(self.dst, kind="stable")
        self.incoming_ptr = np.searchsorted(self.dst[order], np.arange(len(self.host_name) + 1))
        self.incoming_idx = order  # transfers into each host, in index order (CSR by host id)
        self._offsets: dict[tuple[int, int], int | None] = {}
        self._upstreams: tuple[np.ndarray, np.ndarray] | None = None

    def _dependencies(self, tr: Sequence[Transfer]) -> None:
        """Pipelining, declared upstreams, and ``after`` (CSR, as given)."""
        n = self.n
        self.pipelined = np.fromiter(map(attrgetter("pipelined"), tr), dtype=bool, count=n)
        declared = list(map(attrgetter("upstream"), tr))
        self.names_upstream = np.fromiter((u is not None for u in declared), dtype=bool, count=n)
        self.declared_upstream = np.fromiter((-1 if u is None else u for u in declared), dtype=np.int64, count=n)
        n_after = np.fromiter(map(len, map(attrgetter("after"), tr)), dtype=np.int64, count=n)
        self.after_ptr = np.concatenate(([0], np.cumsum(n_after)))
        self.after_idx = np.fromiter(
            itertools.chain.from_iterable(t.after for t in tr if t.after), dtype=np.int64, count=int(n_after.sum())
        )

    def _intern_sequences(self, tr: Sequence[Transfer]) -> None:
        """One entry per distinct byte sequence (``seq_*``), by the tuple first (cheap), then
        by value."""
        _, first, self.seq_of = np.unique(
            np.fromiter(map(id, map(attrgetter("ranges"), tr)), dtype=np.int64, count=len(tr)),
            return_index=True,
            return_inverse=True,
        )
        # equal sequences held in distinct tuples become one
        values = [tuple((int(off), int(ln)) for off, ln in tr[k].ranges) for k in first.tolist()]
        by_value: dict[Ranges, int] = {}
        same = np.array([by_value.setdefault(v, len(by_value)) for v in values], dtype=np.int64)
        self.seq_of = same[self.seq_of] if len(same) else np.zeros(0, dtype=np.int64)
        self.sequences: list[Ranges] = list(by_value)
        lengths = np.array([len(s) for s in self.sequences], dtype=np.int64)
        self.seq_ptr = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
        flat = np.array([x for s in self.sequences for r in s for x in r], dtype=np.int64).reshape(-1, 2)
        self.seq_off, self.seq_len = flat[:, 0], flat[:, 1]
        before = np.concatenate(([0], np.cumsum(self.seq_len)))
        self.seq_bytes = before[self.seq_ptr[1:]] - before[self.seq_ptr[:-1]]
        self.nbytes = self.seq_bytes[self.seq_of]

    def incoming(self, host: int) -> np.ndarray:
        """The transfers into host ``host`` (id), in plan order."""
        return self.incoming_idx[self.incoming_ptr[host] : self.incoming_ptr[host + 1]]

    def offset(self, outer: int, inner: int) -> int | None:
        """``contiguous_offset`` of sequence ``inner`` in sequence ``outer`` (sequence ids), memoised."""
        key = (outer, inner)
        if key not in self._offsets:
            self._offsets[key] = contiguous_offset(self.sequences[outer], self.sequences[inner])
        return self._offsets[key]

    def upstreams(self) -> tuple[np.ndarray, np.ndarray]:
        """``find_upstream`` of every pipelined transfer: its upstream (-1: none) and its
        offset in the upstream's sequence. Assumes declared upstreams exist (``check_plan``)."""
        if self._upstreams is None:
            upstream = np.full(self.n, -1, dtype=np.int64)
            base = np.zeros(self.n, dtype=np.int64)
            declared = np.flatnonzero(self.pipelined & self.names_upstream)
            up = self.declared_upstream[declared]
            upstream[declared] = up
            base[declared] = np.maximum(self.pair_offsets(self.seq_of[up], self.seq_of[declared]), 0)
            for i in np.flatnonzero(self.pipelined & ~self.names_upstream).tolist():
                upstream[i], base[i] = self.implicit_upstream(i)
            self._upstreams = upstream, base
        return self._upstreams

    def pair_offsets(self, outer: np.ndarray, inner: np.ndarray) -> np.ndarray:
        """``offset`` of each (outer, inner) pair of sequence ids, -1 where none; once per distinct pair."""
        n_seq = len(self.sequences)
        pairs, which = np.unique(outer * n_seq + inner, return_inverse=True)
        found = [self.offset(int(p) // n_seq, int(p) % n_seq) for p in pairs.tolist()]
        return np.array([-1 if x is None else x for x in found], dtype=np.int64)[which]

    def implicit_upstream(self, i: int) -> tuple[int, int]:
        """``find_upstream`` of pipelined transfer ``i``, which names no upstream (-1: none)."""
        src, seq = int(self.src[i]), int(self.seq_of[i])
        if self.held_from_start(src, seq):
            return -1, 0
        for j in self.incoming(src).tolist():
            if j != i:
                off = self.offset(int(self.seq_of[j]), seq)
                if off is not None:
                    return j, off
        return -1, 0

    def held_from_start(self, host: int, seq: int) -> bool:
        """Host ``host`` holds sequence ``seq`` from the start (host and sequence ids)."""
        if host not in self._held:
            self._held[host] = IntervalSet(self._initial.get(self.host_name[host], ()))
        held = self._held[host]
        return len(held) > 0 and held.covers_ranges(self.sequences[seq])
