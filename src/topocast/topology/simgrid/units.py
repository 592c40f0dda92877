"""SimGrid's units as a platform file uses them: bandwidths and times (parsed by
:mod:`topocast.units`, which holds SimGrid's vocabulary), sharing policies, radicals."""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET

from ...errors import InputError, TopologyError
from ...units import is_bare_number, parse_simgrid_bandwidth, parse_simgrid_time


def _sg_bandwidth(text: str, where: str, source: str) -> float:
    try:
        bw = parse_simgrid_bandwidth(text, field=where)
    except InputError as exc:
        raise TopologyError(exc.message, source=source, element=where) from None
    if not (math.isfinite(bw) and bw > 0):
        raise TopologyError(f"bandwidth must be positive, got {text!r}", source=source, element=where)
    return bw


#: Line rates in bit/s (10 Mbit/s Ethernet .. 400 Gbit/s); a bare bandwidth equal to one of
#: them was probably written in bit/s: SimGrid reads it as bytes/s, 8 times as fast.
_LINE_RATES_BPS = {1e7, 1e8, 1e9, 2.5e9, 5e9, 1e10, 2.5e10, 4e10, 5e10, 1e11, 2e11, 4e11}


def _bit_rate_warning(root: ET.Element) -> str | None:
    """A warning when bare bandwidths (no unit: bytes/s for SimGrid) look like bit/s."""
    bare = [
        float(v)
        for e in root.iter()
        for k, v in e.attrib.items()
        if k in ("bandwidth", "bw", "bb_bw") and is_bare_number(v)
    ]
    suspects = sorted({b for b in bare if b in _LINE_RATES_BPS})
    if not suspects:
        return None
    v = suspects[0]
    return (
        f"{sum(1 for b in bare if b in _LINE_RATES_BPS)} bandwidths are bare numbers that look like bit/s "
        f"(e.g. {v:g}): they are read as SimGrid reads them, bytes/s ({v * 8 / 1e9:g} Gbit/s); "
        f"if the file means bit/s, write the unit (e.g. {v / 1e9:g}Gbps)"
    )


def _sg_time(text: str, where: str, source: str) -> float:
    try:
        t = parse_simgrid_time(text, field=where)
    except InputError as exc:
        raise TopologyError(exc.message, source=source, element=where) from None
    if not (math.isfinite(t) and t >= 0):
        raise TopologyError(f"latency must be >= 0, got {text!r}", source=source, element=where)
    return t


_POLICY = {"SHARED": "shared", "SPLITDUPLEX": "duplex", "FULLDUPLEX": "duplex", "FATPIPE": "fatpipe", "WIFI": "shared"}


def _policy(text: str | None, default: str, where: str, source: str) -> str:
    p = (text or default).upper()
    if p not in _POLICY:
        raise TopologyError(
            f"unknown sharing_policy {text!r} (expected SHARED, SPLITDUPLEX or FATPIPE)", source=source, element=where
        )
    return _POLICY[p]


def _radical(text: str, where: str, source: str) -> list[int]:
    out: list[int] = []
    for part in (text or "").split(","):
        part = part.strip()
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not m:
            raise TopologyError(
                f"cannot read radical {text!r} (expected e.g. 1-29,58,60)", source=source, element=where
            )
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) else lo
        out.extend(range(lo, hi + 1))
    return out
