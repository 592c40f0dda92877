"""The matrix of a redistribution: files, generators, the two-cluster platform, the block layout.

A redistribution sends ``matrix[i, j]`` bytes from sender ``senders[i]`` to receiver
``receivers[j]`` (Jeannot & Wagner, AINA 2006, section 2.1). This module reads matrices
(CSV or JSON), generates the paper's patterns, builds the two-cluster platform of the paper
and lays the blocks out in the plan's message space:

block ``(i, j)`` of ``m_ij`` bytes occupies ``[off_ij, off_ij + m_ij)``; blocks are stored row
by row (sender by sender), zero blocks take no room.
"""

from __future__ import annotations

import csv
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..plan import Plan, Ranges, Redistribution, Transfer
from ..topology.model import PhysicalLink, Topology

__all__ = [
    "load_matrix",
    "random_pattern",
    "fig2_pattern",
    "two_cluster_topology",
    "block_offsets",
    "resolve_platform",
    "Platform",
]

MB = 10**6
MAX_BLOCK = np.iinfo(np.int64).max  # blocks are int64 byte counts


# ---------------------------------------------------------------------------- layout
def block_offsets(matrix: np.ndarray) -> np.ndarray:
    """Offset (bytes) of every block in the message space, row by row (int64 array)."""
    flat = np.asarray(matrix, dtype=np.int64).ravel()
    offs = np.zeros_like(flat)
    if flat.size:
        np.cumsum(flat[:-1], out=offs[1:])
    return offs.reshape(np.shape(matrix))


def holdings(request: Redistribution) -> tuple[dict[str, Ranges], dict[str, Ranges]]:
    """``(initial, wanted)`` of the plan: who holds which blocks, who wants which."""
    m = request.matrix
    offs = block_offsets(m)
    initial: dict[str, Ranges] = {}
    for i, s in enumerate(request.senders):
        row = int(m[i].sum())
        if row:
            initial[s] = ((int(offs[i, 0]), row),)  # a sender's blocks are contiguous
    wanted: dict[str, Ranges] = {}
    for j, r in enumerate(request.receivers):
        rs = tuple((int(offs[i, j]), int(m[i, j])) for i in range(m.shape[0]) if m[i, j] > 0)
        if rs:
            wanted[r] = rs
    return initial, wanted


def make_plan(
    request: Redistribution,
    transfers: Sequence[Transfer],
    planner: str,
    params: Mapping[str, object],
    notes: Mapping[str, object],
) -> Plan:
    """A ``redistribute`` plan with the fixed layout (see module doc)."""
    initial, wanted = holdings(request)
    return Plan(
        collective="redistribute",
        size=request.total,
        transfers=tuple(transfers),
        initial=initial,
        wanted=wanted,
        source=None,
        planner=planner,
        params=params,
        notes=notes,
    )


# ---------------------------------------------------------------------------- I/O
def _names(prefix: str, n: int) -> tuple[str, ...]:
    return tuple(f"{prefix}{i}" for i in range(n))


