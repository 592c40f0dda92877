"""Message contents for runs without a file, and safe destination paths."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["generate", "safe_destination"]


def generate(seed: int, size: int) -> bytearray:
    """``size`` pseudo-random bytes from ``seed`` (identical on every host: numpy PCG64)."""
    import numpy as np

    return bytearray(np.random.Generator(np.random.PCG64(seed)).bytes(size))


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
