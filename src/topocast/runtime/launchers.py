"""Launchers: how agents are started, where they listen, how they reach the coordinator.

* ``local``: processes on this machine, data and control over loopback;
* ``testbed``: each agent inside its emulated host's network namespace (``ip netns exec``);
  control over a Unix socket (path-based Unix sockets cross network namespaces, so control
  traffic never uses the shaped links), data over the emulated network;
* ``ssh``: agents started over SSH (``ssh ... python -m topocast.runtime.agent``); control
  over TCP to an address the remote hosts can reach.

The run secret goes to each agent on its stdin, never on a command line.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputError

if TYPE_CHECKING:
    from ..testbed.state import TestbedState

__all__ = ["LocalLauncher", "TestbedLauncher", "SSHLauncher", "make_launcher", "LAUNCHERS"]

LAUNCHERS = ("local", "testbed", "ssh")


def _src_dir() -> str:
    return str(Path(__file__).resolve().parents[2])


def _agent_env() -> dict:
    env = dict(os.environ)
    src = _src_dir()
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


class Launcher:
    name = "base"
    shared_clock = True  # agents read the coordinator's monotonic clock (same machine)

    def control_listen(self) -> tuple[socket.socket, str]:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        sock.listen(256)
        return sock, f"tcp:127.0.0.1:{sock.getsockname()[1]}"

    def boot(self, host: str) -> dict:
        return {"bind": "127.0.0.1", "advertise": "127.0.0.1"}

    def command(self, host: str) -> list[str]:
        return [sys.executable, "-m", "topocast.runtime.agent"]

    def where(self, host: str) -> str:
        """How ``host``'s agent is reached, for error messages ("" when on this machine)."""
        return ""

    def prepare(self, *, fork_this_process: bool = False) -> None:
        """Called as early as the caller knows it will start agents (before planning): a
        launcher can get ready meanwhile. ``fork_this_process``: the caller is a small,
        single-threaded process (the command line) that the local launcher's fork server may
        be a fork of; a program holding much memory leaves it off, or every agent forked
        from it would carry that memory in its resident set."""

    def start(self, host: str, boot: dict) -> Any:
        proc = subprocess.Popen(
            self.command(host),
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=_agent_env(),
            start_new_session=True,
        )
        assert proc.stdin is not None  # stdin=PIPE
        try:
            proc.stdin.write((json.dumps(boot) + "\n").encode())
            proc.stdin.flush()
        except OSError:
            # the command already exited (ssh that could not connect): the caller sees the
            # exit and reports it with the command's own words (stderr_tail)
            pass
        return proc

    def start_all(self, boots: dict[str, dict]) -> dict[str, Any]:
        """Start one agent per host of ``boots`` (host -> boot record); a launcher that can
        start them together overrides this."""
        return {host: self.start(host, boot) for host, boot in boots.items()}

    def close(self) -> None:
        pass


class LocalLauncher(Launcher):
    """All agents on this machine, over loopback.

    Agents are forked by a server process that has already imported them
    (``runtime.forkserver``), so starting one costs a fork rather than an interpreter start
    and its imports; ``prepare()`` starts that server while the caller is still planning.
    Should the server fail, agents start as ``python -m topocast.runtime.agent`` instead.
    """

    name = "local"

    def prepare(self, *, fork_this_process: bool = False) -> None:
        from .forkserver import fork_server

        fork_server(_agent_env(), fork_this_process=fork_this_process)

    def start(self, host: str, boot: dict) -> Any:

        return self.start_all({host: boot})[host]

    def start_all(self, boots: dict[str, dict]) -> dict[str, Any]:
        from .forkserver import fork_server

        try:  # every fork requested at once: no reply round trip per agent
            return dict(zip(boots, fork_server(_agent_env()).start_all(list(boots.values())), strict=True))
        except OSError:  # no server: each agent as its own interpreter
            return {host: Launcher.start(self, host, boot) for host, boot in boots.items()}


