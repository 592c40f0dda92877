"""The emulated network itself: namespaces, shaping, addresses, routes, cleanup."""

import ipaddress
import json
import subprocess

import pytest

from topocast.topology import load_topology
from topocast.topology.model import PhysicalLink, Topology

MBIT = 1e6 / 8


def two_switch():
    return load_topology("builtin:hetero-2switch")


def _netns():
    return set(subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split())


def _reach(st, a, b, port=9):
    """From host a, connect to host b's address: 'refused' proves the packet got there."""
    code = f"import socket\ntry:\n socket.create_connection(('{st.host_addr[b]}', {port}), timeout=2)\nexcept ConnectionRefusedError:\n print('refused')\nexcept OSError as e:\n print('fail', e)"
    r = subprocess.run(["ip", "netns", "exec", st.host_ns[a], "python3", "-c", code], capture_output=True, text=True)
    return r.stdout.strip()


def test_up_status_down(testbed_factory):
    from topocast.testbed import down, load_state, status

    st = testbed_factory(two_switch())
    assert set(st.namespaces) <= _netns()
    assert len(st.host_ns) == 8 and st.namespaces[-1].endswith("-sw")
    for h, addr in st.host_addr.items():
        assert ipaddress.ip_address(addr) in ipaddress.ip_network("198.18.0.0/15")
    # HTB on both directions of every link, at the link's rate (b4 at 10 Mbit/s, A-B at 40)
    rates = {(l["a"], l["b"]): (l["ab"]["rate"], l["ba"]["rate"]) for l in st.links}
    assert rates[("b4", "swB")] == ("10000000bit", "10000000bit")
    assert rates[("swA", "swB")] == ("40000000bit", "40000000bit")
    out = subprocess.run(
        ["tc", "-n", st.host_ns["b4"], "class", "show", "dev", "e0"], capture_output=True, text=True
    ).stdout
    assert "rate 10Mbit" in out
    core = st.namespaces[-1]
    out = subprocess.run(
        ["tc", "-n", core, "class", "show", "dev", f"l{len(st.links) - 1}a"], capture_output=True, text=True
    ).stdout
    assert "rate 40Mbit" in out
    assert _reach(st, "s", "b4") == "refused"
    info = status(st.name)
    assert all(x["up"] for x in info["hosts"].values())
    assert load_state(st.name).complete
    removed = down(st.name)
    assert set(removed) == set(st.namespaces)
    assert not (set(st.namespaces) & _netns())


def test_relaying_hosts_route_multi_hop(testbed_factory):
    """Topology Zoo style: hosts joined directly, the middle host forwards."""
    topo = Topology(
        "line",
        ["x", "y", "z", "w"],
        [],
        [
            PhysicalLink("x", "y", 50 * MBIT),
            PhysicalLink("y", "z", 50 * MBIT),
            PhysicalLink("z", "w", 50 * MBIT),
            PhysicalLink("y", "w", 20 * MBIT),
        ],
    )
    st = testbed_factory(topo)
    for a in "xyzw":
        for b in "xyzw":
            if a != b:
                assert _reach(st, a, b) == "refused", (a, b)
    for a in st.host_addr.values():
        assert ipaddress.ip_address(a) in ipaddress.ip_network("198.18.0.0/15")


def test_failed_build_removes_what_it_made(testbed_factory, monkeypatch):
    from topocast.testbed import list_states, net

    calls = {"n": 0}
    real = net._shape

    def flaky(*a, **k):
        calls["n"] += 1
        if calls["n"] > 3:
            raise RuntimeError("simulated crash while shaping")
        return real(*a, **k)

    monkeypatch.setattr(net, "_shape", flaky)
    before = _netns()
    with pytest.raises(RuntimeError):
        testbed_factory(two_switch(), name="crashy")
    assert _netns() == before
    assert "crashy" not in list_states()


def test_down_after_crash_uses_the_state_file(testbed_factory, tmp_path):
    """A build process that died leaves its record; `testbed down` in a new process cleans up."""
    import os
    import sys

    st = testbed_factory(two_switch(), name="orphan")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    r = subprocess.run(
        [sys.executable, "-m", "topocast", "testbed", "down", "orphan"], capture_output=True, text=True, env=env
    )
    assert r.returncode == 0, r.stderr
    assert not (set(st.namespaces) & _netns())


