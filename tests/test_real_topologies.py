"""`topocast compare` on every real topology in ../shared/data (SimGrid, OptorSim, Zoo).

The data sits beside the repository (../shared/data); a user's clone has none, so these tests
skip with a reason when it is absent.
"""

import json
from pathlib import Path

import pytest

from topocast.cli.main import main

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
pytestmark = pytest.mark.skipif(
    not DATA.is_dir(), reason=f"shared data not found at {DATA} (only in the project workspace)"
)

FILES = sorted(
    p
    for sub in ("simgrid", "topology-zoo")
    if (DATA / sub).is_dir()
    for p in (DATA / sub).iterdir()
    if p.suffix in (".xml", ".conf", ".graphml")
)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_compare_runs_on_every_real_file(path, capsys):
    """flat and depth_first plan, check and simulate; results never exceed the bound."""
    argv = ["compare", str(path), "--size", "100MB", "--algorithms", "flat,depth_first", "--json"]
    if path.suffix == ".graphml":
        argv += ["--default-bandwidth", "1Gbps"]
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    assert not data["errors"], data["errors"]
    bound = data["bound"]["per_host_rate"]
    for r in data["results"]:
        assert r["aggregate_bandwidth"] > 0
        for h, v in r["per_host"].items():
            assert v["rate"] <= bound[h] * (1 + 1e-9), (r["algorithm"], h)
