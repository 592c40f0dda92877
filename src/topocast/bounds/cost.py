"""Closed-form costs of the MPI collectives (Hockney) and of the GridMPI grid collectives.

Hockney model (MPICH source comments, docs/algorithms.md 5.1-5.4): sending ``n`` bytes costs
``alpha + n beta``, reducing them ``n gamma``; ``p`` processes. On a switch whose host links
have bandwidth ``B`` and latency ``l`` the simulator gives ``alpha = 2 l`` (two links) and
``beta = 1/B`` (:func:`hockney_params`).

GridMPI model (Matsuda et al., Cluster 2006, docs/algorithms.md 5.5-5.6): ``M`` message size,
``B`` NIC bandwidth, ``L`` inter-cluster latency, ``n`` inter-cluster connections; intra-cluster
latency ignored. ``*_paper`` functions are the slide formulas; ``*_model`` functions are the
same algorithms as topocast plans them (``p`` hosts per cluster, intra-cluster ``alpha``, the
``(p-1)/p`` factors of scatter and allgather), which the simulator reproduces exactly on a
two-cluster grid without contention. All times in seconds, sizes in bytes, rates in bytes/s.
"""

from __future__ import annotations

import math

__all__ = [
    "lg",
    "hockney_params",
    "binomial_bcast",
    "binomial_scatter",
    "scatter_rdb_bcast",
    "scatter_ring_bcast",
    "ring_allreduce",
    "recursive_doubling_allreduce",
    "rabenseifner_allreduce",
    "far_first_bcast_paper",
    "gridmpi_bcast_paper",
    "two_tier_allreduce_paper",
    "gridmpi_allreduce_paper",
    "far_first_bcast_model",
    "gridmpi_bcast_model",
    "two_tier_allreduce_model",
    "gridmpi_allreduce_model",
    "bcast_throughput",
    "allreduce_throughput",
]


def lg(p: int) -> int:
    """``ceil(log2 p)`` (number of binomial rounds)."""
    return math.ceil(math.log2(p)) if p > 1 else 0


def hockney_params(link_bandwidth: float, link_latency: float) -> tuple[float, float]:
    """(alpha, beta) of a host-switch-host route with identical links."""
    return 2.0 * link_latency, 1.0 / link_bandwidth


# --------------------------------------------------------------------------- MPICH (5.2-5.4)
def binomial_bcast(n: float, p: int, alpha: float, beta: float) -> float:
    """``ceil(lg p) (alpha + n beta)``."""
    return lg(p) * (alpha + n * beta)


def binomial_scatter(n: float, p: int, alpha: float, beta: float) -> float:
    """``ceil(lg p) alpha + n (p-1)/p beta``."""
    return lg(p) * alpha + n * (p - 1) / p * beta


def scatter_rdb_bcast(n: float, p: int, alpha: float, beta: float) -> float:
    """Scatter + recursive-doubling allgather, ``p`` a power of two:
    ``2 lg p alpha + 2 n (p-1)/p beta``."""
    return 2 * lg(p) * alpha + 2 * n * (p - 1) / p * beta


def scatter_ring_bcast(n: float, p: int, alpha: float, beta: float) -> float:
    """Scatter + ring allgather: ``(lg p + p - 1) alpha + 2 n (p-1)/p beta``."""
    return (lg(p) + p - 1) * alpha + 2 * n * (p - 1) / p * beta


def ring_allreduce(n: float, p: int, alpha: float, beta: float, gamma: float = 0.0) -> float:
    """``2 (p-1) alpha + 2 n (p-1)/p beta + n (p-1)/p gamma``."""
    return 2 * (p - 1) * alpha + 2 * n * (p - 1) / p * beta + n * (p - 1) / p * gamma


def recursive_doubling_allreduce(n: float, p: int, alpha: float, beta: float, gamma: float = 0.0) -> float:
    """``lg p (alpha + n beta + n gamma)`` for a power of two; otherwise MPICH's extra
    pre-step (``alpha + n beta + n gamma``) and post-step (``alpha + n beta``) around
    ``lg pof2`` exchanges."""
    pof2 = 1 << (p.bit_length() - 1)
    k = lg(pof2)
    t = k * (alpha + n * beta + n * gamma)
    if pof2 != p:
        t += 2 * (alpha + n * beta) + n * gamma
    return t


