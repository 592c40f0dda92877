"""Buffers as mpi4py accepts them, and the built-in reduction operations on numpy types."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import numpy as np

if TYPE_CHECKING:
    from mpi4py import MPI
    from mpi4py.typing import BufSpec
    from typing_extensions import Buffer

__all__ = ["Message", "as_message", "reduction"]


@dataclass(frozen=True)
class Message:
    """A contiguous buffer seen as ``nbytes`` bytes (``data``, uint8) of ``count`` elements
    of ``dtype``."""

    data: np.ndarray
    dtype: np.dtype
    count: int

    @property
    def nbytes(self) -> int:
        return int(self.data.nbytes)

    def describe(self) -> str:
        return f"{self.count} x {self.dtype.name}"


def _to_numpy_dtype(datatype) -> np.dtype:
    from mpi4py.util.dtlib import to_numpy_dtype

    try:
        return np.dtype(to_numpy_dtype(datatype))
    except (ValueError, TypeError) as exc:
        raise ValueError(f"MPI datatype {datatype} has no numpy equivalent ({exc})") from None


def as_message(spec: BufSpec, *, writable: bool, what: str) -> Message:
    """``spec``: a numpy array, a bytes-like object, ``[buf, datatype]`` or ``[buf, count,
    datatype]`` (as mpi4py's upper-case methods take). Raises ValueError saying what is
    wrong with ``what`` (the argument's name)."""
    from mpi4py import MPI

    datatype = None
    count = None
    obj = spec
    if isinstance(spec, (list, tuple)):
        if len(spec) == 2 and isinstance(spec[1], MPI.Datatype):
            obj, datatype = spec
        elif len(spec) == 3 and isinstance(spec[2], MPI.Datatype):
            obj, count, datatype = spec
        else:
            raise ValueError(
                f"{what}: expected a buffer, [buf, datatype] or [buf, count, datatype], got a {type(spec).__name__} of {len(spec)}"
            )
    try:  # memoryview raises the TypeError of a non-buffer, reported below
        view = memoryview(cast("Buffer", obj))
    except TypeError:
        raise ValueError(f"{what}: {type(obj).__name__} is not a buffer (numpy array or bytes-like expected)") from None
    if not view.c_contiguous:
        raise ValueError(f"{what}: the buffer is not contiguous")
    if writable and view.readonly:
        raise ValueError(f"{what}: the buffer is read-only but receives data")
    data = np.frombuffer(view.cast("B") if view.ndim != 1 or view.format != "B" else view, dtype=np.uint8)
    if datatype is not None:
        dtype = _to_numpy_dtype(datatype)
    elif isinstance(obj, np.ndarray):
        dtype = obj.dtype
    else:
        dtype = np.dtype(view.format) if view.format not in ("B", "b", "c") else np.dtype(np.uint8)
    if count is not None:
        need = int(count) * dtype.itemsize
        if count < 0 or need > data.nbytes:
            raise ValueError(f"{what}: count {count} of {dtype.name} needs {need} bytes, the buffer has {data.nbytes}")
        data = data[:need]
    elif data.nbytes % dtype.itemsize:
        raise ValueError(f"{what}: {data.nbytes} bytes are not a whole number of {dtype.name}")
    return Message(data, dtype, data.nbytes // dtype.itemsize)


_ARITH = {"SUM": np.add, "PROD": np.multiply, "MIN": np.minimum, "MAX": np.maximum}
_LOGICAL = {"LAND": np.logical_and, "LOR": np.logical_or, "LXOR": np.logical_xor}
_BITWISE = {"BAND": np.bitwise_and, "BOR": np.bitwise_or, "BXOR": np.bitwise_xor}


def op_name(op: MPI.Op) -> str:
    from mpi4py import MPI

    for name in (*_ARITH, *_LOGICAL, *_BITWISE):
        if op == getattr(MPI, name):
            return name
    raise ValueError(f"op: only MPI's built-in operations {', '.join((*_ARITH, *_LOGICAL, *_BITWISE))} are supported")


def reduction(name: str, dtype: np.dtype) -> Callable[[np.ndarray, np.ndarray], None]:
    """``combine(dst, src)``: ``dst = dst op src`` elementwise on the uint8 views ``dst``,
    ``src`` of whole elements of ``dtype``. ValueError when MPI does not define ``name`` on
    ``dtype``."""
    kind = dtype.kind
    if kind not in "biufc":
        raise ValueError(f"op {name}: {dtype.name} is not a numeric type")
    if name in _BITWISE and kind not in "biu":
        raise ValueError(f"op {name}: bitwise operations need an integer type, got {dtype.name}")
    if name in ("MIN", "MAX") and kind == "c":
        raise ValueError(f"op {name}: complex numbers have no order")
    ufunc = {**_ARITH, **_LOGICAL, **_BITWISE}[name]

    def combine(dst: np.ndarray, src: np.ndarray) -> None:
        d = dst.view(dtype)
        ufunc(d, src.view(dtype), out=d)

    return combine
