"""Drop-in ``bcast`` and ``allreduce`` for mpi4py programs, and ``perform`` of any plan.

Every call first agrees on its arguments with one small collective (an ``Allreduce`` of a
digest of each rank's descriptor of its buffer, root and topology; an ``allgather`` of the
descriptors the first time and whenever they differ): every rank then runs the same checks on
the same table, so a mismatch raises the same :class:`MPIRunError` on every rank before any
data moves, and the communicator stays usable.

Hosts and ranks: each rank is one host of the topology, named by ``mapping`` (a host per
rank, or host -> rank) or else by ``MPI.Get_processor_name()``. Without a topology the
ranks are the hosts ``rank0``, ``rank1``, ... of a uniform star.

Plans are made on the lowest rank only and sent to the others (the planners are
deterministic, but one planning costs less CPU than ``size`` of them), and cached per
(communicator, topology, collective, root, size): a loop that broadcasts the same buffer
plans once. ``algorithm="auto"`` picks a planner by simulation once per power-of-two size
class.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace

import numpy as np

from ..errors import TopocastError
from ..plan import Broadcast, Plan
from ..runtime import DEFAULT_CHUNK
from .buffers import as_message, op_name, reduction
from .engine import MPIRunError, RankStats, chunk_for, perform_local

__all__ = ["bcast", "allreduce", "perform", "plan_of", "job_hosts", "DEFAULT_BCAST", "DEFAULT_ALLREDUCE"]

# Without a topology topocast knows nothing about the network, so it does what MPICH does on
# a uniform one (planner ``mpich``: binomial tree for short messages, scatter + ring
# allgather for long ones) and, for allreduce, the bandwidth-optimal ring.
DEFAULT_BCAST = "mpich"
DEFAULT_ALLREDUCE = "ring"
STAR_BANDWIDTH = 1.25e9  # bytes/s of every link of the star used without a topology

_dups: dict = {}
_plans: dict = {}
_choices: dict = {}
_known_hosts: dict = {}  # (communicator, topology) -> host of every rank, once checked


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

    key = (comm.py2f(), desc.topology)
    known = _known_hosts.get(key)
    slow = desc.problem is not None or known is None or known[comm.Get_rank()] != desc.host
    digest = int.from_bytes(hashlib.blake2b(repr(replace(desc, host="")).encode(), digest_size=7).digest(), "big")
    votes = np.array([int(slow), digest, -digest], dtype=np.int64)
    comm.Allreduce(MPI.IN_PLACE, votes, op=MPI.MAX)
    if not votes[0] and votes[1] == -votes[2] and known is not None:
        return [replace(desc, host=h) for h in known]
    descs = comm.allgather(desc)
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


def job_hosts(comm, topology=None, mapping=None, what: str = "topocast.mpi") -> list[str]:
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
            raise MPIRunError(
                f"{what}: rank {r} is {h!r}, which is not a host of topology {topology.name!r} "
                f"(hosts: {', '.join(topology.hosts[:8])}{', ...' if len(topology.hosts) > 8 else ''}); "
                "pass mapping=[host of rank 0, ...]"
            )
    _known_hosts[(comm.py2f(), descs[0].topology)] = hosts
    return hosts


def _topology_key(topology) -> tuple:
    return () if topology is None else (topology.name, tuple(topology.hosts))


def _star(hosts):
    from ..topology.model import PhysicalLink, Topology

    hub = "hub"
    while hub in hosts:
        hub += "_"
    return Topology("mpi job", list(hosts), [hub], [PhysicalLink(h, hub, STAR_BANDWIDTH) for h in hosts])


def _dup(comm):
    """A private duplicate of ``comm`` (collective, once per communicator): our messages
    never match the program's own."""
    key = comm.py2f()
    if key not in _dups:
        _dups[key] = comm.Dup()
    return _dups[key]


def _plan_on_root(comm, make, what: str) -> Plan:
    """``make()`` on rank 0, the plan (or its error) sent to every rank."""
    payload = None
    if comm.Get_rank() == 0:
        try:
            payload = ("plan", make().to_json())
        except TopocastError as exc:
            payload = ("error", str(exc))
    kind, body = comm.bcast(payload, root=0)
    if kind == "error":
        raise MPIRunError(f"{what}: planning failed: {body}")
    return Plan.from_json(body)


def _size_class(nbytes: int) -> int:
    return max(int(nbytes), 1).bit_length()


def _planner_name(collective: str, algorithm: str, topology, make_request, nbytes: int) -> str:
    """``algorithm``, or for ``auto`` the planner the simulator prefers at this size class."""
    if algorithm != "auto":
        return algorithm
    key = (collective, _topology_key(topology), _size_class(nbytes))
    if key not in _choices:
        from ..planners import get_planner

        plan = get_planner(collective, "auto")(topology, make_request(nbytes))
        _choices[key] = str(plan.notes.get("choice") or "auto")
    return _choices[key]