def load_matrix(path: str | os.PathLike[str], *, k: int | None = None, beta: float = 0.0) -> Redistribution:
    """Read a redistribution matrix (bytes) from CSV or JSON.

    CSV: one row per sender, one column per receiver. An optional header row whose first
    cell is empty (or ``sender``) names the receivers; then the first column names the
    senders. Without names, senders are ``a0, a1, ...`` and receivers ``b0, b1, ...``.

    JSON: ``{"matrix": [[...], ...], "senders": [...], "receivers": [...], "k": 5,
    "beta": 0.01}`` (all but ``matrix`` optional; ``k``/``beta`` given here win over the file).
    Entries may be numbers of bytes or size strings such as ``"10MB"``.
    """
    from ..units import parse_size, parse_time

    src = str(path)
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise InputError(f"cannot read matrix file ({exc.strerror})", source=src) from None

    def entry(x: object, where: str) -> int:
        if isinstance(x, bool):
            raise InputError(f"expected a size in bytes, got {x!r}", source=src, element=where)
        if isinstance(x, (int, float)):
            if not math.isfinite(x) or x < 0:
                raise InputError(f"expected a size in bytes >= 0, got {x!r}", source=src, element=where)
            size = int(round(x))
        elif str(x).strip() == "":
            return 0
        else:
            try:
                size = int(parse_size(str(x).strip(), field=where))
            except InputError as exc:
                raise exc.at(src) from None
        if not 0 <= size <= MAX_BLOCK:
            raise InputError(f"expected a size in bytes from 0 to {MAX_BLOCK}, got {x!r}", source=src, element=where)
        return size

    if p.suffix.lower() == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"not valid JSON (line {exc.lineno}: {exc.msg})", source=src) from None
        if isinstance(data, list):
            data = {"matrix": data}
        if not isinstance(data, dict) or not isinstance(data.get("matrix"), list):
            raise InputError("expected an object with a 'matrix' list of rows", source=src, element="matrix")
        rows = data["matrix"]
        if not all(isinstance(r, list) for r in rows):
            raise InputError("every row of 'matrix' must be a list", source=src, element="matrix")
        widths = {len(r) for r in rows}
        if len(widths) > 1:
            raise InputError(f"rows have different lengths {sorted(widths)}", source=src, element="matrix")
        m = np.array(
            [[entry(x, f"matrix[{i}][{j}]") for j, x in enumerate(r)] for i, r in enumerate(rows)], dtype=np.int64
        )
        if m.ndim != 2:
            m = m.reshape(len(rows), 0)
        # as given: Redistribution refuses a string where a list of names belongs
        senders = data.get("senders") or _names("a", m.shape[0])
        receivers = data.get("receivers") or _names("b", m.shape[1])
        if k is None and data.get("k") is not None:
            k = data["k"]
        if not beta and data.get("beta"):
            try:
                beta = parse_time(data["beta"], field="beta")
            except InputError as exc:
                raise exc.at(src) from None
        return Redistribution(m, senders, receivers, k=k, beta=beta, source=src)

    # CSV
    rows = [r for r in csv.reader(text.splitlines()) if r and any(c.strip() for c in r)]
    if not rows:
        raise InputError("empty matrix file", source=src)
    row_names: tuple[str, ...] | None = None
    column_names: tuple[str, ...] | None = None
    first = rows[0]
    if first[0].strip().lower() in ("", "sender", "senders", "from"):
        column_names = tuple(c.strip() for c in first[1:])
        rows = rows[1:]
        row_names = tuple(r[0].strip() for r in rows)
        rows = [r[1:] for r in rows]
    widths = {len(r) for r in rows}
    if len(widths) > 1:
        raise InputError(f"rows have different numbers of columns {sorted(widths)}", source=src, element="matrix")
    vals = []
    for i, r in enumerate(rows):
        line = []
        for j, c in enumerate(r):
            c = c.strip()
            try:
                line.append(entry(float(c) if _is_number(c) else c, f"row {i + 1}, column {j + 1}"))
            except InputError:
                raise
        vals.append(line)
    m = np.array(vals, dtype=np.int64).reshape(len(vals), len(vals[0]) if vals else 0)
    senders = row_names or _names("a", m.shape[0])
    receivers = column_names or _names("b", m.shape[1])
    return Redistribution(m, senders, receivers, k=k, beta=beta, source=src)


def _is_number(s: str) -> bool:
    try:
        float(s)
        return True
    except ValueError:
        return False


def save_matrix(request: Redistribution, path: str | os.PathLike[str]) -> None:
    """Write the request as JSON (``load_matrix`` reads it back)."""
    Path(path).write_text(json.dumps(request.to_json(), indent=1))


