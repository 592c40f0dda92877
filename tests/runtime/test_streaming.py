"""The data path: stores (memory, file, source), frames straight into the store, sendfile,
streaming from and to disk with bounded memory, and the faults of that path (a source file
that changes, a full or unwritable destination, a message that does not fit in memory)."""

import os
import shutil
import socket
import subprocess
import threading
from pathlib import Path

import pytest

from topocast.plan import Plan, Transfer
from topocast.runtime import RunError, make_launcher, perform
from topocast.runtime.data import BLOCK, digest_pieces, digest_ranges, generate, generate_range
from topocast.runtime.protocol import T_DATA, Conn, ProtocolError, chunk_hash
from topocast.runtime.store import TRIM_EVERY, SourceChanged, Store, StoreError

from .helpers import chain_plan

MiB = 1 << 20


# --------------------------------------------------------------- stores
def _pair():
    a, b = socket.socketpair()
    return Conn(a), Conn(b)


def test_frame_lands_in_the_store_and_its_checksum_is_kept():
    store = Store.in_memory(1000)
    tx, rx = _pair()
    payload = bytes(range(200))
    tx.send_data(100, payload)
    ftype, (off, view, digest) = rx.recv(lambda o, n: store.reserve(o, n, rx))
    assert ftype == T_DATA and off == 100
    assert view.obj is store.view.obj  # received into the store itself, not a scratch buffer
    assert store.commit(off, view, digest, owner=rx) == 200
    assert bytes(store.view[100:300]) == payload and store.covers(100, 300)
    assert store.frame_end(100, 1000) == 300  # a relay forwards the frame as it came (hash known)
    # a second frame over held bytes is received elsewhere and adds nothing
    tx.send_data(150, payload[50:100])
    ftype, (off, view, digest) = rx.recv(lambda o, n: store.reserve(o, n, rx))
    assert view.obj is not store.view.obj and store.commit(off, view, digest, owner=rx) == 0


def test_a_frame_committed_while_another_receiver_writes_the_same_region_waits_for_it():
    """Two transfers deliver the same frame: the second, received elsewhere, must not mark
    as held (nor hash for the digest) the region the first is still writing into."""
    store = Store.in_memory(1000)
    store.follow_digest([(0, 1000)])
    payload = bytes(range(200))
    region = store.reserve(100, 200, "first")  # the first receiver's bytes are on their way
    assert region is not None
    assert store.commit(100, payload, digest=chunk_hash(payload), owner="second") == 0
    assert not store.covers(100, 300)
    region[:] = payload
    assert store.commit(100, region, digest=chunk_hash(payload), owner="first") == 200
    assert store.covers(100, 300) and bytes(store.view[100:300]) == payload
    # a frame reaching past the reservation stores the part nobody else is writing
    assert store.reserve(400, 100, "first") is not None
    assert store.commit(300, bytes(300), owner="second") == 200
    assert store.held.missing(0, 1000) == [(0, 100), (400, 500), (600, 1000)]


def test_corrupt_frame_is_never_held_and_its_reservation_is_released():
    store = Store.in_memory(1000)
    a, b = socket.socketpair()
    rx = Conn(b)
    from topocast.runtime.protocol import _DATA, _HDR

    a.sendall(_HDR.pack(T_DATA, _DATA.size + 10) + _DATA.pack(0, 12345) + b"0123456789")
    with pytest.raises(ProtocolError, match="checksum"):
        rx.recv(lambda o, n: store.reserve(o, n, rx))
    assert store.held.total == 0
    assert store.reserve(0, 10, "other") is None  # still reserved by the failed receiver
    store.release(rx)
    assert store.reserve(0, 10, "other") is not None


def test_sendfile_from_the_store_carries_the_checksum_it_arrived_with():
    store = Store.in_memory(4096)
    store.commit(0, b"x" * 4096, digest=None)
    tx, rx = _pair()
    store.send_frame(tx, 1000, 3000, bytearray(0))
    ftype, (off, view, _) = rx.recv()
    assert (off, bytes(view)) == (1000, b"x" * 2000)


