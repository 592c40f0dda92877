"""The three collective requests: what a caller asks a planner for.

* :class:`Broadcast` — ``size`` bytes from one source to every destination;
* :class:`Allreduce` — every participant contributes ``size`` bytes and ends with their
  reduction;
* :class:`Redistribution` — the ``redistribute`` collective: ``matrix[i, j]`` bytes from
  sender ``i`` of one cluster to receiver ``j`` of another (Jeannot & Wagner, AINA 2006,
  section 2.1); matrix files, generators and the block layout are in
  :mod:`topocast.redistribute.matrix`.

Each request checks itself against a topology (``resolve``) or on construction, with a
:class:`~topocast.errors.PlanError` / :class:`~topocast.errors.InputError` naming the field.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, TypedDict, Unpack

import numpy as np

from ..errors import InputError, PlanError

if TYPE_CHECKING:
    from ..topology import Topology

__all__ = ["Allreduce", "Broadcast", "Redistribution", "Request"]


@dataclass(frozen=True)
class Broadcast:
    """A broadcast request: ``size`` bytes from ``source`` to ``destinations``.

    ``destinations=None`` means every other host of the topology.
    """

    source: str
    size: int
    destinations: tuple[str, ...] | None = None

    def resolve(self, topology: Topology) -> tuple[str, ...]:
        """Destinations, checked against the topology (source excluded, order kept)."""
        topology.require_host(self.source, element="source", error=PlanError)
        if self.size <= 0:
            raise PlanError(f"message size must be positive, got {self.size}", element="size")
        if self.destinations is None:
            return tuple(h for h in topology.hosts if h != self.source)
        seen = []
        for d in self.destinations:
            topology.require_host(d, element="destinations", error=PlanError)
            if d != self.source and d not in seen:
                seen.append(d)
        return tuple(seen)


@dataclass(frozen=True)
class Allreduce:
    """An allreduce request: every host of ``hosts`` (default: all hosts of the topology, in
    topology order = rank order) contributes ``size`` bytes."""

    size: int
    hosts: tuple[str, ...] | None = None

    def resolve(self, topology: Topology) -> list[str]:
        if self.size <= 0:
            raise PlanError(f"message size must be positive, got {self.size}", element="size")
        if self.hosts is None:
            return list(topology.hosts)
        members = []
        for h in self.hosts:
            topology.require_host(h, element="hosts", error=PlanError)
            if h not in members:
                members.append(h)
        order = {h: i for i, h in enumerate(topology.hosts)}
        return sorted(members, key=order.__getitem__)


class RedistributionFields(TypedDict, total=False):
    """The fields of a :class:`Redistribution`, for :meth:`Redistribution.with_`."""

    matrix: np.ndarray
    senders: tuple[str, ...]
    receivers: tuple[str, ...]
    k: int | None
    beta: float
    source: str | None


@dataclass(frozen=True, eq=False)
class Redistribution:
    """A redistribution request.

    Parameters
    ----------
    matrix : array (n1, n2) of int
        Bytes from sender ``i`` to receiver ``j`` (0 = no message).
    senders, receivers : sequence of str
        Host names of cluster A (rows) and cluster B (columns); disjoint.
    k : int or None
        Number of simultaneous transfers the backbone carries without contention. ``None``:
        backbone rate / NIC rate, read from the topology.
    beta : float
        Set-up time of one step of a schedule (seconds).
    """

    matrix: np.ndarray
    senders: tuple[str, ...]
    receivers: tuple[str, ...]
    k: int | None = None
    beta: float = 0.0
    source: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        m = np.asarray(self.matrix)
        where = self.source
        if m.ndim != 2:
            raise InputError(f"the matrix must be 2-dimensional, got shape {m.shape}", source=where, element="matrix")
        if m.size and (not np.all(np.isfinite(m.astype(float))) or (m < 0).any()):
            raise InputError("matrix entries must be finite byte counts >= 0", source=where, element="matrix")
        if m.size and np.any(m != np.round(m)):
            raise InputError("matrix entries must be whole numbers of bytes", source=where, element="matrix")
        if m.size and m.max() > np.iinfo(np.int64).max // m.size and sum(map(int, m.ravel())) > np.iinfo(np.int64).max:
            raise InputError("the blocks add up to more than 2^63 - 1 bytes", source=where, element="matrix")
        m = m.astype(np.int64)
        for what, names in (("senders", self.senders), ("receivers", self.receivers)):
            if isinstance(names, (str, bytes)) or not all(isinstance(n, (str, int)) for n in names):
                raise InputError(f"expected a list of host names, got {names!r}", source=where, element=what)
        senders = tuple(str(s) for s in self.senders)
        receivers = tuple(str(r) for r in self.receivers)
        if m.shape != (len(senders), len(receivers)):
            raise InputError(
                f"matrix shape {m.shape} does not match {len(senders)} senders x {len(receivers)} receivers",
                source=where,
                element="matrix",
            )
        for what, names in (("senders", senders), ("receivers", receivers)):
            if len(set(names)) != len(names):
                raise InputError("host names must be unique", source=where, element=what)
        both = set(senders) & set(receivers)
        if both:
            raise InputError(
                f"a host cannot be both sender and receiver (the two clusters are disjoint): {sorted(both)[0]!r}",
                source=where,
                element="receivers",
            )
        if self.k is not None and not _whole_at_least_one(self.k):
            raise InputError(f"k must be a whole number >= 1, got {self.k!r}", source=where, element="k")
        if not (_real(self.beta) and math.isfinite(self.beta) and self.beta >= 0):
            raise InputError(f"beta must be a time >= 0 seconds, got {self.beta!r}", source=where, element="beta")
        m.setflags(write=False)
        object.__setattr__(self, "matrix", m)
        object.__setattr__(self, "senders", senders)
        object.__setattr__(self, "receivers", receivers)
        object.__setattr__(self, "k", None if self.k is None else int(self.k))
        object.__setattr__(self, "beta", float(self.beta))

    @property
    def total(self) -> int:
        """Total bytes of all blocks."""
        return int(self.matrix.sum())

    def with_(self, **changes: Unpack[RedistributionFields]) -> Redistribution:
        """A copy with ``changes`` applied, checked as a new request is."""
        return replace(self, **changes)

    def to_json(self) -> dict[str, object]:
        return {
            "senders": list(self.senders),
            "receivers": list(self.receivers),
            "matrix": self.matrix.tolist(),
            "k": self.k,
            "beta": self.beta,
        }


Request = Broadcast | Allreduce | Redistribution
"""Any collective request (what ``planner.plan(topology, request)`` receives)."""


def _real(x: object) -> bool:
    """A number that is not a bool (JSON's ``true`` is not a count or a time)."""
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)


def _whole_at_least_one(k: object) -> bool:
    if not _real(k):
        return False
    x = float(k)  # type: ignore[arg-type]
    return math.isfinite(x) and x.is_integer() and x >= 1
