"""Build an emulated network from a topology file (docs/design.md, "Emulated network").

* one network namespace per host (``<prefix>-h<i>``) and one more, ``<prefix>-sw``, that
  holds a Linux bridge per switch: the root namespace is never touched, and deleting the
  namespaces the state file lists removes every bridge, veth and qdisc;
* a veth pair per physical link; HTB on the egress of *both* ends, so each direction of
  every link (host-to-switch, switch-to-switch, host-to-host) is shaped to its own rate,
  with a 5 ms token bucket (``HTB_BURST``) and small packets - TCP ACKs - served before the
  data (``_small_packet_class``): without them, predictions miss on a busy machine for
  reasons that have nothing to do with the links' rates (docs/experiments/runtime.md);
  ``netem`` delay under the HTB class when the link has latency and the kernel has netem
  (otherwise a warning says latency is not emulated);
* addresses only from 198.18.0.0/15: an L2 segment (switches joined by switch links, and
  the hosts on them) gets 198.18.S.0/24; a host-to-host link a /30 from 198.19.0.0/17; a
  host with several interfaces (it relays, as in Topology Zoo graphs) gets an identity
  address 198.19.128.0/17 on ``lo`` and ``ip_forward``;
* routes: at every host, one /32 route per other host via the first hop of
  ``topology.route`` (destination-based routing [I]: a relay forwards by its own route to
  the destination, which equals the suffix of the source's route whenever routes are
  consistent, as in every tree and cluster topology).

Switch graphs with a cycle are refused (the bridges would loop).
"""

from __future__ import annotations

import ipaddress
import json
import os
import secrets
import subprocess
import sys
from typing import TYPE_CHECKING

from .state import TestbedError, TestbedState, load_state, state_path

if TYPE_CHECKING:
    from ..topology import Topology

__all__ = ["up", "down", "status", "exec_argv", "counters", "require_root", "netem_available"]

SEGMENT_NET = ipaddress.ip_network("198.18.0.0/16")
P2P_NET = ipaddress.ip_network("198.19.0.0/17")
ID_NET = ipaddress.ip_network("198.19.128.0/17")
EMULATION_BLOCK = ipaddress.ip_network("198.18.0.0/15")


def require_root() -> None:
    if os.geteuid() != 0:
        raise TestbedError("the emulated network needs root (network namespaces, tc)", element="testbed")


def _ip(*args, check=True):
    r = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and r.returncode:
        raise TestbedError(f"`ip {' '.join(args)}` failed: {r.stderr.strip()}", element="testbed")
    return r


def _tc(ns, *args, check=True):
    r = subprocess.run(["tc", "-n", ns, *args], capture_output=True, text=True)
    if check and r.returncode:
        raise TestbedError(f"`tc -n {ns} {' '.join(args)}` failed: {r.stderr.strip()}", element="testbed")
    return r


def _rate(bytes_per_s: float) -> str:
    return f"{max(8, int(round(bytes_per_s * 8)))}bit"


def netem_available(ns: str, dev: str) -> bool:
    """Try a netem qdisc on ``dev`` (then remove it)."""
    r = _tc(ns, "qdisc", "add", "dev", dev, "root", "handle", "9:", "netem", "delay", "1ms", check=False)
    if r.returncode == 0:
        _tc(ns, "qdisc", "del", "dev", dev, "root", check=False)
        return True
    return False


# Token bucket of every shaped class, in seconds of its rate. tc's default (one MTU, tens of
# microseconds at a few hundred Mbit/s) loses the link's time whenever HTB's dequeue timer
# fires late, as it does on a busy VM whose hypervisor steals CPU time (the measurements are
# in docs/experiments/runtime.md). With 5 ms a late timer is caught up; the cost is a burst
# of at most 5 ms of the rate after an idle period.
HTB_BURST = 0.005
# Packets shorter than this (IP total length) - TCP's pure ACKs, pings - get their own class
# on every shaped egress, served before the data (see ``_small_packet_class``).
SMALL_PACKET = 128


def _burst(rate: float, burst: float) -> str:
    return str(max(3028, int(rate * burst)))


