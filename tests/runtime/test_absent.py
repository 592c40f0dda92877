"""Going on without the hosts that never came (runtime.absent): an agent that fails before
the start is reported, and the others complete with a plan made again without it."""

import os
import signal

import pytest

from topocast.plan import Plan, Transfer
from topocast.runtime import RunError, make_launcher, perform
from topocast.runtime.absent import without_hosts

from .helpers import chain_plan

MiB = 1 << 20


class KillsOne:
    """The local launcher, but the agent of ``victim`` is killed as soon as it is started."""

    def __init__(self, victim: str):
        self.inner = make_launcher("local")
        self.victim = victim

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def start_all(self, boots):
        procs = self.inner.start_all(boots)
        os.kill(procs[self.victim].pid, signal.SIGKILL)
        return procs


def test_splicing_out_a_relay_sends_its_transfers_from_its_own_senders():
    plan = chain_plan(1000)  # s -> a; a -> b, a -> c; c -> d
    p = without_hosts(plan, frozenset({"a"}))
    assert sorted((t.src, t.dst) for t in p.transfers) == [("c", "d"), ("s", "b"), ("s", "c")]
    assert set(p.wanted) == {"b", "c", "d"}
    p = without_hosts(plan, frozenset({"a", "c"}))
    assert sorted((t.src, t.dst) for t in p.transfers) == [("s", "b"), ("s", "d")]


def test_splicing_out_the_only_holder_is_an_error_that_names_it():
    with pytest.raises(RunError, match="s did not come and alone held"):
        without_hosts(chain_plan(1000), frozenset({"s"}))


def test_splice_keeps_range_order_and_after():
    size = 100
    t = [
        Transfer("s", "a", ((0, 50),)),
        Transfer("s", "a", ((50, 50),)),
        Transfer("a", "b", ((50, 50), (0, 50)), after=(1,)),
        Transfer("b", "c", ((0, 100),), after=(2,)),
    ]
    p = without_hosts(Plan.broadcast("s", size, ["a", "b", "c"], t), frozenset({"a"}))
    assert [(x.src, x.dst, x.ranges) for x in p.transfers] == [("s", "b", ((50, 50), (0, 50))), ("b", "c", ((0, 100),))]
    assert p.transfers[1].after == (0,)


def test_a_host_killed_before_the_start_is_reported_and_the_others_complete():
    out = perform(chain_plan(4 * MiB), launcher=KillsOne("a"))
    assert set(out.failed) == {"a"} and set(out.absent) == {"a"}
    assert "never came" in out.failed["a"] and "killed" in out.failed["a"]
    for h in "bcd":
        assert out.result.per_host[h].completed
    assert any("a never came" in w for w in out.warnings)


def test_a_host_failing_its_set_up_is_reported_and_the_plan_goes_to_the_others(tmp_path):
    dest = tmp_path / "out"
    dest.mkdir()
    (dest / "c").write_text("a file where c's folder should be")
    out = perform(chain_plan(4 * MiB), launcher=make_launcher("local"), dest_dir=str(dest))
    assert set(out.failed) == {"c"} and "failed before the start" in out.failed["c"]
    for h in "abd":
        assert out.result.per_host[h].completed
        assert (dest / h / "message.bin").stat().st_size == 4 * MiB
    assert ("s", "a") in {(t.src, t.dst) for t in out.plan.transfers} and "c" not in out.plan.hosts


def test_all_or_nothing_stops_before_any_byte_moves():
    with pytest.raises(RunError, match="agent for a exited before connecting"):
        perform(chain_plan(MiB), launcher=KillsOne("a"), all_or_nothing=True)


def test_replan_callback_is_used_when_it_leaves_the_missing_host_out():
    asked = []

    def replan(missing):
        asked.append(missing)
        t = [Transfer.of("s", x, 0, MiB) for x in "bcd"]
        return Plan.broadcast("s", MiB, "bcd", t, planner="flat")

    out = perform(chain_plan(MiB), launcher=KillsOne("a"), replan=replan)
    assert asked == [frozenset({"a"})]
    assert out.plan.planner == "flat" and set(out.failed) == {"a"}


def test_cli_names_the_missing_host_and_exits_1(tmp_path):
    import json
    import subprocess
    import sys

    dest = tmp_path / "out"
    dest.mkdir()
    (dest / "b2").write_text("not a folder")
    cmd = [sys.executable, "-m", "topocast", "run", "builtin:two-clusters", "-a", "stable", "-s", "s"]
    cmd += ["--size", "2MiB", "--dest-dir", str(dest), "--json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    d = json.loads(proc.stdout)
    assert set(d["failed"]) == {"b2"} and set(d["absent"]) == {"b2"}
    assert any("planned again (stable)" in w for w in d["warnings"])
    per_host = d["measured"]["per_host"]
    assert [h for h, r in per_host.items() if r.get("completed", True) is False] == ["b2"] and len(per_host) == 7
