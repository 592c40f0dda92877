"""Drop-in ``bcast`` and ``allreduce`` for mpi4py programs, and ``perform`` of any plan.

Agreeing on the arguments: a call whose arguments differ between ranks (buffer size or type,
root, op, topology, hosts) raises the same :class:`MPIRunError` on every rank before any of
its data is kept, and the communicator stays usable. Two ways:

* the slow way, for a call not seen before: an ``Allreduce`` of a digest of each rank's
  descriptor of its buffer, root and topology, and an ``allgather`` of the descriptors the
  first time or whenever they differ; every rank runs the same checks on the same table;
* the fast way, for a repeated call: every rank remembers which call followed the previous
  one the last two times (the same on every rank, since it is updated only by calls every
  rank agreed on) and, when it was the same call both times, performs that predicted call
  at once, on scratch buffers if its own arguments are not the predicted ones, while a
  non-blocking ``Iallreduce`` of "my arguments are the predicted ones" runs beside it. When
  every rank says yes, the call is done: the check cost no extra round trip. Otherwise the
  result is dropped and the call agrees the slow way (a wrong prediction costs one extra
  run of the predicted call: hence two times, so that a program whose calls do not repeat
  in a fixed order pays the small ``Allreduce`` of the slow way, not whole runs).

Hosts and ranks: each rank is one host of the topology, named by ``mapping`` (a host per
rank, or host -> rank) or else by ``MPI.Get_processor_name()``. Without a topology the
ranks are the hosts ``rank0``, ``rank1``, ... of a uniform star.

Plans are made on the lowest rank only and sent to the others (the planners are
deterministic, but one planning costs less CPU than ``size`` of them), and cached per
(topology, collective, root, size) in the communicator's own state (:mod:`.state`, dropped
when the communicator is freed): a loop that broadcasts the same buffer plans once.

What topocast cannot move exactly goes to MPI's own call, on every rank together: a buffer
form or datatype :mod:`.buffers` delegates, a user-defined op, an intercommunicator. Calls
to MPI are always MPI's own methods (``MPI.Comm.Bcast(comm, ...)``), never a subclass's
override: a program may route its communicator's ``Bcast`` to this module. ``algorithm="auto"`` picks a planner by simulation once per power-of-two size
class, and calls MPI's own collective instead when the simulator predicts MPI's algorithm to
take less than ``MPI_BELOW`` seconds: there, topocast's per-call cost (a Python progress loop,
one MPI message per chunk) is larger than anything a plan can save
(docs/experiments/mpi.md, "Agreeing on the arguments, and the cost of a small call").
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from ..errors import TopocastError
from ..plan import Broadcast, Plan
from ..runtime import DEFAULT_CHUNK
from .buffers import Delegated, Message, as_message, check_op, reduction
from .engine import MPIRunError, RankStats, chunk_for, perform_local, wait_for, without_loose_caps
from .state import private_dup, state_of

if TYPE_CHECKING:
    from mpi4py import MPI
    from mpi4py.typing import BufSpec, InPlace
    from numpy.typing import DTypeLike

    from ..topology import Topology

    # the host of each rank: a host per rank, or host -> rank
    HostMapping = Sequence[str] | dict[str, int]

#: the caller's own buffer, returned as it was passed
_Buf = TypeVar("_Buf", bound="BufSpec")

__all__ = ["bcast", "allreduce", "perform", "plan_of", "job_hosts", "DEFAULT_BCAST", "DEFAULT_ALLREDUCE"]

# Without a topology topocast knows nothing about the network, so it does what MPICH does on
# a uniform one (planner ``mpich``: binomial tree for short messages, scatter + ring
# allgather for long ones) and, for allreduce, the bandwidth-optimal ring.
DEFAULT_BCAST = "mpich"
DEFAULT_ALLREDUCE = "ring"
STAR_BANDWIDTH = 1.25e9  # bytes/s of every link of the star used without a topology
MPI_BELOW = 0.03  # seconds (see the module docstring)
MPICH_ALLREDUCE_SHORT = 2048  # bytes: MPICH's allreduce uses recursive doubling up to this size


@dataclass(frozen=True)
class _Desc:
    """What a rank says about a call: compared across ranks before moving data."""

    problem: str | None
    nbytes: int = 0
    dtype: str = ""
    count: int = 0
    root: int = 0
    extra: tuple = ()
    host: str = ""  # this rank's host (mapping or processor name)
    topology: tuple = ()  # topology name and hosts
    delegate: str = ""  # why this rank's arguments go to MPI's own call ("": topocast moves them)


@dataclass(frozen=True)
class _Call:
    """A call every rank agreed on: ``key`` is the same on every rank, ``desc`` is this rank's
    descriptor, ``run(data)`` performs it again on this rank's bytes."""

    key: tuple
    desc: _Desc
    nbytes: int
    run: Callable[[np.ndarray], None]


