"""``check_allreduce``: contribution tracking for allreduce plans.

Every host starts with its own contribution to the bytes it holds (``plan.initial``) and must
end with the reduction of **all** hosts' contributions for every byte it wants. We replay the
plan and track, per host and elementary byte range, the *set* of contributions its value
contains:

* a ``reduce=True`` transfer adds the sender's set to the receiver's (the two sets must be
  disjoint: counting a contribution twice is an error);
* a plain transfer copies: the receiver's set becomes the sender's.

Timing semantics (the contract the planners and the simulator share): a transfer *reads* its
sender's value when the transfers in its ``after`` list (and its ``upstream``) have completed,
and *writes* into its receiver when it completes. Allreduce planners order everything with
``after``; we therefore replay in a topological order of the dependencies and require the
plan to be free of races, which makes the result independent of timing:

* a transfer ``j`` into host ``s`` that is not an ancestor of a transfer ``i`` out of ``s``
  over the same bytes must not be able to complete before ``i`` starts, i.e. every ``after``
  predecessor of ``i`` must also be an ancestor of ``j`` (an exchange ``a <-> b`` whose two
  halves wait for the same predecessors is fine);
* two writers of the same host bytes that are not ordered by the dependencies must both be
  reductions (they commute); a copy must be ordered with every other writer.

(Caveat: with an injection time Δ a sender may start a transfer later than its ``after``
predecessors complete; the race rule assumes it does not.)
"""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import PlanError
from .graph import predecessors, topological_order
from .model import Plan
from .transfer import Ranges

if TYPE_CHECKING:
    from ..topology import Topology

#: (host, index of an elementary byte segment); the values kept per key are bit masks over
#: ``plan.hosts`` (bit k set: host k's contribution is in the host's value of those bytes).
_Segment = tuple[str, int]

__all__ = ["check_allreduce", "contribution_sets"]


def _fail(plan: Plan, i: int | None, msg: str) -> PlanError:
    if i is None:
        return PlanError(msg, source=f"plan of {plan.planner or 'unnamed planner'}")
    t = plan.transfers[i]
    return PlanError(
        msg, source=f"plan of {plan.planner or 'unnamed planner'}", element=f"transfers[{i}] ({t.src}->{t.dst})"
    )


def _topo_order(preds: Sequence[Sequence[int]], plan: Plan) -> list[int]:
    return topological_order(preds, lambda i, msg: _fail(plan, i, msg))


