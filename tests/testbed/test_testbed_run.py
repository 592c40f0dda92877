"""Plans performed on the emulated network: bytes cross the shaped links; killing a relay or
taking a link down mid-transfer leaves every host that still can complete, and the others
reported with the reason."""

import os
import signal
import subprocess

import pytest

from topocast.plan import Plan, Transfer
from topocast.runtime import TestbedLauncher, perform
from topocast.topology import load_topology


def _fanout_plan(size):
    """s -> b1 across the 40 Mbit/s A-B link; b1 relays (pipelined) to b2, b3, b4; s -> a1."""
    tr = [
        Transfer.of("s", "b1", 0, size),
        Transfer.of("b1", "b2", 0, size, pipelined=True),
        Transfer.of("b1", "b3", 0, size, pipelined=True),
        Transfer.of("b1", "b4", 0, size, pipelined=True),
        Transfer.of("s", "a1", 0, size),
    ]
    return Plan.broadcast("s", size, ["a1", "b1", "b2", "b3", "b4"], tr, planner="fanout")


def test_run_crosses_the_shaped_links(testbed_factory):
    from topocast.testbed import counters

    st = testbed_factory(load_topology("builtin:hetero-2switch"))
    before = counters(st)
    size = 1_500_000
    out = perform(_fanout_plan(size), launcher=TestbedLauncher(st), chunk_size=64 * 1024)
    assert out.failed == {}
    after = counters(st)
    for h in ("a1", "b1", "b2", "b3", "b4"):
        assert after[h]["e0"]["rx"] - before[h]["e0"]["rx"] >= size
    # b1 forwards 3 copies; b4's 10 Mbit/s link caps its rate (HTB: ~95% goodput)
    assert after["b1"]["e0"]["tx"] - before["b1"]["e0"]["tx"] >= 3 * size
    t = {h: r.time for h, r in out.result.per_host.items()}
    assert t["b4"] > size * 8 / 10e6  # cannot beat its link
    assert t["b1"] > size * 8 / 40e6  # cannot beat the A-B link


def test_killed_relay_on_emulated_network(testbed_factory):
    st = testbed_factory(load_topology("builtin:hetero-2switch"))
    size = 3_000_000  # ~0.6 s across 40 Mbit/s
    procs, killed = {}, {}

    def on_progress(held, t):
        if not killed and held["b2"] > size * 0.25:
            os.kill(procs["b1"].pid, signal.SIGKILL)
            killed["at"] = held["b2"]

    out = perform(
        _fanout_plan(size),
        launcher=TestbedLauncher(st),
        on_start=procs.update,
        on_progress=on_progress,
        chunk_size=64 * 1024,
        stall_timeout=2,
    )
    assert killed and killed["at"] < size
    assert set(out.failed) == {"b1"}
    assert "SIGKILL" in out.failed["b1"]
    for h in ("a1", "b2", "b3", "b4"):
        assert out.result.per_host[h].completed


def test_link_down_mid_run(testbed_factory):
    """b1's only link goes down: b1 cannot complete and says why; its children fetch elsewhere."""
    st = testbed_factory(load_topology("builtin:hetero-2switch"))
    size = 3_000_000
    cut = {}

    def on_progress(held, t):
        if not cut and held["b2"] > size * 0.25:
            subprocess.run(["ip", "-n", st.host_ns["b1"], "link", "set", "e0", "down"], check=True)
            cut["at"] = held["b1"]

    out = perform(
        _fanout_plan(size),
        launcher=TestbedLauncher(st),
        on_progress=on_progress,
        chunk_size=64 * 1024,
        stall_timeout=2,
        repair_timeout=3,
    )
    assert cut
    assert set(out.failed) == {"b1"}
    assert "missing" in out.failed["b1"]
    for h in ("a1", "b2", "b3", "b4"):
        assert out.result.per_host[h].completed


def test_cli_run_on_testbed_json(testbed_factory, capsys):
    import json

    from topocast.cli.main import main

    st = testbed_factory(load_topology("builtin:uniform-2switch"))
    assert (
        main(
            [
                "run",
                "builtin:uniform-2switch",
                "-a",
                "depth_first",
                "-s",
                "s",
                "--size",
                "1MiB",
                "--launcher",
                "testbed",
                "--testbed",
                st.name,
                "--json",
            ]
        )
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert data["goodput_factor"] == pytest.approx(0.955)
    assert data["predicted"] is not None and data["bound"]["aggregate_bandwidth"] == pytest.approx(7 * 200e6 / 8)
    for h, r in data["measured"]["per_host"].items():
        assert r["rate"] < data["bound"]["per_host_rate"][h]  # nobody beats the shaped links
    assert data["fair_uplink"] is True  # on by default on the testbed
    args = [
        "run",
        "builtin:uniform-2switch",
        "-a",
        "flat",
        "-s",
        "s",
        "--size",
        "1MiB",
        "--launcher",
        "testbed",
        "--testbed",
        st.name,
        "--json",
    ]
    assert main(args + ["--no-fair-uplink"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["fair_uplink"] is False and not data["failed"]


def test_link_down_before_the_start(testbed_factory):
    """Nothing ever reaches b1: its children get the bytes elsewhere; b1 is reported."""
    st = testbed_factory(load_topology("builtin:hetero-2switch"))
    subprocess.run(["ip", "-n", st.host_ns["b1"], "link", "set", "e0", "down"], check=True)
    out = perform(
        _fanout_plan(1_000_000),
        launcher=TestbedLauncher(st),
        chunk_size=64 * 1024,
        stall_timeout=2,
        repair_timeout=3,
        timeout=60,
    )
    assert set(out.failed) == {"b1"}
    assert "unreachable" in out.failed["b1"] or "missing" in out.failed["b1"]
    for h in ("a1", "b2", "b3", "b4"):
        assert out.result.per_host[h].completed


def test_shallow_queues_still_carry_data(testbed_factory):
    """`--queue 0.002` (a 30 kB bfifo at 100 Mbit/s, smaller than one 64 KiB GSO packet):
    data must still flow near the link rate (it stalled every transfer before the links were
    set to one segment per packet)."""
    from topocast.redistribute import two_cluster_topology

    topo = two_cluster_topology(1, 1, nic=100e6 / 8, backbone=100e6 / 8)
    st = testbed_factory(topo, queue=0.002)
    assert all("gso_max_segs 1" in rec["ab"]["leaf"] for rec in st.links)
    size = 2_500_000  # 0.2 s at 100 Mbit/s
    plan = Plan.broadcast("a0", size, ["b0"], [Transfer.of("a0", "b0", 0, size)], planner="one")
    out = perform(plan, topo, launcher=TestbedLauncher(st), chunk_size=64 * 1024, timeout=30)
    assert out.failed == {}
    assert out.result.per_host["b0"].time < 2 * size / (100e6 / 8)