def _broadcast_plan(topology, hosts, root: int, nbytes: int, algorithm: str) -> Plan:
    from ..check import check_plan
    from ..planners import get_planner

    if topology is None:
        topology = _star(hosts)
        algorithm = DEFAULT_BCAST if algorithm == "auto" else algorithm
    others = tuple(h for h in hosts if h != hosts[root])

    def request(n):
        return Broadcast(hosts[root], n, others)

    name = _planner_name("broadcast", algorithm, topology, request, nbytes)
    plan = get_planner("broadcast", name)(topology, request(nbytes))
    check_plan(plan, topology)
    return plan


def _allreduce_plan(topology, hosts, count: int, itemsize: int, algorithm: str) -> Plan:
    """An allreduce plan over ``count`` elements of ``itemsize`` bytes: planned in elements,
    then scaled to bytes, so that every range falls on whole elements."""
    from ..check_allreduce import check_allreduce
    from ..planners import get_planner
    from ..planners.allreduce._common import Allreduce

    if topology is None:
        topology = _star(hosts)
        algorithm = DEFAULT_ALLREDUCE if algorithm == "auto" else algorithm

    def request(n):
        return Allreduce(n, tuple(hosts))

    name = _planner_name("allreduce", algorithm, topology, request, count * itemsize)
    plan = get_planner("allreduce", name)(topology, request(count))
    check_allreduce(plan, topology)
    return _scale(plan, itemsize)


def _scale(plan: Plan, k: int) -> Plan:
    """``plan`` with every offset, length and rate multiplied by ``k`` (elements -> bytes)."""
    if k == 1:
        return plan

    def rs(ranges):
        return tuple((o * k, n * k) for o, n in ranges)

    transfers = tuple(
        replace(t, ranges=rs(t.ranges), rate_cap=None if t.rate_cap is None else t.rate_cap * k) for t in plan.transfers
    )
    return replace(
        plan,
        size=plan.size * k,
        transfers=transfers,
        initial={h: rs(r) for h, r in plan.initial.items()},
        wanted={h: rs(r) for h, r in plan.wanted.items()},
        chunk_size=plan.chunk_size * k,
    )


def _cached_plan(comm, key: tuple, make, what: str) -> Plan:
    full = (comm.py2f(), *key)
    if full not in _plans:
        _plans[full] = _plan_on_root(comm, make, what)
    return _plans[full]


def _bcast_plan(comm, hosts, topology, algorithm: str, root: int, nbytes: int, what: str) -> Plan:
    key = ("broadcast", _topology_key(topology), tuple(hosts), algorithm, root, nbytes)
    return _cached_plan(comm, key, lambda: _broadcast_plan(topology, hosts, root, nbytes, algorithm), what)


def _allreduce_plan_cached(comm, hosts, topology, algorithm: str, count: int, itemsize: int, what: str) -> Plan:
    key = ("allreduce", _topology_key(topology), tuple(hosts), algorithm, count, itemsize)
    return _cached_plan(comm, key, lambda: _allreduce_plan(topology, hosts, count, itemsize, algorithm), what)


