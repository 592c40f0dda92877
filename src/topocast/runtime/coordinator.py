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
import os
import queue
import secrets
import stat
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..intervals import IntervalSet
from ..plan import Plan
from ..results import Result, aggregate_from_times
from .absent import go_without
from .adapt import Adapter, make_adapter
from .agents import (
    RunError,
    RunInputError,
    connect_agents,
    describe_exit,
    read_messages,
    send_quietly,
    stderr_tail,
    stop_agent,
    wait_exit,
)
from .protocol import Conn, Msg
from .resume import send_trims
from .store import peak_rss

if TYPE_CHECKING:
    from ..topology import Topology
    from .absent import Replan
    from .launchers import Launcher

ProgressCallback = Callable[[dict[str, float], float], object]  # (bytes held per host, seconds)

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


def _wanted_total(ranges) -> int:
    return sum(length for _, length in ranges)


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
    if any(t.reduce for t in plan.transfers):
        raise RunInputError(
            "this plan reduces data (allreduce); the runtime performs broadcast and redistribution plans only"
        )
    hosts = list(plan.hosts)
    size = plan.size
    asked = plan
    if fair_uplink and topology is None:
        raise RunInputError("fair_uplink needs the topology (the agents pace to its link bandwidths)")

    def pacing_of(p: Plan) -> dict:
        if not fair_uplink:
            return {}
        from .pacing import pacing_config

        assert topology is not None  # checked above
        return pacing_config(p, topology, goodput, sndbuf or 4 * chunk_size)

    pacing = pacing_of(plan)
    # step 1: the message and the digest every receiver must reach (computed while the
    # agents start), and what this machine must be able to hold
    resume = bool(resume and dest_dir and 0 < size <= RESUME_MAX_BYTES)
    data_spec, dest_name, digest_job = _message(plan, file, seed, pieces=resume)
    if getattr(launcher, "shared_clock", False):
        _check_room(plan, dest_dir)

    secret = secrets.token_bytes(32)
    listener, control_addr = launcher.control_listen()
    listener.settimeout(1.0)
    procs: dict = {}
    conns: dict[str, Conn] = {}
    events: queue.Queue = queue.Queue()
    warnings: list[str] = []
    absent: dict[str, str] = {}
    watch = None
    try:
        # step 2: start the agents and let them connect back; without those that never came,
        # the plan is made again for the hosts that are there
        lenient = None if all_or_nothing else absent
        hello = connect_agents(launcher, hosts, procs, conns, listener, control_addr, secret, dest_dir, lenient)
        peers = {h: [m["address"], int(m["port"])] for h, m in hello.items()}
        if absent:
            plan, hosts, pacing = go_without(asked, absent, replan, warnings, pacing_of)

        # step 3: configuration (each agent learns only its own transfers)
        settings = {
            "size": size,
            "chunk_size": chunk_size,
            "stall_timeout": stall_timeout,
            "repair_timeout": repair_timeout,
            "peers": peers,
            "data": data_spec,
            "dest_name": dest_name,
            "max_frame": max_frame,
            "prefault": prefault,
        }
        digests, piece_hashes = digest_job.result()
        if piece_hashes is not None:
            settings["piece_hashes"] = piece_hashes
        seen = set(absent)
        kept = _configure(plan, hosts, conns, procs, events, digests, pacing, settings, lenient)
        if set(absent) != seen:  # some failed while setting up: the others get the new plan
            plan, hosts, pacing = go_without(asked, absent, replan, warnings, pacing_of)
            _reconfigure(plan, hosts, conns, pacing)
        send_trims(plan, conns, kept)
        adapter = (
            adapt
            if isinstance(adapt, Adapter)
            else (make_adapter(plan, topology, planner, goodput, chunk_size) if adapt else None)
        )

        if before_start is not None:
            before_start()
        # step 4: go, and watch. A run that stops moving data is caught by the time since the
        # last byte moved anywhere (idle_timeout), whatever the message size; ``timeout``
        # is an optional cap on the whole run.
        t0 = time.monotonic()
        shared = getattr(launcher, "shared_clock", False)
        for h in hosts:
            conns[h].send_json({"type": Msg.START, "t0": t0 if shared else None})
        stat0 = _cpu_times()
        if on_start:
            on_start(procs)
        watch = _Watch(plan, hosts, conns, procs, events, digests, t0, warnings)
        watch.adapter = adapter
        for h, iv in kept.items():
            watch.holdings[h].add_ranges((s, e - s) for s, e in iv)
            watch.held_bytes[h] = watch.holdings[h].total
        watch.run(timeout, idle_timeout, on_progress)
        wanted, done, failed = watch.wanted, watch.done, watch.failed
        held_bytes, transfer_times, send_times, cpu = (
            watch.held_bytes,
            watch.transfer_times,
            watch.send_times,
            watch.cpu,
        )
        broken_notes, steal_watch = watch.broken_notes, watch.steal_watch
        wall = time.monotonic() - t0
        stat1 = _cpu_times()
        if on_progress:
            on_progress({x: held_bytes[x] for x in wanted}, wall)

        # step 5: stop the agents, collect their CPU time
        watch.shut_down()
        for h, notes in broken_notes.items():
            for n in dict.fromkeys(notes):
                warnings.append(f"{h}: {n}")
    finally:
        for c in conns.values():
            c.close()
        listener.close()
        _stop_all(procs, watch)
        launcher.close()

    # step 6: the result, in the shape of a prediction
    for h, why in absent.items():
        if h in asked.wanted:
            wanted[h], failed[h] = asked.wanted[h], f"never came: its agent {why}"
    times = {h: done.get(h, math.inf) for h in wanted}
    per_host, makespan, aggregate = aggregate_from_times({h: _wanted_total(r) for h, r in wanted.items()}, times)
    for h, t in times.items():
        if t <= 0:  # only without a shared clock (ssh): bytes arrived before "start"
            warnings.append(f"{h}: completed before its clock started; its rate cannot be measured")
        if h not in done:
            per_host[h] = dataclasses.replace(per_host[h], reason=failed.get(h, "did not complete"))
    ttimes = tuple(transfer_times.get(i, (math.nan, math.nan)) for i in range(len(plan.transfers)))
    result = Result(plan.planner or "plan", per_host, makespan, aggregate, kind="measured", transfer_times=ttimes)
    busy, niced = _busy(stat0, stat1), _niced(stat0, stat1)
    cpu_bound = _cpu_verdict(cpu, wall, busy, niced)
    if steal_watch.peak and steal_watch.peak[0] >= STEAL_WARN:
        warnings.append(
            f"the hypervisor took {steal_watch.peak[0]:.0%} of this machine's CPU time in the second before "
            f"t = {steal_watch.peak[1]:.1f} s (steal): times measured around then may be late"
        )
    return RunOutcome(
        result,
        failed={h: r.reason for h, r in per_host.items() if not r.completed},
        warnings=warnings,
        cpu=cpu,
        wall=wall,
        cpu_bound=cpu_bound,
        cpu_busy=busy,
        cpu_niced=niced,
        cpu_steal=_steal(stat0, stat1),
        cpu_steal_peak=steal_watch.peak,
        send_times=send_times,
        peak_rss=watch.rss,
        coordinator_rss=peak_rss() or 0,
        kept={h: iv.total for h, iv in kept.items()},
        received=dict(watch.received),
        absent=dict(absent),
        plan=plan,
        replans=list(adapter.reports) if adapter is not None else [],
    )