def contribution_sets(plan: Plan, topology: Topology | None = None) -> dict[str, list[tuple[int, int, frozenset[str]]]]:
    """Replay ``plan`` and return, per host, ``(start, end, contributors)`` for every
    elementary byte range it holds at the end. Raises :class:`PlanError` on a race, a
    double-counted contribution or a transfer of bytes its sender never had."""
    cuts, hosts, final, _ = _replay(plan)
    out: dict[str, list[tuple[int, int, frozenset[str]]]] = {h: [] for h in hosts}
    for (h, g), v in sorted(final.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        out[h].append((cuts[g], cuts[g + 1], frozenset(hosts[k] for k in range(len(hosts)) if v >> k & 1)))
    for h in out:
        out[h].sort()
    return out


def _replay(plan: Plan) -> tuple[list[int], list[str], dict[_Segment, int], dict[_Segment, int]]:
    """(cuts, hosts, final value mask per (host, segment), initial mask per (host, segment))."""
    transfers = plan.transfers
    n = len(transfers)
    hosts = list(plan.hosts)
    hidx = {h: k for k, h in enumerate(hosts)}

    # elementary segments
    cut_set = {0, plan.size}
    for rs in list(plan.initial.values()) + list(plan.wanted.values()) + [t.ranges for t in transfers]:
        for off, length in rs:
            cut_set.add(off)
            cut_set.add(off + length)
    cuts = sorted(cut_set)

    def segs(ranges: Ranges) -> list[int]:
        out: list[int] = []
        for off, length in ranges:
            a, b = bisect_left(cuts, off), bisect_left(cuts, off + length)
            out.extend(range(a, b))
        return out

    preds = predecessors(plan)
    order = _topo_order(preds, plan)
    anc = [0] * n
    for i in order:
        m = 0
        for a in preds[i]:
            m |= anc[a] | (1 << a)
        anc[i] = m
    pred_bits = [sum(1 << a for a in set(p)) for p in preds]

    t_segs = [segs(t.ranges) for t in transfers]
    writers: dict[_Segment, list[int]] = defaultdict(list)  # in topological order
    for i in order:
        for g in t_segs[i]:
            writers[(transfers[i].dst, g)].append(i)

    # races between writers of the same host bytes
    for (h, g), ws in writers.items():
        if len(ws) < 2:
            continue
        for x in range(len(ws)):
            for y in range(x + 1, len(ws)):
                j1, j2 = ws[x], ws[y]
                ordered = (anc[j2] >> j1) & 1
                if not ordered and not (transfers[j1].reduce and transfers[j2].reduce):
                    raise _fail(
                        plan,
                        j2,
                        f"races with transfers[{j1}] writing bytes [{cuts[g]}, {cuts[g + 1]}) of {h!r} (order them with 'after')",
                    )

    # initial values: bitmask of contributors, None = host does not hold the bytes
    init: dict[_Segment, int] = {}
    for h, rs in plan.initial.items():
        for g in segs(rs):
            init[(h, g)] = 1 << hidx[h]
    history: dict[_Segment, list[int]] = defaultdict(list)  # states after each writer

    def state_before(i: int, h: str, g: int) -> int | None:
        ws = writers.get((h, g), ())
        hist = history[(h, g)]
        m = 0
        for j in ws:
            if (anc[i] >> j) & 1:
                m += 1
            else:
                # race rule: j must not complete before i starts
                if pred_bits[i] & ~anc[j]:
                    raise _fail(
                        plan,
                        i,
                        f"reads bytes [{cuts[g]}, {cuts[g + 1]}) of {h!r} while transfers[{j}] may or may not "
                        f"have written them (make the two wait for the same predecessors, or order them)",
                    )
        # ancestors are the first m writers (guaranteed by the race rule)
        if m == 0:
            return init.get((h, g))
        return hist[m - 1]

    carried: list[dict[int, int]] = [dict() for _ in range(n)]
    for i in order:
        t = transfers[i]
        vals: dict[int, int] = {}
        for g in t_segs[i]:
            v = state_before(i, t.src, g)
            if v is None:
                raise _fail(plan, i, f"host {t.src!r} sends bytes [{cuts[g]}, {cuts[g + 1]}) it never holds")
            vals[g] = v
        carried[i] = vals
        for g, v in vals.items():
            key = (t.dst, g)
            hist = history[key]
            prev = hist[-1] if hist else init.get(key)
            if t.reduce:
                if prev is not None and prev & v:
                    dup = [hosts[k] for k in range(len(hosts)) if (prev & v) >> k & 1]
                    raise _fail(
                        plan,
                        i,
                        f"counts the contributions of {', '.join(dup)} twice in bytes [{cuts[g]}, {cuts[g + 1]}) at {t.dst!r}",
                    )
                hist.append((prev or 0) | v)
            else:
                hist.append(v)

    final: dict[_Segment, int] = {}
    for key, v in init.items():
        final[key] = v
    for key, hist in history.items():
        if hist:
            final[key] = hist[-1]
    return cuts, hosts, final, init


def check_allreduce(plan: Plan, topology: Topology | None = None) -> None:
    """Raise :class:`PlanError` unless every wanted byte of every host ends as the reduction
    of all contributions to it (see module docstring)."""
    cuts, hosts, final, init = _replay(plan)
    expect: dict[int, int] = {}  # contributors per segment: the hosts holding it at the start
    for (_, g), mask in init.items():
        expect[g] = expect.get(g, 0) | mask
    for h, rs in plan.wanted.items():
        for off, length in rs:
            a, b = bisect_left(cuts, off), bisect_left(cuts, off + length)
            for g in range(a, b):
                v = final.get((h, g))
                if v is None:
                    raise _fail(plan, None, f"host {h!r} does not hold bytes [{cuts[g]}, {cuts[g + 1]})")
                want = expect.get(g, 0)
                if v != want:
                    missing = [hosts[k] for k in range(len(hosts)) if (want & ~v) >> k & 1]
                    extra = [hosts[k] for k in range(len(hosts)) if (v & ~want) >> k & 1]
                    raise _fail(
                        plan,
                        None,
                        f"host {h!r} ends bytes [{cuts[g]}, {cuts[g + 1]}) without the contributions of "
                        f"{', '.join(missing) or '-'}" + (f" (unexpected: {', '.join(extra)})" if extra else ""),
                    )
