"""An agent's store: where one host keeps the message, and which verified bytes it holds.

Three backings, chosen by the agent (docs/design.md "Performing plans"):

* **memory** — a memfd of the message's size, mapped once; pages are touched (and counted)
  only where bytes are stored, and can be pre-faulted before the start so that the transfer
  does not pay the kernel's first-touch cost;
* **file** — ``--dest-dir``: the destination file, allocated in full up front (a full disk is
  an error before any byte moves, not a SIGBUS later), written through a shared mapping whose
  pages are released from the process every ``TRIM_EVERY`` bytes, so the process's memory does
  not grow with the message (the bytes stay in the page cache and reach the disk);
* **source** — the data is produced on demand, never stored: the initial holder of a
  generated message, or of ``--file`` (read with ``pread`` into a bounded buffer). A source
  file is checked for changes (size, modification time) before every frame it sends.

Receiving writes straight into the mapping (``reserve`` hands out the region, ``commit``
marks it held once its checksum matched); sending uses ``sendfile`` from the store's file
descriptor, with the checksum computed when the bytes arrived (a relay hashes each chunk
once) — only a source reads its bytes into memory to send them.
"""

from __future__ import annotations

import bisect
import contextlib
import ctypes
import errno
import fcntl
import itertools
import mmap
import os
import threading
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..errors import RunFailure
from ..intervals import IntervalSet
from .data import BLOCK, ByteBuffer, combine_piece_hashes, digest_pieces, digest_ranges, generate_into, piece_hash
from .protocol import Conn, ProtocolError, chunk_hash

__all__ = ["Store", "StoreError", "SourceChanged", "peak_rss", "MEMORY_MARGIN", "TRIM_EVERY"]

MEMORY_MARGIN = 0.9  # of MemAvailable the stores of one machine may take
TRIM_EVERY = 64 << 20  # bytes written to a file-backed store between releases of its pages
MADV_POPULATE_WRITE = getattr(mmap, "MADV_POPULATE_WRITE", 23)  # Linux 5.14; Python names it from 3.12
PREFAULT_PIECE = 64 << 20  # bytes populated by one call
PREFAULT_THREADS = 4
_LIBC = ctypes.CDLL(None, use_errno=True)


class StoreError(RunFailure):
    """The store cannot be set up (no memory, no disk space, an unwritable destination);
    ``errno`` says which when the system said."""

    def __init__(self, message: str, errno: int | None = None):
        super().__init__(message)
        self.errno = errno


class SourceChanged(ProtocolError):
    """The source file changed while it was being sent."""


def _populate(address: int, length: int) -> bool:
    """``MADV_POPULATE_WRITE`` on ``length`` bytes at ``address`` (False where the kernel
    does not know it)."""
    return _LIBC.madvise(ctypes.c_void_p(address), ctypes.c_size_t(length), MADV_POPULATE_WRITE) == 0