LOST_SETTLE = 1.0  # s after a death before bytes no live host holds count as lost (progress reports arrive every 0.1 s)
STEAL_WARN = 0.2  # a second with at least this much steal gets a warning in the run's outcome


class StealWatch:
    """The worst ``window`` seconds of hypervisor steal during a run, from /proc/stat read at
    most every ``every`` seconds: on a shared VM, steal in the first seconds of a run makes the
    measured times late (docs/experiments/runtime.md)."""

    def __init__(self, t0: float, window: float = 1.0, every: float = 0.25, read=None):
        self.t0, self.window, self.every = t0, window, every
        self.read = read or _cpu_times
        self.samples: deque = deque()
        self.peak: tuple | None = None  # (fraction, run clock at the window's end)
        self.last = -math.inf

    def tick(self, now: float) -> None:
        if now - self.last < self.every:
            return
        self.last = now
        st = self.read()
        if not st:
            return
        self.samples.append((now, st))
        # the oldest sample at least `window` before this one starts the window
        while len(self.samples) > 2 and now - self.samples[1][0] >= self.window:
            self.samples.popleft()
        t_old, old = self.samples[0]
        if now - t_old >= self.window * 0.99:
            f = _steal(old, st)
            if f is not None and (self.peak is None or f > self.peak[0]):
                self.peak = (f, now - self.t0)


