"""Runs on loopback (launcher ``local``): correctness, pipelining, after, rate caps, failures."""

import json
import os
import signal

import pytest

from topocast.plan import Plan, Transfer
from topocast.runtime import make_launcher, perform

from .helpers import chain_plan


def test_broadcast_writes_identical_files(tmp_path):
    size = 1_000_003  # not a multiple of the chunk size
    src = tmp_path / "msg.bin"
    src.write_bytes(os.urandom(size))
    out = perform(
        chain_plan(size),
        launcher=make_launcher("local"),
        file=str(src),
        dest_dir=str(tmp_path / "out"),
        chunk_size=64 * 1024,
    )
    assert out.failed == {}
    assert out.result.kind == "measured"
    assert set(out.result.per_host) == {"a", "b", "c", "d"}
    for h in "abcd":
        assert (tmp_path / "out" / h / "msg.bin").read_bytes() == src.read_bytes()
        r = out.result.per_host[h]
        assert r.completed and r.time > 0 and r.rate == pytest.approx(size / r.time)
    assert out.result.aggregate_bandwidth == pytest.approx(sum(size / out.result.per_host[h].time for h in "abcd"))


def test_rate_cap_paces_and_pipelined_hops_trail():
    size = 2_000_000
    out = perform(chain_plan(size, rate_cap=2e6), launcher=make_launcher("local"), chunk_size=64 * 1024)
    t = {h: r.time for h, r in out.result.per_host.items()}
    # token bucket with a two-chunk burst: (size - 2 chunks) / cap
    assert (size - 2 * 65536) / 2e6 * 0.95 < t["a"] < size / 2e6 * 1.3
    for h in "bcd":  # pipelined behind a: finish within a few chunks of it
        assert t["a"] <= t[h] < t["a"] + 0.3


def test_after_and_store_and_forward_are_respected():
    size = 1_000_000
    tr = [
        Transfer.of("s", "a", 0, size, rate_cap=2e6),  # ~0.45 s
        Transfer.of("s", "b", 0, size, after=(0,)),  # only once 0 is complete
        Transfer.of("a", "c", 0, size),  # store-and-forward: once a holds everything
    ]
    plan = Plan.broadcast("s", size, ["a", "b", "c"], tr, planner="hand")
    out = perform(plan, launcher=make_launcher("local"), chunk_size=64 * 1024)
    assert out.failed == {}
    ta = out.result.per_host["a"].time
    (s1, _), (s2, _) = out.result.transfer_times[1], out.result.transfer_times[2]
    assert s1 >= ta - 0.01 and s2 >= ta - 0.01
    assert out.result.per_host["b"].time >= ta
    # the senders' side: when each transfer could start and when its connection was ready
    assert set(out.send_times) == {0, 1, 2}
    e0 = out.result.transfer_times[0][1]
    for i, (ready, connected) in out.send_times.items():
        assert 0 <= ready <= connected, (i, out.send_times)
        if not out.warnings:  # (a repaired transfer may complete before its own connection)
            assert connected <= out.result.transfer_times[i][0], (i, out.send_times, out.result.transfer_times)
    assert out.send_times[1][0] >= e0  # released by the relayed completion of transfer 0
    # released by a's store when the last byte landed, a few microseconds before a stamps
    # transfer 0's completion
    assert out.send_times[2][0] >= e0 - 0.01
    # the machine's CPU during the run (Linux: /proc/stat)
    assert 0 <= out.cpu_steal <= out.cpu_busy <= 1 and 0 <= out.cpu_niced <= 1


def test_slow_child_does_not_stall_siblings():
    size = 2_000_000
    tr = [
        Transfer.of("s", "r", 0, size),
        Transfer.of("r", "slow", 0, size, pipelined=True, rate_cap=1e6),  # ~2 s
        Transfer.of("r", "fast", 0, size, pipelined=True),
    ]
    plan = Plan.broadcast("s", size, ["r", "slow", "fast"], tr, planner="hand")
    out = perform(plan, launcher=make_launcher("local"), chunk_size=64 * 1024)
    t = {h: r.time for h, r in out.result.per_host.items()}
    assert t["slow"] > 1.5
    assert t["fast"] < 0.5


def test_several_initial_holders_and_ranges():
    size = 600_000
    half = size // 2
    plan = Plan(
        collective="redistribute",
        size=size,
        transfers=(
            Transfer("p", "u", ((half, half), (0, 1000))),
            Transfer("q", "u", ((1000, half - 1000),)),
            Transfer.of("q", "v", 1000, 5000),
        ),
        initial={"p": [(half, half), (0, 1000)], "q": [(0, half)]},
        wanted={"u": [(0, size)], "v": [(1000, 5000)]},
        planner="hand",
    )
    out = perform(plan, launcher=make_launcher("local"), chunk_size=32 * 1024)
    assert out.failed == {}
    assert out.result.per_host["v"].rate == pytest.approx(5000 / out.result.per_host["v"].time)


