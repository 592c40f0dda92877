"""Launchers are chosen by name from one registry (runtime.launcher_registry); the command
line's choices are the registry's, and the goodput calibration lives in the library."""

from __future__ import annotations

import pytest

from topocast.cli.main import build_parser, main
from topocast.errors import InputError
from topocast.runtime.calibration import GOODPUT_TESTBED, check_goodput, scale_caps, scale_topology
from topocast.runtime.launcher_registry import LAUNCHER_KINDS, LAUNCHERS, launcher_kind, make_launcher
from topocast.runtime.launchers import LocalLauncher, SSHLauncher, load_ssh_hosts


def _choices(command: str) -> list[str]:
    import argparse

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    return list(next(a for a in sub._actions if a.dest == "launcher").choices)


def test_the_command_line_offers_the_registered_launchers():
    assert _choices("run") == list(LAUNCHER_KINDS)
    assert _choices("probe") == list(LAUNCHERS)  # probing needs agents
    assert "mpi" in LAUNCHER_KINDS and "mpi" not in LAUNCHERS


def test_defaults_come_from_the_registry():
    assert launcher_kind("testbed").goodput == GOODPUT_TESTBED and launcher_kind("testbed").shaped_as_topology
    assert launcher_kind("local").goodput == 1.0 and not launcher_kind("local").shaped_as_topology
    assert launcher_kind("mpi").make() is None
    assert callable(launcher_kind("mpi").performer()) and callable(launcher_kind("local").performer())


def test_unknown_or_agentless_launchers_are_refused_by_name():
    with pytest.raises(InputError, match=r"unknown launcher 'nope'; valid launchers: local, testbed, ssh, mpi"):
        make_launcher("nope")
    with pytest.raises(InputError, match="starts no agents"):
        make_launcher("mpi")
    with pytest.raises(InputError, match="needs --ssh-hosts"):
        make_launcher("ssh")
    assert isinstance(make_launcher("local"), LocalLauncher)


def test_ssh_hosts_file_and_unknown_hosts(tmp_path):
    path = tmp_path / "hosts.yaml"
    path.write_text("a: alice@192.0.2.1:2222\nb: 192.0.2.2\n")
    hosts = load_ssh_hosts(str(path))
    assert hosts["a"] == {"target": "alice@192.0.2.1", "port": 2222, "address": "192.0.2.1"}
    assert hosts["b"] == {"target": "192.0.2.2", "port": 22, "address": "192.0.2.2"}
    launcher = make_launcher("ssh", ssh_hosts=hosts)
    assert isinstance(launcher, SSHLauncher) and list(launcher.known_hosts()) == ["a", "b"]
    launcher.require_hosts(["a", "b"])
    with pytest.raises(InputError, match=r"--ssh-hosts: hosts c are not in the ssh hosts of --ssh-hosts"):
        launcher.require_hosts(["a", "c"])
    path.write_text("- a\n- b\n")
    with pytest.raises(InputError, match="expected a mapping"):
        load_ssh_hosts(str(path))


def test_probe_names_the_host_the_ssh_hosts_file_lacks(tmp_path, capsys):
    path = tmp_path / "hosts.yaml"
    path.write_text("a: 127.0.0.1:1\nb: 127.0.0.1:1\n")
    args = ["probe", "a", "c", "--launcher", "ssh", "--ssh-hosts", str(path), "-o", str(tmp_path / "x.yaml")]
    assert main(args) == 2
    assert f"TARGETS: hosts c are not in the ssh hosts of {path}" in capsys.readouterr().err


def test_adapt_is_refused_with_a_launcher_without_agents(capsys):
    args = ["run", "builtin:two-clusters", "-a", "flat", "-s", "s", "--size", "1KiB", "--launcher", "mpi", "--adapt"]
    assert main(args) == 2
    assert "--adapt: the mpi launcher starts no agents" in capsys.readouterr().err


def test_goodput_scales_caps_and_links():
    from topocast import Broadcast, get_planner, load_topology

    topo = load_topology("builtin:two-clusters")
    plan = get_planner("broadcast", "stable")(topo, Broadcast("s", 10**6))
    assert any(t.rate_cap is not None for t in plan.transfers)
    scaled = scale_caps(plan, 0.5)
    for before, after in zip(plan.transfers, scaled.transfers, strict=True):
        assert after.rate_cap == (None if before.rate_cap is None else before.rate_cap * 0.5)
    slower = scale_topology(topo, 0.5)
    for before, after in zip(topo.links, slower.links, strict=True):
        assert after.bandwidth == pytest.approx(before.bandwidth * 0.5)
    assert scale_caps(plan, 1.0) is plan and scale_topology(topo, 1.0) is topo
    assert check_goodput(1.0) == 1.0
    for bad in (0.0, 1.5, -0.1):
        with pytest.raises(InputError, match=r"--goodput: expected a fraction in \(0, 1\]"):
            check_goodput(bad)