def _predicted(comm) -> _Call | None:
    """The call that followed the previous one the last two times (the same on every rank);
    None when it was not the same call both times: a wrong prediction costs a whole run of
    the predicted call, a call agreed the slow way only a small ``Allreduce``."""
    state = state_of(comm)
    entry = None if state.previous is None else state.following.get(state.previous)
    return entry[0] if entry is not None and entry[1] else None


def _speculate(comm, desc: _Desc, data: np.ndarray | None) -> bool:
    """Perform the predicted call on ``data`` (scratch bytes when this rank's arguments are
    not the predicted ones) beside a non-blocking vote; True when every rank's were."""
    from mpi4py import MPI

    call = _predicted(comm)
    if call is None:
        return False
    mine = data is not None and desc == call.desc
    vote = np.array([0 if mine else 1], dtype=np.int64)
    request = MPI.Comm.Iallreduce(private_dup(comm), MPI.IN_PLACE, [vote, MPI.INT64_T], op=MPI.MAX)
    try:
        call.run(data if mine and data is not None else np.zeros(call.nbytes, dtype=np.uint8))
    finally:
        wait_for(request, state_of(comm).crowded)
    if vote[0]:
        return False
    state_of(comm).previous = call.key
    return True


def _agreed(comm, key: tuple, desc: _Desc, nbytes: int, run) -> None:
    """Remember the call every rank just agreed on, and that it followed the previous one."""
    state = state_of(comm)
    call = _Call(key, desc, nbytes, run)
    if state.previous is not None:
        last = state.following.get(state.previous)
        state.following[state.previous] = (call, last is not None and last[0].key == key)
    state.previous = key
    state.trusted[(key[0], replace(desc, host=""))] = call


def _run_trusted(comm, collective: str, desc: _Desc, data: np.ndarray | None) -> bool:
    """``check=False``: perform a call agreed on before with these arguments, without any
    check (the caller promises that every rank passes matching arguments, as MPI itself
    assumes). False when there is none (then every rank agrees the slow way)."""
    call = state_of(comm).trusted.get((collective, replace(desc, host="")))
    if call is None or data is None or call.desc != desc:
        return False
    call.run(data)
    return True


def _forget(comm) -> None:
    """After an error or a call left to MPI (on every rank alike): predict nothing for the
    next call."""
    state_of(comm).previous = None


def _agree(comm, desc: _Desc, what: str) -> list[_Desc]:
    """Every rank's descriptor; raise the same error on every rank if a rank found a problem
    with its own arguments.

    Fast path: once the ranks' hosts are known for this communicator and topology, one
    ``Allreduce`` (MAX) of a digest of the descriptor without the host, and of its negation,
    shows whether all ranks agree; only when they do not (or the hosts are not known yet) do
    they ``allgather`` the descriptors to find out who differs. A pickled allgather costs
    several times more than a small Allreduce on a busy machine.
    """
    from mpi4py import MPI

    known = state_of(comm).hosts.get(desc.topology)
    slow = desc.problem is not None or known is None or known[comm.Get_rank()] != desc.host
    digest = int.from_bytes(hashlib.blake2b(repr(replace(desc, host="")).encode(), digest_size=7).digest(), "big")
    votes = np.array([int(slow), digest, -digest], dtype=np.int64)
    dup = private_dup(comm)  # every rank agrees at the same call: the first makes it
    wait_for(MPI.Comm.Iallreduce(dup, MPI.IN_PLACE, [votes, MPI.INT64_T], op=MPI.MAX), state_of(comm).crowded)
    if not votes[0] and votes[1] == -votes[2] and known is not None:
        return [replace(desc, host=h) for h in known]
    descs = MPI.Comm.allgather(comm, desc)
    for r, d in enumerate(descs):
        if d.problem is not None:
            raise MPIRunError(f"{what}: rank {r}: {d.problem}")
    return descs


