"""Measured half of docs/experiments/pipeline-depth.md: ``stable``'s chain against ``two_tree``
on the emulated 24-host two-switch network, runs alternating, with where each hop's start goes.

Needs root and a testbed up (``topocast testbed up TOPOLOGY --name NAME``); run it under the
benchmark lock so nothing else measures at the same time::

    sudo topocast testbed up docs/experiments/topologies/two-switch-24.yaml --name tt24
    sudo flock /tmp/topocast-bench.lock env PYTHONPATH=src python \\
        docs/experiments/pipeline_depth_testbed.py --testbed tt24 --chunks 64KiB,256KiB --repeat 3
    sudo topocast testbed down tt24

Per run: predicted and measured makespan, measured aggregate bandwidth over the bound, the
agents' CPU seconds, and two medians over the pipelined hops (from the agents' timeline):
``wake`` is from the upstream hop's data connection to this hop's sender holding its first
chunk (one chunk's time plus the relay's wake-up), ``connect`` is from then to this hop's
data connection being authenticated. A chain pays both once per hop, a tree once per level.
"""

from __future__ import annotations

import argparse
import os
import statistics
from pathlib import Path

from topocast import Broadcast, broadcast_bounds
from topocast.planners import get_planner
from topocast.runtime import make_launcher, perform
from topocast.runtime.calibration import GOODPUT_TESTBED, scale_caps
from topocast.runtime.prediction import predict
from topocast.topology import load_topology
from topocast.units import parse_size

TOPOLOGY = Path(__file__).resolve().parent / "topologies" / "two-switch-24.yaml"


def hop_medians(plan, send_times) -> tuple[float, float]:
    """Median wake-up and connection set-up of the pipelined hops (seconds)."""
    wake, connect = [], []
    for i, t in enumerate(plan.transfers):
        if i not in send_times or t.upstream is None or t.upstream not in send_times:
            continue
        ready, connected = send_times[i]
        # the upstream starts sending once it is ready and connected (a pipelined transfer
        # connects early, before it is ready); set-up after readiness is on the critical path
        wake.append(ready - max(send_times[t.upstream]))
        connect.append(max(0.0, connected - ready))
    return (statistics.median(wake), statistics.median(connect)) if wake else (float("nan"), float("nan"))


def one_run(topo, name, source, size, chunk, testbed):
    plan = get_planner("broadcast", name)(topo, Broadcast(source, size))
    plan = scale_caps(plan, GOODPUT_TESTBED).with_chunk_size(chunk)
    predicted = predict(plan, topo, chunk, GOODPUT_TESTBED)
    outcome = perform(
        plan,
        topo,
        launcher=make_launcher("testbed", testbed_name=testbed),
        chunk_size=chunk,
        fair_uplink=True,
        goodput=GOODPUT_TESTBED,
        prefault=True,
    )
    if outcome.failed:
        raise SystemExit(f"{name}: hosts failed: {outcome.failed}")
    return plan, predicted, outcome


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--testbed", required=True, help="name of a testbed that is up (topocast testbed up)")
    ap.add_argument("--topology", default=str(TOPOLOGY))
    ap.add_argument("--source", default="a00")
    ap.add_argument("--size", default="16MB")
    ap.add_argument("--chunks", default="64KiB,256KiB", help="chunk sizes, comma-separated")
    ap.add_argument("--planners", default="stable,two_tree")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    topo = load_topology(args.topology)
    size = int(parse_size(args.size, field="--size"))
    bound = broadcast_bounds(topo, args.source).aggregate_bandwidth
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    print("chunk    planner    depth  predicted s  measured s  measured/bound  agent cpu s  wake ms  connect ms")
    for rep in range(args.repeat):
        for chunk_text in filter(None, args.chunks.split(",")):
            chunk = int(parse_size(chunk_text, field="--chunks"))
            for name in filter(None, args.planners.split(",")):
                plan, predicted, outcome = one_run(topo, name, args.source, size, chunk, args.testbed)
                wake, connect = hop_medians(plan, outcome.send_times)
                depth = plan.notes.get("depth", len(plan.transfers))
                print(
                    f"{chunk_text:8s} {name:10s} {depth:5d}  {predicted.makespan:11.3f}  {outcome.result.makespan:10.3f}"
                    f"  {outcome.result.aggregate_bandwidth / bound:14.3f}  {sum(outcome.cpu.values()):11.2f}"
                    f"  {wake * 1e3:7.1f}  {connect * 1e3:10.1f}",
                    flush=True,
                )
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)


if __name__ == "__main__":
    main()
