"""SimGrid platform import/export."""

import dataclasses
import re
import xml.etree.ElementTree as ET

import pytest

from topocast.errors import TopologyError
from topocast.topology import load_topology
from topocast.topology.builtin import builtin_topology
from topocast.topology.simgrid import load_simgrid, save_simgrid

# PROVENANCE.md: hosts per file, and links as summarize.py counts them (one private link per
# cluster host, one backbone per cluster, every declared <link>).
EXPECTED = {"g5k.xml": (1528, 1614), "griffon.xml": (92, 96), "gdx.xml": (186, 198), "small_platform.xml": (7, 24)}


def _names(t, u, v):
    return [t.physical_links[t.links[i].physical].name for i in t.route(u, v)]


def _real(names):
    return [n for n in names if not n.startswith("connector:")]


@pytest.mark.parametrize("fname", sorted(EXPECTED))
def test_every_platform_imports(data_dir, fname):
    path = data_dir / "simgrid" / fname
    t = load_simgrid(path)
    n_hosts, _ = EXPECTED[fname]
    assert len(t.hosts) == n_hosts
    # every declared SimGrid link (bar the loopback) is an edge or a bus hub of the graph
    text = path.read_text()
    declared = set(re.findall(r'<link id="([^"]+)"', text)) - {"loopback"}
    names = {n for pl in t.physical_links for n in (pl.name or "").split("+")}
    spoke_of = {n.split("@")[0] for n in names if "@" in n}
    assert declared <= names | spoke_of
    # routing works between the first and last host
    assert t.route(t.hosts[0], t.hosts[-1])


def test_cluster_expansion_griffon(data_dir):
    t = load_simgrid(data_dir / "simgrid" / "griffon.xml")
    h = "griffon-1.nancy.grid5000.fr"
    assert h in t.hosts and "griffon-60.nancy.grid5000.fr" in t.hosts
    priv = next(pl for pl in t.physical_links if pl.a == h)
    assert priv.b == "griffon_cluster_cabinet1"
    assert priv.bandwidth == 125e6 and priv.latency == pytest.approx(24e-6) and priv.sharing == "duplex"
    bb = next(pl for pl in t.physical_links if pl.name == "griffon_cluster_cabinet1_backbone")
    assert bb.bandwidth == 1.25e9 and bb.sharing == "shared"
    assert bb.b == "griffon-griffon_cluster_cabinet1_router.nancy.grid5000.fr"
    # across cabinets: private, backbone, the shared 'backbone' link (a bus: two spokes), ...
    names = _names(t, h, "griffon-30.nancy.grid5000.fr")
    assert names[:2] == ["griffon_cluster_cabinet1_link_1", "griffon_cluster_cabinet1_backbone"]
    assert [n.split("@")[0] for n in names[2:4]] == ["backbone", "backbone"]
    assert names[4:] == ["griffon_cluster_cabinet2_backbone", "griffon_cluster_cabinet2_link_30"]
    assert t.route_latency(h, "griffon-30.nancy.grid5000.fr") == pytest.approx(24e-6 * 3)


def test_g5k_route_follows_simgrid(data_dir):
    t = load_simgrid(data_dir / "simgrid" / "g5k.xml")
    assert t.is_tree()
    assert _names(t, "bordeplage-1.bordeaux.grid5000.fr", "chicon-1.lille.grid5000.fr") == [
        "AS_bordeplage_link_1", "AS_bordeplage_backbone", "link_bordeplage", "link_gw_bordeaux",
        "Bordeaux_Lyon", "Paris_Lyon", "Lille_Paris", "link_gw_lille", "link_chicon",
        "AS_chicon_backbone", "AS_chicon_link_1",
    ]
    assert {pl.bandwidth for pl in t.physical_links} == {1.25e8, 1.25e9}


def test_gdx_rulebased_v3(data_dir):
    t = load_simgrid(data_dir / "simgrid" / "gdx.xml")
    a, b = "gdx-181.orsay.grid5000.fr", "gdx-18.orsay.grid5000.fr"
    assert [n.split("@")[0] for n in _names(t, a, b)] == [
        "AS_gdx-switch15_link_181", "AS_gdx-switch15_backbone", "gdx_main", "gdx_main",
        "AS_gdx-switch11_backbone", "AS_gdx-switch11_link_18",
    ]
    assert all(pl.bandwidth == 1.25e8 for pl in t.physical_links)
    assert t.route_latency(a, b) == pytest.approx(5 * 17.8e-6)


