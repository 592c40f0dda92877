import socket
import struct
import threading

import pytest

from topocast.runtime.data import digest_ranges, safe_destination
from topocast.runtime.protocol import T_DATA, T_END, AuthError, Conn, ProtocolError, connect


def _pair():
    a, b = socket.socketpair()
    return Conn(a), Conn(b)


def test_auth_roundtrip_and_frames():
    srv, cli = _pair()
    secret = b"k" * 32
    t = threading.Thread(target=srv.auth_server, args=(secret,))
    t.start()
    cli.auth_client(secret)
    t.join()
    cli.send_json({"type": "x", "n": 1})
    cli.send_data(1000, b"hello")
    cli.send_simple(T_END)
    assert srv.recv() == (1, {"type": "x", "n": 1})
    ftype, (off, view, _digest) = srv.recv()
    assert (ftype, off, bytes(view)) == (T_DATA, 1000, b"hello")
    assert srv.recv() == (T_END, None)


def test_wrong_secret_is_refused():
    srv, cli = _pair()
    errors = []

    def server():
        try:
            srv.auth_server(b"right" * 8)
        except (AuthError, ConnectionError) as exc:
            errors.append(exc)
        srv.close()

    t = threading.Thread(target=server)
    t.start()
    with pytest.raises((AuthError, ConnectionError)):
        cli.auth_client(b"wrong" * 8)
    t.join()
    assert errors and isinstance(errors[0], AuthError)


def test_corrupted_chunk_is_detected():
    a, b = socket.socketpair()
    srv = Conn(b)
    payload = b"x" * 100
    a.sendall(struct.pack("!BI", T_DATA, 16 + 100) + struct.pack("!QQ", 0, 12345) + payload)
    with pytest.raises(ProtocolError, match="checksum"):
        srv.recv()


@pytest.mark.parametrize(
    "raw",
    [
        struct.pack("!BI", 9, 0),  # unknown frame type
        struct.pack("!BI", 1, 4) + b"\x80abc",  # not UTF-8 JSON
        struct.pack("!BI", 1, 2) + b"[]",  # JSON but not an object
        struct.pack("!BI", 1, 1 << 30),  # oversized control message
        b"\x80\x04\x95" + b"\x00" * 10,  # a pickle is just an unknown frame
    ],
)
def test_garbage_is_rejected_never_interpreted(raw):
    a, b = socket.socketpair()
    srv = Conn(b)
    a.sendall(raw)
    a.shutdown(socket.SHUT_WR)
    with pytest.raises((ProtocolError, ConnectionError)):
        srv.recv()


def test_connect_to_nothing_fails_cleanly():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with pytest.raises(OSError):
        connect(f"tcp:127.0.0.1:{port}", b"s" * 32, timeout=1)


def test_digest_over_ranges():
    buf = bytes(range(256)) * 4
    assert digest_ranges(buf, [(0, 512), (512, 512)]) == digest_ranges(buf, [(0, 1024)])
    assert digest_ranges(buf, [(0, 1023)]) != digest_ranges(buf, [(0, 1024)])


@pytest.mark.parametrize("name", ["../x", "..", "/etc/passwd", "a/b", "", "x\x00y"])
def test_destination_cannot_escape(tmp_path, name):
    with pytest.raises(ValueError):
        safe_destination(tmp_path, "host", name)


def test_destination_symlink_escape(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "h").symlink_to(tmp_path.parent)
    with pytest.raises(ValueError):
        safe_destination(tmp_path / "d", "h", "file")
    assert safe_destination(tmp_path / "d", "ok", "file") == (tmp_path / "d" / "ok" / "file").resolve()