def _small_packet_class(ns: str, dev: str, r: str, b: str) -> None:
    """Class ``1:2`` for packets under ``SMALL_PACKET`` bytes, beside the data class, served
    first (HTB prio 0) and shaped on its own at the link rate (not charged to the data).

    Why: a host that relays (receives at line rate and sends at line rate, as every pipelined
    relay does) puts the ACKs of its incoming flow behind its own outgoing data in one FIFO;
    the ACKs come back late, a congestion control that sizes its window from the minimum RTT
    (BBR) becomes window-limited, and the incoming flow slows down (measured with plain
    sockets in docs/experiments/runtime.md). Hosts with fq or fq_codel (most Linux
    distributions' default) serve such sparse flows first; a kernel with neither gets it from
    HTB and u32 here. With GRO a receiver sends about one ACK per tens of kB, so not charging
    ACKs to the data's rate is exact to a fraction of a percent. A FIFO switch port would
    still delay them: ``ack_priority=False`` builds that. ARP packets go to the same class."""
    _tc(
        ns,
        "class",
        "add",
        "dev",
        dev,
        "parent",
        "1:",
        "classid",
        "1:2",
        "htb",
        "rate",
        r,
        "ceil",
        r,
        "burst",
        b,
        "cburst",
        b,
        "quantum",
        "1514",
        "prio",
        "0",
    )
    mask = f"0x{(0xFFFF & ~(SMALL_PACKET - 1)):04x}"
    _tc(
        ns,
        "filter",
        "add",
        "dev",
        dev,
        "parent",
        "1:",
        "prio",
        "1",
        "protocol",
        "ip",
        "u32",
        "match",
        "u16",
        "0x0000",
        mask,
        "at",
        "2",
        "flowid",
        "1:2",
    )
    # address resolution too: a neighbour query that waits behind (or is dropped by) a full
    # data queue fails after three tries, and the hosts lose each other (No route to host)
    _tc(ns, *f"filter add dev {dev} parent 1: prio 3 protocol arp u32 match u32 0 0 flowid 1:2".split())


def _shape(
    ns: str,
    dev: str,
    rate: float,
    latency: float,
    netem: bool,
    queue: float | None = None,
    ack_priority: bool = True,
    burst: float = HTB_BURST,
) -> dict:
    """HTB at ``rate`` bytes/s on the egress of ``dev`` (+ netem delay when possible), with a
    token bucket of ``burst`` seconds and, with ``ack_priority``, small packets first."""
    r = _rate(rate)
    b = _burst(rate, burst)
    quantum = str(max(1514, min(60000, int(rate / 10))))
    _tc(ns, "qdisc", "replace", "dev", dev, "root", "handle", "1:", "htb", "default", "10")
    _tc(
        ns,
        "class",
        "add",
        "dev",
        dev,
        "parent",
        "1:",
        "classid",
        "1:10",
        "htb",
        "rate",
        r,
        "ceil",
        r,
        "burst",
        b,
        "cburst",
        b,
        "quantum",
        quantum,
        "prio",
        "1",
    )
    if ack_priority:
        _small_packet_class(ns, dev, r, b)
    leaf = "pfifo (default)"
    if latency > 0 and netem:
        for cls in ("10", "2") if ack_priority else ("10",):  # ACKs cross the same latency
            _tc(
                ns,
                "qdisc",
                "add",
                "dev",
                dev,
                "parent",
                f"1:{cls}",
                "handle",
                f"{cls}:",
                "netem",
                "delay",
                f"{latency * 1e6:.0f}us",
                "limit",
                "10000",
            )
        leaf = f"netem {latency * 1e3:g}ms"
    elif queue:
        limit = max(30000, int(rate * queue))
        # A byte-limited queue must hold packets, not GSO super-packets: TCP hands veth skbs
        # of up to 64 KiB, and a bfifo smaller than one drops every one of them (a short queue
        # on a slow link stalls every transfer). One segment per skb makes the limit
        # mean what a switch buffer means.
        _ip("-n", ns, "link", "set", "dev", dev, "gso_max_segs", "1")
        _tc(ns, "qdisc", "add", "dev", dev, "parent", "1:10", "handle", "10:", "bfifo", "limit", str(limit))
        leaf = f"bfifo {limit}B, gso_max_segs 1"
    if ack_priority:
        leaf += f"; packets < {SMALL_PACKET} B first"
    return {"ns": ns, "dev": dev, "rate": r, "burst": int(b), "leaf": leaf}


FAIR_BUCKETS = 256


