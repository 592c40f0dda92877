"""Simulate a set of flows with SimGrid (run by /usr/bin/python3, where Debian's python3-simgrid lives).

Usage: simgrid_flows.py FLOWS.json
FLOWS.json: {"platform": "platform.xml", "flows": [[src, dst, bytes], ...]}; every flow starts at
time 0. Prints JSON {"times": [completion time of each flow], "run_seconds": wall time of the
simulation (platform loading excluded)}. benchmarks/bench_scale.py drives it.
"""

import json
import sys
import time

import simgrid


def main(argv):
    with open(argv[1]) as fh:
        spec = json.load(fh)
    # CM02 without the TCP window bound and without cross traffic: the fluid max-min model
    # topocast simulates (as tests/topology/simgrid_oracle.py)
    engine = simgrid.Engine(
        [
            "flows",
            "--log=root.thres:critical",
            "--cfg=network/model:CM02",
            "--cfg=network/TCP-gamma:0",
            "--cfg=network/crosstraffic:0",
        ]
    )
    engine.load_platform(spec["platform"])
    hosts = {h.name: h for h in engine.all_hosts}
    times = [None] * len(spec["flows"])

    def sender(box, size):
        simgrid.Mailbox.by_name(box).put("x", size)

    def receiver(box, k):
        simgrid.Mailbox.by_name(box).get()
        times[k] = simgrid.Engine.clock

    for k, (src, dst, size) in enumerate(spec["flows"]):
        box = f"f{k}"
        simgrid.Actor.create(f"s{k}", hosts[src], sender, box, int(size))
        simgrid.Actor.create(f"r{k}", hosts[dst], receiver, box, k)
    t0 = time.perf_counter()
    engine.run()
    json.dump({"times": times, "run_seconds": time.perf_counter() - t0}, sys.stdout)


if __name__ == "__main__":
    main(sys.argv)
