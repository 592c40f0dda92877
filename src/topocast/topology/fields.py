"""Checked fields of a topology file: each reader returns the value or raises a
:class:`~topocast.errors.TopologyError` naming the file (with the line the YAML/JSON parser
marked on the mapping or list), the element and what was expected."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from ..errors import InputError, TopologyError
from ..units import parse_bandwidth, parse_time

_T = TypeVar("_T")


def located(source: str | None, obj: object = None) -> str | None:
    """``file:line`` of ``obj`` (a marked mapping or list), or what of the two is known."""
    line = getattr(obj, "line", None)
    if source and line:
        return f"{source}:{line}"
    if line:
        return f"line {line}"
    return source


def fail(source: str | None, obj: object, element: str | None, message: str) -> TopologyError:
    """The error for ``element`` of ``obj`` (to raise)."""
    return TopologyError(message, source=located(source, obj), element=element)


def expect(
    value: object,
    types: type[_T] | tuple[type[_T], ...],
    source: str | None,
    obj: object,
    element: str | None,
    what: str,
) -> _T:
    """``value`` when it is of ``types`` (a bool only where bool is named); else an error saying
    ``what`` was expected."""
    if isinstance(value, bool) and bool not in (types if isinstance(types, tuple) else (types,)):
        raise fail(source, obj, element, f"expected {what}, got {value!r}")
    if not isinstance(value, types):
        raise fail(source, obj, element, f"expected {what}, got {type(value).__name__} {value!r}")
    return value


def node_name(value: object, source: str | None, obj: object, element: str) -> str:
    """A host or switch name: a non-empty string (or a number, read as a string)."""
    if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
        raise fail(source, obj, element, f"expected a node name (string), got {value!r}")
    return str(value)


@functools.lru_cache(maxsize=8192, typed=True)
def cached_quantity(parser: Callable[..., float], value: str | int | float) -> float:
    # a generated network repeats a few hundred bandwidth strings over 100,000 links
    return parser(value, field=None)


def _quantity(parser: Callable[..., float], value: object, source: str | None, obj: object, element: str) -> float:
    """``value`` read with a :mod:`topocast.units` parser, its error reworded for the file."""
    try:
        if isinstance(value, (str, int, float)):
            return cached_quantity(parser, value)
        return parser(value, field=None)
    except InputError as exc:
        raise fail(source, obj, element, exc.message) from None


def bandwidth_value(value: object, source: str | None, obj: object, element: str) -> float:
    """A bandwidth in bytes/s (units: :func:`topocast.units.parse_bandwidth`), positive."""
    bw = _quantity(parse_bandwidth, value, source, obj, element)
    if not bw > 0:
        raise fail(source, obj, element, f"bandwidth must be positive, got {value!r}")
    return bw


def time_value(value: object, source: str | None, obj: object, element: str) -> float:
    """A time in seconds (units: :func:`topocast.units.parse_time`), >= 0."""
    t = _quantity(parse_time, value, source, obj, element)
    if t < 0:
        raise fail(source, obj, element, f"time must be >= 0, got {value!r}")
    return t


def check_keys(d: Mapping[object, object], allowed: Sequence[str], source: str | None, element: str) -> None:
    """Refuse any key of ``d`` not in ``allowed``."""
    for k in d:
        if k not in allowed:
            raise fail(source, d, element, f"unknown key {k!r} (expected one of: {', '.join(allowed)})")


def node_names(value: object, source: str | None, obj: object, element: str) -> list[str]:
    """A list of node names (None: none)."""
    if value is None:
        return []
    value = expect(value, list, source, obj, element, "a list of names")
    return [node_name(v, source, value, f"{element}[{i}]") for i, v in enumerate(value)]