# ------------------------------------------------------------------ configuration records
def _config_messages():
    """The ``config`` and ``reconfig`` messages the coordinator sends for a small plan."""
    import json
    import queue

    from topocast.plan import Plan, Transfer
    from topocast.runtime import startup
    from topocast.runtime.protocol import AgentConfig

    class Recorder:
        def __init__(self):
            self.sent = []

        def send_json(self, msg):
            self.sent.append(json.dumps(msg, separators=(",", ":")))

        def recv(self, *args):
            raise OSError("no agent here")

        recv_json = recv

    tr = [
        Transfer.of("s", "a", 0, 500),
        Transfer.of("a", "b", 0, 500, pipelined=True),
        Transfer("s", "b", ((500, 200), (800, 200)), False, None, (0,), 1.5e6),
    ]
    plan = Plan.broadcast("s", 1000, ["a", "b"], tr, planner="hand")
    hosts = list(plan.hosts)
    conns = {h: Recorder() for h in hosts}
    events: queue.Queue = queue.Queue()
    for h in hosts:
        events.put((h, {"type": "ready"}))
    settings = AgentConfig(
        size=1000,
        chunk_size=65536,
        peers={h: ("127.0.0.1", 4000 + k) for k, h in enumerate(hosts)},
        data={"seed": 1},
        dest_name="message.bin",
        piece_hashes=[7],
    )
    digests = {h: f"digest-{h}" for h in plan.wanted}
    startup.configure(plan, hosts, conns, {}, events, digests, {}, settings, None)
    startup.reconfigure(plan, hosts, conns, {})
    return {h: [json.loads(m) for m in c.sent] for h, c in conns.items()}, conns


def test_the_config_message_keeps_its_wire_form():
    """The JSON an agent receives, byte for byte: agents and coordinators of one wire format
    talk to each other whatever the records they are decoded into."""
    _, conns = _config_messages()
    assert conns["s"].sent[0] == (
        '{"type":"config","size":1000,"chunk_size":65536,"stall_timeout":6.0,"repair_timeout":30.0,'
        '"peers":{"s":["127.0.0.1",4000],"a":["127.0.0.1",4001],"b":["127.0.0.1",4002]},'
        '"data":{"seed":1},"dest_name":"message.bin","max_frame":null,"prefault":true,"piece_hashes":[7],'
        '"outgoing":[{"index":0,"dst":"a","ranges":[[0,500]],"pipelined":false,"after":[],"rate_cap":null},'
        '{"index":2,"dst":"b","ranges":[[500,200],[800,200]],"pipelined":false,"after":[0],"rate_cap":1500000.0}],'
        '"incoming":[],"initial":[[0,1000]],"wanted":[],"digest":null,"pacing":null}'
    )
    assert conns["b"].sent[1] == (
        '{"type":"reconfig","outgoing":[],"incoming":[{"index":1,"src":"a","ranges":[[0,500]]},'
        '{"index":2,"src":"s","ranges":[[500,200],[800,200]]}],"pacing":null}'
    )


def test_config_records_decode_what_they_encode():
    from topocast.runtime.protocol import AgentConfig, IncomingTransfer, OutgoingTransfer

    msgs, _ = _config_messages()
    for sent in msgs.values():
        config = sent[0]
        decoded = AgentConfig.from_wire(config)
        assert decoded.to_wire() == config
        assert all(isinstance(t, OutgoingTransfer) for t in decoded.outgoing)
        assert all(isinstance(t, IncomingTransfer) for t in decoded.incoming)
        for t in sent[1]["outgoing"]:
            assert OutgoingTransfer.from_wire(t).to_wire() == t
        for t in sent[1]["incoming"]:
            assert IncomingTransfer.from_wire(t).to_wire() == t
    a = AgentConfig.from_wire(msgs["a"][0])
    assert a.wanted == ((0, 1000),) and a.digest == "digest-a" and a.peers["b"] == ("127.0.0.1", 4002)
    out = AgentConfig.from_wire(msgs["s"][0]).outgoing[1]
    assert (out.index, out.after, out.rate_cap) == (2, (0,), 1.5e6)
    assert out.trimmed([[900, 100]]).ranges == ((900, 100),)
