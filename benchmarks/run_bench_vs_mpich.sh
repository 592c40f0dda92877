#!/bin/sh
# Launcher for the MPICH side-by-side (needs root): installs nothing, checks, then runs.
#   benchmarks/run_bench_vs_mpich.sh [--size 32MiB] [--json results.json]
set -e
cd "$(dirname "$0")/.."
python3 -c "import mpi4py" 2>/dev/null || { echo "need: pip install mpi4py mpich (or pip install .[mpi])"; exit 2; }
command -v mpiexec >/dev/null || { echo "need mpiexec (pip install mpich)"; exit 2; }
echo "load: $(uptime)"
PYTHONPATH=src exec python3 benchmarks/bench_vs_mpich.py "$@"
