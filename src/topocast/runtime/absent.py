"""Going on without the hosts that never came.

An agent that fails before the start (it did not start, did not connect, or failed while
setting up) is reported with its cause, and the run goes on with the hosts that are there,
as Kascade does for the nodes of its pipeline that do not answer: the plan is made again for
them. Two ways:

* ``replan(missing)``: the caller's planner, run again for the destinations that are there
  (``topocast run`` does this when it planned the run itself, or when the plan file names a
  registered planner and the topology is known);
* otherwise :func:`without_hosts`: the plan with the missing hosts spliced out — every
  transfer out of a missing host is sent instead by the hosts that were to send those bytes
  to it (recursively, through missing hosts in a row), keeping its order of ranges, its
  pipelining and its rate cap. Bytes that only a missing host holds at the start cannot be
  moved: that is an error that names it.

``all_or_nothing`` (``--all-or-nothing``) keeps the old behaviour: a missing host stops the
run before any byte moves.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence

from ..intervals import IntervalSet
from ..plan import Plan, Transfer
from .agents import RunError

__all__ = ["without_hosts", "plan_without", "go_without", "fail_unheld", "Replan"]

Replan = Callable[[frozenset[str]], Plan]


def _overlap(ranges: Sequence[tuple[int, int]], other: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """The parts of ``ranges`` (in their order) that ``other`` covers."""
    return IntervalSet(other).covered_parts(ranges)


def without_hosts(plan: Plan, missing: frozenset[str]) -> Plan:
    """``plan`` with the hosts ``missing`` spliced out (see the module)."""
    _check_holders(plan, missing)
    into: dict[str, list[int]] = {}
    for i, t in enumerate(plan.transfers):
        into.setdefault(t.dst, []).append(i)
    spliced: list[tuple[int, Transfer]] = []  # (old index it stands for, new transfer)
    for i, t in enumerate(plan.transfers):
        if t.dst in missing:
            continue
        for src, ranges in _senders(plan, into, missing, t.src, list(t.ranges), depth=0):
            if src != t.dst:
                spliced.append(
                    (i, Transfer(src, t.dst, tuple(ranges), t.pipelined, None, t.after, t.rate_cap, label=t.label))
                )
    new_index: dict[int, list[int]] = {}
    for j, (i, _) in enumerate(spliced):
        new_index.setdefault(i, []).append(j)
    transfers = [
        dataclasses.replace(t, after=tuple(sorted({j for a in t.after for j in new_index.get(a, ())})))
        for _, t in spliced
    ]
    return dataclasses.replace(
        plan,
        transfers=tuple(transfers),
        initial={h: r for h, r in plan.initial.items() if h not in missing},
        wanted={h: r for h, r in plan.wanted.items() if h not in missing},
        notes={**plan.notes, "without": sorted(missing)},
    )


def _check_holders(plan: Plan, missing: frozenset[str]) -> None:
    """Bytes a host that is there wants but only missing hosts hold at the start: an error."""
    there = IntervalSet(r for h, rs in plan.initial.items() if h not in missing for r in rs)
    for h, rs in plan.wanted.items():
        if h in missing:
            continue
        for off, length in rs:
            lost = there.missing(off, off + length)
            if lost:
                who = sorted(m for m in missing if plan.initial.get(m))
                raise RunError(
                    f"{', '.join(who)} did not come and alone held bytes [{lost[0][0]}, {lost[0][1]}) of the "
                    f"message that {h} wants: no host that is there can send them"
                )


def _senders(plan: Plan, into: dict, missing: frozenset[str], src: str, ranges: list, depth: int) -> list:
    """Who sends ``ranges`` in place of ``src``: ``[(host, ranges), ...]``, each host's ranges
    in the order the transfer had them."""
    if src not in missing:
        return [(src, ranges)] if ranges else []
    if depth > len(plan.hosts):
        raise RunError(f"the plan moves bytes in a cycle through missing hosts ({src})")
    by_host: dict[str, list] = {}
    for rng in ranges:
        left = [rng]
        for i in into.get(src, ()):
            u = plan.transfers[i]
            part = _overlap(left, u.ranges)
            if part:
                for host, got in _senders(plan, into, missing, u.src, part, depth + 1):
                    by_host.setdefault(host, []).extend(got)
                left = _overlap(left, _complement(u.ranges, plan.size))
    return list(by_host.items())


def _complement(ranges, size: int) -> list[tuple[int, int]]:
    return [(s, e - s) for s, e in IntervalSet(ranges).missing(0, size)]


def plan_without(plan: Plan, missing: frozenset[str], replan: Replan | None) -> tuple[Plan, str]:
    """The plan for the hosts that are there, and how it was made (for the report)."""
    if replan is not None:
        new = replan(missing)
        bad = sorted(set(new.hosts) & missing)
        same = all(tuple(new.wanted.get(h, ())) == tuple(r) for h, r in plan.wanted.items() if h not in missing)
        if not bad and same and set(new.wanted) == set(plan.wanted) - missing:
            return new, f"planned again ({new.planner or 'plan'}) for the {len(new.wanted)} destinations that are there"
    return without_hosts(
        plan, missing
    ), "the plan with the missing hosts spliced out (their senders send in their place)"


def go_without(asked: Plan, absent: dict, replan, warnings: list, pacing_of):
    """The plan for the hosts that are there, its hosts and pacing (``pacing_of(plan)``); the
    warnings say which hosts never came and how the plan was made."""
    why = "; ".join(f"agent for {h} {r}" for h, r in sorted(absent.items()))
    if not set(asked.wanted) - set(absent):
        raise RunError(f"no destination's agent came ({why})")
    try:
        plan, how = plan_without(asked, frozenset(absent), replan)
    except RunError as exc:  # the hosts that are there cannot complete: say why the others are missing
        raise RunError(f"{exc} ({why})") from None
    for h, why in absent.items():
        warnings.append(f"{h} never came (its agent {why}); the run goes on without it")
    warnings.append(f"without {', '.join(sorted(absent))}: {how}")
    return plan, list(plan.hosts), pacing_of(plan)


def fail_unheld(plan: Plan) -> Callable[[dict], None]:
    """A check for ``connect_agents``: once the absent hosts were the only ones to hold some
    bytes at the start, no destination can get them, and the run stops at once."""

    def check(absent: dict) -> None:
        held = IntervalSet()
        for h, ranges in plan.initial.items():
            if h not in absent:
                held.add_ranges(ranges)
        unheld = [
            h for h, ranges in plan.wanted.items() if h not in absent and any(held.missing(o, o + n) for o, n in ranges)
        ]
        if unheld:
            why = "; ".join(f"agent for {h} {r}" for h, r in sorted(absent.items()))
            raise RunError(f"no host that came holds the bytes {', '.join(sorted(unheld))} want ({why})")

    return check
