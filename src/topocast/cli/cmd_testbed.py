"""``topocast testbed up|down|status|exec``: the emulated network (needs root)."""

from __future__ import annotations

import argparse
import os
import sys
import time

from ..errors import InputError
from .common import help_of, load_topology_with_default, print_json, time_arg


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "testbed",
        help="build or remove an emulated network (needs root)",
        description="Build a topology on this machine: a network namespace per host, a bridge per switch, "
        "a veth pair per link, HTB shaping on both directions of every link, addresses from 198.18.0.0/15.",
    )
    tsub = p.add_subparsers(dest="testbed_command", metavar="ACTION")
    u = tsub.add_parser("up", help="build a topology")
    u.add_argument("topology", help="topology file or builtin:NAME")
    u.add_argument("--name", default=None, help="testbed name (default: the topology's name)")
    u.add_argument("--default-bandwidth", default=None, help="bandwidth for links the file gives none")
    u.add_argument(
        "--queue",
        type=time_arg,
        default=None,
        metavar="SECONDS",
        help="leaf queue per shaped direction, in seconds of its rate (bfifo; default: pfifo of txqueuelen packets)",
    )
    u.add_argument(
        "--congestion",
        default=None,
        help="TCP congestion control inside every host (e.g. cubic; default: the kernel's)",
    )
    u.add_argument(
        "--fair",
        action="store_true",
        help="share each link direction fairly among TCP flows (256 hashed HTB classes) instead of one FIFO",
    )
    u.add_argument(
        "--no-ack-priority",
        dest="ack_priority",
        action="store_false",
        help="let TCP ACKs wait behind data in each link's queue, as at a FIFO switch port (default: small packets first, as fq/fq_codel hosts do)",
    )
    u.add_argument(
        "--htb-burst",
        type=time_arg,
        default=None,
        metavar="SECONDS",
        help="token bucket of every shaped class, in seconds of its rate (default 0.005)",
    )
    u.add_argument("--json", action="store_true", help="print the testbed's status as JSON")
    u.set_defaults(func=_up)
    d = tsub.add_parser("down", help="remove everything a testbed created (also after a crash)")
    _add_testbed_choice(d)
    d.set_defaults(func=_down)
    s = tsub.add_parser("status", help="show a testbed (without a name and with several up: list them)")
    _add_testbed_choice(s)
    s.add_argument("--json", action="store_true", help="print JSON")
    s.set_defaults(func=_status)
    e = tsub.add_parser("exec", help="run a command inside a host: exec HOST -- CMD ...")
    e.add_argument("host", help="the host whose network namespace runs the command")
    e.add_argument("argv", nargs="+", metavar="CMD", help="the command and its arguments")
    e.add_argument("--testbed", default=None, metavar="NAME", help="testbed name (default: the only one up)")
    e.set_defaults(func=_exec)
    r = tsub.add_parser(
        "set-rate", help="change a link's rate live (tc class change): set-rate A B RATE", description=None
    )
    r.add_argument("a", metavar="A", help="a node of the link (host or switch)")
    r.add_argument("b", metavar="B", help="the node at its other end")
    r.add_argument("rate", metavar="RATE", help="new rate, e.g. 8Mbit/s")
    r.add_argument("--one-way", action="store_true", help="only the direction from A to B (default: both)")
    r.add_argument("--name", default=None, help="testbed name (default: the only one up)")
    r.set_defaults(func=_set_rate)
    f = tsub.add_parser("traffic", help="background TCP flows from host A to host B: traffic A B")
    f.add_argument("a", metavar="A", help="sending host")
    f.add_argument("b", metavar="B", help="receiving host")
    f.add_argument("--rate", default=None, help="total rate of the flows (default: as fast as TCP goes)")
    f.add_argument("--duration", type=time_arg, default=None, metavar="SECONDS", help="default: until Ctrl-C")
    f.add_argument("--flows", type=int, default=1, help="parallel TCP connections (default 1)")
    f.add_argument("--name", default=None, help="testbed name (default: the only one up)")
    f.set_defaults(func=_traffic)
    p.set_defaults(func=help_of(p))


def _add_testbed_choice(p: argparse.ArgumentParser) -> None:
    """NAME or ``--testbed NAME``, as ``run``, ``probe`` and ``exec`` spell it."""
    p.add_argument("name", nargs="?", default=None, help="testbed name (default: the only one up)")
    p.add_argument("--testbed", default=None, metavar="NAME", help="the same, as run and probe spell it")


def _testbed_name(args) -> str | None:
    if args.name is not None and args.testbed is not None and args.name != args.testbed:
        raise InputError(f"two testbed names given: {args.name!r} and {args.testbed!r}", element="--testbed")
    return args.testbed if args.testbed is not None else args.name


