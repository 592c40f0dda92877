"""Unit parsing and formatting at the edges (files, command line).

Inside topocast everything is bytes, bytes per second and seconds. Strings with units are
converted once, here:

* bandwidth: ``1Gbps``, ``100Mbps``, ``10Kbps``, ``500bps`` (bits/s, decimal prefixes);
  ``125MB/s``, ``1GB/s``, ``125MBps`` (bytes/s, decimal); ``1GiB/s`` (binary); a bare number
  is bytes/s. ``MBps``/``GBps`` are SimGrid's spelling of bytes/s.
* size: ``64MB``, ``1GiB``, ``512KiB``, ``100B``, ``10kB``; a bare number is bytes.
* time: ``50us``, ``2ms``, ``0.1s``, ``1ns``, ``1min``; a bare number is seconds.

SimGrid platform files have their own vocabulary, read as SimGrid reads it
(:func:`parse_simgrid_bandwidth`, :func:`parse_simgrid_time`): bandwidths in ``Bps`` (bytes/s,
the default), ``kBps`` .. ``EBps``, ``KiBps`` .. ``EiBps``, or bits with ``bps``; times in
``s`` (the default), ``ms``, ``us``, ``ns``, ``ps``, ``m``, ``h``, ``d``, ``w``.

Anything else raises :class:`~topocast.errors.InputError` naming the field.

Printed, quantities read one way (:func:`format_bandwidth`, :func:`format_size`,
:func:`format_time`; docs/design.md, "Units"): rates in bit/s with a decimal prefix
(``Mbit/s``), sizes with a binary prefix (``MiB``) unless echoing a round decimal size the
user gave, times in ``s``, ``ms``, ``us``. Files are written with the shortest unit text that
reads back exactly (:func:`format_bandwidth_exact`, :func:`format_time_exact`).
"""

from __future__ import annotations

import functools
import math
import re
from decimal import Decimal

from .errors import InputError

__all__ = [
    "parse_bandwidth",
    "parse_size",
    "parse_time",
    "parse_simgrid_bandwidth",
    "parse_simgrid_time",
    "prefix_factor",
    "is_bare_number",
    "format_bandwidth",
    "format_mbit",
    "format_size",
    "format_time",
    "format_bandwidth_exact",
    "format_time_exact",
]

_NUMBER = r"([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)"
_PATTERN = re.compile(r"^\s*" + _NUMBER + r"\s*([A-Za-z/]*)\s*$")

#: The multiplier prefixes, decimal (k or K = 1000) and binary (Ki = 1024), up to exa.
_DECIMAL = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
_BINARY = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50, "Ei": 2.0**60}
_PREFIX = r"([kKMGTPE]i?)?"


#: The accepted forms, said in every error about a quantity.
_FORMS = {
    "bandwidth": "e.g. 1Gbps, 100Mbps, 125MB/s, 1GiB/s, or a bare number of bytes/s",
    "size": "e.g. 64MB, 1GiB, 512KiB, or a bare number of bytes",
    "time": "e.g. 2ms, 50us, 1.5s, or a bare number of seconds",
}


def _split(text: object, what: str, field: str | None) -> tuple[float, str]:
    if isinstance(text, bool):
        raise InputError(f"expected a {what}, got {text!r}", element=field)
    if isinstance(text, (int, float)):
        return float(text), ""
    if not isinstance(text, str):
        raise InputError(f"expected a {what} (number or string with unit), got {text!r}", element=field)
    m = _PATTERN.match(text)
    if not m:
        raise InputError(
            f"cannot read {text!r} as a {what} ({_FORMS.get(what, 'a number with a unit')})", element=field
        )
    return float(m.group(1)), m.group(2)


def is_bare_number(text: str) -> bool:
    """Whether ``text`` is a number without a unit (which a file reads in its base unit)."""
    return re.fullmatch(r"\s*" + _NUMBER + r"\s*", text) is not None


def prefix_factor(prefix: str) -> float | None:
    """The multiplier of a unit prefix (``k``/``K`` 1000, ``Ki`` 1024, ..., ``""`` 1), or None."""
    if prefix in _BINARY:
        return _BINARY[prefix]
    if prefix in _DECIMAL:
        return _DECIMAL[prefix]
    return None


def _check_finite(value: float, text: object, what: str, field: str | None) -> float:
    if not math.isfinite(value):
        raise InputError(f"{what} {text!r} is not a finite number", element=field)
    return value