# ---------------------------------------------------------------------------- generators
def random_pattern(
    n1: int = 10,
    n2: int = 10,
    n_messages: int = 30,
    x: float = 80 * MB,
    *,
    low: float = 10 * MB,
    seed: int | None = None,
    k: int | None = None,
    beta: float = 0.0,
) -> Redistribution:
    """The paper's random patterns (section 4): ``n_messages`` messages between random
    senders and receivers, sizes uniform in ``[low, x]`` bytes (10 MB .. x MB in the paper).

    [I] The pairs are distinct (the paper keeps "the same number of communications").
    """
    if n1 < 1 or n2 < 1 or n_messages < 0:
        raise InputError("need n1, n2 >= 1 and n_messages >= 0", element="pattern")
    if not (0 <= low <= x):
        raise InputError(f"sizes must satisfy 0 <= low <= x, got low={low}, x={x}", element="pattern")
    if n_messages > n1 * n2:
        raise InputError(f"{n_messages} messages do not fit in {n1} x {n2} sender/receiver pairs", element="messages")
    rng = np.random.default_rng(seed)
    flat = np.zeros(n1 * n2, dtype=np.int64)
    pairs = rng.choice(n1 * n2, size=n_messages, replace=False)
    flat[pairs] = np.round(rng.uniform(low, x, n_messages)).astype(np.int64)
    return Redistribution(flat.reshape(n1, n2), _names("a", n1), _names("b", n2), k=k, beta=beta)


def dense_pattern(
    n1: int,
    n2: int,
    x: float = 80 * MB,
    *,
    low: float = 10 * MB,
    seed: int | None = None,
    k: int | None = None,
    beta: float = 0.0,
) -> Redistribution:
    """Every sender sends to every receiver, sizes uniform in ``[low, x]`` bytes."""
    rng = np.random.default_rng(seed)
    m = np.round(rng.uniform(low, x, (n1, n2))).astype(np.int64)
    return Redistribution(m, _names("a", n1), _names("b", n2), k=k, beta=beta)


def fig2_pattern(unit: int = 10 * MB, *, beta: float = 0.0, k: int = 2) -> Redistribution:
    """The paper's Fig. 2 (k = 2): 1->1' and 2->2' of weight 1, 3->3' of weight 2 (``unit`` bytes).

    [I] ``k > 2`` generalises it to a backbone of ``k`` NICs: ``k`` disjoint messages of
    weight 1 and one of weight 2 on ``k + 1`` pairs. Brute force shares the backbone among
    the ``k + 1`` flows (``k / (k + 1)`` each): the short ones end at ``(k + 1) / k``, the long
    one has 1 left, total ``2 + 1/k`` (2.5 for k = 2, 2.25 for k = 4); a schedule takes the
    long message and ``k - 1`` short ones, then the last short one beside the long one's
    second half: 2 = the lower bound ``W`` (for ``k >= 2``; with ``k = 1`` nothing is gained:
    both take 3).
    """
    if int(k) != k or k < 1:
        raise InputError(f"k must be a whole number >= 1, got {k!r}", element="k")
    k = int(k)
    m = np.diag([unit] * k + [2 * unit]).astype(np.int64)
    return Redistribution(m, _names_from("a", k + 1), _names_from("b", k + 1), k=k, beta=beta)


def _names_from(prefix: str, n: int) -> tuple[str, ...]:
    """``prefix1 .. prefixN`` (the paper numbers Fig. 2's hosts from 1)."""
    return tuple(f"{prefix}{i + 1}" for i in range(n))


# ---------------------------------------------------------------------------- platform
def two_cluster_topology(
    n1: int,
    n2: int,
    nic: float = 100e6 / 8,
    backbone: float | None = None,
    *,
    k: int | None = None,
    latency: float = 0.0,
    senders: Sequence[str] | None = None,
    receivers: Sequence[str] | None = None,
) -> Topology:
    """The paper's platform: cluster A (``n1`` hosts) on switch ``swA``, cluster B (``n2``
    hosts) on ``swB``, every NIC ``nic`` bytes/s, the switches joined by a backbone of
    ``backbone`` bytes/s (default ``k * nic``, with ``k = 5`` if neither is given)."""
    if backbone is None:
        backbone = (k if k is not None else 5) * nic
    senders = tuple(senders) if senders is not None else _names("a", n1)
    receivers = tuple(receivers) if receivers is not None else _names("b", n2)
    links = [PhysicalLink(h, "swA", nic, latency) for h in senders]
    links += [PhysicalLink(h, "swB", nic, latency) for h in receivers]
    links.append(PhysicalLink("swA", "swB", float(backbone), latency, name="backbone"))
    return Topology(f"two-cluster-{len(senders)}x{len(receivers)}", senders + receivers, ("swA", "swB"), links)


