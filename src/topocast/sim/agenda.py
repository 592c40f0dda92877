"""The simulator's agenda: when each flow's next event falls, and which events are due next
(docs/design.md, "Simulator").

Each flowing transfer's next events (done, catching up with its upstream, freed from it,
unblocked) are computed when its rate, or its upstream's, changes, and kept in a heap with the
pending transfers' activations, the ends of latency and reduction phases and the senders' next
injections (those computed for a batch of flows in an ``Agenda`` of sorted runs); stale
entries are skipped (an entry carries its transfer's version, ``ver``).

``Events`` is a mixin of the simulator (``engine._Sim``): the rates room asks it to
``_schedule`` flows; the loop asks ``_next_events`` what is due.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable, Sequence

import numpy as np

from .room import Room
from .state import EV_ACTIVATE, EV_CATCH, EV_DONE, EV_FREE, EV_UNBLOCK, FLOWING, PENDING, REL


class Events(Room):
    """Flow events, phase ends and injections, in time order (a mixin of ``_Sim``)."""

    def _init_agenda(self) -> None:
        self._seq = itertools.count()
        self.ver = np.zeros(self.n, dtype=np.int64)  # version of each transfer's entries in flow_heap
        self.flow_heap: list[tuple] = []  # (time, seq, kind, transfer, version)
        self.flow_agenda = Agenda()  # the same, pushed a batch at a time by _schedule
        self.phase_heap: list[tuple] = []  # (time, transfer, phase): end of LATENCY / REDUCING
        self.inject_heap: list[tuple] = []  # (time, sender): a busy sender's next injection
        self.phase_due: list[int] = []

    def _schedule_done(self, idx: np.ndarray, r: np.ndarray, size: np.ndarray, s: np.ndarray) -> None:
        """``_schedule`` of flows without an upstream: only their completion can be due (the
        other kinds are never finite for them); the same operations, fewer of them."""
        with np.errstate(divide="ignore", invalid="ignore"):
            dt = np.where(r > 0, (size - s) / r, np.inf)
        due = np.flatnonzero(np.isfinite(dt))
        when = self.t + np.maximum(dt[due], 0.0)
        i = idx[due]
        seq = self._seqs(len(when)) + np.arange(len(when))
        self.flow_agenda.push(when, seq, np.full(len(when), EV_DONE), i, self.ver[i])

    def _schedule(self, idx: np.ndarray) -> None:
        """Queue the next events of flowing transfers ``idx`` (their earlier entries go stale):
        done; catching up with the bytes the upstream has delivered; the upstream passing the
        end of our bytes plus one chunk (no longer bound); the upstream passing our first byte
        plus one chunk (a blocked transfer gets data to send)."""
        idx = idx[self.status[idx] == FLOWING]
        if not len(idx):
            return
        self.ver[idx] += 1
        r = self.rate[idx]
        size = self.size[idx]
        s = self._sent_vec(idx)
        u = self.upstream[idx]
        if (u >= 0).any():
            self._schedule_pipelined(idx, r, size, s, u)
        else:
            self._schedule_done(idx, r, size, s)
        if len(self.flow_agenda) > 4 * len(self.flowing) + 4096:
            self.flow_agenda.compact(self._valid_entries)

    def _schedule_pipelined(
        self, idx: np.ndarray, r: np.ndarray, size: np.ndarray, s: np.ndarray, u: np.ndarray
    ) -> None:
        """``_schedule`` of flows some of which have an upstream (``u``, -1: none): every kind."""
        has = u >= 0
        uu = np.where(has, u, 0)
        live = has & (self.status[uu] == FLOWING)
        su = self._sent_vec(uu)
        ru = np.where(live, self.rate[uu], 0.0)
        ahead = su - self.base[idx] - self.chunk
        free = ~live | self.released[idx] | (ahead >= size * (1 - REL))
        av = np.where(free, size, np.clip(ahead, 0.0, size))
        gap = av - s
        with np.errstate(divide="ignore", invalid="ignore"):
            kinds = (
                (EV_DONE, np.where(free & (r > 0), (size - s) / r, np.inf)),
                (EV_CATCH, np.where(~free & (gap > REL * size) & (r > ru), gap / (r - ru), np.inf)),
                (EV_FREE, np.where(~free & (ru > 0), np.maximum(size - ahead, 0.0) / ru, np.inf)),
                (
                    EV_UNBLOCK,
                    np.where(
                        ~free & (ahead + REL * self.size[uu] < 0) & ~self.unblocked[idx] & (ru > 0),
                        -ahead / ru,
                        np.inf,
                    ),
                ),
            )
        due = [np.flatnonzero(np.isfinite(dt)) for _, dt in kinds]
        when = np.concatenate([self.t + np.maximum(dt[k], 0.0) for (_, dt), k in zip(kinds, due)])
        kind = np.repeat([k for k, _ in kinds], [len(k) for k in due])
        i = idx[np.concatenate(due)]
        seq = self._seqs(len(when)) + np.arange(len(when))
        self.flow_agenda.push(when, seq, kind, i, self.ver[i])

    def _schedule_one(self, i: int) -> None:
        """``_schedule`` of one flowing transfer, without arrays."""
        self.ver[i] += 1
        v = int(self.ver[i])
        r, size, s, t = float(self.rate[i]), float(self.size[i]), self._sent(i), self.t
        free, ahead, ru = self._upstream_state(i)
        heap, seq = self.flow_heap, self._seq
        if free:
            if r > 0:
                heapq.heappush(heap, (t + max((size - s) / r, 0.0), next(seq), EV_DONE, i, v))
            return
        gap = min(max(ahead, 0.0), size) - s
        if gap > REL * size and r > ru:
            heapq.heappush(heap, (t + gap / (r - ru), next(seq), EV_CATCH, i, v))
        if ru > 0:
            heapq.heappush(heap, (t + max(size - ahead, 0.0) / ru, next(seq), EV_FREE, i, v))
            if ahead + REL * self.size[self.upstream[i]] < 0 and not self.unblocked[i]:
                heapq.heappush(heap, (t - ahead / ru, next(seq), EV_UNBLOCK, i, v))

    def _compact_heap(self) -> None:
        """Drop stale entries (their transfer has newer ones, or is no longer flowing)."""
        ver, status = self.ver, self.status
        self.flow_heap = [
            e
            for e in self.flow_heap
            if e[4] == ver[e[3]] and (status[e[3]] == FLOWING or (e[2] == EV_ACTIVATE and status[e[3]] == PENDING))
        ]
        heapq.heapify(self.flow_heap)

    def _seqs(self, k: int) -> int:
        """Reserve ``k`` consecutive entry numbers (entries due at one time fire in number
        order); returns the first."""
        first = next(self._seq)
        self._seq = itertools.count(first + k)
        return first

    def _valid_entries(self, columns: Sequence[np.ndarray]) -> np.ndarray:
        """Which entries of ``flow_agenda`` (columns: time, seq, kind, transfer, version) are
        current: their transfer is flowing and has no newer entries."""
        i, v = columns[3], columns[4]
        return (self.ver[i] == v) & (self.status[i] == FLOWING)

    def _valid(self, entry: tuple) -> bool:
        _, _, kind, i, v = entry
        if v != self.ver[i]:
            return False
        if kind == EV_ACTIVATE:
            return bool(self.status[i] == PENDING) and i in self.waiting_upstream
        return bool(self.status[i] == FLOWING)

    def _next_events(self) -> tuple[float, np.ndarray, list[int], list[str]]:
        """Time to the next event, and the events due then: flow events (kinds and transfers,
        in firing order), phase ends, senders that may inject. Events within 1e-12
        (relative) of the first are taken together."""
        fh, ph, ih = self.flow_heap, self.phase_heap, self.inject_heap
        while fh and not self._valid(fh[0]):
            heapq.heappop(fh)
        while ph and self.status[ph[0][1]] != ph[0][2]:
            heapq.heappop(ph)
        while ih and ih[0][1] not in self.busy_senders:
            heapq.heappop(ih)
        first = min(
            fh[0][0] if fh else math.inf,
            self.flow_agenda.first(self._valid_entries),
            ph[0][0] if ph else math.inf,
            ih[0][0] if ih else math.inf,
        )
        if not math.isfinite(first):
            return math.inf, np.zeros((2, 0), dtype=np.int64), [], []
        dt = max(first - self.t, 0.0)
        limit = self.t + dt + dt * 1e-12 + 1e-300
        hits = []
        while fh and fh[0][0] <= limit:
            e = heapq.heappop(fh)
            if self._valid(e):
                hits.append(e)
        phases = []
        while ph and ph[0][0] <= limit:
            _, i, phase = heapq.heappop(ph)
            if self.status[i] == phase:
                phases.append(i)
        senders = []
        while ih and ih[0][0] <= limit:
            _, src = heapq.heappop(ih)
            if src in self.busy_senders:
                senders.append(src)
        return dt, self._flow_hits(hits, limit), phases, senders

    def _flow_hits(self, from_heap: list[tuple], limit: float) -> np.ndarray:
        """The current flow events due by ``limit``, those popped from the heap and those of
        the agenda, as (kinds, transfers) in firing order (time, then entry number)."""
        due = self.flow_agenda.pop_until(limit)
        if due is None and not from_heap:
            return np.zeros((2, 0), dtype=np.int64)
        columns = [np.array(c) for c in zip(*from_heap)] if from_heap else []
        if due is not None:
            valid = self._valid_entries(due)
            due = [c[valid] for c in due]
            columns = [np.concatenate(pair) for pair in zip(columns, due)] if columns else due
        when, seq, kind, i, _ = columns
        order = np.lexsort((seq, when))
        return np.stack((kind[order], i[order])).astype(np.int64)


class Agenda:
    """Entries (a time, then columns) pushed many at a time and taken out when due: each
    push is one run sorted by time, and a heap holds the runs by their earliest entry not yet
    taken, so a thousand entries cost a few array operations, not a thousand heap pushes.
    Entries due at one time come out in no particular order."""

    def __init__(self) -> None:
        self._runs: list[tuple] = []  # (earliest time not taken, push number, its position, run)
        self._pushes = itertools.count()
        self._size = 0  # entries not taken

    def __len__(self) -> int:
        return self._size

    def push(self, when: np.ndarray, *columns: np.ndarray) -> None:
        """Add entries: their times ``when`` and as many columns."""
        if len(when):
            order = np.argsort(when, kind="stable")
            self._add((when[order], *(c[order] for c in columns)), 0)
            self._size += len(when)

    def _add(self, run: tuple, start: int) -> None:
        """(Re)insert ``run``, its entries from ``start`` on not taken yet."""
        if start < len(run[0]):
            heapq.heappush(self._runs, (float(run[0][start]), next(self._pushes), start, run))

    def first(self, valid: Callable[[Sequence[np.ndarray]], np.ndarray]) -> float:
        """Time of the earliest entry that ``valid`` (columns -> bools) keeps, dropping the
        entries before it (inf: none)."""
        window = 16
        while self._runs:
            _, _, start, run = self._runs[0]
            end = min(start + window, len(run[0]))
            keep = valid([c[start:end] for c in run])
            if keep[0]:
                return float(run[0][start])
            skip = int(np.argmax(keep)) if keep.any() else end - start
            heapq.heappop(self._runs)
            self._size -= skip
            self._add(run, start + skip)
            window = 16 if keep.any() else 2 * window
        return math.inf

    def pop_until(self, limit: float) -> list[np.ndarray] | None:
        """Every entry due by ``limit`` (time <= limit), as columns (time first); None if none."""
        parts = []
        while self._runs and self._runs[0][0] <= limit:
            _, _, start, run = heapq.heappop(self._runs)
            end = start + int(np.searchsorted(run[0][start:], limit, side="right"))
            parts.append([c[start:end] for c in run])
            self._size -= end - start
            self._add(run, end)
        return [np.concatenate(c) for c in zip(*parts)] if parts else None

    def compact(self, valid: Callable[[Sequence[np.ndarray]], np.ndarray]) -> None:
        """Drop every entry ``valid`` rejects, merging the others into one run."""
        runs, self._runs = self._runs, []
        if runs:
            columns = [np.concatenate(c) for c in zip(*([c[start:] for c in run] for _, _, start, run in runs))]
            keep = valid(columns)
            self._size = 0
            self.push(*(c[keep] for c in columns))