def _tc_rate(rate: object) -> str:
    """A rate as tc takes it (``'10000000000bit'``) in the units the other commands print."""
    from ..units import format_bandwidth

    text = str(rate)
    if text.endswith("bit") and text[:-3].isdigit():
        return format_bandwidth(int(text[:-3]) / 8)
    return text


def _up(args) -> int:
    from ..testbed import up
    from ..units import parse_bandwidth

    dbw = parse_bandwidth(args.default_bandwidth, field="--default-bandwidth") if args.default_bandwidth else None
    topo = load_topology_with_default(args.topology, dbw)
    from ..testbed.net import HTB_BURST

    if args.htb_burst is not None and not args.htb_burst > 0:
        raise InputError(f"expected a positive number of seconds, got {args.htb_burst}", element="--htb-burst")
    st = up(
        topo,
        name=args.name,
        spec=args.topology,
        queue=args.queue,
        congestion=args.congestion,
        fair=args.fair,
        ack_priority=args.ack_priority,
        burst=HTB_BURST if args.htb_burst is None else args.htb_burst,
    )
    for w in st.warnings:
        print(f"topocast: warning: {w}", file=sys.stderr)
    if args.json:
        from ..testbed import status

        print_json(status(st.name))
    else:
        print(f"testbed {st.name} up: {len(st.host_ns)} hosts, {len(st.links)} links shaped (prefix {st.prefix})")
        for h in st.host_ns:
            print(f"  {h:>10}  {st.host_addr[h]:<15} netns {st.host_ns[h]}")
    return 0


def _down(args) -> int:
    from ..testbed import down

    removed = down(_testbed_name(args))
    print(f"removed {len(removed)} namespaces: {' '.join(removed)}")
    return 0


def _status(args) -> int:
    from ..testbed import list_states, status

    name = _testbed_name(args)
    if name is None and len(list_states()) != 1:
        names = list_states()
        print("testbeds up: " + (", ".join(names) if names else "none"))
        return 0
    info = status(name)
    if args.json:
        print_json(info)
        return 0
    print(
        f"testbed {info['name']} ({info['topology']}), netem: {'yes' if info['netem'] else 'no (latency not emulated)'}"
    )
    for h, x in info["hosts"].items():
        print(f"  {h:>10}  {x['address']:<15} {x['namespace']:<14} {'up' if x['up'] else 'MISSING'}")
    for l in info["links"]:
        print(f"  link {l['a']}-{l['b']}: {_tc_rate(l['ab']['rate'])} / {_tc_rate(l['ba']['rate'])}")
    for w in info["warnings"]:
        print(f"  warning: {w}")
    return 0


def _exec(args) -> int:
    from ..testbed import exec_argv, load_state, require_root

    require_root()
    argv = list(args.argv)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        raise InputError("give a command after --", element="exec")
    st = load_state(args.testbed)
    cmd = exec_argv(st, args.host, argv)
    os.execvp(cmd[0], cmd)
    return 0  # not reached


def _set_rate(args) -> int:
    from ..testbed import load_state
    from ..testbed.live import set_rate
    from ..units import format_bandwidth, parse_bandwidth

    rate = parse_bandwidth(args.rate, field="RATE")
    st = load_state(args.name)
    changed = set_rate(st, args.a, args.b, rate, one_way=args.one_way)
    way = f"{args.a} -> {args.b}" if args.one_way else f"{args.a} <-> {args.b}"
    print(f"testbed {st.name}: link {way} now {format_bandwidth(rate)} ({len(changed)} direction(s) changed)")
    return 0


def _traffic(args) -> int:
    from ..testbed import load_state
    from ..testbed.live import Traffic, wait_seconds
    from ..units import format_mbit, parse_bandwidth

    rate = parse_bandwidth(args.rate, field="--rate") if args.rate else None
    st = load_state(args.name)
    t0 = time.monotonic()
    traffic = Traffic(st, args.a, args.b, rate=rate, duration=args.duration, flows=args.flows).start()
    try:
        if args.duration is not None:
            wait_seconds(args.duration)
        else:
            while True:
                wait_seconds(3600)
    except KeyboardInterrupt:
        pass
    finally:
        got = traffic.stop()
    wall = time.monotonic() - t0
    secs = traffic.seconds
    mbps = f", {format_mbit(got / secs)} Mbit/s over {secs:.1f} s of data" if got and secs > 0 else ""
    print(f"traffic {args.a} -> {args.b}: {got if got is not None else '?'} bytes in {wall:.1f} s{mbps}")
    return 0
