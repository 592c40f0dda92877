"""The runtime against a plain socket loop, on loopback, side by side in one run.

Cases (each repeated ``--repeat`` times; figures are the median and the spread):

* reference: one TCP connection over loopback, ``sendall`` from a 1 MiB buffer and
  ``recv_into`` a reused 1 MiB buffer (the wire: no byte is kept), and the same into a
  message-sized buffer (what any receiver that keeps the message pays: the first touch of its
  memory);
* ``pair``: ``topocast run`` of ``flat`` from ``s`` to one host;
* ``chain``: ``depth_first`` over four hosts (``s -> d1 -> d2 -> d3``), every host's rate;
* ``file``: a ``--file`` of ``--big`` bytes (default 10 GiB) to three hosts with ``--dest-dir``:
  sha256 of every copy against the source's, and the peak resident memory of every process;
* the whole command's wall time against the measured makespan, also for the pair with
  ``--no-prefault`` (receivers touch their memory during the transfer, not before it);
* ``start``: ``topocast run builtin:two-clusters -a stable -s s --size 8MiB --launcher
  local``, wall time beside its makespan (the plan's rate caps make the transfer itself
  about 0.7 s).

Every process runs from compiled bytecode, as after any install: the benchmark compiles the
package first (a shell with ``PYTHONDONTWRITEBYTECODE`` set would otherwise compile every
module at every start).

Run: ``python benchmarks/bench_runtime_speed.py [--size 1GiB] [--repeat 3] [--big 10GiB]``
(``--big 0`` skips the file case). Figures with the machine's load go to docs/performance.md.
"""

from __future__ import annotations

import argparse
import compileall
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import topocast
from topocast.runtime.data import generate_into
from topocast.units import parse_size

STAR = """name: loopback-star
hosts: [s, d1, d2, d3]
switches: [sw]
links:
  - {a: s, b: sw, bandwidth: 100Gbps}
  - {a: d1, b: sw, bandwidth: 100Gbps}
  - {a: d2, b: sw, bandwidth: 100Gbps}
  - {a: d3, b: sw, bandwidth: 100Gbps}
"""
PAIR = """name: loopback-pair
hosts: [s, d1]
links:
  - {a: s, b: d1, bandwidth: 100Gbps}
"""

PLAIN = r"""
import socket, sys, time, threading
size, keep = int(sys.argv[1]), sys.argv[2] == "keep"
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(1)
port = srv.getsockname()[1]
def send():
    c = socket.create_connection(("127.0.0.1", port))
    buf = memoryview(bytearray(b"x" * (1 << 20)))
    left = size
    while left:
        n = min(left, len(buf)); c.sendall(buf[:n]); left -= n
    c.close()
import multiprocessing as mp
p = mp.get_context("fork").Process(target=send); p.start()
conn, _ = srv.accept()
buf = memoryview(bytearray(size if keep else 1 << 20))
t0 = time.perf_counter(); got = 0
while got < size:
    view = buf[got:] if keep else buf
    k = conn.recv_into(view)
    if not k: break
    got += k
dt = time.perf_counter() - t0
p.join()
print(size / dt)
"""


PLAIN_CHAIN = r"""
import socket, sys, time, multiprocessing as mp
size, hops = int(sys.argv[1]), int(sys.argv[2])
def listener():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1); return s
def source(port):
    c = socket.create_connection(("127.0.0.1", port)); buf = memoryview(bytearray(b"x" * (1 << 20)))
    left = size
    while left:
        n = min(left, len(buf)); c.sendall(buf[:n]); left -= n
    c.close()
def relay(srv, port, q, ready):
    buf = memoryview(bytearray(size)); got = 0; t0 = None  # touched before the clock starts
    ready.put(1)
    conn, _ = srv.accept()
    out = socket.create_connection(("127.0.0.1", port)) if port else None
    while got < size:
        k = conn.recv_into(buf[got:], min(1 << 20, size - got))
        if not k: break
        t0 = t0 or time.perf_counter()
        if out: out.sendall(buf[got : got + k])
        got += k
    q.put(time.perf_counter())
    if out: out.close()
ctx = mp.get_context("fork"); q = ctx.Queue(); ready = ctx.Queue()
srvs = [listener() for _ in range(hops)]
ports = [s.getsockname()[1] for s in srvs] + [0]
procs = [ctx.Process(target=relay, args=(srvs[i], ports[i + 1], q, ready)) for i in range(hops)]
for p in procs: p.start()
for _ in procs: ready.get(timeout=600)
t0 = time.perf_counter(); src = ctx.Process(target=source, args=(ports[0],)); src.start()
ends = [q.get(timeout=600) for _ in range(hops)]
for p in procs + [src]: p.join()
print(size / (max(ends) - t0))
"""


