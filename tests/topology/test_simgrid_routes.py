"""SimGrid platforms: every host pair takes the links SimGrid 3.32 itself takes.

The oracle is SimGrid: ``simgrid_oracle.py`` runs under ``/usr/bin/python3`` (Debian's
python3-simgrid) and prints ``Host.route_to`` for the pairs asked. Tests that need it skip
with a reason when it is absent (``.ci/runtime-deps.sh`` installs it).
"""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path

import pytest

from topocast.errors import TopologyError, TopologyWarning
from topocast.plan import Plan, Transfer
from topocast.sim import simulate
from topocast.topology.simgrid import load_simgrid, save_simgrid

ORACLE = Path(__file__).with_name("simgrid_oracle.py")
SYSTEM_PYTHON = "/usr/bin/python3"


def _has_simgrid() -> bool:
    if not Path(SYSTEM_PYTHON).exists():
        return False
    return subprocess.run([SYSTEM_PYTHON, "-c", "import simgrid"], capture_output=True).returncode == 0


needs_simgrid = pytest.mark.skipif(
    not _has_simgrid(),
    reason="SimGrid's Python bindings (Debian python3-simgrid for /usr/bin/python3) are not installed",
)


def simgrid_routes(platform: Path, pairs, tmp_path: Path, transfer=None):
    """SimGrid's routes for ``pairs`` (a list or "all"): {(a, b): (links, latency)}, and the
    transfer time when ``transfer = (src, dst, bytes)``."""
    pairs_file = tmp_path / "pairs.json"
    pairs_file.write_text(json.dumps(pairs))
    argv = [SYSTEM_PYTHON, str(ORACLE), str(platform), str(pairs_file)]
    if transfer:
        argv += ["--transfer", *map(str, transfer)]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout)
    routes = {(a, b): (links, lat) for a, b, links, lat in out["routes"]}
    return routes, out["transfer"]


def topocast_links(t, a, b) -> list[str]:
    """Names of the links ``t.route(a, b)`` crosses (connector edges of exact mode left out)."""
    out = []
    for i in t.route(a, b):
        name = t.physical_links[t.links[i].physical].name or ""
        if name.startswith("connector:"):
            continue
        name = name.replace(" (back)", "")
        if "@" in name and out and out[-1].split("@")[0] == name.split("@")[0]:
            out[-1] = name.split("@")[0]  # into a bus hub and out of it: one SimGrid link
            continue
        out.append(name)
    return out


def same_links(ours: list[str], theirs: list[str]) -> bool:
    """Same links in the same order. Ours may be a merged link ("a+b") or a bus spoke
    ("bus@node"); SimGrid names a SPLITDUPLEX link's halves l_UP / l_DOWN."""
    if len(ours) != len(theirs):
        return False
    for x, y in zip(ours, theirs):
        parts = {p.split("@")[0] for p in x.split("+")}
        base = y.removesuffix("_UP").removesuffix("_DOWN")
        if y not in parts and base not in parts:
            return False
    return True


def compare_with_simgrid(platform: Path, t, tmp_path: Path, pairs):
    """(pairs compared, pairs SimGrid cannot route, list of differences)."""
    routes, _ = simgrid_routes(platform, pairs, tmp_path)
    diffs, unrouted = [], 0
    for (a, b), (links, lat) in routes.items():
        if links is None:
            unrouted += 1
            continue
        ours = topocast_links(t, a, b)
        if not same_links(ours, links) or abs(t.route_latency(a, b) - lat) > 1e-12 + 1e-9 * lat:
            diffs.append((a, b, ours, links, t.route_latency(a, b), lat))
    return len(routes) - unrouted, unrouted, diffs


