"""Launchers by name: the one table a launcher is chosen from, by the command line
(``--launcher``) and by library callers (:func:`make_launcher`) alike (docs/design.md,
"Launchers").

Each entry says how its launcher is built from :class:`LauncherOptions`, which function
performs a plan with it, and what a run with it assumes unless told otherwise: the TCP goodput
of the links (:mod:`topocast.runtime.calibration`), and whether the network the data crosses
is the topology's own (the testbed's links are shaped to the file's rates), in which case the
agents share each link max-min as the simulator does.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from .calibration import GOODPUT_TESTBED

if TYPE_CHECKING:
    from .launchers import Launcher

__all__ = ["LauncherOptions", "LauncherKind", "LAUNCHER_KINDS", "LAUNCHERS", "launcher_kind", "make_launcher"]


@dataclass(frozen=True)
class LauncherOptions:
    """What a launcher is built from (the command line's ``--testbed`` and ``--ssh-*``)."""

    testbed_name: str | None = None  # default: the only testbed up
    ssh_hosts: Mapping[str, Mapping] | None = None  # host -> {"target", "port", "address"}
    ssh_hosts_source: str = "--ssh-hosts"  # where ssh_hosts was read from (error messages)
    ssh_identity: str | os.PathLike[str] | None = None
    ssh_options: Sequence[str] = ()
    control_host: str | None = None


@dataclass(frozen=True)
class LauncherKind:
    """One launcher: its name, a line of help, how to build it and how it runs a plan.

    ``build`` is None for a launcher that starts no agents of topocast's (``mpi``: the ranks
    of an MPI job); such a launcher cannot probe, nor follow a run (resume, absent hosts,
    ``--adapt``). ``perform`` is ``"module:function"``, called as
    :func:`topocast.runtime.perform` is. ``note`` is said after a run compared with a bound.
    """

    name: str
    help: str
    build: Callable[[LauncherOptions], Launcher] | None
    perform: str = "topocast.runtime.coordinator:perform"
    goodput: float = 1.0
    shaped_as_topology: bool = False
    note: str | None = None

    @property
    def agents(self) -> bool:
        """Whether it starts topocast's agents (and so can probe and follow a run)."""
        return self.build is not None

    def make(self, options: LauncherOptions = LauncherOptions()) -> Launcher | None:
        """The launcher (None for one that starts no agents)."""
        return None if self.build is None else self.build(options)

    def performer(self) -> Callable[..., Any]:
        """The function that performs a plan with this launcher (imported on first use)."""
        from importlib import import_module

        module, function = self.perform.split(":")
        return getattr(import_module(module), function)


def _local(options: LauncherOptions) -> Launcher:
    from .launchers import LocalLauncher

    return LocalLauncher()


def _testbed(options: LauncherOptions) -> Launcher:
    from ..testbed.net import require_root
    from ..testbed.state import load_state
    from .launchers import TestbedLauncher

    require_root()
    return TestbedLauncher(load_state(options.testbed_name))


def _ssh(options: LauncherOptions) -> Launcher:
    from .launchers import SSHLauncher

    if not options.ssh_hosts:
        raise InputError("the ssh launcher needs --ssh-hosts FILE (host: [user@]address[:port])", element="--launcher")
    return SSHLauncher(
        dict(options.ssh_hosts),
        identity=options.ssh_identity,
        options=options.ssh_options,
        control_host=options.control_host or "127.0.0.1",
        source=options.ssh_hosts_source,
    )


LAUNCHER_KINDS: dict[str, LauncherKind] = {
    kind.name: kind
    for kind in (
        LauncherKind(
            "local",
            "agents on this machine over loopback (links not emulated)",
            _local,
            note="launcher local runs over loopback: the topology's links are not emulated (use --launcher testbed)",
        ),
        LauncherKind(
            "testbed",
            "agents in the emulated hosts of a testbed (topocast testbed up)",
            _testbed,
            goodput=GOODPUT_TESTBED,
            shaped_as_topology=True,
        ),
        LauncherKind("ssh", "agents on remote machines over ssh (--ssh-hosts)", _ssh),
        LauncherKind(
            "mpi",
            "no agents: one MPI rank per host under MPICH's mpiexec on this machine (topocast.mpi)",
            None,
            perform="topocast.mpi.launch:perform_like_runtime",
        ),
    )
}

#: The launchers that start agents (what :func:`make_launcher` builds).
LAUNCHERS = tuple(name for name, kind in LAUNCHER_KINDS.items() if kind.agents)


def launcher_kind(name: str) -> LauncherKind:
    """The registered launcher ``name``, or an :class:`InputError` listing the valid ones."""
    try:
        return LAUNCHER_KINDS[name]
    except KeyError:
        raise InputError(
            f"unknown launcher {name!r}; valid launchers: {', '.join(LAUNCHER_KINDS)}", element="--launcher"
        ) from None


def make_launcher(
    name: str,
    *,
    testbed_name: str | None = None,
    ssh_hosts: Mapping[str, Mapping] | None = None,
    ssh_identity: str | os.PathLike[str] | None = None,
    ssh_options: Sequence[str] = (),
    control_host: str | None = None,
) -> Launcher:
    """The launcher registered as ``name`` (``local``, ``testbed``, ``ssh``), built from the
    options it takes; ``ssh_hosts`` is the hosts file's content (:func:`launchers.load_ssh_hosts`)."""
    kind = launcher_kind(name)
    options = LauncherOptions(
        testbed_name=testbed_name,
        ssh_hosts=ssh_hosts,
        ssh_identity=ssh_identity,
        ssh_options=ssh_options,
        control_host=control_host,
    )
    launcher = kind.make(options)
    if launcher is None:
        raise InputError(
            f"the {name} launcher starts no agents (valid here: {', '.join(LAUNCHERS)})", element="--launcher"
        )
    return launcher