def _shape_fair(ns: str, dev: str, rate: float, ack_priority: bool = True, burst: float = HTB_BURST) -> dict:
    """HTB at ``rate`` shared max-min fairly among TCP flows (an SFQ built from what every
    kernel with HTB and u32 has): flows hash on the low byte of the TCP source port into
    256 HTB classes of equal quantum that borrow the whole rate from one parent, so active
    flows share it round-robin instead of first-come in one FIFO. Small packets first, as in
    ``_shape``, when ``ack_priority``."""
    r = _rate(rate)
    b = _burst(rate, burst)
    share = _rate(max(rate / FAIR_BUCKETS, 1000))
    lines = [
        f"qdisc replace dev {dev} root handle 1: htb default 100",
        f"class add dev {dev} parent 1: classid 1:1 htb rate {r} ceil {r} burst {b} cburst {b} quantum 60000 prio 1",
    ]
    for i in range(FAIR_BUCKETS):
        lines.append(
            f"class add dev {dev} parent 1:1 classid 1:{0x100 + i:x} htb rate {share} ceil {r} cburst {b} quantum 3028 prio 1"
        )
    # the hashing filters at prio 2: the small-packet filter (prio 1) is tried first
    lines.append(f"filter add dev {dev} parent 1: prio 2 handle 2: protocol ip u32 divisor {FAIR_BUCKETS}")
    for i in range(FAIR_BUCKETS):
        lines.append(
            f"filter add dev {dev} parent 1: prio 2 protocol ip u32 ht 2:{i:x}: match u32 0 0 flowid 1:{0x100 + i:x}"
        )
    lines.append(
        f"filter add dev {dev} parent 1: prio 2 protocol ip u32 ht 800:: match ip protocol 6 0xff hashkey mask 0x00ff0000 at 20 link 2:"
    )
    r2 = subprocess.run(["tc", "-n", ns, "-batch", "-"], input="\n".join(lines) + "\n", capture_output=True, text=True)
    if r2.returncode:
        raise TestbedError(f"fair shaping on {ns}/{dev} failed: {r2.stderr.strip()[-300:]}", element="testbed")
    leaf = f"fair: {FAIR_BUCKETS} HTB classes hashed by TCP source port"
    if ack_priority:
        _small_packet_class(ns, dev, r, b)
        leaf += f"; packets < {SMALL_PACKET} B first"
    return {"ns": ns, "dev": dev, "rate": r, "burst": int(b), "leaf": leaf}


def _switch_forest_check(topo) -> None:
    sw = set(topo.switches)
    parent = {s: s for s in sw}

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for pl in topo.physical_links:
        if pl.a in sw and pl.b in sw:
            ra, rb = find(pl.a), find(pl.b)
            if ra == rb:
                raise TestbedError(
                    f"switches {pl.a} and {pl.b} close a cycle: bridges would loop (the testbed needs the switch links to form a forest)",
                    element="topology",
                )
            parent[ra] = rb


def up(
    topology: Topology,
    *,
    name: str | None = None,
    spec: str | None = None,
    netem: bool | None = None,
    queue: float | None = None,
    congestion: str | None = None,
    fair: bool = False,
    ack_priority: bool = True,
    burst: float = HTB_BURST,
) -> TestbedState:
    """Build ``topology`` on this machine and return its recorded state.

    ``queue``: leaf queue of every shaped direction in seconds of its rate (bfifo; default:
    the kernel's pfifo of txqueuelen packets); ``congestion``: TCP congestion control of
    every host namespace (e.g. ``cubic``; default: the kernel's); ``fair``: share every
    link direction fairly among TCP flows (see ``_shape_fair``) instead of one FIFO;
    ``ack_priority``: packets under ``SMALL_PACKET`` bytes (TCP ACKs) do not wait behind data
    (see ``_small_packet_class``); ``burst``: token bucket of every class, seconds of its rate.
    """
    if not burst > 0:
        raise TestbedError(f"expected a positive number of seconds, got {burst!r}", element="burst")
    require_root()
    topo = topology
    name = name or "".join(c if c.isalnum() or c in "-_" else "-" for c in topo.name)[:40] or "testbed"
    if state_path(name).exists():
        raise TestbedError(f"testbed {name!r} is already up (topocast testbed down {name})", element="name")
    _switch_forest_check(topo)
    prefix = "tc" + secrets.token_hex(3)
    st = TestbedState(name=name, prefix=prefix, topology_spec=spec or topo.name)
    st.save()
    try:
        _build(topo, st, netem, queue, congestion, fair, ack_priority, burst)
    except BaseException:
        down(st.name)
        raise
    st.complete = True
    st.save()
    return st


