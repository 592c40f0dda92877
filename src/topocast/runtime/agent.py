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
* every received chunk is checked (xxh3) before it is stored; a relay forwards only from
  what it stored; when the agent holds everything it wants it checks the whole-message
  digest and only then reports success;
* repair: when an incoming transfer breaks (its sender died, the connection stalled or was
  reset), the agent asks the coordinator who holds the missing bytes and fetches them from
  those hosts, most complete first, until it holds them or it gives up (``repair_timeout``)
  and reports which bytes it could not get and why.

Security: every connection is authenticated (HMAC challenge on the run secret, see
``protocol``); frames are binary or JSON, never pickles; offsets and transfer ids are
checked; the destination file must stay inside ``dest_dir``.
"""

from __future__ import annotations

import json
import os
import resource
import socket
import sys
import threading
import time
import traceback

from ..intervals import IntervalSet
from .data import generate_range, safe_destination
from .pacing import HEADROOM, Pacer, TokenBucket, down_caps, pacer_burst
from .protocol import (
    T_DATA,
    T_END,
    T_HEARTBEAT,
    T_JSON,
    Conn,
    Msg,
    ProtocolError,
    connect,
    digest_ranges,
    tune_tcp,
)
from .store import Store

HEARTBEAT_EVERY = 1.0  # s: an idle sender proves it is alive this often


def _chunks(ranges, chunk: int):
    for off, length in ranges:
        end = off + length
        a = off
        while a < end:
            b = min(a + chunk, end)
            yield a, b
            a = b


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
        self.t0 = None
        self.started = threading.Event()  # set when "start" (and t0) arrived
        self.reported_complete = False
        self.repair_needed = IntervalSet()
        self.repair_event = threading.Event()
        self.repair_reasons: list[str] = []
        self.holder_replies: dict[int, list] = {}
        self.holder_cond = threading.Condition()
        self.req = 0
        self.incoming_first: dict[int, float] = {}

    # ------------------------------------------------------------------ control
    def send(self, msg: dict) -> None:
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
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind((self.bind, 0))
        self.listener.listen(64)
        port = self.listener.getsockname()[1]
        self.ctrl = connect(self.control_addr, self.secret, timeout=15)
        self.ctrl.send_json(
            {"type": Msg.HELLO, "host": self.host, "port": port, "address": self.advertise, "pid": os.getpid()}
        )
        cfg = self.ctrl.recv_json()
        if cfg.get("type") != Msg.CONFIG:
            raise ProtocolError("expected the configuration first")
        self.configure(cfg)
        threading.Thread(target=self.accept_loop, daemon=True).start()
        self.send({"type": Msg.READY})
        try:
            while True:
                msg = self.ctrl.recv_json()
                self.on_control(msg)
                if msg.get("type") == Msg.SHUTDOWN:
                    break
        except (OSError, ProtocolError):
            pass  # coordinator gone: nothing left to do
        self.stop.set()
        return 0

    def configure(self, cfg: dict) -> None:
        self.size = int(cfg["size"])
        self.chunk = max(1024, int(cfg["chunk_size"]))
        self.stall = float(cfg.get("stall_timeout", 6.0))
        self.repair_timeout = float(cfg.get("repair_timeout", 30.0))
        self.peers = {h: (str(a), int(p)) for h, (a, p) in cfg["peers"].items()}
        self.out = [dict(t) for t in cfg["outgoing"]]
        self.rate_caps = {int(t["index"]): t.get("rate_cap") for t in self.out}
        self.inc = {int(t["index"]): dict(t) for t in cfg["incoming"]}
        self.wanted = [tuple(r) for r in cfg["wanted"]]
        self.digest = cfg.get("digest")
        self.dest_name = cfg.get("dest_name")
        # A destination path is checked before any byte arrives; bytes land in NAME.part,
        # renamed to NAME only once the whole-message digest matched.
        self.dest_path = None
        if self.dest_dir and self.wanted:
            self.dest_path = safe_destination(self.dest_dir, self.host, self.dest_name or "message.bin")
        self.part_path = self.dest_path.with_name(self.dest_path.name + ".part") if self.dest_path else None
        self.store = Store(self.size, self.part_path)
        # fair uplink (pacing.py): one round-robin pacer per first-hop link, and caps on the
        # links further on from max-min over this agent's active transfers
        self.pacing = cfg.get("pacing") or None
        self.pacers: dict[str, Pacer] = {}
        self.buckets: dict[int, TokenBucket] = {}  # this agent's transfers sending now
        self.pace_lock = threading.Lock()
        if self.pacing:
            cap = self.pacing["capacity"]
            self.headroom = head = float(self.pacing.get("headroom", HEADROOM))
            for tp in self.pacing["transfers"].values():
                u = tp.get("uplink")
                if u is not None and u not in self.pacers:
                    self.pacers[u] = Pacer(float(cap[u]), pacer_burst(float(cap[u]) * head, self.chunk), head)
        initial = [tuple(r) for r in cfg["initial"]]
        if initial:
            src = cfg["data"]
            if "file" in src:
                with open(src["file"], "rb") as fh:
                    data = fh.read()
                if len(data) != self.size:
                    raise ValueError(f"{src['file']}: expected {self.size} bytes, found {len(data)}")
                for off, length in initial:
                    self.store.put(off, memoryview(data)[off : off + length])
            else:  # only our own ranges: a block holder need not build the whole message
                for off, length in initial:
                    self.store.put(off, generate_range(int(src["seed"]), off, length))

    def on_control(self, msg: dict) -> None:
        kind = msg.get("type")
        if kind == Msg.START:
            # one clock for all agents when they share this machine's monotonic clock
            self.t0 = float(msg["t0"]) if msg.get("t0") is not None else time.monotonic()
            self.started.set()
            ru = resource.getrusage(resource.RUSAGE_SELF)
            self.cpu0 = ru.ru_utime + ru.ru_stime
            for t in self.out:
                threading.Thread(target=self.sender, args=(t,), daemon=True).start()
            threading.Thread(target=self.progress_loop, daemon=True).start()
            threading.Thread(target=self.repair_loop, daemon=True).start()
            threading.Thread(target=self.watchdog, daemon=True).start()
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
            for i, t in self.inc.items():
                if t["src"] == host and i not in self.tdone:
                    self.need_repair(t["ranges"], f"sender {host} died")
        elif kind == Msg.FAILURE:
            self.failure_seen = True
        elif kind == Msg.HOLDERS:
            with self.holder_cond:
                self.holder_replies[int(msg["req"])] = list(msg["hosts"])
                self.holder_cond.notify_all()
        elif kind == Msg.SHUTDOWN:
            ru = resource.getrusage(resource.RUSAGE_SELF)
            self.send(
                {
                    "type": Msg.STATS,
                    "cpu": ru.ru_utime + ru.ru_stime - getattr(self, "cpu0", 0.0),
                    "wall": self.now(wait=False),
                }
            )

    # ------------------------------------------------------------------ completion
    def check_progress(self, t_arrival: float | None = None) -> None:
        """Report transfers whose bytes we now hold, and completion of everything wanted.

        ``t_arrival``: when the bytes that triggered this check arrived (before they were
        stored, so no relay can appear to deliver before it received)."""
        for i, t in self.inc.items():
            if i not in self.tdone and self.store.missing_ranges(t["ranges"]) == []:
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
            t = self.now() if t_arrival is None else t_arrival
            got = digest_ranges(self.store.buf, self.wanted)
            if got != self.digest:
                self.send({"type": Msg.FAILED, "reason": f"whole-message digest mismatch ({got} != {self.digest})"})
                return
            if self.dest_path is not None:
                self.store.buf.flush()
                os.replace(self.part_path, self.dest_path)
            self.send({"type": Msg.COMPLETE, "time": t, "digest": got})

    # ------------------------------------------------------------------ sending
    def sender(self, t: dict) -> None:
        i, dst = int(t["index"]), t["dst"]
        ranges = [tuple(r) for r in t["ranges"]]
        try:
            with self.deps:  # `after`: wait for the listed transfers to complete anywhere
                while not all(a in self.tdone for a in t["after"]):
                    if self.stop.is_set() or dst in self.dead:
                        return
                    self.deps.wait(0.5)
            if not t["pipelined"]:  # store-and-forward: all our bytes first
                while self.store.missing_ranges(ranges):
                    if self.stop.is_set() or dst in self.dead:
                        return
                    with self.store.cond:
                        self.store.cond.wait(0.5)
            else:  # pipelined: start once the first chunk is here
                a, b = next(_chunks(ranges, self.chunk))
                while not self.store.wait_covers(a, b, 0.5):
                    if self.stop.is_set() or dst in self.dead:
                        return
            t_ready = self.now()  # `after` satisfied and (store-and-forward) every byte held
            addr, port = self.peers[dst]
            conn = connect(f"tcp:{addr}:{port}", self.secret, timeout=5, user_timeout=self.stall + 4)
            tp = (self.pacing or {}).get("transfers", {}).get(str(i))
            pacer = self.pacers.get(tp.get("uplink")) if tp else None
            if tp and tp.get("sndbuf"):  # small send buffer: the pacer, not the kernel's FIFO, decides the shares
                try:
                    conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, int(tp["sndbuf"]))
                except OSError:
                    pass
            conn.send_json({"type": Msg.PUSH, "transfer": i, "from": self.host})
            # when this transfer could start and when its connection was ready: lets a run
            # split a barrier's cost into relay/wake-up, connection set-up and data
            self.send({"type": Msg.TSEND, "transfer": i, "ready": t_ready, "connected": self.now()})
            bucket = TokenBucket(t.get("rate_cap"), 2 * self.chunk)
            if tp:
                self.pace_join(i, bucket, pacer)
            try:
                for a, b in _chunks(ranges, self.chunk):
                    while not self.store.wait_covers(a, b, HEARTBEAT_EVERY):
                        if self.stop.is_set() or dst in self.dead:
                            conn.close()
                            return
                        conn.send_simple(T_HEARTBEAT)
                    bucket.take(b - a, self.stop)
                    if pacer is not None:
                        pacer.acquire(i, b - a, self.stop)
                    conn.send_data(a, self.store.view[a:b])
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
        except (OSError, ProtocolError) as exc:
            # a failure like any other: every agent's watchdog starts repairing stalled hosts
            self.send(
                {
                    "type": Msg.BROKEN,
                    "reason": f"transfer {i} to {dst} failed on the sending side: {exc or type(exc).__name__}",
                }
            )
        except Exception as exc:  # a bug must not pass for a network failure: say what it was
            self.send(
                {"type": Msg.BROKEN, "reason": f"transfer {i} to {dst}: sender error {type(exc).__name__}: {exc}"}
            )
            traceback.print_exc()

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
                self.serve_fetch(conn, hdr)
        except (OSError, ProtocolError):
            pass
        finally:
            conn.close()

    def receive_push(self, conn: Conn, hdr: dict) -> None:
        i = hdr.get("transfer")
        t = self.inc.get(i) if isinstance(i, int) else None
        if t is None:
            raise ProtocolError(f"transfer {i!r} is not addressed to {self.host}")
        conn.settimeout(self.stall)
        reason = "connection closed before the end"
        try:
            while True:
                ftype, body = conn.recv()
                if ftype == T_DATA:
                    off, view = body
                    tp = self.now()
                    if i not in self.incoming_first:
                        self.incoming_first[i] = tp
                    if self.store.put(off, view):
                        self.check_progress(tp)
                elif ftype == T_END:
                    self.check_progress()
                    conn.send_json({"type": Msg.ACK})
                    break
                elif ftype == T_JSON:
                    raise ProtocolError("unexpected control message on a data connection")
        except TimeoutError:
            reason = f"no data or heartbeat from {t['src']} for {self.stall:g} s (link down?)"
        except (OSError, ProtocolError) as exc:
            reason = f"connection from {t['src']} broke ({exc})"
        if self.store.missing_ranges(t["ranges"]):
            self.need_repair(t["ranges"], f"transfer {i} from {t['src']}: {reason}")

    def serve_fetch(self, conn: Conn, hdr: dict) -> None:
        ranges = hdr.get("ranges")
        if not isinstance(ranges, list) or len(ranges) > 100000:
            raise ProtocolError("fetch needs a list of ranges")
        for r in ranges:
            off, length = int(r[0]), int(r[1])
            if off < 0 or length < 0 or off + length > self.size:
                raise ProtocolError("fetch range outside the message")
            for a, b in self.store.held_parts(off, off + length):
                for x, y in _chunks([(a, b - a)], self.chunk):
                    conn.send_data(x, self.store.view[x:y])
        conn.send_simple(T_END)

    # ------------------------------------------------------------------ repair
    def need_repair(self, ranges, reason: str) -> None:
        with self.lock:
            for off, length in ranges:
                self.repair_needed.add(off, off + length)
            self.repair_reasons.append(reason)
            self.failure_seen = True
        self.send({"type": Msg.BROKEN, "reason": reason})
        self.repair_event.set()

    def watchdog(self) -> None:
        """After any failure, a host that makes no progress for ``stall`` s repairs all it lacks."""
        while not self.stop.wait(1.0):
            if self.reported_complete or not self.failure_seen or not self.wanted:
                continue
            if time.monotonic() - self.store.last_new > self.stall:
                missing = self.store.missing_ranges(self.wanted)
                if missing:
                    self.need_repair(missing, f"no progress for {self.stall:g} s after a failure")
                    self.store.last_new = time.monotonic()

    def ask_holders(self, ranges) -> list[str]:
        with self.holder_cond:
            self.req += 1
            req = self.req
        self.send({"type": Msg.NEED, "req": req, "ranges": [list(r) for r in ranges]})
        with self.holder_cond:
            self.holder_cond.wait_for(lambda: req in self.holder_replies or self.stop.is_set(), timeout=10)
            return self.holder_replies.pop(req, [])

    def fetch(self, host: str, ranges) -> None:
        addr, port = self.peers[host]
        conn = connect(f"tcp:{addr}:{port}", self.secret, timeout=3, user_timeout=self.stall + 4)
        try:
            conn.send_json({"type": Msg.FETCH, "ranges": [list(r) for r in ranges]})
            conn.settimeout(self.stall)
            while True:
                ftype, body = conn.recv()
                if ftype == T_DATA:
                    off, view = body
                    tp = self.now()
                    if self.store.put(off, view):
                        self.check_progress(tp)
                elif ftype == T_END:
                    return
                else:
                    raise ProtocolError("unexpected frame in a fetch reply")
        finally:
            conn.close()

    def repair_loop(self) -> None:
        first_fail = None
        errors: dict[str, str] = {}
        while not self.stop.is_set():
            if not self.repair_event.wait(1.0):
                if first_fail is None:
                    continue
            self.repair_event.clear()
            with self.lock:
                need_iv = list(self.repair_needed)
            need = self.store.missing_ranges([(s, e - s) for s, e in need_iv])
            if not need:
                first_fail = None
                continue
            for host in self.ask_holders(need):
                if host == self.host or host in self.dead:
                    continue
                try:
                    self.fetch(host, need)
                except (OSError, ProtocolError) as exc:
                    errors[host] = str(exc) or type(exc).__name__
                need = self.store.missing_ranges(need)
                if not need:
                    break
            if need:
                first_fail = first_fail or time.monotonic()
                if time.monotonic() - first_fail > self.repair_timeout and not self.reported_complete:
                    missing = sum(length for _, length in self.store.missing_ranges(self.wanted))
                    why = "; ".join(dict.fromkeys(self.repair_reasons))
                    errs = "; ".join(f"{h}: {e}" for h, e in errors.items()) or "no live host holds them"
                    self.send(
                        {
                            "type": Msg.FAILED,
                            "reason": f"{missing} bytes missing after {why}; fetching them again failed ({errs})",
                        }
                    )
                    self.reported_complete = True
                    return
                self.repair_event.set()
                time.sleep(1.0)
            else:
                first_fail = None

    # ------------------------------------------------------------------ progress
    def progress_loop(self) -> None:
        seen = -1
        while not self.stop.wait(0.1):
            v = self.store.version
            if v != seen:
                seen = v
                self.send({"type": Msg.PROGRESS, "held": self.store.held.total, "intervals": self.store.intervals()})


def main() -> int:
    line = sys.stdin.readline()
    try:
        boot = json.loads(line)
    except json.JSONDecodeError:
        print("topocast agent: expected one JSON line on stdin", file=sys.stderr)
        return 2
    agent = Agent(boot)
    try:
        return agent.run()
    except Exception as exc:  # report to the coordinator when we still can
        traceback.print_exc()
        try:
            agent.ctrl.send_json({"type": Msg.FAILED, "reason": f"agent error: {exc}"})
        except Exception:
            pass
        return 1


if __name__ == "__main__":
    sys.exit(main())