def _cpu_times():
    """(busy, total, niced) jiffies of all CPUs from /proc/stat, or None.

    ``busy`` excludes the ``nice`` column: processes at nice > 0 (background jobs started
    with ``nice -n 19``) get a tiny share of a core next to the agents (weight 15 vs 1024
    at nice 19), so they do not set the run's pace; counting them made every run on a
    machine with niced background work look CPU-bound."""
    try:
        with open("/proc/stat") as fh:
            return _parse_stat(fh.readline())
    except (OSError, ValueError, IndexError):
        return None


def _parse_stat(line: str):
    """(busy, total, niced, steal) from the ``cpu`` line of /proc/stat (see ``_cpu_times``)."""
    f = [int(x) for x in line.split()[1:]]
    idle = f[3] + (f[4] if len(f) > 4 else 0)
    nice = f[1] if len(f) > 1 else 0
    steal = f[7] if len(f) > 7 else 0
    guest = sum(f[8:10]) if len(f) > 9 else 0  # guest time is already counted in user/nice
    total = sum(f) - guest
    return total - idle - nice, total, nice, steal


def _share(a, b, k: int):
    """Field ``k`` of two ``_parse_stat`` readings as a fraction of all cores' time between
    them (None without two readings, or if no time passed)."""
    if not a or not b or b[1] <= a[1]:
        return None
    return (b[k] - a[k]) / (b[1] - a[1])


def _busy(a, b):
    return _share(a, b, 0)


def _niced(a, b):
    return _share(a, b, 2)


def _steal(a, b):
    return _share(a, b, 3)


def _stop_all(procs: dict, watch: _Watch | None) -> None:
    """Stop every agent, all at once. One that reported its statistics is exiting: it is not
    waited for. One that did not answer the shutdown within its wait is stuck (stopped,
    hung): killed after half a second. Any other (a failed start) gets ``stop_agent``'s
    grace. All in parallel: a failed start is not reported one grace per agent later."""
    stopped = set(watch.cpu) if watch is not None else set()
    asked = watch is not None and watch.shutdown_sent
    waits = []
    for h, p in procs.items():
        grace = 10.0 if h in stopped else 0.5 if asked else 2.0
        t = threading.Thread(target=stop_agent, args=(p, grace), daemon=True)
        t.start()
        if h not in stopped:
            waits.append(t)
    for t in waits:
        t.join()


def _cpu_verdict(cpu: dict, wall: float, busy: float | None = None, niced: float | None = None) -> str:
    """Say when the CPU, not the links, may have set the pace: an agent that kept a core
    busy, or a machine whose cores were (nearly) all busy during the run (agents, the
    kernel's shaping and forwarding, and anything else running at nice <= 0; niced
    background work yields to the run and is reported beside, not counted)."""
    if wall <= 0:
        return ""
    ncpu = os.cpu_count() or 1
    msgs = []
    if cpu:
        busiest, busiest_cpu = max(cpu.items(), key=lambda kv: kv[1])
        if busiest_cpu / wall > 0.8:
            msgs.append(f"agent {busiest} used {busiest_cpu / wall:.0%} of a core")
    if busy is not None and busy > 0.9 and wall >= 1.0:
        share = sum(cpu.values()) / (wall * ncpu) if cpu else 0.0
        bg = f", niced background work {niced:.0%}" if niced else ""
        msgs.append(
            f"the {ncpu} cores were {busy:.0%} busy during the run (agents {share:.0%}{bg}, load average {os.getloadavg()[0]:.1f})"
        )
    return "; ".join(msgs)


RESUME_MAX_BYTES = 128 << 30  # larger messages: no resume (the piece hashes would not fit one control message)


