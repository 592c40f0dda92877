"""Runs that follow the network: watch every transfer's rate, and plan the rest again when
the network changed (``perform(..., adapt=...)``, ``topocast run --adapt``).

The coordinator knows, ten times a second, the verified bytes every host holds. From them
:class:`Adapter` follows each running transfer: its progress is the bytes of its ranges its
receiver holds, its measured rate the progress over the last ``WINDOW`` seconds, and it is
*self-limited* when its sender holds at least ``AHEAD`` seconds of its bytes (at the
predicted rate) that the receiver lacks — otherwise it waits for its own upstream and says
nothing about its links. Its prediction comes from the simulator, for the plan being run.

1. **Trigger**: a self-limited transfer running below ``SLOW`` x its prediction for
   ``SUSTAIN`` seconds in a row (not judged during its first ``WARMUP`` seconds, nor within
   ``COOLDOWN`` seconds of the last decision).
2. **What changed**: ``estimate.estimate_links`` on every running transfer. When several
   links explain the slow transfers alike (``tied``), a targeted probe separates them
   (``estimate.separating_probes``): for each suspect, a short bulk transfer between two
   hosts whose route crosses it and no other suspect, all at once through the running
   agents (``measure`` messages, as ``topocast probe`` sends; each ends once its rate is
   stable, ``PROBE_MAX`` seconds at most), and ``estimate.choose_by_probe`` names the suspect
   that explains the measured rates. Each link named gets the estimated capacity (divided by
   the goodput factor) in the topology the coordinator believes. The predictions of the running transfers are made again on it, so a
   change that has been taken into account does not trigger again.
3. **The rest of the broadcast**: the planner is run again on the changed topology, and its
   plan is cut to what is left (:func:`continue_from`: every transfer loses the bytes its
   receiver already holds; a relay's part that it holds is sent from its store, the part it
   will receive is pipelined behind the transfer that brings it). No planner takes holdings
   itself: every planner is re-run on the whole message and cut this way. The old plan's
   rest is cut the same way; both are simulated from now on.
4. **Decision**: the new plan replaces the old one when its predicted rest is at least
   ``MIN_GAIN`` shorter. The agents get ``replan``: the old transfers still running are
   cancelled (a sender stops after its current frame and ends the connection cleanly; its
   receiver keeps every verified byte it got), the new ones start at once. Bytes a receiver
   got after the holdings were read may be sent to it again (they count once); no byte is
   left unverified: every host still checks the whole-message digest.

Every decision, applied or not, is reported: when, why (the slow transfers), what changed
(links, old and new capacity, confidence, the probe's pairs and rates) and the predicted rest
of both plans.
"""

from __future__ import annotations

import dataclasses
import math
from collections import deque
from collections.abc import Callable, Mapping, Set
from typing import TYPE_CHECKING

from ..intervals import IntervalSet
from ..plan import Plan, Transfer
from .agents import RunInputError
from .calibration import scale_topology
from .estimate import LinkEstimate, Observation, choose_by_probe, estimate_links, saturated_capacity, separating_probes
from .protocol import IncomingTransfer, Msg, OutgoingTransfer

if TYPE_CHECKING:
    from ..topology import Topology

__all__ = [
    "Adapter",
    "make_adapter",
    "continue_from",
    "with_done",
    "predicted_holdings",
    "with_link_rates",
    "SLOW",
    "SUSTAIN",
    "WINDOW",
    "MIN_GAIN",
]

SLOW = 0.5  # a transfer below this fraction of its prediction is slow
SUSTAIN = 2.0  # s a transfer must stay slow before anything is done
WINDOW = 1.0  # s over which a transfer's rate is measured
WARMUP = 1.0  # s after a transfer's first byte before it is judged
AHEAD = 0.5  # s of predicted rate its sender must hold ahead for a transfer to be self-limited
COOLDOWN = 3.0  # s between two decisions
MIN_GAIN = 0.1  # the new plan's rest must be this much shorter than the old one's
MIN_CONFIDENCE = 0.2  # link estimates below this are not acted on
TICK = 0.25  # s between two looks
PROBE_MAX = 0.6  # s a targeted probe's transfers last at most (they stop once their rates are stable)
PROBE_WAIT = 3.0  # s after which a probe's missing answers are given up (the plan's busiest suspect is kept)

