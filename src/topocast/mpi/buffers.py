"""Buffers as mpi4py reads them, and reductions as MPI computes them.

A message (``buf``, ``[buf, datatype]``, ``[buf, count, datatype]``, ``[buf, (count, displ),
datatype]``, ``[buf, count, displ, datatype]``, ``[buf, count]``; ``buf`` a buffer-protocol
object, a DLPack object or ``None``) is read the way mpi4py's ``message_simple`` reads it,
with one of three outcomes (docs/guide.md, "Inside MPI jobs"):

* a :class:`Message`: the bytes the call moves are one contiguous range of host memory in a
  predefined MPI datatype without gaps; topocast moves exactly those bytes;
* a :class:`Delegated`: mpi4py takes it but topocast cannot move it exactly (a derived
  datatype, a datatype with gaps, device memory, ``MPI.BOTTOM`` with a count, a DLPack
  object without a datatype): the whole call goes to MPI's own collective;
* ``ValueError``: mpi4py would refuse it, or it reaches beyond its buffer (mpi4py does not
  check an explicit count; MPI would write past the end): refused on every rank.

Reductions are MPI's own: ``MPI_Reduce_local`` with the call's op and datatype, so an
(op, datatype) pair is valid exactly when MPI says so and every element is computed by MPI's
code, whatever the planner.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np

if TYPE_CHECKING:
    from mpi4py import MPI
    from mpi4py.typing import BufSpec

__all__ = ["Message", "Delegated", "as_message", "reduction", "check_op"]

_DLPACK_CPU = 1  # DLDeviceType.kDLCPU


@dataclass(frozen=True)
class Message:
    """The bytes a call moves: ``data`` (uint8, a view of the caller's memory) holds
    ``count`` elements of the predefined MPI ``datatype``."""

    data: np.ndarray
    datatype: MPI.Datatype
    count: int

    @property
    def nbytes(self) -> int:
        return int(self.data.nbytes)

    @property
    def type_name(self) -> str:
        return self.datatype.Get_name()

    def describe(self) -> str:
        return f"{self.count} x {self.type_name}"


@dataclass(frozen=True)
class Delegated:
    """A message mpi4py takes that topocast cannot move exactly: ``reason`` says why."""

    reason: str


def _unpack(spec):
    """(buf, count, displ, datatype) as mpi4py's ``message_simple`` splits a message."""
    from mpi4py import MPI

    def is_datatype(x) -> bool:
        return isinstance(x, (MPI.Datatype, str))

    count = displ = datatype = None
    if isinstance(spec, (list, tuple)):
        if len(spec) == 2:
            buf, count = spec
            if is_datatype(count):
                count, datatype = None, count
            elif isinstance(count, (list, tuple)):
                count, displ = count
        elif len(spec) == 3:
            buf, count, datatype = spec
            if isinstance(count, (list, tuple)):
                count, displ = count
        elif len(spec) == 4:
            buf, count, displ, datatype = spec
        else:
            raise ValueError(f"expected 2 to 4 items (buf, count, displacement, datatype), got {len(spec)}")
    else:
        buf = spec
    return buf, count, displ, datatype


def _datatype(datatype, view_format: str | None):
    """The MPI datatype: given, or named by the buffer's format as mpi4py names it."""
    from mpi4py import MPI

    if isinstance(datatype, MPI.Datatype):
        if datatype == MPI.DATATYPE_NULL:
            raise ValueError("the datatype is MPI.DATATYPE_NULL")
        return datatype
    code = datatype
    if code is None:
        code = view_format or "B"
        if code[0] in "<>@=!":
            if code[0] in "<>!" and code[0] != ("<" if np.little_endian else ">"):
                raise ValueError(f"format {code!r} has a non-native byte order")
            code = code[1:]
        if code == "B":
            return MPI.BYTE  # as mpi4py: raw bytes are MPI.BYTE, not UNSIGNED_CHAR
    try:
        return MPI.Datatype.fromcode(code)
    except (ValueError, KeyError, TypeError):
        raise ValueError(f"cannot map {code!r} to an MPI datatype") from None


def _movable(datatype) -> str | None:
    """None when ``count`` elements of ``datatype`` are ``count * size`` contiguous bytes
    from the start of the buffer; else why not."""
    if not datatype.is_named:
        return f"derived datatype {datatype.Get_name() or '(unnamed)'}"
    lb, extent = datatype.Get_extent()
    true_lb, true_extent = datatype.Get_true_extent()
    if lb != 0 or true_lb != 0 or extent != datatype.size or true_extent != datatype.size:
        return f"datatype {datatype.Get_name()} has gaps (size {datatype.size}, extent {extent})"
    return None


def _host_bytes(obj, writable: bool):
    """``obj``'s memory as a uint8 array (buffer protocol or DLPack on the CPU, through
    mpi4py's own reader), or a :class:`Delegated` for device memory."""
    from mpi4py import MPI

    if not _has_buffer(obj):
        if hasattr(obj, "__dlpack__"):
            try:
                device = int(obj.__dlpack_device__()[0])
            except Exception:  # a broken __dlpack_device__ is MPI's to refuse
                return Delegated("a DLPack object without a device")
            if device != _DLPACK_CPU:
                return Delegated(f"a DLPack object in device memory (device type {device})")
        elif hasattr(obj, "__cuda_array_interface__"):
            return Delegated("a __cuda_array_interface__ object (device memory)")
        else:
            raise ValueError(f"{type(obj).__name__} is not a buffer (numpy array, bytes-like or DLPack expected)")
    try:
        mem = MPI.buffer.frombuffer(obj, readonly=not writable)
    except BufferError as exc:
        raise ValueError(f"{exc}{' (it receives data)' if writable else ''}") from None
    # mpi4py's buffer object has the buffer protocol, which its type stubs do not declare
    return np.frombuffer(cast(Any, mem), dtype=np.uint8) if len(mem) else np.zeros(0, np.uint8)


def _has_buffer(obj) -> bool:
    try:
        memoryview(obj).release()
    except TypeError:
        return False
    return True


def as_message(spec: BufSpec, *, writable: bool, what: str) -> Message | Delegated:
    """Read ``spec`` as mpi4py does (module docstring). Raises ValueError naming ``what``
    (the argument's name) for a message mpi4py or topocast refuses."""
    try:
        return _read(spec, writable)
    except ValueError as exc:
        raise ValueError(f"{what}: {exc}") from None


def _read(spec, writable: bool) -> Message | Delegated:
    from mpi4py import MPI

    buf, count, displ, datatype = _unpack(spec)
    if count is not None:
        count = int(count)
        if count < 0:
            raise ValueError(f"negative count {count}")
    displ = 0 if displ is None else int(displ)
    if displ < 0:
        raise ValueError(f"negative displacement {displ}")
    if buf is None or buf is MPI.BOTTOM:
        if datatype is None:
            raise ValueError("a buffer of None or MPI.BOTTOM needs an explicit datatype")
        dt = _datatype(datatype, None)
        if count:
            if buf is None:
                raise ValueError(f"the buffer is None but count is {count}")
            return Delegated("MPI.BOTTOM with a count (absolute addresses)")
        return Message(np.zeros(0, np.uint8), dt, 0)
    if datatype is None and not _has_buffer(buf):
        if hasattr(buf, "__dlpack__") or hasattr(buf, "__cuda_array_interface__"):
            return Delegated("a DLPack or device-array object without an explicit datatype")
    fmt = memoryview(buf).format if datatype is None and _has_buffer(buf) else None
    dt = _datatype(datatype, fmt)
    why = _movable(dt)
    if why is not None:
        return Delegated(why)
    data = _host_bytes(buf, writable)
    if isinstance(data, Delegated):
        return data
    size = dt.size
    if size == 0:
        raise ValueError(f"datatype {dt.Get_name()} has size 0")
    offset = displ * size
    if offset > data.nbytes:
        raise ValueError(f"displacement {displ} out of bounds, the buffer holds {data.nbytes // size} entries")
    data = data[offset:]
    if count is None:
        if data.nbytes % size:
            raise ValueError(f"{data.nbytes} bytes are not a whole number of {dt.Get_name()} ({size} bytes each)")
        count = data.nbytes // size
    elif count * size > data.nbytes:
        raise ValueError(f"count {count} of {dt.Get_name()} needs {count * size} bytes, the buffer has {data.nbytes}")
    return Message(data[: count * size], dt, count)


def check_op(op, datatype) -> Delegated | None:
    """None when topocast computes ``op`` on ``datatype`` (MPI's own ``Reduce_local``
    accepts the pair); a :class:`Delegated` for an op topocast leaves to MPI (user-defined:
    MPI fixes the order of a non-commutative one); ValueError when MPI refuses the pair."""
    from mpi4py import MPI

    if not isinstance(op, MPI.Op):
        raise ValueError(f"op: expected an MPI.Op, got {type(op).__name__}")
    if op == MPI.OP_NULL:
        raise ValueError("op is MPI.OP_NULL")
    if not op.is_predefined or op in (MPI.REPLACE, MPI.NO_OP):
        return Delegated("a user-defined op" if not op.is_predefined else "MPI.REPLACE or MPI.NO_OP")
    problem = _op_problem(op.py2f(), datatype.py2f())
    if problem is not None:
        raise ValueError(f"op: {problem}")
    return None


@functools.lru_cache(maxsize=256)
def _op_problem(op_f: int, datatype_f: int) -> str | None:
    """MPI's verdict on a predefined (op, predefined datatype) pair, by Fortran handles
    (stable for predefined objects): one ``Reduce_local`` on one zeroed element."""
    from mpi4py import MPI

    op, dt = MPI.Op.f2py(op_f), MPI.Datatype.f2py(datatype_f)
    a, b = np.zeros(dt.size, np.uint8), np.zeros(dt.size, np.uint8)
    try:
        op.Reduce_local([a, 1, dt], [b, 1, dt])
    except MPI.Exception as exc:
        name = _op_name(op)
        kinds = next((k for names, k in _OP_TYPES if name in names), "")
        return f"MPI does not define MPI.{name} on {dt.Get_name()} ({MPI.Get_error_string(exc.Get_error_class())})" + (
            f"; MPI defines it on {kinds}" if kinds else ""
        )
    return None


# The MPI standard's table of predefined reductions (section 6.9.2), for error messages only:
# MPI's own Reduce_local decides.
_OP_TYPES = (
    (("SUM", "PROD"), "integer, floating-point and complex types"),
    (("MIN", "MAX"), "integer and floating-point types"),
    (("LAND", "LOR", "LXOR"), "integer and logical (MPI.C_BOOL) types"),
    (("BAND", "BOR", "BXOR"), "integer types and MPI.BYTE"),
    (("MAXLOC", "MINLOC"), "pair types such as MPI.FLOAT_INT"),
)


def _op_name(op) -> str:
    from mpi4py import MPI

    for name in ("SUM", "PROD", "MIN", "MAX", "LAND", "LOR", "LXOR", "BAND", "BOR", "BXOR", "MAXLOC", "MINLOC"):
        if op == getattr(MPI, name):
            return name
    return str(op)


def reduction(op, datatype) -> Callable[[np.ndarray, np.ndarray], None]:
    """``combine(dst, src)``: ``dst = src op dst`` by MPI's ``Reduce_local`` on the uint8
    views ``dst``, ``src`` of whole elements of ``datatype`` (check the pair with
    :func:`check_op` first)."""
    size = datatype.size

    def combine(dst: np.ndarray, src: np.ndarray) -> None:
        n = dst.nbytes // size
        op.Reduce_local([src, n, datatype], [dst, n, datatype])

    return combine
