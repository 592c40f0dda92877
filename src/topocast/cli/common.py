"""Helpers shared by the subcommands: argument types, topology loading, tables, JSON."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from ..errors import InputError
from ..units import parse_bandwidth, parse_size, parse_time

if TYPE_CHECKING:
    from rich.console import Console

    from ..topology import Topology

__all__ = [
    "size_arg",
    "bandwidth_arg",
    "time_arg",
    "add_topology_args",
    "destinations_arg",
    "require_wanted",
    "load_topology_arg",
    "load_topology_with_default",
    "print_json",
    "console",
    "check_output",
    "progress",
    "resolve_source",
    "PLOT_SUFFIXES",
]

#: File types the plots can be written as (matplotlib's raster and vector formats).
PLOT_SUFFIXES = (".png", ".pdf", ".svg", ".jpg", ".jpeg", ".eps", ".ps", ".tif", ".tiff", ".webp")


def check_output(
    path: str | os.PathLike[str] | None, option: str, suffixes: tuple[str, ...] | None = None, *, folder: bool = False
) -> None:
    """Refuse, before any work is done, an output that cannot be written.

    A file must sit in an existing folder and end in one of ``suffixes``; a folder
    (``folder=True``) is created with its parents. Raises :class:`InputError` naming ``option``.
    """
    if path is None:
        return
    from pathlib import Path

    target = Path(path)
    if folder:  # an output folder is made, with its parents
        try:
            target.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"cannot create this folder ({exc.strerror})", element=f"{option} {path}") from None
        return
    if not target.parent.is_dir():
        raise InputError(f"folder {str(target.parent)!r} does not exist (create it first)", element=f"{option} {path}")
    if suffixes is not None and target.suffix.lower() not in suffixes:
        raise InputError(
            f"unknown file type {target.suffix or '(none)'!r}; expected one of {', '.join(suffixes)}",
            element=f"{option} {path}",
        )


def _wrap(parser, field, *, negative_ok: bool = True):
    def conv(text):
        try:
            value = parser(text, field=field)
        except InputError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        if not negative_ok and value < 0:
            raise argparse.ArgumentTypeError(f"{field}: cannot be negative, got {text!r}")
        return value

    conv.__name__ = field
    return conv


def _rate_tolerance(text, field):
    from ..planners.broadcast._compact import check_rate_tolerance

    return check_rate_tolerance(text, option=field)


size_arg = _wrap(parse_size, "size", negative_ok=False)
rate_tolerance_arg = _wrap(_rate_tolerance, "--rate-tolerance")


def add_rate_tolerance_arg(p: argparse.ArgumentParser) -> None:
    """``--rate-tolerance``, passed to the planners that merge trees (stable, fpfr, ...)."""
    from ..planners.broadcast._compact import DEFAULT_RATE_TOLERANCE

    p.add_argument(
        "--rate-tolerance",
        type=rate_tolerance_arg,
        default=None,
        metavar="FRACTION",
        help="fraction of its own rate any one host may lose when the tree planners (stable, fpfr, "
        f"balanced_multicast, two_tree, optimal) merge trees, in [0, 0.5) "
        f"(default {DEFAULT_RATE_TOLERANCE}; 0: every tree of the paper's algorithm)",
    )


bandwidth_arg = _wrap(parse_bandwidth, "bandwidth")
time_arg = _wrap(parse_time, "time", negative_ok=False)


def add_topology_args(p: argparse.ArgumentParser) -> None:
    """TOPOLOGY positional plus ``--default-bandwidth`` (for files whose links may lack one)."""
    p.add_argument("topology", help="topology file (.yaml/.json/.xml/.conf/.graphml) or builtin:NAME")
    p.add_argument(
        "--default-bandwidth",
        type=bandwidth_arg,
        default=None,
        metavar="BW",
        help="bandwidth for links the file gives none (e.g. 1Gbps); without it such files are refused",
    )


class _Steps:
    """What :func:`progress` yields: ``step(label)`` marks one unit of work done."""

    def __init__(self, bar=None, task=None):
        self._bar, self._task = bar, task

    def __call__(self, label: str = "") -> None:
        if self._bar is not None:
            self._bar.update(self._task, advance=1, description=label)


@contextlib.contextmanager
def progress(total: int, description: str, *, quiet: bool = False) -> Iterator[_Steps]:
    """A progress bar on stderr for ``total`` steps, shown only on a terminal and not when
    ``quiet`` (``--json``): piped or scripted runs print nothing extra."""
    if quiet or total <= 1 or not sys.stderr.isatty():
        yield _Steps()
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("{task.description:<24}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        yield _Steps(bar, bar.add_task(description, total=total))


def destinations_arg(text: str | None, topology: Topology, source: str) -> tuple[str, ...] | None:
    """``--destinations A,B,...`` (None: every other host), refused when it leaves no host
    besides the source: a broadcast to no one has no rate to report."""
    dests = _listed_hosts(text)
    if not [h for h in (topology.hosts if dests is None else dests) if h != source]:
        raise InputError(
            f"no destination besides the source {source!r}: nothing to send", element=_hosts_from(text, topology)
        )
    return dests


def _listed_hosts(text: str | None) -> tuple[str, ...] | None:
    """The hosts of ``--destinations A,B,...``; None where the option is not given."""
    return tuple(d.strip() for d in text.split(",")) if text else None


def _hosts_from(text: str | None, topology: Topology) -> str:
    """Where a command's hosts came from, for an error: the option, or the whole topology."""
    return "--destinations" if text else f"topology {topology.name!r}"