def test_cycle_of_switches_is_refused(testbed_factory):
    from topocast.testbed import TestbedError

    topo = Topology(
        "loop",
        ["h1", "h2"],
        ["s1", "s2", "s3"],
        [
            PhysicalLink("h1", "s1", 1e6),
            PhysicalLink("h2", "s2", 1e6),
            PhysicalLink("s1", "s2", 1e6),
            PhysicalLink("s2", "s3", 1e6),
            PhysicalLink("s3", "s1", 1e6),
        ],
    )
    before = _netns()
    with pytest.raises(TestbedError, match="cycle"):
        testbed_factory(topo)
    assert _netns() == before


def test_cli_exec_and_status(testbed_factory, capsys):
    from topocast.cli.main import main

    st = testbed_factory(two_switch())
    assert main(["testbed", "status", st.name, "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["hosts"]["b4"]["address"] == st.host_addr["b4"]
    import os
    import sys

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "topocast",
            "testbed",
            "exec",
            "--testbed",
            st.name,
            "b4",
            "--",
            "ip",
            "-o",
            "addr",
            "show",
            "e0",
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert st.host_addr["b4"] in r.stdout, r.stderr


def test_latency_is_emulated_or_warned(testbed_factory):
    """With sch_netem the link latency is applied (RTT >= 2 x 2 x 10 ms); without, a warning says so."""
    topo = Topology(
        "lat",
        ["x", "y"],
        ["sw"],
        [PhysicalLink("x", "sw", 50 * MBIT, latency=0.01), PhysicalLink("y", "sw", 50 * MBIT, latency=0.01)],
    )
    st = testbed_factory(topo)
    if not st.netem:
        assert any("netem" in w and "latency" in w for w in st.warnings)
        pytest.skip("this kernel has no sch_netem: latency not emulated (warning checked)")
    code = (
        "import socket, time\nt = time.monotonic()\ntry:\n"
        f" socket.create_connection(('{st.host_addr['y']}', 9), timeout=2)\n"
        "except ConnectionRefusedError:\n print(time.monotonic() - t)"
    )
    r = subprocess.run(["ip", "netns", "exec", st.host_ns["x"], "python3", "-c", code], capture_output=True, text=True)
    assert float(r.stdout) >= 0.04  # SYN and RST each cross two 10 ms links


def test_fair_links_hash_flows_into_classes(testbed_factory):
    topo = Topology(
        "pair", ["x", "y"], ["sw"], [PhysicalLink("x", "sw", 20 * MBIT), PhysicalLink("y", "sw", 20 * MBIT)]
    )
    st = testbed_factory(topo, fair=True)
    classes = subprocess.run(
        ["tc", "-n", st.host_ns["x"], "class", "show", "dev", "e0"], capture_output=True, text=True
    ).stdout
    assert classes.count("class htb") == 258  # parent + 256 flow buckets + small packets
    assert "rate 20Mbit" in classes
    assert "class htb 1:2 root prio 0" in classes
    filters = subprocess.run(
        ["tc", "-n", st.host_ns["x"], "filter", "show", "dev", "e0"], capture_output=True, text=True
    ).stdout
    assert "link 2:" in filters
    assert _reach(st, "x", "y") == "refused"


def _classes(st, host):
    return subprocess.run(
        ["tc", "-n", st.host_ns[host], "class", "show", "dev", "e0"], capture_output=True, text=True
    ).stdout


def test_shaping_has_a_5ms_bucket_and_a_small_packet_class(testbed_factory):
    st = testbed_factory(two_switch())
    classes = _classes(st, "s")
    # 200 Mbit/s x 5 ms = 125 kB of burst on the data class and on the small-packet class
    assert "class htb 1:10 root prio 1" in classes and "class htb 1:2 root prio 0" in classes
    assert classes.count(" burst 125000b cburst 125000b") == 2, classes
    filters = subprocess.run(
        ["tc", "-n", st.host_ns["s"], "filter", "show", "dev", "e0"], capture_output=True, text=True
    ).stdout
    assert "flowid 1:2" in filters and "0000ff80" in filters.replace(" ", "").lower()
    rec = next(l for l in st.links if l["a"] == "s")
    assert rec["ab"]["burst"] == 125000 and "first" in rec["ab"]["leaf"]
    plain = testbed_factory(two_switch(), ack_priority=False, burst=0.001)
    classes = _classes(plain, "s")
    assert "1:2" not in classes and " burst 25000b cburst 25000b" in classes


def test_burst_must_be_positive(testbed_factory):
    from topocast.testbed import TestbedError

    with pytest.raises(TestbedError, match="burst.*positive"):
        testbed_factory(two_switch(), burst=0)


_ECHO = """
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("0.0.0.0", 7007))
while True:
    d, a = s.recvfrom(100); s.sendto(d, a)
"""
_BULK_RX = """
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("0.0.0.0", 7008)); s.listen(1)
c, _ = s.accept()
while c.recv(1 << 20):
    pass
"""
_PROBE = """
import socket, statistics, sys, threading, time
peer = sys.argv[1]
bulk = socket.create_connection((peer, 7008))
data = bytes(1 << 16)
def push():
    try:
        while True:
            bulk.sendall(data)
    except OSError:
        pass
threading.Thread(target=push, daemon=True).start()
time.sleep(1.5)  # let the bulk flow build its queue at this host's egress
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.settimeout(2)
rtts = []
for i in range(15):
    t = time.monotonic(); u.sendto(bytes(64), (peer, 7007)); u.recvfrom(100)
    rtts.append(time.monotonic() - t); time.sleep(0.05)
print(statistics.median(rtts))
"""


def _probe_rtt_under_bulk(st) -> float:
    """Median RTT (s) of 92-byte UDP probes x->y while a bulk TCP flow x->y fills x's egress."""
    import sys

    ns = st.host_ns
    servers = [
        subprocess.Popen(["ip", "netns", "exec", ns["y"], sys.executable, "-c", code]) for code in (_ECHO, _BULK_RX)
    ]
    try:
        import time

        time.sleep(0.5)
        r = subprocess.run(
            ["ip", "netns", "exec", ns["x"], sys.executable, "-c", _PROBE, st.host_addr["y"]],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert r.returncode == 0, r.stderr
        return float(r.stdout)
    finally:
        for p in servers:
            p.kill()
            p.wait()


def test_small_packets_do_not_wait_behind_data(testbed_factory):
    """With a bulk TCP flow queued at x's 10 Mbit/s egress (CUBIC: it fills the queue), small
    packets (ACKs, here UDP probes) skip the queue; with ``ack_priority=False`` they wait in it."""
    topo = Topology(
        "pair", ["x", "y"], ["sw"], [PhysicalLink("x", "sw", 10 * MBIT), PhysicalLink("y", "sw", 10 * MBIT)]
    )
    fast = _probe_rtt_under_bulk(testbed_factory(topo, congestion="cubic"))
    slow = _probe_rtt_under_bulk(testbed_factory(topo, congestion="cubic", ack_priority=False))
    print(f"median probe RTT: {fast * 1e3:.2f} ms small packets first, {slow * 1e3:.2f} ms FIFO")
    assert fast < 0.005, f"probes behind the data with small-packet priority: median RTT {fast * 1e3:.1f} ms"
    # a 64 kB GSO packet alone takes 52 ms at 10 Mbit/s: behind the queue a probe waits ~that
    assert slow > 0.02 and slow > 5 * fast, (
        f"FIFO links: the probes should wait behind the bulk queue, median RTT {slow * 1e3:.1f} ms"
    )


def test_cli_up_without_ack_priority(tmp_path, monkeypatch, capsys, testbed_factory):
    from topocast.cli.main import main
    from topocast.testbed import down

    assert main(["testbed", "up", "builtin:hetero-2switch", "--name", "cliack", "--htb-burst", "0"]) == 2
    assert "--htb-burst" in capsys.readouterr().err
    try:
        assert (
            main(
                [
                    "testbed",
                    "up",
                    "builtin:hetero-2switch",
                    "--name",
                    "cliack",
                    "--no-ack-priority",
                    "--htb-burst",
                    "0.002",
                    "--json",
                ]
            )
            == 0
        )
        info = json.loads(capsys.readouterr().out)
        rec = next(l for l in info["links"] if l["a"] == "s")
        assert rec["ab"]["burst"] == 50000 and "first" not in rec["ab"]["leaf"]
    finally:
        down("cliack")
