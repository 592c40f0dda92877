"""The fluid, flow-level simulator (docs/design.md, "Simulator")."""

from .engine import simulate

__all__ = ["simulate"]