class TestbedLauncher(Launcher):
    __test__ = False
    """Each agent in its host's namespace of a running testbed (``topocast testbed up``)."""

    name = "testbed"

    def __init__(self, state: TestbedState) -> None:
        self.state = state
        self._dir: str | None = None  # made when the run listens (a refused run leaves none)

    def control_listen(self) -> tuple[socket.socket, str]:
        self._dir = tempfile.mkdtemp(prefix="topocast-ctl-")
        path = os.path.join(self._dir, "control.sock")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(path)
        os.chmod(path, 0o600)
        sock.listen(256)
        return sock, f"unix:{path}"

    def boot(self, host: str) -> dict:
        ip = self.state.host_ip(host)
        return {"bind": ip, "advertise": ip}

    def where(self, host: str) -> str:
        return f"in network namespace {self.state.namespace(host)}"

    def command(self, host: str) -> list[str]:
        return ["ip", "netns", "exec", self.state.namespace(host), sys.executable, "-m", "topocast.runtime.agent"]

    def close(self) -> None:
        if self._dir is None:
            return
        try:
            os.unlink(os.path.join(self._dir, "control.sock"))
        except OSError:
            pass
        try:
            os.rmdir(self._dir)
        except OSError:
            pass


class SSHLauncher(Launcher):
    """Agents on remote hosts over SSH.

    ``hosts`` maps each topology host to ``{"target": "[user@]addr", "port": 22,
    "address": data IP}``; ``identity`` is a private key file; ``control_host`` an address of
    this machine the remote agents can reach; ``python`` and ``pythonpath`` locate topocast
    on the remote hosts (default: this interpreter and this source tree, as on a shared
    file system).
    """

    name = "ssh"
    shared_clock = False  # remote clocks: each agent times from its receipt of "start"

    def __init__(
        self,
        hosts: dict,
        *,
        identity: str | os.PathLike[str] | None = None,
        control_host: str = "127.0.0.1",
        python: str | None = None,
        pythonpath: str | None = None,
        options: Sequence[str] = (),
    ) -> None:
        self.hosts = hosts
        self.identity = identity
        self.control_host = control_host
        self.python = python or sys.executable
        self.pythonpath = pythonpath or _src_dir()
        self.options = list(options)

    def control_listen(self) -> tuple[socket.socket, str]:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.control_host, 0))
        sock.listen(256)
        return sock, f"tcp:{self.control_host}:{sock.getsockname()[1]}"

    def _entry(self, host):
        try:
            return self.hosts[host]
        except KeyError:
            raise InputError(f"no SSH target for host {host!r}", element="--ssh-hosts") from None

    def boot(self, host: str) -> dict:
        addr = self._entry(host).get("address", "127.0.0.1")
        return {"bind": "0.0.0.0" if addr not in ("127.0.0.1", "localhost") else "127.0.0.1", "advertise": addr}

    def where(self, host: str) -> str:
        e = self._entry(host)
        return f"via ssh {e['target']} port {e.get('port', 22)}"

    def command(self, host: str) -> list[str]:
        e = self._entry(host)
        cmd = ["ssh", "-T", "-o", "BatchMode=yes", "-p", str(e.get("port", 22))]
        if self.identity:
            cmd += ["-i", str(self.identity)]
        cmd += self.options
        remote = f"PYTHONPATH={shlex.quote(self.pythonpath)} exec {shlex.quote(self.python)} -m topocast.runtime.agent"
        return cmd + [e["target"], remote]


def make_launcher(
    name: str,
    *,
    testbed_name: str | None = None,
    ssh_hosts: dict | None = None,
    ssh_identity: str | os.PathLike[str] | None = None,
    ssh_options: Sequence[str] = (),
    control_host: str | None = None,
) -> Launcher:
    if name == "local":
        return LocalLauncher()
    if name == "testbed":
        from ..testbed.net import require_root
        from ..testbed.state import load_state

        require_root()
        return TestbedLauncher(load_state(testbed_name))
    if name == "ssh":
        if not ssh_hosts:
            raise InputError(
                "the ssh launcher needs --ssh-hosts FILE (host: [user@]address[:port])", element="--launcher"
            )
        return SSHLauncher(
            ssh_hosts, identity=ssh_identity, options=ssh_options, control_host=control_host or "127.0.0.1"
        )
    raise InputError(f"unknown launcher {name!r}; valid launchers: {', '.join(LAUNCHERS)}", element="--launcher")