def _same(descs: list[_Desc], field: str, what: str, label: str) -> None:
    values = [getattr(d, field) for d in descs]
    if any(v != values[0] for v in values):
        shown = ", ".join(f"rank {r}: {v}" for r, v in enumerate(values[:8]))
        raise MPIRunError(f"{what}: the ranks disagree on {label} ({shown}{', ...' if len(values) > 8 else ''})")


def _my_host(comm, topology, mapping) -> str:
    """This rank's host name (its own view; :func:`job_hosts` checks all of them together)."""
    from mpi4py import MPI

    rank, size = comm.Get_rank(), comm.Get_size()
    if mapping is not None:
        if isinstance(mapping, dict):
            names = [h for h, r in mapping.items() if int(r) == rank]
            if len(names) != 1:
                raise ValueError(f"mapping names {len(names)} hosts for rank {rank} (one expected)")
            return str(names[0])
        mapping = list(mapping)
        if len(mapping) != size:
            raise ValueError(f"mapping lists {len(mapping)} hosts for a communicator of {size} ranks")
        return str(mapping[rank])
    if topology is None:
        return f"rank{rank}"
    return MPI.Get_processor_name()


def job_hosts(
    comm: MPI.Comm, topology: Topology | None = None, mapping: HostMapping | None = None, what: str = "topocast.mpi"
) -> list[str]:
    """The host of every rank, checked against ``topology``: same error on every rank."""
    try:
        desc = _Desc(None, host=_my_host(comm, topology, mapping), topology=_topology_key(topology))
    except (ValueError, TypeError) as exc:
        desc = _Desc(str(exc))
    return _hosts(comm, _agree(comm, desc, what), topology, mapping, what)


def _hosts(comm, descs: list[_Desc], topology, mapping, what: str) -> list[str]:
    """The ranks' hosts from their descriptors, checked (one host per rank, all in the
    topology, the same topology everywhere)."""
    _same(descs, "topology", what, "the topology (name, hosts)")
    hosts = [d.host for d in descs]
    seen: dict[str, int] = {}
    for r, h in enumerate(hosts):
        if h in seen:
            how = "mapping" if mapping is not None else "MPI.Get_processor_name()"
            raise MPIRunError(
                f"{what}: ranks {seen[h]} and {r} are both host {h!r} (by {how}); one rank per host is "
                "expected: pass mapping=[host of rank 0, host of rank 1, ...]"
            )
        seen[h] = r
        if topology is not None and not topology.is_host(h):
            raise MPIRunError(f"{what}: rank {r}: {topology.not_a_host(h)}; pass mapping=[host of rank 0, ...]")
    state_of(comm).hosts[descs[0].topology] = hosts
    return hosts


def _topology_key(topology) -> tuple:
    return () if topology is None else (topology.name, tuple(topology.hosts))


def _star(hosts):
    from ..topology.model import PhysicalLink, Topology

    hub = "hub"
    while hub in hosts:
        hub += "_"
    return Topology("mpi job", list(hosts), [hub], [PhysicalLink(h, hub, STAR_BANDWIDTH) for h in hosts])


def _plan_on_root(comm, make, what: str) -> Plan:
    """``make()`` on rank 0, the plan (or its error) sent to every rank: non-blocking
    broadcasts, waited for with :func:`.engine.wait_for` (the other ranks wait while rank 0
    plans; on a crowded machine a spinning wait would take rank 0's core)."""
    from mpi4py import MPI

    text, unexpected = b"", None
    if comm.Get_rank() == 0:
        try:
            text = b"P" + json.dumps(make().to_json()).encode()
        except TopocastError as exc:
            text = b"E" + str(exc).encode()
        except Exception as exc:  # a planner's bug: the other ranks must hear of it, not wait forever
            unexpected = exc
            text = b"E" + f"{type(exc).__name__}: {exc}".encode()
    dup, crowded = private_dup(comm), state_of(comm).crowded
    length = np.array([len(text)], dtype=np.int64)
    wait_for(MPI.Comm.Ibcast(dup, [length, MPI.INT64_T], root=0), crowded)
    body = np.frombuffer(text, dtype=np.uint8).copy() if text else np.empty(int(length[0]), dtype=np.uint8)
    wait_for(MPI.Comm.Ibcast(dup, [body, MPI.BYTE], root=0), crowded)
    kind, payload = body[:1].tobytes(), body[1:].tobytes().decode()
    if kind == b"E":
        raise MPIRunError(f"{what}: planning failed: {payload}") from unexpected
    return Plan.from_json(json.loads(payload))