def parse_bandwidth(text: object, *, field: str | None = None) -> float:
    """Parse a bandwidth and return bytes per second.

    ``text`` is a string with a unit or a number (bytes/s); anything else raises
    :class:`~topocast.errors.InputError`.

    Bits per second: ``bps``, ``Kbps``, ``Mbps``, ``Gbps``, ``Tbps`` (also ``bit/s`` forms).
    Bytes per second: ``B/s``, ``MB/s``, ``GiB/s``, ``MBps`` (SimGrid), ``Bps``.
    """
    value, unit = _split(text, "bandwidth", field)
    _check_finite(value, text, "bandwidth", field)
    if unit == "":
        return value
    m = re.fullmatch(_PREFIX + r"(bps|bit/s|b/s|Bps|B/s|byte/s)", unit)
    if not m:
        raise InputError(
            f"unknown bandwidth unit {unit!r} in {text!r} (expected e.g. 1Gbps, 100Mbps, 125MB/s, 1GiB/s)",
            element=field,
        )
    factor = prefix_factor(m.group(1) or "")
    if factor is None:
        raise InputError(f"unknown prefix in {text!r}", element=field)
    bits = m.group(2) in ("bps", "bit/s", "b/s")
    return value * factor / 8.0 if bits else value * factor


def parse_size(text: object, *, field: str | None = None) -> int:
    """Parse a data size and return bytes (an integer, rounded to the nearest byte)."""
    value, unit = _split(text, "size", field)
    _check_finite(value, text, "size", field)
    if unit == "":
        factor = 1.0
    else:
        m = re.fullmatch(_PREFIX + r"(B|byte|bytes|b|bit|bits)", unit)
        if not m:
            raise InputError(
                f"unknown size unit {unit!r} in {text!r} (expected e.g. 64MB, 1GiB, 512KiB, 100B)",
                element=field,
            )
        prefix = prefix_factor(m.group(1) or "")
        if prefix is None:
            raise InputError(f"unknown prefix in {text!r}", element=field)
        factor = prefix
        if m.group(2) in ("b", "bit", "bits"):
            factor /= 8.0
    return int(round(value * factor))


_TIME = {"s": 1.0, "sec": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9, "min": 60.0, "h": 3600.0}


def parse_time(text: object, *, field: str | None = None) -> float:
    """Parse a duration and return seconds (``50us``, ``2ms``, ``0.1s``; bare number = s)."""
    if isinstance(text, str):
        text = text.replace("µ", "u")
    value, unit = _split(text, "time", field)
    _check_finite(value, text, "time", field)
    if unit == "":
        return value
    if unit not in _TIME:
        raise InputError(f"unknown time unit {unit!r} in {text!r} (expected s, ms, us or ns)", element=field)
    return value * _TIME[unit]


#: SimGrid's time units, exact (``8.158ms`` is 8.158e-3 to the last digit, as SimGrid reads it).
_SIMGRID_TIME = {
    "": Decimal(1),
    "s": Decimal(1),
    "ms": Decimal("1e-3"),
    "us": Decimal("1e-6"),
    "ns": Decimal("1e-9"),
    "ps": Decimal("1e-12"),
    "m": Decimal(60),
    "h": Decimal(3600),
    "d": Decimal(86400),
    "w": Decimal(604800),
}


def parse_simgrid_bandwidth(text: str, *, field: str | None = None) -> float:
    """A SimGrid bandwidth in bytes/s: ``Bps`` (bytes, the default), ``bps`` (bits), with a
    decimal or binary prefix (``125MBps``, ``1Gbps``, ``10KiBps``), computed exactly in
    decimal (``8.158MBps`` is 8158000 B/s)."""
    m = re.fullmatch(r"\s*" + _NUMBER + r"\s*([A-Za-z]*)\s*", text or "")
    if not m:
        raise InputError(f"cannot read bandwidth {text!r} (expected e.g. 1.25E8, 125MBps, 1Gbps)", element=field)
    value, unit = m.group(1), m.group(2)
    if unit == "":
        return float(value)
    u = re.fullmatch(_PREFIX + r"(Bps|bps)", unit)
    factor = prefix_factor(u.group(1) or "") if u else None
    if u is None or factor is None:
        raise InputError(
            f"unknown bandwidth unit {unit!r} in {text!r} (SimGrid: Bps, MBps, Gbps, KiBps, ...)", element=field
        )
    d = Decimal(value) * Decimal(factor)
    return float(d / 8 if u.group(2) == "bps" else d)


def parse_simgrid_time(text: str, *, field: str | None = None) -> float:
    """A SimGrid time in seconds: ``s`` (the default), ``ms``, ``us``, ``ns``, ``ps``, ``m``
    (minutes), ``h``, ``d``, ``w``, computed exactly in decimal; an empty text is 0."""
    m = re.fullmatch(r"\s*" + _NUMBER + r"\s*([a-z]*)\s*", text or "0")
    if not m or m.group(2) not in _SIMGRID_TIME:
        raise InputError(
            f"cannot read latency {text!r} (SimGrid: s, ms, us, ns, or a bare number of seconds)", element=field
        )
    return float(Decimal(m.group(1)) * _SIMGRID_TIME[m.group(2)])


