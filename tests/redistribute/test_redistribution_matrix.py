"""Redistribution requests: matrix files, generators, platform (k from the topology)."""

import numpy as np
import pytest

from topocast.errors import InputError
from topocast.plan import Redistribution
from topocast.redistribute import (
    fig2_pattern,
    load_matrix,
    random_pattern,
    resolve_platform,
    two_cluster_topology,
)
from topocast.redistribute.matrix import block_offsets, holdings, save_matrix

MB = 10**6


def test_csv_with_names(tmp_path):
    p = tmp_path / "m.csv"
    p.write_text(",x,y\np,1MB,0\nq,5,7\n")
    r = load_matrix(p)
    assert r.senders == ("p", "q") and r.receivers == ("x", "y")
    assert r.matrix.tolist() == [[MB, 0], [5, 7]]


def test_csv_plain_and_json_roundtrip(tmp_path):
    p = tmp_path / "m.csv"
    p.write_text("1,2,3\n4,5,6\n")
    r = load_matrix(p, k=3, beta=0.5)
    assert r.senders == ("a0", "a1") and r.receivers == ("b0", "b1", "b2")
    assert r.k == 3 and r.beta == 0.5
    q = tmp_path / "m.json"
    save_matrix(r, q)
    r2 = load_matrix(q)
    assert r2.matrix.tolist() == r.matrix.tolist() and r2.k == 3 and r2.beta == 0.5


@pytest.mark.parametrize(
    "text, suffix, field",
    [
        ("1,2\n3\n", ".csv", "matrix"),
        ("1,-2\n3,4\n", ".csv", "row 1, column 2"),
        ("1,abc\n", ".csv", "row 1, column 2"),
        ('{"matrix": [[1, 2], [3]]}', ".json", "matrix"),
        ('{"rows": []}', ".json", "matrix"),
        ("{not json", ".json", None),
        ("1e20,5\n1,1\n", ".csv", "row 1, column 1"),
        ('{"matrix": [[9000000000000000000, 0], [0, 9000000000000000000]]}', ".json", "2^63"),
        ('{"matrix": [[1, 0], [0, 1]], "beta": "abc"}', ".json", "beta"),
        ('{"matrix": [[1, 0], [0, 1]], "k": "x"}', ".json", "k"),
        ('{"matrix": [[1, 0], [0, 1]], "k": true}', ".json", "k"),
        ('{"matrix": [[1, 0], [0, 1]], "senders": "ab"}', ".json", "senders"),
    ],
)
def test_bad_files_name_the_field(tmp_path, text, suffix, field):
    p = tmp_path / f"bad{suffix}"
    p.write_text(text)
    with pytest.raises(InputError) as ei:
        load_matrix(p)
    assert str(p) in str(ei.value)
    if field:
        assert field in str(ei.value)


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="cannot read"):
        load_matrix(tmp_path / "nope.csv")


def test_request_checks():
    with pytest.raises(InputError, match="shape"):
        Redistribution(np.ones((2, 2)), ("a",), ("b", "c"))
    with pytest.raises(InputError, match="both sender and receiver"):
        Redistribution(np.ones((1, 1)), ("a",), ("a",))
    with pytest.raises(InputError, match="k must be"):
        Redistribution(np.ones((1, 1)), ("a",), ("b",), k=0)
    with pytest.raises(InputError, match="beta"):
        Redistribution(np.ones((1, 1)), ("a",), ("b",), beta=-1)


def test_random_pattern_paper_sizes():
    r = random_pattern(10, 10, 30, 80 * MB, seed=3)
    m = r.matrix
    assert m.shape == (10, 10)
    assert 30 * 10 * MB <= m.sum() <= 30 * 80 * MB
    nz = m[m > 0]
    assert nz.min() >= 10 * MB
    assert np.array_equal(random_pattern(10, 10, 30, 80 * MB, seed=3).matrix, m)


def test_layout_and_holdings():
    r = Redistribution(np.array([[3, 0, 2], [0, 0, 0], [1, 4, 0]]), ("a", "b", "c"), ("x", "y", "z"))
    offs = block_offsets(r.matrix)
    assert offs.tolist() == [[0, 3, 3], [5, 5, 5], [5, 6, 10]]
    initial, wanted = holdings(r)
    assert initial == {"a": ((0, 5),), "c": ((5, 5),)}
    assert wanted == {"x": ((0, 3), (5, 1)), "y": ((6, 4),), "z": ((3, 2),)}


def test_k_from_topology():
    topo = two_cluster_topology(10, 10, nic=12.5e6, backbone=62.5e6)
    r = random_pattern(10, 10, 30, seed=1)
    plat = resolve_platform(r, topo)
    assert plat.k == 5 and plat.ratio == pytest.approx(5.0) and plat.nic == pytest.approx(12.5e6)
    assert len(plat.backbone) == 1
    assert resolve_platform(r.with_(k=3), topo).k == 3
    # a backbone at 2.5 NICs carries 2 transfers without contention
    topo2 = two_cluster_topology(10, 10, nic=12.5e6, backbone=31.25e6)
    plat2 = resolve_platform(r, topo2)
    assert plat2.k == 2 and plat2.ratio == pytest.approx(2.5)


def test_hosts_must_exist():
    topo = two_cluster_topology(2, 2)
    with pytest.raises(InputError, match="not a host"):
        resolve_platform(Redistribution(np.ones((1, 1)), ("zz",), ("b0",)), topo)


def test_fig2():
    r = fig2_pattern(unit=1)
    assert r.k == 2 and r.matrix.tolist() == [[1, 0, 0], [0, 1, 0], [0, 0, 2]]