def _size_class(nbytes: int) -> int:
    return max(int(nbytes), 1).bit_length()


def _planner_name(collective: str, algorithm: str, topology, make_request, nbytes: int, choices: dict) -> str:
    """``algorithm``, or for ``auto`` the planner the simulator prefers at this size class
    (remembered in ``choices``)."""
    if algorithm != "auto":
        return algorithm
    key = (collective, _topology_key(topology), _size_class(nbytes))
    if key not in choices:
        from ..planners import get_planner

        plan = get_planner(collective, "auto")(topology, make_request(nbytes))
        choices[key] = str(plan.notes.get("choice") or "auto")
    return choices[key]


def _broadcast_plan(topology, hosts, root: int, nbytes: int, algorithm: str, choices: dict | None = None) -> Plan:
    from ..plan.check import check_plan
    from ..planners import get_planner

    if topology is None:
        topology = _star(hosts)
        algorithm = DEFAULT_BCAST if algorithm == "auto" else algorithm
    others = tuple(h for h in hosts if h != hosts[root])

    def request(n):
        return Broadcast(hosts[root], n, others)

    name = _planner_name("broadcast", algorithm, topology, request, nbytes, {} if choices is None else choices)
    plan = get_planner("broadcast", name)(topology, request(nbytes))
    check_plan(plan, topology)
    return without_loose_caps(plan, topology)


def _allreduce_plan(topology, hosts, count: int, itemsize: int, algorithm: str, choices: dict | None = None) -> Plan:
    """An allreduce plan over ``count`` elements of ``itemsize`` bytes: planned in elements,
    then scaled to bytes, so that every range falls on whole elements."""
    from ..plan import Allreduce
    from ..plan.check_allreduce import check_allreduce
    from ..planners import get_planner

    if topology is None:
        topology = _star(hosts)
        algorithm = DEFAULT_ALLREDUCE if algorithm == "auto" else algorithm

    def request(n):
        return Allreduce(n, tuple(hosts))

    name = _planner_name(
        "allreduce", algorithm, topology, request, count * itemsize, {} if choices is None else choices
    )
    plan = get_planner("allreduce", name)(topology, request(count))
    check_allreduce(plan, topology)
    return without_loose_caps(_scale(plan, itemsize), topology)


def _scale(plan: Plan, k: int) -> Plan:
    """``plan`` with every offset and length multiplied by ``k`` (elements -> bytes). Rate
    caps stay: the planner took an element for a byte of the links' bytes/s, so a cap is
    the share of a link the transfer gets, which is the same number of bytes/s."""
    if k == 1:
        return plan

    def rs(ranges):
        return tuple((o * k, n * k) for o, n in ranges)

    transfers = tuple(replace(t, ranges=rs(t.ranges)) for t in plan.transfers)
    return replace(
        plan,
        size=plan.size * k,
        transfers=transfers,
        initial={h: rs(r) for h, r in plan.initial.items()},
        wanted={h: rs(r) for h, r in plan.wanted.items()},
        chunk_size=plan.chunk_size * k,
    )


def _cached_plan(comm, key: tuple, make, what: str) -> Plan:
    plans = state_of(comm).plans
    if key not in plans:
        plans[key] = _plan_on_root(comm, make, what)
    return plans[key]


def _bcast_plan(comm, hosts, topology, algorithm: str, root: int, nbytes: int, what: str) -> Plan:
    key = ("broadcast", _topology_key(topology), tuple(hosts), algorithm, root, nbytes)
    return _cached_plan(
        comm, key, lambda: _broadcast_plan(topology, hosts, root, nbytes, algorithm, state_of(comm).choices), what
    )


def _allreduce_plan_cached(comm, hosts, topology, algorithm: str, count: int, itemsize: int, what: str) -> Plan:
    key = ("allreduce", _topology_key(topology), tuple(hosts), algorithm, count, itemsize)
    choices = state_of(comm).choices
    return _cached_plan(comm, key, lambda: _allreduce_plan(topology, hosts, count, itemsize, algorithm, choices), what)


