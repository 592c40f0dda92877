"""``topocast probe``: infer a topology (hosts, switches, links with bandwidth per direction
and latency) from measurements between the hosts only (docs/experiments/probe.md)."""

from .session import Flow, ProbeError, ProbeSession

__all__ = ["ProbeSession", "ProbeError", "Flow"]