def test_small_platform_routes_cross_exactly_simgrid_links(data_dir):
    path = data_dir / "simgrid" / "small_platform.xml"
    t = load_simgrid(path)
    root = ET.parse(path).getroot()
    n = 0
    for r in root.iter("route"):
        a, b = r.get("src"), r.get("dst")
        if a == b:
            continue
        ids = [c.get("id") for c in r.iter("link_ctn")]
        assert _real(_names(t, a, b)) == ids
        assert _real(_names(t, b, a)) == ids[::-1]  # symmetrical
        n += 1
    assert n == 21
    # values are exact (decimal units): 8.158MBps and the route's latencies
    assert t.route_bandwidth("Tremblay", "Fafard") == 8158000.0
    shared = [pl for pl in t.physical_links if pl.name == "9"]
    assert shared[0].sharing == "shared" and shared[0].bandwidth == 7209750.0


def _directed(pl):
    return {(pl.a, pl.b): pl.bandwidth, (pl.b, pl.a): pl.reverse_bandwidth}


@pytest.mark.parametrize("name", ["two-clusters", "multi-cluster-asym", "fat-tree-k4", "stable-example"])
def test_export_import_round_trip(tmp_path, name):
    t = builtin_topology(name)
    # exercise every sharing policy
    links = [
        pl if i % 3 else dataclasses.replace(pl, sharing="shared" if i % 2 else "fatpipe", bandwidth_ba=None)
        for i, pl in enumerate(t.physical_links)
    ]
    t = t.replace(links=links)
    p = tmp_path / "x.xml"
    save_simgrid(t, p)
    root = ET.parse(p).getroot()  # well-formed XML
    assert root.tag == "platform" and root.get("version") == "4.1"
    t2 = load_simgrid(p)
    assert t2.hosts == t.hosts and set(t2.switches) == set(t.switches)
    a = {frozenset((pl.a, pl.b)): pl for pl in t.physical_links}
    b = {frozenset((pl.a, pl.b)): pl for pl in t2.physical_links}
    assert set(a) == set(b)
    for k, x in a.items():
        y = b[k]
        assert _directed(x) == _directed(y)
        assert x.latency == y.latency
        assert x.sharing == y.sharing


def test_export_large_uses_dijkstra(tmp_path):
    from topocast.topology.generators import multi_cluster_tree

    t = multi_cluster_tree(1000, n_clusters=20, seed=1)
    p = tmp_path / "big.xml"
    save_simgrid(t, p)
    root = ET.parse(p).getroot()
    assert root.find("zone").get("routing") == "DijkstraCache"
    assert len(root.find("zone").findall("route")) == 2 * len(t.physical_links)


def test_load_topology_dispatches_xml(tmp_path):
    p = tmp_path / "x.xml"
    save_simgrid(builtin_topology("hetero-2switch"), p)
    assert load_topology(str(p)).hosts[0] == "s"


@pytest.mark.parametrize(
    "body, needle",
    [
        ('<zone id="z" routing="Full"><host id="a" speed="1f"/><host id="b"', "malformed XML at line"),
        ('<zone id="z" routing="Full"><host id="a" speed="1f"/><host id="b" speed="1f"/>'
         '<link id="l" bandwidth="1Gbs"/><route src="a" dst="b"><link_ctn id="l"/></route></zone>',
         "<link id=\"l\">: bandwidth: unknown bandwidth unit 'Gbs'"),
        ('<zone id="z" routing="Full"><host id="a" speed="1f"/><host id="b" speed="1f"/>'
         '<link id="l" bandwidth="0"/><route src="a" dst="b"><link_ctn id="l"/></route></zone>',
         "bandwidth must be positive"),
        ('<zone id="z" routing="Full"><host id="a" speed="1f"/><host id="b" speed="1f"/>'
         '<link id="l" bandwidth="1Gbps"/><route src="a" dst="c"><link_ctn id="l"/></route></zone>',
         "'c' is not a declared host"),
        ('<zone id="z" routing="Full"><host id="a" speed="1f"/><host id="a" speed="1f"/></zone>',
         "duplicate name 'a'"),
        ('<zone id="z" routing="Full"><host id="a" speed="1f"/><host id="b" speed="1f"/>'
         '<link id="l" bandwidth="1Gbps"/><route src="a" dst="b"><link_ctn id="m"/></route></zone>',
         "link_ctn 'm' names no declared <link>"),
        ('<zone id="z" routing="Full"><host id="a" speed="1f"/><host id="b" speed="1f"/></zone>',
         "cannot be reached"),
        ('<zone id="z" routing="Full"><peer id="p"/></zone>', "unsupported SimGrid element <peer>"),
    ],
)
def test_errors(tmp_path, body, needle):
    p = tmp_path / "bad.xml"
    p.write_text(f"<?xml version='1.0'?>\n<platform version=\"4.1\">\n{body}\n</platform>\n")
    with pytest.raises(TopologyError) as ei:
        load_simgrid(p)
    assert str(p) in str(ei.value)
    assert needle in str(ei.value)
