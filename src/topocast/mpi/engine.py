"""Performing a :class:`~topocast.plan.Plan` over MPI point-to-point messages.

Every rank runs one single-threaded progress loop over its own transfers (docs/design.md,
"Plan"; the same reading of a plan as the TCP agents in ``topocast.runtime.agent``):

* an outgoing transfer starts when the transfers in its ``after`` list have completed
  (a completion elsewhere is announced by the receiving rank with a small message) and,
  store-and-forward, when this rank holds every byte it sends;
* it is cut into chunks (:func:`chunks_of`) and each chunk is an ``Isend``; a
  pipelined transfer sends a chunk as soon as this rank holds it, so a relay forwards what it
  received and never gets ahead of its upstream; at most ``WINDOW`` chunks per transfer are
  in flight;
* ``rate_cap`` is a token bucket per transfer (``runtime.pacing.RoundRobin`` with one
  member), polled by the loop: MPI itself has no pacing;
* an incoming transfer keeps ``WINDOW`` ``Irecv`` s posted, one per chunk, in order: MPI keeps
  the order of messages with one (source, tag), and every transfer between two ranks has its
  own tag.

Allreduce plans (``reduce=True`` transfers) follow the semantics of
:mod:`topocast.plan.check_allreduce`: a transfer reads its sender's bytes when it starts and writes
into its receiver when it completes (a reduction combines ``receiver = receiver op received``,
a plain transfer copies). Their ranges must fall on element boundaries.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from ..errors import TopocastError
from ..intervals import IntervalSet
from ..plan import Plan
from ..runtime.pacing import RoundRobin, pacer_burst

if TYPE_CHECKING:
    from mpi4py import MPI

    from ..topology import Topology

__all__ = [
    "MPIRunError",
    "RankStats",
    "perform_local",
    "chunk_for",
    "without_loose_caps",
    "wait_for",
    "WINDOW",
    "NOTIFY_TAG",
]

WINDOW = 8  # chunks in flight per transfer (sends) and posted receives per transfer
NOTIFY_TAG = 0  # "transfer j completed" messages; data tags start at 1
# Waiting for requests: poll and sleep (backing off from IDLE_MIN to IDLE_MAX seconds) rather
# than block in MPI's Waitsome, which spins: with more ranks than cores (several ranks per
# machine) a spinning rank takes the core a rank with work to do needs.
YIELD = True
SPIN = 1e-3  # but first poll without sleeping for this long after the last completion: MPI's
# handshakes (rendezvous of large messages) move only while both ranks are inside MPI calls.
# Not on a crowded machine (more ranks than the cores they may use together,
# ``CommState.crowded``): there the rank we wait for needs our core.
IDLE_MIN = 20e-6
IDLE_MAX = 2e-4


class MPIRunError(TopocastError, ValueError):
    """A collective or a plan that cannot be performed on this job. Raised with the same
    message on every rank of the communicator, which stays usable."""


def wait_for(request: MPI.Request, crowded: bool) -> None:
    """Wait until ``request`` completes: MPI's own ``Wait`` (it spins) when the ranks have a
    core each, else poll and sleep, backing off from ``IDLE_MIN`` to ``IDLE_MAX``, so that the
    ranks we wait for get the cores (a collective waits for the slowest rank)."""
    if not crowded:
        request.Wait()
        return
    idle = 0.0
    while not request.Test():
        idle = min(max(idle * 2, IDLE_MIN), IDLE_MAX)
        time.sleep(idle)


def chunk_for(plan: Plan, default: int) -> int:
    """Chunk size: the plan's, else ``default``. A small message is not cut finer to
    pipeline it through relays (each MPI message costs a few rounds of the progress loop),
    nor a large one coarser: larger chunks measured no better (docs/experiments/mpi.md,
    "Why the uniform-2switch broadcast was slow")."""
    return int(plan.chunk_size or default)


def without_loose_caps(plan: Plan, topology: Topology) -> Plan:
    """``plan`` without the rate caps that cannot bind: a cap at or above the bandwidth of the
    slowest link its transfer crosses. Pacing is not free here: the progress loop hands out
    a chunk at a time, and a rank that waits for a core loses the credit of that wait, so
    a chain paced at its links' own rate runs slower than the same chain unpaced
    (docs/experiments/mpi.md, "How the plan is performed")."""
    loose = set()
    for i, t in enumerate(plan.transfers):
        if t.rate_cap is None or t.src not in topology.hosts or t.dst not in topology.hosts:
            continue
        links = topology.route(t.src, t.dst) if t.path is None else topology.path_links(t.path)
        if links and t.rate_cap >= float(topology.link_bandwidth[list(links)].min()):
            loose.add(i)
    if not loose:
        return plan
    return replace(
        plan, transfers=tuple(replace(t, rate_cap=None) if i in loose else t for i, t in enumerate(plan.transfers))
    )


@dataclass
class RankStats:
    """What one rank measured (seconds from the start of :func:`perform_local`)."""

    t0: float = 0.0  # time.monotonic() at the start (one clock for every rank of a machine)
    completed: float | None = None  # when this rank held every byte it wants (None: wants nothing)
    transfer_times: dict[int, tuple[float, float]] = field(default_factory=dict)  # incoming: first, last byte


@dataclass
class _Out:
    index: int
    dst: int
    tag: int
    chunks: list
    pipelined: bool
    after: set
    bucket: RoundRobin | None
    ranges: tuple
    next: int = 0
    inflight: int = 0
    started: bool = False
    source: np.ndarray | None = None  # the bytes sent (a snapshot for allreduce transfers)
    offsets: list = field(default_factory=list)  # chunk start within ``source``
    waiting: bool = False  # asked the bucket for the next chunk
    frozen: list = field(default_factory=list)  # (offset, bytes) this transfer must read as they were


@dataclass
class _In:
    index: int
    src: int
    tag: int
    chunks: list
    reduce: bool
    ranges: tuple
    posted: int = 0
    received: int = 0
    tmp: np.ndarray | None = None
    offsets: list = field(default_factory=list)
    first: float | None = None
    discard: bool = False  # bytes this rank held from the start (a root's own, read-only)


def chunks_of(ranges: Iterable[tuple[int, int]], chunk: int) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of each piece of at most ``chunk`` bytes of ``ranges``, in order."""
    for off, length in ranges:
        for a in range(off, off + length, chunk):
            yield a, min(a + chunk, off + length)