Planner = Callable[["Topology"], Plan]  # plans the whole broadcast on a topology


def _ahead(ranges, pos: int, held: IntervalSet, enough: float) -> int:
    """How many bytes of the sequence ``ranges``, from position ``pos`` on, ``held`` holds
    without a gap (counting stops at ``enough``)."""
    got = 0
    for off, length in ranges:
        if pos >= length:
            pos -= length
            continue
        a, end = off + pos, off + length
        pos = 0
        miss = held.missing(a, end)
        stop = miss[0][0] if miss else end
        got += stop - a
        if stop < end or got >= enough:
            break
    return got


def _cut(ranges, have: IntervalSet) -> list[tuple[int, int]]:
    return [(s, e - s) for off, length in ranges for s, e in have.missing(off, off + length)]


def with_done(plan: Plan, holdings: Mapping[str, IntervalSet], done: Set[int]) -> dict[str, IntervalSet]:
    """``holdings`` with the ranges of the transfers ``done`` added to their receivers: a
    receiver says a transfer is done as soon as it holds its bytes, but reports what it holds
    only every tenth of a second (later on a busy machine), so the holdings the coordinator
    has may lack bytes of transfers it already knows done."""
    out = {h: iv.copy() for h, iv in holdings.items()}
    for i in done:
        t = plan.transfers[i]
        out.setdefault(t.dst, IntervalSet()).add_ranges(t.ranges)
    return out


def predicted_holdings(plan: Plan, times, t: float) -> dict[str, IntervalSet]:
    """What every host holds at ``t`` when each transfer sends its ranges in order at a
    steady rate between its predicted start and end (``times``, e.g. a simulation's
    ``transfer_times``): the holdings a re-plan at ``t`` would start from."""
    held: dict[str, IntervalSet] = {}
    if plan.source is not None:
        held[plan.source] = IntervalSet([(0, plan.size)])
    for tr, (a, b) in zip(plan.transfers, times):
        if t <= a:
            continue
        n = tr.nbytes if t >= b else int(tr.nbytes * (t - a) / (b - a))
        iv = held.setdefault(tr.dst, IntervalSet())
        for off, length in tr.ranges:
            if n <= 0:
                break
            iv.add(off, off + min(length, n))
            n -= length
    return held


def continue_from(plan: Plan, holdings: Mapping[str, IntervalSet], skip: Set[int] = frozenset()) -> Plan:
    """What is left of ``plan`` when every host holds ``holdings`` (transfers ``skip`` done,
    so their receivers hold their bytes whatever ``holdings`` says: :func:`with_done`):
    each transfer without the bytes its receiver holds; a pipelined transfer out of a relay
    split into the part its sender holds now (sent from its store at once) and the part it
    will receive, pipelined behind the transfer of the rest that brings the relay most of
    these bytes (:func:`_pipeline_behind`)."""
    holdings = with_done(plan, holdings, skip)
    kept: list[tuple[int, Transfer]] = []
    waits: list[int] = []  # positions in ``kept`` of the parts their senders will receive
    for i, t in enumerate(plan.transfers):
        if i in skip:
            continue
        rest = _cut(t.ranges, holdings.get(t.dst, IntervalSet()))
        if not rest:
            continue
        base = dataclasses.replace(t, ranges=tuple(rest), upstream=None, after=())
        src_has = holdings.get(t.src, IntervalSet())
        held = src_has.covered_parts(rest)
        if not t.pipelined or held == rest:
            kept.append((i, base))
            continue
        if held:
            kept.append((i, dataclasses.replace(base, ranges=tuple(held))))
        waits.append(len(kept))
        kept.append((i, dataclasses.replace(base, ranges=tuple(_cut(rest, src_has)))))
    index: dict[int, list[int]] = {}
    for j, (i, _) in enumerate(kept):
        index.setdefault(i, []).append(j)
    transfers = [
        dataclasses.replace(t, after=tuple(j for a in plan.transfers[i].after for j in index.get(a, ())))
        for i, t in kept
    ]
    initial = {h: tuple((s, e - s) for s, e in iv) for h, iv in holdings.items() if iv.total}
    rest_plan = dataclasses.replace(plan, transfers=tuple(transfers), initial=initial)
    return _pipeline_behind(rest_plan, waits)


