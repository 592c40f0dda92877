"""How a plan's transfers depend on each other: the upstream of a pipelined transfer, and an
order in which every transfer comes after the ones it waits for (Kahn's algorithm).

Shared by the plan checks (``check``, ``check_allreduce``) and the simulator, so that a
dependency means the same thing, and a cycle is reported in the same words, everywhere.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence

from .intervals import IntervalSet
from .plan import Plan, Ranges

__all__ = ["contiguous_offset", "find_upstream", "topological_order"]


def contiguous_offset(outer: Ranges, inner: Ranges) -> int | None:
    """Position in the flattened byte sequence ``outer`` where ``inner`` starts as a
    contiguous run, or ``None`` when it does not occur."""
    if outer == inner:
        return 0
    if not inner:
        return 0
    first_off, first_len = inner[0]
    pos = 0
    for k, (off, length) in enumerate(outer):
        if off <= first_off < off + length:
            start = pos + (first_off - off)
            # walk both sequences byte-run by byte-run
            i, j = k, 0
            o_off, o_len = first_off, off + length - first_off
            i_off, i_len = inner[0]
            while True:
                if o_off != i_off:
                    break
                step = min(o_len, i_len)
                o_off += step
                o_len -= step
                i_off += step
                i_len -= step
                if i_len == 0:
                    j += 1
                    if j == len(inner):
                        return start
                    i_off, i_len = inner[j]
                if o_len == 0:
                    i += 1
                    if i == len(outer):
                        break
                    o_off, o_len = outer[i]
        pos += length
    return None


def find_upstream(plan: Plan, index: int, incoming: dict | None = None) -> tuple[int | None, int]:
    """The upstream of pipelined transfer ``index`` and our offset in its sequence.

    Returns ``(None, 0)`` when the sender holds the bytes from the start (or no transfer into
    the sender carries them, which ``check_plan`` reports).
    """
    t = plan.transfers[index]
    if t.upstream is not None:
        up = plan.transfers[t.upstream]
        off = contiguous_offset(up.ranges, t.ranges)
        return t.upstream, (0 if off is None else off)
    held = plan.initial.get(t.src)
    if held:
        s = IntervalSet(held)
        if s.covers_ranges(t.ranges):
            return None, 0
    candidates = (
        incoming[t.src] if incoming is not None else [i for i, u in enumerate(plan.transfers) if u.dst == t.src]
    )
    for i in candidates:
        if i == index:
            continue
        off = contiguous_offset(plan.transfers[i].ranges, t.ranges)
        if off is not None:
            return i, off
    return None, 0


def topological_order(preds: Sequence[Sequence[int]], fail: Callable[[int, str], Exception]) -> list[int]:
    """Transfers in an order that puts each after its predecessors (``preds[i]``: the indices
    transfer ``i`` waits for). A cycle raises ``fail(i, message)`` for a transfer on it."""
    n = len(preds)
    indeg = [0] * n
    succ: list[list[int]] = [[] for _ in range(n)]
    for i, p in enumerate(preds):
        for a in set(p):
            succ[a].append(i)
            indeg[i] += 1
    queue = deque(i for i in range(n) if indeg[i] == 0)
    order = []
    while queue:
        i = queue.popleft()
        order.append(i)
        for j in succ[i]:
            indeg[j] -= 1
            if indeg[j] == 0:
                queue.append(j)
    if len(order) != n:
        stuck = next(i for i in range(n) if indeg[i] > 0)
        raise fail(stuck, "dependency cycle through 'after'/'upstream'")
    return order