def _build(
    topo, st: TestbedState, netem_wanted, queue=None, congestion=None, fair=False, ack_priority=True, burst=HTB_BURST
) -> None:
    hosts = list(topo.hosts)
    core = _add_namespaces(topo, st, congestion)
    wiring = _Wiring(topo, st, core)
    netem = None
    for p, pl in enumerate(topo.physical_links):
        ends = wiring.add_link(p, pl)
        # shaping, both directions
        a, b = pl.a, pl.b
        ns_a, ns_b = wiring.ns_of[a], wiring.ns_of[b]
        if netem is None:
            netem = netem_available(ns_a, ends[0]) if netem_wanted is not False else False
            st.netem = netem
        rec = {"a": a, "b": b, "index": p}
        if fair:
            rec["ab"] = _shape_fair(ns_a, ends[0], pl.bandwidth, ack_priority, burst)
            rec["ba"] = _shape_fair(ns_b, ends[1], pl.reverse_bandwidth, ack_priority, burst)
        else:
            rec["ab"] = _shape(ns_a, ends[0], pl.bandwidth, pl.latency, netem, queue, ack_priority, burst)
            rec["ba"] = _shape(ns_b, ends[1], pl.reverse_bandwidth, pl.latency, netem, queue, ack_priority, burst)
        st.links.append(rec)
        st.save()
    if any(pl.latency > 0 for pl in topo.physical_links) and not st.netem:
        st.warnings.append("this kernel has no sch_netem: link latency is NOT emulated (bandwidth only)")
    _add_identities(st, hosts, wiring.host_if)
    _add_routes(topo, st, wiring)
    _static_neighbours(st, wiring.host_if)
    for h in hosts:
        for dev, addr, _ in wiring.host_if[h]:
            assert ipaddress.ip_interface(addr).ip in EMULATION_BLOCK
    st.save()


def _add_namespaces(topo, st: TestbedState, congestion: str | None) -> str:
    """Step 1: one namespace per host (recorded before creation), and the switches' one;
    returns the switches' namespace name."""
    core = f"{st.prefix}-sw"
    for i, h in enumerate(topo.hosts):
        ns = f"{st.prefix}-h{i}"
        st.namespaces.append(ns)
        st.host_ns[h] = ns
        st.save()
        _ip("netns", "add", ns)
        _ip("-n", ns, "link", "set", "lo", "up")
        if congestion:
            _sysctl(ns, "net.ipv4.tcp_congestion_control", congestion)
    if topo.switches:
        st.namespaces.append(core)
        st.save()
        _ip("netns", "add", core)
        _ip("-n", core, "link", "set", "lo", "up")
    return core


def _switch_segments(topo) -> dict[str, int]:
    """Step 3: the L2 segment of every switch (connected switch components), numbered."""
    seg_of: dict[str, int] = {}
    nseg = 0
    sw = set(topo.switches)
    for s in topo.switches:
        if s in seg_of:
            continue
        stack = [s]
        seg_of[s] = nseg
        while stack:
            x = stack.pop()
            for y in topo.neighbors(x):
                if y in sw and y not in seg_of:
                    seg_of[y] = nseg
                    stack.append(y)
        nseg += 1
    if nseg > 255:
        raise TestbedError("more than 255 switch segments", element="topology")
    return seg_of


