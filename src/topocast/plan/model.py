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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ..errors import PlanError
from .transfer import Ranges, Transfer, normalize_ranges, ranges_from_json

if TYPE_CHECKING:
    from .graph import PlanArrays

__all__ = ["Plan"]


COLLECTIVES = ("broadcast", "allreduce", "redistribute")
PLAN_FIELDS = ("collective", "size_bytes", "initial", "wanted", "transfers")  # what a plan file must have


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
                initial={h: ranges_from_json(r, f"initial[{h}]") for h, r in d["initial"].items()},
                wanted={h: ranges_from_json(r, f"wanted[{h}]") for h, r in d["wanted"].items()},
                source=d.get("source"),
                planner=str(d.get("planner", "")),
                params=d.get("params", {}),
                notes=d.get("notes", {}),
                chunk_size=int(d.get("chunk_size", 0)),
            )
        except PlanError as exc:
            raise exc.at(source) from None
        except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
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
