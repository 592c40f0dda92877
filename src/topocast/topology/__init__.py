"""Network topologies: the model, file formats, generators and built-in examples.

``load_topology(spec)`` reads any supported source:

* ``builtin:NAME`` — a built-in example (``topocast topology show builtin:list`` lists them);
* ``*.yaml``, ``*.yml``, ``*.json`` — the topocast topology file (docs/design.md);
* ``*.xml`` — a SimGrid platform;
* ``*.conf`` — an OptorSim grid description;
* ``*.graphml`` — an Internet Topology Zoo graph.
"""

from __future__ import annotations

import os

from .model import SHARING_POLICIES, Link, PhysicalLink, Topology

__all__ = ["Topology", "PhysicalLink", "Link", "SHARING_POLICIES", "load_topology"]


def load_topology(spec: str | os.PathLike[str] | Topology, *, default_bandwidth: float | None = None) -> Topology:
    """Load a topology from a built-in name or a file (format chosen by extension).

    ``default_bandwidth`` (bytes/s) fills links without a speed in formats that may lack one
    (Topology Zoo); without it such files fail with an error naming the edges.
    """
    from pathlib import Path

    from ..errors import TopologyError

    if isinstance(spec, Topology):
        return spec
    spec = str(spec)
    if spec.startswith("builtin:"):
        from .builtin import builtin_topology

        return builtin_topology(spec[len("builtin:") :])
    suffix = Path(spec).suffix.lower()
    if suffix in (".yaml", ".yml", ".json"):
        from .io import load_file

        return load_file(spec)
    if suffix == ".xml":
        from .simgrid import load_simgrid

        return load_simgrid(spec)
    if suffix == ".conf":
        from .optorsim import load_optorsim

        return load_optorsim(spec)
    if suffix == ".graphml":
        from .graphml import load_graphml

        return load_graphml(spec, default_bandwidth=default_bandwidth)
    raise TopologyError(
        "unknown topology format (expected builtin:NAME, .yaml/.yml/.json, .xml (SimGrid), .conf (OptorSim) or .graphml)",
        source=spec,
    )