def _mpi_suffices(comm, collective: str, topology, hosts, root: int, nbytes: int, count: int, algorithm: str) -> bool:
    """With ``algorithm="auto"``: is MPI's own algorithm predicted to take less than
    ``MPI_BELOW`` seconds (then MPI's collective is called instead of a plan)?"""
    if algorithm != "auto":
        return False
    key = (collective, _topology_key(topology), tuple(hosts), root, nbytes, count)
    known = state_of(comm).mpi_enough
    if key not in known:
        known[key] = _mpi_prediction(collective, topology, hosts, root, nbytes, count) < MPI_BELOW
    return known[key]


def _mpi_prediction(collective: str, topology, hosts, root: int, nbytes: int, count: int) -> float:
    """Predicted seconds of what MPICH runs for this call: planner ``mpich`` for a broadcast;
    for an allreduce, recursive doubling up to ``MPICH_ALLREDUCE_SHORT`` bytes or below one
    element per rank of the largest power of two, else Rabenseifner's algorithm."""
    from ..plan import Allreduce
    from ..planners import get_planner
    from ..sim import simulate

    topo = _star(hosts) if topology is None else topology
    if collective == "broadcast":
        request = Broadcast(hosts[root], nbytes, tuple(h for h in hosts if h != hosts[root]))
        plan = get_planner("broadcast", "mpich")(topo, request)
    else:
        pof2 = 1 << (len(hosts).bit_length() - 1)
        name = "recursive_doubling" if nbytes <= MPICH_ALLREDUCE_SHORT or count < pof2 else "rabenseifner"
        plan = get_planner("allreduce", name)(topo, Allreduce(nbytes, tuple(hosts)))
    return simulate(plan, topo).makespan


def plan_of(
    comm: MPI.Comm,
    collective: str,
    nbytes: int,
    *,
    root: int = 0,
    itemsize: int = 1,
    topology: Topology | None = None,
    algorithm: str = "auto",
    mapping: HostMapping | None = None,
) -> Plan | None:
    """The plan ``bcast`` (``collective="broadcast"``) or ``allreduce`` (``"allreduce"``, of
    ``nbytes // itemsize`` elements) will follow for a message of ``nbytes`` bytes, made now
    and cached (collective: every rank calls it); None when the call will use MPI's own
    collective (``MPI_BELOW``). Lets a program see the plan, or make it before a timed loop."""
    what = f"topocast.mpi.plan_of({collective!r})"
    hosts = job_hosts(comm, topology, mapping, what)
    nbytes, root = int(nbytes), int(root)
    if collective == "broadcast":
        if _mpi_suffices(comm, collective, topology, hosts, root, nbytes, nbytes, algorithm):
            return None
        return _bcast_plan(comm, hosts, topology, algorithm, root, nbytes, what)
    if collective == "allreduce":
        count = nbytes // itemsize
        if _mpi_suffices(comm, collective, topology, hosts, 0, count * itemsize, count, algorithm):
            return None
        return _allreduce_plan_cached(comm, hosts, topology, algorithm, count, itemsize, what)
    raise MPIRunError(f"{what}: collective must be 'broadcast' or 'allreduce'")


def _nothing(data: np.ndarray) -> None:
    return None


def _bcast_runner(comm, hosts, topology, algorithm: str, root: int, nbytes: int, chunk_size, what: str):
    """How this broadcast moves its bytes: MPI's own collective, a topocast plan, or nothing."""
    from mpi4py import MPI

    if nbytes == 0 or len(hosts) == 1:
        return _nothing
    if _mpi_suffices(comm, "broadcast", topology, hosts, root, nbytes, nbytes, algorithm):
        dup = private_dup(comm)
        return lambda data: MPI.Comm.Bcast(dup, [data, MPI.BYTE], root=root)
    plan = _bcast_plan(comm, hosts, topology, algorithm, root, nbytes, what)
    return lambda data: _run(comm, plan, data, hosts, chunk_size)


def _allreduce_runner(comm, hosts, topology, algorithm: str, msg: Message, op, chunk_size, what):
    """How this allreduce combines ``data`` (this rank's vector, replaced by the result)."""
    from mpi4py import MPI

    count, datatype, itemsize = msg.count, msg.datatype, msg.datatype.size
    if count == 0 or len(hosts) == 1:
        return _nothing
    if _mpi_suffices(comm, "allreduce", topology, hosts, 0, msg.nbytes, count, algorithm):
        dup = private_dup(comm)
        return lambda data: MPI.Comm.Allreduce(dup, MPI.IN_PLACE, [data, count, datatype], op=op)
    plan = _allreduce_plan_cached(comm, hosts, topology, algorithm, count, itemsize, what)
    combine = reduction(op, datatype)
    return lambda data: _run(comm, plan, data, hosts, chunk_size, combine)