def test_killed_relay_others_complete_and_relay_is_reported():
    size = 4_000_000
    procs, killed = {}, {}

    def on_progress(held, t):
        if not killed and held["b"] > size * 0.3:
            os.kill(procs["a"].pid, signal.SIGKILL)
            killed["at"] = held["b"]

    out = perform(
        chain_plan(size, rate_cap=2e6),
        launcher=make_launcher("local"),
        on_start=procs.update,
        on_progress=on_progress,
        chunk_size=64 * 1024,
        stall_timeout=2,
    )
    assert killed, "the relay finished before we could kill it"
    assert killed["at"] < size
    assert set(out.failed) == {"a"}
    assert "SIGKILL" in out.failed["a"]
    for h in "bcd":
        assert out.result.per_host[h].completed  # fetched the rest from s, digest verified
    assert not out.result.per_host["a"].completed


def test_unreachable_bytes_are_reported_not_faked(tmp_path):
    """The only holder dies: receivers must report failure, never success (nor a final file)."""
    size = 3_000_000
    procs, killed = {}, {}

    def on_progress(held, t):
        if not killed and held["a"] > size * 0.2:
            os.kill(procs["s"].pid, signal.SIGKILL)
            killed["x"] = 1

    tr = [Transfer.of("s", "a", 0, size, rate_cap=2e6), Transfer.of("a", "b", 0, size, pipelined=True)]
    plan = Plan.broadcast("s", size, ["a", "b"], tr, planner="hand")
    out = perform(
        plan,
        launcher=make_launcher("local"),
        on_start=procs.update,
        on_progress=on_progress,
        chunk_size=64 * 1024,
        stall_timeout=1,
        repair_timeout=2,
        dest_dir=str(tmp_path),
    )
    assert killed
    assert set(out.failed) == {"a", "b"}
    for h in "ab":
        assert not (tmp_path / h / "message.bin").exists()
    for h in "ab":
        assert "missing" in out.failed[h]
        assert not out.result.per_host[h].completed


def test_cli_run_plan_file_json(tmp_path, capsys):
    from topocast.cli.main import main

    p = tmp_path / "plan.json"
    p.write_text(chain_plan(500_000).dumps())
    assert main(["run", str(p), "--json", "--chunk-size", "64KiB"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {"topology", "source", "size_bytes", "algorithm", "bound", "predicted", "measured"} <= set(data)
    assert data["source"] == "s" and data["size_bytes"] == 500_000
    assert set(data["measured"]) >= {"aggregate_bandwidth", "makespan", "per_host"}
    assert set(data["measured"]["per_host"]) == {"a", "b", "c", "d"}


def test_cli_run_topology_with_algorithm_table(capsys):
    from topocast.cli.main import main

    assert main(["run", "builtin:hetero-2switch", "--algorithm", "flat", "--source", "s", "--size", "300kB"]) == 0
    out = capsys.readouterr().out
    assert "verified" in out and "b4" in out and "730.0" in out  # the bound, in Mbit/s


def test_cli_run_fair_uplink_switch(tmp_path, capsys):
    from topocast.cli.main import main

    base = ["run", "builtin:hetero-2switch", "--algorithm", "flat", "--source", "s", "--size", "200kB", "--json"]
    assert main(base) == 0
    assert json.loads(capsys.readouterr().out)["fair_uplink"] is False  # off on loopback by default
    assert main(base + ["--fair-uplink"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["fair_uplink"] is True and not data["failed"]
    p = tmp_path / "plan.json"
    p.write_text(chain_plan(1000).dumps())
    assert main(["run", str(p), "--fair-uplink"]) == 2  # no topology to pace to
    assert "--fair-uplink" in capsys.readouterr().err


def test_cli_run_bad_input_is_one_line(capsys):
    from topocast.cli.main import main

    assert main(["run", "builtin:hetero-2switch", "--algorithm", "nope", "--source", "s", "--size", "1kB"]) == 2
    assert "valid planners" in capsys.readouterr().err
    assert main(["run", "builtin:hetero-2switch", "--size", "1kB"]) == 2  # no --algorithm (-s has a default)
    assert "give --algorithm" in capsys.readouterr().err


def test_reductions_are_refused():
    from topocast.runtime import RunError

    plan = Plan(
        collective="allreduce",
        size=10,
        transfers=(Transfer.of("x", "y", 0, 10, reduce=True),),
        initial={"x": [(0, 10)], "y": [(0, 10)]},
        wanted={"y": [(0, 10)]},
    )
    with pytest.raises(RunError, match="reduce"):
        perform(plan, launcher=make_launcher("local"))