def _message(plan: Plan, file: str | None, seed: int, pieces: bool = False):
    """How the agents get the message (the file, or the seed of the generated data), the
    destination file name, and a background job computing (the digest each receiver must
    reach, the hash of every piece of the message or None): once per distinct set of wanted
    ranges, streaming (the message is never held); with ``pieces``, the piece hashes in one
    pass, and every digest made of whole pieces from them (``runtime.resume``)."""
    from .data import file_digest, generate_into, seeded_digest
    from .resume import digest_from_pieces, message_piece_hashes

    if file is not None:
        try:
            st = os.stat(file)
        except OSError as exc:
            raise RunInputError(f"{file}: cannot read the message ({exc.strerror})") from None
        if not stat.S_ISREG(st.st_mode):
            raise RunInputError(f"{file}: the message must be a regular file, not a directory or a device")
        if st.st_size != plan.size:
            raise RunInputError(f"{file}: the plan moves {plan.size} bytes but the file has {st.st_size}")
        data_spec: dict = {"file": os.path.abspath(file), "stat": [st.st_size, st.st_mtime_ns]}

        def digest(ranges):
            return file_digest(file, ranges)

        def hashes():
            with open(file, "rb") as fh:
                return message_piece_hashes(lambda off, view: os.preadv(fh.fileno(), [view], off), plan.size)

        dest_name = os.path.basename(file)
    else:
        data_spec = {"seed": seed}

        def digest(ranges):
            return seeded_digest(seed, ranges)

        def hashes():
            return message_piece_hashes(lambda off, view: generate_into(seed, off, view), plan.size)

        dest_name = "message.bin"

    def all_digests() -> tuple[dict[str, str], list[int] | None]:
        by_ranges: dict[tuple, str] = {}
        out: dict[str, str] = {}
        piece_hashes = hashes() if pieces else None
        for h, r in plan.wanted.items():
            key = tuple(sorted(r))
            if key not in by_ranges:
                whole = digest_from_pieces(piece_hashes, plan.size, key) if piece_hashes else None
                by_ranges[key] = whole if whole is not None else digest(key)
            out[h] = by_ranges[key]
        if file is not None:
            st2 = os.stat(file)
            if (st2.st_size, st2.st_mtime_ns) != tuple(data_spec["stat"]):
                raise RunError(f"{file} changed while its digest was computed")
        return out, piece_hashes

    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(1, thread_name_prefix="digest")
    job = pool.submit(all_digests)
    pool.shutdown(wait=False)
    return data_spec, dest_name, job


def _check_room(plan: Plan, dest_dir: str | None) -> None:
    """For agents on this machine: a writable ``dest_dir``, or enough memory for every
    receiver's store (a clear error before any agent starts, not an out-of-memory kill)."""
    from ..memory import available_memory
    from .store import MEMORY_MARGIN

    if dest_dir is not None:
        try:
            os.makedirs(dest_dir, exist_ok=True)
        except OSError as exc:
            raise RunInputError(f"--dest-dir {dest_dir}: cannot create it ({exc.strerror})") from None
        if not os.access(dest_dir, os.W_OK | os.X_OK):
            raise RunInputError(f"--dest-dir {dest_dir}: not writable")
        return
    held: dict[str, IntervalSet] = {}
    for h, ranges in plan.wanted.items():
        held.setdefault(h, IntervalSet()).add_ranges(ranges)
    for t in plan.transfers:
        held.setdefault(t.dst, IntervalSet()).add_ranges(t.ranges)
    need = sum(iv.total for iv in held.values())
    avail = available_memory()
    if avail is not None and need > avail * MEMORY_MARGIN:
        raise RunError(
            f"the run needs {need} bytes of memory on this machine (the stores of {len(held)} receiving hosts) "
            f"but {avail} are available; give --dest-dir DIR to stream the message to disk"
        )


def _transfers_of(plan: Plan, h: str) -> tuple[list, list]:
    """Host ``h``'s outgoing and incoming transfers, as the agents' configuration has them."""
    out = [
        {
            "index": i,
            "dst": t.dst,
            "ranges": [list(r) for r in t.ranges],
            "pipelined": t.pipelined,
            "after": list(t.after),
            "rate_cap": t.rate_cap,
        }
        for i, t in enumerate(plan.transfers)
        if t.src == h
    ]
    inc = [
        {"index": i, "src": t.src, "ranges": [list(r) for r in t.ranges]}
        for i, t in enumerate(plan.transfers)
        if t.dst == h
    ]
    return out, inc


def _reconfigure(plan: Plan, hosts, conns, pacing) -> None:
    """Before the start: every agent that is there gets its transfers of the new plan."""
    for h in hosts:
        out, inc = _transfers_of(plan, h)
        conns[h].send_json({"type": Msg.RECONFIG, "outgoing": out, "incoming": inc, "pacing": pacing.get(h)})