class _Wiring:
    """Bridges, veth pairs and addresses, and what the routes need to know of them: each
    host's interfaces, the interface and address by which a host reaches a neighbour, and a
    host's first address on each segment."""

    def __init__(self, topo, st: TestbedState, core: str):
        self.topo, self.st, self.core = topo, st, core
        self.sw = set(topo.switches)
        self.ns_of = {**st.host_ns, **{s: core for s in topo.switches}}
        # step 2: bridges, one per switch
        self.bridge = {}
        for j, s in enumerate(topo.switches):
            self.bridge[s] = f"br{j}"
            _ip("-n", core, "link", "add", self.bridge[s], "type", "bridge", "stp_state", "0", "forward_delay", "0")
            _ip("-n", core, "link", "set", self.bridge[s], "up")
        self.seg_of = _switch_segments(topo)
        self.seg_next = [1] * (max(self.seg_of.values(), default=-1) + 1)
        self.p2p_next = 0
        self.nif = {h: 0 for h in topo.hosts}
        self.host_if: dict[str, list] = {h: [] for h in topo.hosts}
        self.attach: dict[tuple[str, str], tuple[str, str]] = {}  # (host, neighbour) -> (ifname, address)
        self.seg_addr: dict[tuple[str, int], str] = {}  # (host, segment) -> first address there

    def add_link(self, p: int, pl) -> list[str]:
        """The veth pair of physical link ``p`` (on a bridge at a switch end) and its
        addresses; returns the two ends' interface names."""
        a, b, sw, ns_of = pl.a, pl.b, self.sw, self.ns_of
        ends = []
        for x in (a, b):
            if x in sw:
                ends.append(f"l{p}{'a' if x == a else 'b'}")
            else:
                ends.append(f"e{self.nif[x]}")
                self.nif[x] += 1
        if a == b or ns_of[a] == ns_of[b] and a not in sw:
            raise TestbedError(f"link {a}-{b}: cannot join a node to itself", element="topology")
        tmp_a, tmp_b = f"{self.st.prefix}t{p}a"[:15], f"{self.st.prefix}t{p}b"[:15]
        # create with unique temporary names in the first namespace, then move and rename
        _ip("-n", ns_of[a], "link", "add", tmp_a, "type", "veth", "peer", "name", tmp_b, "netns", ns_of[b])
        _ip("-n", ns_of[a], "link", "set", tmp_a, "name", ends[0])
        _ip("-n", ns_of[b], "link", "set", tmp_b, "name", ends[1])
        for x, dev in ((a, ends[0]), (b, ends[1])):
            if x in sw:
                _ip("-n", self.core, "link", "set", dev, "master", self.bridge[x])
            _ip("-n", ns_of[x], "link", "set", dev, "up")
        if a in sw and b in sw:
            pass
        elif a in sw or b in sw:
            self._address_on_segment(p, *((b, a, ends[1]) if a in sw else (a, b, ends[0])))
        else:
            self._address_point_to_point(p, a, b, ends)
        return ends

    def _address_on_segment(self, p: int, h: str, s: str, dev: str) -> None:
        """Host ``h``'s interface ``dev`` on switch ``s``: the next address of its segment's /24."""
        k = self.seg_of[s]
        if self.seg_next[k] > 253:
            raise TestbedError(f"segment of switch {s} has more than 253 host interfaces", element="topology")
        addr = str(SEGMENT_NET.network_address + 256 * k + self.seg_next[k])
        self.seg_next[k] += 1
        _ip("-n", self.ns_of[h], "addr", "add", f"{addr}/24", "dev", dev)
        self.host_if[h].append([dev, f"{addr}/24", p])
        self.attach[(h, s)] = (dev, addr)
        self.seg_addr.setdefault((h, k), addr)

    def _address_point_to_point(self, p: int, a: str, b: str, ends: list[str]) -> None:
        """A host-to-host link: the next /30 of the point-to-point block."""
        base = P2P_NET.network_address + 4 * self.p2p_next
        self.p2p_next += 1
        if base + 3 not in P2P_NET:
            raise TestbedError("too many host-to-host links", element="topology")
        for x, dev, off in ((a, ends[0], 1), (b, ends[1], 2)):
            addr = str(base + off)
            _ip("-n", self.ns_of[x], "addr", "add", f"{addr}/30", "dev", dev)
            self.host_if[x].append([dev, f"{addr}/30", p])
            self.attach[(x, b if x == a else a)] = (dev, addr)


def _add_identities(st: TestbedState, hosts: list[str], host_if: dict[str, list]) -> None:
    """Step 4: each host's address: its only interface's, or an identity address on ``lo``."""
    idn = 1
    for h in hosts:
        if not host_if[h]:
            raise TestbedError(f"host {h} has no link", element="topology")
        if len(host_if[h]) == 1:
            st.host_addr[h] = host_if[h][0][1].split("/")[0]
        else:
            addr = str(ID_NET.network_address + idn)
            idn += 1
            _ip("-n", st.host_ns[h], "addr", "add", f"{addr}/32", "dev", "lo")
            st.host_addr[h] = addr
        st.host_ifaces[h] = host_if[h]


