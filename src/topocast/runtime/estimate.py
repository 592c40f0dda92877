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
   it minus the number of healthy routes through it when the link carries, in all, what was
   predicted for it (a link that carries its predicted load is unlikely to be the one that
   dropped; one that carries less may have dropped while a slow transfer through it still
   runs at its small predicted share);
3. greedily take the best-scoring link (ties: the one whose self-limited transfers are the
   most often slow, then the one whose predicted load is the largest fraction of its
   capacity, the plan's busiest), mark its slow routes explained, repeat
   until every slow route is explained or no candidate has a positive score;
4. a chosen link is saturated by the transfers crossing it: its capacity is estimated as the
   sum of their measured rates. Confidence: the share of its self-limited transfers that are
   slow. Links that every explained route crosses alike cannot be told apart from these
   transfers: they are listed as ``tied``, and the plan's busiest of them is chosen unless
   a targeted probe says otherwise (step 5).
5. targeted probe (the "separating" measurement of tomography: a path that crosses one
   suspect and not the other): each tied link is a hypothesis, "this link alone dropped to
   what crosses it now". :func:`separating_probes` picks, for every suspect, one host pair
   whose route crosses it and no other suspect, the pair whose rate the hypotheses predict
   most differently; the probes run together for a fraction of a second beside the running
   transfers, and :func:`choose_by_probe` keeps the hypothesis whose predicted probe rates
   are closest to the measured ones (squared log ratio); "no suspect dropped" is one of the
   hypotheses, and when it fits best the estimate is dropped. Predictions are max-min fair rates
   of the probes and the running transfers, each running transfer capped at its measured
   rate (:func:`topocast.runtime.pacing.max_min`).

The probe (``topocast probe``) can use the same function for links it measured through
several paths.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

Pair = TypeVar("Pair", bound=Hashable)

__all__ = [
    "Observation",
    "LinkEstimate",
    "estimate_links",
    "saturated_capacity",
    "probe_rates",
    "separating_probes",
    "choose_by_probe",
    "SLOW",
    "HEALTHY",
]

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
    own_through = {link: [i for i in idx if obs[i].self_limited] for link, idx in through.items()}
    cleared = {
        link: sum(obs[i].measured for i in idx) >= healthy * sum(obs[i].predicted for i in idx)
        for link, idx in own_through.items()
    }
    slow_share = {link: sum(is_slow[i] for i in idx) / len(idx) if idx else 0.0 for link, idx in own_through.items()}
    left = {i for i, s in enumerate(is_slow) if s}
    out: list[LinkEstimate] = []
    while left:
        scores = {}
        for link in {lk for i in left for lk in obs[i].route}:
            bad = [i for i in through[link] if i in left]
            good = [i for i in through[link] if is_healthy[i]] if cleared[link] else []
            scores[link] = (len(bad) - len(good), slow_share[link], load[link])
        best = max(scores, key=lambda lk: scores[lk])
        if scores[best][0] <= 0:
            break
        explained = tuple(sorted(i for i in through[best] if i in left))
        tied = tuple(
            lk
            for lk, sc in scores.items()
            if lk != best and sc[0] == scores[best][0] and {i for i in through[lk] if i in left} == set(explained)
        )
        measured = saturated_capacity(obs, best, math.inf)
        if measured <= 0:  # nothing crosses it now: a stall, not a rate, and nothing to estimate from
            left -= set(explained)
            continue
        share = slow_share[best]
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


def saturated_capacity(observations: Sequence[Observation], link: int, limit: float) -> float:
    """The capacity of ``link`` if the transfers crossing it now saturate it: the sum of
    their measured rates (never above ``limit``, what the topology says)."""
    return min(limit, sum(o.measured for o in observations if link in o.route))


def probe_rates(
    probes: Sequence[tuple[int, ...]],
    background: Sequence[Observation],
    capacity: Mapping[int, float],
) -> list[float]:
    """Predicted rates of probe transfers along ``probes`` (routes) started beside the
    running transfers ``background``: max-min fair shares on ``capacity``, each running
    transfer capped at its measured rate (it cannot speed up: something holds it there)."""
    from .pacing import max_min

    flows: dict = {("p", k): route for k, route in enumerate(probes)}
    caps: dict = {}
    for k, o in enumerate(background):
        if o.measured > 0:
            flows[("b", k)] = o.route
            caps[("b", k)] = o.measured
    rates = max_min(flows, {lk: capacity.get(lk, math.inf) for r in flows.values() for lk in r}, caps)
    return [rates[("p", k)] for k in range(len(probes))]


def _hypothesis(capacity: Mapping[int, float], link: int, value: float) -> dict[int, float]:
    return {**capacity, link: value}


def separating_probes(
    suspects: Mapping[int, float],
    routes: Mapping[Pair, tuple[int, ...]],
    background: Sequence[Observation],
    capacity: Mapping[int, float],
) -> dict[int, Pair]:
    """For each suspect link (link -> the capacity it would have if it were the one that
    dropped), the candidate pair (a key of ``routes``) whose route crosses it and no other
    suspect and whose predicted rate differs most between the hypotheses (fewest hops on a
    tie). A suspect that no route separates has no probe."""
    out: dict[int, Pair] = {}
    for link in suspects:
        others = set(suspects) - {link}
        best: tuple | None = None
        for pair, route in routes.items():
            if link not in route or others & set(route):
                continue
            preds = [probe_rates([route], background, _hypothesis(capacity, lk, c))[0] for lk, c in suspects.items()]
            spread = math.log(max(preds) / max(min(preds), 1e-9)) if max(preds) > 0 else 0.0
            key = (spread, -len(route))
            if best is None or key > best[0]:
                best = (key, pair)
        if best is not None and best[0][0] > 0:
            out[link] = best[1]
    return out


def choose_by_probe(
    suspects: Mapping[int, float],
    probes: Sequence[tuple[tuple[int, ...], float]],
    background: Sequence[Observation],
    capacity: Mapping[int, float],
) -> tuple[int | None, dict[int | None, float]]:
    """The suspect whose hypothesis predicts the measured probe rates best, and every
    hypothesis' error (sum of squared log ratios of measured to predicted rate); None when
    the hypothesis that no suspect dropped (every link as ``capacity`` says) predicts them
    best: the probes ran as fast as the topology allows, so the slow transfers were held
    back by something else (a busy machine, traffic the topology does not show).
    ``probes``: (route, measured rate in bytes/s) of the probes that ran together."""
    routes = [r for r, _ in probes]
    errors: dict[int | None, float] = {}
    hypotheses: list[tuple[int | None, Mapping[int, float]]] = [
        (link, _hypothesis(capacity, link, value)) for link, value in suspects.items()
    ]
    for link, caps in [*hypotheses, (None, capacity)]:
        preds = probe_rates(routes, background, caps)
        errors[link] = sum(math.log(max(m, 1.0) / max(p, 1.0)) ** 2 for (_, m), p in zip(probes, preds))
    return min(errors, key=lambda lk: errors[lk]), errors
