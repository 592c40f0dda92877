"""Topology Zoo GraphML import."""

from pathlib import Path

import pytest

from topocast.errors import TopologyError
from topocast.topology import load_topology
from topocast.topology.graphml import graphml_summary, load_graphml, speed_from_label

_ROOT = Path(__file__).resolve().parents[2]
# ../shared/data beside the repository root (one level further up from a git worktree)
_DATA = next(
    (d for d in (_ROOT / ".." / "shared" / "data", _ROOT / ".." / ".." / "shared" / "data") if d.is_dir()), None
)
ZOO = sorted((_DATA / "topology-zoo").glob("*.graphml")) if _DATA else []

# PROVENANCE.md: nodes, edges, edges with a speed (LinkSpeedRaw; Abilene from its label).
# We also read 3 Uninett and 1 WIDE labels ("100-155 Mbit/s", "10-100Mbps") as speeds.
PROVENANCE = {
    "Abilene": (11, 14, 14),
    "Carnet": (44, 43, 43),
    "Cernet": (41, 59, 53),
    "Cesnet2001": (23, 23, 22),
    "Eenet": (13, 16, 16),
    "Garr201201": (61, 89, 77),
    "Geant2001": (27, 38, 38),
    "Geant2009": (34, 52, 52),
    "Geant2012": (40, 61, 39),
    "Janetlense": (20, 40, 40),
    "Karen": (25, 30, 30),
    "Kreonet": (13, 12, 12),
    "Litnet": (43, 43, 42),
    "Myren": (37, 40, 40),
    "Niif": (36, 41, 41),
    "Nordu2005": (9, 10, 9),
    "Rediris": (19, 32, 32),
    "Renater2001": (24, 27, 27),
    "Rnp": (31, 34, 34),
    "SwitchL3": (42, 63, 63),
    "Uninett2010": (74, 101, 98 + 3),
    "WideJpn": (30, 33, 30 + 1),
}


def test_all_22_present(data_dir):
    assert {p.stem for p in (data_dir / "topology-zoo").glob("*.graphml")} == set(PROVENANCE)


@pytest.mark.parametrize("path", ZOO, ids=[p.stem for p in ZOO])
def test_zoo_file(path):
    nodes, edges, with_speed = PROVENANCE[path.stem]
    s = graphml_summary(path)
    assert (s["nodes"], s["edges"], s["edges_with_speed"]) == (nodes, edges, with_speed)
    assert len(s["edges_without_speed"]) == edges - with_speed
    assert s["components"] == 1
    t = load_graphml(path, default_bandwidth=125e6)
    assert len(t.hosts) == nodes and not t.switches
    assert len(t.physical_links) == edges - s["parallel_edges"] - s["self_loops"]
    # every PoP keeps its GraphML id
    assert sorted(int(a["id"]) for a in t.attrs.values()) == list(range(nodes))
    if edges == with_speed:
        t2 = load_graphml(path)
        assert [pl.bandwidth for pl in t2.physical_links] == [pl.bandwidth for pl in t.physical_links]
    else:
        with pytest.raises(TopologyError) as ei:
            load_graphml(path)
        msg = str(ei.value)
        assert str(path) in msg and "edges without LinkSpeedRaw" in msg
        assert f"({edges - with_speed} of {edges})" in msg and "--default-bandwidth" in msg
        assert s["edges_without_speed"][0] in msg


def test_abilene_speed_from_label(data_dir):
    t = load_graphml(data_dir / "topology-zoo" / "Abilene.graphml")
    assert {pl.bandwidth for pl in t.physical_links} == {192 * 51.84e6 / 8}
    assert "id" in t.attrs[t.hosts[0]] and "lat" in t.attrs[t.hosts[0]]


def test_parallel_edges_summed(data_dir):
    t = load_graphml(data_dir / "topology-zoo" / "Eenet.graphml")
    s = graphml_summary(data_dir / "topology-zoo" / "Eenet.graphml")
    assert s["parallel_edges"] == 3 and len(t.physical_links) == 13
    merged = [pl for pl in t.physical_links if pl.name and "parallel" in pl.name]
    assert merged


def test_unique_labels(tmp_path):
    p = tmp_path / "g.graphml"
    p.write_text(
        '<?xml version="1.0"?><graphml xmlns="http://graphml.graphdrawing.org/xmlns">'
        '<key attr.name="label" for="node" id="d0"/><key attr.name="LinkSpeedRaw" for="edge" id="d1"/>'
        '<key attr.name="LinkLabel" for="edge" id="d2"/>'
        '<graph edgedefault="undirected">'
        '<node id="0"><data key="d0">London</data></node><node id="1"><data key="d0">London</data></node>'
        '<node id="2"/>'
        '<edge source="0" target="1"><data key="d1">1000000000</data></edge>'
        '<edge source="0" target="1"><data key="d2">2.5 Gbps</data></edge>'
        '<edge source="1" target="2"><data key="d2">STM-1</data></edge>'
        "</graph></graphml>"
    )
    t = load_topology(str(p))
    assert t.hosts == ("London", "London-2", "node2")
    assert dict(t.attrs["London-2"]) == {"id": "1"}
    assert t.physical_links[0].bandwidth == (1e9 + 2.5e9) / 8  # parallel edges summed
    assert t.physical_links[1].bandwidth == 155.52e6 / 8


def test_disconnected_fails(tmp_path):
    p = tmp_path / "g.graphml"
    p.write_text(
        '<?xml version="1.0"?><graphml xmlns="http://graphml.graphdrawing.org/xmlns">'
        '<graph edgedefault="undirected"><node id="0"/><node id="1"/><node id="2"/>'
        '<edge source="0" target="1"/></graph></graphml>'
    )
    assert graphml_summary(p)["components"] == 2
    with pytest.raises(TopologyError) as ei:
        load_graphml(p, default_bandwidth=1e6)
    assert str(p) in str(ei.value) and "cannot be reached" in str(ei.value)


@pytest.mark.parametrize(
    "label, bits",
    [
        ("OC-192c", 192 * 51.84e6),
        ("OC48", 48 * 51.84e6),
        ("10Gb/s", 1e10),
        ("2.5 Gbps", 2.5e9),
        ("100 Mbit/s", 1e8),
        ("STM-4", 4 * 155.52e6),
        ("E1", 2.048e6),
        ("Dark fibre", None),
        ("", None),
    ],
)
def test_speed_from_label(label, bits):
    assert speed_from_label(label) == bits


def test_geo_distance():
    from topocast.topology.graphml import geo_distance_m

    # London - Paris about 344 km; one degree of latitude about 111.2 km
    assert geo_distance_m(51.5074, -0.1278, 48.8566, 2.3522) == pytest.approx(343.5e3, rel=0.01)
    assert geo_distance_m(0, 0, 1, 0) == pytest.approx(111.19e3, rel=1e-3)


def test_geo_latency(data_dir):
    from topocast.topology.graphml import FIBRE_SPEED_M_S, geo_distance_m

    path = data_dir / "topology-zoo" / "Geant2009.graphml"  # every node has coordinates
    t0 = load_graphml(path)
    t = load_graphml(path, geo_latency=True)
    assert all(pl.latency == 0 for pl in t0.physical_links)
    assert all(pl.latency > 0 for pl in t.physical_links)
    pl = t.physical_links[0]
    a, b = t.attrs[pl.a], t.attrs[pl.b]
    assert pl.latency == geo_distance_m(a["lat"], a["lon"], b["lat"], b["lon"]) / FIBRE_SPEED_M_S
    assert max(pl.latency for pl in t.physical_links) < 0.05  # Europe: tens of ms at most
