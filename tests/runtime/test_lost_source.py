"""A byte whose every holder died can never arrive: the hosts that want it are reported as
failed as soon as the coordinator can tell, not after the repair time-outs."""

from __future__ import annotations

import os
import signal
import time

from topocast.plan import Plan, Transfer
from topocast.runtime import make_launcher, perform


def test_a_dead_sole_source_is_reported_at_once(tmp_path):
    size = 3_000_000
    procs, killed = {}, {}

    def on_progress(held, t):
        if not killed and held["a"] > size * 0.2:
            os.kill(procs["s"].pid, signal.SIGKILL)
            killed["at"] = time.monotonic()

    tr = [
        Transfer.of("s", "a", 0, size, rate_cap=2e6),
        Transfer.of("a", "b", 0, size, pipelined=True),
        Transfer.of("b", "c", 0, size, pipelined=True),
    ]
    plan = Plan.broadcast("s", size, ["a", "b", "c"], tr, planner="hand")
    out = perform(  # the default stall (6 s) and repair (30 s) time-outs
        plan, launcher=make_launcher("local"), on_start=procs.update, on_progress=on_progress, dest_dir=str(tmp_path)
    )
    reported = time.monotonic()
    assert killed, "the run finished before the source could be killed"
    assert reported - killed["at"] < 5, out.failed
    assert set(out.failed) == {"a", "b", "c"}
    for h in "abc":
        assert "missing" in out.failed[h] and "no live host holds them" in out.failed[h], out.failed[h]
        assert "s" in out.failed[h].split("died: ")[-1], out.failed[h]
        assert not (tmp_path / h / "message.bin").exists()
        assert (tmp_path / h / "message.bin.part").exists()  # kept, for a re-run to resume from


class _Conn:
    def __init__(self):
        self.sent = []

    def send_json(self, msg):
        self.sent.append(msg)


def _watch():
    import queue

    from topocast.runtime.watch import Watch

    size = 1000
    tr = [Transfer.of("s", "a", 0, size), Transfer.of("a", "b", 0, size, pipelined=True)]
    plan = Plan.broadcast("s", size, ["a", "b"], tr, planner="hand")
    conns = {h: _Conn() for h in "sab"}
    return Watch(plan, list("sab"), conns, {}, queue.Queue(), {}, time.monotonic(), []), conns


def test_a_sender_cut_off_after_its_receiver_had_everything_is_no_failure():
    """A receiver that holds all of a transfer (TDONE) and is shut down closes the connection
    before the sender's END: the sender's broken pipe is no failure to report."""
    watch, conns = _watch()
    watch._on_tdone("b", {"type": "tdone", "transfer": 1, "start": 0.1, "end": 0.2})
    for c in conns.values():
        c.sent.clear()
    reason = "transfer 1 to b failed on the sending side: [Errno 32] Broken pipe"
    watch._on_broken("a", {"type": "broken", "transfer": 1, "reason": reason})
    assert watch.broken_notes == {}
    assert all(c.sent == [] for c in conns.values())  # no FAILURE: nobody starts repairing


def test_a_sender_cut_off_before_its_receiver_had_everything_is_reported():
    watch, conns = _watch()
    reason = "transfer 1 to b failed on the sending side: [Errno 32] Broken pipe"
    watch._on_broken("a", {"type": "broken", "transfer": 1, "reason": reason})
    assert watch.broken_notes == {"a": [reason]}
    assert all({"type": "failure"} in c.sent for c in conns.values())