def _shared_resident() -> int:
    """This process's resident shared memory (a memory store's pages), in bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssShmem:"):
            return int(line.split()[1]) * 1024
    pytest.skip("no RssShmem in /proc/self/status")


def test_a_memory_store_is_prefaulted_only_where_asked_and_closes():
    """The ranges given are populated before the start, in pieces over several threads
    (pieces of 64 MiB: three of them here, the last one partial); the rest is not."""
    before = _shared_resident()
    store = Store.in_memory(256 << 20, [(4096, 150 << 20)])
    try:
        grown = _shared_resident() - before
        assert (150 << 20) <= grown <= (150 << 20) + 2 * 4096
    finally:
        store.close()
    store = Store.in_memory(64 << 20)
    try:
        assert _shared_resident() - before < 1 << 20
    finally:
        store.close()


def test_generated_source_reads_any_range_without_storing():
    store = Store.generated(3 * MiB + 5, seed=4, ranges=[(0, 3 * MiB + 5)])
    view = memoryview(bytearray(1000))
    store.read(MiB - 300, view)
    assert bytes(view) == generate_range(4, MiB - 300, 1000)
    assert not store.writable and store.mm is None


def test_generated_message_is_position_dependent():
    data = bytes(generate(9, 3 * MiB))
    blocks = {data[i : i + 4096] for i in range(0, len(data), 4096)}
    assert len(blocks) == 3 * MiB // 4096  # no two 4 KiB pieces alike: a misplaced chunk fails the digest


def test_file_store_releases_its_pages_and_keeps_the_bytes(tmp_path, monkeypatch):
    import topocast.runtime.store as st

    monkeypatch.setattr(st, "TRIM_EVERY", 256 * 1024)
    store = Store.in_file(2 * MiB, tmp_path / "x.part")
    data = generate_range(2, 0, 2 * MiB)
    for off in range(0, 2 * MiB, 64 * 1024):
        store.commit(off, data[off : off + 64 * 1024])
    assert store.digest([(0, 2 * MiB)]) == digest_ranges(data, [(0, 2 * MiB)])
    store.close()
    assert (tmp_path / "x.part").read_bytes() == data


def test_source_file_that_changes_is_detected(tmp_path):
    p = tmp_path / "m.bin"
    p.write_bytes(b"a" * 10000)
    store = Store.from_file(10000, str(p), [(0, 10000)])
    view = memoryview(bytearray(100))
    store.read(0, view)
    with open(p, "ab") as fh:
        fh.write(b"more")
    with pytest.raises(SourceChanged, match="changed while it was being sent"):
        store.read(100, view)


def test_full_disk_is_an_error_before_any_byte(tmp_path):
    free = shutil.disk_usage(tmp_path).free
    with pytest.raises(StoreError, match="no space left") as exc:
        Store.in_file(free * 4 + (1 << 40), tmp_path / "huge.part")
    assert exc.value.errno == 28


# --------------------------------------------------------------- runs
def _slow_plan(size, rate):
    tr = [Transfer.of("s", "a", 0, size, rate_cap=rate), Transfer.of("a", "b", 0, size, pipelined=True)]
    return Plan.broadcast("s", size, ["a", "b"], tr, planner="hand")


def test_file_larger_than_every_buffer_streams_with_bounded_memory(tmp_path):
    """Twice the store's release interval through relays to disk: no agent's peak memory
    comes near the message (the source reads frames, receivers release their stores' pages
    every ``TRIM_EVERY`` bytes, so a receiver peaks near its baseline + TRIM_EVERY)."""
    size = 2 * TRIM_EVERY
    src = tmp_path / "big.bin"
    with open(src, "wb") as fh:
        for off in range(0, size, 8 * MiB):
            fh.write(generate_range(3, off, 8 * MiB))
    out = perform(chain_plan(size), launcher=make_launcher("local"), file=str(src), dest_dir=str(tmp_path / "o"))
    assert out.failed == {}
    want = digest_ranges(lambda off, v: v.__setitem__(slice(None), generate_range(3, off, len(v))), [(0, size)])
    for h in "abcd":
        copy = tmp_path / "o" / h / "big.bin"
        assert digest_ranges(copy.read_bytes(), [(0, size)]) == want
        assert out.peak_rss[h] < TRIM_EVERY + 48 * MiB, (h, out.peak_rss[h])
    assert out.peak_rss["s"] < 80 * MiB  # the source reads the file in frames, never whole


def test_source_file_changing_during_the_run_fails_every_host_clearly(tmp_path):
    size = 8 * MiB
    src = tmp_path / "m.bin"
    src.write_bytes(generate_range(1, 0, size))

    def change(_agents):
        threading.Timer(0.3, lambda: src.write_bytes(b"changed" * 1000)).start()

    out = perform(_slow_plan(size, 8e6), launcher=make_launcher("local"), file=str(src), on_start=change)
    assert set(out.failed) == {"a", "b"}
    for h in "ab":
        assert "changed while it was being sent" in out.failed[h], out.failed[h]


def test_content_change_without_a_new_mtime_fails_the_digest(tmp_path):
    size = 4 * MiB
    src = tmp_path / "m.bin"
    src.write_bytes(generate_range(1, 0, size))
    st = os.stat(src)

    def change(_agents):
        def flip():
            with open(src, "r+b") as fh:
                fh.seek(size - 10)
                fh.write(b"XXXXXXXXXX")
            os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns))

        threading.Timer(0.2, flip).start()

    out = perform(_slow_plan(size, 8e6), launcher=make_launcher("local"), file=str(src), on_start=change)
    assert set(out.failed) == {"a", "b"}
    assert all("digest mismatch" in r and "source file" in r for r in out.failed.values()), out.failed


def test_unwritable_dest_dir_is_an_error_before_the_start(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(RunError, match="--dest-dir"):
        perform(chain_plan(1000), launcher=make_launcher("local"), dest_dir=str(blocker / "out"))


def test_message_too_large_for_memory_is_refused_up_front(monkeypatch):
    import topocast.memory

    monkeypatch.setattr(topocast.memory, "available_memory", lambda: 10 * MiB)
    with pytest.raises(RunError, match="--dest-dir"):
        perform(chain_plan(8 * MiB), launcher=make_launcher("local"))


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("mount"), reason="needs root to mount a small tmpfs")
def test_full_disk_at_one_receiver_is_reported_and_the_others_complete(tmp_path):
    size = 4 * MiB
    dest = tmp_path / "out"
    small = dest / "c"
    small.mkdir(parents=True)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(small)]).returncode:
        pytest.skip("mount -t tmpfs failed here")
    try:
        out = perform(chain_plan(size), launcher=make_launcher("local"), dest_dir=str(dest), stall_timeout=2)
    finally:
        subprocess.run(["umount", str(small)])
    assert set(out.failed) == {"c"}
    assert "no space left" in out.failed["c"] and "holds 0 of" in out.failed["c"]
    for h in "abd":  # d received from c in the plan: it fetched from the others instead
        assert out.result.per_host[h].completed
        assert Path(dest / h / "message.bin").stat().st_size == size


def _count_piece_hashes(monkeypatch) -> list[int]:
    import topocast.runtime.store as store_module

    calls: list[int] = []
    real = store_module.piece_hash

    def counting(data):
        calls.append(len(data))
        return real(data)

    monkeypatch.setattr(store_module, "piece_hash", counting)
    return calls


@pytest.mark.parametrize("kind", ["memory", "file"])
def test_whole_piece_frames_give_the_digest_without_a_second_pass(tmp_path, monkeypatch, kind):
    """Frames that are whole digest pieces (what senders send, never crossing a multiple of
    BLOCK) lend the digest their verified checksums: no byte is hashed twice."""
    size = 3 * BLOCK + 777
    message = generate(9, size)
    wanted = [(0, size)]
    store = Store.in_memory(size) if kind == "memory" else Store.in_file(size, tmp_path / "m.bin")
    store.follow_digest(wanted)
    calls = _count_piece_hashes(monkeypatch)
    for a, b in reversed(digest_pieces(wanted)):  # any order
        store.commit(a, memoryview(message)[a:b], digest=chunk_hash(memoryview(message)[a:b]))
    assert store.digest(wanted) == digest_ranges(message, wanted)
    assert calls == []


def test_pieces_from_several_frames_are_hashed_once_each(monkeypatch):
    size = 2 * BLOCK + 100
    message = generate(5, size)
    wanted = [(10, size - 10)]
    store = Store.in_memory(size)
    store.follow_digest(wanted)
    calls = _count_piece_hashes(monkeypatch)
    step = 64 * 1024 + 3  # chunk-sized frames that do not line up with the pieces
    for a in range(0, size, step):
        b = min(size, a + step)
        store.commit(a, memoryview(message)[a:b], digest=chunk_hash(memoryview(message)[a:b]))
    assert store.digest(wanted) == digest_ranges(message, wanted)
    assert sorted(calls) == sorted(b - a for a, b in digest_pieces(wanted))


def test_digest_pieces_follow_the_bytes_not_the_split():
    assert digest_pieces([(0, 10), (10, 5)]) == [(0, 15)]
    assert digest_pieces([(BLOCK - 4, 8)]) == [(BLOCK - 4, BLOCK), (BLOCK, BLOCK + 4)]
    assert digest_pieces([(20, 5), (0, 5), (5, 0)]) == [(20, 25), (0, 5)]  # order kept, empty ranges dropped
    message = generate(2, 3 * BLOCK)
    assert digest_ranges(message, [(0, BLOCK + 5), (BLOCK + 5, BLOCK)]) == digest_ranges(message, [(0, 2 * BLOCK + 5)])
    assert digest_ranges(message, [(0, 5), (5, 5)]) != digest_ranges(message, [(5, 5), (0, 5)])
