"""Every launcher's failure to start an agent, or to reach or hear from a host, is an error
that names the host and the cause, with exit status 1 on the command line: never a silent
success. Each case runs several times, since whether the launcher's write of the boot
record meets a command that already exited is a race."""

import os
import shutil
import socket
import subprocess
import threading
import uuid
from types import SimpleNamespace

import pytest

from topocast.cli.main import main
from topocast.runtime import RunError, perform
from topocast.runtime.launchers import LocalLauncher, TestbedLauncher

from .helpers import chain_plan

TRIES = 5
needs_ssh = pytest.mark.skipif(shutil.which("ssh") is None, reason="no ssh client")


def _closed_port() -> int:
    """A loopback port where nothing listens."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class _NotSSH:
    """A listener that answers every connection with a line that is no SSH banner and no
    topocast handshake, and closes it (a web server, say, where sshd or the coordinator was
    expected): on a loopback TCP port, or at ``unix_path``."""

    def __init__(self, unix_path=None) -> None:
        if unix_path is None:
            self.sock = socket.socket()
            self.sock.bind(("127.0.0.1", 0))
            self.port = self.sock.getsockname()[1]
        else:
            self.sock = socket.socket(socket.AF_UNIX)
            self.sock.bind(str(unix_path))
        self.sock.listen(16)
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            try:
                conn.sendall(b"HTTP/1.0 400 Bad Request\r\n\r\n")
            except OSError:
                pass
            conn.close()

    def close(self) -> None:
        self.sock.close()


@pytest.fixture(params=["nothing listens", "not sshd listens"])
def unreachable_port(request):
    if request.param == "nothing listens":
        yield _closed_port()
        return
    server = _NotSSH()
    try:
        yield server.port
    finally:
        server.close()


@pytest.fixture
def pair_topology(tmp_path):
    path = tmp_path / "pair.yaml"
    path.write_text("name: pair\nhosts: [p, q]\nlinks:\n  - {a: p, b: q, bandwidth: 100Mbit/s}\n")
    return path


def _hosts_file(tmp_path, port) -> str:
    path = tmp_path / "hosts.yaml"
    path.write_text(f"p: 127.0.0.1:{port}\nq: 127.0.0.1:{port}\n")
    return str(path)


SSH_OPTS = ["--ssh-option=-oConnectTimeout=5", "--ssh-option=-oStrictHostKeyChecking=no"]


@needs_ssh
def test_ssh_run_to_an_unreachable_host_fails_naming_it(tmp_path, capsys, pair_topology, unreachable_port):
    hosts = _hosts_file(tmp_path, unreachable_port)
    args = ["run", str(pair_topology), "-a", "flat", "-s", "p", "--size", "64KiB", "--launcher", "ssh"]
    for _ in range(TRIES):
        assert main([*args, "--ssh-hosts", hosts, *SSH_OPTS]) == 1
        err = capsys.readouterr().err
        assert "agent for p" in err or "agent for q" in err, err
        assert "exited before connecting (via ssh 127.0.0.1 port" in err, err


@needs_ssh
def test_ssh_probe_of_an_unreachable_host_fails_naming_it(tmp_path, capsys, unreachable_port):
    hosts = _hosts_file(tmp_path, unreachable_port)
    out = tmp_path / "probed.yaml"
    for _ in range(TRIES):
        assert main(["probe", "--launcher", "ssh", "--ssh-hosts", hosts, "-o", str(out), *SSH_OPTS]) == 1
        err = capsys.readouterr().err
        assert "probe failed" in err and ("agent for p" in err or "agent for q" in err), err
        assert not out.exists()
        assert not (tmp_path / "probed.yaml.partial.json").exists()  # nothing was measured


@needs_ssh
def test_ssh_run_with_probe_of_an_unreachable_host_fails_naming_it(tmp_path, capsys, unreachable_port):
    hosts = _hosts_file(tmp_path, unreachable_port)
    out = tmp_path / "probed.yaml"
    args = ["run", str(out), "--probe", "-a", "flat", "-s", "p", "--size", "64KiB", "--launcher", "ssh"]
    for _ in range(TRIES):
        assert main([*args, "--ssh-hosts", hosts, *SSH_OPTS]) == 1
        err = capsys.readouterr().err
        assert "probe failed" in err and ("agent for p" in err or "agent for q" in err), err
        assert not out.exists()


class _UnbindableLocal(LocalLauncher):
    """Local agents told to listen on an address this machine does not have (no packet is
    sent: the bind fails)."""

    def boot(self, host):
        return {"bind": "192.0.2.1", "advertise": "192.0.2.1"}


class _WrongControlLocal(LocalLauncher):
    """Local agents sent to a control address where something that is not the coordinator
    listens."""

    def __init__(self, port):
        self.port = port

    def start_all(self, boots):
        return super().start_all({h: {**b, "control": f"tcp:127.0.0.1:{self.port}"} for h, b in boots.items()})


def test_local_agent_that_cannot_bind_fails_the_run_naming_it():
    for _ in range(TRIES):
        with pytest.raises(RunError, match=r"agent for [sabcd] exited before connecting.*192\.0\.2\.1"):
            perform(chain_plan(1 << 16), launcher=_UnbindableLocal())


def test_local_agent_that_reaches_a_stranger_fails_the_run_naming_it():
    server = _NotSSH()
    try:
        for _ in range(TRIES):
            with pytest.raises(RunError, match=r"agent for [sabcd] exited before connecting"):
                perform(chain_plan(1 << 16), launcher=_WrongControlLocal(server.port))
    finally:
        server.close()


def test_cli_local_run_whose_agents_cannot_start_exits_1(monkeypatch, capsys):
    monkeypatch.setattr(LocalLauncher, "boot", _UnbindableLocal.boot)
    for _ in range(TRIES):
        assert main(["run", "builtin:hetero-2switch", "-a", "flat", "-s", "s", "--size", "64KiB"]) == 1
        err = capsys.readouterr().err
        assert "exited before connecting" in err and "agent for " in err, err


def _testbed_state(namespace, ip="127.0.0.1"):
    return SimpleNamespace(namespace=lambda host: namespace, host_ip=lambda host: ip)


def test_testbed_agent_in_a_missing_namespace_fails_the_run_naming_it():
    if shutil.which("ip") is None:
        pytest.skip("iproute2 not installed")
    for _ in range(TRIES):
        launcher = TestbedLauncher(_testbed_state(f"topocast-absent-{uuid.uuid4().hex[:8]}"))
        with pytest.raises(
            RunError, match=r"agent for [sabcd] exited before connecting \(in network namespace topocast-absent-"
        ):
            perform(chain_plan(1 << 16), launcher=launcher)
        assert launcher._dir is not None and not os.path.exists(launcher._dir)


class _WrongControlTestbed(TestbedLauncher):
    """Testbed agents sent to a Unix socket where something that is not the coordinator
    listens."""

    def __init__(self, state, path):
        super().__init__(state)
        self.path = path

    def start_all(self, boots):
        return super().start_all({h: {**b, "control": f"unix:{self.path}"} for h, b in boots.items()})


@pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")
def test_testbed_agent_that_reaches_a_stranger_fails_the_run_naming_it(tmp_path):
    if shutil.which("ip") is None:
        pytest.skip("iproute2 not installed")
    name = f"tc-fail-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    server = _NotSSH(unix_path=tmp_path / "stranger.sock")
    try:
        for _ in range(TRIES):
            launcher = _WrongControlTestbed(_testbed_state(name), tmp_path / "stranger.sock")
            with pytest.raises(
                RunError, match=rf"agent for [sabcd] exited before connecting \(in network namespace {name};"
            ):
                perform(chain_plan(1 << 16), launcher=launcher)
            assert launcher._dir is not None and not os.path.exists(launcher._dir)
    finally:
        server.close()
        subprocess.run(["ip", "netns", "delete", name], check=False)


@needs_ssh
def test_ssh_to_a_silent_listener_times_out_naming_the_hosts(tmp_path, capsys, pair_topology, monkeypatch):
    """Something accepts the connection and never answers: no agent ever connects back; the
    error names every host and how it was reached (the connect time-out shortened here)."""
    from topocast.runtime import agents

    monkeypatch.setattr(agents, "CONNECT_TIMEOUT", 1.5)
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)
    try:
        hosts = _hosts_file(tmp_path, silent.getsockname()[1])
        args = ["run", str(pair_topology), "-a", "flat", "-s", "p", "--size", "64KiB", "--launcher", "ssh"]
        assert main([*args, "--ssh-hosts", hosts, "--ssh-option=-oStrictHostKeyChecking=no"]) == 1
        err = capsys.readouterr().err
        port = silent.getsockname()[1]
        assert f"did not connect back within 2 s: p (via ssh 127.0.0.1 port {port})" in err, err
        assert f"q (via ssh 127.0.0.1 port {port})" in err, err
    finally:
        silent.close()


class _SourceFailsOthersSlow(LocalLauncher):
    """The source's agent cannot start (its bind fails at once); the others are processes
    that never connect (agents still starting, say over a slow ssh)."""

    def start_all(self, boots):
        procs = super().start_all({"s": {**boots["s"], "bind": "192.0.2.1", "advertise": "192.0.2.1"}})
        for h in boots:
            if h != "s":
                procs[h] = subprocess.Popen(["sleep", "60"], stdin=subprocess.DEVNULL)
        return procs


def test_a_source_that_cannot_start_stops_the_run_at_once():
    """Without the only host that holds the message no destination can complete: the run
    stops when the source's agent fails, not when the others have connected (or timed out)."""
    import time

    t0 = time.monotonic()
    with pytest.raises(RunError, match=r"no host that came holds the bytes .* want \(agent for s exited before"):
        perform(chain_plan(1 << 16), launcher=_SourceFailsOthersSlow())
    assert time.monotonic() - t0 < 10
