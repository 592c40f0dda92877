"""Starting a run: the coordinator starts one agent per host and lets each connect back
(step 2 of ``runtime.coordinator.perform``), then hands every agent its own transfers and the
run's settings and waits until all are ready (step 3). A host whose agent never came is left
out and the plan is made again for the others (``runtime.absent``)."""

from __future__ import annotations

import dataclasses
import queue
import secrets
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..intervals import IntervalSet
from ..plan import Plan
from .absent import fail_unheld, go_without
from .agents import RunError, connect_agents, describe_exit, read_messages, stderr_tail, wait_exit
from .protocol import AgentConfig, Conn, IncomingTransfer, Msg, OutgoingTransfer
from .resume import send_trims

if TYPE_CHECKING:
    import socket

    from .absent import Replan
    from .launchers import Launcher
    from .watch import Watch

__all__ = ["Session", "start_agents", "hand_out", "configure", "reconfigure", "transfers_of"]


@dataclass
class Session:
    """One run's agents and the plan they perform, from the start-up to the end."""

    asked: Plan  # the plan the caller gave
    plan: Plan  # the plan performed: ``asked``, or another one without the absent hosts
    hosts: list[str]  # the hosts of ``plan`` whose agents take part
    pacing_of: Callable[[Plan], dict]  # a plan -> each host's pacing configuration ({} unpaced)
    replan: Replan | None = None  # missing hosts -> a plan without them (``runtime.absent``)
    pacing: dict = field(default_factory=dict)  # host -> its pacing configuration for ``plan``
    procs: dict = field(default_factory=dict)  # host -> its agent's process handle
    conns: dict[str, Conn] = field(default_factory=dict)  # host -> its control connection
    events: queue.Queue = field(default_factory=queue.Queue)  # (host, message or None on close)
    warnings: list[str] = field(default_factory=list)
    absent: dict[str, str] = field(default_factory=dict)  # host -> why its agent never came
    kept: dict[str, IntervalSet] = field(default_factory=dict)  # host -> bytes kept from an earlier run
    watch: Watch | None = None  # step 4 on: the watch of the running agents

    def __post_init__(self) -> None:
        self.pacing = self.pacing_of(self.plan)

    def go_without_absent(self) -> None:
        """The plan made again for the hosts that are there."""
        self.plan, self.hosts, self.pacing = go_without(
            self.asked, self.absent, self.replan, self.warnings, self.pacing_of
        )


def start_agents(
    run: Session, launcher: Launcher, listener: socket.socket, control_addr: str, dest_dir, lenient: bool
) -> dict[str, tuple[str, int]]:
    """Step 2: start the agents and let them connect back; without those that never came (when
    ``lenient``), the plan is made again for the hosts that are there. Returns each host's
    data address, ``(address, port)``."""
    secret = secrets.token_bytes(32)
    absent = run.absent if lenient else None
    hello = connect_agents(
        launcher,
        run.hosts,
        run.procs,
        run.conns,
        listener,
        control_addr,
        secret,
        dest_dir,
        absent,
        fail_unheld(run.plan),
    )
    if run.absent:
        run.go_without_absent()
    return {h: (m["address"], int(m["port"])) for h, m in hello.items()}


def hand_out(run: Session, settings: AgentConfig, digest_job: Future, lenient: bool) -> dict[str, str]:
    """Step 3: each agent learns its own transfers and the run's ``settings``; once all are
    ready, the senders learn which bytes their receivers kept from an earlier run. An agent
    lost meanwhile (when ``lenient``) is left out and the others get the new plan. Returns the
    digest each receiver must reach."""
    digests, piece_hashes = digest_job.result()
    settings = dataclasses.replace(settings, piece_hashes=piece_hashes)
    seen = set(run.absent)
    absent = run.absent if lenient else None
    run.kept = configure(run.plan, run.hosts, run.conns, run.procs, run.events, digests, run.pacing, settings, absent)
    if set(run.absent) != seen:  # some failed while setting up: the others get the new plan
        run.go_without_absent()
        reconfigure(run.plan, run.hosts, run.conns, run.pacing)
    send_trims(run.plan, run.conns, run.kept)
    return digests


def require_alive(run: Session) -> None:
    """All or nothing, just before the start: an agent that reported ready and has exited
    since (while the prediction was made, say) is still a failure before the start, and no
    byte moves. (Without all or nothing it is handled as a death during the run: its peers
    repair from other holders.)"""
    for h in run.hosts:
        code = run.procs[h].poll()
        if code is not None:
            raise RunError(f"agent for {h} failed before the start: {describe_exit(code)}{stderr_tail(run.procs, [h])}")


def transfers_of(plan: Plan, h: str) -> tuple[tuple[OutgoingTransfer, ...], tuple[IncomingTransfer, ...]]:
    """Host ``h``'s outgoing and incoming transfers, as the agents' configuration has them."""
    out = tuple(
        OutgoingTransfer(i, t.dst, t.ranges, t.pipelined, t.after, t.rate_cap)
        for i, t in enumerate(plan.transfers)
        if t.src == h
    )
    inc = tuple(IncomingTransfer(i, t.src, t.ranges) for i, t in enumerate(plan.transfers) if t.dst == h)
    return out, inc


def reconfigure(plan: Plan, hosts, conns, pacing) -> None:
    """Before the start: every agent that is there gets its transfers of the new plan."""
    for h in hosts:
        out, inc = transfers_of(plan, h)
        conns[h].send_json(
            {
                "type": Msg.RECONFIG,
                "outgoing": [t.to_wire() for t in out],
                "incoming": [t.to_wire() for t in inc],
                "pacing": pacing.get(h),
            }
        )


def configure(
    plan: Plan, hosts, conns, procs, events, digests, pacing, settings: AgentConfig, absent: dict | None = None
) -> dict[str, IntervalSet]:
    """Send each agent its own transfers and the run's ``settings``, then wait (60 s at most) until every
    agent reports ready; returns the bytes each host kept from an earlier run. With
    ``absent``, an agent that fails meanwhile is recorded there (host -> why), not an error."""
    for h in hosts:
        out, inc = transfers_of(plan, h)
        own = dataclasses.replace(
            settings,
            outgoing=out,
            incoming=inc,
            initial=tuple(plan.initial.get(h, ())),
            wanted=tuple(sorted(plan.wanted.get(h, ()))),
            digest=digests.get(h),
            pacing=pacing.get(h),
        )
        conns[h].send_json(own.to_wire())
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