def plain_chain_rate(size: int, hops: int = 3) -> float:
    out = subprocess.run([sys.executable, "-c", PLAIN_CHAIN, str(size), str(hops)], capture_output=True)
    return float(out.stdout)


def load() -> str:
    return "load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def plain_rate(size: int, keep: bool) -> float:
    out = subprocess.run([sys.executable, "-c", PLAIN, str(size), "keep" if keep else "wire"], capture_output=True)
    return float(out.stdout)


def topocast_command() -> list[str]:
    """The installed ``topocast`` command beside this interpreter (what a user runs), or
    ``python -m topocast`` from a source tree without one."""
    script = Path(sys.executable).with_name("topocast")
    return [str(script)] if script.exists() else [sys.executable, "-m", "topocast"]


def topocast_run(args: list[str], *, as_json: bool = True) -> tuple[str, float]:
    """The command's standard output (JSON, or the table a user sees) and its wall time."""
    t = time.perf_counter()
    out = subprocess.run(
        [*topocast_command(), "run", *args, *(["--json"] if as_json else [])], capture_output=True, text=True
    )
    wall = time.perf_counter() - t
    if out.returncode not in (0, 1) or not out.stdout.strip():
        sys.exit(f"topocast run failed: {out.stderr.strip()[-2000:]}")
    return out.stdout, wall


def topocast_json(args: list[str]) -> tuple[dict, float]:
    stdout, wall = topocast_run(args)
    return json.loads(stdout), wall


def table_makespan(table: str) -> float:
    """The measured seconds of the table's ``total`` row."""
    for line in table.splitlines():
        cells = [c.strip() for c in line.replace("┃", "│").split("│")]
        if len(cells) > 2 and cells[1] == "total":
            return float(cells[2])
    raise ValueError(f"no total row in:\n{table}")


def spread(xs: list[float], scale: float = 1.0, fmt: str = "{:.2f}") -> str:
    xs = [x * scale for x in xs]
    return f"{fmt.format(statistics.median(xs))} ({fmt.format(min(xs))}-{fmt.format(max(xs))})"


def gbit(x: float) -> float:
    return x * 8 / 1e9


def make_file(path: Path, size: int) -> str:
    """A ``size``-byte file of generated bytes; returns its sha256."""
    h = hashlib.sha256()
    block = memoryview(bytearray(64 << 20))
    with open(path, "wb") as fh:
        for off in range(0, size, len(block)):
            part = block[: min(len(block), size - off)]
            generate_into(7, off, part)
            h.update(part)
            fh.write(part)
    return h.hexdigest()


