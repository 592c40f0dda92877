"""Hosts that never came, on the emulated network (runtime.absent): an agent killed after it
was launched but before the start, either before it connected or while it set up (it has its
configuration), is reported by name and every other host completes with verified bytes;
``all_or_nothing`` stops the run instead. The command exits 1 and names the missing host."""

import json
import os
import signal

import pytest

from topocast.runtime import RunError, TestbedLauncher, perform, startup
from topocast.topology import load_topology

from .test_testbed_run import _fanout_plan

SIZE = 1_000_000


@pytest.fixture
def kill_at(monkeypatch):
    """``kill_at(phase, victim)``: SIGKILL ``victim``'s agent at ``phase`` of the start:
    ``"launch"`` (as soon as it is started, before it connects) or ``"set-up"`` (right after
    its configuration was sent, before it reports ready)."""
    procs: dict = {}
    real_start, real_configure = TestbedLauncher.start_all, startup.configure
    plan = {}

    def start_all(self, boots):
        procs.update(real_start(self, boots))
        if plan.get("phase") == "launch":
            os.kill(procs[plan["victim"]].pid, signal.SIGKILL)
        return procs

    def configure(p, hosts, conns, *args, **kw):
        if plan.get("phase") == "set-up":
            conn = conns[plan["victim"]]
            send = conn.send_json

            def send_then_die(obj):
                send(obj)
                os.kill(procs[plan["victim"]].pid, signal.SIGKILL)

            conn.send_json = send_then_die
        return real_configure(p, hosts, conns, *args, **kw)

    monkeypatch.setattr(TestbedLauncher, "start_all", start_all)
    monkeypatch.setattr(startup, "configure", configure)

    def arm(phase: str, victim: str) -> None:
        procs.clear()
        plan.update(phase=phase, victim=victim)

    return arm


def test_an_agent_killed_while_it_sets_up_leaves_the_others_complete(testbed_factory, kill_at):
    st = testbed_factory(load_topology("builtin:hetero-2switch"))
    kill_at("set-up", "b1")  # the relay of b2, b3, b4: its senders send in its place
    out = perform(_fanout_plan(SIZE), launcher=TestbedLauncher(st), chunk_size=64 * 1024, timeout=60)
    assert set(out.failed) == {"b1"} and set(out.absent) == {"b1"}
    assert "never came" in out.failed["b1"] and "SIGKILL" in out.failed["b1"]
    for h in ("a1", "b2", "b3", "b4"):  # completed: each reached the whole message's digest
        assert out.result.per_host[h].completed, h
    assert "b1" not in out.plan.hosts and any("b1 never came" in w for w in out.warnings)
    kill_at("launch", "b1")
    with pytest.raises(RunError, match="agent for b1 exited before connecting"):
        perform(_fanout_plan(SIZE), launcher=TestbedLauncher(st), chunk_size=64 * 1024, all_or_nothing=True)


def test_cli_exits_1_and_names_the_host_killed_during_set_up(testbed_factory, kill_at, capsys):
    from topocast.cli.main import main

    st = testbed_factory(load_topology("builtin:hetero-2switch"))
    kill_at("set-up", "b2")
    args = ["run", "builtin:hetero-2switch", "-a", "stable", "-s", "s", "--size", "1MB"]
    assert main([*args, "--launcher", "testbed", "--testbed", st.name, "--json"]) == 1
    out, err = capsys.readouterr()
    assert "b2 never came" in err and "SIGKILL" in err
    d = json.loads(out)
    assert set(d["failed"]) == {"b2"} and set(d["absent"]) == {"b2"}
    per_host = d["measured"]["per_host"]
    assert [h for h, r in per_host.items() if r.get("completed", True) is False] == ["b2"] and len(per_host) == 7
