"""Check a topology file against the network (``topocast probe --verify``, and the check
``run --probe`` makes after probing).

1. **Run a few seconds of a plan**: a ``stable`` broadcast from one host, sized to last
   about twice as long as the check, performed by the agents with the adaptive run's watch
   in verifying mode (``runtime.adapt.Adapter(verify=True)``): every transfer's measured
   rate is compared with its prediction on the file's network; a transfer below
   ``DISAGREE`` x its prediction for ``SUSTAIN`` seconds makes the watch estimate which link
   explains it (``runtime.estimate``: set cover over the running transfers' routes, and a
   targeted probe through the running agents when several links explain it alike). The
   plan is never changed; the run is stopped after ``seconds``.
2. **Measure again there**: every link the watch named, or found tied with one it named,
   is measured alone once the plan stopped: one timed transfer between two hosts whose
   route crosses it and no other suspect where possible, and whose other links the file
   rates highest (so that link, if any, is the narrowest). A link measured
   below ``AGREE`` x what the file says gets the measured rate (divided by the goodput
   factor); one measured at it keeps the file's rate (the slowness came from elsewhere,
   or passed).
3. **The file**: the corrected network, with what was compared and corrected in its
   ``measured:`` section (``verified``).

What it cannot correct: a wrong switch tree (it corrects rates, not structure; a link the
file lacks shows as its neighbours' rates dropping), and links no transfer of the plan
crosses.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from ..plan import Broadcast, Plan
from ..runtime.adapt import Adapter, with_link_rates
from ..topology.io import measured_notes
from ..topology.model import Topology

__all__ = [
    "verify_plan",
    "watcher",
    "suspect_links",
    "remeasure",
    "compared",
    "record",
    "verify_network",
    "DISAGREE",
    "AGREE",
    "SECONDS",
]

SECONDS = 4.0  # s of the plan that run
DISAGREE = 0.8  # a transfer below this fraction of its prediction disagrees
SUSTAIN = 1.0  # s it must stay so before the watch looks for the link
AGREE = 0.9  # a link measured alone at this fraction of the file's rate or more keeps it
MIN_SIZE, MAX_SIZE = 8 << 20, 256 << 20  # the message's size bounds (memory: every receiver holds it)
REMEASURE_SECONDS = 1.0  # s a re-measurement lasts at most

Bulk = Callable[[list, float], list]  # (flows (src, dst), longest duration) -> rates in bytes/s


def verify_plan(topology: Topology, source: str, seconds: float, goodput: float = 1.0) -> Plan:
    """A ``stable`` broadcast from ``source`` to every other host, sized so that the file's
    network takes about ``2 x seconds`` for it (within ``MIN_SIZE`` .. ``MAX_SIZE``)."""
    from ..planners import get_planner
    from ..sim import simulate

    info = get_planner("broadcast", "stable")
    probe_size = 64 << 20
    plan = info(topology, Broadcast(source, probe_size))
    makespan = simulate(plan, topology).makespan / max(goodput, 1e-9)
    size = int(probe_size * 2 * seconds / makespan) if makespan > 0 and math.isfinite(makespan) else MIN_SIZE
    size = max(MIN_SIZE, min(MAX_SIZE, size)) // (64 << 10) * (64 << 10)
    return info(topology, Broadcast(source, size))


def watcher(plan: Plan, topology: Topology, goodput: float, chunk: int, probe: bool = True) -> Adapter:
    """The run's watch: compares, estimates, probes the tied suspects, never re-plans."""
    return Adapter(plan, topology, None, goodput, chunk, probe, verify=True, slow=DISAGREE, sustain=SUSTAIN)


def suspect_links(watched: Adapter) -> dict[int, float]:
    """The directed links the watch named or found tied with one it named: link id -> its
    estimate (bytes/s)."""
    return dict(watched.suspected)


def _pair_crossing(topology: Topology, link: int, avoid: set[int]) -> tuple[str, str] | None:
    """Two hosts whose route crosses ``link``, if possible none of ``avoid`` (the other
    suspects), and whose other links the file rates highest (fewest hops on a tie)."""
    best, key = None, None
    for a in topology.hosts:
        for b in topology.hosts:
            if a == b:
                continue
            route = topology.route(a, b)
            if link not in route:
                continue
            others = min((topology.links[x].bandwidth for x in route if x != link), default=math.inf)
            k = (not avoid & set(route), others, -len(route))
            if key is None or k > key:
                best, key = (a, b), k
    return best


