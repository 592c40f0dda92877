"""OptorSim .conf import."""

import pytest

from topocast.errors import TopologyError
from topocast.topology import load_topology
from topocast.topology.optorsim import load_optorsim

MBIT = 125_000


def test_gridpp(data_dir):
    t = load_optorsim(data_dir / "simgrid" / "gridpp_grid_2004.conf")
    # PROVENANCE: 36 nodes, 17 sites with a CE + CERN (SE only: a host here, it stores data)
    assert len(t.nodes) == 36 and len(t.hosts) == 18 and "CERN" in t.hosts
    assert dict(t.attrs["CERN"]) == {"index": 35, "ce": 0, "se": 1, "se_size": 10000000.0}
    assert "WC_Gla" in t.switches and "Glasgow" in t.hosts
    assert len(t.physical_links) == 39
    bws = sorted(pl.bandwidth / MBIT for pl in t.physical_links)
    assert bws[0] == 155 and bws[-1] == 10000
    # the two one-way entries (LMN->RHNBC, RHNBC->SWAN_BWEMAN) become links both ways
    pairs = {frozenset((pl.a, pl.b)) for pl in t.physical_links}
    assert frozenset(("LMN", "RHNBC")) in pairs and frozenset(("SWAN_BWEMAN", "RHNBC")) in pairs


def test_lcg(data_dir):
    t = load_optorsim(data_dir / "simgrid" / "lcg_sept2004_grid.conf")
    assert len(t.nodes) == 101 and len(t.hosts) == 65 and len(t.switches) == 36
    assert len(t.physical_links) == 127
    bws = sorted(pl.bandwidth / MBIT for pl in t.physical_links)
    assert bws[0] == 33 and bws[-1] == 10000
    assert t.is_symmetric()
    assert t.hosts[0] == "n0"


def test_asymmetric_and_dispatch(tmp_path):
    p = tmp_path / "g.conf"
    p.write_text("#0)A\n#1)B\n#2)R\n5 1 100 0 0 155\n3 0 0 0 622\n0 0 1000 622 0\n")
    t = load_topology(str(p))
    assert t.hosts == ("A", "B") and t.switches == ("R",)
    ar = next(pl for pl in t.physical_links if {pl.a, pl.b} == {"A", "R"})
    assert (ar.a, ar.b, ar.bandwidth, ar.bandwidth_ba) == ("A", "R", 155 * MBIT, 1000 * MBIT)


@pytest.mark.parametrize(
    "text, needle",
    [
        ("1 0 0 5\n1 0 5\n", "line 2 (node 1): expected 2 leading numbers"),
        ("1 0 0 x\n1 0 5 0\n", "bw_1: expected a number"),
        ("1 0 0 0\n1 0 0 0\n", "cannot be reached"),
        ("# nothing\n", "no matrix rows"),
    ],
)
def test_errors(tmp_path, text, needle):
    p = tmp_path / "bad.conf"
    p.write_text(text)
    with pytest.raises(TopologyError) as ei:
        load_optorsim(p)
    assert str(p) in str(ei.value) and needle in str(ei.value)
