"""The public API is curated: ``topocast.__all__`` is pinned here, every name resolves, and the
version is written once (``topocast.__version__``; pyproject reads it)."""

import subprocess
import sys
from pathlib import Path

import topocast

PUBLIC = {
    "Allreduce",
    "Bound",
    "Broadcast",
    "HostResult",
    "InputError",
    "PhysicalLink",
    "Plan",
    "PlanError",
    "Redistribution",
    "Result",
    "RunError",
    "RunOutcome",
    "SimulationError",
    "TopocastError",
    "Topology",
    "TopologyError",
    "TopologyWarning",
    "Transfer",
    "UnknownPlanner",
    "available_planners",
    "broadcast_bounds",
    "check_plan",
    "get_planner",
    "load_topology",
    "make_launcher",
    "perform",
    "register_planner",
    "simulate",
}


def test_all_is_the_curated_list_and_every_name_resolves():
    assert set(topocast.__all__) == PUBLIC
    assert len(topocast.__all__) == len(PUBLIC)
    for name in topocast.__all__:
        assert getattr(topocast, name) is not None


def test_import_stays_light():
    """The runtime (sockets, processes) loads on first use of perform, not on import."""
    code = "import sys, topocast; print('topocast.runtime' in sys.modules, 'matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]


def test_version_is_written_once():
    pyproject = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in pyproject and topocast.__version__ not in pyproject
    import contextlib
    import io

    from topocast.cli.main import build_parser

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            build_parser().parse_args(["--version"])
        except SystemExit:
            pass
    assert out.getvalue().strip() == f"topocast {topocast.__version__}"
