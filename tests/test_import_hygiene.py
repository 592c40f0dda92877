"""What a simulation imports: only what it uses (a process's fixed cost is mostly imports,
docs/performance.md, "The compiled event loop"). One subprocess for the library path and the
``topocast simulate`` command, in that order, each checked against ``sys.modules``."""

from __future__ import annotations

import json
import subprocess
import sys

_CODE = """
import contextlib, io, json, sys
from topocast import Broadcast, simulate
from topocast.planners import get_planner
from topocast.topology import load_topology

def loaded():
    return sorted(sys.modules)

topo = load_topology("builtin:two-clusters")
plan = get_planner("broadcast", "scatter_allgather_rdb")(topo, Broadcast(topo.hosts[0], 1 << 20))
simulate(plan, topo)
library = loaded()
from topocast.cli.main import main
with contextlib.redirect_stdout(io.StringIO()):
    status = main(["simulate", "builtin:two-clusters", "-a", "binomial", "--size", "1MiB", "--json"])
print(json.dumps({"library": library, "command": loaded(), "status": status}))
"""

# never needed to plan and simulate one broadcast (plotting, graphs, tables, YAML for a
# built-in topology, the runtime and the testbed)
_NEVER = ("matplotlib", "networkx", "rich", "yaml", "topocast.runtime", "topocast.testbed", "topocast.probe")


def _tops(modules: list[str], names: tuple[str, ...]) -> list[str]:
    return sorted(n for n in names if any(m == n or m.startswith(n + ".") for m in modules))


def test_simulating_one_small_plan_imports_only_what_it_uses():
    done = subprocess.run([sys.executable, "-c", _CODE], capture_output=True, text=True, timeout=120, check=True)
    got = json.loads(done.stdout.strip().splitlines()[-1])
    library, command = got["library"], got["command"]
    assert got["status"] == 0
    # the library path: no scipy (no bound is computed) and no numba (a plan this small
    # stays on the engine's loop)
    assert _tops(library, (*_NEVER, "scipy", "numba")) == []
    planners = [m for m in library if m.startswith("topocast.planners.") and not m.rsplit(".", 1)[1].startswith("_")]
    assert "topocast.planners.broadcast.scatter_allgather" in planners
    # a planner named in a module of another name does not import every planner
    assert not [
        m for m in planners if m.startswith(("topocast.planners.allreduce.", "topocast.planners.redistribute."))
    ]
    assert "topocast.planners.broadcast.stable" not in planners
    # the command: the route bound's linear programme needs scipy; a JSON answer no table
    assert _tops(command, (*_NEVER, "numba")) == []
    assert "topocast.planners.broadcast.binomial" in command
    assert "topocast.planners.broadcast.optimal" not in command
