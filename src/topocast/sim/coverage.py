"""Coverage bookkeeping of the simulator: what each host holds and when it holds every byte
it wants (docs/design.md, "Simulator").

* A host holds a byte from the moment any transfer delivers it; its completion time is when
  it holds every byte it wants. For hosts that receive some bytes twice (relays of Stable
  Broadcast), this is found between events from the linear progress of the transfers.
* What a host holds is merged only when asked about, and hosts posing the same coverage
  problem share one answer.

``Coverage`` is a mixin of the simulator (``engine._Sim``): the state machine reports
transfers whose progress changed (``_stale``, ``_stale_all``) and hosts that received bytes
(``_received``); the loop asks it to queue (``_schedule_coverage``) and credit
(``_credit_covered``) mid-transfer coverage; ``_held`` answers whether a sender holds bytes.
"""

from __future__ import annotations

import itertools

import numpy as np

from ..intervals import IntervalSet, inside_grouped, merge_grouped, overlaps_grouped
from ..plan import Plan
from ..plan.graph import csr_rows
from .agenda import Agenda
from .room import Room
from .state import DONE, FLOWING, REL, sorted_distinct


class Coverage(Room):
    """Holdings, wanted bytes and completion times of the hosts (a mixin of ``_Sim``)."""

    def _init_coverage(self, plan: Plan) -> None:
        # each byte sequence's ranges: position of each range in its sequence
        arrays = self.arrays
        before = np.cumsum(arrays.seq_len) - arrays.seq_len  # bytes of all earlier ranges
        self.seq_pos = before - np.repeat(before[arrays.seq_ptr[:-1]], np.diff(arrays.seq_ptr))
        self._hosts(plan)

    def _hosts(self, plan: Plan) -> None:
        """Holdings, wanted bytes, and how each host's completion is detected."""
        arrays = self.arrays
        self.wanted = dict(plan.wanted)
        self.wanted_bytes = {h: sum(ln for _, ln in rs) for h, rs in plan.wanted.items()}
        self.host_done: dict[str, float] = {}
        self.allreduce = plan.collective == "allreduce"
        self.host_id = arrays.host_id
        self.host_name = names = arrays.host_name
        self.dst_id = arrays.dst
        wanted_ids = np.array([self.host_id[h] for h in self.wanted], dtype=np.int64)
        self.wants = np.zeros(len(names), dtype=bool)
        self.wants[wanted_ids] = True
        self.is_done = np.zeros(len(names), dtype=bool)
        distinct = {rs: IntervalSet(rs).total for rs in set(plan.wanted.values())}
        self.wanted_distinct = np.zeros(len(names))
        self.wanted_distinct[wanted_ids] = [distinct[rs] for rs in self.wanted.values()]
        self._holdings(plan)
        # incoming transfers not yet done, per host id (all of them; those carrying bytes)
        self.left_all = np.bincount(self.dst_id, minlength=len(names))
        self.left_bytes = np.bincount(self.dst_id[self.size > 0], minlength=len(names))
        # Hosts that may be credited mid-transfer (bytes received twice, already held or
        # not wanted).
        self.is_redundant = np.zeros(len(names), dtype=bool)
        if not self.allreduce:
            self.is_redundant[wanted_ids] = ~self._exact_once(plan, wanted_ids)
        self.redundant = {names[k] for k in np.flatnonzero(self.is_redundant).tolist()}
        self.host_ver = np.zeros(len(names), dtype=np.int64)
        self.stale_hosts: set[int] = set()
        self.cover_agenda = Agenda()  # (time, host id, version, exact)

    def _holdings(self, plan: Plan) -> None:
        """What each host holds, merged when asked about (``_held``): completing a transfer
        only counts it, so a batch of completions costs arrays, not interval merges."""
        n_hosts = len(self.host_name)
        self.held = [IntervalSet(plan.initial.get(h, ())) for h in self.host_name]
        self.held_total = np.array([held.total for held in self.held], dtype=float)  # distinct bytes merged
        self.unmerged_bytes = np.zeros(n_hosts)  # bytes of completed transfers not merged yet
        self.done_in = np.zeros(n_hosts, dtype=np.int64)  # completed incoming transfers
        self.merged_in = np.zeros(n_hosts, dtype=np.int64)  # of those, merged
        self.is_merged = np.zeros(self.n, dtype=bool)

    def _exact_once(self, plan: Plan, hosts: np.ndarray) -> np.ndarray:
        """Per host of ``hosts`` (ids): every byte it receives is wanted, arrives once and is
        not held from the start; then it completes exactly when its last incoming transfer
        does. A host receiving more bytes than it wants is not one; the others' deliveries
        are merged."""
        arrays = self.arrays
        n_hosts = len(self.host_name)
        received = np.bincount(self.dst_id, weights=self.size, minlength=n_hosts)
        candidates = hosts[received[hosts] <= self.wanted_distinct[hosts]]
        into = arrays.incoming_idx[csr_rows(arrays.incoming_ptr, candidates)[0]]
        pos, counts = csr_rows(arrays.seq_ptr, arrays.seq_of[into])
        g = np.repeat(self.dst_id[into], counts)
        g, s, e = merge_grouped(g, arrays.seq_off[pos], arrays.seq_off[pos] + arrays.seq_len[pos])
        ok = np.bincount(g, weights=e - s, minlength=n_hosts) == received

        def host_ranges(by_host):
            names = (self.host_name[h] for h in candidates.tolist())
            items = [(self.host_id[h], off, off + ln) for h in names for off, ln in by_host.get(h, ())]
            arr = np.array(items, dtype=np.int64).reshape(-1, 3)
            return merge_grouped(arr[:, 0], arr[:, 1], arr[:, 2])

        # every received interval lies inside one wanted interval of its host, and meets none
        # of the host's initial intervals
        bad = ~inside_grouped(g, s, e, host_ranges(self.wanted)) | overlaps_grouped(g, s, e, host_ranges(plan.initial))
        ok &= np.bincount(g[bad], minlength=n_hosts) == 0
        exact = np.zeros(n_hosts, dtype=bool)
        exact[candidates] = ok[candidates]
        return exact[hosts]

    def _stale(self, i: int) -> None:
        """Transfer ``i``'s progress changed: its receiver's coverage time must be recomputed."""
        h = self.dst_id[i]
        if self.is_redundant[h]:
            self.stale_hosts.add(int(h))

    def _stale_all(self, idx: np.ndarray) -> None:
        """``_stale`` of every transfer of ``idx``."""
        h = self.dst_id[idx]
        self.stale_hosts.update(h[self.is_redundant[h]].tolist())

    def _received(self, hosts: list[int]) -> None:
        """Hosts (ids, ascending) that received bytes: transfers waiting for their data may
        start, and they may be complete."""
        for h in [h for h in hosts if h in self.waiting_data]:
            before = self.held_total[h]
            if self._held(h).total != before:
                self.to_check.extend(sorted(self.waiting_data.pop(h)))
        self._check_hosts(np.asarray(hosts, dtype=np.int64))

    def _held(self, h: int) -> IntervalSet:
        """What host ``h`` (id) holds: its initial bytes and those of every completed transfer
        into it, the completions since the last call merged now."""
        held = self.held[h]
        if self.done_in[h] > self.merged_in[h]:
            into = self.arrays.incoming(h)
            new = into[(self.status[into] == DONE) & ~self.is_merged[into]]
            self.is_merged[new] = True
            sequences = self.arrays.sequences
            held.add_ranges(list(itertools.chain.from_iterable(sequences[k] for k in self.arrays.seq_of[new].tolist())))
            self.merged_in[h] = self.done_in[h]
            self.held_total[h] = held.total
            self.unmerged_bytes[h] = 0.0
        return held

    def _check_hosts(self, hosts: np.ndarray) -> None:
        """Of ``hosts`` (ids), credit those that now hold every byte they want."""
        hosts = hosts[self.wants[hosts] & ~self.is_done[hosts]]
        if self.allreduce:
            for h in hosts[self.left_all[hosts] == 0].tolist():
                self._credit(h, self.t)
            return
        # a host that receives every byte once is not covered before its last one arrives;
        # the others cannot be before they may hold every wanted byte
        may = np.where(
            self.is_redundant[hosts],
            self.held_total[hosts] + self.unmerged_bytes[hosts] >= self.wanted_distinct[hosts] * (1 - REL),
            self.left_bytes[hosts] == 0,
        )
        for h in hosts[may].tolist():
            if self._held(h).covers_ranges(self.wanted[self.host_name[h]]):
                self._credit(h, self.t)

    def _credit(self, h: int, when: float) -> None:
        """Host ``h`` (id) holds every byte it wants from time ``when``."""
        self.host_done[self.host_name[h]] = when
        self.is_done[h] = True

    def _schedule_coverage(self) -> None:
        """For the hosts whose incoming progress changed: when they may next be covered.

        A host cannot hold every wanted byte before what it holds plus what its flowing
        transfers deliver reaches its distinct wanted bytes; that lower bound is queued, and
        the exact time (``_coverage_times``) is computed only once the bound is passed."""
        if not self.stale_hosts:
            return
        hs = np.fromiter(self.stale_hosts, dtype=np.int64, count=len(self.stale_hosts))
        self.stale_hosts = set()
        self.host_ver[hs] += 1
        hs = hs[~self.is_done[hs]]
        live, owner = self._flowing_into(hs)
        delivered = np.bincount(owner, weights=self._sent_vec(live), minlength=len(hs))
        speed = np.bincount(owner, weights=self.rate[live], minlength=len(hs))
        held = self.held_total[hs] + self.unmerged_bytes[hs]
        deficit = self.wanted_distinct[hs] * (1 - REL) - held - delivered
        with np.errstate(divide="ignore", invalid="ignore"):
            when = np.where(deficit <= 0, self.t, self.t + deficit / speed)
        due = (np.bincount(owner, minlength=len(hs)) > 0) & ((deficit <= 0) | (speed > 0))
        self.cover_agenda.push(when[due], hs[due], self.host_ver[hs[due]], np.zeros(int(due.sum()), dtype=bool))

    def _flowing_into(self, hosts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The flowing transfers into ``hosts`` (ids), each host's in plan order, and the
        position in ``hosts`` of each one's receiver."""
        pos, counts = csr_rows(self.arrays.incoming_ptr, hosts)
        into = self.arrays.incoming_idx[pos]
        flowing = self.status[into] == FLOWING
        return into[flowing], np.repeat(np.arange(len(hosts)), counts)[flowing]

    def _credit_covered(self, t_prev: float) -> None:
        """Credit hosts that hold everything through partial progress, by time ``self.t``
        (the rates have not changed since ``t_prev``)."""
        due = self.cover_agenda.pop_until(self.t)
        if due is None:
            return
        when, hosts, ver, exact = due
        valid = (ver == self.host_ver[hosts]) & ~self.is_done[hosts]
        for h, w in zip(hosts[valid & exact].tolist(), when[valid & exact].tolist()):
            self._credit(h, w)
        hosts = hosts[valid & ~exact]
        if not len(hosts):
            return
        times = self._coverage_times(hosts, t_prev)
        covered = times <= self.t
        for h, w in zip(hosts[covered].tolist(), times[covered].tolist()):
            self._credit(h, w)
        later = ~covered & np.isfinite(times)
        self.cover_agenda.push(times[later], hosts[later], self.host_ver[hosts[later]], np.ones(int(later.sum()), bool))

    def _coverage_times(self, hosts: np.ndarray, t0: float) -> np.ndarray:
        """Per host of ``hosts`` (ids): the earliest time >= ``t0`` at which it holds every
        wanted byte, its flowing transfers progressing from where they were at ``t0`` at their
        current rates (inf: never; nan: no transfer into it is flowing).

        Hosts that miss the same bytes and receive the same sequences at the same progress and
        rates get the same time, computed once: the hops of a pipelined tree progress alike,
        so thousands of hosts often pose a handful of distinct problems."""
        live, owner = self._flowing_into(hosts)
        sent = self.sent0[live] + self.rate[live] * (t0 - self.t0[live])
        # each host's flowing transfers (in plan order) as bytes: sequence, progress and rate
        rows = np.stack((self.arrays.seq_of[live], sent.view(np.int64), self.rate[live].view(np.int64)), axis=1)
        ends = np.searchsorted(owner, np.arange(len(hosts) + 1))
        times = np.full(len(hosts), np.nan)
        solved: dict[tuple, float] = {}
        for k in np.flatnonzero(ends[1:] > ends[:-1]).tolist():
            a, b = ends[k], ends[k + 1]
            missing = self._missing(int(hosts[k]))
            problem = (tuple(missing), rows[a:b].tobytes())
            if problem not in solved:
                solved[problem] = self._coverage_time(missing, live[a:b], t0, sent[a:b])
            times[k] = solved[problem]
        return times

    def _coverage_time(self, missing: list[tuple], live: np.ndarray, t0: float, sent0: np.ndarray) -> float:
        """Earliest time >= ``t0`` at which a host missing the bytes ``missing`` (sorted,
        disjoint (start, end)) holds them all, its ``live`` transfers progressing from
        ``sent0`` (aligned with ``live``) at their current rates (inf: never).

        A transfer delivers its ranges in order, so the byte just before position ``e`` of a
        range that starts at sequence offset ``c`` arrives when its progress reaches
        ``c + (e - start)``. On an elementary interval of the missing bytes (no range
        boundary inside), each covering transfer's arrival time grows with the position, so
        the interval is complete when its last byte arrives by the fastest transfer; the host
        is complete when its last interval is.
        """
        if not missing:
            return t0
        pos, counts = csr_rows(self.arrays.seq_ptr, self.arrays.seq_of[live])
        p_start = self.arrays.seq_off[pos].astype(float)
        p_end = p_start + self.arrays.seq_len[pos]
        p_shift = self.seq_pos[pos] - p_start  # sequence position of absolute position x: x + shift
        p_rate = np.repeat(self.rate[live], counts)
        p_sent = np.repeat(np.asarray(sent0, dtype=float), counts)
        ms = np.asarray([a for a, _ in missing], dtype=float)
        me = np.asarray([b for _, b in missing], dtype=float)
        cuts = sorted_distinct(np.concatenate((p_start, p_end, ms, me)))
        hi = cuts[1:]
        mid = 0.5 * (cuts[:-1] + hi)
        k = np.searchsorted(ms, mid, side="right") - 1
        inside = (k >= 0) & (mid < me[np.clip(k, 0, None)])
        # each range covers a run of elementary intervals (its ends are cuts); expand the
        # (interval, range) pairs of those runs and keep each interval's earliest arrival
        first = np.searchsorted(cuts, p_start)
        runs = np.searchsorted(cuts, p_end) - first
        piece = np.repeat(np.arange(len(first)), runs)
        interval = first[piece] + np.arange(len(piece)) - np.repeat(np.cumsum(runs) - runs, runs)
        need = hi[interval] + (p_shift - p_sent)[piece]
        rate = p_rate[piece]
        with np.errstate(divide="ignore", invalid="ignore"):
            wait = np.where(need <= 0, 0.0, np.where(rate > 0, need / rate, np.inf))
        arrival = np.full(len(hi), np.inf)
        np.minimum.at(arrival, interval, wait)
        arrival = arrival[inside]
        return t0 + float(arrival.max()) if arrival.size else t0

    def _missing(self, h: int) -> list[tuple]:
        """The wanted bytes host ``h`` (id) does not hold, as sorted disjoint (start, end)."""
        held = self._held(h)
        gaps = IntervalSet()
        for off, length in self.wanted[self.host_name[h]]:
            for a, b in held.missing(off, off + length):
                gaps.add(a, b)
        return list(zip(gaps.starts, gaps.ends))