# ---------------------------------------------------------------- the intermediate-switch case
INTERMEDIATE_SWITCH = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <zone id="world" routing="Floyd">
    <zone id="site1" routing="Floyd">
      <host id="a1" speed="1Gf"/> <host id="a2" speed="1Gf"/> <host id="a3" speed="1Gf"/>
      <router id="gw1"/>
      <router id="spare"/>
      <link id="a1_nic" bandwidth="10GBps" latency="1ms"/>
      <link id="a2_nic" bandwidth="10GBps" latency="1ms"/>
      <link id="a3_nic" bandwidth="10GBps" latency="1ms"/>
      <link id="sw_uplink" bandwidth="10GBps" latency="2.5ms"/>
      <link id="dark_fibre" bandwidth="1GBps" latency="0s"/>
      <route src="a1" dst="gw1"><link_ctn id="a1_nic"/><link_ctn id="sw_uplink"/></route>
      <route src="a2" dst="gw1"><link_ctn id="a2_nic"/><link_ctn id="sw_uplink"/></route>
      <route src="a3" dst="gw1"><link_ctn id="a3_nic"/></route>
    </zone>
    <zone id="site2" routing="Full">
      <host id="b1" speed="1Gf"/>
      <router id="gw2"/>
      <link id="b1_nic" bandwidth="1GBps" latency="1ms" sharing_policy="SPLITDUPLEX"/>
      <route src="b1" dst="gw2"><link_ctn id="b1_nic" direction="UP"/></route>
    </zone>
    <link id="wan" bandwidth="1GBps" latency="10ms"/>
    <zoneRoute src="site1" dst="site2" gw_src="gw1" gw_dst="gw2"><link_ctn id="wan"/></zoneRoute>
  </zone>