def _left_to_mpi(comm) -> bool:
    """Calls topocast does not plan at all, decided alike on every rank without talking:
    an intercommunicator (its ``root`` means something else) or ``MPI.COMM_NULL``."""
    from mpi4py import MPI

    return comm == MPI.COMM_NULL or comm.Is_inter()


def _delegated(descs: list[_Desc]) -> str:
    """Why the call goes to MPI's own collective ("" if it does not): on every rank alike."""
    return next((f"rank {r}: {d.delegate}" for r, d in enumerate(descs) if d.delegate), "")


def bcast(
    comm: MPI.Comm,
    buf: _Buf,
    root: int = 0,
    *,
    topology: Topology | None = None,
    algorithm: str = "auto",
    mapping: HostMapping | None = None,
    chunk_size: int | None = None,
    check: bool = True,
) -> _Buf:
    """Broadcast ``buf`` from ``root`` to every rank of ``comm``, as ``comm.Bcast(buf, root)``
    does, along a topocast plan for ``topology`` (default planner: ``auto``, which calls
    MPI's ``Bcast`` itself where no plan can win; without a topology: ``DEFAULT_BCAST`` on a
    uniform star). ``buf``: what ``comm.Bcast`` takes; a form topocast cannot move exactly
    (a derived datatype, device memory: :mod:`.buffers`) goes to MPI's own ``Bcast`` on
    every rank, as does a call on an intercommunicator. Returns ``buf``.

    Raises :class:`MPIRunError` on every rank when a rank's ``buf`` is not a message mpi4py
    takes (or reaches past its buffer), the ranks' buffers differ in size or type, ``root``
    is out of range or differs between ranks, or the topology does not match the job (the
    bytes of ``buf`` are then undefined on the receiving ranks). ``check=False`` skips that
    check for a call made before with the same arguments: the program promises that the
    ranks agree, as with ``comm.Bcast`` (a mismatch may then hang)."""
    from mpi4py import MPI

    if _left_to_mpi(comm):
        MPI.Comm.Bcast(comm, buf, root)
        return buf
    what = "topocast.mpi.bcast"
    size, rank = comm.Get_size(), comm.Get_rank()
    msg = None
    try:
        if not isinstance(root, (int, np.integer)) or not 0 <= root < size:
            raise ValueError(f"root {root!r} is not a rank of this communicator (0..{size - 1})")
        parsed = as_message(buf, writable=rank != root, what="buf")
        host = _my_host(comm, topology, mapping)
        extra = (algorithm, chunk_size)
        if isinstance(parsed, Delegated):
            desc = _Desc(None, root=int(root), extra=extra, host=host, topology=_topology_key(topology))
            desc = replace(desc, delegate=parsed.reason)
        else:
            msg = parsed
            desc = _Desc(None, msg.nbytes, msg.type_name, msg.count, int(root), extra, host, _topology_key(topology))
    except ValueError as exc:
        desc, msg = _Desc(str(exc)), None
    data = None if msg is None else msg.data
    if (not check and _run_trusted(comm, "bcast", desc, data)) or _speculate(comm, desc, data):
        return buf
    try:
        descs = _agree(comm, desc, what)
        _same(descs, "root", what, "root")
        _same(descs, "extra", what, "algorithm and chunk_size")
        hosts = _hosts(comm, descs, topology, mapping, what)
        delegate = _delegated(descs)
        if not delegate:
            _same(descs, "nbytes", what, "the buffer size in bytes")
            _same(descs, "dtype", what, "the element type")
            assert msg is not None  # a rank with a problem raised in _agree
            run = _bcast_runner(comm, hosts, topology, algorithm, int(root), msg.nbytes, chunk_size, what)
    except MPIRunError:
        _forget(comm)
        raise
    if delegate:
        _forget(comm)
        MPI.Comm.Bcast(comm, buf, int(root))
        return buf
    assert msg is not None  # not delegated: every rank read its buffer
    run(msg.data)
    _agreed(comm, ("bcast", replace(desc, host=""), tuple(hosts)), desc, msg.nbytes, run)
    return buf


