"""What changed in the network, from transfers that run slower than predicted.

Input: the transfers running now, each with its route (directed link ids), its predicted
rate, its measured rate (bytes/s over the same recent window) and whether it is limited by
its own path (``self_limited``: a pipelined transfer whose sender holds hardly any byte
ahead of what it sent is held back by its upstream, and says nothing about its own links).
Output: the links that explain the slow transfers, each with an estimated capacity and a
confidence in [0, 1].

Method (network tomography by set cover, as in binary loss tomography: Duffield,
"Network Tomography of Binary Network Performance Characteristics", IEEE Trans. Inf.
Theory 2006 — the smallest set of links whose degradation explains every slow path, with
paths that run well clearing their links):

1. a transfer is *slow* when it is self-limited and measured < ``slow`` x predicted, and
   *healthy* when it is self-limited and measured >= ``healthy`` x predicted;
2. every link on a slow route is a candidate; its score is the number of slow routes through
   it minus the number of healthy routes through it (a link that carries a transfer at its
   predicted rate is unlikely to be the one that dropped);
3. greedily take the best-scoring link (ties: the one whose predicted load is the largest
   fraction of its capacity, the plan's busiest), mark its slow routes explained, repeat
   until every slow route is explained or no candidate has a positive score;
4. a chosen link is saturated by the transfers crossing it: its capacity is estimated as the
   sum of their measured rates. Confidence: the share of its self-limited transfers that are
   slow. Links that every explained route crosses alike cannot be told apart from these
   transfers (a targeted probe could): they are listed as ``tied``, and the plan's busiest
   of them is chosen.

The probe (``topocast probe``) can use the same function for links it measured through
several paths.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["Observation", "LinkEstimate", "estimate_links", "SLOW", "HEALTHY"]

SLOW = 0.5  # measured below this fraction of the prediction: slow
HEALTHY = 0.8  # at least this fraction: healthy


@dataclass(frozen=True)
class Observation:
    route: tuple[int, ...]  # directed link ids
    predicted: float  # bytes/s
    measured: float  # bytes/s, over the recent window
    self_limited: bool = True


@dataclass(frozen=True)
class LinkEstimate:
    link: int  # directed link id
    capacity: float  # bytes/s
    confidence: float  # 0..1
    explains: tuple[int, ...]  # indices of the slow observations it explains
    tied: tuple[int, ...] = ()  # other links that explain exactly the same observations


def estimate_links(
    observations: Sequence[Observation],
    capacity: Mapping[int, float],
    *,
    slow: float = SLOW,
    healthy: float = HEALTHY,
) -> list[LinkEstimate]:
    """The links that explain the slow observations (see the module); ``capacity``: every
    link's capacity as the topology says (bytes/s), for ties and to never estimate above it."""
    obs = list(observations)
    is_slow = [o.self_limited and o.measured < slow * o.predicted for o in obs]
    is_healthy = [o.self_limited and o.measured >= healthy * o.predicted for o in obs]
    through: dict[int, list[int]] = {}
    for i, o in enumerate(obs):
        for link in o.route:
            through.setdefault(link, []).append(i)
    load = {
        link: sum(obs[i].predicted for i in idx) / max(capacity.get(link, 1.0), 1e-9) for link, idx in through.items()
    }
    left = {i for i, s in enumerate(is_slow) if s}
    out: list[LinkEstimate] = []
    while left:
        scores = {}
        for link in {lk for i in left for lk in obs[i].route}:
            bad = [i for i in through[link] if i in left]
            good = [i for i in through[link] if is_healthy[i]]
            scores[link] = (len(bad) - len(good), load[link])
        best = max(scores, key=lambda lk: scores[lk])
        if scores[best][0] <= 0:
            break
        explained = tuple(sorted(i for i in through[best] if i in left))
        tied = tuple(
            lk
            for lk, sc in scores.items()
            if lk != best and sc[0] == scores[best][0] and {i for i in through[lk] if i in left} == set(explained)
        )
        crossing = through[best]
        measured = sum(obs[i].measured for i in crossing)
        if measured <= 0:  # nothing crosses it now: a stall, not a rate, and nothing to estimate from
            left -= set(explained)
            continue
        own = [i for i in crossing if obs[i].self_limited]
        share = sum(1 for i in own if is_slow[i]) / len(own) if own else 0.0
        out.append(
            LinkEstimate(
                best,
                min(measured, capacity.get(best, measured)),
                share,
                explained,
                tied,
            )
        )
        left -= set(explained)
    return out
