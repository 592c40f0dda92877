"""SimGrid's units: bandwidths, times, sharing policies, radicals (as SimGrid reads them)."""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from decimal import Decimal

from ...errors import TopologyError

_NUM = r"([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)"
_BW_PREFIX = {
    "": 1.0,
    "k": 1e3,
    "K": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
    "Ki": 2.0**10,
    "Mi": 2.0**20,
    "Gi": 2.0**30,
    "Ti": 2.0**40,
    "Pi": 2.0**50,
    "Ei": 2.0**60,
}
_TIME_EXACT = {
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


def _sg_bandwidth(text: str, where: str, source: str) -> float:
    m = re.fullmatch(r"\s*" + _NUM + r"\s*([A-Za-z]*)\s*", text or "")
    if not m:
        raise TopologyError(
            f"cannot read bandwidth {text!r} (expected e.g. 1.25E8, 125MBps, 1Gbps)", source=source, element=where
        )
    value, unit = m.group(1), m.group(2)
    if unit == "":
        bw = float(value)
    else:
        u = re.fullmatch(r"([kKMGTPE]i?)?(Bps|bps)", unit)
        if not u or (u.group(1) or "") not in _BW_PREFIX:
            raise TopologyError(
                f"unknown bandwidth unit {unit!r} in {text!r} (SimGrid: Bps, MBps, Gbps, KiBps, ...)",
                source=source,
                element=where,
            )
        # exact decimal arithmetic: 8.158MBps is exactly 8158000 B/s
        d = Decimal(value) * Decimal(_BW_PREFIX[u.group(1) or ""])
        bw = float(d / 8 if u.group(2) == "bps" else d)
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
        if k in ("bandwidth", "bw", "bb_bw") and re.fullmatch(r"\s*" + _NUM + r"\s*", v)
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
    m = re.fullmatch(r"\s*" + _NUM + r"\s*([a-z]*)\s*", text or "0")
    if not m or m.group(2) not in _TIME_EXACT:
        raise TopologyError(
            f"cannot read latency {text!r} (SimGrid: s, ms, us, ns, or a bare number of seconds)",
            source=source,
            element=where,
        )
    t = float(Decimal(m.group(1)) * _TIME_EXACT[m.group(2)])
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
