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
    return [n.replace(" (back)", "") for n in names if not n.startswith("connector:")]


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
    assert len(t.physical_links) == LINKS[fname]


# Our link counts: PROVENANCE's count, minus each bus link, plus one spoke per bus endpoint
# (g5k: 3 buses, 21 spokes; griffon: 1 bus, 3 spokes; gdx: 1 bus, 11 spokes); small_platform
# is an exact route graph: 46 one-way link directions (23 links used both ways) + 120 connectors.
LINKS = {"g5k.xml": 1614 - 3 + 21, "griffon.xml": 96 - 1 + 3, "gdx.xml": 198 - 1 + 11, "small_platform.xml": 46 + 120}


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
        "AS_bordeplage_link_1",
        "AS_bordeplage_backbone",
        "link_bordeplage",
        "link_gw_bordeaux",
        "Bordeaux_Lyon",
        "Paris_Lyon",
        "Lille_Paris",
        "link_gw_lille",
        "link_chicon",
        "AS_chicon_backbone",
        "AS_chicon_link_1",
    ]
    assert {pl.bandwidth for pl in t.physical_links} == {1.25e8, 1.25e9}


def test_gdx_rulebased_v3(data_dir):
    t = load_simgrid(data_dir / "simgrid" / "gdx.xml")
    a, b = "gdx-181.orsay.grid5000.fr", "gdx-18.orsay.grid5000.fr"
    assert [n.split("@")[0] for n in _names(t, a, b)] == [
        "AS_gdx-switch15_link_181",
        "AS_gdx-switch15_backbone",
        "gdx_main",
        "gdx_main",
        "AS_gdx-switch11_backbone",
        "AS_gdx-switch11_link_18",
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
    one_way = [pl for pl in t.physical_links if pl.name == "9"]
    assert one_way[0].directed and one_way[0].bandwidth == 7209750.0


def test_small_platform_bounds_are_finite(data_dir):
    """No connector-only shortcut: every host's max-flow is limited by real SimGrid links."""
    from topocast.bounds import broadcast_bounds

    t = load_simgrid(data_dir / "simgrid" / "small_platform.xml")
    real_max = max(pl.bandwidth for pl in t.physical_links if not (pl.name or "").startswith("connector"))
    b = broadcast_bounds(t, "Tremblay", None)
    assert b.per_host_rate and all(0 < r <= 3 * real_max for r in b.per_host_rate.values())
    # a route whose only link is 9 (7.20975 MBps) in both directions
    assert t.route_bandwidth("Tremblay", "Jupiter") == t.route_bandwidth("Jupiter", "Tremblay") == 7209750.0


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
        (
            '<zone id="z" routing="Full"><host id="a" speed="1f"/><host id="b" speed="1f"/>'
            '<link id="l" bandwidth="1Gbs"/><route src="a" dst="b"><link_ctn id="l"/></route></zone>',
            "<link id=\"l\">: bandwidth: unknown bandwidth unit 'Gbs'",
        ),
        (
            '<zone id="z" routing="Full"><host id="a" speed="1f"/><host id="b" speed="1f"/>'
            '<link id="l" bandwidth="0"/><route src="a" dst="b"><link_ctn id="l"/></route></zone>',
            "bandwidth must be positive",
        ),
        (
            '<zone id="z" routing="Full"><host id="a" speed="1f"/><host id="b" speed="1f"/>'
            '<link id="l" bandwidth="1Gbps"/><route src="a" dst="c"><link_ctn id="l"/></route></zone>',
            "'c' is not a declared host",
        ),
        ('<zone id="z" routing="Full"><host id="a" speed="1f"/><host id="a" speed="1f"/></zone>', "duplicate name 'a'"),
        (
            '<zone id="z" routing="Full"><host id="a" speed="1f"/><host id="b" speed="1f"/>'
            '<link id="l" bandwidth="1Gbps"/><route src="a" dst="b"><link_ctn id="m"/></route></zone>',
            "link_ctn 'm' names no declared <link>",
        ),
        ('<zone id="z" routing="Full"><host id="a" speed="1f"/><host id="b" speed="1f"/></zone>', "cannot be reached"),
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


def test_imported_platform_round_trips_through_yaml(data_dir):
    from topocast.topology.io import dumps, loads

    t = load_simgrid(data_dir / "simgrid" / "small_platform.xml")
    t2 = loads(dumps(t))
    assert t2.physical_links == t.physical_links
    assert dict(t2.routes) == dict(t.routes)


# Two small platforms in the style of SimGrid's examples/platforms (written inline here).
ROUTING_CLUSTER = """<?xml version='1.0'?>
<platform version="4">
<AS id="AS0" routing="Full">
  <AS id="c1" routing="Cluster">
    <router id="router1"/>
    <host id="host1" speed="1Gf"/>
    <link id="l1_UP" bandwidth="125MBps" latency="100us"/>
    <link id="l1_DOWN" bandwidth="100MBps" latency="100us"/>
    <host_link id="host1" up="l1_UP" down="l1_DOWN"/>
    <host id="host2" speed="1Gf"/>
    <link id="l2" bandwidth="125MBps" latency="100us" sharing_policy="FULLDUPLEX"/>
    <host_link id="host2" up="l2_UP" down="l2_DOWN"/>
    <host id="host3" speed="1Gf"/>
    <link id="l3" bandwidth="125MBps" latency="100us"/>
    <host_link id="host3" up="l3" down="l3"/>
    <backbone id="backbone1" bandwidth="2.25GBps" latency="500us"/>
  </AS>
  <AS id="c2" routing="Cluster">
    <router id="router2"/>
    <host id="host4" speed="1Gf"/>
    <link id="l4" bandwidth="125MBps" latency="100us"/>
    <host_link id="host4" up="l4" down="l4"/>
    <backbone id="backbone2" bandwidth="2.25GBps" latency="500us"/>
  </AS>
  <link id="link1-2" bandwidth="2.25GBps" latency="500us"/>
  <ASroute src="c1" dst="c2" gw_src="router1" gw_dst="router2"><link_ctn id="link1-2"/></ASroute>
</AS>
</platform>
"""

DOGBONE = """<?xml version='1.0'?>
<platform version="4">
  <AS id="AS0" routing="Full">
    <host id="S1" speed="1Gf"/><host id="C1" speed="1Gf"/><host id="S2" speed="1Gf"/><host id="C2" speed="1Gf"/>
    <router id="R1"/><router id="R2"/>
    <link id="1" bandwidth="100MBps" latency="10ms"/><link id="2" bandwidth="50MBps" latency="10ms"/>
    <link id="3" bandwidth="100MBps" latency="10ms"/><link id="4" bandwidth="100MBps" latency="10ms"/>
    <link id="5" bandwidth="100MBps" latency="10ms"/>
    <route src="S1" dst="C1"><link_ctn id="1"/><link_ctn id="2"/><link_ctn id="3"/></route>
    <route src="S2" dst="C2"><link_ctn id="4"/><link_ctn id="2"/><link_ctn id="5"/></route>
    <route src="S1" dst="C2"><link_ctn id="1"/><link_ctn id="2"/><link_ctn id="5"/></route>
    <route src="S2" dst="C1"><link_ctn id="4"/><link_ctn id="2"/><link_ctn id="3"/></route>
    <route src="S1" dst="R1"><link_ctn id="1"/></route>
    <route src="R1" dst="R2"><link_ctn id="2"/></route>
    <route src="R2" dst="C1"><link_ctn id="3"/></route>
    <route src="S2" dst="R1"><link_ctn id="4"/></route>
    <route src="R2" dst="C2"><link_ctn id="5"/></route>
  </AS>
</platform>
"""


def test_cluster_routing_zone_with_host_links(tmp_path):
    p = tmp_path / "rc.xml"
    p.write_text(ROUTING_CLUSTER)
    t = load_simgrid(p)
    assert t.hosts == ("host1", "host2", "host3", "host4") and t.is_tree()
    by = {pl.name: pl for pl in t.physical_links}
    assert (by["l1_UP+l1_DOWN"].bandwidth, by["l1_UP+l1_DOWN"].bandwidth_ba) == (125e6, 100e6)
    assert by["l2"].sharing == "duplex" and by["l3"].sharing == "shared"
    assert _names(t, "host1", "host4") == ["l1_UP+l1_DOWN", "backbone1", "link1-2", "backbone2", "l4"]


def test_full_zone_with_routers_becomes_the_graph(tmp_path):
    p = tmp_path / "dogbone.xml"
    p.write_text(DOGBONE)
    t = load_simgrid(p)
    assert set(t.switches) == {"R1", "R2"} and t.is_tree()
    assert {frozenset((pl.a, pl.b)): pl.name for pl in t.physical_links} == {
        frozenset(("S1", "R1")): "1",
        frozenset(("R1", "R2")): "2",
        frozenset(("R2", "C1")): "3",
        frozenset(("S2", "R1")): "4",
        frozenset(("R2", "C2")): "5",
    }
    assert t.route_nodes("S1", "C2") == ("S1", "R1", "R2", "C2")
    assert t.route_bandwidth("S2", "C1") == 50e6
    assert all(pl.sharing == "shared" for pl in t.physical_links)  # SimGrid's default policy


def _full_round_trip(t, tmp_path):
    p = tmp_path / "full.xml"
    save_simgrid(t, p, routing="Full")
    assert ET.parse(p).getroot().find("zone").get("routing") == "Full"
    t2 = load_simgrid(p)
    assert t2.hosts == t.hosts and set(t2.switches) == set(t.switches)
    for u in t.hosts:
        for v in t.hosts:
            if u != v:
                assert t2.route_nodes(u, v) == t.route_nodes(u, v), (u, v)
                assert t2.route_bandwidth(u, v) == t.route_bandwidth(u, v)
                assert t2.route_latency(u, v) == pytest.approx(t.route_latency(u, v), rel=1e-12)
    return t2


@pytest.mark.parametrize("name", ["two-clusters", "stable-example", "fat-tree-k4", "hetero-2switch"])
def test_full_export_replays_topocast_routes(tmp_path, name):
    _full_round_trip(builtin_topology(name), tmp_path)


def test_full_export_of_imported_route_graph(data_dir, tmp_path):
    t = load_simgrid(data_dir / "simgrid" / "small_platform.xml")
    t2 = _full_round_trip(t, tmp_path)
    assert sum(pl.directed for pl in t2.physical_links) == sum(pl.directed for pl in t.physical_links)


def test_full_export_zoo_with_explicit_choice(data_dir, tmp_path):
    from topocast.topology.graphml import load_graphml

    _full_round_trip(load_graphml(data_dir / "topology-zoo" / "Geant2009.graphml"), tmp_path)


def test_exact_cross_the_backbone(data_dir):
    from topocast.bounds import broadcast_bounds

    t = load_simgrid(data_dir / "simgrid" / "griffon.xml", exact=True)
    a, b, c = "griffon-1.nancy.grid5000.fr", "griffon-2.nancy.grid5000.fr", "griffon-30.nancy.grid5000.fr"
    # as SimGrid: private up, the cluster backbone, private down (also inside a cabinet)
    assert _names(t, a, b) == [
        "griffon_cluster_cabinet1_link_1_UP",
        "griffon_cluster_cabinet1_backbone",
        "griffon_cluster_cabinet1_link_2_DOWN",
    ]
    # and the shared 'backbone' between cabinets is one resource, as in SimGrid
    assert _real(_names(t, a, c)) == [
        "griffon_cluster_cabinet1_link_1_UP",
        "griffon_cluster_cabinet1_backbone",
        "backbone",
        "griffon_cluster_cabinet2_backbone",
        "griffon_cluster_cabinet2_link_30_DOWN",
    ]
    assert t.route_latency(a, c) == pytest.approx(3 * 24e-6)
    assert t.route_latency(a, b) == pytest.approx(2 * 24e-6)
    bound = broadcast_bounds(t, a, None)
    assert max(bound.per_host_rate.values()) == 125e6  # the 1 Gbit/s private links
    # the default (tree) import keeps intra-cabinet traffic off the backbone
    tree = load_simgrid(data_dir / "simgrid" / "griffon.xml")
    assert "griffon_cluster_cabinet1_backbone" not in _names(tree, a, b)


@pytest.mark.parametrize("fname", ["g5k.xml", "gdx.xml"])
def test_exact_mapping_keeps_simgrid_link_lists(data_dir, fname):
    tree = load_simgrid(data_dir / "simgrid" / fname)
    t = load_simgrid(data_dir / "simgrid" / fname, exact=True)
    u, v = t.hosts[0], t.hosts[-1]
    exact = _real(_names(t, u, v))
    default = [n.split("@")[0] for n in _names(tree, u, v)]
    # same SimGrid links in the same order; a bus is one hop instead of two spokes
    dedup = [n for k, n in enumerate(default) if k == 0 or n != default[k - 1]]
    strip = [n.removesuffix("_UP").removesuffix("_DOWN") for n in exact]
    assert strip == dedup