@dataclass(frozen=True)
class Platform:
    """What the KPBS model needs from a topology.

    ``nic``: uncontended speed of one transfer (bytes/s, the slowest sender->receiver route);
    ``ratio``: backbone capacity / nic (real); ``k``: whole number of transfers for schedules;
    ``backbone``: directed link ids shared by every sender->receiver route;
    ``send_nic`` / ``recv_nic``: each sender's first-link / receiver's last-link bandwidth
    (bytes/s; they differ from ``nic`` only on heterogeneous clusters).
    """

    nic: float
    ratio: float
    k: int
    backbone: tuple[int, ...]
    k_given: bool
    send_nic: tuple[float, ...] = ()
    recv_nic: tuple[float, ...] = ()

    @property
    def homogeneous(self) -> bool:
        return all(abs(x - self.nic) <= 1e-9 * self.nic for x in self.send_nic + self.recv_nic)


def resolve_platform(request: Redistribution, topology: Topology) -> Platform:
    """k and the NIC speed from the topology (``request.k`` wins over the topology's ratio)."""
    for what, names in (("senders", request.senders), ("receivers", request.receivers)):
        for h in names:
            topology.require_host(h, element=what)
    m = request.matrix
    pairs = [(request.senders[i], request.receivers[j]) for i, j in zip(*np.nonzero(m))]
    if not pairs:
        pairs = [(s, r) for s in request.senders for r in request.receivers]
    common: set[int] | None = None
    nic = math.inf
    for s, r in pairs:
        route = topology.route(s, r)
        nic = min(nic, topology.route_bandwidth(s, r))
        common = set(route) if common is None else common & set(route)
    # Links that every route crosses but that belong to one host only are NICs, not backbone:
    # a link is "backbone" when routes of at least two different senders and two different
    # receivers share it.
    senders_of: dict[int, set[str]] = {}
    receivers_of: dict[int, set[str]] = {}
    for s, r in pairs:
        for lid in topology.route(s, r):
            senders_of.setdefault(lid, set()).add(s)
            receivers_of.setdefault(lid, set()).add(r)
    backbone = tuple(sorted(l for l in (common or ()) if len(senders_of[l]) > 1 and len(receivers_of[l]) > 1))
    if backbone:
        bb = float(min(topology.link_bandwidth[l] for l in backbone))
        ratio = bb / nic
    else:  # no shared link: only the 1-port constraint limits concurrency
        ratio = float(max(len(request.senders), len(request.receivers)))
    # per-host NIC: the first (sender) / last (receiver) link of its routes
    send_min = [math.inf] * len(request.senders)
    recv_min = [math.inf] * len(request.receivers)
    si = {h: i for i, h in enumerate(request.senders)}
    ri = {h: j for j, h in enumerate(request.receivers)}
    for s, r in pairs:
        route = topology.route(s, r)
        send_min[si[s]] = min(send_min[si[s]], float(topology.link_bandwidth[route[0]]))
        recv_min[ri[r]] = min(recv_min[ri[r]], float(topology.link_bandwidth[route[-1]]))
    send_nic = tuple(nic if math.isinf(x) else x for x in send_min)
    recv_nic = tuple(nic if math.isinf(x) else x for x in recv_min)
    if request.k is not None:
        return Platform(
            nic=float(nic),
            ratio=float(request.k),
            k=request.k,
            backbone=backbone,
            k_given=True,
            send_nic=send_nic,
            recv_nic=recv_nic,
        )
    k = max(1, int(math.floor(ratio + 1e-9)))
    return Platform(
        nic=float(nic), ratio=float(ratio), k=k, backbone=backbone, k_given=False, send_nic=send_nic, recv_nic=recv_nic
    )