def _pipeline_behind(plan: Plan, waits: list[int]) -> Plan:
    """``plan`` with each transfer ``waits`` (pipelined, its sender lacks its bytes) declaring
    as its upstream the transfer into its sender that carries most of its bytes. A relay fed
    by several transfers (stable's trees, a held part and a part to come) seldom gets our
    ranges as one contiguous run of a single transfer, which is all the simulator looks for
    by itself; without an upstream it would predict the relay forwarding only once it holds
    everything. Where the upstream's sequence does not contain ours, the simulator pipelines
    from its start (our k-th byte follows its k-th): close when the gaps are small. Declared
    upstreams that would wait on one another in a cycle are left to the simulator."""
    from ..plan.graph import predecessors, topological_order

    into: dict[str, list[int]] = {}
    for j, t in enumerate(plan.transfers):
        into.setdefault(t.dst, []).append(j)
    transfers = list(plan.transfers)
    for w in waits:
        t = transfers[w]
        want = IntervalSet()
        want.add_ranges(t.ranges)
        best, most = None, 0
        for j in into.get(t.src, ()):
            carried = sum(length for _, length in want.covered_parts(plan.transfers[j].ranges))
            if carried > most:
                best, most = j, carried
        if best is not None:
            transfers[w] = dataclasses.replace(t, upstream=best)
    declared = dataclasses.replace(plan, transfers=tuple(transfers))

    def cycle(i: int, msg: str) -> Exception:
        return ValueError(msg)

    try:
        topological_order(predecessors(declared), cycle)
    except ValueError:
        return plan
    return declared


