"""OptorSim grid descriptions (``.conf``): a bandwidth matrix with per-site CE/SE counts.

Format (reconstructed from the OptorSim distribution's example files; docs/topology.md)::

    #0)WC_Gla                  optional name lines "#i)name"
    ...
    nCE nSE [SEsize] bw_0 ... bw_{n-1}     one row per node, n rows

``SEsize`` is present only when ``nSE > 0``, so router rows have 2 leading numbers and site
rows 3. ``bw_j`` is the bandwidth from node i to node j in **Mbit/s**; 0 means no link.

Mapping: nodes with a computing element or a storage element (``nCE + nSE > 0``) are hosts,
the others switches (routers). Unnamed nodes are called ``n<i>``. Each pair with a non-zero
entry becomes one link with ``bandwidth`` = entry (i, j) and ``bandwidth_ba`` = entry (j, i)
when they differ; when only one of the two entries is non-zero (a one-way entry), we use it in
both directions, because a link in the model carries both directions [our reading]. CE/SE
counts and the SE size (unit not documented) are kept in ``attrs`` (``ce``, ``se``,
``se_size``). There is no latency in the format (0 s).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..errors import TopologyError
from .model import PhysicalLink, Topology

__all__ = ["load_optorsim"]

MBIT = 125_000  # bytes/s per Mbit/s


def _number(tok: str, source: str, where: str) -> float:
    try:
        v = float(tok)
    except ValueError:
        raise TopologyError(f"expected a number, got {tok!r}", source=source, element=where) from None
    if v < 0 or v != v:
        raise TopologyError(f"expected a number >= 0, got {tok!r}", source=source, element=where)
    return v


def load_optorsim(path: str | os.PathLike[str]) -> Topology:
    """Read an OptorSim ``.conf`` grid (see the module docstring)."""
    source = str(path)
    try:
        text = Path(source).read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        raise TopologyError("no such file", source=source) from None
    except OSError as exc:
        raise TopologyError(f"cannot read the file ({exc})", source=source) from None
    names: dict[int, str] = {}
    rows: list[tuple[int, list[str]]] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s:
            continue
        if s.startswith("#"):
            m = re.fullmatch(r"#\s*(\d+)\)\s*(.+)", s)
            if m:
                names[int(m.group(1))] = m.group(2).strip()
            continue
        rows.append((lineno, s.split()))
    n = len(rows)
    if n == 0:
        raise TopologyError("no matrix rows (expected 'nCE nSE [SEsize] bw_0 ... bw_{n-1}' per node)", source=source)
    bw = [[0.0] * n for _ in range(n)]
    info = []
    for i, (lineno, toks) in enumerate(rows):
        where = f"line {lineno} (node {i})"
        if len(toks) < 2:
            raise TopologyError("expected 'nCE nSE [SEsize] bw_0 ...'", source=source, element=where)
        n_ce = _number(toks[0], source, f"{where}: nCE")
        n_se = _number(toks[1], source, f"{where}: nSE")
        lead = 3 if n_se > 0 else 2
        if len(toks) != lead + n:
            raise TopologyError(
                f"expected {lead} leading numbers and {n} bandwidths (one per row of the matrix), got {len(toks)} numbers",
                source=source,
                element=where,
            )
        se_size = _number(toks[2], source, f"{where}: SEsize") if lead == 3 else None
        for j, tok in enumerate(toks[lead:]):
            bw[i][j] = _number(tok, source, f"{where}: bw_{j}")
        if bw[i][i]:
            raise TopologyError("a node cannot link to itself (non-zero diagonal entry)", source=source, element=where)
        info.append((n_ce, n_se, se_size))
    node_names = []
    seen = set()
    for i in range(n):
        nm = names.get(i, f"n{i}")
        base, k = nm, 2
        while nm in seen:
            nm = f"{base}-{k}"
            k += 1
        seen.add(nm)
        node_names.append(nm)
    hosts = [node_names[i] for i in range(n) if info[i][0] + info[i][1] > 0]
    switches = [node_names[i] for i in range(n) if info[i][0] + info[i][1] == 0]
    links = []
    for i in range(n):
        for j in range(i + 1, n):
            f, b = bw[i][j], bw[j][i]
            if not f and not b:
                continue
            f = f or b
            b = b or f
            links.append(PhysicalLink(node_names[i], node_names[j], f * MBIT, 0.0, b * MBIT if b != f else None))
    attrs: dict[str, dict[str, int | float]] = {}
    for i in range(n):
        n_ce, n_se, se_size = info[i]
        a: dict[str, int | float] = {"index": i}
        if n_ce + n_se > 0:
            a.update(ce=int(n_ce), se=int(n_se))
            if se_size is not None:
                a["se_size"] = se_size
        attrs[node_names[i]] = a
    if not hosts:
        raise TopologyError("no site has a CE or SE (no host)", source=source)
    return Topology(Path(source).stem, hosts, switches, links, attrs=attrs, source=source)
