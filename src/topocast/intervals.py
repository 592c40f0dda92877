"""A small set of disjoint half-open byte intervals, used to track what a host holds."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

__all__ = ["Holdings", "IntervalSet", "inside_grouped", "merge_grouped", "overlaps_grouped"]


class IntervalSet:
    """Disjoint, sorted, half-open intervals ``[start, end)`` of integers or floats."""

    __slots__ = ("starts", "ends", "total")

    def __init__(self, ranges: Iterable[tuple[float, float]] = ()):
        self.starts: list = []
        self.ends: list = []
        self.total: float = 0
        for off, length in ranges:
            self.add(off, off + length)

    def copy(self) -> IntervalSet:
        c = IntervalSet()
        c.starts = list(self.starts)
        c.ends = list(self.ends)
        c.total = self.total
        return c

    def add(self, start: float, end: float) -> None:
        """Add ``[start, end)``, merging with touching or overlapping intervals."""
        if end <= start:
            return
        i = bisect_left(self.ends, start)  # first interval that ends at or after start
        j = bisect_right(self.starts, end)  # intervals [i, j) touch or overlap
        if i < j:
            start = min(start, self.starts[i])
            end = max(end, self.ends[j - 1])
            removed = sum(e - s for s, e in zip(self.starts[i:j], self.ends[i:j]))
        else:
            removed = 0
        self.starts[i:j] = [start]
        self.ends[i:j] = [end]
        self.total += (end - start) - removed

    def add_ranges(self, ranges: Iterable[tuple[float, float]]) -> None:
        """Add ``(offset, length)`` ranges. Several at once are merged with the set in one
        pass (sorting the new ones), instead of one list splice per range."""
        new = sorted((off, off + length) for off, length in ranges if length > 0)
        if len(new) <= 2:
            for a, b in new:
                self.add(a, b)
            return
        starts: list = []
        ends: list = []
        old = zip(self.starts, self.ends)
        nxt_old = next(old, None)
        k = 0
        while nxt_old is not None or k < len(new):
            if nxt_old is not None and (k == len(new) or nxt_old[0] <= new[k][0]):
                a, b = nxt_old
                nxt_old = next(old, None)
            else:
                a, b = new[k]
                k += 1
            if ends and a <= ends[-1]:  # touches or overlaps the last interval: extend it
                if b > ends[-1]:
                    ends[-1] = b
            else:
                starts.append(a)
                ends.append(b)
        self.starts, self.ends = starts, ends
        self.total = sum(e - s for s, e in zip(starts, ends))

    def covers(self, start: float, end: float) -> bool:
        """True when ``[start, end)`` lies inside the set."""
        if end <= start:
            return True
        i = bisect_right(self.starts, start) - 1
        return i >= 0 and self.ends[i] >= end

    def covers_ranges(self, ranges: Iterable[tuple[float, float]]) -> bool:
        return all(self.covers(off, off + length) for off, length in ranges)

    def missing(self, start: float, end: float) -> list[tuple]:
        """Sub-intervals of ``[start, end)`` not in the set, as (start, end) pairs."""
        out = []
        pos = start
        i = max(bisect_right(self.starts, start) - 1, 0)
        while pos < end and i < len(self.starts):
            s, e = self.starts[i], self.ends[i]
            if e <= pos:
                i += 1
                continue
            if s >= end:
                break
            if s > pos:
                out.append((pos, min(s, end)))
            pos = max(pos, e)
            i += 1
        if pos < end:
            out.append((pos, end))
        return out

    def covered_parts(self, ranges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
        """The parts of ``ranges`` ((offset, length) pairs, in their order) that the set
        covers, as (offset, length) pairs: the complement of :meth:`missing` within each."""
        out = []
        for off, length in ranges:
            pos = off
            for s, e in self.missing(off, off + length) + [(off + length, off + length)]:
                if s > pos:
                    out.append((pos, s - pos))
                pos = max(pos, e)
        return out

    def __iter__(self):
        return iter(zip(self.starts, self.ends))

    def __len__(self) -> int:
        return len(self.starts)

    def __repr__(self) -> str:
        return f"IntervalSet({list(self)})"


def merge_grouped(group: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, ...]:
    """Union of the half-open integer intervals ``[starts, ends)`` of each group, vectorised
    (what ``IntervalSet`` does one interval at a time, for many sets at once).

    Returns ``(group, starts, ends)`` of the merged intervals, sorted by group then start;
    touching intervals merge, empty ones are dropped. Groups and bounds are non-negative ints.
    """
    keep = ends > starts
    g, s, e = (np.asarray(x, dtype=np.int64)[keep] for x in (group, starts, ends))
    if not len(g):
        return g, s, e
    # one key per interval orders by group then start; offsetting each group by span also
    # keeps a running maximum of the ends from crossing groups
    span = _span(g, e)
    order = np.argsort(g * span + s)
    g, s, e = g[order], s[order], e[order]
    reach = np.maximum.accumulate(g * span + e)
    head = np.ones(len(g), dtype=bool)
    head[1:] = g[1:] * span + s[1:] > reach[:-1]
    first = np.flatnonzero(head)
    last = np.append(first[1:], len(g)) - 1
    return g[first], s[first], reach[last] - g[first] * span


def inside_grouped(
    group: np.ndarray, starts: np.ndarray, ends: np.ndarray, merged: tuple[np.ndarray, ...]
) -> np.ndarray:
    """Per interval ``[starts, ends)`` of ``group``: whether it lies inside one interval of
    its group in ``merged`` (``merge_grouped``'s output). Empty intervals count as inside."""
    mg, ms, me = merged
    g, s, e = (np.asarray(x, dtype=np.int64) for x in (group, starts, ends))
    if not len(mg):
        return e <= s
    span = _span(np.concatenate((g, mg)), np.concatenate((e, me, s)))
    k = np.searchsorted(mg * span + ms, g * span + s, side="right") - 1
    kk = np.maximum(k, 0)
    return (e <= s) | ((k >= 0) & (mg[kk] == g) & (me[kk] >= e))


def overlaps_grouped(
    group: np.ndarray, starts: np.ndarray, ends: np.ndarray, merged: tuple[np.ndarray, ...]
) -> np.ndarray:
    """Per interval ``[starts, ends)`` of ``group``: whether it meets an interval of its group
    in ``merged`` (``merge_grouped``'s output)."""
    mg, ms, me = merged
    g, s, e = (np.asarray(x, dtype=np.int64) for x in (group, starts, ends))
    if not len(mg):
        return np.zeros(len(g), dtype=bool)
    span = _span(np.concatenate((g, mg)), np.concatenate((e, me, s)))
    j = np.searchsorted(mg * span + me, g * span + s, side="right")  # first ending after s
    jj = np.minimum(j, len(mg) - 1)
    return (j < len(mg)) & (mg[jj] == g) & (ms[jj] < e)


def _span(groups: np.ndarray, bounds: np.ndarray) -> int:
    """Offset between groups for one int64 key ``group * span + bound``."""
    span = int(bounds.max()) + 1
    if (int(groups.max()) + 1) * span >= 2**63:
        raise ValueError("byte offsets times hosts exceed 64-bit keys")
    return span


class Holdings:
    """What each host holds, merged lazily: recording a delivery is O(1), and a host's ranges
    are merged into its ``IntervalSet`` only when that host is asked about, once for all the
    deliveries since (a relay receiving thousands of ranges is merged a few times, not once per
    delivery)."""

    def __init__(self, initial: Mapping[str, Sequence[tuple[int, int]]] | None = None) -> None:
        self.merged_sets: dict[str, IntervalSet] = defaultdict(IntervalSet)
        self.pending: dict[str, list[tuple[int, int]]] = defaultdict(list)
        self.pending_bytes: dict[str, float] = defaultdict(float)
        for h, rs in (initial or {}).items():
            self.merged_sets[h].add_ranges(rs)

    def add(self, host: str, ranges: Sequence[tuple[int, int]], nbytes: float) -> None:
        """Record that ``host`` received ``ranges`` (``nbytes`` bytes in all)."""
        self.pending[host].extend(ranges)
        self.pending_bytes[host] += nbytes

    def merged(self, host: str) -> IntervalSet:
        """What ``host`` holds, every delivery merged in."""
        hs = self.merged_sets[host]
        p = self.pending.get(host)
        if p:
            hs.add_ranges(p)
            p.clear()
            self.pending_bytes[host] = 0.0
        return hs

    def merged_total(self, host: str) -> float:
        """Distinct bytes of the deliveries merged so far (without merging the rest)."""
        return self.merged_sets[host].total

    def upper_total(self, host: str) -> float:
        """An upper bound on the distinct bytes ``host`` holds, without merging."""
        return self.merged_sets[host].total + self.pending_bytes[host]
