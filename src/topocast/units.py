"""Unit parsing and formatting at the edges (files, command line).

Inside topocast everything is bytes, bytes per second and seconds. Strings with units are
converted once, here:

* bandwidth: ``1Gbps``, ``100Mbps``, ``10Kbps``, ``500bps`` (bits/s, decimal prefixes);
  ``125MB/s``, ``1GB/s``, ``125MBps`` (bytes/s, decimal); ``1GiB/s`` (binary); a bare number
  is bytes/s. ``MBps``/``GBps`` are SimGrid's spelling of bytes/s.
* size: ``64MB``, ``1GiB``, ``512KiB``, ``100B``, ``10kB``; a bare number is bytes.
* time: ``50us``, ``2ms``, ``0.1s``, ``1ns``, ``1min``; a bare number is seconds.

Anything else raises :class:`~topocast.errors.InputError` naming the field.
"""

from __future__ import annotations

import math
import re

from .errors import InputError

__all__ = [
    "parse_bandwidth",
    "parse_size",
    "parse_time",
    "format_bandwidth",
    "format_size",
    "format_time",
]

_NUMBER = r"([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)"
_PATTERN = re.compile(r"^\s*" + _NUMBER + r"\s*([A-Za-z/]*)\s*$")

_DECIMAL = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_BINARY = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50}


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


def _prefix_factor(prefix: str) -> float | None:
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
    m = re.fullmatch(r"([kKMGTP]i?)?(bps|bit/s|b/s|Bps|B/s|byte/s)", unit)
    if not m:
        raise InputError(
            f"unknown bandwidth unit {unit!r} in {text!r} (expected e.g. 1Gbps, 100Mbps, 125MB/s, 1GiB/s)",
            element=field,
        )
    factor = _prefix_factor(m.group(1) or "")
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
        m = re.fullmatch(r"([kKMGTP]i?)?(B|byte|bytes|b|bit|bits)", unit)
        if not m:
            raise InputError(
                f"unknown size unit {unit!r} in {text!r} (expected e.g. 64MB, 1GiB, 512KiB, 100B)",
                element=field,
            )
        prefix = _prefix_factor(m.group(1) or "")
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


def format_bandwidth(bytes_per_second: float) -> str:
    """Human form in bits/s with a decimal prefix, e.g. ``'1.5 Gbit/s'``."""
    if not math.isfinite(bytes_per_second):
        return str(bytes_per_second)
    bits = bytes_per_second * 8.0
    for factor, name in ((1e12, "Tbit/s"), (1e9, "Gbit/s"), (1e6, "Mbit/s"), (1e3, "kbit/s")):
        if abs(bits) >= factor:
            return f"{bits / factor:.4g} {name}"
    return f"{bits:.4g} bit/s"


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
