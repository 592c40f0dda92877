"""Plans: what a planner returns, independent of timing.

A :class:`Plan` is a set of :class:`Transfer` s. Each moves an ordered sequence of byte ranges
of the message from one host to another. Timing comes only from

* ``after``: transfers (by index in ``Plan.transfers``) that must have completed first;
* data: a store-and-forward transfer starts once its sender holds every byte it sends
  (from the start, or from transfers that have completed); a *pipelined* transfer starts as
  soon as its upstream transfer (the one bringing these bytes to the sender) has delivered the
  first chunk, and never gets ahead of it;
* the per-sender sequence: a sender injects its ready transfers one at a time, in plan order
  (this matters only when the topology sets an injection time Δ);
* ``rate_cap``: the sender paces the transfer to at most this many bytes/s.

Collectives:

``broadcast``
    ``initial = {source: [(0, size)]}``; every destination wants ``[(0, size)]``.
``redistribute``
    the message space is the concatenation of blocks; a host initially holds the blocks it
    sends and wants the blocks addressed to it.
``allreduce``
    every host starts with its own contribution to every byte and wants the reduction of all
    contributions; transfers with ``reduce=True`` combine into the receiver.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from ..errors import PlanError

if TYPE_CHECKING:
    from .graph import PlanArrays

__all__ = [
    "Ranges",
    "Transfer",
    "Plan",
    "normalize_ranges",
    "ranges_length",
]

Ranges = tuple[tuple[int, int], ...]
"""An ordered sequence of ``(offset, length)`` byte ranges."""

COLLECTIVES = ("broadcast", "allreduce", "redistribute")
PLAN_FIELDS = ("collective", "size_bytes", "initial", "wanted", "transfers")  # what a plan file must have


def normalize_ranges(ranges: Iterable[Sequence[int]]) -> Ranges:
    """Return ``ranges`` as a tuple of ``(offset, length)`` int pairs, dropping empty ones."""
    out = []
    for r in ranges:
        off, length = int(r[0]), int(r[1])
        if length > 0:
            out.append((off, length))
    return tuple(out)


def ranges_length(ranges: Ranges) -> int:
    """Total number of bytes in ``ranges`` (duplicates counted)."""
    return sum(length for _, length in ranges)


class TransferOptions(TypedDict, total=False):
    """The optional fields of a :class:`Transfer`, for :meth:`Transfer.of`."""

    pipelined: bool
    upstream: int | None
    after: tuple[int, ...]
    rate_cap: float | None
    path: tuple[str, ...] | None
    reduce: bool
    label: str


@dataclass(frozen=True, slots=True)
class Transfer:
    """Move ``ranges`` (in this order) from host ``src`` to host ``dst``.

    Attributes
    ----------
    src, dst : str
        Sending and receiving host.
    ranges : tuple of (offset, length)
        Byte ranges of the message, sent in this order (bytes).
    pipelined : bool
        Forward bytes as they arrive at ``src`` instead of waiting for the whole sequence.
    upstream : int or None
        For a pipelined transfer out of a relay: index of the transfer that brings these bytes
        to ``src`` (its sequence must contain ours as a contiguous run). ``None``: the
        simulator picks the first transfer into ``src`` that does, or none if ``src`` holds the
        bytes from the start.
    after : tuple of int
        Indices of transfers that must complete before this one starts.
    rate_cap : float or None
        Pacing rate in bytes/s (the sender never sends faster).
    path : tuple of str or None
        Explicit node path for this transfer (default: the topology's route).
    reduce : bool
        Allreduce: the receiver combines the bytes with what it holds.
    label : str
        Free text for humans (for example ``"tree 2"``).
    """

    src: str
    dst: str
    ranges: Ranges
    pipelined: bool = False
    upstream: int | None = None
    after: tuple[int, ...] = ()
    rate_cap: float | None = None
    path: tuple[str, ...] | None = None
    reduce: bool = False
    label: str = ""

    @classmethod
    def of(cls, src: str, dst: str, offset: int, length: int, **kw: Unpack[TransferOptions]) -> Transfer:
        """A transfer of one contiguous range ``[offset, offset + length)``."""
        return cls(src, dst, ((int(offset), int(length)),), **kw)

    @property
    def nbytes(self) -> int:
        return ranges_length(self.ranges)

    def to_json(self) -> dict:
        d: dict[str, Any] = {"src": self.src, "dst": self.dst, "ranges": [list(r) for r in self.ranges]}
        if self.pipelined:
            d["pipelined"] = True
        if self.upstream is not None:
            d["upstream"] = self.upstream
        if self.after:
            d["after"] = list(self.after)
        if self.rate_cap is not None:
            d["rate_cap"] = self.rate_cap
        if self.path is not None:
            d["path"] = list(self.path)
        if self.reduce:
            d["reduce"] = True
        if self.label:
            d["label"] = self.label
        return d

    @classmethod
    def from_json(cls, d: Mapping, where: str = "transfer") -> Transfer:
        try:
            return cls(
                src=str(d["src"]),
                dst=str(d["dst"]),
                ranges=normalize_ranges(d["ranges"]),
                pipelined=bool(d.get("pipelined", False)),
                upstream=None if d.get("upstream") is None else int(d["upstream"]),
                after=tuple(int(x) for x in d.get("after", ())),
                rate_cap=None if d.get("rate_cap") is None else float(d["rate_cap"]),
                path=None if d.get("path") is None else tuple(str(x) for x in d["path"]),
                reduce=bool(d.get("reduce", False)),
                label=str(d.get("label", "")),
            )
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise PlanError(f"expected src, dst and ranges [[offset, length], ...] ({exc})", element=where) from None


@dataclass(frozen=True)
class Plan:
    """Transfers plus what each host holds at the start and must hold at the end.

    Attributes
    ----------
    collective : str
        ``"broadcast"``, ``"allreduce"`` or ``"redistribute"``.
    size : int
        Message size in bytes (broadcast, allreduce: per host; redistribute: total of blocks).
    transfers : tuple of Transfer
    initial : mapping host -> Ranges
        Bytes each host holds at time 0.
    wanted : mapping host -> Ranges
        Bytes each receiving host must hold at the end; its completion time is when it does.
    source : str or None
        Broadcast source.
    planner : str
        Registry name of the planner that made this plan.
    params : mapping
        Parameters the planner used (JSON-serialisable).
    notes : mapping
        What the planner wants to tell (for example ``auto``'s choice and runner-up).
    chunk_size : int
        Pipelining granularity in bytes: a pipelined hop trails its upstream by one chunk.
        0 means ideal fluid pipelining.
    """

    collective: str
    size: int
    transfers: tuple[Transfer, ...]
    initial: Mapping[str, Ranges]
    wanted: Mapping[str, Ranges]
    source: str | None = None
    planner: str = ""
    params: Mapping[str, Any] = field(default_factory=dict)
    notes: Mapping[str, Any] = field(default_factory=dict)
    chunk_size: int = 0

    def __post_init__(self):
        if self.collective not in COLLECTIVES:
            raise PlanError(f"collective must be one of {', '.join(COLLECTIVES)}, got {self.collective!r}")
        object.__setattr__(self, "transfers", tuple(self.transfers))
        object.__setattr__(self, "initial", MappingProxyType({h: normalize_ranges(r) for h, r in self.initial.items()}))
        object.__setattr__(self, "wanted", MappingProxyType({h: normalize_ranges(r) for h, r in self.wanted.items()}))
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))
        object.__setattr__(self, "notes", MappingProxyType(dict(self.notes)))

    # ---------------------------------------------------------------- constructors
    @classmethod
    def broadcast(
        cls,
        source: str,
        size: int,
        destinations: Iterable[str],
        transfers: Iterable[Transfer],
        *,
        planner: str = "",
        params: Mapping[str, Any] | None = None,
        notes: Mapping[str, Any] | None = None,
        chunk_size: int = 0,
    ) -> Plan:
        """A broadcast plan: ``source`` holds ``[0, size)``; every destination wants it."""
        whole = ((0, int(size)),)
        return cls(
            collective="broadcast",
            size=int(size),
            transfers=tuple(transfers),
            initial={source: whole},
            wanted={d: whole for d in destinations if d != source},
            source=source,
            planner=planner,
            params=params or {},
            notes=notes or {},
            chunk_size=chunk_size,
        )

    def with_chunk_size(self, chunk_size: int) -> Plan:
        """The same plan with another pipelining granularity (bytes)."""
        return replace(self, chunk_size=int(chunk_size))

    @property
    def destinations(self) -> tuple[str, ...]:
        return tuple(self.wanted)

    @cached_property
    def arrays(self) -> PlanArrays:
        """The transfers as arrays (``plan_graph.PlanArrays``), built on first use and kept:
        the checks and the simulator share them."""
        from .graph import PlanArrays

        return PlanArrays(self)

    @property
    def hosts(self) -> tuple[str, ...]:
        """Every host the plan involves (holders, receivers, senders), in first-seen order."""
        seen: dict[str, None] = {}
        for h in self.initial:
            seen[h] = None
        for h in self.wanted:
            seen[h] = None
        for t in self.transfers:
            seen[t.src] = None
            seen[t.dst] = None
        return tuple(seen)

    # ---------------------------------------------------------------- (de)serialisation
    def to_json(self) -> dict:
        return {
            "format": "topocast-plan/1",
            "collective": self.collective,
            "size_bytes": self.size,
            "source": self.source,
            "planner": self.planner,
            "params": dict(self.params),
            "notes": dict(self.notes),
            "chunk_size": self.chunk_size,
            "initial": {h: [list(r) for r in rs] for h, rs in self.initial.items()},
            "wanted": {h: [list(r) for r in rs] for h, rs in self.wanted.items()},
            "transfers": [t.to_json() for t in self.transfers],
        }

    @classmethod
    def from_json(cls, d: Mapping, source: str | None = None) -> Plan:
        try:
            if d.get("format") != "topocast-plan/1":
                raise PlanError(f"expected format 'topocast-plan/1', got {d.get('format')!r}", element="format")
            missing = [f for f in PLAN_FIELDS if f not in d]
            if missing:
                raise PlanError(
                    f"missing field{'s' if len(missing) > 1 else ''} {', '.join(missing)} (a plan has "
                    f"{', '.join(PLAN_FIELDS)}; topocast plan --output writes one)",
                    element=missing[0],
                )
            return cls(
                collective=d["collective"],
                size=int(d["size_bytes"]),
                transfers=tuple(Transfer.from_json(t, f"transfers[{i}]") for i, t in enumerate(d["transfers"])),
                initial={h: normalize_ranges(r) for h, r in d["initial"].items()},
                wanted={h: normalize_ranges(r) for h, r in d["wanted"].items()},
                source=d.get("source"),
                planner=str(d.get("planner", "")),
                params=d.get("params", {}),
                notes=d.get("notes", {}),
                chunk_size=int(d.get("chunk_size", 0)),
            )
        except PlanError as exc:
            raise exc.at(source) from None
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise PlanError(f"not a topocast plan ({type(exc).__name__}: {exc})", source=source) from None

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=1)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Plan:
        """Read a plan written by ``topocast plan --output``."""
        try:
            with open(path) as fh:
                data = json.load(fh)
        except OSError as exc:
            raise PlanError(f"cannot read plan file ({exc.strerror})", source=str(path)) from None
        except json.JSONDecodeError as exc:
            raise PlanError(
                f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})", source=str(path)
            ) from None
        return cls.from_json(data, source=str(path))
