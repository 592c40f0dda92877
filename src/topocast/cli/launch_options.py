"""The options that choose and build a launcher, shared by ``run`` and ``probe``: the choice
comes from the launcher registry (:mod:`topocast.runtime.launcher_registry`)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..runtime.launcher_registry import LAUNCHER_KINDS, LauncherOptions, launcher_kind

if TYPE_CHECKING:
    from ..runtime.launcher_registry import LauncherKind
    from ..runtime.launchers import Launcher

__all__ = ["add_launcher_options", "launcher_from_args", "goodput_from_args", "goodput_defaults"]


def add_launcher_options(p: argparse.ArgumentParser, *, agents_only: bool = False) -> None:
    """``--launcher`` (the registered launchers; ``agents_only``: those that start agents) and
    the options the launchers are built from."""
    kinds = [k for k in LAUNCHER_KINDS.values() if k.agents or not agents_only]
    p.add_argument(
        "--launcher",
        choices=[k.name for k in kinds],
        default="local",
        help="; ".join(f"{k.name}: {k.help}" for k in kinds) + " (default: local)",
    )
    p.add_argument("--testbed", default=None, metavar="NAME", help="testbed name (default: the only one up)")
    p.add_argument("--ssh-hosts", default=None, help="YAML/JSON: host -> '[user@]address[:port]'")
    p.add_argument("--ssh-identity", default=None, help="private key for the ssh launcher")
    p.add_argument(
        "--ssh-option",
        action="append",
        default=[],
        help="extra ssh option (repeatable), e.g. -oStrictHostKeyChecking=no",
    )
    p.add_argument("--control-host", default=None, help="address of this machine the ssh hosts can reach")


def launcher_from_args(args: argparse.Namespace) -> tuple[LauncherKind, Launcher | None]:
    """The launcher the command line asks for: its registry entry and the launcher built from
    the options (None for one that starts no agents)."""
    from ..runtime.launchers import load_ssh_hosts

    kind = launcher_kind(args.launcher)
    options = LauncherOptions(
        testbed_name=args.testbed,
        ssh_hosts=load_ssh_hosts(args.ssh_hosts) if args.ssh_hosts else None,
        ssh_hosts_source=args.ssh_hosts or "--ssh-hosts",
        ssh_identity=args.ssh_identity,
        ssh_options=args.ssh_option,
        control_host=args.control_host,
    )
    return kind, kind.make(options)


def goodput_from_args(args: argparse.Namespace, kind: LauncherKind) -> float:
    """``--goodput``, or the launcher's default; a fraction in (0, 1]."""
    from ..runtime.calibration import check_goodput

    goodput = getattr(args, "goodput", None)
    return check_goodput(goodput if goodput is not None else kind.goodput)


def goodput_defaults() -> str:
    """The launchers' default goodput, for ``--goodput``'s help."""
    other = [f"{k.goodput} with --launcher {k.name}" for k in LAUNCHER_KINDS.values() if k.goodput != 1.0]
    return ", ".join([*other, "1 otherwise"])
