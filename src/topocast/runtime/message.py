"""The message of a run as the coordinator prepares it: how the agents get it (a file, or
the seed of generated data), the digest each receiver must reach (computed in the background
while the agents start), and whether this machine has room for the receivers' stores."""

from __future__ import annotations

import os
import stat

from ..intervals import IntervalSet
from ..plan import Plan
from .agents import RunError, RunInputError

__all__ = ["prepare_message", "check_room", "message_file_stat", "RESUME_MAX_BYTES"]

RESUME_MAX_BYTES = 128 << 30  # larger messages: no resume (the piece hashes would not fit one control message)


def message_file_stat(file: str) -> os.stat_result:
    """The message file's status, or a :class:`RunInputError` naming the file and what it is
    instead of a regular file (a directory, a device such as ``/dev/zero``, a pipe): the
    agents read the message at offsets, and its size fixes the plan."""
    try:
        st = os.stat(file)
    except OSError as exc:
        raise RunInputError(f"{file}: cannot read the message ({exc.strerror})") from None
    if not stat.S_ISREG(st.st_mode):
        kind = next((name for test, name in _NOT_REGULAR if test(st.st_mode)), "another kind of file")
        raise RunInputError(f"{file}: the message must be a regular file, not {kind}")
    return st


_NOT_REGULAR = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a pipe"),
    (stat.S_ISSOCK, "a socket"),
)


def prepare_message(plan: Plan, file: str | None, seed: int, pieces: bool = False):
    """How the agents get the message (the file, or the seed of the generated data), the
    destination file name, and a background job computing (the digest each receiver must
    reach, the hash of every piece of the message or None): once per distinct set of wanted
    ranges, streaming (the message is never held); with ``pieces``, the piece hashes in one
    pass, and every digest made of whole pieces from them (``runtime.resume``)."""
    from .data import file_digest, generate_into, seeded_digest
    from .resume import digest_from_pieces, message_piece_hashes

    if file is not None:
        st = message_file_stat(file)
        if st.st_size != plan.size:
            raise RunInputError(f"{file}: the plan moves {plan.size} bytes but the file has {st.st_size}")
        data_spec: dict = {"file": os.path.abspath(file), "stat": [st.st_size, st.st_mtime_ns]}

        def digest(ranges):
            return file_digest(file, ranges)

        def hashes():
            with open(file, "rb") as fh:
                return message_piece_hashes(lambda off, view: os.preadv(fh.fileno(), [view], off), plan.size)

        dest_name = os.path.basename(file)
    else:
        data_spec = {"seed": seed}

        def digest(ranges):
            return seeded_digest(seed, ranges)

        def hashes():
            return message_piece_hashes(lambda off, view: generate_into(seed, off, view), plan.size)

        dest_name = "message.bin"

    def all_digests() -> tuple[dict[str, str], list[int] | None]:
        by_ranges: dict[tuple, str] = {}
        out: dict[str, str] = {}
        piece_hashes = hashes() if pieces else None
        for h, r in plan.wanted.items():
            key = tuple(sorted(r))
            if key not in by_ranges:
                whole = digest_from_pieces(piece_hashes, plan.size, key) if piece_hashes else None
                by_ranges[key] = whole if whole is not None else digest(key)
            out[h] = by_ranges[key]
        if file is not None:
            st2 = os.stat(file)
            if (st2.st_size, st2.st_mtime_ns) != tuple(data_spec["stat"]):
                raise RunError(f"{file} changed while its digest was computed")
        return out, piece_hashes

    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(1, thread_name_prefix="digest")
    job = pool.submit(all_digests)
    pool.shutdown(wait=False)
    return data_spec, dest_name, job


def check_room(plan: Plan, dest_dir: str | None) -> None:
    """For agents on this machine: a writable ``dest_dir``, or enough memory for every
    receiver's store (a clear error before any agent starts, not an out-of-memory kill)."""
    from ..memory import available_memory
    from .store import MEMORY_MARGIN

    if dest_dir is not None:
        try:
            os.makedirs(dest_dir, exist_ok=True)
        except OSError as exc:
            raise RunInputError(f"--dest-dir {dest_dir}: cannot create it ({exc.strerror})") from None
        if not os.access(dest_dir, os.W_OK | os.X_OK):
            raise RunInputError(f"--dest-dir {dest_dir}: not writable")
        return
    held: dict[str, IntervalSet] = {}
    for h, ranges in plan.wanted.items():
        held.setdefault(h, IntervalSet()).add_ranges(ranges)
    for t in plan.transfers:
        held.setdefault(t.dst, IntervalSet()).add_ranges(t.ranges)
    need = sum(iv.total for iv in held.values())
    avail = available_memory()
    if avail is not None and need > avail * MEMORY_MARGIN:
        raise RunError(
            f"the run needs {need} bytes of memory on this machine (the stores of {len(held)} receiving hosts) "
            f"but {avail} are available; give --dest-dir DIR to stream the message to disk"
        )
