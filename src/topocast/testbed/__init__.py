"""The emulated network: namespaces, bridges, veth pairs and HTB shaping built from any
topology file (docs/design.md, "Emulated network"). Needs root."""

from .net import counters, down, exec_argv, netem_available, require_root, status, up
from .state import TestbedError, TestbedState, list_states, load_state

__all__ = [
    "up",
    "down",
    "status",
    "exec_argv",
    "counters",
    "netem_available",
    "require_root",
    "TestbedState",
    "TestbedError",
    "load_state",
    "list_states",
]