def _configure(
    plan: Plan, hosts, conns, procs, events, digests, pacing, settings: dict, absent: dict | None = None
) -> dict[str, IntervalSet]:
    """Send each agent its own transfers and settings, then wait (60 s at most) until every
    agent reports ready; returns the bytes each host kept from an earlier run. With
    ``absent``, an agent that fails meanwhile is recorded there (host -> why), not an error."""
    for h in hosts:
        out, inc = _transfers_of(plan, h)
        conns[h].send_json(
            {
                "type": Msg.CONFIG,
                **settings,
                "outgoing": out,
                "incoming": inc,
                "initial": [list(r) for r in plan.initial.get(h, ())],
                "wanted": [list(r) for r in sorted(plan.wanted.get(h, ()))],
                "digest": digests.get(h),
                "pacing": pacing.get(h),
            }
        )
    for h in hosts:
        threading.Thread(target=read_messages, args=(h, conns[h], events), daemon=True).start()
    ready: set[str] = set()
    kept: dict[str, IntervalSet] = {}
    lost: set[str] = set()
    deadline = time.monotonic() + 60
    while len(ready) + len(lost) < len(hosts):
        try:
            h, msg = events.get(timeout=max(0.01, deadline - time.monotonic()))
        except queue.Empty:
            late = sorted(set(hosts) - ready - lost)
            if absent is None:
                raise RunError(f"agents not ready within 60 s: {', '.join(late)}") from None
            absent.update((x, "was not ready within 60 s") for x in late)
            break
        if h in lost:
            continue
        if msg is None or msg.get("type") == Msg.FAILED:
            why = msg.get("reason") if msg else describe_exit(procs[h].wait(timeout=5) if wait_exit(procs[h]) else None)
            if absent is None:
                raise RunError(f"agent for {h} failed before the start: {why}{stderr_tail(procs, [h])}")
            absent[h] = f"failed before the start: {why}{stderr_tail(procs, [h])}"
            lost.add(h)
            ready.discard(h)
            kept.pop(h, None)
            continue
        if msg.get("type") == Msg.READY:
            ready.add(h)
            if msg.get("kept"):
                kept[h] = IntervalSet((int(s), int(e) - int(s)) for s, e in msg["kept"])
    return kept


