"""What topocast.mpi keeps about a communicator, kept on the communicator itself.

One :class:`CommState` per communicator, stored as an MPI attribute of it (the keyval
:func:`state_of` creates once, with a delete callback): MPI drops the state when the
communicator is freed, and the callback frees topocast's private duplicate with it. State
keyed by a handle number (``comm.py2f()``) would outlive ``Comm.Free()``, and MPI hands the
freed number to the next communicator, which would inherit plans and host lists of another
group of ranks. ``Dup`` does not copy the attribute (no copy callback): a duplicate starts
with fresh state, as its group may be used differently.
"""

from __future__ import annotations

import hashlib
import os
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import numpy as np

if TYPE_CHECKING:
    from mpi4py import MPI

__all__ = ["CommState", "state_of", "private_dup", "Bounded"]

_keyval: int | None = None  # the MPI attribute key of CommState (created on first use)


class Bounded(OrderedDict):
    """A dict that forgets its oldest entries beyond ``limit`` (caches of a long-running
    program that calls with ever new sizes stay small)."""

    def __init__(self, limit: int = 256) -> None:
        super().__init__()
        self.limit = limit

    def __setitem__(self, key: Any, value: Any) -> None:
        super().__setitem__(key, value)
        if len(self) > self.limit:
            self.popitem(last=False)


@dataclass
class CommState:
    """Everything topocast.mpi remembers about one communicator. Every rank updates it the
    same way (only after calls every rank agreed on), so it is the same on every rank."""

    dup: MPI.Comm | None = None  # private duplicate: topocast's messages never match the program's
    # more ranks of the communicator on this rank's machine than it has cores: a rank that
    # waits then sleeps between polls instead of spinning, as the rank it waits for needs the core
    crowded: bool = False
    # (collective, topology key, hosts, algorithm, root or element count, size or itemsize) -> Plan
    plans: Bounded = field(default_factory=Bounded)
    # (collective, topology key, power-of-two size class) -> the planner ``auto`` picked
    choices: Bounded = field(default_factory=Bounded)
    # (collective, topology key, hosts, root, bytes, elements) -> MPI's own collective is used
    mpi_enough: Bounded = field(default_factory=Bounded)
    hosts: dict = field(default_factory=dict)  # topology key -> host of every rank, once checked
    previous: tuple | None = None  # key of the last call every rank agreed on (None: start over)
    # key of a call -> (the call that followed it last time, whether the same did the time before)
    following: Bounded = field(default_factory=Bounded)
    # (collective, descriptor without host) -> call agreed before, for check=False
    trusted: Bounded = field(default_factory=Bounded)


def _release(comm, keyval, state: CommState) -> None:
    """MPI's delete callback: the communicator is being freed (by every rank together)."""
    dup, state.dup = state.dup, None
    if dup is not None:
        from mpi4py import MPI

        if not MPI.Is_finalized():
            dup.Free()


def state_of(comm: MPI.Comm) -> CommState:
    """``comm``'s state, made on first use (local: no communication)."""
    global _keyval
    from mpi4py import MPI

    if _keyval is None:
        _keyval = MPI.Comm.Create_keyval(delete_fn=_release)
    state = cast("CommState | None", comm.Get_attr(_keyval))
    if state is None:
        state = CommState()
        comm.Set_attr(_keyval, state)
    return state


def private_dup(comm: MPI.Comm) -> MPI.Comm:
    """``comm``'s private duplicate (collective the first time: every rank makes it at the
    same call, since every rank's state is the same), and whether the communicator crowds
    this machine (``CommState.crowded``: more of its ranks share this rank's processor name
    than the cores they may run on together). MPI's own ``Idup`` of the base class: a
    subclass of the program's may override methods, not this. Both waits poll and sleep, as
    on a crowded machine: whether it is crowded is not known yet."""
    from mpi4py import MPI

    from .engine import wait_for

    state = state_of(comm)
    if state.dup is None:
        dup, request = MPI.Comm.Idup(comm)
        wait_for(request, True)
        state.dup = MPI.Intracomm(dup)
        name = int.from_bytes(hashlib.blake2b(MPI.Get_processor_name().encode(), digest_size=7).digest(), "big")
        mine = np.concatenate(([name], _affinity_mask().view(np.int64)))
        every = np.empty((comm.Get_size(), mine.size), dtype=np.int64)
        wait_for(MPI.Comm.Iallgather(state.dup, [mine, MPI.INT64_T], [every, MPI.INT64_T]), True)
        state.crowded = crowds(every, name)
    return state.dup


def crowds(every: np.ndarray, name: int) -> bool:
    """Whether more ranks run on machine ``name`` than the cores they may use together
    (``every``: one row per rank, its machine's name hash then its affinity mask's words)."""
    here = every[every[:, 0] == name, 1:]
    cores = int(np.unpackbits(np.bitwise_or.reduce(here, axis=0).view(np.uint8)).sum())
    return len(here) > cores


MASK_CPUS = 1024  # cores told apart in the affinity masks the ranks exchange


def _affinity_mask() -> np.ndarray:
    """The cores this rank may run on, as a bit mask of ``MASK_CPUS`` bits (a core numbered
    beyond counts as its number modulo that). The union over a machine's ranks is what they
    share: ranks bound one per core are not crowded, ranks confined to two cores are."""
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on every platform: every core of the machine
        cpus = list(range(os.cpu_count() or 1))
    bits = np.zeros(MASK_CPUS, dtype=np.uint8)
    bits[np.asarray(cpus, dtype=np.int64) % MASK_CPUS] = 1
    return np.packbits(bits)