def remeasure(
    topology: Topology, suspects: Mapping[int, float], bulk: Bulk, goodput: float
) -> tuple[Topology, list[dict]]:
    """Step 2 (module): each suspect measured alone; the corrected network and one entry per
    suspect (what was measured, what the file said, whether it was corrected)."""
    rates: dict[int, float] = {}
    entries = []
    for lk in sorted(suspects):
        link = topology.links[lk]
        entry: dict = {
            "link": f"{link.src}->{link.dst}",
            "file_bit_s": _bits(link.bandwidth),
            "estimated_in_run_bit_s": _bits(suspects[lk]),
        }
        pair = _pair_crossing(topology, lk, set(suspects) - {lk})
        if pair is None:
            entry["outcome"] = "no two hosts' route crosses it: not measured, kept"
            entries.append(entry)
            continue
        (rate,) = bulk([pair], REMEASURE_SECONDS)
        entry.update(pair=f"{pair[0]}->{pair[1]}", measured_bit_s=_bits(rate))
        route = topology.route(*pair)
        narrowest = min(topology.links[x].bandwidth for x in route) * goodput
        if rate < AGREE * narrowest:
            rates[lk] = rate / goodput
            entry["corrected_bit_s"] = _bits(rate / goodput)
            entry["outcome"] = "corrected"
        else:
            entry["outcome"] = "measured at the file's rate: kept"
        entries.append(entry)
    return (with_link_rates(topology, rates) if rates else topology), entries


def _bits(x: float) -> float:
    return float(f"{x * 8:.4g}")


def compared(watched: Adapter) -> dict:
    """How the plan's transfers ran against their predictions on the file's network: how
    many were compared (self-limited at some look), how many ran below ``DISAGREE`` x their
    prediction at some look, how many above it at the latest, the lowest ratio seen."""
    fast = [o for o in watched.observed.values() if o.self_limited and o.measured > o.predicted / DISAGREE]
    return {
        "transfers_compared": len(watched.lowest),
        "slower_than_predicted": sum(1 for r in watched.lowest.values() if r < DISAGREE),
        "faster_than_predicted": len(fast),
        "worst_ratio": round(min(watched.lowest.values(), default=1.0), 3),
    }


def record(topology: Topology, summary: dict) -> Topology:
    """``topology`` with ``summary`` in its ``measured:`` section (``verified``)."""
    measured = dict(topology.measured or {})
    measured["verified"] = summary
    return topology.replace(measured=measured, notes=measured_notes(measured))


def verify_network(
    topology: Topology,
    source: str,
    launcher,
    new_launcher: Callable[[], object],
    *,
    seconds: float = SECONDS,
    goodput: float = 1.0,
    fair_uplink: bool = False,
    chunk: int = 64 << 10,
) -> tuple[Topology, dict]:
    """Steps 1-3 (module) on the hosts ``launcher`` starts (``new_launcher()``: another
    one, for the re-measurement after the plan's agents stopped). Returns the corrected
    network (with ``measured: verified``) and the summary written there."""
    from ..runtime import perform
    from .session import ProbeSession

    plan = verify_plan(topology, source, seconds, goodput).with_chunk_size(chunk)
    watched = watcher(plan, topology, goodput, chunk)
    outcome = perform(
        plan,
        topology,
        launcher=launcher,
        adapt=watched,
        timeout=seconds,
        goodput=goodput,
        fair_uplink=fair_uplink,
        chunk_size=chunk,
        idle_timeout=max(10.0, 2 * seconds),
    )
    suspects = suspect_links(watched)
    summary: dict = {
        "seconds": round(min(outcome.wall, seconds), 2),
        "plan": f"stable broadcast from {source}, {plan.size} bytes",
        **compared(watched),
        "decisions": [_decision(r) for r in watched.reports],
    }
    corrected, entries = topology, list[dict]()
    if suspects:
        with ProbeSession(list(topology.hosts), new_launcher()) as session:
            corrected, entries = remeasure(topology, suspects, session.bulk, goodput)
    summary["links"] = entries
    return record(corrected, summary), summary


def _decision(report: dict) -> dict:
    """The part of a watch's report the file keeps."""
    keep = ("time", "why", "changed", "probe", "outcome")
    return {k: report[k] for k in keep if k in report}