def peak_rss() -> int | None:
    """This process's peak resident memory in bytes (VmHWM: ``ru_maxrss`` would keep the
    parent's peak from before the exec that started this process)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


@contextlib.contextmanager
def _filesystem_lock(directory: Path):
    """An exclusive ``flock`` on the root directory of the filesystem holding ``directory``
    (the same inode for every process allocating there, and no file to create or leave
    behind), held while one store checks the free space and allocates. Where the root
    cannot be locked (a network filesystem), allocation goes on unlocked."""
    fd = -1
    try:
        root = Path(os.path.abspath(directory))
        dev = os.stat(root).st_dev
        while root.parent != root and os.stat(root.parent).st_dev == dev:
            root = root.parent
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError:
        pass
    try:
        yield
    finally:
        if fd >= 0:
            os.close(fd)  # releases the lock


class Store:
    """The message bytes one host holds, their verified intervals, and a condition other
    threads wait on for bytes to arrive."""

    def __init__(self, size: int):
        self.size = size
        self.fd = -1  # what sendfile reads (memory and file stores; -1: none)
        self.mm: mmap.mmap | None = None
        self.view = memoryview(b"")
        self.kind = "memory"
        self.path: Path | None = None
        self.held = IntervalSet()
        self.cond = threading.Condition()
        self.version = 0
        self.last_new = time.monotonic()
        self._reserved: dict[int, tuple[int, object]] = {}  # offset -> (end, owner)
        self._hashes: dict[int, tuple[int, int]] = {}  # offset -> (length, xxh3) of a received frame
        self._written = 0  # bytes since the last release of a file store's pages
        self._source: tuple | None = None  # (kind, seed or fd, path, stat) for a source store
        self._read_lock = threading.Lock()
        self._follow: list | None = None  # the wanted ranges whose digest is followed
        self._follow_pieces: list[tuple[int, int]] = []  # their digest pieces, in digest order
        self._pieces: list[tuple[int, int]] = []  # the same, sorted by start (for lookups)
        self._piece_starts: list[int] = []
        self._piece_hashes: dict[tuple[int, int], int] = {}  # piece -> its hash, once held
        self._follow_lock = threading.Lock()

    # ------------------------------------------------------------------ backings
    @classmethod
    def in_memory(cls, size: int, prefault: Iterable[tuple[int, int]] = ()) -> Store:
        """A memory store; the byte ranges ``prefault`` are touched now (see the module)."""
        store = cls(size)
        if size:
            store.fd = os.memfd_create("topocast-store", os.MFD_CLOEXEC)
            os.ftruncate(store.fd, size)
            store._map()
            store._prefault(prefault)
        return store

    @classmethod
    def in_file(cls, size: int, path: Path, keep: bool = False) -> Store:
        """A file store at ``path``; ``keep``: an existing file of ``size`` bytes is opened
        as it is (its bytes count as held only once :meth:`keep_verified` checked them)."""
        store = cls(size)
        store.kind, store.path = "file", path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            kept = keep and path.is_file() and path.stat().st_size == size
            flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | (0 if kept else os.O_TRUNC)
            store.fd = os.open(path, flags, 0o644)
        except OSError as exc:
            raise StoreError(f"cannot write {path}: {exc.strerror}", exc.errno) from None
        if size:
            if not kept:  # an earlier run's file of the right size already has its blocks
                store._allocate(path)
            store._map()
        return store

    def keep_verified(self, pieces: Iterable[tuple[int, int]], expected) -> list[tuple[int, int]]:
        """Mark held the ``pieces`` (start, end) of this file store whose bytes hash to
        ``expected`` (the message's hash of every ``data.BLOCK`` piece, ``runtime.resume``);
        returns the pieces kept."""
        from .resume import verify_pieces

        kept = verify_pieces(self.fd, pieces, expected)
        with self.cond:
            for a, b in kept:
                self.held.add(a, b)
                self._hashes[a] = (b - a, int(expected[a // BLOCK]))
        return kept

    def _allocate(self, path) -> None:
        """Reserve the file's blocks now: a full disk is an error here, not a SIGBUS when a
        page of the mapping is first written. Free space is checked first, and a failed
        allocation gives its blocks back (some filesystems fill the disk before failing).
        Check and allocation hold the filesystem's lock (``_filesystem_lock``), so hosts
        sharing one filesystem count only the space the others have not taken."""
        with _filesystem_lock(path.parent):
            free = os.statvfs(path.parent)
            available = free.f_bavail * free.f_frsize
            if self.size > available:
                self._no_space(path, available)
            try:
                os.posix_fallocate(self.fd, 0, self.size)
            except OSError as exc:
                if exc.errno in (errno.EOPNOTSUPP, errno.EINVAL):  # no fallocate here: a sparse file
                    os.ftruncate(self.fd, self.size)
                    return
                os.ftruncate(self.fd, 0)
                if exc.errno == errno.ENOSPC:
                    free = os.statvfs(path.parent)
                    self._no_space(path, free.f_bavail * free.f_frsize)
                raise StoreError(f"cannot allocate {path}: {exc.strerror}", exc.errno) from None

    def _no_space(self, path, available: int):
        os.close(self.fd)
        self.fd = -1
        try:
            os.unlink(path)
        except OSError:
            pass
        raise StoreError(
            f"no space left on the device of {path.parent}: the message needs {self.size} bytes, {available} are free",
            errno.ENOSPC,
        )

    @classmethod
    def generated(cls, size: int, seed: int, ranges: Iterable[tuple[int, int]]) -> Store:
        from .data import _base

        store = cls(size)
        _base(seed)  # numpy and the random block now, before the start, not in the first frame
        store.kind, store._source = "source", ("seed", seed, None, None)
        store._hold(ranges)
        return store

    @classmethod
    def from_file(
        cls, size: int, path: str, ranges: Iterable[tuple[int, int]], expect: tuple[int, int] | None = None
    ) -> Store:
        """A source reading ``path``; ``expect`` = (size, mtime_ns) the coordinator saw."""
        store = cls(size)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError as exc:
            raise StoreError(f"cannot read {path}: {exc.strerror}", exc.errno) from None
        st = os.fstat(fd)
        seen = (st.st_size, st.st_mtime_ns)
        store.kind, store.fd, store._source = "source", fd, ("file", fd, path, seen)
        if st.st_size != size:
            raise SourceChanged(f"{path}: the plan moves {size} bytes but the file has {st.st_size}")
        if expect is not None and tuple(expect) != seen:
            raise SourceChanged(f"{path} changed after the run started reading it (size or modification time)")
        store._hold(ranges)
        return store

    def _map(self) -> None:
        self.mm = mmap.mmap(self.fd, self.size)
        self.view = memoryview(self.mm)

    def _prefault(self, ranges) -> None:
        """Populate the pages of ``ranges`` (``MADV_POPULATE_WRITE``), in pieces spread over
        up to ``PREFAULT_THREADS`` threads: the kernel's first touch of a page is CPU work,
        and before the start the other cores are idle. libc's ``madvise`` through ctypes lets
        the threads run at once (CPython's ``mmap.madvise`` holds the GIL). On an older
        kernel, nothing: pages are touched as bytes arrive."""
        assert self.mm is not None
        page = mmap.PAGESIZE
        pieces = []
        for off, length in ranges:
            start = off // page * page
            end = min(self.size, -(-(off + length) // page) * page)
            pieces += [(p, min(PREFAULT_PIECE, end - p)) for p in range(start, end, PREFAULT_PIECE)]
        if not pieces:
            return
        base = ctypes.addressof(ctypes.c_char.from_buffer(self.mm))
        threads = min(PREFAULT_THREADS, len(os.sched_getaffinity(0)), len(pieces))
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(lambda piece: _populate(base + piece[0], piece[1]), pieces))

    def _hold(self, ranges) -> None:
        for off, length in ranges:
            if off < 0 or off + length > self.size:
                raise ProtocolError(f"initial range [{off}, {off + length}) outside the message")
            self.held.add(off, off + length)

    @property
    def writable(self) -> bool:
        return self._source is None

    # ------------------------------------------------------------------ receiving
    def reserve(self, off: int, length: int, owner: object) -> memoryview | None:
        """The store's own region for a frame about to arrive, when none of it is held or
        reserved (the bytes land there directly); None otherwise (receive elsewhere, then
        :meth:`commit` copies what is new)."""
        end = off + length
        if off < 0 or end > self.size:
            raise ProtocolError(f"chunk [{off}, {end}) outside the message (size {self.size})")
        if not self.writable or length == 0:
            return None
        with self.cond:
            if self.held.missing(off, end) != [(off, end)]:
                return None
            for a, (b, _) in self._reserved.items():
                if a < end and off < b:
                    return None
            self._reserved[off] = (end, owner)
        return self.view[off:end]

    def release(self, owner: object) -> None:
        """Drop ``owner``'s reservations (its frame failed its checksum or never arrived)."""
        with self.cond:
            for a in [a for a, (_, o) in self._reserved.items() if o is owner]:
                del self._reserved[a]

    def commit(self, off: int, data: ByteBuffer, digest: int | None = None, owner: object = None) -> int:
        """Store verified bytes at ``off``; returns how many were new. ``data`` is the region
        :meth:`reserve` gave ``owner``, or bytes received elsewhere: those are copied, except
        where another receiver's reservation is still being written (its owner commits it)."""
        end = off + len(data)
        if off < 0 or end > self.size:
            raise ProtocolError(f"chunk [{off}, {end}) outside the message (size {self.size})")
        if not self.writable:
            return 0
        new = 0
        with self.cond:
            reserved = self._reserved.get(off)
            if reserved is not None and owner is not None and reserved == (end, owner):
                del self._reserved[off]
                self.held.add(off, end)
                new = end - off
            else:
                others = IntervalSet()
                for a, (b, o) in self._reserved.items():
                    if o is not owner and a < end and off < b:
                        others.add(a, b)
                for a, b in self.held.missing(off, end):
                    for x, y in others.missing(a, b):
                        self.view[x:y] = data[x - off : y - off]
                        self.held.add(x, y)
                        new += y - x
            if new == end - off and digest is not None:
                self._hashes[off] = (end - off, digest)
            if new:
                self.version += 1
                self.last_new = time.monotonic()
                self.cond.notify_all()
        if self._follow is not None:
            self._hash_pieces(off, end, digest)
        if new and self.kind == "file":
            self._written += new
            if self._written >= TRIM_EVERY:
                self._written = 0
                self.trim()
        return new

    def put(self, off: int, data: ByteBuffer) -> int:
        return self.commit(off, data)

    def trim(self) -> None:
        """Release the pages of a file store's mapping from this process (the bytes stay in
        the file: a shared mapping's pages are the page cache's)."""
        if self.mm is not None and self.kind == "file":
            try:
                self.mm.madvise(mmap.MADV_DONTNEED)
            except OSError:
                pass

    # ------------------------------------------------------------------ queries
    def covers(self, a: int, b: int) -> bool:
        with self.cond:
            return self.held.covers(a, b)

    def wait_covers(self, a: int, b: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self.cond:
            while not self.held.covers(a, b):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(left)
            return True

    def held_until(self, a: int, limit: int) -> int:
        """The end of the held run of bytes starting at ``a`` (at most ``limit``)."""
        with self.cond:
            miss = self.held.missing(a, limit)
        return miss[0][0] if miss else limit

    def frame_end(self, a: int, limit: int) -> int:
        """Where a frame starting at ``a`` should end: at the end of the frame these bytes
        arrived in when it fits (its checksum is known), else at ``limit``."""
        known = self._hashes.get(a)
        if known is not None and a + known[0] <= limit:
            return a + known[0]
        return limit

    def held_parts(self, a: int, b: int) -> list[tuple[int, int]]:
        """Sub-intervals of ``[a, b)`` held now."""
        with self.cond:
            miss = self.held.missing(a, b)
        out, pos = [], a
        for s, e in miss:
            if s > pos:
                out.append((pos, s))
            pos = e
        if pos < b:
            out.append((pos, b))
        return out

    def missing_ranges(self, ranges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
        """Missing (offset, length) of ``ranges``."""
        out: list[tuple[int, int]] = []
        with self.cond:
            for off, length in ranges:
                out.extend((s, e - s) for s, e in self.held.missing(off, off + length))
        return out

    def intervals(self) -> list[list[int]]:
        with self.cond:
            return [[s, e] for s, e in self.held]

    # ------------------------------------------------------------------ reading and sending
    def read(self, off: int, view: memoryview) -> None:
        """Fill ``view`` with the held bytes at ``off`` (a source checks its file first)."""
        if self._source is None:
            if self.kind == "file":  # not through the mapping: the process's memory stays bounded
                os.preadv(self.fd, [view], off)
            else:
                view[:] = self.view[off : off + len(view)]
            return
        kind, arg, path, seen = self._source
        if kind == "seed":
            generate_into(arg, off, view)
            return
        self.check_source()
        got = os.preadv(arg, [view], off)
        if got != len(view):
            raise SourceChanged(f"{path} changed while it was being sent (it ended at byte {off + got})")

    def check_source(self) -> None:
        """Raise :class:`SourceChanged` when the source file's size or modification time moved."""
        if self._source is None or self._source[0] != "file":
            return
        _, fd, path, seen = self._source
        st = os.fstat(fd)
        if (st.st_size, st.st_mtime_ns) != seen:
            raise SourceChanged(
                f"{path} changed while it was being sent (size {seen[0]} -> {st.st_size} bytes, "
                "or its modification time moved)"
            )

    def send_frame(self, conn: Conn, a: int, b: int, scratch: bytearray) -> None:
        """Send the held bytes ``[a, b)`` as one data frame: ``sendfile`` from the store with
        the checksum from when they arrived, or (a source) read into ``scratch`` and sent from
        there, so the bytes sent are the bytes hashed."""
        if self._source is not None:
            view = memoryview(scratch)[: b - a]
            with self._read_lock:
                self.read(a, view)
            conn.send_data(a, view)
            return
        known = self._hashes.get(a)
        digest = known[1] if known is not None and known[0] == b - a else chunk_hash(self.view[a:b])
        conn.send_data_from_fd(a, self.fd, b - a, digest)

    def follow_digest(self, ranges: Iterable[tuple[int, int]]) -> None:
        """Hash the digest pieces of ``ranges`` (``data.digest_pieces``) as they fill, so that
        :meth:`digest` of these ranges costs nothing at the end. A piece that arrives as one
        frame takes the frame's verified checksum as its hash (no second pass); a piece
        assembled from several frames is hashed once it is whole, while still in the cache."""
        self._follow = [tuple(r) for r in ranges]
        self._follow_pieces = digest_pieces(self._follow)
        self._pieces = sorted(set(self._follow_pieces))
        self._piece_starts = [a for a, _ in self._pieces]
        for a, b in self._pieces:
            self._hash_pieces(a, b, None)

    def _hash_pieces(self, off: int, end: int, frame_hash: int | None) -> None:
        """Hash the followed pieces overlapping ``[off, end)`` that are now whole."""
        i = max(0, bisect.bisect_right(self._piece_starts, off) - 1)
        with self._follow_lock:
            for a, b in itertools.islice(self._pieces, i, None):
                if a >= end:
                    break
                if b <= off or (a, b) in self._piece_hashes:
                    continue
                known = self._hashes.get(a)
                if frame_hash is not None and (a, b) == (off, end):
                    self._piece_hashes[a, b] = frame_hash  # the frame's verified checksum
                elif known is not None and known[0] == b - a and self.covers(a, b):
                    self._piece_hashes[a, b] = known[1]  # a piece kept by a resumed run, or a frame
                elif self.covers(a, b):
                    self._piece_hashes[a, b] = piece_hash(self._piece_bytes(a, b))

    def _piece_bytes(self, a: int, b: int):
        if self.kind != "file":
            return self.view[a:b]
        part = memoryview(bytearray(b - a))  # through the page cache, not the mapping
        self.read(a, part)
        return part

    def digest(self, ranges: Iterable[tuple[int, int]]) -> str:
        """Whole-message digest of ``ranges`` from what is stored (bounded memory)."""
        if self._follow is not None and [tuple(r) for r in ranges] == self._follow:
            pieces = self._follow_pieces
            for a, b in pieces:  # a piece another thread's commit completed but has not hashed yet
                self._hash_pieces(a, b, None)
            if all(p in self._piece_hashes for p in pieces):
                return combine_piece_hashes(self._piece_hashes[p] for p in pieces)
        return digest_ranges(self.view if self.kind == "memory" else self.read, ranges)

    def close(self) -> None:
        try:
            self.view.release()
        except BufferError:
            pass
        if self.mm is not None:
            try:
                self.mm.close()
            except BufferError:
                pass
        if self.fd >= 0:
            try:
                os.close(self.fd)
            except OSError:
                pass
            self.fd = -1