class _Watch:
    """Step 4 of :func:`perform`: follow the agents' messages until every host that wants
    data completed or failed. One handler per message kind (``_handlers``)."""

    def __init__(self, plan: Plan, hosts, conns, procs, events, digests, t0: float, warnings: list):
        self.hosts, self.conns, self.procs, self.events, self.digests = hosts, conns, procs, events, digests
        self.t0, self.warnings = t0, warnings
        self.wanted = dict(plan.wanted)
        self.done: dict[str, float] = {}
        self.failed: dict[str, str] = {}
        self.dead: set[str] = set()
        self.holdings: dict[str, IntervalSet] = {h: IntervalSet(plan.initial.get(h, ())) for h in hosts}
        self.held_bytes: dict[str, float] = {h: self.holdings[h].total for h in hosts}
        self.transfer_times: dict[int, tuple[float, float]] = {}
        self.send_times: dict[int, tuple[float, float]] = {}
        self.cpu: dict[str, float] = {}
        self.rss: dict[str, int] = {}
        self.received: dict[str, int] = {}
        self.broken_notes: dict[str, list] = {}
        self.steal_watch = StealWatch(t0)
        self.adapter: Adapter | None = None  # the watch of an adaptive run
        self.transfer_bytes: dict[int, int] = {}  # incoming transfer -> bytes its receiver got on it
        self.last_moved = t0
        self.lost_check_at: float | None = None  # when to look for bytes no live host holds
        self.shutdown_sent = False  # every live agent was asked to stop (and waited for)
        self._handlers = {
            Msg.PROGRESS: self._on_progress,
            Msg.TDONE: self._on_tdone,
            Msg.TSEND: self._on_tsend,
            Msg.COMPLETE: self._on_complete,
            Msg.FAILED: self._on_failed,
            Msg.ABORT: self._on_abort,
            Msg.NEED: self._on_need,
            Msg.BROKEN: self._on_broken,
            Msg.WARN: self._on_warn,
            Msg.STATS: self._on_stats,
            Msg.MEASURED: self._on_measure,
            Msg.CONVERGED: self._on_measure,
        }

    def run(self, timeout: float | None, idle_timeout: float, on_progress: ProgressCallback | None) -> None:
        last_cb = 0.0
        while len(self.done) + len(self.failed) < len(self.wanted):
            if self._gave_up(timeout, idle_timeout):
                break
            try:
                h, msg = self.events.get(timeout=0.1)
            except queue.Empty:
                h, msg = None, None
            if h is not None and msg is None:  # control connection closed: the agent is gone
                self._on_gone(h)
            elif h is not None:
                handler = self._handlers.get(msg.get("type"))
                if handler is not None:
                    handler(h, msg)
            now = time.monotonic()
            if self.lost_check_at is not None and now >= self.lost_check_at:
                self.lost_check_at = None
                self._fail_unobtainable()
            self.steal_watch.tick(now)
            if self.adapter is not None and not self.dead:
                self._adapt(now)
            if on_progress and now - last_cb > 0.1:
                last_cb = now
                on_progress({x: self.held_bytes[x] for x in self.wanted}, now - self.t0)

    def _adapt(self, now: float) -> None:
        assert self.adapter is not None
        msgs = self.adapter.tick(now - self.t0, self.holdings, self.transfer_bytes, set(self.transfer_times))
        for h, msg in [*self.adapter.outgoing(), *(msgs or {}).items()]:
            if h not in self.dead:
                send_quietly(self.conns[h], msg)

    def _on_measure(self, h: str, msg: dict) -> None:
        """A targeted probe's answer (runtime.adapt); its stop messages go out at once."""
        if self.adapter is not None:
            self.adapter.on_measure(msg)
            for x, m in self.adapter.outgoing():
                if x not in self.dead:
                    send_quietly(self.conns[x], m)

    def shut_down(self) -> None:
        """Ask every live agent to stop and collect the CPU time each reports (3 s at most).
        Messages still on their way are handled too: a sender's timeline (TSEND) can arrive
        after its receiver's completion, since each agent has its own connection."""
        for h in self.hosts:
            if h not in self.dead:
                send_quietly(self.conns[h], {"type": Msg.SHUTDOWN})
        self.shutdown_sent = True
        end = time.monotonic() + 3
        while time.monotonic() < end and len(set(self.cpu) | self.dead) < len(self.hosts):
            try:
                h, msg = self.events.get(timeout=0.1)
            except queue.Empty:
                continue
            if msg is None:
                self.dead.add(h)
            elif msg.get("type") in (Msg.TSEND, Msg.TDONE, Msg.WARN, Msg.BROKEN, Msg.STATS):
                self._handlers[msg["type"]](h, msg)

    def _gave_up(self, timeout: float | None, idle_timeout: float) -> bool:
        """A stalled run (no byte moved anywhere for ``idle_timeout``) or one past ``timeout``:
        every host still running fails with the bytes it holds."""
        now = time.monotonic()
        if timeout is not None and now - self.t0 > timeout:
            why = f"timed out after {timeout:.0f} s"
        elif now - self.last_moved > idle_timeout:
            why = f"no byte moved anywhere for {idle_timeout:.0f} s"
        else:
            return False
        for h in self.wanted:
            if h not in self.done and h not in self.failed:
                self.failed[h] = f"{why}, holding {self.held_bytes[h]} of {_wanted_total(self.wanted[h])} bytes"
        return True

    def _to_live(self, msg: dict, *, skip: str | None = None) -> None:
        for o in self.hosts:
            if o not in self.dead and o != skip:
                send_quietly(self.conns[o], msg)

    def _on_gone(self, h: str) -> None:
        if h not in self.hosts:  # an agent that failed before the start: already reported
            return
        self.dead.add(h)
        reason = describe_exit(self.procs[h].returncode if wait_exit(self.procs[h]) else None)
        if h in self.wanted and h not in self.done and h not in self.failed:
            self.failed[h] = reason
        self.warnings.append(f"{h}: {reason} at t={time.monotonic() - self.t0:.2f} s")
        self._to_live({"type": Msg.PEER_DEAD, "host": h, "reason": reason})
        self.lost_check_at = time.monotonic() + LOST_SETTLE

    def _fail_unobtainable(self) -> None:
        """Fail every host that wants a byte no live host holds: bytes only ever come from
        a host that holds them, so once every holder of a byte is dead it can never arrive
        (the repair time-outs would only say so later). Runs ``LOST_SETTLE`` seconds after a
        death, once the live hosts' last progress reports are in."""
        live = IntervalSet()
        for h in self.hosts:
            if h not in self.dead:
                for a, b in self.holdings[h]:
                    live.add(a, b)
        dead = ", ".join(sorted(self.dead))
        for h, ranges in self.wanted.items():
            if h in self.done or h in self.failed or h in self.dead:
                continue
            lost = sum(e - s for off, length in ranges for s, e in live.missing(off, off + length))
            if lost:
                self.failed[h] = (
                    f"{lost} bytes missing: no live host holds them (the hosts that held them died: {dead})"
                )

    def _on_progress(self, h: str, msg: dict) -> None:
        iv = IntervalSet()
        for s, e in msg.get("intervals", ()):
            iv.add(int(s), int(e))
        self.holdings[h] = iv
        if iv.total != self.held_bytes[h]:
            self.last_moved = time.monotonic()
        self.held_bytes[h] = iv.total
        for i, n in (msg.get("transfers") or {}).items():
            self.transfer_bytes[int(i)] = int(n)

    def _on_tdone(self, h: str, msg: dict) -> None:
        i = int(msg["transfer"])
        self.transfer_times[i] = (float(msg.get("start", 0.0)), float(msg.get("end", 0.0)))
        self._to_live({"type": Msg.TDONE, "transfer": i}, skip=h)

    def _on_tsend(self, h: str, msg: dict) -> None:
        try:
            self.send_times[int(msg["transfer"])] = (float(msg["ready"]), float(msg["connected"]))
        except (KeyError, TypeError, ValueError):
            pass

    def _on_complete(self, h: str, msg: dict) -> None:
        if msg.get("digest") == self.digests.get(h):
            self.done[h] = float(msg["time"])
        else:
            self.failed[h] = "reported completion with a wrong digest"

    def _on_failed(self, h: str, msg: dict) -> None:
        if h in self.wanted and h not in self.done:
            self.failed[h] = str(msg.get("reason", "unknown"))

    def _on_abort(self, h: str, msg: dict) -> None:
        """No host can complete (the message itself is wrong): every host still running fails."""
        reason = str(msg.get("reason", "the run was aborted"))
        for x in self.wanted:
            if x not in self.done and x not in self.failed:
                self.failed[x] = reason
        self.warnings.append(f"{h}: {reason}")

    def _on_need(self, h: str, msg: dict) -> None:
        holders = _holders(msg, self.holdings, self.dead, h)
        send_quietly(self.conns[h], {"type": Msg.HOLDERS, "req": msg.get("req"), "hosts": holders})

    def _on_broken(self, h: str, msg: dict) -> None:
        if msg.get("transfer") in self.transfer_times:
            # its receiver already holds every byte of it (TDONE), and closed the connection
            # before the sender's last word (END, a heartbeat): typically a receiver that
            # completed and was shut down. Nothing failed.
            return
        self.broken_notes.setdefault(h, []).append(str(msg.get("reason")))
        self._to_live({"type": Msg.FAILURE})

    def _on_warn(self, h: str, msg: dict) -> None:
        self.warnings.append(f"{h}: {msg.get('message')}")

    def _on_stats(self, h: str, msg: dict) -> None:
        self.cpu[h] = float(msg.get("cpu", 0.0))
        if msg.get("maxrss") is not None:
            self.rss[h] = int(msg["maxrss"])
        if msg.get("received") is not None:
            self.received[h] = int(msg["received"])


def _holders(msg: dict, holdings: dict, dead: set, me: str) -> list[str]:
    """Live hosts ordered by how many of the requested bytes they hold (most first)."""
    ranges = msg.get("ranges") or []
    score = {}
    for h, iv in holdings.items():
        if h in dead or h == me:
            continue
        have = 0
        for off, length in ranges:
            miss = iv.missing(int(off), int(off) + int(length))
            have += int(length) - sum(e - s for s, e in miss)
        if have > 0:
            score[h] = have
    return sorted(score, key=lambda h: (-score[h], h))
