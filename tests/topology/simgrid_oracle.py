"""Ask SimGrid itself for routes (run by /usr/bin/python3, where Debian's python3-simgrid lives).

Usage: simgrid_oracle.py PLATFORM.xml PAIRS.json [--transfer SRC DST BYTES]
PAIRS.json is a list of [src, dst] host names, or the string "all". Prints JSON:
{"routes": [[src, dst, [link names] or null, latency or the error], ...], "transfer": seconds or null}.
The test suite runs this in a subprocess because the project's Python cannot import simgrid.
"""

import json
import sys

import simgrid


def main(argv):
    platform, pairs_file = argv[1], argv[2]
    # CM02 without the TCP window bound and without cross traffic: the fluid max-min model
    # topocast simulates (LV08, the default, also scales bandwidth by 0.97 and latency by 13.01)
    engine = simgrid.Engine(
        [
            "oracle",
            "--log=root.thres:critical",
            "--cfg=network/model:CM02",
            "--cfg=network/TCP-gamma:0",
            "--cfg=network/crosstraffic:0",
        ]
    )
    engine.load_platform(platform)
    hosts = {h.name: h for h in engine.all_hosts}
    transfer, result = None, {}
    if "--transfer" in argv:
        i = argv.index("--transfer")
        src, dst, size = argv[i + 1], argv[i + 2], int(argv[i + 3])

        def sender():
            simgrid.Mailbox.by_name("m").put("x", size)

        def receiver():
            simgrid.Mailbox.by_name("m").get()
            result["t"] = simgrid.Engine.clock

        simgrid.Actor.create("s", hosts[src], sender)
        simgrid.Actor.create("r", hosts[dst], receiver)
    else:
        simgrid.Actor.create("idle", next(iter(hosts.values())), lambda: None)
    # SimGrid 3.32 seals the platform (Floyd's tables among others) when the simulation
    # starts, and its Python bindings have no seal_platform(): run first, then ask routes.
    engine.run()
    transfer = result.get("t")
    with open(pairs_file) as f:
        pairs = json.load(f)
    if pairs == "all":
        names = sorted(hosts)
        pairs = [(a, b) for a in names for b in names if a != b]
    out = []
    for a, b in pairs:
        try:
            links, latency = hosts[a].route_to(hosts[b])
        except ValueError as exc:  # SimGrid finds no route: say so, do not stop
            out.append([a, b, None, str(exc)])
            continue
        out.append([a, b, [link.name for link in links], latency])
    json.dump({"routes": out, "transfer": transfer}, sys.stdout)


if __name__ == "__main__":
    main(sys.argv)
