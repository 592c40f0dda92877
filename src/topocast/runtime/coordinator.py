"""The coordinator: starts one agent per host, hands out the plan, watches the run.

``perform(plan, topology, launcher=...)`` returns a :class:`RunOutcome` whose ``result`` has
the shape of a prediction (``topocast.results.Result``, ``kind="measured"``).

Timing: every agent takes its clock origin when ``start`` reaches it (all agents get it
within a millisecond on one machine) and reports the time it held every byte it wanted,
verified chunk by chunk; the whole-message digest is checked before it reports success.

Failures: an agent whose control connection drops is dead (its exit status says why); the
coordinator tells every agent, and the hosts that were receiving from it fetch the missing
bytes again from any live host that holds them (the coordinator answers "who holds these
bytes?" from the agents' progress reports). Hosts that cannot complete report why; hosts
that never report by the deadline are reported as timed out with how much they held.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..plan import Plan
from ..results import Result, aggregate_from_times
from .adapt import Adapter, make_adapter
from .agents import RunError, RunInputError
from .cpuload import STEAL_WARN, busy_share, cpu_times, cpu_verdict, niced_share, steal_share
from .message import RESUME_MAX_BYTES, check_room, prepare_message
from .protocol import AgentConfig, Msg
from .startup import Session, hand_out, require_alive, start_agents
from .store import peak_rss
from .watch import ProgressCallback, Watch, stop_all, wanted_total

if TYPE_CHECKING:
    from ..topology import Topology
    from .absent import Replan
    from .launchers import Launcher

__all__ = ["perform", "RunOutcome", "RunError", "DEFAULT_CHUNK"]

DEFAULT_CHUNK = 64 * 1024


@dataclass
class RunOutcome:
    result: Result
    failed: dict = field(default_factory=dict)  # host -> reason
    warnings: list = field(default_factory=list)
    cpu: dict = field(default_factory=dict)  # host -> agent CPU seconds
    wall: float = 0.0
    cpu_bound: str = ""  # non-empty when the CPU, not the links, likely set the pace
    cpu_busy: float | None = None  # fraction of all cores busy during the run (whole machine, niced work excluded)
    cpu_niced: float | None = None  # fraction of all cores running niced (nice > 0) processes during the run
    # fraction of all cores' time the hypervisor ran something else while ours wanted to run
    # ("steal"; part of cpu_busy): on a shared VM it delays the emulated links' timers too
    cpu_steal: float | None = None
    # the worst second of steal: (fraction of all cores' time, run clock in s at its end);
    # an average over a 30 s run hides a second in which the hypervisor took half the CPU
    cpu_steal_peak: tuple | None = None
    # transfer index -> (ready, connected): when the sender could start it (its `after` done,
    # its bytes held) and when its data connection was authenticated (run clock, seconds)
    send_times: dict = field(default_factory=dict)
    # host -> the agent's peak resident memory (bytes), and the coordinator's own
    peak_rss: dict = field(default_factory=dict)
    coordinator_rss: int = 0
    # host -> bytes an earlier run left in --dest-dir that verified and were not moved again
    kept: dict = field(default_factory=dict)
    # host -> bytes that arrived at the host in data frames (its pushes and repairs)
    received: dict = field(default_factory=dict)
    # host -> why its agent never came (failed before the start); the run went on without it
    absent: dict = field(default_factory=dict)
    plan: Plan | None = None  # the plan performed (another one when hosts were absent)
    # adapt: every decision of the watch (when, why, what changed, predicted gain, applied)
    replans: list = field(default_factory=list)


def perform(
    plan: Plan,
    topology: Topology | None = None,
    *,
    launcher: Launcher,
    file: str | None = None,
    seed: int = 1,
    chunk_size: int = DEFAULT_CHUNK,
    dest_dir: str | None = None,
    timeout: float | None = None,
    idle_timeout: float = 60.0,
    stall_timeout: float = 6.0,
    repair_timeout: float = 30.0,
    on_progress: ProgressCallback | None = None,
    on_start: Callable[[dict], object] | None = None,
    fair_uplink: bool = False,
    goodput: float = 1.0,
    sndbuf: int | None = None,
    max_frame: int | None = None,
    prefault: bool = True,
    before_start: Callable[[], object] | None = None,
    resume: bool = True,
    all_or_nothing: bool = False,
    replan: Replan | None = None,
    adapt: bool | Adapter = False,
    planner: Callable[[Topology], Plan] | None = None,
) -> RunOutcome:
    """Perform ``plan`` with one agent per host started by ``launcher``.

    ``file``: the message (every initial holder reads it at this path); otherwise ``seed``
    generates ``plan.size`` pseudo-random bytes. ``on_progress(held: {host: bytes}, seconds)``
    is called about ten times a second; ``on_start(agents)`` once the data starts moving
    (``agents`` maps host -> process handle, for tests that kill one). A run fails when no
    byte has moved anywhere for ``idle_timeout`` seconds (a stalled run, whatever the message
    size), or after ``timeout`` seconds in all when given.

    ``fair_uplink`` (needs ``topology``): every agent shares its links among its own
    transfers max-min, as the simulator does (``runtime.pacing``): one round-robin pacer per
    access link at its bandwidth x ``goodput``, caps on the links further on, send buffers of
    ``sndbuf`` bytes (default four chunks). Meant for runs whose topology is the real network
    (the testbed): the agents pace to the topology's bandwidths.

    ``max_frame``: the largest data frame a sender that nothing paces sends (default 1 MiB;
    paced and rate-capped transfers send chunk-sized frames). ``prefault``: receivers without
    ``dest_dir`` touch their memory before the start, so the measured transfer does not
    include the kernel's first-touch cost (it is part of the set-up instead). With
    ``dest_dir`` every receiver streams to its file and no process holds the message in
    memory; without it, a run that needs more memory than this machine has available (for
    launchers whose agents share this machine) is refused before any agent starts.

    ``before_start()`` is called once every agent is ready, before the data moves (the CLI
    finishes its prediction while the agents start, and never during the transfer).

    ``resume`` (with ``dest_dir``): every receiver keeps the pieces of an earlier run's file
    there that verify against the message, and only the rest moves (``runtime.resume``).

    A host whose agent fails before the start is reported (``RunOutcome.absent``, and in
    ``failed``) and the others go on with a plan made again without it (``runtime.absent``):
    ``replan(missing hosts)`` when given, else the plan with those hosts spliced out.
    ``all_or_nothing``: such a failure stops the run before any byte moves (``RunError``).

    ``adapt`` (a broadcast, needs ``topology``): the coordinator compares every transfer's
    measured rate with its prediction and, when the network changed, plans the rest again
    (``runtime.adapt``) with ``planner(topology)`` (default: the plan's planner from the
    registry); ``RunOutcome.replans`` reports every decision. An ``Adapter`` given as
    ``adapt`` is used as it is (``probe --verify`` watches with one that only corrects).
    """
    _refuse(plan, topology, fair_uplink)
    pacing_of = _pacer(topology if fair_uplink else None, goodput, sndbuf or 4 * chunk_size)
    run = Session(asked=plan, plan=plan, hosts=list(plan.hosts), pacing_of=pacing_of, replan=replan)
    # step 1: the message and the digest every receiver must reach (computed while the
    # agents start), and what this machine must be able to hold
    resume = bool(resume and dest_dir and 0 < plan.size <= RESUME_MAX_BYTES)
    data_spec, dest_name, digest_job = prepare_message(plan, file, seed, pieces=resume)
    if getattr(launcher, "shared_clock", False):
        check_room(plan, dest_dir)
    listener, control_addr = launcher.control_listen()
    listener.settimeout(1.0)
    try:
        # step 2: start the agents and let them connect back
        peers = start_agents(run, launcher, listener, control_addr, dest_dir, lenient=not all_or_nothing)
        # step 3: configuration (each agent learns only its own transfers)
        settings = AgentConfig(
            size=plan.size,
            chunk_size=chunk_size,
            stall_timeout=stall_timeout,
            repair_timeout=repair_timeout,
            peers=peers,
            data=data_spec,
            dest_name=dest_name,
            max_frame=max_frame,
            prefault=prefault,
        )
        digests = hand_out(run, settings, digest_job, lenient=not all_or_nothing)
        adapter = (
            adapt
            if isinstance(adapt, Adapter)
            else (make_adapter(run.plan, topology, planner, goodput, chunk_size) if adapt else None)
        )
        if before_start is not None:
            before_start()
        if all_or_nothing:
            require_alive(run)
        # step 4: go, and watch
        wall, stats = _go_and_watch(run, launcher, digests, adapter, on_start, on_progress, timeout, idle_timeout)
        # step 5: stop the agents, collect their CPU time
        assert run.watch is not None
        run.watch.shut_down()
        for h, notes in run.watch.broken_notes.items():
            for n in dict.fromkeys(notes):
                run.warnings.append(f"{h}: {n}")
    finally:
        for c in run.conns.values():
            c.close()
        listener.close()
        stop_all(run.procs, run.watch, set(run.conns))
        launcher.close()
    # step 6: the result, in the shape of a prediction
    return _outcome(run, run.watch, adapter, wall, stats)


def _refuse(plan: Plan, topology: Topology | None, fair_uplink: bool) -> None:
    """Requests the runtime cannot perform, refused before any agent starts."""
    if any(t.reduce for t in plan.transfers):
        raise RunInputError(
            "this plan reduces data (allreduce); the runtime performs broadcast and redistribution plans only"
        )
    if fair_uplink and topology is None:
        raise RunInputError("fair_uplink needs the topology (the agents pace to its link bandwidths)")


def _pacer(topology: Topology | None, goodput: float, sndbuf: int) -> Callable[[Plan], dict]:
    """A plan -> each host's pacing configuration (``runtime.pacing``); none without ``topology``."""

    def pacing_of(p: Plan) -> dict:
        if topology is None:
            return {}
        from .pacing import pacing_config

        return pacing_config(p, topology, goodput, sndbuf)

    return pacing_of