def _tags(plan: Plan) -> list[int]:
    """Per transfer, a tag unique among the transfers between the same two hosts."""
    seen: dict[tuple[str, str], int] = {}
    tags = []
    for t in plan.transfers:
        k = seen.get((t.src, t.dst), 0) + 1
        seen[(t.src, t.dst)] = k
        tags.append(k)
    return tags


def _notify_targets(plan: Plan, rank_of: dict[str, int]) -> dict[int, set[int]]:
    """Transfer j -> ranks (other than j's receiver) that wait for j in an ``after`` list."""
    out: dict[int, set[int]] = {}
    for t in plan.transfers:
        for j in t.after:
            r = rank_of[t.src]
            if r != rank_of[plan.transfers[j].dst]:
                out.setdefault(j, set()).add(r)
    return out


def _offsets(chunks) -> list[int]:
    out, pos = [], 0
    for a, b in chunks:
        out.append(pos)
        pos += b - a
    return out


def perform_local(
    comm: MPI.Comm,
    plan: Plan,
    buf: np.ndarray,
    rank_of: dict[str, int],
    *,
    chunk: int,
    reduce: Callable[[np.ndarray, np.ndarray], None] | None = None,
    crowded: bool = False,
) -> RankStats:
    """This rank's part of ``plan`` on ``comm`` (every rank of the plan calls it together).

    ``buf``: the message as a writable uint8 array of ``plan.size`` bytes (read-only is fine
    on a rank that only sends); ``rank_of``: host -> rank; ``reduce(dst, src)``: combines the
    uint8 views ``src`` into ``dst`` (allreduce plans); ``crowded``: ``CommState.crowded``,
    more ranks on this machine than the cores they may use together (then sleep between
    polls at once, never spin: see ``SPIN``). Assumes the plan was checked.
    """
    me = comm.Get_rank()
    host = next((h for h, r in rank_of.items() if r == me), None)
    stats = RankStats(t0=time.monotonic())
    if host is None:
        return stats
    stats.t0 = time.monotonic()
    rank = _RankRun(comm, plan, buf, rank_of, host, chunk, reduce, stats)
    rank.post_first_receives()
    rank.complete_now()
    rank.progress(0.0 if crowded else SPIN)
    rank.complete_now()
    return stats


