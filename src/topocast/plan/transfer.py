"""One transfer of a plan and the byte ranges it moves (the semantics of its fields are in
:mod:`.model`). The bottom of the plan package: it imports nothing of it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict, Unpack

from ..errors import PlanError

__all__ = ["Ranges", "Transfer", "TransferOptions", "normalize_ranges", "ranges_from_json", "ranges_length"]

Ranges = tuple[tuple[int, int], ...]
"""An ordered sequence of ``(offset, length)`` byte ranges."""


def normalize_ranges(ranges: Iterable[Sequence[int]]) -> Ranges:
    """Return ``ranges`` as a tuple of ``(offset, length)`` int pairs, dropping empty ones."""
    out = []
    for r in ranges:
        off, length = int(r[0]), int(r[1])
        if length > 0:
            out.append((off, length))
    return tuple(out)


MAX_OFFSET = (1 << 63) - 1  # offsets and lengths are int64 in the plan's arrays


def ranges_from_json(value: object, where: str) -> Ranges:
    """A plan file's ``[[offset, length], ...]``, checked: whole numbers from 0 to 2^63 - 1,
    or a :class:`PlanError` naming ``where``."""
    if not isinstance(value, (list, tuple)):
        raise PlanError(f"expected a list of [offset, length] pairs, got {value!r}", element=where)
    for r in value:
        if not (isinstance(r, (list, tuple)) and len(r) == 2 and all(_whole_int64(x) for x in r)):
            raise PlanError(
                f"expected [offset, length] pairs of whole numbers of bytes from 0 to 2^63 - 1, got {r!r}",
                element=where,
            )
    return normalize_ranges(value)


def _whole_int64(x: object) -> bool:
    """A whole number (an int, or a float such as ``4.0``) from 0 to 2^63 - 1, not a bool."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return False
    return (isinstance(x, int) or x.is_integer()) and 0 <= x <= MAX_OFFSET


def _index(x: object, where: str) -> int:
    """A transfer's index in a plan file (``upstream``, ``after``)."""
    if not _whole_int64(x):
        raise PlanError(f"expected the index of a transfer (a whole number >= 0), got {x!r}", element=where)
    return int(x)  # type: ignore[call-overload]


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
                ranges=ranges_from_json(d["ranges"], f"{where}: ranges"),
                pipelined=bool(d.get("pipelined", False)),
                upstream=None if d.get("upstream") is None else _index(d["upstream"], f"{where}: upstream"),
                after=tuple(_index(x, f"{where}: after") for x in d.get("after", ())),
                rate_cap=None if d.get("rate_cap") is None else float(d["rate_cap"]),
                path=None if d.get("path") is None else tuple(str(x) for x in d["path"]),
                reduce=bool(d.get("reduce", False)),
                label=str(d.get("label", "")),
            )
        except (KeyError, TypeError, ValueError, IndexError, OverflowError) as exc:
            raise PlanError(f"expected src, dst and ranges [[offset, length], ...] ({exc})", element=where) from None
