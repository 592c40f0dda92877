"""An agent's store: the message buffer of one host (in memory, or a memory-mapped file under
``--dest-dir``) and the verified byte intervals it holds, with a condition other threads
wait on for bytes to arrive."""

from __future__ import annotations

import mmap
import threading
import time

from ..intervals import IntervalSet
from .protocol import ProtocolError

__all__ = ["Store"]


class Store:
    """The message buffer of one host plus the verified byte intervals it holds."""

    def __init__(self, size: int, path=None):
        self.size = size
        self.file = None
        self.buf: bytearray | mmap.mmap
        if path is None:
            self.buf = bytearray(size)
        else:  # file-backed: large messages need not fit in memory several times over
            path.parent.mkdir(parents=True, exist_ok=True)
            self.file = open(path, "w+b")
            self.file.truncate(size)
            self.buf = mmap.mmap(self.file.fileno(), size)
        self.view = memoryview(self.buf)
        self.held = IntervalSet()
        self.cond = threading.Condition()
        self.version = 0
        self.last_new = time.monotonic()

    def put(self, off: int, data) -> int:
        """Store verified bytes at ``off``; returns how many were new."""
        end = off + len(data)
        if off < 0 or end > self.size:
            raise ProtocolError(f"chunk [{off}, {end}) outside the message (size {self.size})")
        new = 0
        with self.cond:
            for a, b in self.held.missing(off, end):
                self.view[a:b] = data[a - off : b - off]
                self.held.add(a, b)
                new += b - a
            if new:
                self.version += 1
                self.last_new = time.monotonic()
                self.cond.notify_all()
        return new

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

    def missing_ranges(self, ranges) -> list[tuple[int, int]]:
        """Missing (offset, length) of ``ranges``."""
        out: list[tuple[int, int]] = []
        with self.cond:
            for off, length in ranges:
                out.extend((s, e - s) for s, e in self.held.missing(off, off + length))
        return out

    def intervals(self) -> list[list[int]]:
        with self.cond:
            return [[s, e] for s, e in self.held]
