"""`topocast probe --launcher testbed` on an emulated network whose truth is known (root)."""

from __future__ import annotations

import pytest

from topocast.bounds import maxflow_from
from topocast.probe.equivalent import host_groups
from topocast.topology import load_topology


@pytest.mark.slow
def test_probe_recovers_hetero_2switch(testbed_factory, tmp_path, capsys):
    from topocast.cli.main import main

    st = testbed_factory(load_topology("builtin:hetero-2switch"))
    out = tmp_path / "probed.yaml"
    assert main(["probe", "--launcher", "testbed", "--testbed", st.name, "-o", str(out)]) == 0
    assert "measurements in" in capsys.readouterr().out
    truth, inferred = load_topology("builtin:hetero-2switch"), load_topology(str(out))
    assert host_groups(inferred) == host_groups(truth)
    for s in ("s", "b1"):
        a, b = maxflow_from(truth, s), maxflow_from(inferred, s)
        for h in truth.hosts:
            if h != s:
                assert b[h] == pytest.approx(a[h], rel=0.10), (s, h)
