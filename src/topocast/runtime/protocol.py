"""Wire protocol between topocast agents and their coordinator.

Every connection (control and data) starts with a mutual HMAC challenge on the per-run
secret, then carries *frames*. Nothing received is ever unpickled or executed: a frame is a
fixed binary header plus either UTF-8 JSON (control messages, at most ``MAX_JSON`` bytes) or
raw message bytes with their offset and checksum.

Frame layout (network byte order)::

    type : u8    1 = JSON, 2 = DATA, 3 = HEARTBEAT, 4 = END
    len  : u32   length of what follows
    JSON:  len bytes of UTF-8 JSON (an object)
    DATA:  offset u64, xxh3_64 of the payload u64, payload (len - 16 bytes)

Authentication (both sides prove they know the secret; nonces are fresh per connection)::

    server -> client   16-byte nonce Ns
    client -> server   16-byte nonce Nc, HMAC-SHA256(secret, "c" | Ns | Nc)
    server -> client   HMAC-SHA256(secret, "s" | Nc | Ns)

Either side closes the connection on a wrong MAC.

Configuration (coordinator -> agent, decoded once by the agent): ``config`` carries an
:class:`AgentConfig`, its transfers as :class:`OutgoingTransfer` and :class:`IncomingTransfer`
records; ``reconfig`` and ``replan`` carry transfers in the same form.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import socket
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

import xxhash

from ..errors import RunFailure

__all__ = [
    "Msg",
    "ProtocolError",
    "AuthError",
    "Conn",
    "chunk_hash",
    "T_JSON",
    "T_DATA",
    "T_HEARTBEAT",
    "T_END",
    "connect",
    "parse_address",
    "OutgoingTransfer",
    "IncomingTransfer",
    "AgentConfig",
]


class Msg(StrEnum):
    """Kinds of JSON control message (the ``"type"`` field), declared once for both sides.

    A ``StrEnum``: members compare equal to the strings on the wire and encode as them.
    """

    # agent -> coordinator
    HELLO = "hello"  # after connecting: host, data port, address, pid
    READY = "ready"  # configured, data listener up
    PROGRESS = "progress"  # the byte intervals the agent holds now
    TDONE = "tdone"  # an incoming transfer completed (start, end)
    TSEND = "tsend"  # an outgoing transfer's sender was ready / connected (timeline)
    COMPLETE = "complete"  # every wanted byte held; whole-message digest
    FAILED = "failed"  # the agent gives up (reason)
    ABORT = "abort"  # no host can complete (the source file changed): the run stops (reason)
    NEED = "need"  # repair: who holds these ranges?
    BROKEN = "broken"  # a transfer broke (transfer index, reason); peers switch to repair
    WARN = "warn"  # something the user should read in the outcome
    STATS = "stats"  # the agent's CPU time, at shutdown
    # coordinator -> agent
    CONFIG = "config"  # the plan, the peers, the data source, pacing
    START = "start"  # go (with the shared clock's t0 when there is one)
    PEER_DEAD = "peer_dead"  # a host's agent is gone
    HOLDERS = "holders"  # answer to NEED
    FAILURE = "failure"  # some transfer broke somewhere: check your own incoming ones
    SHUTDOWN = "shutdown"  # stop and report STATS
    REPLAN = "replan"  # during the run: cancel these transfers, start these (runtime.adapt)
    RECONFIG = "reconfig"  # before start: this agent's transfers of a plan made again without absent hosts
    TRIM = "trim"  # before start: the new ranges of outgoing transfers whose receivers kept bytes (resume)
    PROBE = "probe"  # instead of CONFIG: this agent serves measurements (runtime.probing)
    MEASURE = "measure"  # probing: run one measurement (rtt or bulk) towards a peer
    # agent -> coordinator, probing
    MEASURED = "measured"  # a measurement's result (or its error)
    CONVERGED = "converged"  # probing: a bulk transfer's rate estimate has settled (its receiver says)
    COUNTED = "counted"  # probing: the bytes a bulk transfer's receiver has counted so far (when asked)
    # agent -> agent, on a data connection
    PUSH = "push"  # the sender opens a planned transfer
    FETCH = "fetch"  # a repairing receiver asks for ranges
    ACK = "ack"  # the fetched ranges are on their way
    PING = "ping"  # probing: echo every data frame back (round-trip times)
    SINK = "sink"  # probing: count the checked bytes of a timed bulk transfer


T_JSON, T_DATA, T_HEARTBEAT, T_END = 1, 2, 3, 4
_HDR = struct.Struct("!BI")
_DATA = struct.Struct("!QQ")
MAX_JSON = 4 << 20
MAX_DATA = 64 << 20
NONCE = 16
MAC = 32


class ProtocolError(RunFailure, ConnectionError):
    """The peer sent something that is not a valid frame (the connection is dropped).

    A :class:`ConnectionError` too, so that ``except OSError`` around a connection sees it."""


class AuthError(ProtocolError):
    """The peer does not know the run's secret."""