def format_bandwidth(bytes_per_second: float) -> str:
    """Human form in bits/s with a decimal prefix, e.g. ``'1.5 Gbit/s'``."""
    if not math.isfinite(bytes_per_second):
        return str(bytes_per_second)
    bits = bytes_per_second * 8.0
    for factor, name in ((1e12, "Tbit/s"), (1e9, "Gbit/s"), (1e6, "Mbit/s"), (1e3, "kbit/s")):
        if abs(bits) >= factor:
            return f"{bits / factor:.4g} {name}"
    return f"{bits:.4g} bit/s"


def format_mbit(bytes_per_second: float | None, digits: int = 1) -> str:
    """A rate as a number of Mbit/s for a column headed ``Mbit/s`` (``-`` when unknown)."""
    if bytes_per_second is None or not math.isfinite(bytes_per_second):
        return "-"
    return f"{bytes_per_second * 8 / 1e6:.{digits}f}"


def format_size(nbytes: float, *, binary: bool = False) -> str:
    """Human form, e.g. ``'64 MiB'`` or ``'1 GB'``: the binary prefix when the size is a round
    number of them, else the decimal one (``--size 1GB`` is echoed as 1 GB, not 953.7 MiB).
    ``binary``: always the binary prefix (KiB, MiB, GiB), for a column or a row of sizes
    that must read one way."""
    binary_prefixes = ((2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB"))
    decimal = ((1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB"))
    for (bf, bname), (df, dname) in zip(binary_prefixes, decimal):
        if abs(nbytes) >= bf and (binary or float(nbytes / bf).is_integer()):
            return f"{nbytes / bf:.4g} {bname}"
        if abs(nbytes) >= df and not binary:
            return f"{nbytes / df:.4g} {dname}"
        if abs(nbytes) >= bf:
            return f"{nbytes / bf:.4g} {bname}"
    return f"{nbytes:.0f} B"


def format_time(seconds: float) -> str:
    """Human form, e.g. ``'12.3 ms'``."""
    if not math.isfinite(seconds):
        return str(seconds)
    if abs(seconds) >= 1 or seconds == 0:
        return f"{seconds:.4g} s"
    if abs(seconds) >= 1e-3:
        return f"{seconds * 1e3:.4g} ms"
    return f"{seconds * 1e6:.4g} us"


# ---------------------------------------------------------------------- exact unit text (files)
_BW_UNITS = (("Tbps", 1e12), ("Gbps", 1e9), ("Mbps", 1e6), ("kbps", 1e3), ("bps", 1.0))
_BW_BYTE_UNITS = (("GB/s", 1e9), ("MB/s", 1e6), ("kB/s", 1e3))
_TIME_UNITS = (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9))


def _num(x: float) -> int | float:
    """A float as the shortest exact YAML/JSON number (int when integral)."""
    if float(x).is_integer() and abs(x) < 2**53:
        return int(x)
    return float(x)


def _num_text(v: float) -> str | None:
    r = repr(float(v))
    if "e" in r or "inf" in r or "nan" in r:
        return None
    if r.endswith(".0"):
        r = r[:-2]
    return r


def _key(text: str, bytes_first: bool = False) -> tuple[bool, bool, int]:
    """Prefer integral values (100Mbps over 0.1Gbps), then the preferred unit kind, then shorter."""
    return ("." in text, text.endswith("B/s") != bytes_first, len(text))


@functools.lru_cache(maxsize=4096)
def format_bandwidth_exact(bw: float, *, bytes_first: bool = False) -> str | int | float:
    """``'1Gbps'``-style text when it parses back to exactly ``bw``, else the bare number.

    ``bytes_first`` prefers ``GB/s``-style units when both read back exactly.
    """
    best = None

    for unit, factor in _BW_UNITS:
        t = _num_text(bw * 8.0 / factor)
        if t is not None:
            s = t + unit
            if parse_bandwidth(s) == bw and (best is None or _key(s, bytes_first) < _key(best, bytes_first)):
                best = s
    for unit, factor in _BW_BYTE_UNITS:
        t = _num_text(bw / factor)
        if t is not None:
            s = t + unit
            if parse_bandwidth(s) == bw and (best is None or _key(s, bytes_first) < _key(best, bytes_first)):
                best = s
    return best if best is not None and len(best) <= 14 else _num(bw)


@functools.lru_cache(maxsize=4096)
def format_time_exact(t: float) -> str | int | float:
    """``'50us'``-style text when it parses back to exactly ``t``, else the bare number."""
    if t == 0:
        return 0
    best = None
    for unit, factor in _TIME_UNITS:
        v = _num_text(t / factor)
        if v is not None:
            s = v + unit
            if parse_time(s) == t and (best is None or _key(s) < _key(best)):
                best = s
    return best if best is not None and len(best) <= 12 else _num(t)