class _RankRun:
    """One rank's progress loop over its transfers (the steps of the module's description):
    the MPI requests in flight, each with the handler to call when it completes."""

    def __init__(
        self,
        comm: MPI.Comm,
        plan: Plan,
        buf: np.ndarray,
        rank_of: dict[str, int],
        host: str,
        chunk: int,
        reduce: Callable[[np.ndarray, np.ndarray], None] | None,
        stats: RankStats,
    ):
        from mpi4py import MPI

        self.mpi, self.comm, self.plan, self.buf, self.reduce = MPI, comm, plan, buf, reduce
        self.rank_of, self.stats, self.t0 = rank_of, stats, stats.t0
        self.notify_to = _notify_targets(plan, rank_of)
        self.is_reduce = any(t.reduce for t in plan.transfers)
        self.held = IntervalSet(plan.initial.get(host, ()))
        self.wanted = plan.wanted.get(host, ())
        self.done: set[int] = set()  # transfers known to have completed
        self.outs, self.ins = self._transfers(host, chunk)
        self.reqs: list = []  # MPI requests in flight
        self.handlers: list = []  # what to do when the request at the same index completes
        self.note_bufs: list = []  # completion notes' buffers, kept alive while MPI uses them
        self.ancestors = _ancestors_of(plan) if self.is_reduce else []

    def _transfers(self, host: str, chunk: int) -> tuple[list[_Out], list[_In]]:
        """This rank's outgoing and incoming transfers, cut into chunks."""
        plan, rank_of = self.plan, self.rank_of
        tags = _tags(plan)
        initially = IntervalSet(plan.initial.get(host, ()))
        outs: list[_Out] = []
        ins: list[_In] = []
        for i, t in enumerate(plan.transfers):
            if t.src != host and t.dst != host:
                continue  # another rank's transfer: not cut into chunks here
            chunks = list(chunks_of(t.ranges, chunk))
            if t.src == host:
                # a bucket of a few ms' worth would lose credit whenever this rank waits for a core
                bucket = RoundRobin(t.rate_cap, pacer_burst(t.rate_cap, chunk), self.t0) if t.rate_cap else None
                outs.append(_Out(i, rank_of[t.dst], tags[i], chunks, t.pipelined, set(t.after), bucket, t.ranges))
            if t.dst == host:
                # a broadcast plan may send a rank bytes it started with (the root's own): they
                # are received into scratch, as the caller's buffer there may be read-only
                discard = not self.is_reduce and initially.covers_ranges(t.ranges)
                ins.append(_In(i, rank_of[t.src], tags[i], chunks, t.reduce, t.ranges, discard=discard))
        return outs, ins

    def post(self, req, handler) -> None:
        self.reqs.append(req)
        self.handlers.append(handler)

    def post_first_receives(self) -> None:
        """Post the first receives of every incoming transfer now (before anyone sends, so
        eager messages land), and one receive per completion announced to this rank."""
        for x in self.ins:
            if self.is_reduce or x.discard:
                x.tmp = np.empty(sum(b - a for a, b in x.chunks), dtype=np.uint8)
                x.offsets = _offsets(x.chunks)
            if not x.chunks:
                self.transfer_done(x.index)
            self.post_recvs(x)
        # the completions announced to this rank, by announcing rank: each is received from its
        # own sender, never from any source, since a rank that finished this call may already
        # announce the next call's completions (a predicted call starts without a barrier)
        me, transfers = self.comm.Get_rank(), self.plan.transfers
        awaited = {j for o in self.outs for j in o.after if self.rank_of[transfers[j].dst] != me}
        notes_from: dict[int, int] = {}
        for j in awaited:
            r = self.rank_of[transfers[j].dst]
            notes_from[r] = notes_from.get(r, 0) + 1
        for source, n in sorted(notes_from.items()):
            for _ in range(n):
                self.post_note_recv(source)

    def post_note_recv(self, source: int) -> None:
        nb = np.zeros(1, dtype=np.int64)
        self.note_bufs.append(nb)
        req = self.comm.Irecv([nb, self.mpi.INT64_T], source=source, tag=NOTIFY_TAG)
        self.post(req, lambda nb=nb: self.done.add(int(nb[0])))

    def transfer_done(self, i: int) -> None:
        """Transfer ``i`` (incoming) completed: announce it to the ranks that wait for it."""
        self.done.add(i)
        for r in sorted(self.notify_to.get(i, ())):
            note = np.array([i], dtype=np.int64)
            self.note_bufs.append(note)  # alive until the send completes
            self.post(self.comm.Isend([note, self.mpi.INT64_T], dest=r, tag=NOTIFY_TAG), lambda: None)

    def post_recvs(self, x: _In) -> None:
        """Keep up to ``WINDOW`` receives of ``x`` posted, in chunk order."""
        buf, byte = self.buf, self.mpi.BYTE
        while x.posted < len(x.chunks) and x.posted - x.received < WINDOW:
            k = x.posted
            a, b = x.chunks[k]
            target = x.tmp[x.offsets[k] : x.offsets[k] + b - a] if x.tmp is not None else buf[a:b]
            self.post(self.comm.Irecv([target, byte], source=x.src, tag=x.tag), lambda x=x, k=k: self.on_recv(x, k))
            x.posted += 1

    def on_recv(self, x: _In, k: int) -> None:
        now = time.monotonic() - self.t0
        if x.first is None:
            x.first = now
        x.received += 1
        if x.tmp is None:
            a, b = x.chunks[k]
            self.held.add(a, b)
        if x.received == len(x.chunks):
            if x.tmp is not None and not x.discard:  # allreduce: the transfer writes into its receiver now
                self.write_received(x)
            self.stats.transfer_times[x.index] = (x.first, now)
            self.transfer_done(x.index)
        else:
            self.post_recvs(x)

    def write_received(self, x: _In) -> None:
        """An allreduce transfer that completed writes into its receiver: combined with the
        receiver's bytes (a reduction) or copied."""
        buf, received = self.buf, x.tmp
        assert received is not None  # an allreduce transfer receives into scratch
        self.freeze_before_write(x)
        off = 0  # whole ranges, not chunks: a chunk may end inside an element
        for a, n in x.ranges:
            part = received[off : off + n]
            if x.reduce:
                assert self.reduce is not None  # callers pass it with every allreduce plan
                self.reduce(buf[a : a + n], part)
            else:
                buf[a : a + n] = part
            off += n

    def freeze_before_write(self, x: _In) -> None:
        """Keep, for every transfer of ours that has not started and does not descend from
        ``x``, the bytes ``x`` is about to overwrite: such a transfer reads the value from
        when its ``after`` predecessors completed (check_allreduce), which came before ``x``
        completed even if their completion reaches this rank later than ``x``'s data."""
        buf = self.buf
        for o in self.outs:
            if o.started or x.index in self.ancestors[o.index]:
                continue
            for a, n in x.ranges:
                for c, m in o.ranges:
                    lo, hi = max(a, c), min(a + n, c + m)
                    if lo < hi:
                        o.frozen.append((lo, buf[lo:hi].copy()))

    def start(self, o: _Out) -> bool:
        """Whether ``o`` has started (starting it when its ``after`` list completed and,
        store-and-forward, this rank holds every byte it sends)."""
        if o.started:
            return True
        if not o.after <= self.done:
            return False
        if not o.pipelined and not self.held.covers_ranges(o.ranges):
            return False
        o.started = True
        if self.is_reduce:  # the transfer reads its sender's value now (check_allreduce)
            buf = self.buf
            o.source = np.concatenate([buf[a:b] for a, b in o.chunks]) if o.chunks else buf[:0]
            o.offsets = _offsets(o.chunks)
            _overlay(o)
        if not o.chunks:
            o.next = len(o.chunks) + 1  # marks the transfer as fully handed to MPI
        return True

    def pump(self, o: _Out, now: float) -> float:
        """Issue what ``o`` may send now; return how long until its bucket allows more."""
        wait = math.inf
        held, buf = self.held, self.buf
        while o.next < len(o.chunks) and o.inflight < WINDOW:
            a, b = o.chunks[o.next]
            if not held.covers(a, b) and o.source is None:
                break  # pipelined: the upstream has not delivered this chunk yet
            if o.bucket is not None:
                if not o.waiting:
                    o.bucket.ready(o.index, b - a)
                    o.waiting = True
                got, wait = o.bucket.poll(now)
                if got is None:
                    break
                o.waiting = False
            if o.source is not None:
                off = o.offsets[o.next]
                data = o.source[off : off + b - a]
            else:
                data = buf[a:b]
            self.post(self.comm.Isend([data, self.mpi.BYTE], dest=o.dst, tag=o.tag), lambda o=o: _on_sent(o))
            o.inflight += 1
            o.next += 1
            wait = math.inf
        return wait

    def complete_now(self) -> None:
        stats = self.stats
        if (
            stats.completed is None
            and self.wanted
            and (self.is_reduce and _all_in(self.ins, self.done) or self.held.covers_ranges(self.wanted))
        ):
            stats.completed = time.monotonic() - self.t0

    def progress(self, spin: float) -> None:
        """The loop: start and pump the outgoing transfers, then handle the requests that
        completed, until every transfer of this rank is done (polling without sleep for
        ``spin`` seconds after each completion)."""
        MPI, reqs, handlers, outs, ins = self.mpi, self.reqs, self.handlers, self.outs, self.ins
        idle, last_progress = 0.0, self.t0
        while True:
            now = time.monotonic()
            wait = math.inf
            for o in outs:
                if o.next <= len(o.chunks) and self.start(o):
                    wait = min(wait, self.pump(o, now))
            self.complete_now()
            if not reqs and all(o.next >= len(o.chunks) and o.inflight == 0 for o in outs):
                if all(x.received == len(x.chunks) for x in ins):
                    break
            if not reqs:
                # nothing in flight but a transfer waits: only its bucket can make progress
                time.sleep(min(max(wait, 0.0), 0.01) if math.isfinite(wait) else 0.001)
                continue
            if YIELD or math.isfinite(wait):
                idx = MPI.Request.Testsome(reqs)
                if not idx:
                    # back off so that ranks sharing our cores run (MPI's own wait spins)
                    if now - last_progress >= spin:
                        idle = min(max(idle * 2, IDLE_MIN), IDLE_MAX, wait)
                        time.sleep(idle)
                    continue
                idle, last_progress = 0.0, time.monotonic()
            else:
                idx = MPI.Request.Waitsome(reqs)
            for k in sorted(idx or (), reverse=True):
                h = handlers[k]
                del reqs[k], handlers[k]
                h()


