"""The topocast agent: one process per host of a run (``python -m topocast.runtime.agent``).

Boot: the launcher writes one JSON line on the agent's stdin::

    {"host": NAME, "secret": HEX, "control": "tcp:H:P" | "unix:PATH",
     "bind": IP, "advertise": IP, "dest_dir": DIR or null}

The agent listens for data connections on ``bind`` (port chosen by the kernel), connects to
the coordinator, says hello (name, port), receives its configuration (its transfers, peers,
what it holds and wants), loads its initial bytes and waits for ``start``.

Data plane (docs/design.md "Performing plans"):

* every outgoing transfer has its own thread and TCP connection, so a slow child never stalls
  its siblings; a store-and-forward transfer waits until the agent holds all its bytes, a
  pipelined one sends each chunk as soon as it is held (so it trails its upstream and never
  gets ahead of it); ``after`` waits for the listed transfers to complete anywhere (the
  coordinator relays completions); ``rate_cap`` is a token bucket;
* fair uplink (``pacing``, when the coordinator sends a pacing configuration): the transfers
  leaving over one link take chunk-sized turns round-robin from one pacer per link (only the
  ready ones: a transfer waiting for bytes, for its cap or for socket-buffer space holds no
  turn), each is capped at its max-min share of the contended links further on, and data
  sockets get small send buffers, so the link's FIFO queue does not re-decide the shares;
* frames: without pacing or a rate cap, a sender coalesces the bytes it holds into frames of
  up to ``max_frame`` bytes (per-frame costs are paid per frame, not per chunk); a relay
  forwards the frames as they arrived, with the checksum it verified (``store``);
* every received frame lands in the store and is checked (xxh3) before it counts as held; a
  relay forwards only from what it holds; when the agent holds everything it wants it checks
  the whole-message digest and only then reports success;
* repair (``repair``): when an incoming transfer breaks, the agent fetches the missing bytes
  from other holders.

Security: every connection is authenticated (HMAC challenge on the run secret, see
``protocol``); frames are binary or JSON, never pickles; offsets and transfer ids are
checked; the destination file must stay inside ``dest_dir``.
"""

from __future__ import annotations

import errno
import json
import os
import resource
import socket
import sys
import threading
import time
import traceback
from collections.abc import Iterable
from pathlib import Path

from ..errors import RunFailure
from ..intervals import IntervalSet
from ..memory import available_memory
from .data import piece_end, safe_destination
from .pacing import HEADROOM, Pacer, TokenBucket, down_caps, pacer_burst
from .protocol import (
    T_DATA,
    T_END,
    T_HEARTBEAT,
    T_JSON,
    AgentConfig,
    Conn,
    IncomingTransfer,
    Msg,
    OutgoingTransfer,
    ProtocolError,
    connect,
    tune_tcp,
)
from .repair import Repair, serve_fetch
from .store import MEMORY_MARGIN, SourceChanged, Store, StoreError, peak_rss

HEARTBEAT_EVERY = 1.0  # s: an idle sender (to its receiver), every agent (to the coordinator) is heard this often
MAX_FRAME = 1 << 20  # bytes per frame when nothing paces the sender


class SetupError(RunFailure):
    """The agent cannot take part: it cannot listen, or cannot reach the coordinator."""


def _total(ranges) -> int:
    return sum(length for _, length in ranges)


