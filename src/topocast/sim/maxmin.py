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
    # Only the resources the flows cross matter; each round works on the pairs of the flows
    # still rising, so a round costs what is left, not the whole problem.
    used_res, pr = np.unique(pair_res, return_inverse=True)
    capacity = capacity[used_res].astype(float)
    n_res = len(capacity)
    remaining = capacity.copy()
    pf = pair_flow
    flow_cap = np.asarray(flow_cap, dtype=float)
    active = np.ones(n, dtype=bool)
    act = np.arange(n)  # indices of the active flows
    level = 0.0
    has_children = children is not None and any(children)
    while True:
        count = np.bincount(pr, minlength=n_res)
        used = count > 0
        inc = np.inf
        if used.any():
            inc = float(np.min(remaining[used] / count[used]))
        act_cap = flow_cap[act]
        inc = min(inc, float(act_cap.min()) - level)
        if not np.isfinite(inc):
            # Nothing bounds the remaining flows: a plan/topology error upstream.
            raise ValueError("a flow crosses no shared resource and has no rate cap")
        inc = max(inc, 0.0)
        level += inc
        remaining -= inc * count
        saturated = used & (remaining <= _REL * capacity)
        newly = np.zeros(n, dtype=bool)
        newly[act[act_cap <= level * (1 + _REL)]] = True
        if saturated.any():
            newly[pf[saturated[pr]]] = True
        if not newly.any():
            # Numerical corner: freeze the flows closest to their limit to guarantee progress.
            newly[act[act_cap <= act_cap.min() * (1 + 1e-9)]] = True
            if not newly.any():
                newly[act] = True
        if has_children:
            assert children is not None  # has_children
            stack = [int(f) for f in np.flatnonzero(newly)]
            while stack:
                f = stack.pop()
                for c in children[f]:
                    if active[c] and not newly[c]:
                        newly[c] = True
                        stack.append(c)
        rate[newly] = level
        active &= ~newly
        act = np.flatnonzero(active)
        if not len(act):
            return rate
        keep = active[pf]
        pf, pr = pf[keep], pr[keep]
