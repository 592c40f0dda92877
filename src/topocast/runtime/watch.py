"""Watching a run: the coordinator follows the agents' messages from the start until every
host that wants data completed or failed (``Watch``), answers "who holds these bytes?" for
repairs, tells the live agents of a death, and at the end stops every agent (``stop_all``)."""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..intervals import IntervalSet
from ..plan import Plan
from .agents import describe_exit, send_quietly, stop_agent, wait_exit
from .cpuload import StealWatch
from .protocol import Msg

if TYPE_CHECKING:
    from .adapt import Adapter

__all__ = ["Watch", "holders", "stop_all", "wanted_total", "ProgressCallback", "LOST_SETTLE", "SILENT_AFTER"]

ProgressCallback = Callable[[dict[str, float], float], object]  # (bytes held per host, seconds)

SILENT_AFTER = 5.0  # s without a word from a live agent (its progress heartbeat comes every second): stopped or hung
STALL = 0.5  # s the coordinator's loop may spend away from its messages before that time is excused (_excuse)
LOST_SETTLE = 1.0  # s after a death before bytes no live host holds count as lost (progress reports arrive every 0.1 s)


def wanted_total(ranges) -> int:
    return sum(length for _, length in ranges)


class Watch:
    """Step 4 of ``runtime.coordinator.perform``: follow the agents' messages until every host that wants
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
        self.last_heard = dict.fromkeys(hosts, t0)
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
        got_at = time.monotonic()  # when the coordinator last took a message (or found none)
        while len(self.done) + len(self.failed) < len(self.wanted):
            self._excuse(time.monotonic() - got_at)
            if self._gave_up(timeout, idle_timeout):
                break
            try:
                h, msg = self.events.get(timeout=0.1)
            except queue.Empty:
                h, msg = None, None
            now = got_at = time.monotonic()
            if h is not None and msg is None:  # control connection closed: the agent is gone
                self._on_gone(h)
            elif h is not None:
                self.last_heard[h] = now
                handler = self._handlers.get(msg.get("type"))
                if handler is not None:
                    handler(h, msg)
            self._kill_silent(now)
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
        now = time.monotonic()
        end = now + 3
        # an agent already silent for two heartbeats (stopped, hung) will not answer: not waited for
        quiet = {h for h, t in self.last_heard.items() if now - t > 2.0}
        while time.monotonic() < end and len(set(self.cpu) | self.dead | quiet) < len(self.hosts):
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
                self.failed[h] = f"{why}, holding {self.held_bytes[h]} of {wanted_total(self.wanted[h])} bytes"
        return True

    def _to_live(self, msg: dict, *, skip: str | None = None) -> None:
        for o in self.hosts:
            if o not in self.dead and o != skip:
                send_quietly(self.conns[o], msg)

    def _excuse(self, busy: float) -> None:
        """The coordinator did not read its messages for ``busy`` seconds (a re-plan, a slow
        ``on_progress``, a machine too loaded to run it): what the agents sent meanwhile waits
        in the queue, so that time counts neither as their silence nor as a stalled run."""
        if busy <= STALL:
            return
        for h in self.last_heard:
            self.last_heard[h] += busy
        self.last_moved += busy

    def _kill_silent(self, now: float) -> None:
        """An agent silent for ``SILENT_AFTER`` seconds is stopped or hung: killed, and
        reported dead like one that exited (its peers repair from other holders)."""
        for h in self.hosts:
            if h not in self.dead and now - self.last_heard[h] > SILENT_AFTER:
                with contextlib.suppress(OSError):
                    self.procs[h].kill()
                self._on_gone(h, f"agent silent for {SILENT_AFTER:g} s (stopped or hung): killed")

    def _on_gone(self, h: str, reason: str | None = None) -> None:
        if h not in self.hosts or h in self.dead:  # failed before the start, or killed: already reported
            return
        self.dead.add(h)
        reason = reason or describe_exit(self.procs[h].returncode if wait_exit(self.procs[h]) else None)
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
        hosts = holders(msg, self.holdings, self.dead, h)
        send_quietly(self.conns[h], {"type": Msg.HOLDERS, "req": msg.get("req"), "hosts": hosts})

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


def holders(msg: dict, holdings: dict, dead: set, me: str) -> list[str]:
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


def stop_all(procs: dict, watch: Watch | None, connected: set) -> None:
    """Stop every agent, all at once. One that reported its statistics is exiting: it is not
    waited for. One that did not answer the shutdown within its wait is stuck (stopped,
    hung): killed after half a second, as is one that never connected (it holds nothing to
    clean up). Any other (a failed start) gets ``stop_agent``'s grace. All in parallel: a
    failed start is not reported one grace per agent later."""
    stopped = set(watch.cpu) if watch is not None else set()
    asked = watch is not None and watch.shutdown_sent
    waits = []
    for h, p in procs.items():
        grace = 10.0 if h in stopped else 0.5 if asked or h not in connected else 2.0
        t = threading.Thread(target=stop_agent, args=(p, grace), daemon=True)
        t.start()
        if h not in stopped:
            waits.append(t)
    for t in waits:
        t.join()