def require_wanted(plan, path: str) -> None:
    """A plan file must want some byte somewhere: an empty ``wanted`` has nothing to move,
    verify or rate; nor has an allreduce over one host."""
    if not any(plan.wanted.values()):
        raise InputError("no host wants any byte (wanted is empty): nothing to move or to verify", source=path)
    if plan.collective == "allreduce" and len(plan.wanted) < 2:
        raise InputError(ALLREDUCE_OF_ONE, source=path, element="wanted")


ALLREDUCE_OF_ONE = "an allreduce needs two hosts or more: over one host nothing is moved"


def allreduce_hosts_arg(text: str | None, topology: Topology) -> tuple[str, ...] | None:
    """The hosts of an allreduce (``--destinations A,B,...``; None: every host), refused when
    fewer than two: an allreduce over one host reduces and moves nothing, so it has no time or
    rate to report."""
    chosen = _listed_hosts(text)
    if len(set(chosen if chosen is not None else topology.hosts)) < 2:
        raise InputError(ALLREDUCE_OF_ONE, element=_hosts_from(text, topology))
    return chosen


def resolve_source(topology: Topology, source: str | None, option: str = "--source") -> str:
    """The source host: ``source``, or the first host; an unknown name lists the hosts."""
    if source is None:
        return topology.hosts[0]
    return topology.require_host(source, element=option)


def load_topology_arg(args: argparse.Namespace) -> Topology:
    return load_topology_with_default(args.topology, getattr(args, "default_bandwidth", None))


def load_topology_with_default(spec, default_bandwidth: float | None) -> Topology:
    """``load_topology``, refusing ``--default-bandwidth`` where it would be ignored: only a
    Topology Zoo file may leave a link without its speed."""
    from ..errors import TopologyError
    from ..topology import load_topology

    if default_bandwidth is not None and not str(spec).lower().endswith(".graphml"):
        raise TopologyError("--default-bandwidth applies to GraphML (Topology Zoo) files only", source=str(spec))
    return load_topology(spec, default_bandwidth=default_bandwidth)


def _jsonable(x):
    if isinstance(x, float) and not math.isfinite(x):
        return None if math.isnan(x) else ("inf" if x > 0 else "-inf")
    if isinstance(x, dict):
        return {k: _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    return x


def print_json(data: object) -> None:
    # one write: json.dump would write each token to the stream (seconds for 10,000 hosts)
    sys.stdout.write(json.dumps(_jsonable(data), indent=1) + "\n")


def console() -> Console:
    from rich.console import Console

    return Console()


def help_of(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace], int]:
    """The action of a command given without its sub-command: print its help, exit status 2."""

    def show_help(args: argparse.Namespace) -> int:
        parser.print_help()
        return 2

    return show_help
