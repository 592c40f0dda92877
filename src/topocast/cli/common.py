"""Helpers shared by the subcommands: argument types, topology loading, tables, JSON."""

from __future__ import annotations

import json
import math
import sys

from ..errors import InputError
from ..units import parse_bandwidth, parse_size, parse_time

__all__ = [
    "size_arg",
    "bandwidth_arg",
    "time_arg",
    "add_topology_args",
    "load_topology_arg",
    "print_json",
    "console",
]


def _wrap(parser, field):
    def conv(text):
        try:
            return parser(text, field=field)
        except InputError as exc:
            import argparse

            raise argparse.ArgumentTypeError(str(exc)) from None

    conv.__name__ = field
    return conv


size_arg = _wrap(parse_size, "size")
bandwidth_arg = _wrap(parse_bandwidth, "bandwidth")
time_arg = _wrap(parse_time, "time")


def add_topology_args(p) -> None:
    """TOPOLOGY positional plus ``--default-bandwidth`` (for files whose links may lack one)."""
    p.add_argument("topology", help="topology file (.yaml/.json/.xml/.conf/.graphml) or builtin:NAME")
    p.add_argument(
        "--default-bandwidth",
        type=bandwidth_arg,
        default=None,
        metavar="BW",
        help="bandwidth for links the file gives none (e.g. 1Gbps); without it such files are refused",
    )


def load_topology_arg(args):
    from ..topology import load_topology

    return load_topology(args.topology, default_bandwidth=getattr(args, "default_bandwidth", None))


def _jsonable(x):
    if isinstance(x, float) and not math.isfinite(x):
        return None if math.isnan(x) else ("inf" if x > 0 else "-inf")
    if isinstance(x, dict):
        return {k: _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    return x


def print_json(data) -> None:
    json.dump(_jsonable(data), sys.stdout, indent=1)
    sys.stdout.write("\n")


def console():
    from rich.console import Console

    return Console()
