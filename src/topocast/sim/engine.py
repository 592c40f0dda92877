"""Fluid flow-level simulator (being written: see the foundation issue)."""


def simulate(plan, topology, *, chunk_size=None):
    raise NotImplementedError("the simulator lands in the next commit")