def _on_sent(o: _Out) -> None:
    o.inflight -= 1


_ANCESTORS: dict[int, tuple[Plan, list[set[int]]]] = {}


def _ancestors_of(plan: Plan) -> list[set[int]]:
    """:func:`_ancestors`, kept per plan: a collective performs its cached plan again and
    again, and a segmented plan has hundreds of transfers."""
    kept = _ANCESTORS.get(id(plan))
    if kept is None or kept[0] is not plan:
        if len(_ANCESTORS) > 64:
            _ANCESTORS.clear()
        kept = _ANCESTORS[id(plan)] = (plan, _ancestors(plan))
    return kept[1]


def _ancestors(plan: Plan) -> list[set[int]]:
    """Per transfer, every transfer it waits for directly or not (``after`` and upstream)."""
    from ..plan.graph import predecessors

    preds = predecessors(plan)
    out: list[set[int] | None] = [None] * len(preds)

    def of(i: int) -> set[int]:
        stack = [i]
        while stack:  # iterative: plans can be deep chains
            k = stack[-1]
            todo = [p for p in preds[k] if out[p] is None]
            if todo:
                stack.extend(todo)
                continue
            stack.pop()
            if out[k] is None:
                acc: set[int] = set(preds[k])
                for p in preds[k]:
                    acc |= out[p]  # type: ignore[arg-type]
                out[k] = acc
        return out[i]  # type: ignore[return-value]

    return [of(i) for i in range(len(preds))]


def _overlay(o: _Out) -> None:
    """Put the frozen bytes into ``o``'s snapshot, the earliest last (it is the value the
    transfer reads)."""
    assert o.source is not None
    for lo, data in reversed(o.frozen):
        pos = 0
        for c, m in o.ranges:
            if c <= lo < c + m:
                o.source[pos + lo - c : pos + lo - c + len(data)] = data
                break
            pos += m
    o.frozen.clear()


def _all_in(ins: list[_In], done: set[int]) -> bool:
    return all(x.index in done for x in ins)
