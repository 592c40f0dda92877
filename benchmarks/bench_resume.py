"""Resume after an interruption: a ``--file`` run with ``--dest-dir`` on the local launcher
is killed (the coordinator, SIGKILL) once its receivers hold ``--at`` of what they want; the
same run again moves only the rest. Prints the bytes kept and moved, the fraction of the
whole that moved again, and whether every copy's sha256 equals the source's.

    PYTHONPATH=src python benchmarks/bench_resume.py --size 2GiB --at 0.5

Target (issue "runs that follow the network"): at half, the re-run moves at most 55 %.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from topocast.plan import Plan, Transfer
from topocast.runtime import make_launcher, perform
from topocast.units import parse_size

HOSTS = ["a", "b", "c", "d"]

CHILD = textwrap.dedent(
    """
    import os, signal, sys
    sys.path.insert(0, {bench!r})
    from bench_resume import chain
    from topocast.runtime import make_launcher, perform

    def progress(held, seconds):
        if sum(held.values()) >= {at} * {size} * len(held):
            os.kill(os.getpid(), signal.SIGKILL)
    perform(chain({size}), launcher=make_launcher("local"), file={file!r}, dest_dir={dest!r}, on_progress=progress)
    """
)


def chain(size: int) -> Plan:
    """s -> a, then a pipelined chain a -> b -> c -> d."""
    t = [Transfer.of("s", "a", 0, size)]
    t += [Transfer.of(x, y, 0, size, pipelined=True) for x, y in zip(HOSTS, HOSTS[1:])]
    return Plan.broadcast("s", size, HOSTS, t, planner="chain")


def sha256(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def write_random(path: Path, size: int, seed: int) -> None:
    rng = random.Random(seed)
    with open(path, "wb") as fh:
        left = size
        while left:
            n = min(left, 8 << 20)
            fh.write(rng.randbytes(n))
            left -= n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="2GiB")
    ap.add_argument("--at", type=float, default=0.5, help="fraction held when the coordinator is killed")
    ap.add_argument("--seed", type=int, default=None, help="file contents (default: drawn now, printed)")
    args = ap.parse_args()
    size = int(parse_size(args.size))
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    print(f"seed {seed}; size {size}; kill at {args.at:.0%}; load {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory(prefix="bench-resume-") as tmp:
        work = Path(tmp)
        src, dest = work / "msg.bin", work / "out"
        write_random(src, size, seed)
        want_sha = sha256(src)
        script = CHILD.format(
            bench=os.path.dirname(os.path.abspath(__file__)), at=args.at, size=size, file=str(src), dest=str(dest)
        )
        t = time.monotonic()
        rc = subprocess.run([sys.executable, "-c", script]).returncode
        print(f"interrupted run: exit {rc} after {time.monotonic() - t:.1f} s")
        time.sleep(2.0)  # the orphaned agents notice and exit
        t = time.monotonic()
        out = perform(chain(size), launcher=make_launcher("local"), file=str(src), dest_dir=str(dest))
        wall = time.monotonic() - t
        want = size * len(HOSTS)
        kept, moved = sum(out.kept.values()), sum(out.received.values())
        print(
            f"re-run: {wall:.1f} s, failed {out.failed or 'none'}; kept {kept} bytes ({kept / want:.1%}), "
            f"moved {moved} bytes = {moved / want:.1%} of the whole (target <= 55 %)"
        )
        same = all(sha256(dest / h / src.name) == want_sha for h in HOSTS)
        print(f"sha256 of every copy equal to the source's: {same}; load {os.getloadavg()[0]:.1f}")
        return 0 if same and not out.failed else 1


if __name__ == "__main__":
    sys.exit(main())
