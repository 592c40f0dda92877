"""The YAML/JSON topology file: loading, saving (round trip), errors naming file and element."""

import json
import textwrap

import pytest

from topocast.errors import TopologyError
from topocast.topology import load_topology
from topocast.topology.builtin import builtin_names, builtin_topology
from topocast.topology.io import dumps, load_file, loads, save_file
from topocast.units import format_bandwidth_exact, format_time_exact

GOOD = textwrap.dedent(
    """\
    name: two-clusters
    hosts: [s, a1, a2, b1, b2]
    switches: [swA, swB]
    links:
      - {a: s,   b: swA, bandwidth: 1Gbps, latency: 50us}
      - {a: a1,  b: swA, bandwidth: 1Gbps, name: nic-a1}
      - {a: a2,  b: swA, bandwidth: 125MB/s, sharing: shared}
      - {a: b1,  b: swB, bandwidth: 1.25E8, sharing: fatpipe}
      - {a: b2,  b: swB, bandwidth: 100Mbps}
      - {a: swA, b: swB, bandwidth: 100Mbps, latency: 5ms, bandwidth_ba: 50Mbps}
    routes:
      - {src: a1, dst: b1, path: [a1, swA, swB, b1]}
    injection: {default: 20us, hosts: {s: 50us}, pairs: [{src: s, dst: a1, time: 10us}]}
    reduction: {default: 1GB/s, hosts: {a1: 500MB/s}}
    """
)


def _same(t1, t2):
    assert t1.name == t2.name
    assert t1.hosts == t2.hosts and t1.switches == t2.switches
    assert t1.physical_links == t2.physical_links
    assert dict(t1.routes) == dict(t2.routes)
    assert dict(t1.injection_time) == dict(t2.injection_time)
    assert dict(t1.injection_pair) == dict(t2.injection_pair)
    assert dict(t1.reduction_cost) == dict(t2.reduction_cost)
    assert {k: dict(v) for k, v in t1.attrs.items()} == {k: dict(v) for k, v in t2.attrs.items()}


def test_load_values(tmp_path):
    p = tmp_path / "t.yaml"
    p.write_text(GOOD)
    t = load_file(p)
    assert t.name == "two-clusters"
    assert t.hosts == ("s", "a1", "a2", "b1", "b2")
    l0, l1, l2, l3, l4, l5 = t.physical_links
    assert l0.bandwidth == 125e6 and l0.latency == pytest.approx(50e-6, rel=1e-15)
    assert l1.name == "nic-a1"
    assert l2.bandwidth == 125e6 and l2.sharing == "shared"
    assert l3.bandwidth == 125e6 and l3.sharing == "fatpipe"
    assert l5.bandwidth == 12.5e6 and l5.bandwidth_ba == 6.25e6 and l5.latency == pytest.approx(5e-3)
    assert t.route_nodes("a1", "b1") == ("a1", "swA", "swB", "b1")
    assert t.injection_time["s"] == pytest.approx(50e-6)
    assert t.injection_time["b2"] == pytest.approx(20e-6)
    assert t.injection_pair[("s", "a1")] == pytest.approx(10e-6)
    assert t.reduction_cost["a1"] == pytest.approx(1 / 500e6)
    assert t.reduction_cost["b1"] == pytest.approx(1e-9)
    assert t.source == str(p)


@pytest.mark.parametrize("ext", ["yaml", "json"])
def test_round_trip_file(tmp_path, ext):
    t = loads(GOOD, "x.yaml")
    p = tmp_path / f"t.{ext}"
    save_file(t, p)
    if ext == "json":
        json.loads(p.read_text())
    _same(t, load_file(p))


def test_saved_units_are_human():
    text = dumps(loads(GOOD, "x.yaml"))
    assert "bandwidth: 1Gbps" in text
    assert "100Mbps" in text and "50Mbps" in text
    assert "latency: 50us" in text and "latency: 5ms" in text
    assert "default: 1GB/s" in text


def test_inexact_values_written_as_numbers():
    assert format_bandwidth_exact(1e8 / 3) == 1e8 / 3
    assert format_bandwidth_exact(155e6 / 8) == "155Mbps"
    assert format_time_exact(1 / 3) == 1 / 3
    assert format_time_exact(0.0) == 0


