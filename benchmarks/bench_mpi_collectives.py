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

``--local``: topocast.mpi's per-call cost at small sizes instead, on this machine (no testbed,
no root needed): ``mpiexec -n N`` for each N of ``--ranks`` (``mpi_percall_rank.py``), each
size ``--calls`` calls in a row of MPI's own call, of topocast with the same arguments (a
predicted call), with ``check=False``, and with a root (bcast) or op (allreduce) drawn at
random per call (``--seed``, drawn when not given and printed): calls agreed one by one.
Printed per case: wall and CPU (user+sys) microseconds per call, the median over the ranks,
and the ratio to MPI's own in the same job. ``--profile DIR`` runs topocast's calls under
cProfile (``DIR/rank<k>.prof``, the top of rank 0 printed).

    PYTHONPATH=src python benchmarks/bench_mpi_collectives.py --local --ranks 2,4 --sizes 8,1KiB
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
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


def _mpiexec() -> str | None:
    beside = Path(sys.executable).parent / "mpiexec"  # the mpich wheel installs it beside python
    return str(beside) if beside.exists() else shutil.which("mpiexec")


def per_call(args, sizes: list[int]) -> int:
    """``--local``: the per-call cost of each case at each rank count (module docstring)."""
    mpiexec = _mpiexec()
    if mpiexec is None:
        print("bench_mpi_collectives --local: mpiexec not found", file=sys.stderr)
        return 2
    seed = args.seed if args.seed is not None else random.randrange(2**31)
    print(f"seed {seed} (replay: --seed {seed}); planners: bcast {args.bcast}, allreduce {args.allreduce}")
    env = dict(os.environ, PYTHONPATH=str(HERE.parent / "src"), UCX_LOG_LEVEL="error")
    everything: dict = {"args": vars(args), "seed": seed, "jobs": []}
    for n in [int(x) for x in args.ranks.split(",") if x]:
        config = {"sizes": sizes, "calls": args.calls, "bcast": args.bcast, "allreduce": args.allreduce}
        config |= {"seed": seed, "profile": args.profile or ""}
        if args.profile:
            os.makedirs(args.profile, exist_ok=True)
        before = load()
        cmd = [mpiexec, "-n", str(n), sys.executable, str(HERE / "mpi_percall_rank.py"), json.dumps(config)]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, env=env)
        line = next((x for x in r.stdout.splitlines() if x.startswith("{")), None)
        if r.returncode or line is None:
            print(f"{n} ranks: mpiexec failed ({r.returncode}): {r.stderr[-3000:]}")
            return 1
        data = json.loads(line)
        print(f"\n{n} ranks (load {before} -> {load()}): microseconds per call, median over the ranks")
        ref: dict = {}
        for res in data["results"]:
            wall = statistics.median(w for w, _ in res["per_rank"]) * 1e6
            used = statistics.median(c for _, c in res["per_rank"]) * 1e6
            key = (res["collective"], res["size"])
            if res["case"] == "mpi":
                ref[key] = (wall, used)
            mw, mc = ref[key]
            print(
                f"  {res['collective']:>9} {res['size']:>7} B {res['case']:>8}: wall {wall:8.0f} ({wall / mw:5.1f}x MPI)"
                f"  cpu {used:8.0f} ({used / mc if mc else float('nan'):5.1f}x MPI)"
            )
        everything["jobs"].append({"ranks": n, "load_before": before, "load_after": load(), **data})
        if args.profile:
            import pstats

            print(f"\nrank 0's topocast calls, {n} ranks (cProfile, top by own time):")
            pstats.Stats(os.path.join(args.profile, "rank0.prof")).sort_stats("tottime").print_stats(18)
    if args.json:
        Path(args.json).write_text(json.dumps(everything, indent=1))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topology", action="append", default=None)
    ap.add_argument("--sizes", default=None, help="default 64KiB,1MiB,32MiB (--local: 8,1KiB,64KiB)")
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
    local = ap.add_argument_group("--local: per-call cost on this machine, no testbed")
    local.add_argument("--local", action="store_true", help="measure the per-call cost instead (no root needed)")
    local.add_argument("--ranks", default="2,4", help="rank counts, one mpiexec job each")
    local.add_argument("--calls", type=int, default=300, help="calls per case")
    local.add_argument("--bcast", default="mpich", help="topocast's broadcast planner (default mpich)")
    local.add_argument("--allreduce", default="ring", help="topocast's allreduce planner (default ring)")
    local.add_argument("--seed", type=int, default=None, help="the random roots and ops (default: drawn, printed)")
    local.add_argument("--profile", default=None, help="directory for each rank's cProfile of topocast's calls")
    args = ap.parse_args(argv)
    if args.local:
        sizes = [int(parse_size(s, field="--sizes")) for s in (args.sizes or "8,1KiB,64KiB").split(",") if s]
        return per_call(args, sizes)
    args.sizes = args.sizes or "64KiB,1MiB,32MiB"
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
