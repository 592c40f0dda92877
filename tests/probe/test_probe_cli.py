"""`topocast probe` end to end with local agents, its errors, and the topology file's
``measured:`` section."""

from __future__ import annotations

import json
import shutil

import pytest

from topocast.cli.main import main
from topocast.errors import TopologyError
from topocast.topology import load_topology
from topocast.topology.io import dumps, loads

BASE = """
name: m
hosts: [a, b]
switches: [s]
links:
  - {a: a, b: s, bandwidth: 100Mbps}
  - {a: b, b: s, bandwidth: 100Mbps}
"""


def test_measured_section_round_trips():
    text = (
        BASE
        + """measured:
  by: topocast probe
  launcher: local
  measurements: 12
  duration: 3.5s
  goodput: 0.955
  estimates:
    - {a: a, b: s, direction: a->b, samples: 2, spread: 0.03}
    - {a: b, b: s, direction: b->a, samples: 1, spread: 0.0, at_least: true, uncertain: true}
"""
    )
    t = loads(text, "m.yaml")
    assert t.measured["measurements"] == 12 and t.measured["duration"] == 3.5
    again = loads(dumps(t), "again.yaml")
    assert dict(again.measured) == dict(t.measured)


@pytest.mark.parametrize(
    "section, expected",
    [
        ("measured: 3", "measured: expected a mapping"),
        ("measured: {count: 3}", "unknown key 'count'"),
        ("measured: {measurements: -1}", "expected a number >= 0"),
        ("measured: {measurements: 2.5}", "a whole number of measurements"),
        ("measured: {goodput: 1.5}", "fraction in (0, 1]"),
        ("measured: {duration: soon}", "measured: duration"),
        ("measured: {estimates: [{a: a, b: b}]}", "no link joins 'a' and 'b'"),
        ("measured: {estimates: [{a: a, b: s, direction: up}]}", "expected 'a->b' or 'b->a'"),
        ("measured: {estimates: [{a: a, b: s, spread: -0.1}]}", "a fraction >= 0"),
        ("measured: {estimates: [{a: a, b: s, samples: 0}]}", "a whole number >= 1"),
    ],
)
def test_bad_measured_section_names_the_field(section, expected):
    with pytest.raises(TopologyError) as err:
        loads(BASE + section + "\n", "m.yaml")
    assert expected in str(err.value)
    assert "m.yaml" in str(err.value)


def test_probe_local_writes_a_topology_every_command_reads(tmp_path, capsys):
    out = tmp_path / "net.yaml"
    assert main(["probe", "a", "b", "c", "-o", str(out), "--probe-duration", "0.2", "--pings", "3", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    topo = load_topology(str(out))
    assert set(topo.hosts) == {"a", "b", "c"}
    assert topo.measured["measurements"] == summary["measurements"] > 0
    assert topo.measured["launcher"] == "local"
    assert not list(tmp_path.glob(".probe-*"))  # no temporary file left behind
    assert main(["compare", str(out), "--source", "a"]) == 0


def test_host_listed_twice(tmp_path, capsys):
    assert main(["probe", "a", "b", "a", "-o", str(tmp_path / "x.yaml")]) == 2
    assert "host 'a' is listed twice" in capsys.readouterr().err
    assert not (tmp_path / "x.yaml").exists()


def test_agent_dying_mid_probe_saves_what_was_measured(tmp_path, capsys, monkeypatch):
    from topocast.probe import session as session_mod

    calls = {"n": 0}
    rtt = session_mod.ProbeSession.rtt

    def killing_rtt(self, a, b, count=10):
        calls["n"] += 1
        if calls["n"] == 3:  # after two measurements, host c's agent dies
            self._procs["c"].kill()
            self._procs["c"].wait()
        return rtt(self, a, b, count)

    monkeypatch.setattr(session_mod.ProbeSession, "rtt", killing_rtt)
    out = tmp_path / "x.yaml"
    assert (
        main(["probe", "a", "b", "c", "d", "-o", str(out), "--pings", "2"]) == 1
    )  # a runtime failure, not bad input (2)
    err = capsys.readouterr().err
    assert "c" in err and "probe failed" in err and "x.yaml.partial.json" in err
    assert not out.exists()
    partial = json.loads((tmp_path / "x.yaml.partial.json").read_text())
    assert partial["hosts"] == ["a", "b", "c", "d"]
    assert len(partial["measurements"]) >= 2 and partial["measurements"][0]["kind"] == "rtt"


@pytest.mark.skipif(shutil.which("ssh") is None, reason="no ssh client")
def test_unreachable_host_is_named(tmp_path, capsys):
    hosts = tmp_path / "hosts.yaml"
    hosts.write_text("a: 127.0.0.1:1\nb: 127.0.0.1:1\n")  # nothing listens on port 1
    out = tmp_path / "x.yaml"
    rc = main(
        ["probe", "--launcher", "ssh", "--ssh-hosts", str(hosts), "-o", str(out), "--ssh-option=-oConnectTimeout=3"]
    )
    assert rc == 1  # a runtime failure, not bad input (2)
    err = capsys.readouterr().err
    assert "agent for a exited before connecting" in err or "agent for b exited before connecting" in err
    assert not out.exists()


def test_verify_local_records_the_check_in_the_file(tmp_path, capsys):
    src = tmp_path / "net.yaml"
    src.write_text(BASE.replace("hosts: [a, b]", "hosts: [a, b, c]") + "  - {a: c, b: s, bandwidth: 100Mbps}\n")
    out = tmp_path / "checked.yaml"
    assert main(["probe", "--verify", str(src), "-o", str(out), "--verify-seconds", "1", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    topo = load_topology(str(out))
    assert topo.measured["verified"]["transfers_compared"] == summary["transfers_compared"]
    assert topo.measured["verified"]["plan"].startswith("stable broadcast from a")


def test_verify_errors_name_the_file_or_option(tmp_path, capsys):
    assert main(["probe", "--verify", str(tmp_path / "none.yaml")]) == 2
    assert "none.yaml" in capsys.readouterr().err
    assert main(["probe", "a", "b"]) == 2
    assert "-o FILE.yaml" in capsys.readouterr().err
    (tmp_path / "n.yaml").write_text(BASE)
    assert main(["probe", "--verify", str(tmp_path / "n.yaml"), "--verify-seconds", "0"]) == 2
    assert "--verify-seconds" in capsys.readouterr().err
