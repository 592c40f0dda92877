"""The multi-site SimGrid family: Floyd zones whose routes go up to the site gateway and back."""

from __future__ import annotations

import re

import pytest
from test_simgrid_routes import compare_with_simgrid, needs_simgrid, topocast_links

from topocast.cli.main import main as cli_main
from topocast.errors import InputError
from topocast.topology import load_topology
from topocast.topology.multisite import MULTI_SITE_HOSTS, multi_site_platform, multi_site_xml


def test_same_seed_same_platform_and_default_sizes_in_the_family():
    assert multi_site_xml(30, seed=4) == multi_site_xml(30, seed=4)
    assert multi_site_xml(30, seed=4) != multi_site_xml(30, seed=5)
    for seed in range(3):
        n = multi_site_xml(seed=seed).count("<host ")
        assert MULTI_SITE_HOSTS[0] <= n <= MULTI_SITE_HOSTS[1]


@pytest.mark.parametrize("seed", range(4))
def test_shape_shared_links_latencies_and_slow_hosts(seed):
    t = multi_site_platform(60, seed=seed)
    assert len(t.hosts) == 60 and t.is_tree()
    assert {pl.sharing for pl in t.physical_links} == {"shared"}
    assert all(1e-3 <= pl.latency <= 5e-3 for pl in t.physical_links)
    nic = {h: t.links[t.route(h, t.neighbors(h)[0])[0]].bandwidth for h in t.hosts}
    fast = max(nic.values())
    slow = [h for h, bw in nic.items() if bw < fast]
    assert all(nic[h] == pytest.approx(fast / 10) for h in slow)
    assert 1 <= len(slow) <= max(1, round(0.03 * 60)) and t.hosts[0] not in slow


def test_hosts_behind_one_switch_go_up_to_the_gateway_and_back():
    t = multi_site_platform(40, seed=2)
    doubled = 0
    for (a, b), path in t.routes.items():
        # a, switch, gateway, the same switch, b: the uplink is crossed both ways
        assert len(path) == 5 and path[1] == path[3] and path[2].startswith("gw-")
        assert t.route_nodes(a, b) == path
        doubled += 1
    assert doubled > 0
    a, b = next(iter(t.routes))
    names = topocast_links(t, a, b)
    assert names[1] == names[2] and names[1].startswith("up-")


def test_bad_sizes_are_named():
    with pytest.raises(InputError, match="at least 2 hosts"):
        multi_site_xml(1)
    with pytest.raises(InputError, match="sites"):
        multi_site_xml(10, n_sites=6)


def test_cli_writes_the_platform_file_or_the_topology(tmp_path, capsys):
    xml, yaml = tmp_path / "ms.xml", tmp_path / "ms.yaml"
    assert cli_main(["topology", "generate", "multi-site", "--hosts", "24", "--seed", "3", "-o", str(xml)]) == 0
    assert cli_main(["topology", "generate", "multi-site", "--hosts", "24", "--seed", "3", "-o", str(yaml)]) == 0
    assert re.search(r'routing="Floyd"', xml.read_text())
    from_xml, from_yaml = load_topology(xml), load_topology(yaml)
    assert from_xml.physical_links == from_yaml.physical_links
    assert dict(from_xml.routes) == dict(from_yaml.routes)


@needs_simgrid
@pytest.mark.parametrize("seed", range(2))
def test_small_platforms_match_simgrid_routes(tmp_path, seed):
    path = tmp_path / "ms.xml"
    path.write_text(multi_site_xml(30, seed=seed))
    t = load_topology(path)
    compared, unrouted, diffs = compare_with_simgrid(path, t, tmp_path, "all")
    assert (compared, unrouted, diffs) == (30 * 29, 0, [])
