"""The two ends of ``testbed.live.Traffic``, run inside a host's namespace.

    python -m topocast.testbed.flow sink ADDRESS PORT
    python -m topocast.testbed.flow send ADDRESS PORT FLOWS RATE DURATION

The sink accepts any number of connections, discards what arrives, prints ``listening``
once it listens and, when it is terminated, the bytes it received and the seconds from the
first byte to the last. The sender opens ``FLOWS``
connections, prints ``sending`` once they are open, and sends zeros, ``RATE`` bytes/s in
total (0: as fast as TCP goes), for ``DURATION`` seconds from then (0: until terminated).
"""

from __future__ import annotations

import signal
import socket
import sys
import threading
import time

CHUNK = 64 * 1024


def sink(address: str, port: int) -> int:
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((address, port))
    srv.listen(64)
    total = [0]
    first_last = [0.0, 0.0]
    lock = threading.Lock()
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())

    def drain(conn: socket.socket) -> None:
        with conn:
            while True:
                try:
                    n = len(conn.recv(1 << 20))
                except OSError:
                    return
                if not n:
                    return
                with lock:
                    now = time.monotonic()
                    if not total[0]:
                        first_last[0] = now
                    total[0] += n
                    first_last[1] = now

    def accept() -> None:
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            threading.Thread(target=drain, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    print("listening", flush=True)
    while not done.wait(0.2):
        pass
    print(total[0], f"{first_last[1] - first_last[0]:.6f}", flush=True)
    return 0


def send(address: str, port: int, flows: int, rate: float, duration: float) -> int:
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    per_flow = rate / flows if rate > 0 else 0.0
    conns = []
    for _ in range(flows):
        try:
            conns.append(socket.create_connection((address, port), timeout=10))
        except OSError as exc:
            print(f"cannot connect: {exc}", flush=True)
            return 1
    print("sending", flush=True)
    end = time.monotonic() + duration if duration > 0 else float("inf")

    def one(conn: socket.socket) -> None:
        block = bytes(CHUNK)
        t0, sent = time.monotonic(), 0
        with conn:
            while not stop.is_set() and time.monotonic() < end:
                if per_flow:
                    ahead = sent / per_flow - (time.monotonic() - t0)
                    if ahead > 0:
                        time.sleep(min(ahead, 0.05))
                        continue
                try:
                    sent += conn.send(block)
                except OSError:
                    return

    threads = [threading.Thread(target=one, args=(c,), daemon=True) for c in conns]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads) and not stop.wait(0.1):
        pass
    stop.set()
    for t in threads:
        t.join(timeout=2)
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["sink"] and len(argv) == 3:
        return sink(argv[1], int(argv[2]))
    if argv[:1] == ["send"] and len(argv) == 6:
        return send(argv[1], int(argv[2]), int(argv[3]), float(argv[4]), float(argv[5]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