def _allreduce_args(sendbuf, recvbuf, op) -> tuple[Message | None, Message | None, str]:
    """(send message, receive message, why MPI's own call is used instead or "") of an
    allreduce as mpi4py reads them: the same datatype and count on both sides."""
    from mpi4py import MPI

    out = as_message(recvbuf, writable=True, what="recvbuf")
    src = out if sendbuf is MPI.IN_PLACE else as_message(sendbuf, writable=False, what="sendbuf")
    for m in (out, src):
        if isinstance(m, Delegated):
            return None, None, m.reason
    assert isinstance(out, Message) and isinstance(src, Message)
    if src.datatype != out.datatype:
        raise ValueError(f"sendbuf holds {src.type_name} but recvbuf {out.type_name} (mismatch in MPI datatypes)")
    if src.count != out.count:
        raise ValueError(f"sendbuf holds {src.describe()} but recvbuf {out.describe()} (mismatch in counts)")
    by_op = check_op(op, out.datatype)
    if by_op is not None:
        return None, None, by_op.reason
    return src, out, ""


def allreduce(
    comm: MPI.Comm,
    sendbuf: BufSpec | InPlace,
    recvbuf: _Buf,
    op: MPI.Op | None = None,
    *,
    topology: Topology | None = None,
    algorithm: str = "auto",
    mapping: HostMapping | None = None,
    chunk_size: int | None = None,
    check: bool = True,
) -> _Buf:
    """``comm.Allreduce(sendbuf, recvbuf, op)`` along a topocast allreduce plan (default
    ``auto``, which calls MPI's ``Allreduce`` itself where no plan can win; without a
    topology ``DEFAULT_ALLREDUCE`` on a uniform star). ``op`` (default ``MPI.SUM``): a
    predefined MPI op, valid on the datatype exactly when MPI's ``Reduce_local`` accepts the
    pair, whatever the planner; a user-defined op, a buffer form topocast cannot move exactly
    or an intercommunicator go to MPI's own ``Allreduce`` on every rank. ``sendbuf`` may be
    ``MPI.IN_PLACE``.

    Reduction order: each element is combined (by MPI's ``Reduce_local``) in the order the
    plan's reduce transfers deliver it (for ``ring``: along the ring), then copied unchanged
    to every rank, so every rank ends with bitwise the same result; integers equal
    ``comm.Allreduce``, floating-point sums may differ from MPI's order by rounding
    (docs/experiments/mpi.md). ``check=False``: as for :func:`bcast`."""
    from mpi4py import MPI

    op = MPI.SUM if op is None else op
    if _left_to_mpi(comm):
        MPI.Comm.Allreduce(comm, sendbuf, recvbuf, op)
        return recvbuf
    what = "topocast.mpi.allreduce"
    out = src = None
    try:
        src, out, delegate = _allreduce_args(sendbuf, recvbuf, op)
        host = _my_host(comm, topology, mapping)
        extra = (_op_key(op), algorithm, chunk_size)
        if out is None:
            desc = _Desc(None, extra=extra, host=host, topology=_topology_key(topology), delegate=delegate)
        else:
            desc = _Desc(None, out.nbytes, out.type_name, out.count, 0, extra, host, _topology_key(topology))
    except ValueError as exc:
        desc, out, src = _Desc(str(exc)), None, None
    # the run combines in place, in recvbuf, which starts as this rank's vector
    data = None if out is None else out.data
    if data is not None and src is not None and src is not out:
        data[:] = src.data
    if not check and _run_trusted(comm, "allreduce", desc, data):
        return recvbuf
    keep = data.copy() if data is not None and src is out and _predicted(comm) is not None else None
    if _speculate(comm, desc, data):
        return recvbuf
    if data is not None and src is not None and (keep is not None or src is not out):
        data[:] = src.data if keep is None else keep  # the prediction was wrong: start again
    try:
        descs = _agree(comm, desc, what)
        _same(descs, "extra", what, "op, algorithm and chunk_size")
        hosts = _hosts(comm, descs, topology, mapping, what)
        delegate = _delegated(descs)
        if not delegate:
            _same(descs, "nbytes", what, "the buffer size in bytes")
            _same(descs, "dtype", what, "the element type")
            assert out is not None and data is not None  # a rank with a problem raised in _agree
            run = _allreduce_runner(comm, hosts, topology, algorithm, out, op, chunk_size, what)
    except MPIRunError:
        _forget(comm)
        raise
    if delegate:
        _forget(comm)
        MPI.Comm.Allreduce(comm, sendbuf, recvbuf, op)
        return recvbuf
    assert out is not None  # not delegated: every rank read its buffers
    run(data)
    _agreed(comm, ("allreduce", replace(desc, host=""), tuple(hosts)), desc, out.nbytes, run)
    return recvbuf


