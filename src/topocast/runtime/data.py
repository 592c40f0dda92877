"""Message contents for runs without a file, and safe destination paths."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["generate", "generate_range", "safe_destination"]


def generate(seed: int, size: int) -> bytearray:
    """``size`` pseudo-random bytes from ``seed`` (identical on every host: numpy PCG64)."""
    import numpy as np

    return bytearray(np.random.Generator(np.random.PCG64(seed)).bytes(size))


def generate_range(seed: int, offset: int, length: int) -> bytes:
    """``generate(seed, size)[offset:offset + length]`` without generating the bytes before
    ``offset`` (for any ``size >= offset + length``).

    A host that holds one block of a large message (a redistribution sender) needs only its
    block: generating the whole message in every agent cost ``size`` bytes of memory (twice)
    and CPU per agent before the start. ``Generator.bytes`` is the little-endian stream of the
    PCG64 64-bit outputs (32-bit halves, low first), so we jump ahead with ``advance`` and draw
    only the words covering the range; ``tests/runtime`` checks the equality.
    """
    import numpy as np

    if offset < 0 or length < 0:
        raise ValueError("offset and length must be >= 0")
    bg = np.random.PCG64(seed)
    bg.advance(offset // 8)
    skip = offset % 8
    words = (skip + length + 7) // 8
    return bg.random_raw(words).astype("<u8").tobytes()[skip : skip + length]


def safe_destination(dest_dir, *parts: str) -> Path:
    """``dest_dir/part/...``, refusing any part that would leave ``dest_dir``.

    Parts must be plain names: no separators, no ``..``, not absolute, no NUL. The result is
    also checked after resolving symlinks.
    """
    base = Path(dest_dir).resolve()
    for p in parts:
        if not p or p in (".", "..") or "/" in p or "\\" in p or "\x00" in p or os.path.isabs(p):
            raise ValueError(f"unsafe destination name {p!r} (a plain file or directory name is expected)")
    path = base.joinpath(*parts)
    resolved = path.resolve()
    if resolved != base and base not in resolved.parents:
        raise ValueError(f"destination {path} escapes {base}")
    return resolved
