"""The fluid, flow-level simulator (DESIGN.md, "Simulator")."""

from .engine import simulate

__all__ = ["simulate"]