class Agent:
    def __init__(self, boot: dict):
        self.host = str(boot["host"])
        self.secret = bytes.fromhex(boot["secret"])
        self.control_addr = boot["control"]
        self.bind = boot.get("bind", "127.0.0.1")
        self.advertise = boot.get("advertise") or self.bind
        self.dest_dir = boot.get("dest_dir")
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.deps = threading.Condition(self.lock)
        self.tdone: set[int] = set()
        self.dead: set[str] = set()
        self.failure_seen = False
        self.t0: float | None = None
        self.started = threading.Event()  # set when "start" (and t0) arrived
        self.reported_complete = False
        self.incoming_first: dict[int, float] = {}
        self.fault: str | None = None  # this host cannot take part (no disk space): fails at the start
        self.repair = Repair(self)
        self.relay_path: Path | None = None  # a file store of a host that only relays, removed at the end
        self.kept = 0  # bytes an earlier run left here that verified (runtime.resume)
        self.kept_pieces: list[tuple[int, int]] = []
        self.received = 0  # bytes that arrived in data frames (pushes and repairs)
        self.received_lock = threading.Lock()
        self.per_transfer: dict[int, int] = {}  # incoming transfer -> bytes that arrived on it
        self.cancelled: set[int] = set()  # transfers a re-plan cancelled (runtime.adapt)
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)  # bound in ``run``
        self.ctrl: Conn | None = None  # the control connection, once the coordinator was reached
        self.cpu0 = 0.0  # CPU seconds used before the start
        # ``configure``: the run's settings and this host's part of the plan
        self.config: AgentConfig | None = None
        self.size = 0
        self.chunk = 0
        self.max_frame = MAX_FRAME
        self.stall = 6.0
        self.repair_timeout = 30.0
        self.peers: dict[str, tuple[str, int]] = {}
        self.out: list[OutgoingTransfer] = []
        self.rate_caps: dict[int, float | None] = {}
        self.inc: dict[int, IncomingTransfer] = {}
        self.wanted: list[tuple[int, int]] = []
        self.dest_path: Path | None = None
        self.part_path: Path | None = None
        self.store = Store(0)  # the bytes this host holds (``open_store``; empty until configured)
        # ``configure_pacing`` (fair uplink): the pacers of this host's first-hop links
        self.pacing: dict = {}  # empty: nothing paces this agent
        self.pacers: dict[str, Pacer] = {}
        self.buckets: dict[int, TokenBucket] = {}  # this agent's transfers sending now
        self.pace_lock = threading.Lock()
        self.headroom = HEADROOM

    # ------------------------------------------------------------------ control
    def send(self, msg: dict) -> None:
        assert self.ctrl is not None  # only once the coordinator was reached
        try:
            self.ctrl.send_json(msg)
        except OSError:
            self.stop.set()

    def now(self, wait: bool = True) -> float:
        """Seconds since the run's start. Data can arrive before this agent has read its own
        "start" (the coordinator starts agents one by one): such a stamp waits for t0 rather
        than reading 0 (a host that completed "at 0 s" had an infinite measured rate)."""
        if self.t0 is None and wait:
            self.started.wait(30)
        return max(0.0, time.monotonic() - self.t0) if self.t0 is not None else 0.0

    def run(self) -> int:
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.listener.bind((self.bind, 0))
        except OSError as exc:
            raise SetupError(f"cannot listen on {self.bind} ({exc.strerror or exc})") from None
        self.listener.listen(64)
        port = self.listener.getsockname()[1]
        try:
            ctrl = self.ctrl = connect(self.control_addr, self.secret, timeout=15)
        except (OSError, ProtocolError) as exc:
            raise SetupError(f"cannot reach the coordinator at {self.control_addr} ({exc})") from None
        ctrl.send_json(
            {"type": Msg.HELLO, "host": self.host, "port": port, "address": self.advertise, "pid": os.getpid()}
        )
        cfg = ctrl.recv_json()
        if cfg.get("type") == Msg.PROBE:  # a probe, not a plan: measurements only
            from .probing import serve_probe

            return serve_probe(self, cfg)
        if cfg.get("type") != Msg.CONFIG:
            raise ProtocolError("expected the configuration first")
        try:
            self.configure(AgentConfig.from_wire(cfg))
        except (StoreError, SourceChanged, ValueError) as exc:
            ctrl.send_json({"type": Msg.FAILED, "reason": str(exc)})
            return 1
        threading.Thread(target=self.accept_loop, daemon=True).start()
        kept = [list(p) for p in IntervalSet((a, b - a) for a, b in self.kept_pieces)] if self.kept else []
        self.send({"type": Msg.READY, "fault": self.fault, "kept": kept, "kept_bytes": self.kept})
        try:
            while True:
                msg = ctrl.recv_json()
                self.on_control(msg)
                if msg.get("type") == Msg.SHUTDOWN or self.fault:
                    break
        except (OSError, ProtocolError):
            pass  # coordinator gone: nothing left to do
        self.stop.set()
        self.cleanup()
        return 0

    def configure(self, cfg: AgentConfig) -> None:
        self.config = cfg
        self.size = cfg.size
        self.chunk = max(1024, cfg.chunk_size)
        self.max_frame = max(self.chunk, int(cfg.max_frame or MAX_FRAME))
        self.stall = cfg.stall_timeout
        self.repair_timeout = cfg.repair_timeout
        self.peers = dict(cfg.peers or {})
        self.set_transfers(cfg.outgoing, cfg.incoming)
        self.wanted = list(cfg.wanted)
        self.store = self.open_store(cfg)
        if self.wanted and self.store.writable:
            self.store.follow_digest(self.wanted)
        self.configure_pacing(cfg.pacing)

    def set_transfers(self, outgoing: Iterable[OutgoingTransfer], incoming: Iterable[IncomingTransfer]) -> None:
        self.out = list(outgoing)
        self.rate_caps = {t.index: t.rate_cap for t in self.out}
        self.inc = {t.index: t for t in incoming}

    def open_store(self, cfg: AgentConfig) -> Store:
        """The store this host needs (``store`` module): a source that only sends reads its
        data on demand; a receiver stores into a file under ``dest_dir`` or into memory."""
        initial = list(cfg.initial)
        src = cfg.data or {}
        receives = bool(self.inc) or bool(self.wanted)
        if not receives:
            if "file" in src:
                return Store.from_file(self.size, src["file"], initial, src.get("stat"))
            return Store.generated(self.size, int(src["seed"]), initial)
        if self.dest_dir:
            store = self.file_store(cfg)
            if store is None:
                return Store(self.size)  # this host fails at the start (self.fault)
        else:
            held = IntervalSet(initial + [r for t in self.inc.values() for r in t.ranges] + self.wanted)
            avail = available_memory()
            if avail is not None and held.total > avail * MEMORY_MARGIN:
                raise StoreError(
                    f"{self.host}: the message needs {held.total} bytes of memory here but only "
                    f"{avail} are available; give --dest-dir DIR to stream it to disk"
                )
            prefault = [(s, e - s) for s, e in held] if cfg.prefault else []
            store = Store.in_memory(self.size, prefault)
        self.load_initial(store, initial, src)
        return store

    def file_store(self, cfg: AgentConfig) -> Store | None:
        """A file store under ``dest_dir``: bytes land in NAME.part, renamed to NAME once the
        whole-message digest matched (a host that only relays keeps a hidden file, removed at
        the end). A full disk makes this host fail at the start; the others go on."""
        name = cfg.dest_name or "message.bin"
        assert self.dest_dir is not None  # called only with a dest_dir
        resume = cfg.piece_hashes is not None
        if self.wanted:
            self.dest_path = safe_destination(self.dest_dir, self.host, name)
            path = self.part_path = self.dest_path.with_name(name + ".part")
            if resume and not path.exists() and self.dest_path.is_file():
                os.replace(self.dest_path, path)  # a copy an earlier run completed: checked like a .part
        else:
            path = self.relay_path = safe_destination(self.dest_dir, self.host, f".{name}.relay")
        try:
            store = Store.in_file(self.size, path, keep=resume)
            if resume:
                from .resume import interest

                ranges = self.wanted + [r for t in self.inc.values() for r in t.ranges]
                self.kept_pieces = store.keep_verified(interest(ranges, self.size), cfg.piece_hashes)
                self.kept = sum(b - a for a, b in self.kept_pieces)
            return store
        except StoreError as exc:
            if exc.errno != errno.ENOSPC:  # only this host fails; anything else stops the run
                raise
            self.fault = f"{exc}; holds 0 of {_total(self.wanted)} bytes"
            return None

    def load_initial(self, store: Store, initial: list, src: dict) -> None:
        """Copy this host's initial bytes into a store that also receives."""
        if not initial:
            return
        if "file" in src:
            reader = Store.from_file(self.size, src["file"], initial, src.get("stat"))
        else:
            reader = Store.generated(self.size, int(src["seed"]), initial)
        buf = memoryview(bytearray(min(self.size, 4 << 20)))
        for off, length in initial:
            for a in range(off, off + length, len(buf)):
                part = buf[: min(len(buf), off + length - a)]
                reader.read(a, part)
                store.commit(a, part)
        reader.close()

    def configure_pacing(self, pacing: dict | None) -> None:
        """Fair uplink (pacing.py): one round-robin pacer per first-hop link, and caps on the
        links further on from max-min over this agent's active transfers."""
        self.pacing = pacing or {}
        self.pacers = {}
        self.buckets = {}
        self.pace_lock = threading.Lock()
        if not pacing:
            return
        import numpy  # noqa: F401  (the pacer's max-min needs it: imported now, not when the first transfer starts)

        cap = pacing["capacity"]
        self.headroom = head = float(pacing.get("headroom", HEADROOM))
        for tp in pacing["transfers"].values():
            u = tp.get("uplink")
            if u is not None and u not in self.pacers:
                self.pacers[u] = Pacer(float(cap[u]), pacer_burst(float(cap[u]) * head, self.chunk), head)

    def on_control(self, msg: dict) -> None:
        kind = msg.get("type")
        if kind == Msg.START:
            # one clock for all agents when they share this machine's monotonic clock
            self.t0 = float(msg["t0"]) if msg.get("t0") is not None else time.monotonic()
            self.started.set()
            if self.fault:
                self.send({"type": Msg.FAILED, "reason": self.fault})
                return
            ru = resource.getrusage(resource.RUSAGE_SELF)
            self.cpu0 = ru.ru_utime + ru.ru_stime
            for t in self.out:
                threading.Thread(target=self.sender, args=(t,), daemon=True).start()
            threading.Thread(target=self.progress_loop, daemon=True).start()
            self.repair.start()
            self.check_progress()
        elif kind == Msg.TDONE:
            with self.deps:
                self.tdone.add(int(msg["transfer"]))
                self.deps.notify_all()
        elif kind == Msg.PEER_DEAD:
            host = str(msg["host"])
            with self.deps:
                self.dead.add(host)
                self.failure_seen = True
                self.deps.notify_all()
            for i, t_in in self.inc.items():
                if t_in.src == host and i not in self.tdone:
                    self.repair.need(t_in.ranges, f"sender {host} died")
        elif kind == Msg.FAILURE:
            self.failure_seen = True
        elif kind == Msg.HOLDERS:
            self.repair.on_holders(msg)
        elif kind == Msg.RECONFIG:  # before start: the plan was made again without absent hosts
            self.set_transfers(
                (OutgoingTransfer.from_wire(t) for t in msg["outgoing"]),
                (IncomingTransfer.from_wire(t) for t in msg["incoming"]),
            )
            self.configure_pacing(msg.get("pacing") or None)
        elif kind == Msg.REPLAN:
            self.replan(msg)
        elif kind == Msg.MEASURE:  # a targeted probe of suspect links (runtime.adapt)
            from .probing import measure_in_run

            measure_in_run(self, msg)
        elif kind == Msg.TRIM:
            ranges = {int(i): r for i, r in msg["ranges"].items()}
            self.out = [t.trimmed(ranges[t.index]) if t.index in ranges else t for t in self.out]
        elif kind == Msg.SHUTDOWN:
            ru = resource.getrusage(resource.RUSAGE_SELF)
            self.send(
                {
                    "type": Msg.STATS,
                    "cpu": ru.ru_utime + ru.ru_stime - self.cpu0,
                    "wall": self.now(wait=False),
                    "maxrss": peak_rss(),
                    "received": self.received,
                    "kept": self.kept,
                }
            )

    def replan(self, msg: dict) -> None:
        """A re-plan (runtime.adapt): cancel the old transfers still running, start the new."""
        new = [OutgoingTransfer.from_wire(t) for t in msg.get("outgoing", ())]
        with self.deps:
            self.cancelled.update(int(i) for i in msg.get("cancel", ()))
            for raw in msg.get("incoming", ()):
                t_in = IncomingTransfer.from_wire(raw)
                self.inc[t_in.index] = t_in
            for t in new:
                self.rate_caps[t.index] = t.rate_cap
            self.out.extend(new)
            self.deps.notify_all()
        with self.store.cond:
            self.store.cond.notify_all()
        for t in new:
            threading.Thread(target=self.sender, args=(t,), daemon=True).start()
        self.check_progress()

    def cleanup(self) -> None:
        self.store.close()
        # NAME.part of a host that did not complete is kept, whatever ended the run (a re-run
        # can resume from it; docs/design.md, "Exit status"); a relay's hidden file is not
        for path in (self.relay_path,):
            if path is not None and path.exists():
                try:
                    path.unlink()
                except OSError:
                    pass

    # ------------------------------------------------------------------ completion
    def check_progress(self, t_arrival: float | None = None, transfer: int | None = None) -> None:
        """Report transfers whose bytes we now hold, and completion of everything wanted.

        ``t_arrival``: when the bytes that triggered this check arrived (before they were
        stored, so no relay can appear to deliver before it received); ``transfer``: only
        that incoming transfer can have completed (the others are not looked at)."""
        candidates = self.inc.items() if transfer is None else [(transfer, self.inc[transfer])]
        for i, t in candidates:
            if i not in self.tdone and self.store.missing_ranges(t.ranges) == []:
                with self.deps:
                    if i in self.tdone:
                        continue
                    self.tdone.add(i)
                    self.deps.notify_all()
                self.send(
                    {
                        "type": Msg.TDONE,
                        "transfer": i,
                        "start": self.incoming_first.get(i, self.now()),
                        "end": self.now(),
                    }
                )
        if not self.reported_complete and self.wanted and self.store.missing_ranges(self.wanted) == []:
            with self.lock:
                if self.reported_complete:
                    return
                self.reported_complete = True
            self.complete(self.now() if t_arrival is None else t_arrival)

    def complete(self, t: float) -> None:
        """Every wanted byte is held: check the whole-message digest, then say so."""
        expected = self.config.digest if self.config is not None else None
        got = self.store.digest(self.wanted)
        if got != expected:
            self.send(
                {
                    "type": Msg.FAILED,
                    "reason": f"whole-message digest mismatch ({got} != {expected}): the bytes received "
                    "differ from the message (did the source file change while it was sent?)",
                }
            )
            return
        if self.dest_path is not None and self.part_path is not None:
            os.replace(self.part_path, self.dest_path)
        self.send({"type": Msg.COMPLETE, "time": t, "digest": got})

    # ------------------------------------------------------------------ sending
    def sender(self, t: OutgoingTransfer) -> None:
        i, dst = t.index, t.dst
        conn: Conn | None = None
        connected: float | None = None
        try:
            if t.pipelined and not t.after:
                # connected before its first byte: a pipeline's hops pay no connection set-up
                conn, connected = self.open_push(t), self.now()
            if not self.wait_until_ready(t, conn):
                if conn is not None:
                    if i in self.cancelled:  # a clean end: its receiver does not repair what is left
                        conn.send_simple(T_END)
                    conn.close()
                return
            if conn is None:
                conn, connected = self.open_push(t), None
            self.send_transfer(t, conn, connected)
        except SourceChanged as exc:  # the message itself is wrong: no host can complete
            self.send({"type": Msg.ABORT, "reason": str(exc)})
        except (OSError, ProtocolError) as exc:
            # a failure like any other: every agent's watchdog starts repairing stalled hosts
            self.send(
                {
                    "type": Msg.BROKEN,
                    "transfer": i,
                    "reason": f"transfer {i} to {dst} failed on the sending side: {exc or type(exc).__name__}",
                }
            )
        except Exception as exc:  # a bug must not pass for a network failure: say what it was
            self.send(
                {"type": Msg.BROKEN, "reason": f"transfer {i} to {dst}: sender error {type(exc).__name__}: {exc}"}
            )
            traceback.print_exc()

    def gone(self, dst: str, transfer: int | None = None) -> bool:
        """Stop sending to ``dst``: the run ends, ``dst`` died, or a re-plan cancelled ``transfer``."""
        return self.stop.is_set() or dst in self.dead or transfer in self.cancelled

    def wait_until_ready(self, t: OutgoingTransfer, conn: Conn | None = None) -> bool:
        """Wait for ``after`` (the listed transfers complete anywhere) and, store-and-forward,
        for all the transfer's bytes, pipelined for its first chunk, with heartbeats on
        ``conn`` (already open) meanwhile. False: give up."""
        dst, i = t.dst, t.index
        ranges = list(t.ranges)
        with self.deps:
            while not all(a in self.tdone for a in t.after):
                if self.gone(dst, i):
                    return False
                self.deps.wait(0.5)
        if not t.pipelined:
            while self.store.missing_ranges(ranges):
                if self.gone(dst, i):
                    return False
                with self.store.cond:
                    self.store.cond.wait(0.5)
        elif ranges:
            off, length = ranges[0]
            while not self.store.wait_covers(off, off + min(self.chunk, length), HEARTBEAT_EVERY):
                if self.gone(dst, i):
                    return False
                if conn is not None:
                    conn.send_simple(T_HEARTBEAT)
        return True

    def open_push(self, t: OutgoingTransfer) -> Conn:
        """The transfer's data connection, authenticated and announced (PUSH)."""
        addr, port = self.peers[t.dst]
        conn = connect(f"tcp:{addr}:{port}", self.secret, timeout=5, user_timeout=self.stall + 4)
        tp = self.pacing.get("transfers", {}).get(str(t.index))
        if tp and tp.get("sndbuf"):  # small send buffer: the pacer, not the kernel's FIFO, decides the shares
            try:
                conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, int(tp["sndbuf"]))
            except OSError:
                pass
        conn.send_json({"type": Msg.PUSH, "transfer": t.index, "from": self.host})
        return conn

    def send_transfer(self, t: OutgoingTransfer, conn: Conn, connected: float | None) -> None:
        """Send the transfer's bytes on ``conn`` (opened at ``connected``, or now when None)."""
        i = t.index
        t_ready = self.now()  # `after` satisfied and (store-and-forward) every byte held
        tp = self.pacing.get("transfers", {}).get(str(i))
        pacer = self.pacers.get(tp.get("uplink")) if tp else None
        # when this transfer could start and when its connection was ready (before that, for a
        # pipelined transfer connected early): lets a run split a barrier's cost into
        # relay/wake-up, connection set-up and data
        connected = self.now() if connected is None else connected
        self.send({"type": Msg.TSEND, "transfer": i, "ready": t_ready, "connected": connected})
        bucket = TokenBucket(t.rate_cap, 2 * self.chunk)
        # paced or capped transfers keep to chunk-sized frames (the pacer's turns); others coalesce
        frame = self.chunk if (tp or t.rate_cap) else self.max_frame
        if tp:
            self.pace_join(i, bucket, pacer)
        try:
            if not self.send_frames(conn, t, frame, bucket, pacer):
                conn.close()
                return
        finally:
            if tp:
                self.pace_leave(i, pacer)
        conn.send_simple(T_END)
        conn.settimeout(self.stall + 5)
        try:
            conn.recv()  # the receiver's acknowledgement (or EOF)
        except (OSError, ProtocolError):
            pass
        conn.close()

    def send_frames(
        self, conn: Conn, t: OutgoingTransfer, frame: int, bucket: TokenBucket, pacer: Pacer | None
    ) -> bool:
        """Send the transfer's ranges in frames of at most ``frame`` bytes, each from bytes
        already held (so a pipelined transfer trails its upstream by at least one chunk)."""
        i, dst = t.index, t.dst
        scratch = bytearray(frame) if not self.store.writable else bytearray(0)
        for off, length in t.ranges:
            a, end = off, off + length
            while a < end:
                if i in self.cancelled:  # a re-plan took over: end cleanly after the frames sent
                    return True
                first = min(a + self.chunk, end)
                while not self.store.wait_covers(a, first, HEARTBEAT_EVERY):
                    if i in self.cancelled:
                        return True
                    if self.gone(dst):
                        return False
                    conn.send_simple(T_HEARTBEAT)
                # a frame never crosses a digest piece's end: the receiver's digest takes its
                # checksum as the whole piece's hash (data.digest_pieces)
                limit = min(a + frame, end, piece_end(a))
                b = self.store.frame_end(a, self.store.held_until(a, limit))
                bucket.take(b - a, self.stop)
                if pacer is not None:
                    pacer.acquire(i, b - a, self.stop)
                self.store.send_frame(conn, a, b, scratch)
                a = b
        return True

    def own_cap(self, i: int) -> float | None:
        """Transfer ``i``'s own bound: the smaller of its rate cap and its fatpipe cap."""
        own = [c for c in (self.rate_caps.get(i), self.pacing["transfers"][str(i)].get("cap")) if c]
        return min(own) if own else None

    def pace_join(self, i: int, bucket: TokenBucket, pacer: Pacer | None) -> None:
        if pacer is not None:
            pacer.join(i, self.own_cap(i))
        with self.pace_lock:
            self.buckets[i] = bucket
            self._pace_update()

    def pace_leave(self, i: int, pacer: Pacer | None) -> None:
        if pacer is not None:
            pacer.leave(i)
        with self.pace_lock:
            self.buckets.pop(i, None)
            self._pace_update()

    def _pace_update(self) -> None:
        """Cap every active transfer (those with a bucket) at its max-min share of the links
        after its first hop (among this agent's active transfers), and at its own cap."""
        tps = self.pacing["transfers"]
        flows = {i: tps[str(i)]["down"] for i in self.buckets}
        caps = {i: self.own_cap(i) for i in self.buckets}
        shares = down_caps(flows, self.pacing["capacity"], caps, self.headroom)
        for i, bucket in self.buckets.items():
            bucket.set_rate(shares.get(i))

    # ------------------------------------------------------------------ receiving
    def accept_loop(self) -> None:
        while not self.stop.is_set():
            try:
                sock, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self.serve, args=(sock,), daemon=True).start()

    def serve(self, sock: socket.socket) -> None:
        tune_tcp(sock, self.stall + 4)
        sock.settimeout(10)
        conn = Conn(sock)
        try:
            conn.auth_server(self.secret)
            hdr = conn.recv_json()
            if hdr.get("type") == Msg.PUSH:
                self.receive_push(conn, hdr)
            elif hdr.get("type") == Msg.FETCH:
                serve_fetch(self, conn, hdr)
            elif hdr.get("type") in (Msg.SINK, Msg.PING):  # a targeted probe's receiving end
                from .probing import serve_measurements

                serve_measurements(self, conn, hdr)
        except (OSError, ProtocolError):
            pass
        finally:
            conn.close()

    def receive_frames(self, conn: Conn, transfer: int | None) -> None:
        """Store every data frame of ``conn`` until its END (a push, or a fetch reply): each
        lands in the store when its bytes are new, and counts once its checksum matched."""

        def place(off: int, length: int) -> memoryview | None:
            return self.store.reserve(off, length, conn)

        try:
            while True:
                ftype, body = conn.recv(place)
                if ftype == T_DATA:
                    off, view, digest = body
                    with self.received_lock:
                        self.received += len(view)
                        if transfer is not None:
                            self.per_transfer[transfer] = self.per_transfer.get(transfer, 0) + len(view)
                    tp = self.now()
                    if transfer is not None and transfer not in self.incoming_first:
                        self.incoming_first[transfer] = tp
                    if self.store.commit(off, view, digest, owner=conn):
                        self.check_progress(tp, transfer)
                elif ftype == T_END:
                    return
                elif ftype == T_JSON:
                    raise ProtocolError("unexpected control message on a data connection")
        finally:
            self.store.release(conn)

    def receive_push(self, conn: Conn, hdr: dict) -> None:
        i = hdr.get("transfer")
        t = self.inc.get(i) if isinstance(i, int) else None
        if t is None and isinstance(i, int):  # a re-plan's transfer whose "replan" is still on its way here
            with self.deps:
                self.deps.wait_for(lambda: i in self.inc or self.stop.is_set(), timeout=5)
            t = self.inc.get(i)
        if t is None:
            raise ProtocolError(f"transfer {i!r} is not addressed to {self.host}")
        conn.settimeout(self.stall)
        reason = "connection closed before the end"
        clean = False
        try:
            self.receive_frames(conn, i)
            clean = True  # a sender ends early and cleanly only when a re-plan cancelled it
            self.check_progress()
            conn.send_json({"type": Msg.ACK})
        except TimeoutError:
            reason = f"no data or heartbeat from {t.src} for {self.stall:g} s (link down?)"
        except (OSError, ProtocolError) as exc:
            reason = f"connection from {t.src} broke ({exc})"
        if self.store.missing_ranges(t.ranges) and not clean and i not in self.cancelled:
            self.repair.need(t.ranges, f"transfer {i} from {t.src}: {reason}")

    # ------------------------------------------------------------------ progress
    def progress_loop(self) -> None:
        """Report the held intervals when they change, and at least every ``HEARTBEAT_EVERY``
        seconds: the coordinator takes a longer silence for a stopped or hung agent."""
        seen, sent = (-1, -1), time.monotonic()
        while not self.stop.wait(0.1):
            v = (self.store.version, self.received)  # bytes that were not new count for the rates too
            if v != seen or time.monotonic() - sent >= HEARTBEAT_EVERY:
                seen, sent = v, time.monotonic()
                with self.received_lock:
                    per = {str(i): n for i, n in self.per_transfer.items()}
                self.send(
                    {
                        "type": Msg.PROGRESS,
                        "held": self.store.held.total,
                        "intervals": self.store.intervals(),
                        "transfers": per,
                    }
                )


def main() -> int:
    line = sys.stdin.readline()
    try:
        boot = json.loads(line)
    except json.JSONDecodeError:
        print("topocast agent: expected one JSON line on stdin", file=sys.stderr)
        return 2
    return run_boot(boot)


def run_boot(boot: dict) -> int:
    """Run the agent described by its boot record (the line ``main`` reads; the local
    launcher's fork server passes it directly)."""
    agent = Agent(boot)
    try:
        return agent.run()
    except SetupError as exc:  # said in one line (the coordinator shows it as the reason)
        print(exc, file=sys.stderr)
        return 1
    except Exception as exc:  # report to the coordinator when we still can
        traceback.print_exc()
        try:
            if agent.ctrl is not None:
                agent.ctrl.send_json({"type": Msg.FAILED, "reason": f"agent error: {exc}"})
        except Exception:
            pass
        return 1


if __name__ == "__main__":
    sys.exit(main())
