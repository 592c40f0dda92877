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
