"""topocast beside SMPI (SimGrid's MPI simulator) on the collectives both have: the same
random trees, root, size and algorithm; CPU time, wall time and peak memory of each whole
process, and both predicted times with their ratio.

Networks: ``topocast topology generate random-tree --hosts N --switches N/4 --min-mbit 100
--max-mbit 1000 --seed S`` (a fresh seed per run unless ``--seed``; printed so a run
replays), exported with ``topocast topology convert`` to a SimGrid platform. SMPI runs a tiny
C program (written and compiled with ``smpicc`` in a temporary folder) that calls
``MPI_Bcast`` from rank 0 or ``MPI_Allreduce`` once, with SimGrid's CM02 model without the TCP
window bound and without cross traffic (the fluid max-min model topocast simulates, as
``benchmarks/simgrid_flows.py`` and tests/topology/simgrid_oracle.py) and no computation;
its prediction is the latest rank's completion. topocast's child process loads the topology,
plans with the matching planner and simulates (``topocast simulate -a`` does the same work,
plus a plan check and a table).

Pairs (topocast planner / SMPI algorithm):

* broadcast ``scatter_allgather_ring`` / ``smpi/bcast:scatter_LR_allgather``
* broadcast ``binomial`` / ``smpi/bcast:binomial_tree``
* broadcast ``scatter_allgather_rdb`` / ``smpi/bcast:scatter_rdb_allgather``
* allreduce ``ring`` / ``smpi/allreduce:lr``
* allreduce ``rabenseifner`` / ``smpi/allreduce:rab_rdb``

Timings are of child processes (os.wait4: user + sys CPU, peak RSS), the lower of
``--repeat`` runs (topocast's bytecode and numba's kernels cached, as on an installation after
its first run); the machine load is printed beside each row. SMPI parts are skipped, with
a line saying so, when ``smpirun``/``smpicc`` are missing (Debian: ``apt-get install
libsimgrid-dev``).

    PYTHONPATH=src python benchmarks/bench_vs_smpi.py [--hosts 128,256,512] [--size 16MiB]
        [--algorithms ring,binomial,...] [--seed S] [--repeat 2] [--timeout 900] [--core fast]
        [--json out.json] [--skip-smpi]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# name: (collective, topocast planner, SMPI configuration)
PAIRS = {
    "ring": ("broadcast", "scatter_allgather_ring", "smpi/bcast:scatter_LR_allgather"),
    "binomial": ("broadcast", "binomial", "smpi/bcast:binomial_tree"),
    "scatter_rdb": ("broadcast", "scatter_allgather_rdb", "smpi/bcast:scatter_rdb_allgather"),
    "allreduce_ring": ("allreduce", "ring", "smpi/allreduce:lr"),
    "rabenseifner": ("allreduce", "rabenseifner", "smpi/allreduce:rab_rdb"),
}
SMPI_CONFIG = (
    "--cfg=network/model:CM02",
    "--cfg=network/TCP-gamma:0",
    "--cfg=network/crosstraffic:0",
    "--cfg=smpi/simulate-computation:no",
    "--log=root.thres:critical",
)

COLLECTIVE_C = r"""
#include <mpi.h>
#include <smpi/smpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* coll bcast|allreduce BYTES: one collective from rank 0's start; rank 0 prints the latest
   completion time over the ranks */
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  long bytes = atol(argv[2]);
  double start = MPI_Wtime();
  if (strcmp(argv[1], "broadcast") == 0) {
    char *buf = SMPI_SHARED_MALLOC(bytes);
    MPI_Bcast(buf, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
  } else {
    double *in = SMPI_SHARED_MALLOC(bytes), *out = SMPI_SHARED_MALLOC(bytes);
    MPI_Allreduce(in, out, (int)(bytes / sizeof(double)), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  double took = MPI_Wtime() - start, latest;
  MPI_Reduce(&took, &latest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("%.17g\n", latest);
  MPI_Finalize();
  return 0;
}
"""

TOPOCAST_CHILD = """
import json, sys
from topocast import Allreduce, Broadcast, simulate
from topocast.planners import get_planner
from topocast.topology import load_topology
path, collective, planner, size, core = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
topo = load_topology(path)
request = Broadcast(topo.hosts[0], size) if collective == "broadcast" else Allreduce(size)
plan = get_planner(collective, planner)(topo, request)
result = simulate(plan, topo, core=core)
print(json.dumps({"makespan": result.makespan, "transfers": len(plan.transfers), "numba": "numba" in sys.modules}))
"""


def load() -> str:
    return "load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def measured(argv: list[str], timeout: float, env: dict | None = None) -> tuple[float, float, float, str]:
    """(CPU seconds user + sys, wall seconds, peak RSS MiB, stdout) of ``argv`` as a child
    process and its descendants (os.wait4); killed after ``timeout`` seconds."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(argv, stdout=out, stderr=err, text=True, env=env)
        deadline = t0 + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
                os.wait4(proc.pid, 0)
                raise subprocess.TimeoutExpired(argv, timeout)
            time.sleep(0.01)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if proc.returncode:
        raise RuntimeError(f"{' '.join(argv[:3])} ... failed ({proc.returncode}): {stderr.strip()[-800:]}")
    return usage.ru_utime + usage.ru_stime, wall, usage.ru_maxrss / 1024, stdout


def best(runs: list[tuple[float, float, float, str]]) -> tuple[float, float, float, str]:
    return min(runs, key=lambda r: r[0])


def network(work: Path, hosts: int, seed: int) -> tuple[Path, Path, Path]:
    """The random tree as topocast YAML, SimGrid XML and an SMPI host file (rank order = the
    topology's host order, so rank 0 is topocast's default source)."""
    yaml, xml, hostfile = (work / f"rt{hosts}-s{seed}.{ext}" for ext in ("yaml", "xml", "hosts"))
    cli = [sys.executable, "-m", "topocast.cli.main"]
    subprocess.run(
        [*cli, "topology", "generate", "random-tree", "--hosts", str(hosts), "--switches", str(hosts // 4)]
        + ["--min-mbit", "100", "--max-mbit", "1000", "--seed", str(seed), "-o", str(yaml)],
        check=True,
        capture_output=True,
    )
    subprocess.run([*cli, "topology", "convert", str(yaml), str(xml)], check=True, capture_output=True)
    from topocast.topology import load_topology

    hostfile.write_text("\n".join(load_topology(str(yaml)).hosts) + "\n")
    return yaml, xml, hostfile


def smpi_program(work: Path) -> Path | None:
    """The collective program compiled with smpicc (None: SMPI is not installed)."""
    if not (shutil.which("smpirun") and shutil.which("smpicc")):
        return None
    source = work / "collective.c"
    source.write_text(COLLECTIVE_C)
    binary = work / "collective"
    subprocess.run(["smpicc", "-O2", str(source), "-o", str(binary)], check=True, capture_output=True)
    return binary


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hosts", default="128,256,512", help="comma-separated host counts (default 128,256,512)")
    ap.add_argument("--size", type=int, default=16 << 20, help="bytes (default 16 MiB)")
    ap.add_argument("--algorithms", default=",".join(PAIRS), help=f"comma-separated, of {', '.join(PAIRS)}")
    ap.add_argument("--seed", type=int, default=None, help="tree seed (default: a fresh one, printed)")
    ap.add_argument("--repeat", type=int, default=2, help="runs per measurement; the lowest CPU time is kept")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds before a run is stopped")
    ap.add_argument("--core", default="fast", help="simulate's core: fast (default), compiled or reference")
    ap.add_argument("--json", help="also write the figures to this file")
    ap.add_argument(
        "--skip-smpi",
        action="store_true",
        help="topocast's side only (to set beside the SMPI figures of another run in the same time window)",
    )
    args = ap.parse_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 10**6)
    names = [a.strip() for a in args.algorithms.split(",") if a.strip()]
    unknown = sorted(set(names) - set(PAIRS))
    if unknown:
        ap.error(f"unknown algorithms {unknown}; known: {', '.join(PAIRS)}")
    print(f"seed {seed}, size {args.size} bytes, core {args.core}, python {sys.version.split()[0]}, {load()}")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")])))
    # topocast runs as an installation does: its bytecode cached after the first run (as
    # numba's kernels are), even where the environment turns the cache off
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    report = []
    with tempfile.TemporaryDirectory(prefix="topocast-smpi-") as tmp:
        work = Path(tmp)
        binary = None if args.skip_smpi else smpi_program(work)
        if args.skip_smpi:
            print("SMPI: skipped (--skip-smpi)")
        elif binary is None:
            print("SMPI: skipped (smpirun/smpicc not found; Debian: apt-get install libsimgrid-dev)")
        child = work / "topocast_child.py"
        child.write_text(TOPOCAST_CHILD)
        header = (
            f"{'hosts':>5} {'algorithm':<15} {'transfers':>9} | {'topocast CPU':>12} {'wall':>7} {'MiB':>6} |"
            f" {'SMPI CPU':>8} {'wall':>7} {'MiB':>6} | {'CPU ratio':>9} | {'topocast s':>12} {'SMPI s':>12}"
            f" {'pred. ratio':>11}"
        )
        print(header)
        for hosts in (int(h) for h in args.hosts.split(",")):
            yaml, xml, hostfile = network(work, hosts, seed)
            for name in names:
                row = run_pair(name, hosts, yaml, xml, hostfile, binary, child, env, args)
                report.append(row)
                print(format_row(row), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"seed": seed, "size": args.size, "rows": report}, indent=1))
    return 0


def run_pair(name, hosts, yaml, xml, hostfile, binary, child, env, args) -> dict:
    collective, planner, smpi_cfg = PAIRS[name]
    row: dict = {"hosts": hosts, "algorithm": name, "load": load()}
    try:
        runs = [
            measured(
                [sys.executable, str(child), str(yaml), collective, planner, str(args.size), args.core],
                args.timeout,
                env,
            )
            for _ in range(args.repeat)
        ]
        cpu, wall, rss, out = best(runs)
        got = json.loads(out)
        row.update(topocast_cpu=cpu, topocast_wall=wall, topocast_mib=rss, topocast_s=got["makespan"])
        row["transfers"] = got["transfers"]
        row["numba"] = got["numba"]
    except subprocess.TimeoutExpired:
        row["topocast_error"] = f"over {args.timeout:.0f} s"
    if binary is not None:
        smpi = ["smpirun", "-np", str(hosts), "-platform", str(xml), "-hostfile", str(hostfile)]
        smpi += [*SMPI_CONFIG, f"--cfg={smpi_cfg}", str(binary), collective, str(args.size)]
        try:
            cpu, wall, rss, out = best([measured(smpi, args.timeout) for _ in range(args.repeat)])
            row.update(smpi_cpu=cpu, smpi_wall=wall, smpi_mib=rss, smpi_s=float(out.split()[-1]))
        except subprocess.TimeoutExpired:
            row["smpi_error"] = f"over {args.timeout:.0f} s"
    return row


def format_row(row: dict) -> str:
    def num(key, fmt):
        return format(row[key], fmt) if key in row else "-"

    cpu_ratio = pred_ratio = "-"
    if "topocast_cpu" in row and "smpi_cpu" in row:
        cpu_ratio = f"{row['topocast_cpu'] / row['smpi_cpu']:.2f}"
    if "topocast_s" in row and "smpi_s" in row:
        pred_ratio = f"{row['topocast_s'] / row['smpi_s']:.5f}"
    errors = " ".join(row.get(k, "") for k in ("topocast_error", "smpi_error")).strip()
    return (
        f"{row['hosts']:>5} {row['algorithm']:<15} {num('transfers', ',d'):>9} |"
        f" {num('topocast_cpu', '.2f'):>12} {num('topocast_wall', '.2f'):>7} {num('topocast_mib', '.0f'):>6} |"
        f" {num('smpi_cpu', '.2f'):>8} {num('smpi_wall', '.2f'):>7} {num('smpi_mib', '.0f'):>6} |"
        f" {cpu_ratio:>9} | {num('topocast_s', '.6f'):>12} {num('smpi_s', '.6f'):>12} {pred_ratio:>11}"
        f"  [{row['load']}]" + (" numba" if row.get("numba") else "") + (f" {errors}" if errors else "")
    )


if __name__ == "__main__":
    sys.exit(main())
