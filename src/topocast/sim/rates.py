"""Rate solving of the simulator: max-min fair rates of the flowing transfers, kept so at
every event by recomputing only where they can change (docs/design.md, "Simulator").

* Rates are max-min fair by progressive filling over shared resources, honouring
  ``rate_cap``, fatpipe links and pipelining couplings (``sim.maxmin``).
* An event recomputes max-min rates only for the flows it can affect: those that started,
  changed constraints (cap, coupling) in a way their rate no longer meets or is no longer held
  by, or may gain from a saturated resource a flow left, grown through saturated resources to
  every flow that could lose its bottleneck (``_rebalance``; resources with slack stop the
  growth, so a broadcast tree whose flows all share links is not recomputed whole at every
  event). Past a share of the flowing transfers, all of them are recomputed at once
  (vectorised).

``Rates`` is a mixin of the simulator (``engine._Sim``): the state machine reports flows that
started (``started``), whose constraints may have changed (``dirty``) and saturated resources
flows left (``freed``); ``_update_rates`` settles the rates and has the agenda reschedule
the events of every flow whose rate or constraints changed.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Collection

import numpy as np

from ..plan.graph import csr_rows
from . import tuning
from .compiled import compiled_available
from .maxmin import compact_ids, progressive_filling, progressive_filling_small
from .room import Room
from .state import FLOWING, PENDING, REL


class Rates(Room):
    """Max-min rates of the flowing transfers (a mixin of ``_Sim``)."""

    def _init_rates(self, core: str) -> None:
        n = self.n
        # groups of up to this many flows are solved on Python scalars (SmallRates); the
        # reference core solves every group on arrays
        self.small_solve = tuning.SMALL_SOLVE if core == "fast" else 0
        # the compiled core solves every group with sim.kernels (CompiledRates); the fast
        # core moves to them once its groups have held tuning.COMPILE_AFTER flows in all
        # (numba installed), so that runs with few events never import numba
        self.compiled = core == "compiled" and self._init_compiled()
        if core == "compiled" and not self.compiled:
            raise ValueError(f"core='compiled' needs numba (pip install 'topocast[fast]'): {self.compile_error}")
        self.group_flows = 0  # flows solved in groups so far
        self.compile_after = math.inf
        if core == "fast" and compiled_available():
            self.compile_after = max(tuning.COMPILE_AFTER, tuning.COMPILE_PER_TRANSFER * n)
        self.n_users = np.zeros(len(self.capacity), dtype=np.int64)  # flowing transfers per resource
        self.usage = np.zeros(len(self.capacity))  # their summed rates
        self.freed: set[int] = set()  # saturated resources that flows have left
        self.cap_now = np.full(n, math.nan)  # cap in the last max-min (0 while blocked)
        self.coupled_now = np.full(n, -1, dtype=np.int64)  # upstream it was coupled to
        self.n_coupled = np.zeros(n, dtype=np.int64)  # flows coupled to each flow
        self.started: list[int] = []
        self.dirty: set[int] = set()  # flows whose constraints or events may have changed

    def _update_rates(self) -> None:
        """Max-min rates after the changes since the last call, recomputed only where they can
        change, and the next events of every flow whose rate or constraints changed."""
        if self.group_flows > self.compile_after:
            self.compile_after = math.inf
            self.compiled = self._init_compiled()
        started = self._still_flowing(self.started)
        self.started = []
        dirty = set(self._still_flowing(self.dirty))
        self.dirty = set()
        # flows whose constraints changed, unless their rate still meets them and is held by them
        touched = set(started)
        check = sorted(dirty.union(started))
        if len(check) > tuning.SMALL:
            idx = np.array(check, dtype=np.int64)
            caps, coupled_to = self._constraints(idx)
            moved = np.flatnonzero((caps != self.cap_now[idx]) | (coupled_to != self.coupled_now[idx]))
            idx, caps, coupled_to = idx[moved], caps[moved], coupled_to[moved]
            self.cap_now[idx] = caps
            self._couple(idx, coupled_to)
            upstream_rate = np.where(coupled_to >= 0, self.rate[coupled_to], np.inf)
            touched.update(idx[~_keeps_rate(self.rate[idx], caps, upstream_rate)].tolist())
        else:
            for f in check:
                cap, up = self._constraint_one(f)
                if cap != self.cap_now[f] or up != self.coupled_now[f]:
                    self.cap_now[f] = cap
                    self._couple_one(f, up)
                    if not _keeps_rate(self.rate[f], cap, self.rate[up] if up >= 0 else math.inf):
                        touched.add(f)
        touched.update(self._gaining())
        refresh = dirty.union(started)
        if touched:
            changed = self._rebalance(touched).tolist()
            refresh.update(changed)
            dirty.update(changed)
        # the events of pipelined transfers depend on their upstream's progress
        refresh.update(self._behind_moved(dirty))
        if len(refresh) > tuning.SMALL:
            self._schedule(np.array(sorted(refresh), dtype=np.int64))
        else:
            for i in sorted(refresh):
                if self.status[i] == FLOWING:
                    self._schedule_one(i)
        if len(self.flow_heap) > 4 * len(self.flowing) + 4096:
            self._compact_heap()
        if self.redundant:
            self._schedule_coverage()

    def _couple(self, idx: np.ndarray, upstream: np.ndarray) -> None:
        """Flows ``idx`` are now coupled to ``upstream`` (-1: to none)."""
        old = self.coupled_now[idx]
        np.subtract.at(self.n_coupled, old[old >= 0], 1)
        np.add.at(self.n_coupled, upstream[upstream >= 0], 1)
        self.coupled_now[idx] = upstream

    def _couple_one(self, f: int, upstream: int) -> None:
        """``_couple`` of one flow, without arrays."""
        old = self.coupled_now[f]
        if old >= 0:
            self.n_coupled[old] -= 1
        if upstream >= 0:
            self.n_coupled[upstream] += 1
        self.coupled_now[f] = upstream

    def _still_flowing(self, flows: Collection[int]) -> list[int]:
        """The flowing ones among ``flows`` (in their order)."""
        if len(flows) > tuning.SMALL:
            arr = np.fromiter(flows, dtype=np.int64, count=len(flows))
            return arr[self.status[arr] == FLOWING].tolist()
        return [i for i in flows if self.status[i] == FLOWING]

    def _gaining(self) -> list[int]:
        """Flows that may gain from what ended flows freed on saturated resources: those on
        them not held by their cap or coupling."""
        freed, self.freed = self.freed, set()
        on = list(itertools.chain.from_iterable(self._flows_on(r) for r in freed))
        if len(on) <= tuning.SMALL:
            return [g for g in on if not self._pinned(g)]
        arr = np.array(on, dtype=np.int64)
        rate, up = self.rate[arr], self.coupled_now[arr]
        pinned = (rate >= self.cap_now[arr] * (1 - REL)) | ((up >= 0) & (rate >= self.rate[up] * (1 - REL)))
        return arr[~pinned].tolist()

    def _behind_moved(self, moved: set[int]) -> list[int]:
        """Flowing transfers pipelined behind the flows ``moved`` (their events follow their
        upstream's progress); pending ones waiting for their upstream's first chunk get that
        event rescheduled."""
        if len(moved) > tuning.SMALL:
            kids = self._downstream(np.fromiter(moved, dtype=np.int64, count=len(moved)))
        else:
            kids = np.array([c for f in moved for c in self._downstream_of(f)], dtype=np.int64)
        status = self.status[kids]
        for c in kids[status == PENDING].tolist():
            if c in self.waiting_upstream:
                self._schedule_activation(c)
        return kids[status == FLOWING].tolist()

    def _upstream_state(self, i: int) -> tuple[bool, float, float]:
        """(free, ahead, upstream rate) of flowing transfer ``i``: not bound by an upstream;
        how far the upstream is past ``base + chunk`` (bytes); the upstream's rate."""
        u = self.upstream[i]
        if u < 0 or self.status[u] != FLOWING or self.released[i]:
            return True, math.inf, 0.0
        ahead = self._sent(u) - self.base[i] - self.chunk
        return bool(ahead >= self.size[i] * (1 - REL)), float(ahead), float(self.rate[u])

    def _constraint_one(self, i: int) -> tuple[float, int]:
        """``_constraints`` of one transfer, without arrays (most events touch a few flows)."""
        free, ahead, _ = self._upstream_state(i)
        cap = float(self.flow_cap[i])
        size = self.size[i]
        if free or self._sent(i) < min(max(ahead, 0.0), size) - REL * size:
            return cap, -1
        u = int(self.upstream[i])
        if ahead + REL * self.size[u] < 0 and not self.unblocked[i]:
            return 0.0, -1  # blocked
        return cap, u

    def _constraints(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Cap (0 while blocked) and coupled upstream (-1: none) of flowing transfers ``idx``.

        Coupled: pipelined, caught up with the bytes its upstream has delivered, upstream
        still flowing. Blocked: coupled while the upstream is not yet one chunk past our first
        byte (a range shorter than a chunk): nothing to send until it is."""
        caps = self.flow_cap[idx]
        u = self.upstream[idx]
        has = u >= 0
        uu = np.where(has, u, 0)
        size = self.size[idx]
        live = has & (self.status[uu] == FLOWING)
        ahead = self._sent_vec(uu) - self.base[idx] - self.chunk
        free = ~live | self.released[idx] | (ahead >= size * (1 - REL))
        av = np.clip(ahead, 0.0, size)
        coupled = ~free & (self._sent_vec(idx) >= av - REL * size)
        blocked = coupled & (ahead + REL * self.size[uu] < 0) & ~self.unblocked[idx]
        caps = np.where(blocked, 0.0, caps)
        return caps, np.where(coupled & ~blocked, u, -1)

    def _close(self, flows: set[int]) -> set[int]:
        """``flows`` with every flow coupled to one of them, transitively (a coupled pair's
        rates are decided together)."""
        out = set(flows)
        stack = list(flows)
        coupled_now = self.coupled_now
        while stack:
            f = stack.pop()
            p = int(coupled_now[f])
            if p >= 0 and p not in out:
                out.add(p)
                stack.append(p)
            if self.n_coupled[f]:
                for k in self._downstream_of(f):
                    if coupled_now[k] == f and k not in out:
                        out.add(k)
                        stack.append(k)
        return out

    def _pinned(self, g: int) -> bool:
        """Flow ``g``'s rate is set by its own cap or its coupling, whatever else changes."""
        r = self.rate[g]
        if r >= self.cap_now[g] * (1 - REL):
            return True
        p = self.coupled_now[g]
        return bool(p >= 0 and r >= self.rate[p] * (1 - REL))

    def _rebalance(self, seeds: set[int]) -> np.ndarray:
        """Max-min rates after a change at flows ``seeds``; returns the flows whose rate
        changed, with their progress written back at the current time.

        Recomputes a set S of flows with every other flow fixed at its rate (S gets the
        capacity they leave), then grows S until the union is max-min fair: every flow keeps
        a bottleneck (its cap or coupling, or a saturated resource where no flow gets more).
        A flow outside S can lose its bottleneck only on a resource S crosses that is (or
        was) saturated, and only if it is not held by its own cap or coupling, or if it gets
        more there than a flow of S not held by its own either; such flows join S. Resources with slack never propagate
        a change, so a new flow costs what it touches even when every flow of the plan is
        connected to every other through shared links. Past a share of the flowing
        transfers, or once the growing rounds have together solved about twice as many flows
        as are flowing (a chain of saturated links grows S a few flows per round), all of them
        are recomputed at once."""
        limit = _local_limit(len(self.flowing))
        budget = 2 * len(self.flowing) + 64
        group = self._close(seeds) if len(seeds) <= limit else set(self.flowing)
        if len(group) == 1:
            (f,) = group
            done = self._rebalance_one(f)
            if done is not None:
                return done
        solved = 0
        while True:
            if len(group) > limit or solved > budget:
                comp = np.array(sorted(self.flowing), dtype=np.int64)
                rates, incidence = self._solve(comp, residual=False)
                break
            solved += len(group)
            comp = np.array(sorted(group), dtype=np.int64)
            rates, incidence = self._solve(comp, residual=True)
            more = self._unsettled(group, comp, rates, incidence)
            if not more:
                break
            group |= self._close(more)
        if self.compiled:
            return self._apply_compiled(comp, rates, incidence)
        return self._apply(comp, rates)

    def _rebalance_one(self, f: int) -> np.ndarray | None:
        """``_rebalance`` of a single uncoupled flow, without arrays: its max-min rate is its
        cap or the least capacity the others leave on its route. None when flows beside it
        may lose their bottleneck (then the general case handles it)."""
        if not self.route_simple[f]:
            return None
        route = self.route_res[f]
        old = float(self.rate[f])
        usage, capacity = self.usage, self.capacity
        rate = float(self.cap_now[f])
        for r in route:
            rate = min(rate, max(capacity[r] - usage[r] + old, 0.0))
        if math.isinf(rate):
            return None  # unbounded: the general case reports it
        # at its cap, f needs no resource as its bottleneck (see _unsettled)
        low = math.inf if rate >= self.cap_now[f] * (1 - REL) else rate * (1 + REL)
        for r in route:
            sat = capacity[r] * (1 - 1e-9)
            if usage[r] >= sat or usage[r] - old + rate >= sat:
                for g in self._flows_on(r):
                    if g != f and (self.rate[g] > low or not self._pinned(g)):
                        return None
        if rate == old:
            return np.zeros(0, dtype=np.int64)
        self.sent0[f] = self._sent(f)
        self.t0[f] = self.t
        for r in route:
            usage[r] += rate - old
        self.rate[f] = rate
        self._stale(f)
        return np.array([f], dtype=np.int64)

    def _solve(self, comp: np.ndarray, residual: bool) -> tuple:
        """Progressive filling over the flows ``comp`` (sorted, closed under coupling), on the
        capacity the other flowing transfers leave (``residual``) or on the whole of it.
        Returns the rates (aligned with ``comp``) and the incidence of ``comp`` on the
        resources, for ``_unsettled``. Up to ``small_solve`` flows, on Python scalars (the
        same operations in the same order: the same rates to the last bit)."""
        self.group_flows += len(comp)
        if self.compiled:
            return self._solve_compiled(comp, residual)
        if len(comp) <= self.small_solve:
            return self._solve_small(comp, residual)
        pos, lengths = csr_rows(self.res_ptr, self.route_of[comp])
        pair_flow = np.repeat(np.arange(len(comp)), lengths)
        used, local = compact_ids(self.res_idx[pos], len(self.capacity))
        if residual:
            own = np.bincount(local, weights=self.rate[comp][pair_flow], minlength=len(used))
            capacity = np.maximum(self.capacity[used] - self.usage[used] + own, 0.0)
        else:
            capacity = self.capacity[used]
        cp = self.coupled_now[comp]
        k_c = np.flatnonzero(cp >= 0)
        parents = np.searchsorted(comp, cp[k_c])
        parent = None
        if len(k_c):
            parent = np.full(len(comp), -1, dtype=np.int64)
            parent[k_c] = parents
        rates = progressive_filling(pair_flow, local, capacity, self.cap_now[comp], parent=parent)
        if len(k_c):
            # a coupled flow held below its upstream's rate by its own bottleneck falls
            # behind at once: it is uncoupled at the next event
            self.dirty.update(comp[k_c[rates[k_c] < rates[parents]]].tolist())
        return rates, (used, local, pair_flow)

    def _unsettled(self, group: set[int], comp: np.ndarray, rates, incidence: tuple) -> set[int]:
        """Flows outside ``group`` that may lose their bottleneck with ``comp`` at ``rates``."""
        if self.compiled:
            return self._unsettled_compiled(group, comp, rates, incidence)
        if isinstance(rates, list):
            return self._unsettled_small(group, comp, rates, *incidence)
        used, local, pair_flow = incidence
        old = np.bincount(local, weights=self.rate[comp][pair_flow], minlength=len(used))
        new = np.bincount(local, weights=rates[pair_flow], minlength=len(used))
        capacity = self.capacity[used] * (1 - 1e-9)
        saturated = (self.usage[used] >= capacity) | (self.usage[used] - old + new >= capacity)
        shared = self.n_users[used] > np.bincount(local, minlength=len(used))
        crowded = np.flatnonzero(saturated & shared)
        if not len(crowded):
            return set()
        # a flow of comp held by its cap or coupling needs no resource as its bottleneck; one
        # that is not must get the most on some saturated resource it crosses, so a flow
        # outside getting more than it there may have to give way
        free = ~self._pinned_at(comp, rates)[pair_flow]
        lowest = np.full(len(used), np.inf)
        np.minimum.at(lowest, local[free], rates[pair_flow[free]])
        more: set[int] = set()
        for k in crowded.tolist():
            low = lowest[k] * (1 + REL)
            for g in self._flows_on(int(used[k])):
                if g not in group and g not in more and (self.rate[g] > low or not self._pinned(g)):
                    more.add(g)
        return more

    def _pinned_at(self, comp: np.ndarray, rates: np.ndarray) -> np.ndarray:
        """``_pinned`` of every flow of ``comp`` (sorted, closed under coupling) at ``rates``."""
        pinned = rates >= self.cap_now[comp] * (1 - REL)
        cp = self.coupled_now[comp]
        k = np.flatnonzero(cp >= 0)
        pinned[k] |= rates[k] >= rates[np.searchsorted(comp, cp[k])] * (1 - REL)
        return pinned

    def _apply(self, comp: np.ndarray, rates) -> np.ndarray:
        """Set the new rates of ``comp``; returns the flows whose rate changed."""
        if isinstance(rates, list):
            return self._apply_small(comp, rates)
        changed = rates != self.rate[comp]
        idx = comp[changed]
        if len(idx):
            self.sent0[idx] = self._sent_vec(idx)
            self.t0[idx] = self.t
            res, owner = self._route_pairs(idx)
            np.add.at(self.usage, res, rates[changed][np.searchsorted(idx, owner)] - self.rate[owner])
            self.rate[idx] = rates[changed]
            self._stale_all(idx)
        return idx


def _local_limit(flowing: int) -> int:
    """The most flows a local recomputation may hold before every flowing transfer is
    recomputed instead. A group of a quarter of them costs about what the whole does (per
    solve, numpy's fixed costs dominate below a few thousand flows), and one that large has
    usually met saturated resources that grow it round after round (a flow ending on a link
    that dozens of exchanges share frees every one of them)."""
    share = min(max(flowing // 4, tuning.LOCAL_COMPONENT_MIN), tuning.LOCAL_COMPONENT_LIMIT)
    return max(share, flowing // 8)


def _keeps_rate(rate, cap, upstream_rate):
    """A flow at ``rate`` whose cap or coupling changed (now ``cap``, coupled to a flow at
    ``upstream_rate``, inf when uncoupled) keeps its max-min rate: the rate meets both, and
    one of them still holds it there, whatever the other flows do (arrays or scalars)."""
    meets = (rate <= cap * (1 + REL)) & (rate <= upstream_rate * (1 + REL))
    return meets & ((rate >= cap * (1 - REL)) | (rate >= upstream_rate * (1 - REL)))


class SmallRates(Room):
    """``_solve``, ``_unsettled`` and ``_apply`` of a group of a few dozen flows on Python
    scalars (a mixin of ``_Sim`` beside ``Rates``): numpy's cost per call is most of what
    these cost on arrays that small. Each sums, compares and rounds as its array version
    does, in the same order, so that both give the same rates to the last bit."""

    def _solve_small(self, comp: np.ndarray, residual: bool) -> tuple[list[float], tuple]:
        local: dict[int, int] = {}  # resource -> its position among the used ones
        route_res = self.route_res
        routes = [[local.setdefault(r, len(local)) for r in route_res[f]] for f in comp.tolist()]
        used = np.fromiter(local, dtype=np.int64, count=len(local))
        old = self.rate[comp].tolist()
        if residual:
            own = [0.0] * len(used)
            for rate, route in zip(old, routes):
                for k in route:
                    own[k] += rate
            free = zip(self.capacity[used].tolist(), self.usage[used].tolist(), own)
            capacity = [max(total - usage + mine, 0.0) for total, usage, mine in free]
        else:
            capacity = self.capacity[used].tolist()
        coupled = self.coupled_now[comp]
        parent = None
        if (coupled >= 0).any():
            position = {f: k for k, f in enumerate(comp.tolist())}
            parent = [position[u] if u >= 0 else -1 for u in coupled.tolist()]
        caps = self.cap_now[comp].tolist()
        rates = progressive_filling_small(routes, capacity, caps, parent)
        if parent is not None:
            for k, p in enumerate(parent):
                # a coupled flow held below its upstream's rate falls behind (as in _solve)
                if p >= 0 and rates[k] < rates[p]:
                    self.dirty.add(int(comp[k]))
        return rates, (used, routes, parent, old, caps)

    def _unsettled_small(self, group, comp, rates, used, routes, parent, old_rates, caps) -> set[int]:
        n_used = len(used)
        old, new, pairs = [0.0] * n_used, [0.0] * n_used, [0] * n_used
        for route, r_old, r_new in zip(routes, old_rates, rates):
            for k in route:
                old[k] += r_old
                new[k] += r_new
                pairs[k] += 1
        crowded = []
        state = zip(self.capacity[used].tolist(), self.usage[used].tolist(), self.n_users[used].tolist())
        for k, (total, usage, users) in enumerate(state):
            capacity = total * (1 - 1e-9)
            if (usage >= capacity or usage - old[k] + new[k] >= capacity) and users > pairs[k]:
                crowded.append(k)
        if not crowded:
            return set()
        # as in _unsettled: the least rate on each resource among flows not pinned there
        lowest = [math.inf] * n_used
        for k, (route, r_new, cap) in enumerate(zip(routes, rates, caps)):
            if r_new >= cap * (1 - REL) or (
                parent is not None and parent[k] >= 0 and r_new >= rates[parent[k]] * (1 - REL)
            ):
                continue
            for j in route:
                if r_new < lowest[j]:
                    lowest[j] = r_new
        more: set[int] = set()
        rate = self.rate
        for k in crowded:
            low = lowest[k] * (1 + REL)
            for g in self._flows_on(int(used[k])):
                if g not in group and g not in more and (rate[g] > low or not self._pinned(g)):
                    more.add(g)
        return more

    def _apply_small(self, comp: np.ndarray, rates: list[float]) -> np.ndarray:
        rate, sent0, t0, usage, t = self.rate, self.sent0, self.t0, self.usage, self.t
        changed = [(f, new, old) for f, new, old in zip(comp.tolist(), rates, rate[comp].tolist()) if new != old]
        for f, new, old in changed:
            sent0[f] = sent0[f] + old * (t - t0[f])
            t0[f] = t
            rate[f] = new
        for f, new, old in changed:
            delta = new - old
            for r in self.route_res[f]:
                usage[r] += delta
        idx = np.array([f for f, _, _ in changed], dtype=np.int64)
        if len(idx):
            self._stale_all(idx)
        return idx
