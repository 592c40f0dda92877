"""A stopped (SIGSTOP) or hung agent is alive and silent: the coordinator hears every agent's
progress heartbeat, takes ``SILENT_AFTER`` seconds without one for a stopped agent, kills it
and reports it like a dead one, instead of waiting for the run's idle timeout."""

from __future__ import annotations

import os
import signal
import time

from topocast.plan import Plan, Transfer
from topocast.runtime import make_launcher, perform, watch

SILENT = 2.0  # the threshold of these tests (the default is longer), to keep them short


def _stop_when(procs, host, watched, size, stopped):
    def on_progress(held, t):
        if not stopped and held[watched] > size * 0.2:
            os.kill(procs[host].pid, signal.SIGSTOP)
            stopped["at"] = time.monotonic()

    return on_progress


def test_a_stopped_sole_source_is_reported_soon_after_its_silence(tmp_path, monkeypatch):
    monkeypatch.setattr(watch, "SILENT_AFTER", SILENT)
    size = 3_000_000
    procs, stopped = {}, {}
    tr = [
        Transfer.of("s", "a", 0, size, rate_cap=2e6),
        Transfer.of("a", "b", 0, size, pipelined=True),
    ]
    plan = Plan.broadcast("s", size, ["a", "b"], tr, planner="hand")
    try:
        out = perform(  # the default idle timeout (60 s), capped: the old behaviour fails here, not hangs
            plan,
            launcher=make_launcher("local"),
            on_start=procs.update,
            on_progress=_stop_when(procs, "s", "a", size, stopped),
            dest_dir=str(tmp_path),
            timeout=15,
        )
        reported = time.monotonic()
    finally:
        if procs["s"].poll() is None:  # never left stopped, whatever happened
            os.kill(procs["s"].pid, signal.SIGKILL)
    assert stopped, "the run finished before the source could be stopped"
    assert reported - stopped["at"] < SILENT + 3, out.failed
    assert set(out.failed) == {"a", "b"}
    for h in "ab":
        assert "no live host holds them" in out.failed[h], out.failed[h]
    assert any("s: agent silent for" in w for w in out.warnings), out.warnings
    assert procs["s"].poll() is not None  # killed, not left stopped


def test_a_stopped_leaf_fails_alone_and_the_run_ends_without_waiting_for_it(tmp_path, monkeypatch):
    monkeypatch.setattr(watch, "SILENT_AFTER", SILENT)
    size = 3_000_000
    procs, stopped = {}, {}
    tr = [
        Transfer.of("s", "a", 0, size, rate_cap=2e6),
        Transfer.of("s", "b", 0, size, rate_cap=2e6),
    ]
    plan = Plan.broadcast("s", size, ["a", "b"], tr, planner="hand")
    try:
        out = perform(
            plan,
            launcher=make_launcher("local"),
            on_start=procs.update,
            on_progress=_stop_when(procs, "b", "b", size, stopped),
            dest_dir=str(tmp_path),
            timeout=15,
        )
        reported = time.monotonic()
    finally:
        if procs["b"].poll() is None:
            os.kill(procs["b"].pid, signal.SIGKILL)
    assert stopped, "the run finished before the leaf could be stopped"
    assert set(out.failed) == {"b"}
    assert out.failed["b"].startswith("agent silent for"), out.failed["b"]
    assert (tmp_path / "a" / "message.bin").exists()
    # its silence is noticed SILENT after the stop; the shutdown does not wait for it
    assert reported - stopped["at"] < SILENT + 2.5, out.failed
    assert procs["b"].poll() is not None
