"""Launchers: how agents are started, where they listen, how they reach the coordinator.

* ``local``: processes on this machine, data and control over loopback;
* ``testbed``: each agent inside its emulated host's network namespace (``ip netns exec``);
  control over a Unix socket (path-based Unix sockets cross network namespaces, so control
  traffic never uses the shaped links), data over the emulated network;
* ``ssh``: agents started over SSH (``ssh ... python -m topocast.runtime.agent``); control
  over TCP to an address the remote hosts can reach.

The run secret goes to each agent on its stdin, never on a command line. The launchers are
chosen by name in :mod:`topocast.runtime.launcher_registry`.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputError

if TYPE_CHECKING:
    from ..testbed.state import TestbedState
    from ..topology import Topology

__all__ = ["Launcher", "LocalLauncher", "TestbedLauncher", "SSHLauncher", "load_ssh_hosts"]


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
    hosts_option = "--launcher"  # the option an error about its hosts names

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

    def known_hosts(self) -> Sequence[str] | None:
        """The hosts this launcher can start agents on (None: any name, all on this machine)."""
        return None

    def hosts_origin(self) -> str:
        """Where :meth:`known_hosts` comes from, for error messages."""
        return "this launcher"

    def require_hosts(self, hosts: Sequence[str], element: str | None = None) -> None:
        """An :class:`InputError` naming ``element`` (default: :attr:`hosts_option`) unless
        every one of ``hosts`` is known."""
        known = self.known_hosts()
        missing = [] if known is None else [h for h in hosts if h not in known]
        if missing:
            raise InputError(
                f"hosts {', '.join(missing)} are not in {self.hosts_origin()}", element=element or self.hosts_option
            )

    @property
    def warnings(self) -> list[str]:
        """What the caller should tell the user before the run (e.g. a link not emulated)."""
        return []

    def topology(self) -> Topology | None:
        """The topology of the network the agents run on, when the launcher knows it."""
        return None

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
    hosts_option = "--testbed"

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

    def known_hosts(self) -> Sequence[str]:
        return list(self.state.hosts)

    def hosts_origin(self) -> str:
        return f"testbed {self.state.name!r}"

    @property
    def warnings(self) -> list[str]:
        return list(self.state.warnings)

    def topology(self) -> Topology:
        from ..topology import load_topology

        return load_topology(self.state.topology_spec)

    def command(self, host: str) -> list[str]:
        return ["ip", "netns", "exec", self.state.namespace(host), sys.executable, "-m", "topocast.runtime.agent"]

    def prepare(self, *, fork_this_process: bool = False) -> None:
        from .forkserver import fork_server

        fork_server(_agent_env(), fork_this_process=fork_this_process)

    def start(self, host: str, boot: dict) -> Any:
        return self.start_all({host: boot})[host]

    def start_all(self, boots: dict[str, dict]) -> dict[str, Any]:
        """Forked by the fork server (``runtime.forkserver``) into each host's namespace, as
        the local launcher's are: a fork instead of an interpreter start and its imports per
        host (tens of hosts on a machine of few cores); ``ip netns exec`` when there is no
        server."""
        from .forkserver import fork_server

        namespaces = [self.state.namespace(h) for h in boots]
        try:
            return dict(zip(boots, fork_server(_agent_env()).start_all(list(boots.values()), namespaces), strict=True))
        except OSError:
            return {host: Launcher.start(self, host, boot) for host, boot in boots.items()}

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
    file system); ``source`` names where ``hosts`` was read from (error messages).
    """

    name = "ssh"
    hosts_option = "--ssh-hosts"
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
        source: str = "--ssh-hosts",
    ) -> None:
        self.hosts = hosts
        self.source = source
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
            raise InputError(f"no SSH target for host {host!r}", element=self.source) from None

    def known_hosts(self) -> Sequence[str]:
        return list(self.hosts)

    def hosts_origin(self) -> str:
        return f"the ssh hosts of {self.source}"

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


def load_ssh_hosts(path: str) -> dict[str, Mapping]:
    """The ssh hosts file (YAML/JSON): host -> ``[user@]address[:port]`` or a mapping with
    ``target``, ``port``, ``address``; as :class:`SSHLauncher` takes it."""
    import yaml

    try:
        with open(path) as fh:
            data = yaml.safe_load(fh)
    except (OSError, yaml.YAMLError) as exc:
        raise InputError(f"cannot read ssh hosts ({exc})", source=path) from None
    if not isinstance(data, dict):
        raise InputError("expected a mapping host -> '[user@]address[:port]'", source=path)
    out: dict[str, Mapping] = {}
    for h, v in data.items():
        if isinstance(v, dict):
            out[str(h)] = v
            continue
        target, port = str(v), 22
        if target.rsplit(":", 1)[-1].isdigit() and ":" in target:
            target, p = target.rsplit(":", 1)
            port = int(p)
        out[str(h)] = {"target": target, "port": port, "address": target.split("@")[-1]}
    return out