def chunk_hash(data: bytes | memoryview) -> int:
    """Per-chunk checksum (xxh3, 64 bits)."""
    return xxhash.xxh3_64_intdigest(data)


def _recv_exact_into(sock: socket.socket, view: memoryview) -> None:
    got = 0
    n = len(view)
    while got < n:
        k = sock.recv_into(view[got:], n - got)
        if k == 0:
            raise ConnectionError("connection closed by peer")
        got += k


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray(n)
    _recv_exact_into(sock, memoryview(buf))
    return bytes(buf)


def _send_parts(sock: socket.socket, parts) -> None:
    """Send every byte of ``parts`` (list of buffers) with as few syscalls as possible."""
    views = [memoryview(p).cast("B") for p in parts if len(p)]
    while views:
        sent = sock.sendmsg(views)
        while sent and views:
            if sent >= len(views[0]):
                sent -= len(views[0])
                views.pop(0)
            else:
                views[0] = views[0][sent:]
                sent = 0


class Conn:
    """A framed, authenticated connection (thread-safe sends, one reader)."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        import threading

        self._send_lock = threading.Lock()
        self._scratch = bytearray(0)

    # ----------------------------------------------------------- authentication
    def auth_server(self, secret: bytes) -> None:
        ns = os.urandom(NONCE)
        self.sock.sendall(ns)
        got = _recv_exact(self.sock, NONCE + MAC)
        nc, mac = got[:NONCE], got[NONCE:]
        if not hmac.compare_digest(mac, hmac.new(secret, b"c" + ns + nc, hashlib.sha256).digest()):
            raise AuthError("peer failed the HMAC challenge")
        self.sock.sendall(hmac.new(secret, b"s" + nc + ns, hashlib.sha256).digest())

    def auth_client(self, secret: bytes) -> None:
        ns = _recv_exact(self.sock, NONCE)
        nc = os.urandom(NONCE)
        self.sock.sendall(nc + hmac.new(secret, b"c" + ns + nc, hashlib.sha256).digest())
        mac = _recv_exact(self.sock, MAC)
        if not hmac.compare_digest(mac, hmac.new(secret, b"s" + nc + ns, hashlib.sha256).digest()):
            raise AuthError("server failed the HMAC challenge")

    # ----------------------------------------------------------- sending
    def send_json(self, obj: object) -> None:
        body = json.dumps(obj, separators=(",", ":")).encode()
        if len(body) > MAX_JSON:
            raise ProtocolError(f"control message too large ({len(body)} bytes)")
        with self._send_lock:
            _send_parts(self.sock, [_HDR.pack(T_JSON, len(body)), body])

    def send_data(self, offset: int, payload: bytes | memoryview, digest: int | None = None) -> None:
        """Send ``payload`` (a buffer) as message bytes at ``offset``, with its checksum
        (``digest`` when the caller knows it already)."""
        n = len(payload)
        h = chunk_hash(payload) if digest is None else digest
        with self._send_lock:
            _send_parts(self.sock, [_HDR.pack(T_DATA, _DATA.size + n), _DATA.pack(offset, h), payload])

    def send_data_from_fd(self, offset: int, fd: int, n: int, digest: int) -> None:
        """Send ``n`` bytes of file ``fd`` at ``offset`` as message bytes at ``offset``, with
        their checksum ``digest``, by ``sendfile`` (the bytes never enter this process)."""
        with self._send_lock:
            # MSG_MORE: the header waits for the payload (one segment, not a tiny one before it)
            self.sock.sendall(_HDR.pack(T_DATA, _DATA.size + n) + _DATA.pack(offset, digest), socket.MSG_MORE)
            pos, end = offset, offset + n
            while pos < end:
                sent = os.sendfile(self.sock.fileno(), fd, pos, end - pos)
                if sent == 0:
                    raise ProtocolError(f"the stored bytes ended at {pos} (file truncated?)")
                pos += sent

    def send_simple(self, ftype: int) -> None:
        with self._send_lock:
            self.sock.sendall(_HDR.pack(ftype, 0))

    # ----------------------------------------------------------- receiving
    def recv(self, place: Callable[[int, int], memoryview | None] | None = None) -> tuple[int, Any]:
        """Next frame: ``(T_JSON, dict)``, ``(T_DATA, (offset, memoryview, checksum))``,
        ``(T_HEARTBEAT, None)`` or ``(T_END, None)``.

        A DATA payload is received into ``place(offset, length)`` when that returns a buffer
        (the receiver's store), else into a scratch buffer that the next ``recv`` overwrites;
        it is checked against its checksum (ProtocolError when wrong) before it is returned.
        """
        ftype, n = _HDR.unpack(_recv_exact(self.sock, _HDR.size))
        if ftype == T_JSON:
            if n > MAX_JSON:
                raise ProtocolError(f"control message too large ({n} bytes)")
            body = _recv_exact(self.sock, n)
            try:
                obj = json.loads(body.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise ProtocolError(f"bad JSON frame ({exc})") from None
            if not isinstance(obj, dict):
                raise ProtocolError("a control message must be a JSON object")
            return T_JSON, obj
        if ftype == T_DATA:
            if n < _DATA.size or n > MAX_DATA + _DATA.size:
                raise ProtocolError(f"bad data frame length {n}")
            offset, h = _DATA.unpack(_recv_exact(self.sock, _DATA.size))
            k = n - _DATA.size
            view = place(offset, k) if place is not None else None
            if view is None:
                if len(self._scratch) < k:
                    self._scratch = bytearray(k)
                view = memoryview(self._scratch)[:k]
            _recv_exact_into(self.sock, view)
            if chunk_hash(view) != h:
                raise ProtocolError(f"checksum mismatch in chunk at offset {offset}")
            return T_DATA, (offset, view, h)
        if ftype in (T_HEARTBEAT, T_END):
            if n:
                raise ProtocolError("heartbeat/end frames carry no body")
            return ftype, None
        raise ProtocolError(f"unknown frame type {ftype}")

    def recv_json(self) -> dict:
        ftype, obj = self.recv()
        if ftype != T_JSON:
            raise ProtocolError(f"expected a control message, got frame type {ftype}")
        return obj

    def settimeout(self, t: float | None) -> None:
        self.sock.settimeout(t)

    def close(self) -> None:
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            self.sock.close()
        except OSError:
            pass


def parse_address(addr: str) -> tuple[socket.AddressFamily, str | tuple[str, int]]:
    """``"tcp:HOST:PORT"`` or ``"unix:/path"`` -> (family, sockaddr)."""
    if addr.startswith("unix:"):
        return socket.AF_UNIX, addr[5:]
    if addr.startswith("tcp:"):
        host, _, port = addr[4:].rpartition(":")
        return socket.AF_INET, (host.strip("[]"), int(port))
    raise ValueError(f"bad address {addr!r} (expected tcp:HOST:PORT or unix:/path)")


def tune_tcp(sock: socket.socket, user_timeout: float | None = None) -> None:
    """Keepalive and TCP_USER_TIMEOUT (ms) so a dead link fails a blocked send."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        if user_timeout and hasattr(socket, "TCP_USER_TIMEOUT"):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, int(user_timeout * 1000))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except OSError:
        pass


def connect(addr: str, secret: bytes, *, timeout: float = 5.0, user_timeout: float | None = None) -> Conn:
    """Open an authenticated connection to ``addr`` (``tcp:H:P`` or ``unix:PATH``)."""
    family, sockaddr = parse_address(addr)
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(sockaddr)
        if family == socket.AF_INET:
            tune_tcp(sock, user_timeout)
        conn = Conn(sock)
        conn.auth_client(secret)
    except BaseException:
        sock.close()
        raise
    sock.settimeout(None)
    return conn


# ------------------------------------------------------------------- configuration records
Ranges = tuple[tuple[int, int], ...]  # (offset, length) pairs, in the order they are sent


def _ranges(raw: Iterable) -> Ranges:
    return tuple((int(off), int(length)) for off, length in raw)


def _wire_ranges(ranges: Ranges) -> list[list[int]]:
    return [list(r) for r in ranges]


@dataclass(frozen=True)
class OutgoingTransfer:
    """A transfer as its sender learns it: plan transfer ``index`` to host ``dst``."""

    index: int
    dst: str
    ranges: Ranges
    pipelined: bool = False
    after: tuple[int, ...] = ()  # transfers that must complete (anywhere) before this one starts
    rate_cap: float | None = None  # bytes/s

    @classmethod
    def from_wire(cls, d: dict) -> OutgoingTransfer:
        return cls(
            int(d["index"]),
            str(d["dst"]),
            _ranges(d["ranges"]),
            bool(d["pipelined"]),
            tuple(int(a) for a in d["after"]),
            d.get("rate_cap"),
        )

    def to_wire(self) -> dict:
        return {
            "index": self.index,
            "dst": self.dst,
            "ranges": _wire_ranges(self.ranges),
            "pipelined": self.pipelined,
            "after": list(self.after),
            "rate_cap": self.rate_cap,
        }

    def trimmed(self, ranges: Iterable) -> OutgoingTransfer:
        """The same transfer with the ranges left to move (``trim``: its receiver kept the rest)."""
        return replace(self, ranges=_ranges(ranges))


@dataclass(frozen=True)
class IncomingTransfer:
    """A transfer as its receiver learns it: plan transfer ``index`` from host ``src``."""

    index: int
    src: str
    ranges: Ranges

    @classmethod
    def from_wire(cls, d: dict) -> IncomingTransfer:
        return cls(int(d["index"]), str(d["src"]), _ranges(d["ranges"]))

    def to_wire(self) -> dict:
        return {"index": self.index, "src": self.src, "ranges": _wire_ranges(self.ranges)}


@dataclass(frozen=True)
class AgentConfig:
    """One agent's configuration (``config``): the run's settings, alike for every agent, and
    this host's own part of the plan. The coordinator fills the run's part once and gives each
    host its own with :func:`dataclasses.replace`."""

    size: int  # bytes of the message
    chunk_size: int
    stall_timeout: float = 6.0  # s without data or heartbeat before an incoming transfer is broken
    repair_timeout: float = 30.0  # s of failed fetching before a host gives up
    peers: dict[str, tuple[str, int]] | None = None  # host -> (address, data port)
    data: dict | None = None  # the message: {"file": PATH, "stat": [size, mtime_ns]} or {"seed": N}
    dest_name: str | None = None  # the file name under dest_dir
    max_frame: int | None = None  # largest data frame of an unpaced sender (None: the agent's default)
    prefault: bool = True  # receivers touch their memory before the start
    piece_hashes: list[int] | None = None  # the message's piece hashes, when a re-run may resume
    outgoing: tuple[OutgoingTransfer, ...] = ()
    incoming: tuple[IncomingTransfer, ...] = ()
    initial: Ranges = ()  # the bytes this host holds at the start
    wanted: Ranges = ()  # the bytes it must hold at the end
    digest: str | None = None  # the digest of ``wanted`` it must reach
    pacing: dict | None = None  # its pacing configuration (``runtime.pacing``), None unpaced

    @classmethod
    def from_wire(cls, msg: dict) -> AgentConfig:
        return cls(
            size=int(msg["size"]),
            chunk_size=int(msg["chunk_size"]),
            stall_timeout=float(msg.get("stall_timeout", 6.0)),
            repair_timeout=float(msg.get("repair_timeout", 30.0)),
            peers={h: (str(a), int(p)) for h, (a, p) in msg["peers"].items()},
            data=dict(msg["data"]),
            dest_name=msg.get("dest_name"),
            max_frame=msg.get("max_frame"),
            prefault=bool(msg.get("prefault", True)),
            piece_hashes=msg.get("piece_hashes"),
            outgoing=tuple(OutgoingTransfer.from_wire(t) for t in msg["outgoing"]),
            incoming=tuple(IncomingTransfer.from_wire(t) for t in msg["incoming"]),
            initial=_ranges(msg["initial"]),
            wanted=_ranges(msg["wanted"]),
            digest=msg.get("digest"),
            pacing=msg.get("pacing") or None,
        )

    def to_wire(self) -> dict:
        """The ``config`` message (``piece_hashes`` only when there are some)."""
        msg: dict = {
            "type": Msg.CONFIG,
            "size": self.size,
            "chunk_size": self.chunk_size,
            "stall_timeout": self.stall_timeout,
            "repair_timeout": self.repair_timeout,
            "peers": {h: list(a) for h, a in (self.peers or {}).items()},
            "data": self.data,
            "dest_name": self.dest_name,
            "max_frame": self.max_frame,
            "prefault": self.prefault,
        }
        if self.piece_hashes is not None:
            msg["piece_hashes"] = self.piece_hashes
        msg.update(
            outgoing=[t.to_wire() for t in self.outgoing],
            incoming=[t.to_wire() for t in self.incoming],
            initial=_wire_ranges(self.initial),
            wanted=_wire_ranges(self.wanted),
            digest=self.digest,
            pacing=self.pacing,
        )
        return msg