class Adapter:
    """The watch of one run (see the module). ``tick`` is called by the coordinator with the
    holdings; it returns the ``replan`` messages to send, by host, when it re-plans."""

    def __init__(
        self,
        plan: Plan,
        topology,
        planner: Planner | None,
        goodput: float,
        chunk: int,
        probe: bool = False,
        *,
        verify: bool = False,
        slow: float | None = None,
        sustain: float | None = None,
    ):
        """``probe``: may run targeted probes through the agents (``outbox``, ``on_measure``);
        ``verify``: watch, estimate and correct the believed topology, never switch plans
        (``probe --verify``); ``slow``, ``sustain``: the trigger (default ``SLOW``,
        ``SUSTAIN``; see the module)."""
        from ..sim import simulate

        self.probe, self.verify = probe, verify
        self.slow = SLOW if slow is None else slow
        self.sustain = SUSTAIN if sustain is None else sustain
        self.observed: dict[int, Observation] = {}  # every transfer's latest observation
        self.lowest: dict[int, float] = {}  # every self-limited transfer's lowest measured / predicted
        self.suspected: dict[int, float] = {}  # every link an estimate named or tied, with its estimate (bytes/s)
        self.hosts = sorted(plan.hosts)
        self.outbox: list[tuple[str, dict]] = []  # (host, message) for the coordinator to send
        self.pending: _Probe | None = None  # a targeted probe under way
        self.probe_ids = 0

        self.simulate = simulate
        self.topology, self.planner, self.goodput, self.chunk = topology, planner, goodput, chunk
        self.plan = plan  # the plan whose transfers run now (global index = offset + position)
        self.offset = 0
        self.next_index = len(plan.transfers)
        self.pred: dict[int, float] = self._predicted_rates(plan, 0)
        self.history: dict[int, deque] = {}
        self.first_seen: dict[int, float] = {}
        self.slow_since: dict[int, float] = {}
        self.last_decision = -math.inf
        self.last_tick = -math.inf
        self.reports: list[dict] = []

    # ------------------------------------------------------------------ predictions
    def _scaled(self, topology):
        return scale_topology(topology, self.goodput)

    def _simulate(self, plan: Plan):
        return self.simulate(plan, self._scaled(self.topology), chunk_size=self.chunk)

    def _predicted_rates(self, plan: Plan, offset: int) -> dict[int, float]:
        res = self._simulate(plan)
        out = {}
        for j, (t, (start, end)) in enumerate(zip(plan.transfers, res.transfer_times)):
            if end > start and math.isfinite(end):
                out[offset + j] = t.nbytes / (end - start)
        return out

    # ------------------------------------------------------------------ watching
    def tick(
        self, now: float, holdings: Mapping[str, IntervalSet], received: Mapping[int, int], done: set[int]
    ) -> dict[str, dict] | None:
        """``received``: the bytes each transfer's receiver got on it; ``done``: the transfers
        complete (their receivers hold their bytes)."""
        if now - self.last_tick < TICK:
            return None
        self.last_tick = now
        try:
            if self.pending is not None:
                if not self.pending.finished(now):
                    return None
                return self._act(self._settle_probe(), self.reports[-1], holdings, done)
            obs, slow_for = self._observe(now, holdings, received, done)
            if not slow_for or max(slow_for) < self.sustain or now - self.last_decision < COOLDOWN:
                return None
            self.last_decision = now
            return self._decide(now, obs, holdings, done)
        except Exception as exc:  # a failed re-plan must not stop a run that is moving data
            self.pending = None
            self.reports[-1]["outcome"] = f"re-plan failed ({type(exc).__name__}: {exc}): plan kept"
            self.reports[-1]["applied"] = False
            return None

    def _observe(self, now: float, holdings, received: Mapping[int, int], done: set[int]):
        """Every running transfer's observation, and how long each slow one has been slow.
        A transfer sends its ranges in order: the bytes it delivered are its position."""
        obs: dict[int, Observation] = {}
        slow_for = []
        for j, t in enumerate(self.plan.transfers):
            i = self.offset + j
            if i in done or i not in self.pred:
                continue
            got = received.get(i, 0)
            if got >= t.nbytes:
                continue
            hist = self.history.setdefault(i, deque())
            hist.append((now, got))
            while len(hist) > 2 and now - hist[1][0] >= WINDOW:
                hist.popleft()
            if got > 0:
                self.first_seen.setdefault(i, now)
            if i not in self.first_seen or now - self.first_seen[i] < WARMUP or now - hist[0][0] < 0.8 * WINDOW:
                continue
            rate = (got - hist[0][1]) / (now - hist[0][0])
            need = min(AHEAD * self.pred[i], t.nbytes - got)
            own = _ahead(t.ranges, got, holdings.get(t.src, IntervalSet()), need) >= need
            route = tuple(self.topology.route(t.src, t.dst))
            obs[i] = Observation(route, self.pred[i], rate, own)
            self.observed[i] = obs[i]
            if own:
                self.lowest[i] = min(self.lowest.get(i, math.inf), rate / self.pred[i])
            if own and rate < self.slow * self.pred[i]:
                self.slow_since.setdefault(i, now)
                slow_for.append(now - self.slow_since[i])
            else:
                self.slow_since.pop(i, None)
        return obs, slow_for

    # ------------------------------------------------------------------ deciding
    def _decide(self, now: float, obs: dict[int, Observation], holdings, done: set[int]) -> dict[str, dict] | None:
        slow = sorted(i for i in obs if i in self.slow_since)
        report: dict = {
            "time": round(now, 3),
            "why": [self._describe(i, obs[i]) for i in slow],
            "observed": {i: [round(o.predicted), round(o.measured), o.self_limited] for i, o in obs.items()},
            "changed": [],
            "applied": False,
        }
        self.reports.append(report)
        cap = {lid: link.bandwidth * self.goodput for lid, link in enumerate(self.topology.links)}
        found = estimate_links(list(obs.values()), cap, slow=self.slow)
        ests = [e for e in found if e.confidence >= MIN_CONFIDENCE]
        for e in ests:
            for lk in (e.link, *e.tied):
                self.suspected.setdefault(lk, saturated_capacity(list(obs.values()), lk, cap[lk]) / self.goodput)
        if not ests:
            report["outcome"] = "no link explains the slow transfers: plan kept"
            self.slow_since.clear()
            return None
        if self.probe and self._start_probe(now, list(obs.values()), ests, cap):
            return None  # decided once the probe's rates are in (``tick``)
        return self._act(ests, report, holdings, done)

    def _act(self, ests: list[LinkEstimate], report: dict, holdings, done: set[int]) -> dict[str, dict] | None:
        """The believed topology changed by ``ests``; the rest of both plans; the switch when
        the new one gains enough."""
        if not ests:
            report["outcome"] = "no link explains the slow transfers (the probe found none): plan kept"
            self.slow_since.clear()
            self.history.clear()
            return None
        self.topology = self._changed(ests, report)
        skip = {j for j in range(len(self.plan.transfers)) if self.offset + j in done}
        snapshot = with_done(self.plan, holdings, skip)  # the new plan's rest starts from it too
        old_rest = continue_from(self.plan, snapshot, skip)
        if self.verify or self.planner is None:
            report["outcome"] = "the believed topology is corrected; the plan is kept (verifying)"
            self.slow_since.clear()
            self.history.clear()
            self._follow(old_rest, skip_none=True)
            return None
        new_rest = continue_from(self.planner(self.topology), snapshot)
        t_old, t_new = self._simulate(old_rest).makespan, self._simulate(new_rest).makespan
        report.update(predicted_rest_old=round(t_old, 3), predicted_rest_new=round(t_new, 3))
        self.slow_since.clear()
        self.history.clear()
        if not t_new < (1 - MIN_GAIN) * t_old:
            report["outcome"] = "the plan's rest, predicted on the changed network, is kept (no gain from a new plan)"
            self._follow(old_rest, skip_none=True)
            return None
        report["applied"] = True
        report["outcome"] = f"re-planned: predicted rest {t_new:.2f} s instead of {t_old:.2f} s"
        return self._switch(new_rest, done)

    # ------------------------------------------------------------------ targeted probe
    def _start_probe(self, now: float, obs: list[Observation], ests: list[LinkEstimate], cap) -> bool:
        """Send the measurements that separate every estimate's tied links; False when there
        is nothing to separate (or no pair of hosts does)."""
        groups = []
        routes = {(a, b): tuple(self.topology.route(a, b)) for a in self.hosts for b in self.hosts if a != b}
        for k, e in enumerate(ests):
            if not e.tied:
                continue
            suspects = {lk: saturated_capacity(obs, lk, cap[lk]) for lk in (e.link, *e.tied)}
            pairs = separating_probes(suspects, routes, obs, cap)
            if len(pairs) >= 1:
                groups.append((k, suspects, pairs))
        if not groups:
            return False
        probe = _Probe(now, obs, ests, cap, groups)
        for _, _, pairs in groups:
            for link, (a, b) in pairs.items():
                self.probe_ids += 1
                probe.ids[self.probe_ids] = (link, a, b, routes[(a, b)])
                self.outbox.append(
                    (
                        a,
                        {
                            "type": Msg.MEASURE,
                            "op": "bulk",
                            "id": self.probe_ids,
                            "peer": b,
                            "max": PROBE_MAX,
                            "delay": 0.02,
                            "warmup": 0.1,
                            "min_window": 0.2,
                            "min_bytes": 128 * 1024,
                            "tolerance": 0.05,
                        },
                    )
                )
        self.pending = probe
        return True

    def on_measure(self, msg: dict) -> None:
        """A ``measured`` or ``converged`` message from an agent (a probe's sender or receiver)."""
        p = self.pending
        if p is None or msg.get("id") not in p.ids:
            return
        i = int(msg["id"])
        if msg.get("type") == Msg.CONVERGED:
            p.converged.add(i)
            if not p.stopped and p.converged >= set(p.ids) - set(p.results):  # all stable: stop all at once
                p.stopped = True
                for j, (_, a, _, _) in p.ids.items():
                    if j not in p.results:
                        self.outbox.append((a, {"type": Msg.MEASURE, "op": "stop", "id": j, "delay": 0.0}))
        elif msg.get("type") == Msg.MEASURED:
            p.results[i] = float(msg["rate"]) if msg.get("error") is None and msg.get("rate") else None

    def outgoing(self) -> list[tuple[str, dict]]:
        """The messages the coordinator must send now (and forgets them)."""
        out, self.outbox = self.outbox, []
        return out

    def _settle_probe(self) -> list[LinkEstimate]:
        """The estimates with every tied group settled by the probe's rates (reported)."""
        p = self.pending
        assert p is not None
        self.pending = None
        ests: list[LinkEstimate | None] = list(p.ests)
        lines = []
        for k, suspects, pairs in p.groups:
            rates = {i: p.results.get(i) for i, (lk, _, _, _) in p.ids.items() if lk in pairs}
            measured = [(p.ids[i][3], r) for i, r in rates.items() if r is not None]
            entry = {
                "pairs": {f"{a}->{b}": self._link_name(lk) for i, (lk, a, b, _) in p.ids.items() if i in rates},
                "measured_bit_s": {
                    f"{a}->{b}": None if (r := rates[i]) is None else round(r * 8)
                    for i, (_, a, b, _) in p.ids.items()
                    if i in rates
                },
            }
            if not measured:
                entry["outcome"] = "no probe answered: the plan's busiest suspect is kept"
                lines.append(entry)
                continue
            chosen, errors = choose_by_probe(suspects, measured, p.obs, p.cap)
            entry["errors"] = {
                self._link_name(lk) if lk is not None else "none": round(v, 3) for lk, v in errors.items()
            }
            lines.append(entry)
            e = ests[k]
            if chosen is None:
                entry["chosen"] = "none"
                entry["outcome"] = "the probes ran as the topology says: no suspect dropped, the estimate is dropped"
                ests[k] = None
                continue
            entry["chosen"] = self._link_name(chosen)
            ests[k] = LinkEstimate(
                chosen,
                suspects[chosen],
                e.confidence,
                e.explains,
                tuple(lk for lk in suspects if lk != chosen),
            )
        self.reports[-1]["probe"] = lines
        self.reports[-1]["probe_seconds"] = round(self.last_tick - p.started, 3)
        return [e for e in ests if e is not None]

    def _link_name(self, lk: int) -> str:
        link = self.topology.links[lk]
        return f"{link.src}->{link.dst}"

    def _describe(self, i: int, o: Observation) -> str:
        t = self.plan.transfers[i - self.offset]
        return (
            f"transfer {i} {t.src}->{t.dst} at {o.measured * 8 / 1e6:.1f} Mbit/s, predicted {o.predicted * 8 / 1e6:.1f}"
        )

    def _changed(self, ests, report: dict):
        """The believed topology with the estimated links' new capacities."""
        for e in ests:
            link = self.topology.links[e.link]
            report["changed"].append(
                {
                    "link": f"{link.src}->{link.dst}",
                    "old_bit_s": link.bandwidth * 8,
                    "new_bit_s": e.capacity / self.goodput * 8,
                    "confidence": round(e.confidence, 2),
                    "tied": [self._link_name(x) for x in e.tied],
                }
            )
        return with_link_rates(self.topology, {e.link: e.capacity / self.goodput for e in ests})

    def _follow(self, rest: Plan, skip_none: bool) -> None:
        """Keep the running plan; predict its transfers again from ``rest`` (made of them)."""
        rates = self._predicted_rates(rest, 0)
        by_pair: dict[tuple[str, str], float] = {}
        for j, t in enumerate(rest.transfers):
            if j in rates:
                by_pair[(t.src, t.dst)] = min(by_pair.get((t.src, t.dst), math.inf), rates[j])
        for j, t in enumerate(self.plan.transfers):
            i = self.offset + j
            if (t.src, t.dst) in by_pair:
                self.pred[i] = by_pair[(t.src, t.dst)]

    def _switch(self, new: Plan, done: set[int]) -> dict[str, dict]:
        """Cancel the old plan's running transfers, start the new plan's (indices after all
        earlier ones): the ``replan`` message of every host involved."""
        cancel = [self.offset + j for j in range(len(self.plan.transfers)) if self.offset + j not in done]
        offset = self.next_index
        self.next_index += len(new.transfers)
        msgs: dict[str, dict] = {}

        def msg(h: str) -> dict:
            return msgs.setdefault(h, {"type": "replan", "cancel": [], "outgoing": [], "incoming": []})

        for i in cancel:
            t = self.plan.transfers[i - self.offset]
            msg(t.src)["cancel"].append(i)
            msg(t.dst)["cancel"].append(i)
        for j, t in enumerate(new.transfers):
            i = offset + j
            after = tuple(offset + a for a in t.after)
            msg(t.src)["outgoing"].append(
                OutgoingTransfer(i, t.dst, t.ranges, t.pipelined, after, t.rate_cap).to_wire()
            )
            msg(t.dst)["incoming"].append(IncomingTransfer(i, t.src, t.ranges).to_wire())
        self.reports[-1].update(cancelled=len(cancel), new_transfers=len(new.transfers))
        self.plan, self.offset = new, offset
        self.pred = self._predicted_rates(new, offset)
        self.first_seen.clear()
        return msgs


