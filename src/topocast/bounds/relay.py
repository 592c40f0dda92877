"""The relay ceiling: an upper bound on a broadcast's aggregate bandwidth that knows that
every byte a destination receives was sent by some host, and that a host on a half-duplex
(``shared``) link sends and receives through one capacity.

Σ max-flow (:mod:`topocast.bounds.maxflow`) bounds each destination alone. It cannot see that relays
pay twice on a shared access link: a host with capacity ``C`` that receives at ``r`` can send
at most ``C - r``. With every host on one shared link this gives the cut of docs/algorithms.md
section 8 (ours, [I]): ``Σ_i r_i <= (C_s + Σ_i C_i) / 2``. The linear programme below is the
general form (our formulation):

    maximise   Σ_{i in D} r_i
    subject to r_i <= maxflow(S -> i)                      every destination i
               r_h + out_h <= C_h                           host h on one shared link (r_h = 0 off D)
               out_h <= c(h -> u)                           host h on one duplex link to u
               Σ_{i in D} r_i <= Σ_h out_h                  every received byte was sent by a host
               r, out >= 0

``out_h`` counts every copy a host sends (one per child). Switches only forward, so they
appear only through the max-flows; links deeper in the network enter only through the
max-flows too, so the programme is a relaxation: no plan beats it. A host with several links,
or on a fatpipe, sends without a limit here. Solved with HiGHS (``scipy.optimize.linprog``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ..topology import Topology

__all__ = ["relay_ceiling"]


def _access(topology, host: str):
    """(sharing, capacity out, capacity shared) of a host's only link, or None when it has several."""
    out = topology.out_links(host)
    if len(out) != 1:
        return None
    lid = out[0]
    link = topology.links[lid]
    if link.sharing == "shared":
        return "shared", None, float(topology.resource_capacity[topology.link_resource[lid]])
    if link.sharing == "duplex":
        return "duplex", link.bandwidth, None
    return None


def relay_ceiling(topology: Topology, source: str, per_host_maxflow: Mapping[str, float]) -> float:
    """The relay ceiling (bytes/s) for a broadcast from ``source`` to the hosts of
    ``per_host_maxflow`` (each host's max-flow bound, as :func:`topocast.bounds.broadcast_bounds`
    gives it). Never above Σ max-flow."""
    from ..lp import solve

    dests = list(per_host_maxflow)
    senders = list(topology.hosts)
    n_r, n_o = len(dests), len(senders)
    col_r = {h: k for k, h in enumerate(dests)}
    col_o = {h: n_r + k for k, h in enumerate(senders)}
    rows, rhs = [], []
    for h in senders:
        access = _access(topology, h)
        if access is None:
            continue
        kind, out_cap, shared_cap = access
        row = np.zeros(n_r + n_o)
        row[col_o[h]] = 1.0
        if kind == "shared":
            if h in col_r:
                row[col_r[h]] = 1.0
            rows.append(row)
            rhs.append(shared_cap)
        else:
            rows.append(row)
            rhs.append(out_cap)
    conservation = np.zeros(n_r + n_o)
    conservation[:n_r] = 1.0
    conservation[n_r:] = -1.0
    rows.append(conservation)
    rhs.append(0.0)
    total = float(sum(per_host_maxflow.values()))
    if not math.isfinite(total):
        return math.inf
    bounds = [(0.0, float(per_host_maxflow[h])) for h in dests] + [(0.0, None)] * n_o
    # r = out = 0 is feasible and every r_d is bounded: an optimum always exists
    res = solve(-np.r_[np.ones(n_r), np.zeros(n_o)], np.array(rows), np.array(rhs), bounds, problem="relay ceiling")
    return min(total, float(-res.fun))