def _go_and_watch(
    run: Session,
    launcher: Launcher,
    digests: dict[str, str],
    adapter: Adapter | None,
    on_start: Callable[[dict], object] | None,
    on_progress: ProgressCallback | None,
    timeout: float | None,
    idle_timeout: float,
) -> tuple[float, tuple]:
    """Step 4: every agent starts, and the coordinator watches until every host that wants
    data completed or failed. A run that stops moving data is caught by the time since the
    last byte moved anywhere (``idle_timeout``), whatever the message size; ``timeout`` is an
    optional cap on the whole run. Returns the wall time and the machine's CPU counters at
    the start and at the end."""
    t0 = time.monotonic()
    shared = getattr(launcher, "shared_clock", False)
    for h in run.hosts:
        run.conns[h].send_json({"type": Msg.START, "t0": t0 if shared else None})
    stat0 = cpu_times()
    if on_start:
        on_start(run.procs)
    watch = run.watch = Watch(run.plan, run.hosts, run.conns, run.procs, run.events, digests, t0, run.warnings)
    watch.adapter = adapter
    for h, iv in run.kept.items():
        watch.holdings[h].add_ranges((s, e - s) for s, e in iv)
        watch.held_bytes[h] = watch.holdings[h].total
    watch.run(timeout, idle_timeout, on_progress)
    wall = time.monotonic() - t0
    stat1 = cpu_times()
    if on_progress:
        on_progress({x: watch.held_bytes[x] for x in watch.wanted}, wall)
    return wall, (stat0, stat1)