</platform>
"""


@pytest.fixture
def intermediate_switch(tmp_path) -> Path:
    path = tmp_path / "intermediate.xml"
    path.write_text(INTERMEDIATE_SWITCH)
    return path


def test_declared_route_goes_up_to_the_gateway_and_back(intermediate_switch):
    t = load_simgrid(intermediate_switch)
    # Floyd joins a1->gw1 and gw1->a2: the uplink is crossed twice (up, then down)
    assert topocast_links(t, "a1", "a2") == ["a1_nic", "sw_uplink", "sw_uplink", "a2_nic"]
    assert t.route_latency("a1", "a2") == pytest.approx(0.007)
    # a3 hangs off the gateway itself: no detour
    assert topocast_links(t, "a1", "a3") == ["a1_nic", "sw_uplink", "a3_nic"]
    # through both zones' gateways
    assert topocast_links(t, "a1", "b1") == ["a1_nic", "sw_uplink", "wan", "b1_nic"]
    assert any("no route uses" in n and "dark_fibre" in n for n in t.notes)
    assert any("routers that no route uses" in n and "spare" in n for n in t.notes)


def test_link_crossed_twice_is_shared_twice_in_the_simulator(intermediate_switch):
    """The uplink carries the a1->a2 flow twice: 10 GB over a 10 GB/s shared uplink takes
    2 s (plus latency), not 1 s."""
    t = load_simgrid(intermediate_switch)
    size = 10**10
    plan = Plan(
        "broadcast", size, (Transfer.of("a1", "a2", 0, size),), {"a1": ((0, size),)}, {"a2": ((0, size),)}, source="a1"
    )
    assert simulate(plan, t).per_host["a2"].time == pytest.approx(2.0 + 0.007, rel=1e-9)


@needs_simgrid
def test_intermediate_switch_matches_simgrid(intermediate_switch, tmp_path):
    t = load_simgrid(intermediate_switch)
    compared, unrouted, diffs = compare_with_simgrid(intermediate_switch, t, tmp_path, "all")
    assert (compared, unrouted, diffs) == (12, 0, [])
    size = 10**10
    _, sg_time = simgrid_routes(intermediate_switch, [], tmp_path, transfer=("a1", "a2", size))
    plan = Plan(
        "broadcast", size, (Transfer.of("a1", "a2", 0, size),), {"a1": ((0, size),)}, {"a2": ((0, size),)}, source="a1"
    )
    ours = simulate(plan, t).per_host["a2"].time
    assert sg_time == pytest.approx(2.007, rel=1e-9)  # the uplink carries the flow twice in SimGrid too
    assert ours == pytest.approx(sg_time, rel=1e-9)


# ---------------------------------------------------------------- the real platforms
PLATFORMS = {  # file -> None for every pair, or the size of a random sample beside one pair
    # between every two host groups (hosts behind one router: a cluster), so that every kind
    # of route (within a cluster, between clusters of a site, between sites) is compared
    "small_platform.xml": None,
    "griffon.xml": None,
    "g5k.xml": 2000,
}


def _sample_pairs(t, hosts: list[str], size: int) -> list[list[str]]:
    """One random pair from every ordered pair of host groups (the same group included,
    where it has two hosts), and ``size`` random pairs more."""
    rng = random.Random(0)
    groups: dict[str, list[str]] = {}
    for h in hosts:
        groups.setdefault(t.neighbors(h)[0], []).append(h)
    pairs = []
    for a_group in groups.values():
        for b_group in groups.values():
            a, b = rng.choice(a_group), rng.choice(b_group)
            if a == b and len(b_group) > 1:
                b = rng.choice([x for x in b_group if x != a])
            if a != b:
                pairs.append([a, b])
    everyone = [[a, b] for a in hosts for b in hosts if a != b]
    return pairs + rng.sample(everyone, size)


@needs_simgrid
@pytest.mark.slow
@pytest.mark.parametrize("fname", sorted(PLATFORMS))
def test_real_platform_routes_match_simgrid(data_dir, tmp_path, fname):
    """Every host pair (on g5k a pair between every two clusters and a random sample)
    crosses SimGrid's links, in SimGrid's order.
    Clusters need the exact import (SimGrid's intra-cluster routes cross the backbone)."""
    platform = data_dir / "simgrid" / fname
    t = load_simgrid(platform, exact=True)
    hosts = sorted(t.hosts)
    if PLATFORMS[fname] is None:
        pairs = [[a, b] for a in hosts for b in hosts if a != b]
    else:
        pairs = _sample_pairs(t, hosts, PLATFORMS[fname])
    compared, unrouted, diffs = compare_with_simgrid(platform, t, tmp_path, pairs)
    print(f"{fname}: {compared} pairs compared, {unrouted} that SimGrid cannot route")
    assert compared > 0 and diffs == []


@needs_simgrid
@pytest.mark.slow
def test_default_import_differs_only_inside_clusters_and_says_so(data_dir, tmp_path):
    """Without exact=True a cluster's hosts meet at the cluster switch instead of crossing the
    backbone as SimGrid routes them; every other pair matches, and the notes count the rest."""
    platform = data_dir / "simgrid" / "griffon.xml"
    t = load_simgrid(platform)
    compared, unrouted, diffs = compare_with_simgrid(platform, t, tmp_path, "all")
    assert compared == 92 * 91 and unrouted == 0
    cabinet = {h: t.neighbors(h)[0] for h in t.hosts}  # the cluster switch of each host
    assert all(cabinet[a] == cabinet[b] for a, b, *_ in diffs)
    note = next(n for n in t.notes if "cannot be drawn" in n)
    assert note.startswith(f"{len(diffs)} host pairs")


@needs_simgrid
@pytest.mark.parametrize(
    "name", ["intermediate", "builtin:two-clusters", "builtin:hetero-2switch", "builtin:fat-tree-k4"]
)
def test_export_round_trip_read_back_by_simgrid(intermediate_switch, tmp_path, name):
    """A topology exported by topocast and read by SimGrid routes every host pair over the
    links topocast routes it over (same links, same latency)."""
    from topocast.topology import load_topology

    t = load_simgrid(intermediate_switch) if name == "intermediate" else load_topology(name)
    out = tmp_path / "exported.xml"
    save_simgrid(t, out)
    back = load_simgrid(out)
    n = len(t.hosts)
    compared, unrouted, diffs = compare_with_simgrid(out, back, tmp_path, "all")
    assert (compared, unrouted, diffs) == (n * (n - 1), 0, [])
    for a in t.hosts:
        for b in t.hosts:
            if a != b:
                assert back.route_nodes(a, b) == t.route_nodes(a, b)
                assert back.route_latency(a, b) == pytest.approx(t.route_latency(a, b))


# ---------------------------------------------------------------- bad input
def _platform(body: str, tmp_path: Path) -> Path:
    path = tmp_path / "bad.xml"
    path.write_text(f"<?xml version='1.0'?>\n<platform version=\"4.1\">\n{body}\n</platform>\n")
    return path


@pytest.mark.parametrize(
    "body, expected",
    [
        (
            '<zone id="z" routing="Full"><host id="a" speed="1f"/><host id="b" speed="1f"/>'
            '<route src="a" dst="b"><link_ctn id="nope"/></route></zone>',
            "names no declared <link>",
        ),
        (
            '<zone id="z" routing="Full"><host id="a" speed="1f"/><host id="b" speed="1f"/>'
            '<link id="l" bandwidth="1GBps"/><link id="m" bandwidth="1GBps"/>'
            '<route src="a" dst="b"><link_ctn id="l"/></route>'
            '<route src="b" dst="a"><link_ctn id="m"/></route></zone>',
            "declared twice with different links",
        ),
        (
            '<zone id="top" routing="Full"><zone id="z1" routing="Full"><host id="a" speed="1f"/></zone>'
            '<zone id="z2" routing="Full"><host id="b" speed="1f"/></zone><link id="l" bandwidth="1GBps"/>'
            '<zoneRoute src="z1" dst="z2" gw_src="b" gw_dst="a"><link_ctn id="l"/></zoneRoute></zone>',
            "gateway 'b' is not inside zone 'z1'",
        ),
        (
            '<zone id="z" routing="Full"><host id="a" speed="1f"/><host id="b" speed="1f"/>'
            '<link id="l" bandwidth="1GBps" sharing_policy="SPLITDUPLEX"/>'
            '<route src="a" dst="b"><link_ctn id="l"/></route></zone>',
            "needs direction",
        ),
    ],
)
def test_bad_routes_name_the_file_and_route(tmp_path, body, expected):
    path = _platform(body, tmp_path)
    with pytest.raises(TopologyError) as err:
        load_simgrid(path)
    text = str(err.value)
    assert expected in text and "bad.xml" in text


def test_bare_numbers_are_bytes_per_second_with_a_warning_when_they_look_like_bits(tmp_path):
    body = (
        '<zone id="z" routing="Full"><host id="a" speed="1f"/><host id="b" speed="1f"/>'
        '<link id="l" bandwidth="1000000000" latency="0.001"/>'
        '<route src="a" dst="b"><link_ctn id="l"/></route></zone>'
    )
    with pytest.warns(TopologyWarning, match="look like bit/s"):
        t = load_simgrid(_platform(body, tmp_path))
    assert t.route_bandwidth("a", "b") == 1e9  # bytes/s, as SimGrid reads it
    assert t.route_latency("a", "b") == 0.001  # seconds
    assert any("1Gbps" in n for n in t.notes)


def test_topology_show_lists_what_the_import_left_out(intermediate_switch):
    import contextlib
    import io

    from topocast.cli.main import main as cli_main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli_main(["topology", "show", str(intermediate_switch), "--json"]) == 0
    notes = json.loads(out.getvalue())["notes"]
    assert any("dark_fibre" in n for n in notes) and any("spare" in n for n in notes)
    assert any("declared routes" in n for n in notes)


def random_nested_platform(seed: int) -> str:
    """Nested Floyd/Full zones with explicit routes, ties between equal-cost chains, zone
    routes that Floyd must chain through a middle zone, and shared uplinks of intermediate
    switches: the cases where SimGrid's routing and a shortest path on the graph part."""
    rng = random.Random(seed)
    zones, zone_routes = [], []
    n_zones = rng.randint(3, 4)
    for z in range(n_zones):
        routing = rng.choice(["Floyd", "Floyd", "Full"])
        hosts = [f"z{z}h{i}" for i in range(rng.randint(2, 4))]
        switches = [f"z{z}sw{i}" for i in range(rng.randint(1, 2))]
        gw = f"z{z}gw"
        links = []  # declared inside the zone, before its routes (as SimGrid wants)
        body = [f'<host id="{h}" speed="1Gf"/>' for h in hosts] + [f'<router id="{r}"/>' for r in switches + [gw]]
        routes = []
        for sw in switches:  # switch -> gateway uplink, shared by the hosts below
            links.append(f'<link id="{sw}_up" bandwidth="{rng.choice([1, 10])}GBps" latency="{rng.randint(1, 5)}ms"/>')
            routes.append((sw, gw, [f"{sw}_up"]))
        for h in hosts:
            links.append(f'<link id="{h}_nic" bandwidth="1GBps" latency="{rng.randint(1, 3)}ms"/>')
            sw = rng.choice(switches + [gw])
            if sw == gw:
                routes.append((h, gw, [f"{h}_nic"]))
            else:
                routes.append((h, gw, [f"{h}_nic", f"{sw}_up"]))
                routes.append((h, sw, [f"{h}_nic"]))
        if routing == "Full":  # Full knows only what is declared: declare every host pair via gw
            full = []
            for a in hosts:
                for b in hosts:
                    if a < b:
                        ra = next(r for r in routes if r[0] == a and r[1] == gw)[2]
                        rb = next(r for r in routes if r[0] == b and r[1] == gw)[2]
                        full.append((a, b, ra + rb[::-1]))
            routes = [r for r in routes if r[1] == gw and r[0] in hosts] + full
        body += links
        body += [
            f'<route src="{a}" dst="{b}">' + "".join(f'<link_ctn id="{l}"/>' for l in ls) + "</route>"
            for a, b, ls in routes
        ]
        zones.append(f'<zone id="zone{z}" routing="{routing}">' + "".join(body) + "</zone>")
    # a chain of zone routes (0-1, 1-2, ...) plus a random shortcut: Floyd chains the rest
    pairs = [(z, z + 1) for z in range(n_zones - 1)] + [(0, n_zones - 1)] * rng.randint(0, 1)
    links = []
    for a, b in pairs:
        links.append(f'<link id="wan{a}_{b}" bandwidth="1GBps" latency="{rng.randint(5, 20)}ms"/>')
        zone_routes.append(
            f'<zoneRoute src="zone{a}" dst="zone{b}" gw_src="z{a}gw" gw_dst="z{b}gw">'
            f'<link_ctn id="wan{a}_{b}"/></zoneRoute>'
        )
    return (
        "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
        '<platform version="4.1"><zone id="world" routing="Floyd">'
        + "".join(zones)
        + "".join(links)
        + "".join(zone_routes)
        + "</zone></platform>\n"
    )


@needs_simgrid
@pytest.mark.parametrize("seed", range(6))
def test_generated_nested_platforms_match_simgrid(tmp_path, seed):
    path = tmp_path / f"nested{seed}.xml"
    path.write_text(random_nested_platform(seed))
    t = load_simgrid(path)
    compared, unrouted, diffs = compare_with_simgrid(path, t, tmp_path, "all")
    n = len(t.hosts)
    assert (compared, unrouted) == (n * (n - 1), 0)
    assert diffs == []


def test_pairs_the_file_gives_no_route_are_routed_by_topocast_and_said(tmp_path):
    body = (
        '<zone id="z" routing="Full"><host id="a" speed="1f"/><host id="b" speed="1f"/><host id="c" speed="1f"/>'
        '<router id="r"/><link id="la" bandwidth="1GBps" latency="0s"/><link id="lb" bandwidth="1GBps" latency="0s"/>'
        '<link id="lc" bandwidth="1GBps" latency="0s"/>'
        '<route src="a" dst="r"><link_ctn id="la"/></route><route src="b" dst="r"><link_ctn id="lb"/></route>'
        '<route src="c" dst="r"><link_ctn id="lc"/></route>'
        '<route src="a" dst="b"><link_ctn id="la"/><link_ctn id="lb"/></route></zone>'
    )
    t = load_simgrid(_platform(body, tmp_path))
    assert topocast_links(t, "a", "c") == ["la", "lc"]  # not declared: the fewest-hop path
    assert any(n.startswith("4 host pairs the file gives no route") for n in t.notes)
