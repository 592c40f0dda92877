"""Max-min fair rates by progressive filling, with rate caps and pipelining couplings.

All active flows start at rate 0 and rise together. A flow stops rising ("freezes") when

* a shared resource it crosses is saturated,
* it reaches its own cap (pacing ``rate_cap`` or a fatpipe link's bandwidth), or
* it is *coupled* to an upstream flow that froze: a pipelined transfer that has caught up with
  the bytes its sender has received can go no faster than the transfer feeding it.

Frozen flows keep their rate; the others go on rising. This is the classic water-filling
definition of max-min fairness (Bertsekas & Gallager, Data Networks, 6.5.2), plus the
coupling constraint ``rate(child) <= rate(parent)``, which progressive filling honours by
freezing a coupled child together with its parent.
"""

from __future__ import annotations

import numpy as np

__all__ = ["progressive_filling"]

_REL = 1e-12


def progressive_filling(
    pair_flow: np.ndarray,
    pair_res: np.ndarray,
    capacity: np.ndarray,
    flow_cap: np.ndarray,
    children: list[list[int]] | None = None,
) -> np.ndarray:
    """Max-min fair rates (bytes/s) of ``len(flow_cap)`` flows.

    Parameters
    ----------
    pair_flow, pair_res : int arrays of equal length
        Incidence: flow ``pair_flow[k]`` crosses resource ``pair_res[k]``.
    capacity : float array
        Capacity of every resource (bytes/s).
    flow_cap : float array
        Per-flow upper bound (``inf`` when none).
    children : list of lists, optional
        ``children[f]``: flows coupled to ``f`` (they freeze when ``f`` freezes).
    """
    n = len(flow_cap)
    rate = np.zeros(n)
    if n == 0:
        return rate
    n_res = len(capacity)
    remaining = capacity.astype(float).copy()
    active = np.ones(n, dtype=bool)
    level = 0.0
    has_children = children is not None and any(children)
    while True:
        act_pairs = active[pair_flow]
        count = np.bincount(pair_res[act_pairs], minlength=n_res)
        used = count > 0
        inc = np.inf
        if used.any():
            inc = float(np.min(remaining[used] / count[used]))
        cap_gap = flow_cap[active] - level
        if cap_gap.size:
            inc = min(inc, float(cap_gap.min()))
        if not np.isfinite(inc):
            # Nothing bounds the remaining flows: a plan/topology error upstream.
            raise ValueError("a flow crosses no shared resource and has no rate cap")
        inc = max(inc, 0.0)
        level += inc
        remaining -= inc * count
        saturated = used & (remaining <= _REL * capacity)
        newly = active & (flow_cap <= level * (1 + _REL))
        if saturated.any():
            hit = np.zeros(n, dtype=bool)
            hit[pair_flow[act_pairs & saturated[pair_res]]] = True
            newly |= active & hit
        if not newly.any():
            # Numerical corner: freeze the flows closest to their limit to guarantee progress.
            newly = active & (flow_cap <= flow_cap[active].min() * (1 + 1e-9))
            if not newly.any():
                newly = active.copy()
        if has_children:
            stack = [int(f) for f in np.flatnonzero(newly)]
            while stack:
                f = stack.pop()
                for c in children[f]:
                    if active[c] and not newly[c]:
                        newly[c] = True
                        stack.append(c)
        rate[newly] = level
        active &= ~newly
        if not active.any():
            return rate