def sha256_of(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", default="1GiB")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--big", default="10GiB", help="size of the --dest-dir file case (0: skip it)")
    ap.add_argument("--dir", default=None, help="where the file case writes (default: a temporary folder)")
    args = ap.parse_args()
    size, big = parse_size(args.size), parse_size(args.big)
    compileall.compile_dir(Path(topocast.__file__).parent, quiet=1)
    work = Path(tempfile.mkdtemp(prefix="bench-runtime-", dir=args.dir))
    try:
        (work / "star.yaml").write_text(STAR)
        (work / "pair.yaml").write_text(PAIR)
        print(f"# runtime speed, {size} bytes, {args.repeat} repeats, {os.cpu_count()} cores, {load()}")
        wire, keep, plain_chain = [], [], []
        pair, pair_wall, pair_cold_wall, chain_min, chain, chain_wall = [], [], [], [], [], []
        for _ in range(args.repeat):
            wire.append(plain_rate(size, keep=False))
            keep.append(plain_rate(size, keep=True))
            plain_chain.append(plain_chain_rate(size))
            d, w = topocast_json([str(work / "pair.yaml"), "-a", "flat", "-s", "s", "--size", str(size)])
            pair.append(d["measured"]["aggregate_bandwidth"])
            pair_wall.append((w, d["measured"]["makespan"]))
            d, w = topocast_json(
                [str(work / "pair.yaml"), "-a", "flat", "-s", "s", "--size", str(size), "--no-prefault"]
            )
            pair_cold_wall.append((w, d["measured"]["makespan"]))
            d, w = topocast_json([str(work / "star.yaml"), "-a", "depth_first", "-s", "s", "--size", str(size)])
            rates = [h["rate"] for h in d["measured"]["per_host"].values()]
            chain_min.append(min(rates))
            chain.append(statistics.mean(rates))
            chain_wall.append((w, d["measured"]["makespan"]))
        ref = statistics.median(wire)
        ref = max(ref, statistics.median(keep))  # the faster of the two plain loops is the reference
        print(f"plain loop, reused buffer (the wire): {spread(wire, 8e-9)} Gbit/s")
        print(f"plain loop, into a message-sized buffer: {spread(keep, 8e-9)} Gbit/s")
        print(
            f"pair (flat, s -> d1): {spread(pair, 8e-9)} Gbit/s = {statistics.median(pair) / ref:.0%} of the plain loop"
        )
        print(
            f"chain (depth_first, 4 hosts): slowest host {spread(chain_min, 8e-9)} Gbit/s = "
            f"{statistics.median(chain_min) / ref:.0%} of the plain loop (mean host {spread(chain, 8e-9)})"
        )
        print(
            f"plain relay chain (4 processes, each keeping the message and forwarding it): slowest host "
            f"{spread(plain_chain, 8e-9)} Gbit/s; topocast's slowest host = "
            f"{statistics.median(chain_min) / statistics.median(plain_chain):.0%} of it"
        )
        for name, walls in (("pair", pair_wall), ("pair --no-prefault", pair_cold_wall), ("chain", chain_wall)):
            ratio = [w / (1.3 * m + 0.5) for w, m in walls]
            print(
                f"{name} whole command: wall {spread([w for w, _ in walls])} s, makespan "
                f"{spread([m for _, m in walls])} s, wall / (1.3 x makespan + 0.5 s) = {spread(ratio)}"
            )
        start_case(args.repeat)
        print(f"# {load()}")
        if big:
            file_case(work, big)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def start_case(repeat: int) -> None:
    """The small run whose cost is all start and finish (issue target: under 1 s wall), run
    exactly as a user types it: the installed command, printing its table."""
    walls, spans = [], []
    for _ in range(repeat):
        table, wall = topocast_run(
            ["builtin:two-clusters", "-a", "stable", "-s", "s", "--size", "8MiB", "--launcher", "local"], as_json=False
        )
        walls.append(wall)
        spans.append(table_makespan(table))
    print(
        f"start: `{' '.join(Path(a).name for a in topocast_command()[:1])} run builtin:two-clusters -a stable -s s "
        f"--size 8MiB --launcher local`, wall {spread(walls)} s, makespan {spread(spans)} s, "
        f"wall - makespan {spread([w - m for w, m in zip(walls, spans)])} s"
    )


def file_case(work: Path, big: int) -> None:
    src = work / "message.bin"
    t = time.perf_counter()
    want = make_file(src, big)
    print(f"file case: wrote {big} bytes in {time.perf_counter() - t:.1f} s; {load()}")
    dest = work / "dest"
    d, wall = topocast_json(
        [str(work / "star.yaml"), "-a", "flat", "-s", "s", "--file", str(src), "--dest-dir", str(dest)]
    )
    m = d["measured"]
    print(
        f"file case: {big} bytes to 3 hosts, makespan {m['makespan']:.1f} s, "
        f"{gbit(m['aggregate_bandwidth']):.2f} Gbit/s aggregate, wall {wall:.1f} s, failed {d['failed'] or 'none'}"
    )
    rss = d.get("peak_rss_bytes") or {}
    print("  peak RSS (MiB): " + ", ".join(f"{h} {v / 2**20:.0f}" for h, v in rss.items()))
    for h in ("d1", "d2", "d3"):
        copy = dest / h / src.name
        ok = copy.exists() and sha256_of(copy) == want
        print(f"  {h}: sha256 {'equal to the source' if ok else 'DIFFERENT or missing'}")
        if copy.exists():
            copy.unlink()
    print(f"# {load()}")


if __name__ == "__main__":
    sys.exit(main())