def _add_routes(topo, st: TestbedState, wiring: _Wiring) -> None:
    """Step 5: at every host, a /32 route to every other host via its route's first hop;
    forwarding on at hosts with several interfaces."""
    hosts, host_if, sw = list(topo.hosts), wiring.host_if, wiring.sw
    for h in hosts:
        ns = st.host_ns[h]
        if len(host_if[h]) > 1:
            _sysctl(ns, "net.ipv4.ip_forward", "1")
            _sysctl(ns, "net.ipv4.conf.all.rp_filter", "0")
            _sysctl(ns, "net.ipv4.conf.default.rp_filter", "0")
        for v in hosts:
            if v == h:
                continue
            path = topo.route_nodes(h, v)
            first = path[1]
            dev, _ = wiring.attach[(h, first)]
            nxt = next(x for x in path[1:] if x not in sw)  # first host on the path
            if first in sw:
                k = wiring.seg_of[first]
                nh = wiring.seg_addr.get((nxt, k))
            else:
                nh = wiring.attach[(nxt, h)][1]
            if nh is None:
                raise TestbedError(f"route {h}->{v}: next hop {nxt} has no address on that segment", element="topology")
            if nh == st.host_addr[v] and len(host_if[h]) == 1:
                continue  # directly connected
            args = ["-n", ns, "route", "replace", f"{st.host_addr[v]}/32", "via", nh, "dev", dev]
            if len(host_if[h]) > 1:
                args += ["src", st.host_addr[h]]
            _ip(*args)


def _static_neighbours(st: TestbedState, host_if: dict[str, list]) -> None:
    """Step 6: every host knows the hardware address of every other host interface on its
    subnets (permanent neighbour entries): no address resolution while the links' queues
    are full, where a query lost three times makes the kernel answer No route to host."""
    on_net: dict = {}
    for h, ifs in host_if.items():
        for dev, addr, _ in ifs:
            shown = _ip("-n", st.host_ns[h], "-j", "link", "show", "dev", dev).stdout
            mac = json.loads(shown)[0]["address"]
            iface = ipaddress.ip_interface(addr)
            on_net.setdefault(iface.network, []).append((h, dev, str(iface.ip), mac))
    lines: dict[str, list[str]] = {}
    for members in on_net.values():
        for h, dev, _, _ in members:
            lines.setdefault(h, []).extend(
                f"neigh replace {ip} lladdr {mac} dev {dev} nud permanent" for x, _, ip, mac in members if x != h
            )
    for h, batch in lines.items():
        r = subprocess.run(
            ["ip", "-n", st.host_ns[h], "-batch", "-"], input="\n".join(batch) + "\n", capture_output=True, text=True
        )
        if r.returncode:
            raise TestbedError(f"static neighbours of {h} failed: {r.stderr.strip()[-300:]}", element="testbed")


def _sysctl(ns: str, key: str, value: str) -> None:
    r = subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-qw", f"{key}={value}"], capture_output=True, text=True)
    if r.returncode:
        path = "/proc/sys/" + key.replace(".", "/")
        subprocess.run(["ip", "netns", "exec", ns, "sh", "-c", f"echo {value} > {path}"], capture_output=True)


def down(name: str | None = None) -> list[str]:
    """Delete every namespace the record of ``name`` lists, then the record. Returns them."""
    require_root()
    st = load_state(name)
    removed = []
    for ns in reversed(st.namespaces):
        r = _ip("netns", "del", ns, check=False)
        if r.returncode == 0:
            removed.append(ns)
    st.remove_file()
    return removed


def status(name: str | None = None) -> dict:
    st = load_state(name)
    existing = set(_ip("netns", "list", check=False).stdout.split())
    return {
        "name": st.name,
        "topology": st.topology_spec,
        "complete": st.complete,
        "netem": st.netem,
        "warnings": st.warnings,
        "hosts": {
            h: {
                "namespace": st.host_ns[h],
                "address": st.host_addr.get(h),
                "up": st.host_ns[h] in existing,
                "interfaces": st.host_ifaces.get(h, []),
            }
            for h in st.host_ns
        },
        "links": st.links,
    }


def exec_argv(st: TestbedState, host: str, argv: list[str]) -> list[str]:
    return ["ip", "netns", "exec", st.namespace(host), *argv]


def counters(st: TestbedState) -> dict:
    """{host: {iface: {"rx": bytes, "tx": bytes}}} of every host's data interfaces."""
    out = {}
    for h, ifs in st.host_ifaces.items():
        r = _ip("-n", st.host_ns[h], "-j", "-s", "link", "show", check=False)
        try:
            data = json.loads(r.stdout or "[]")
        except json.JSONDecodeError:
            data = []
        names = {dev for dev, _, _ in ifs}
        out[h] = {
            d["ifname"]: {"rx": d["stats64"]["rx"]["bytes"], "tx": d["stats64"]["tx"]["bytes"]}
            for d in data
            if d.get("ifname") in names and "stats64" in d
        }
    return out


if __name__ == "__main__":  # pragma: no cover
    print(json.dumps(status(sys.argv[1] if len(sys.argv) > 1 else None), indent=1))
