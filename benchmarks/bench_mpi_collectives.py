#!/usr/bin/env python3
"""topocast.mpi's drop-in collectives beside MPICH's own, in one MPI job on the emulated network.

For each topology the script builds the testbed (needs root) and starts one MPI rank per
emulated host inside its network namespace (``bench_vs_mpich.mpiexec_command``: MPICH's
netmod ofi/tcp on the hosts' data interface, shared memory off). In that job
(``mpi_collectives_rank.py``), for every size, ``comm.Bcast`` and ``topocast.mpi.bcast`` (root:
the topology's source ``s``) and ``comm.Allreduce`` and ``topocast.mpi.allreduce`` (int32,
SUM) run alternately ``--repeats`` times; each call is timed on every rank from a barrier
to its return. It prints, per case, MPICH's and topocast's figures (every repeat) and the
ratios best vs best and median vs median:

* bcast: aggregate bandwidth = sum over the non-root ranks of size / time to return;
* allreduce: time until the last rank returns.

    sudo PYTHONPATH=src python benchmarks/bench_mpi_collectives.py \\
        --topology builtin:hetero-2switch --sizes 64KiB,1MiB,32MiB --collectives bcast --json out.json

The load average is printed beside every topology (the machine's 2 cores are shared).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE))

from bench_vs_mpich import load, mpiexec_command  # noqa: E402

from topocast.testbed import down, up  # noqa: E402
from topocast.topology import load_topology  # noqa: E402
from topocast.units import parse_size  # noqa: E402

MBIT = 1e6 / 8


def figure(run: dict) -> float:
    """bcast: aggregate bandwidth (bytes/s); allreduce: seconds until the last rank returned."""
    times = run["times"]
    if run["collective"] == "bcast":
        return sum(run["size"] / t for t in times[1:])
    return max(times)


def summarize(runs: list[dict]) -> list[dict]:
    cases: dict = {}
    for r in runs:
        cases.setdefault((r["collective"], r["size"]), {}).setdefault(r["impl"], []).append(figure(r))
    out = []
    for (coll, size), by in cases.items():
        better = max if coll == "bcast" else min
        m, t = better(by["mpi"]), better(by["topocast"])
        mm, mt = statistics.median(by["mpi"]), statistics.median(by["topocast"])
        out.append(
            {
                "collective": coll,
                "size": size,
                "mpich": by["mpi"],
                "topocast": by["topocast"],
                "best_mpich": m,
                "best_topocast": t,
                # > 1: topocast is better (more bandwidth, or less time)
                "speedup": t / m if coll == "bcast" else m / t,
                "median_mpich": mm,
                "median_topocast": mt,
                "median_speedup": mt / mm if coll == "bcast" else mm / mt,
            }
        )
    return out


def show(topo_name: str, summary: list[dict], plans: dict) -> None:
    print(f"\n{topo_name}  (load {load()})")
    for c in summary:
        size = f"{c['size'] / 2**20:g} MiB" if c["size"] >= 2**20 else f"{c['size'] // 1024} KiB"
        if c["collective"] == "bcast":
            unit = "aggregate Mbit/s (higher is better)"
            fm = ", ".join(f"{x / MBIT:.1f}" for x in c["mpich"])
            ft = ", ".join(f"{x / MBIT:.1f}" for x in c["topocast"])
        else:
            unit = "s until the last rank returns (lower is better)"
            fm = ", ".join(f"{x:.3f}" for x in c["mpich"])
            ft = ", ".join(f"{x:.3f}" for x in c["topocast"])
        plan = plans.get(f"{c['collective']} {c['size']}", {})
        print(
            f"  {c['collective']:>9} {size:>8}: MPICH [{fm}]  topocast [{ft}]  {unit}; "
            f"best vs best: topocast {c['speedup']:.2f}x, median vs median {c['median_speedup']:.2f}x  "
            f"(plan: {plan.get('choice') or plan.get('planner')})"
        )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topology", action="append", default=None)
    ap.add_argument("--sizes", default="64KiB,1MiB,32MiB")
    ap.add_argument("--collectives", default="bcast,allreduce")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--algorithm", default="auto", help="topocast planner (default auto)")
    ap.add_argument(
        "--chunk-size", default=None, help="topocast's chunk size (e.g. 256KiB; default: the plan's, else 64 KiB)"
    )
    ap.add_argument(
        "--no-check",
        action="store_true",
        help="timed topocast calls pass check=False (no vote on the arguments; the warm-up calls agree on them)",
    )
    ap.add_argument("--timeout", type=float, default=540)
    ap.add_argument("--json", default=None, help="write all numbers here")
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("bench_mpi_collectives: needs root (emulated network)", file=sys.stderr)
        return 2
    sizes = [int(parse_size(s, field="--sizes")) for s in args.sizes.split(",") if s]
    chunk = int(parse_size(args.chunk_size, field="--chunk-size")) if args.chunk_size else 0
    everything: dict = {"args": vars(args), "topologies": []}
    for spec in args.topology or ["builtin:hetero-2switch", "builtin:uniform-2switch", "builtin:two-clusters"]:
        topo = load_topology(spec)
        source = "s" if "s" in topo.hosts else topo.hosts[0]
        order = [source] + [h for h in topo.hosts if h != source]
        st = up(topo, name=f"mpic-{os.getpid()}")
        try:
            rank_args = [str(HERE / "mpi_collectives_rank.py"), spec, ",".join(order), ",".join(map(str, sizes))]
            rank_args += [args.collectives, str(args.repeats), args.algorithm, "nocheck" if args.no_check else "check"]
            rank_args += [str(chunk)]
            cmd, why = mpiexec_command(st, order, rank_args)
            if cmd is None:
                print(f"{spec}: skipped: {why}")
                continue
            src = str(HERE.parent / "src")
            cmd[cmd.index("-genv") : cmd.index("-genv")] = [
                "-genv",
                "PYTHONPATH",
                src,
                "-genv",
                "UCX_LOG_LEVEL",
                "error",
            ]
            ld = load()
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
            line = next((x for x in r.stdout.splitlines() if x.startswith("{")), None)
            if r.returncode or line is None:
                print(f"{spec}: mpiexec failed ({r.returncode}): {r.stderr[-3000:]}")
                continue
            data = json.loads(line)
        finally:
            down(st.name)
        bad = [x for x in data["runs"] if x.get("mismatch_ranks")]
        if bad:
            print(f"{spec}: topocast's result differs from MPICH's on {bad[0]['mismatch_ranks']} ranks")
        summary = summarize(data["runs"])
        show(topo.name, summary, data["plans"])
        everything["topologies"].append(
            {"topology": spec, "order": order, "load_before": ld, "load_after": load(), **data, "summary": summary}
        )
    if args.json:
        Path(args.json).write_text(json.dumps(everything, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