def with_link_rates(topology, rates: Mapping[int, float]):
    """``topology`` with the directed links ``rates`` names at these rates (bytes/s); the
    other direction of each cable keeps its own."""
    links = list(topology.physical_links)
    for lk, new in rates.items():
        link = topology.links[lk]
        pl = links[link.physical]
        if link.src == pl.a:
            links[link.physical] = dataclasses.replace(pl, bandwidth=new, bandwidth_ba=pl.reverse_bandwidth)
        else:
            links[link.physical] = dataclasses.replace(pl, bandwidth_ba=new)
    return topology.replace(links=links)


class _Probe:
    """A targeted probe under way: what it separates and the rates measured so far."""

    def __init__(self, started: float, obs, ests, cap, groups):
        self.started, self.obs, self.ests, self.cap, self.groups = started, obs, ests, cap, groups
        self.ids: dict[int, tuple[int, str, str, tuple[int, ...]]] = {}  # id -> (suspect, src, dst, route)
        self.results: dict[int, float | None] = {}  # id -> measured rate (None: failed)
        self.converged: set[int] = set()
        self.stopped = False

    def finished(self, now: float) -> bool:
        return len(self.results) == len(self.ids) or now - self.started > PROBE_WAIT


def make_adapter(plan: Plan, topology, planner, goodput: float, chunk: int):
    """The watch of an adaptive run, with its planner (default: the plan's own, from the registry)."""
    if topology is None or plan.collective != "broadcast" or plan.source is None:
        raise RunInputError("adapt needs a broadcast plan and its topology (the network it predicts and re-plans on)")
    if planner is None:
        from ..plan import Broadcast
        from ..planners import get_planner

        try:
            info = get_planner("broadcast", plan.planner)
        except Exception:
            raise RunInputError(f"adapt: no planner {plan.planner!r} to plan the rest with (give planner=)") from None
        dests = tuple(plan.destinations)

        def planner(topo):
            return info(topo, Broadcast(plan.source, plan.size, dests)).with_chunk_size(plan.chunk_size)

    return Adapter(plan, topology, planner, goodput, chunk, probe=True)