def _op_key(op) -> str:
    """An op as the ranks compare it: predefined ops by handle (the same on every rank)."""
    return f"predefined {op.py2f()}" if op.is_predefined else "user-defined"


def perform(
    comm: MPI.Comm,
    plan: Plan,
    buf: BufSpec,
    *,
    mapping: HostMapping | None = None,
    topology: Topology | None = None,
    chunk_size: int | None = None,
    op: MPI.Op | None = None,
    dtype: DTypeLike | None = None,
) -> RankStats:
    """Perform ``plan`` on ``comm``: each rank plays its host (``mapping``: a host per rank or
    host -> rank; default ``MPI.Get_processor_name()``) with ``buf`` (``plan.size`` bytes;
    ranks that initially hold bytes hold them in ``buf``, receivers get theirs there).
    Allreduce plans combine with ``op`` (default ``MPI.SUM``, by MPI's ``Reduce_local``) on
    elements of ``dtype`` (numpy; default: ``buf``'s MPI datatype). Returns what this rank
    measured. Same error on every rank for a plan of another size, a host no rank plays, a
    buffer topocast cannot move exactly, or ranks that disagree."""
    what = "topocast.mpi.perform"
    try:
        msg = as_message(buf, writable=True, what="buf")
        if isinstance(msg, Delegated):
            raise ValueError(f"buf: {msg.reason} (a plan moves contiguous bytes only)")
        if msg.nbytes != plan.size:
            raise ValueError(f"the plan moves {plan.size} bytes but buf holds {msg.nbytes}")
        combine = None
        if any(t.reduce for t in plan.transfers):
            from mpi4py import MPI
            from mpi4py.util.dtlib import from_numpy_dtype

            datatype = msg.datatype if dtype is None else from_numpy_dtype(np.dtype(dtype))
            op = MPI.SUM if op is None else op
            check_op(op, datatype)
            combine = reduction(op, datatype)
        host = _my_host(comm, topology, mapping)
        desc = _Desc(
            None,
            msg.nbytes,
            msg.type_name,
            extra=(len(plan.transfers), plan.planner),
            host=host,
            topology=_topology_key(topology),
        )
    except ValueError as exc:
        desc = _Desc(str(exc))
    descs = _agree(comm, desc, what)
    _same(descs, "extra", what, "the plan (transfers, planner)")
    hosts = _hosts(comm, descs, topology, mapping, what)
    missing = [h for h in plan.hosts if h not in hosts]
    if missing:
        raise MPIRunError(
            f"{what}: the plan involves hosts no rank plays: {', '.join(missing[:8])}"
            f"{', ...' if len(missing) > 8 else ''} (ranks are {', '.join(hosts[:8])}{', ...' if len(hosts) > 8 else ''})"
        )
    if topology is None:  # every rule of the Plan contract but the routes (no network known)
        _check(replace(plan, transfers=tuple(replace(t, path=None) for t in plan.transfers)), _star(hosts), what)
    else:
        _check(plan, topology, what)
        plan = without_loose_caps(plan, topology)
    assert isinstance(msg, Message)  # a rank whose buffer could not be read raised in _agree
    return _run(comm, plan, msg.data, hosts, chunk_size, combine)


def _check(plan: Plan, topology, what: str) -> None:
    """A plan that breaks the Plan contract would wait forever for bytes nobody sends: refuse
    it (every rank checks the same plan, so every rank raises the same error)."""
    from ..plan.check import check_plan

    try:
        check_plan(plan, topology)
    except TopocastError as exc:
        raise MPIRunError(f"{what}: {exc}") from None


def _run(comm, plan: Plan, data: np.ndarray, hosts: list[str], chunk_size, combine=None) -> RankStats:
    rank_of = {h: r for r, h in enumerate(hosts)}
    chunk = chunk_for(plan, chunk_size or DEFAULT_CHUNK)
    dup = private_dup(comm)
    return perform_local(dup, plan, data, rank_of, chunk=chunk, reduce=combine, crowded=state_of(comm).crowded)