def _outcome(run: Session, watch: Watch, adapter: Adapter | None, wall: float, stats: tuple) -> RunOutcome:
    """Step 6: what the agents reported, in the shape of a prediction."""
    wanted, done, failed, warnings = watch.wanted, watch.done, watch.failed, run.warnings
    for h, why in run.absent.items():
        if h in run.asked.wanted:
            wanted[h], failed[h] = run.asked.wanted[h], f"never came: its agent {why}"
    times = {h: done.get(h, math.inf) for h in wanted}
    per_host, makespan, aggregate = aggregate_from_times({h: wanted_total(r) for h, r in wanted.items()}, times)
    for h, t in times.items():
        if t <= 0:  # only without a shared clock (ssh): bytes arrived before "start"
            warnings.append(f"{h}: completed before its clock started; its rate cannot be measured")
        if h not in done:
            per_host[h] = dataclasses.replace(per_host[h], reason=failed.get(h, "did not complete"))
    plan = run.plan
    ttimes = tuple(watch.transfer_times.get(i, (math.nan, math.nan)) for i in range(len(plan.transfers)))
    result = Result(plan.planner or "plan", per_host, makespan, aggregate, kind="measured", transfer_times=ttimes)
    stat0, stat1 = stats
    busy, niced = busy_share(stat0, stat1), niced_share(stat0, stat1)
    steal_peak = watch.steal_watch.peak
    if steal_peak and steal_peak[0] >= STEAL_WARN:
        warnings.append(
            f"the hypervisor took {steal_peak[0]:.0%} of this machine's CPU time in the second before "
            f"t = {steal_peak[1]:.1f} s (steal): times measured around then may be late"
        )
    return RunOutcome(
        result,
        failed={h: r.reason for h, r in per_host.items() if not r.completed},
        warnings=warnings,
        cpu=watch.cpu,
        wall=wall,
        cpu_bound=cpu_verdict(watch.cpu, wall, busy, niced),
        cpu_busy=busy,
        cpu_niced=niced,
        cpu_steal=steal_share(stat0, stat1),
        cpu_steal_peak=steal_peak,
        send_times=watch.send_times,
        peak_rss=watch.rss,
        coordinator_rss=peak_rss() or 0,
        kept={h: iv.total for h, iv in run.kept.items()},
        received=dict(watch.received),
        absent=dict(run.absent),
        plan=plan,
        replans=list(adapter.reports) if adapter is not None else [],
    )