def plan_of(comm, collective: str, nbytes: int, *, root=0, itemsize=1, topology=None, algorithm="auto", mapping=None):
    """The plan ``bcast`` (``collective="broadcast"``) or ``allreduce`` (``"allreduce"``, of
    ``nbytes // itemsize`` elements) will follow for a message of ``nbytes`` bytes, made now
    and cached (collective: every rank calls it). Lets a program see the plan, or make it
    before a timed loop."""
    what = f"topocast.mpi.plan_of({collective!r})"
    hosts = job_hosts(comm, topology, mapping, what)
    if collective == "broadcast":
        return _bcast_plan(comm, hosts, topology, algorithm, int(root), int(nbytes), what)
    if collective == "allreduce":
        return _allreduce_plan_cached(comm, hosts, topology, algorithm, int(nbytes) // itemsize, itemsize, what)
    raise MPIRunError(f"{what}: collective must be 'broadcast' or 'allreduce'")


def bcast(comm, buf, root: int = 0, *, topology=None, algorithm: str = "auto", mapping=None, chunk_size=None):
    """Broadcast ``buf`` from ``root`` to every rank of ``comm``, as ``comm.Bcast(buf, root)``
    does, along a topocast plan for ``topology`` (default planner: ``auto``; without a
    topology: ``DEFAULT_BCAST`` on a uniform star). ``buf``: what ``comm.Bcast`` takes (numpy
    array, bytes-like, ``[buf, datatype]``). Returns ``buf``.

    Raises :class:`MPIRunError` on every rank when the ranks' buffers differ in size or
    type, ``root`` is out of range or differs between ranks, or the topology does not match
    the job."""
    what = "topocast.mpi.bcast"
    size, rank = comm.Get_size(), comm.Get_rank()
    try:
        if not isinstance(root, (int, np.integer)) or not 0 <= root < size:
            raise ValueError(f"root {root!r} is not a rank of this communicator (0..{size - 1})")
        msg = as_message(buf, writable=rank != root, what="buf")
        host = _my_host(comm, topology, mapping)
        desc = _Desc(None, msg.nbytes, msg.dtype.str, msg.count, int(root), (algorithm,), host, _topology_key(topology))
    except ValueError as exc:
        desc = _Desc(str(exc))
    descs = _agree(comm, desc, what)
    _same(descs, "root", what, "root")
    _same(descs, "nbytes", what, "the buffer size in bytes")
    _same(descs, "dtype", what, "the element type")
    _same(descs, "extra", what, "algorithm")
    hosts = _hosts(comm, descs, topology, mapping, what)
    if msg.nbytes == 0 or size == 1:
        return buf
    plan = _bcast_plan(comm, hosts, topology, algorithm, int(root), msg.nbytes, what)
    _run(comm, plan, msg.data, hosts, chunk_size)
    return buf


def allreduce(
    comm, sendbuf, recvbuf, op=None, *, topology=None, algorithm: str = "auto", mapping=None, chunk_size=None
):
    """``comm.Allreduce(sendbuf, recvbuf, op)`` along a topocast allreduce plan (default
    ``auto``; without a topology ``DEFAULT_ALLREDUCE`` on a uniform star). ``op``: a built-in
    MPI operation (default ``MPI.SUM``) on a numeric type; ``sendbuf`` may be ``MPI.IN_PLACE``.

    Reduction order: each element is combined in the order the plan's reduce transfers
    deliver it (for ``ring``: along the ring), then copied unchanged to every rank, so every
    rank ends with bitwise the same result; integers equal ``comm.Allreduce``, floating-point
    sums may differ from MPI's order by rounding (docs/experiments/mpi.md)."""
    from mpi4py import MPI

    what = "topocast.mpi.allreduce"
    size = comm.Get_size()
    try:
        name = op_name(MPI.SUM if op is None else op)
        out = as_message(recvbuf, writable=True, what="recvbuf")
        src = out if sendbuf is MPI.IN_PLACE else as_message(sendbuf, writable=False, what="sendbuf")
        if (src.nbytes, src.dtype) != (out.nbytes, out.dtype):
            raise ValueError(f"sendbuf holds {src.describe()} but recvbuf {out.describe()}")
        combine = reduction(name, out.dtype)
        host = _my_host(comm, topology, mapping)
        desc = _Desc(None, out.nbytes, out.dtype.str, out.count, 0, (name, algorithm), host, _topology_key(topology))
    except ValueError as exc:
        desc = _Desc(str(exc))
    descs = _agree(comm, desc, what)
    _same(descs, "nbytes", what, "the buffer size in bytes")
    _same(descs, "dtype", what, "the element type")
    _same(descs, "extra", what, "op and algorithm")
    hosts = _hosts(comm, descs, topology, mapping, what)
    if src is not out:
        out.data[:] = src.data
    if out.nbytes == 0 or size == 1:
        return recvbuf
    plan = _allreduce_plan_cached(comm, hosts, topology, algorithm, out.count, out.dtype.itemsize, what)
    _run(comm, plan, out.data, hosts, chunk_size, combine)
    return recvbuf


def perform(comm, plan: Plan, buf, *, mapping=None, topology=None, chunk_size=None, op=None, dtype=None) -> RankStats:
    """Perform ``plan`` on ``comm``: each rank plays its host (``mapping``: a host per rank or
    host -> rank; default ``MPI.Get_processor_name()``) with ``buf`` (``plan.size`` bytes;
    ranks that initially hold bytes hold them in ``buf``, receivers get theirs there).
    Allreduce plans need ``op`` and ``dtype`` (numpy) for their reduce transfers. Returns what
    this rank measured. Same error on every rank for a plan of another size, a host no
    rank plays, or ranks that disagree."""
    what = "topocast.mpi.perform"
    try:
        msg = as_message(buf, writable=True, what="buf")
        if msg.nbytes != plan.size:
            raise ValueError(f"the plan moves {plan.size} bytes but buf holds {msg.nbytes}")
        combine = None
        if any(t.reduce for t in plan.transfers):
            from mpi4py import MPI

            combine = reduction(op_name(MPI.SUM if op is None else op), np.dtype(dtype or msg.dtype))
        host = _my_host(comm, topology, mapping)
        desc = _Desc(
            None,
            msg.nbytes,
            msg.dtype.str,
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
    return _run(comm, plan, msg.data, hosts, chunk_size, combine)


def _check(plan: Plan, topology, what: str) -> None:
    """A plan that breaks the Plan contract would wait forever for bytes nobody sends: refuse
    it (every rank checks the same plan, so every rank raises the same error)."""
    from ..check import check_plan

    try:
        check_plan(plan, topology)
    except TopocastError as exc:
        raise MPIRunError(f"{what}: {exc}") from None


def _run(comm, plan: Plan, data: np.ndarray, hosts: list[str], chunk_size, combine=None) -> RankStats:
    rank_of = {h: r for r, h in enumerate(hosts)}
    chunk = chunk_for(plan, chunk_size or DEFAULT_CHUNK)
    return perform_local(_dup(comm), plan, data, rank_of, chunk=chunk, reduce=combine)
