#!/usr/bin/env bash
# System and Python packages for the runtime/testbed tests and the MPICH side-by-side.
# Called by .ci/run (as root). Every step is optional: without it the tests that need it skip
# with a reason.
set -u
export DEBIAN_FRONTEND=noninteractive
if command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq || true
    # iproute2: ip netns/veth/bridge + tc (HTB) for the emulated network;
    # openssh-server/-client: the ssh launcher test starts its own sshd on loopback.
    apt-get install -y -qq --no-install-recommends iproute2 openssh-server openssh-client || true
    # python3-simgrid: SimGrid 3.32 for /usr/bin/python3, the oracle of the SimGrid route tests
    # (tests/topology/test_simgrid_routes.py) and of the simulator comparisons.
    apt-get install -y -qq --no-install-recommends python3-simgrid || true
fi
mkdir -p /run/sshd 2>/dev/null || true
# mpi4py and MPICH (tests/mpi, benchmarks/bench_vs_mpich.py) are Python wheels: .ci/run
# installs the extra [mpi] into its virtual environment (pip install '.[mpi]').
exit 0
