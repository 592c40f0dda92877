"""Changing a running emulated network: a link's rate (tc class change) and background
traffic (root only; skipped otherwise)."""

import subprocess
import time

import pytest

from topocast.testbed.state import TestbedError
from topocast.topology import load_topology


def _class_rate(ns: str, dev: str) -> str:
    out = subprocess.run(["tc", "-n", ns, "class", "show", "dev", dev], capture_output=True, text=True).stdout
    return next(line for line in out.splitlines() if "1:10 " in line)


def _rate_of(st, a, b, seconds=2.5) -> float:
    from topocast.testbed.live import Traffic

    with Traffic(st, a, b, flows=2) as t:
        time.sleep(seconds)
    assert t.received and t.seconds > 0.3 * seconds
    return t.received / t.seconds


def test_set_rate_changes_both_directions_or_one(testbed_factory):
    from topocast.testbed import load_state
    from topocast.testbed.live import set_rate

    st = testbed_factory(load_topology("builtin:hetero-2switch"))
    rec = next(r for r in st.links if {r["a"], r["b"]} == {"b4", "swB"})
    set_rate(st, "b4", "swB", 2e6 / 8)
    assert "rate 2Mbit" in _class_rate(rec["ab"]["ns"], rec["ab"]["dev"])
    assert "rate 2Mbit" in _class_rate(rec["ba"]["ns"], rec["ba"]["dev"])
    set_rate(st, "swB", "b4", 5e6 / 8, one_way=True)  # from the switch to b4 only
    fwd, back = (rec["ba"], rec["ab"]) if rec["a"] == "b4" else (rec["ab"], rec["ba"])
    assert "rate 5Mbit" in _class_rate(fwd["ns"], fwd["dev"])
    assert "rate 2Mbit" in _class_rate(back["ns"], back["dev"])
    assert load_state(st.name).links[st.links.index(rec)][("ba" if rec["a"] == "b4" else "ab")]["rate"] == "5000000bit"
    with pytest.raises(TestbedError, match="no link between"):
        set_rate(st, "b4", "s", 1e6)


def test_traffic_is_shaped_by_the_changed_rate_and_stops(testbed_factory):
    from topocast.testbed.live import set_rate

    st = testbed_factory(load_topology("builtin:hetero-2switch"))
    before = _rate_of(st, "a1", "b1")  # crosses swA-swB at 40 Mbit/s
    set_rate(st, "swA", "swB", 10e6 / 8)
    after = _rate_of(st, "a1", "b1")
    assert 0.6 * 40e6 / 8 < before < 1.1 * 40e6 / 8
    assert 0.6 * 10e6 / 8 < after < 1.1 * 10e6 / 8


def test_traffic_at_a_rate_for_a_duration_via_the_cli(testbed_factory, monkeypatch):
    import os
    import sys

    st = testbed_factory(load_topology("builtin:hetero-2switch"))
    env = dict(os.environ)
    cmd = [sys.executable, "-m", "topocast", "testbed", "traffic", "a1", "b1", "--rate", "8Mbit/s"]
    cmd += ["--duration", "2.5", "--name", st.name]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=30, env=env)
    assert r.returncode == 0, r.stderr
    mbps = float(r.stdout.split(", ")[1].split()[0])
    assert 6 < mbps < 9  # paced at 8 Mbit/s
    ps = subprocess.run(["pgrep", "-f", "topocast.testbed.flow"], capture_output=True, text=True).stdout
    assert ps.strip() == ""
    r = subprocess.run(
        [sys.executable, "-m", "topocast", "testbed", "set-rate", "a1", "swA", "50Mbit/s", "--name", st.name],
        capture_output=True,
        text=True,
        env=env,
    )
    assert r.returncode == 0 and "now 50 Mbit/s" in r.stdout, r.stdout
