"""Property tests: saving then loading gives the same topology, for any values."""

import dataclasses
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from topocast.topology.generators import random_tree
from topocast.topology.io import dumps, loads
from topocast.units import format_bandwidth_exact, format_time_exact, parse_bandwidth, parse_time

positive = st.floats(min_value=1e-3, max_value=1e15, allow_nan=False, allow_infinity=False)


@settings(max_examples=200, deadline=None)
@given(positive)
def test_bandwidth_text_is_exact(bw):
    v = format_bandwidth_exact(bw)
    assert (parse_bandwidth(v) if isinstance(v, str) else float(v)) == bw


@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=0, max_value=1e5, allow_nan=False, allow_infinity=False))
def test_time_text_is_exact(t):
    v = format_time_exact(t)
    assert (parse_time(v) if isinstance(v, str) else float(v)) == t


@settings(max_examples=25, deadline=None)
@given(
    n_hosts=st.integers(1, 12),
    n_switches=st.integers(0, 5),
    asym=st.booleans(),
    leaves=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
    lat=st.floats(min_value=0, max_value=0.1, allow_nan=False),
    gamma=st.floats(min_value=1e-12, max_value=1e-3, allow_nan=False),
    fmt=st.sampled_from(["yaml", "json"]),
)
def test_round_trip_random_trees(n_hosts, n_switches, asym, leaves, seed, lat, gamma, fmt):
    t = random_tree(n_hosts, n_switches, asymmetric=asym, hosts_as_leaves=leaves, latency=lat, seed=seed)
    t = t.replace(
        injection_time={h: lat * (i + 1) for i, h in enumerate(t.hosts)},
        reduction_cost={t.hosts[0]: gamma},
    )
    t2 = loads(dumps(t, fmt), fmt=fmt)
    assert t2.hosts == t.hosts and t2.switches == t.switches
    assert t2.physical_links == t.physical_links
    assert dict(t2.injection_time) == dict(t.injection_time)
    assert dict(t2.reduction_cost) == dict(t.reduction_cost)
    assert all(math.isfinite(pl.bandwidth) for pl in t2.physical_links)


@settings(max_examples=15, deadline=None)
@given(
    n_hosts=st.integers(2, 10),
    n_switches=st.integers(0, 4),
    asym=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
    lat=st.floats(min_value=0, max_value=0.1, allow_nan=False),
    routing=st.sampled_from(["Full", "Floyd"]),
)
def test_simgrid_round_trip_random_trees(tmp_path_factory, n_hosts, n_switches, asym, seed, lat, routing):
    from topocast.topology.simgrid import load_simgrid, save_simgrid

    t = random_tree(n_hosts, n_switches, asymmetric=asym, latency=lat, seed=seed)
    t = t.replace(links=[dataclasses.replace(pl, bandwidth=pl.bandwidth / 3) for pl in t.physical_links])
    p = tmp_path_factory.mktemp("sg") / "t.xml"
    save_simgrid(t, p, routing=routing)
    t2 = load_simgrid(p)
    # switches that no link touches are dropped on import (a SimGrid router with no route)
    assert t2.hosts == t.hosts
    a = {frozenset((pl.a, pl.b)): pl for pl in t.physical_links}
    b = {frozenset((pl.a, pl.b)): pl for pl in t2.physical_links}
    assert set(a) == set(b)
    for k, x in a.items():
        y = b[k]
        assert {(x.a, x.b): x.bandwidth, (x.b, x.a): x.reverse_bandwidth} == {
            (y.a, y.b): y.bandwidth,
            (y.b, y.a): y.reverse_bandwidth,
        }
        assert x.latency == y.latency