def rabenseifner_allreduce(n: float, p: int, alpha: float, beta: float, gamma: float = 0.0) -> float:
    """``2 lg p alpha + 2 n (p-1)/p beta + n (p-1)/p gamma`` for a power of two; otherwise
    (with ``pof2`` the largest power of two ``<= p``) ``(2 lg pof2 + 2) alpha +
    (2 (pof2-1)/pof2 + 2) n beta + n (1 + (pof2-1)/pof2) gamma`` (MPICH's comment writes
    ``p`` for ``pof2``)."""
    pof2 = 1 << (p.bit_length() - 1)
    k = lg(pof2)
    f = (pof2 - 1) / pof2
    t = 2 * k * alpha + 2 * n * f * beta + n * f * gamma
    if pof2 != p:
        t += 2 * (alpha + n * beta) + n * gamma
    return t


# --------------------------------------------------------------------------- GridMPI (5.5-5.6)
def far_first_bcast_paper(M: float, B: float, L: float) -> float:
    """``L + M/B + (M/B + M/B)``."""
    return L + M / B + (M / B + M / B)


def gridmpi_bcast_paper(M: float, B: float, L: float, n: int) -> float:
    """Modified van de Geijn: ``L + M/(nB) + M/B + M/B``."""
    return L + M / (n * B) + M / B + M / B


def two_tier_allreduce_paper(M: float, B: float, L: float) -> float:
    """``L + M/B + (M/B + M/B) + (M/B + M/B)``."""
    return L + M / B + (M / B + M / B) + (M / B + M / B)


def gridmpi_allreduce_paper(M: float, B: float, L: float, n: int) -> float:
    """Modified Rabenseifner: ``L + M/(nB) + M/B + M/B``."""
    return L + M / (n * B) + M / B + M / B


def _ring(M, p, alpha, B):
    return (p - 1) * (alpha + M / p / B)


def far_first_bcast_model(M: float, B: float, L: float, p: int, alpha: float = 0.0) -> float:
    """topocast's far_first on two clusters of ``p``: one wide-area send of ``M`` (``L`` =
    route latency), then scatter + ring allgather in the far cluster."""
    return L + M / B + binomial_scatter(M, p, alpha, 1 / B) + _ring(M, p, alpha, B)


def gridmpi_bcast_model(M: float, B: float, L: float, p: int, alpha: float = 0.0) -> float:
    """topocast's gridmpi broadcast with ``n = p`` connections that do not congest the
    wide-area link: scatter in A, ``p`` parallel sends of ``M/p``, ring allgather in B."""
    return binomial_scatter(M, p, alpha, 1 / B) + L + M / p / B + _ring(M, p, alpha, B)


def two_tier_allreduce_model(M: float, B: float, L: float, p: int, alpha: float = 0.0) -> float:
    """topocast's two_tier: ring reduce-scatter + gather to the root, one exchange of ``M``
    between the roots, scatter + ring allgather (no reduction cost)."""
    reduce = _ring(M, p, alpha, B) + (p - 1) * (alpha + M / p / B)
    return reduce + L + M / B + binomial_scatter(M, p, alpha, 1 / B) + _ring(M, p, alpha, B)


def gridmpi_allreduce_model(M: float, B: float, L: float, p: int, alpha: float = 0.0) -> float:
    """topocast's gridmpi allreduce with ``n = p``: ring reduce-scatter, ``p`` parallel
    exchanges of ``M/p``, ring allgather (no reduction cost)."""
    return _ring(M, p, alpha, B) + L + M / p / B + _ring(M, p, alpha, B)


# --------------------------------------------------------------------------- GridMPI's metric
def bcast_throughput(M: float, hosts: int, time: float) -> float:
    """GridMPI's normalised broadcast throughput ``M x #nodes / time`` (bytes/s)."""
    return M * hosts / time


def allreduce_throughput(M: float, hosts: int, time: float) -> float:
    """GridMPI's normalised allreduce throughput ``M x #nodes^2 / time`` (bytes/s)."""
    return M * hosts * hosts / time
