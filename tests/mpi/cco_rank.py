"""One rank of the topocast.mpi collective tests (run by test_collectives.py under mpiexec).

In the style of mpi4py's test/test_cco_buf.py: every root, several counts and types, the
result compared bitwise with MPI's own collective. ``python cco_rank.py MODE [ARGS]``; any
failed check raises (the rank exits non-zero and mpiexec with it); rank 0 prints one line
``OK MODE checks=N`` at the end.
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np
from mpi4py import MPI

import topocast.mpi as tm
from topocast.mpi.collectives import _plan_on_root
from topocast.plan import Plan, Transfer
from topocast.topology import load_topology

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
DTYPES = (np.int8, np.int32, np.float32, np.float64, np.complex128)
COUNTS = (0, 1, 7, 1001, 40_003)  # 40_003 x 4..16 bytes: not a multiple of any chunk
checks = 0


def data(count: int, dtype, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.integers(-100, 100, count * 2)
    if np.dtype(dtype).kind == "c":
        return (x[:count] + 1j * x[count:]).astype(dtype)
    if np.dtype(dtype).kind == "f":
        return (x[:count] * rng.random(count)).astype(dtype)
    return x[:count].astype(dtype)


def check(cond: bool, what: str) -> None:
    global checks
    checks += 1
    if not cond:
        raise AssertionError(f"rank {rank}: {what}")


def bcast_all(counts=COUNTS, dtypes=DTYPES, **kw) -> None:
    for dtype in dtypes:
        for count in counts:
            for root in range(size):
                ref = data(count, dtype, root + count) if rank == root else np.zeros(count, dtype)
                got = ref.copy() if rank == root else np.full(count, 3, dtype)
                comm.Bcast(ref, root=root)
                tm.bcast(comm, got, root=root, **kw)
                check(got.tobytes() == ref.tobytes(), f"bcast {count} x {np.dtype(dtype).name} from {root}")


def allreduce_all(counts=COUNTS, dtypes=DTYPES, **kw) -> None:
    for dtype in dtypes:
        for count in counts:
            send = data(count, dtype, 1000 + rank + count)
            ref, got = np.zeros(count, dtype), np.full(count, 5, dtype)
            comm.Allreduce(send, ref, op=MPI.SUM)
            tm.allreduce(comm, send, got, **kw)
            name = f"allreduce {count} x {np.dtype(dtype).name}"
            if np.dtype(dtype).kind in "iu":
                check(got.tobytes() == ref.tobytes(), name + " equals MPI bitwise")
            else:
                # another summation order: within size x eps of the sum of magnitudes
                scale = np.zeros(count)
                comm.Allreduce(np.abs(send).astype(np.float64), scale)
                bound = size * np.finfo(dtype).eps * scale
                check(bool((np.abs(got - ref) <= bound).all()), name + " within rounding of MPI")
            # every rank ends with bitwise the same result
            everyone = comm.allgather(got.tobytes())
            check(all(b == everyone[0] for b in everyone), name + " identical on every rank")


def mode_basic() -> None:
    # explicit planners: topocast's engine (auto calls MPI's own collectives at these sizes)
    bcast_all(algorithm=tm.DEFAULT_BCAST)
    allreduce_all(algorithm=tm.DEFAULT_ALLREDUCE)
    check(tm.plan_of(comm, "broadcast", 100) is None or size == 1, "auto uses MPI's Bcast for 100 bytes")
    bcast_all(counts=(0, 7, 40_003), dtypes=(np.int8, np.complex128))
    allreduce_all(counts=(0, 7, 40_003), dtypes=(np.int32, np.float64))
    repeated()
    # the buffer forms mpi4py takes
    for root in range(size):
        raw = bytearray(b"topocast" * 5) if rank == root else bytearray(40)
        tm.bcast(comm, raw, root=root)
        check(bytes(raw) == b"topocast" * 5, "bcast of a bytearray")
        x = np.arange(10.0) if rank == root else np.zeros(10)
        tm.bcast(comm, [x, MPI.DOUBLE], root=root)
        check((x == np.arange(10.0)).all(), "bcast of [buf, MPI.DOUBLE]")
        y = np.arange(12, dtype=np.int32) if rank == root else np.zeros(12, np.int32)
        tm.bcast(comm, [y, 6, MPI.INT], root=root)
        check((y[:6] == np.arange(6)).all() and (rank == root or (y[6:] == 0).all()), "bcast of [buf, count, MPI.INT]")
    # built-in ops other than SUM, and IN_PLACE
    ops = (MPI.PROD, MPI.MIN, MPI.MAX, MPI.LAND, MPI.LOR, MPI.LXOR, MPI.BAND, MPI.BOR, MPI.BXOR)
    for op in ops:
        send = (np.arange(1001, dtype=np.int32) * (rank + 3)) % 7 + (1 if op == MPI.PROD else 0)
        ref, got = np.zeros_like(send), np.zeros_like(send)
        comm.Allreduce(send, ref, op=op)
        tm.allreduce(comm, send, got, op=op)
        check(got.tobytes() == ref.tobytes(), f"allreduce op {op}")
    inplace = np.arange(333, dtype=np.int64) + rank
    ref = np.zeros_like(inplace)
    comm.Allreduce(inplace, ref)
    tm.allreduce(comm, MPI.IN_PLACE, inplace)
    check(inplace.tobytes() == ref.tobytes(), "allreduce IN_PLACE")


def repeated() -> None:
    """Calls that repeat are predicted and performed beside a non-blocking vote: still right,
    also with IN_PLACE, with alternating calls and after a change of size by every rank."""
    for algorithm in ("auto", tm.DEFAULT_BCAST):
        for rep in range(3):
            for count in (5, 3001):
                bcast_all(counts=(count,), dtypes=(np.int32,), algorithm=algorithm)
    for algorithm in ("auto", tm.DEFAULT_ALLREDUCE):
        for rep in range(3):
            inplace = np.arange(333, dtype=np.int64) * (rank + 1) + rep
            ref = np.zeros_like(inplace)
            comm.Allreduce(inplace, ref)
            tm.allreduce(comm, MPI.IN_PLACE, inplace, algorithm=algorithm)
            check(inplace.tobytes() == ref.tobytes(), f"repeated allreduce IN_PLACE ({algorithm})")
        allreduce_all(counts=(40,), dtypes=(np.int32,), algorithm=algorithm)  # every rank changes size
    predicted_only_after_two_repeats()
    # check=False: a call agreed on before runs without the vote
    for algorithm in ("auto", tm.DEFAULT_BCAST):
        for rep in range(3):
            for count in (5, 3001):
                x = data(count, np.int32, count) if rank == 0 else np.zeros(count, np.int32)
                ref = x.copy()
                comm.Bcast(ref, root=0)
                tm.bcast(comm, x, root=0, algorithm=algorithm, check=False)
                check(x.tobytes() == ref.tobytes(), f"bcast check=False ({algorithm})")
    for algorithm in ("auto", tm.DEFAULT_ALLREDUCE):
        for rep in range(3):
            send = data(777, np.int64, rank + rep)
            ref, got = np.zeros_like(send), np.zeros_like(send)
            comm.Allreduce(send, ref)
            tm.allreduce(comm, send, got, algorithm=algorithm, check=False)
            check(got.tobytes() == ref.tobytes(), f"allreduce check=False ({algorithm})")


def predicted_only_after_two_repeats() -> None:
    """A call is predicted (performed beside the vote) only when it followed the previous
    call the last two times: in a, b, a, b, a the second b is not predicted, the third is;
    once c follows a instead, b is not predicted after a again until it follows twice."""
    from topocast.mpi.collectives import _predicted

    def call(count: int) -> None:
        x = np.arange(count, dtype=np.int32) if rank == 0 else np.zeros(count, np.int32)
        tm.bcast(comm, x, root=0)
        check(x.tobytes() == np.arange(count, dtype=np.int32).tobytes(), f"bcast of {count}")

    a, b, c = 101, 202, 303

    def predicted() -> int | None:
        p = _predicted(comm)
        return None if p is None else p.desc.count

    for count, expected in ((a, None), (b, None), (a, None), (b, None), (a, b), (c, None), (a, None)):
        call(count)
        check(predicted() == expected, f"after a call of {count}: predicted {predicted()}, expected {expected}")


def mode_large(mib: str) -> None:
    count = int(float(mib) * 2**20)
    bcast_all(counts=(count + 3,), dtypes=(np.int8,))
    allreduce_all(counts=(count // 4 + 1,), dtypes=(np.int32,))


def mode_topology(spec: str, collective: str = "both") -> None:
    """The planned (``auto``) collectives of a topology whose first ``size`` hosts the ranks play."""
    topo = load_topology(spec)
    mapping = list(topo.hosts[:size])
    if collective in ("both", "bcast"):
        bcast_all(counts=(70_001,), dtypes=(np.int8, np.float64), topology=topo, mapping=mapping)
        bcast_all(counts=(70_001,), dtypes=(np.int8,), topology=topo, mapping=mapping, algorithm="stable")
    if collective in ("both", "allreduce"):
        # 16384 int32 (64 KiB) on two-clusters: gridmpi, whose exchanges once raced (a rank
        # overwrote bytes a transfer had still to read)
        allreduce_all(counts=(1, 16_384, 70_001), dtypes=(np.int32, np.float64), topology=topo, mapping=mapping)
        # the bandwidth-proportional planner in 3 segments (slow hosts own nothing)
        allreduce_all(counts=(600_001,), dtypes=(np.int32,), topology=topo, mapping=mapping, algorithm="proportional")


def expect_error(fn, words: tuple[str, ...], what: str) -> None:
    """``fn`` raises MPIRunError on every rank, with the same message naming ``words``; the
    communicator still works afterwards."""
    try:
        fn()
    except tm.MPIRunError as exc:
        msg = str(exc)
    else:
        msg = None
    msgs = comm.allgather(msg)
    check(msgs[0] is not None and all(m == msgs[0] for m in msgs), f"{what}: same error everywhere, got {msgs}")
    check(all(w in msgs[0] for w in words), f"{what}: {msgs[0]!r} names {words}")
    x = np.arange(5) if rank == 0 else np.zeros(5, np.int64)
    comm.Bcast(x, root=0)
    check((x == np.arange(5)).all(), f"{what}: the communicator is still usable")
    y = np.arange(5) if rank == 0 else np.zeros(5, np.int64)
    tm.bcast(comm, y, root=0)
    check((y == np.arange(5)).all(), f"{what}: topocast.mpi still works")


def _planner_bug():
    return 1 / 0


def mode_errors(waits: str = "") -> None:
    """``waits="crowded"``: topocast's waits poll and sleep (as with more ranks than cores)
    whatever the machine, on every rank alike; the errors must not depend on it."""
    if waits:
        from topocast.mpi.state import private_dup, state_of

        private_dup(comm)
        state_of(comm).crowded = waits == "crowded"
    # after a call repeated (and so predicted), a rank that changes its arguments still gets
    # the same error as every other rank
    for rep in range(3):
        z = np.arange(6) if rank == 0 else np.zeros(6, np.int64)
        tm.bcast(comm, z, root=0)
        check((z == np.arange(6)).all(), "repeated bcast")
    expect_error(lambda: tm.bcast(comm, np.zeros(6 + (rank == size - 1), np.int64)), ("disagree", "size"), "sizes")
    for rep in range(3):
        got = np.zeros(4, np.int64)
        tm.allreduce(comm, np.full(4, rank, np.int64), got)
        check((got == size * (size - 1) // 2).all(), "repeated allreduce")
    op = MPI.MAX if rank == 0 else MPI.SUM
    expect_error(lambda: tm.allreduce(comm, np.zeros(4, np.int64), np.zeros(4, np.int64), op=op), ("op",), "op")
    expect_error(lambda: tm.bcast(comm, np.zeros(10 + (rank == size - 1))), ("disagree", "size"), "sizes")
    expect_error(lambda: tm.bcast(comm, np.zeros(8, np.float64 if rank else np.int64)), ("disagree", "type"), "types")
    expect_error(lambda: tm.bcast(comm, np.zeros(4), root=size), ("root", str(size)), "bad root")
    expect_error(lambda: tm.bcast(comm, np.zeros(4), root=rank % 2 if size > 1 else 7), ("root",), "roots differ")
    topo = load_topology("builtin:hetero-2switch")
    expect_error(lambda: tm.bcast(comm, np.zeros(4), topology=topo, mapping=["nowhere"] * size), ("nowhere",), "host")
    # by processor name (every rank of this test runs on this machine, not a topology host)
    expect_error(lambda: tm.bcast(comm, np.zeros(4), topology=topo), (MPI.Get_processor_name(), "mapping"), "by name")
    if size > 1:
        twice = ["s"] * size
        expect_error(
            lambda: tm.bcast(comm, np.zeros(4), topology=topo, mapping=twice), ("both host",), "one host twice"
        )
    expect_error(lambda: tm.allreduce(comm, np.zeros(4), np.zeros(4), op=MPI.BAND), ("integer",), "bitwise on float")
    expect_error(lambda: tm.allreduce(comm, np.zeros(4), np.zeros(5)), ("sendbuf",), "send/recv sizes")
    expect_error(lambda: _plan_on_root(comm, _planner_bug, "bcast"), ("ZeroDivisionError",), "a planner's own bug")
    plan = Plan.broadcast("rank0", 100, ["rank1"], [Transfer.of("rank0", "rank1", 0, 100)])
    expect_error(lambda: tm.perform(comm, plan, np.zeros(64, np.uint8)), ("100 bytes", "64"), "plan size")
    if size > 1:
        wide = Plan.broadcast("rank0", 8, ["rank99"], [Transfer.of("rank0", "rank99", 0, 8)])
        expect_error(lambda: tm.perform(comm, wide, np.zeros(8, np.uint8)), ("rank99",), "plan host")
        # rank1 forwards bytes it never receives: refused, not a hang
        broken = Plan.broadcast("rank0", 8, ["rank1"], [Transfer.of("rank1", "rank0", 0, 8)])
        expect_error(lambda: tm.perform(comm, broken, np.zeros(8, np.uint8)), ("rank1",), "broken plan")


def mode_freed() -> None:
    """State lives and dies with its communicator: MPI reuses a freed handle, and the next
    communicator must not inherit the plans or hosts of the freed one."""
    from topocast.mpi.state import state_of

    for first in ("bcast", "allreduce"):
        w = comm.Dup()
        x = np.arange(16, dtype=np.int32) if rank == 0 else np.zeros(16, np.int32)
        if first == "bcast":
            tm.bcast(w, x, root=0, algorithm=tm.DEFAULT_BCAST)
        else:
            tm.allreduce(w, MPI.IN_PLACE, x, algorithm=tm.DEFAULT_ALLREDUCE)
        state = state_of(w)
        check(state.dup is not None or size == 1, "a private duplicate was made")
        # every rank of these tests runs on this machine: more of them than cores is crowded
        check(state.crowded == (size > len(os.sched_getaffinity(0))), f"crowded is {state.crowded} at {size} ranks")
        w.Free()
        check(state.dup is None, "freeing the communicator freed the private duplicate")
        sub = comm.Split(rank // 2, rank)
        b = np.full(16, rank, np.int32)
        tm.bcast(sub, b, root=0, algorithm=tm.DEFAULT_BCAST)
        check((b == rank - rank % 2).all(), f"after a {first} on a freed communicator: bcast gives {b[0]}")
        c = np.full(8, rank + 1, np.int64)
        tm.allreduce(sub, MPI.IN_PLACE, c, algorithm=tm.DEFAULT_ALLREDUCE)
        want = sum(r + 1 for r in range(size) if r // 2 == rank // 2)
        check((c == want).all(), f"after a {first} on a freed communicator: allreduce gives {c[0]}, not {want}")
        sub.Free()
    # a duplicate starts afresh: MPI's Dup does not copy topocast's state
    tm.bcast(comm, np.zeros(4), root=0)
    d = comm.Dup()
    check(state_of(d).dup is None and not state_of(d).plans, "Dup copies no state")
    d.Free()


class _DLPackOnly:
    """A DLPack object without the buffer protocol (as mpi4py's tests make them)."""

    def __init__(self, a: np.ndarray) -> None:
        self.a = a

    def __dlpack__(self, **kw):
        return self.a.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


def _forms(algorithm_b: str, algorithm_a: str) -> None:
    """Buffer forms and datatypes, each compared with what MPI's own call leaves in the buffer
    (the bytes outside a derived datatype included)."""

    def same_as_mpi(make, what: str) -> None:
        for root in range(size):
            mine, ref = make(root), make(root)
            comm.Bcast(ref[1], root=root)
            tm.bcast(comm, mine[1], root=root, algorithm=algorithm_b)
            check(mine[0].tobytes() == ref[0].tobytes(), f"bcast {what} from {root} ({algorithm_b})")

    def ints(root, n=10):
        return np.arange(n, dtype=np.int32) * 3 + 1 if rank == root else np.full(n, -1, np.int32)

    idx = MPI.INT.Create_indexed_block(1, [0, 2, 4, 6, 8]).Commit()
    vec = MPI.INT.Create_vector(3, 1, 3).Commit()
    same_as_mpi(lambda r: (lambda a: (a, [a, 1, idx]))(ints(r)), "an indexed-block datatype")
    same_as_mpi(lambda r: (lambda a: (a, [a, 1, vec]))(ints(r)), "a vector datatype")
    # mixed forms: the root's derived type, the others' plain ints of the same signature
    for root in range(size):
        a = ints(root, 9)
        ref = a.copy()
        comm.Bcast([ref, 1, vec] if rank == root else [ref[:3], 3, MPI.INT], root=root)
        tm.bcast(comm, [a, 1, vec] if rank == root else [a[:3], 3, MPI.INT], root=root, algorithm=algorithm_b)
        check(a.tobytes() == ref.tobytes(), f"bcast with a vector type at the root only ({algorithm_b})")
    idx.Free()
    vec.Free()
    same_as_mpi(lambda r: (lambda a: (a, a))(np.asfortranarray(ints(r, 12).reshape(3, 4))), "a Fortran-ordered array")
    same_as_mpi(lambda r: (lambda a: (a, [_DLPackOnly(a), MPI.INT]))(ints(r)), "a DLPack object")
    same_as_mpi(lambda r: (lambda a: (a, [a, (4, 3), MPI.INT]))(ints(r)), "[buf, (count, displ), type]")
    same_as_mpi(lambda r: (lambda a: (a, [a, 5]))(ints(r)), "[buf, count]")
    same_as_mpi(lambda r: (lambda a: (a, [a, "i"]))(ints(r)), "[buf, typecode]")
    same_as_mpi(lambda r: (lambda a: (a, [a, MPI.FLOAT_INT]))(ints(r)), "a named pair type")
    tm.bcast(comm, [None, MPI.INT], algorithm=algorithm_b)
    tm.allreduce(comm, [None, MPI.INT], [None, MPI.INT], algorithm=algorithm_a)
    # allreduce: Fortran order, a derived type, a user-defined op, bool with a logical op
    f = np.asfortranarray((np.arange(12, dtype=np.int64) + rank).reshape(3, 4))
    ref, got = np.zeros_like(f), np.zeros_like(f)
    comm.Allreduce(f, ref)
    tm.allreduce(comm, f, got, algorithm=algorithm_a)
    check(got.tobytes() == ref.tobytes(), f"allreduce of a Fortran-ordered array ({algorithm_a})")
    send = np.arange(8, dtype=np.int32) + rank
    user = MPI.Op.Create(
        lambda a, b, t: np.maximum(
            np.frombuffer(a, np.int32), np.frombuffer(b, np.int32), out=np.frombuffer(b, np.int32)
        ),
        commute=True,
    )
    ref, got = np.zeros_like(send), np.zeros_like(send)
    comm.Allreduce(send, ref, op=user)
    tm.allreduce(comm, send, got, op=user, algorithm=algorithm_a)
    check(got.tobytes() == ref.tobytes(), f"allreduce with a user-defined op ({algorithm_a})")
    user.Free()
    flags = np.array([rank % 2 == 0, True, False, rank == 0])
    for op in (MPI.LAND, MPI.LOR, MPI.LXOR):
        ref, got = np.zeros_like(flags), np.zeros_like(flags)
        comm.Allreduce(flags, ref, op=op)
        tm.allreduce(comm, flags, got, op=op, algorithm=algorithm_a)
        check(got.tobytes() == ref.tobytes(), f"allreduce of bool with {op} ({algorithm_a})")
    # bool with SUM: MPI does not define it; refused alike whatever the planner
    big = np.ones(50_000, bool)
    expect_error(
        lambda: tm.allreduce(comm, big, np.zeros_like(big), algorithm=algorithm_a), ("SUM", "C_BOOL"), "bool SUM"
    )


def mode_forms() -> None:
    for b, a in (("auto", "auto"), (tm.DEFAULT_BCAST, tm.DEFAULT_ALLREDUCE), ("flat", "recursive_doubling")):
        _forms(b, a)
    # a plan that sends the root bytes it has (far_first on a star): its read-only buffer
    for root in range(size):
        x = bytes(range(40)) if rank == root else bytearray(40)
        tm.bcast(comm, x, root=root, algorithm="far_first")
        check(bytes(x) == bytes(range(40)), f"far_first bcast to a read-only root {root}")
    # refused on every rank: not a buffer on one rank, a count past the end of the buffer
    bad = 7 if rank == size - 1 else np.zeros(4)
    expect_error(lambda: tm.bcast(comm, bad), ("not a buffer",), "not a buffer")
    expect_error(lambda: tm.bcast(comm, [np.zeros(4, np.int32), 9, MPI.INT]), ("count 9", "16"), "count past the end")
    expect_error(lambda: tm.bcast(comm, [None, 3, MPI.INT]), ("None", "count"), "None with a count")
    if size > 1:
        # an intercommunicator: MPI's own call, with its root semantics
        half = comm.Split(rank % 2, rank)
        inter = half.Create_intercomm(0, comm, 1 - rank % 2, tag=7)
        x = np.full(5, rank, np.int64)
        root = (MPI.ROOT if half.Get_rank() == 0 else MPI.PROC_NULL) if rank % 2 == 0 else 0
        tm.bcast(inter, x, root=root)
        check(rank % 2 == 0 or (x == 0).all(), f"bcast on an intercommunicator gives {x[0]}")
        y = np.zeros(3, np.int64)
        tm.allreduce(inter, np.full(3, rank, np.int64), y)
        other = sum(r for r in range(size) if r % 2 != rank % 2)
        check((y == other).all(), f"allreduce on an intercommunicator gives {y[0]}, not {other}")
        inter.Free()
        half.Free()


def mode_plan() -> None:
    """A plan's ``after``, pipelining through a relay, and ``rate_cap`` (needs 3 ranks)."""
    n = 3 << 20
    cap = 8e6  # bytes/s
    plan = Plan.broadcast(
        "rank0",
        n,
        ["rank1", "rank2"],
        [
            Transfer.of("rank0", "rank1", 0, n, rate_cap=cap),
            Transfer.of("rank1", "rank2", 0, n, pipelined=True, upstream=0),
        ],
    )
    buf = np.frombuffer(np.random.default_rng(5).bytes(n), np.uint8).copy() if rank == 0 else np.zeros(n, np.uint8)
    ref = buf.copy()
    comm.Bcast(ref, root=0)
    t = time.monotonic()
    stats = tm.perform(comm, plan, buf, chunk_size=64 << 10)
    wall = time.monotonic() - t
    check(buf.tobytes() == ref.tobytes(), "plan delivered the bytes")
    walls = comm.gather((wall, stats.t0, stats.transfer_times, stats.completed), root=0)
    if rank == 0:
        (_, _, _, _), (_, t01, tt1, c1), (_, t02, tt2, c2) = walls
        check(walls[1][0] >= 0.9 * n / cap, f"rate cap {cap:g} B/s: {n} bytes took {walls[1][0]:.3f} s")
        # pipelined: rank 2 got its first byte long before rank 1 got its last
        first2 = t02 + tt2[1][0]
        last1 = t01 + tt1[0][1]
        check(first2 < last1 - 0.5 * n / cap, f"relay pipelines (first byte at 2 {first2:.3f}, last at 1 {last1:.3f})")
        check(c2 is not None and c1 is not None, "completion times")
    # ``after``: a transfer waits for one elsewhere (0 -> 2 after 1 -> 2 completed at rank 2)
    m = 256 << 10
    plan2 = Plan.broadcast(
        "rank0",
        m,
        ["rank1", "rank2"],
        [
            Transfer.of("rank0", "rank1", 0, m, rate_cap=4e6),
            Transfer.of("rank0", "rank2", 0, m, after=(0,)),
        ],
    )
    buf = np.full(m, 9, np.uint8) if rank == 0 else np.zeros(m, np.uint8)
    stats = tm.perform(comm, plan2, buf)
    check((buf == 9).all(), "after plan delivered")
    got = comm.gather((stats.t0, stats.transfer_times), root=0)
    if rank == 0:
        end0 = got[1][0] + got[1][1][0][1]
        start1 = got[2][0] + got[2][1][1][0]
        check(start1 >= end0, f"transfer 1 started at {start1:.4f} after transfer 0 ended at {end0:.4f}")


if __name__ == "__main__":
    mode = sys.argv[1]
    globals()[f"mode_{mode}"](*sys.argv[2:])
    total = comm.reduce(checks, root=0)
    if rank == 0:
        print(json.dumps({"ok": mode, "checks": total, "ranks": size}))