@pytest.mark.parametrize("name", builtin_names())
def test_round_trip_builtins(name, tmp_path):
    t = builtin_topology(name)
    p = tmp_path / "b.yaml"
    save_file(t, p)
    _same(t, load_file(p))


def test_round_trip_attrs_and_odd_gamma():
    t = loads(GOOD, "x.yaml")
    t = t.replace(attrs={"s": {"id": "n0", "lat": 1.5}}, reduction_cost={"s": 1 / 3e8, "a1": 0.0})
    _same(t, loads(dumps(t)))
    _same(t, loads(dumps(t, "json"), fmt="json"))


def test_load_topology_dispatch(tmp_path):
    p = tmp_path / "t.json"
    p.write_text(dumps(loads(GOOD), "json"))
    assert load_topology(str(p)).hosts[0] == "s"
    assert load_topology("builtin:two-clusters").name == "two-clusters"


def test_default_name_is_file_stem(tmp_path):
    p = tmp_path / "mynet.yaml"
    p.write_text("hosts: [a, b]\nlinks: [{a: a, b: b, bandwidth: 1Gbps}]\n")
    assert load_file(p).name == "mynet"


# ---------------------------------------------------------------- errors
BAD = {
    "malformed-yaml": ("hosts: [a, b\nlinks: []\n", ["line", "column"]),
    "unknown-unit": (
        "hosts: [a, b]\nlinks:\n  - {a: a, b: b, bandwidth: 1Gbs}\n",
        ["links[0] (a-b): bandwidth", "unit", "1Gbs"],
    ),
    "unknown-time-unit": (
        "hosts: [a, b]\nlinks:\n  - {a: a, b: b, bandwidth: 1Gbps, latency: 5 parsecs}\n",
        ["links[0] (a-b): latency"],
    ),
    "zero-bandwidth": (
        "hosts: [a, b]\nlinks:\n  - {a: a, b: b, bandwidth: 0}\n",
        ["links[0] (a-b): bandwidth", "positive"],
    ),
    "negative-bandwidth": (
        "hosts: [a, b]\nlinks:\n  - {a: a, b: b, bandwidth: -5Mbps}\n",
        ["links[0] (a-b): bandwidth", "positive"],
    ),
    "negative-bandwidth-ba": (
        "hosts: [a, b]\nlinks:\n  - {a: a, b: b, bandwidth: 5Mbps, bandwidth_ba: -1}\n",
        ["links[0] (a-b): bandwidth_ba", "positive"],
    ),
    "undeclared-node": (
        "hosts: [a, b]\nlinks:\n  - {a: a, b: b, bandwidth: 1Gbps}\n  - {a: b, b: c, bandwidth: 1Gbps}\n",
        ["links[1] (b-c): b", "'c' is not a declared host or switch"],
    ),
    "duplicate-name": (
        "hosts: [a, b]\nswitches: [a]\nlinks:\n  - {a: a, b: b, bandwidth: 1Gbps}\n",
        ["switches[0] (a)", "duplicate name 'a'"],
    ),
    "duplicate-link": (
        "hosts: [a, b]\nlinks:\n  - {a: a, b: b, bandwidth: 1Gbps}\n  - {a: b, b: a, bandwidth: 1Gbps}\n",
        ["links[1] (b-a)", "duplicate link b->a (already in links[0])"],
    ),
    "unreachable-host": (
        "hosts: [a, b, c]\nlinks:\n  - {a: a, b: b, bandwidth: 1Gbps}\n",
        ["host 'c'", "cannot be reached"],
    ),
    "unknown-top-key": ("hosts: [a]\nlinkz: []\n", ["top level", "unknown key 'linkz'"]),
    "unknown-link-key": (
        "hosts: [a, b]\nlinks:\n  - {a: a, b: b, bandwidth: 1Gbps, bw: 3}\n",
        ["links[0] (a-b)", "unknown key 'bw'"],
    ),
    "wrong-type-hosts": ("hosts: a\n", ["hosts", "expected a list"]),
    "wrong-type-links": ("hosts: [a]\nlinks: {a: 1}\n", ["links", "expected a list"]),
    "wrong-type-link-entry": ("hosts: [a]\nlinks: [3]\n", ["links[0]", "expected a mapping"]),
    "not-a-mapping": ("- a\n- b\n", ["expected a mapping"]),
    "missing-bandwidth": ("hosts: [a, b]\nlinks:\n  - {a: a, b: b}\n", ["links[0] (a-b)", "missing 'bandwidth'"]),
    "bad-sharing": (
        "hosts: [a, b]\nlinks:\n  - {a: a, b: b, bandwidth: 1Gbps, sharing: half}\n",
        ["links[0] (a-b): sharing", "duplex"],
    ),
    "bad-route": (
        "hosts: [a, b]\nswitches: [s]\nlinks:\n  - {a: a, b: s, bandwidth: 1Gbps}\n  - {a: s, b: b, bandwidth: 1Gbps}\n"
        "routes:\n  - {src: a, dst: b, path: [a, b]}\n",
        ["route a->b", "no link from 'a' to 'b'"],
    ),
    "injection-unknown-host": (
        "hosts: [a, b]\nlinks:\n  - {a: a, b: b, bandwidth: 1Gbps}\ninjection: {hosts: {z: 1us}}\n",
        ["injection: hosts: z", "not a declared host"],
    ),
    "reduction-bad-unit": (
        "hosts: [a, b]\nlinks:\n  - {a: a, b: b, bandwidth: 1Gbps}\nreduction: {default: 3 apples}\n",
        ["reduction: default"],
    ),
    "empty": ("", ["empty"]),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_errors_name_file_and_element(case, tmp_path):
    text, needles = BAD[case]
    p = tmp_path / f"{case}.yaml"
    p.write_text(text)
    with pytest.raises(TopologyError) as ei:
        load_file(p)
    msg = str(ei.value)
    assert str(p) in msg
    for n in needles:
        assert n in msg, (n, msg)


def test_error_has_line_number(tmp_path):
    p = tmp_path / "t.yaml"
    p.write_text("hosts: [a, b]\nlinks:\n  - {a: a, b: b, bandwidth: 1Gbps}\n  - {a: a, b: b, bandwidth: 2Xbps}\n")
    with pytest.raises(TopologyError) as ei:
        load_file(p)
    assert f"{p}:4" in str(ei.value)


def test_malformed_json(tmp_path):
    p = tmp_path / "t.json"
    p.write_text('{"hosts": ["a", "b"],\n "links": [}\n')
    with pytest.raises(TopologyError) as ei:
        load_file(p)
    msg = str(ei.value)
    assert str(p) in msg and "malformed JSON at line 2" in msg


def test_missing_file(tmp_path):
    with pytest.raises(TopologyError, match="no such file"):
        load_file(tmp_path / "nope.yaml")


def test_docs_example_loads():
    """The example in docs/topology.md stays a valid file."""
    from pathlib import Path

    doc = Path(__file__).resolve().parents[2] / "docs" / "topology.md"
    if not doc.exists():
        pytest.skip("docs/topology.md not present")
    text = doc.read_text()
    block = text.split("```yaml\n", 1)[1].split("```", 1)[0]
    t = loads(block, "docs.yaml")
    assert t.hosts == ("a0", "a1", "b0", "b1")
    assert t.physical_links[3].bandwidth == 12.5e6 and t.physical_links[3].bandwidth_ba == 125e6
    assert t.route_nodes("a0", "b1") == ("a0", "swA", "swB", "b1")


def test_measured_alternatives_are_checked_and_kept():
    from topocast.topology.io import dumps, loads

    text = """name: t
hosts: [a, b, c]
switches: [s, t]
links:
- {a: a, b: s, bandwidth: 1Gbps}
- {a: b, b: s, bandwidth: 1Gbps}
- {a: c, b: t, bandwidth: 1Gbps}
- {a: s, b: t, bandwidth: 1Gbps}
measured:
  by: topocast probe
  alternatives:
  - {switch: x, or_merged_into: [s], chosen: s, worst_ratio: 0.97}
"""
    topo = loads(text)
    assert topo.measured["alternatives"][0]["chosen"] == "s"
    assert any("may be one with s" in n for n in topo.notes)
    assert loads(dumps(topo)).measured == topo.measured
    with pytest.raises(TopologyError, match="worst_ratio"):
        loads(text.replace("0.97", "lots"))
