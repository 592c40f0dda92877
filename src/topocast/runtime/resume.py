"""Resume: a re-run with ``--dest-dir`` keeps the verified pieces an earlier run left.

An interrupted run leaves ``DIR/HOST/NAME.part`` (and ``NAME`` on the hosts that completed).
A re-run of the same message with the same ``--dest-dir`` does not start again from zero:

1. the coordinator hashes the message once, in pieces of ``data.BLOCK`` bytes (the same
   xxh3-64 pieces the whole-message digest is made of, so the digests come from these hashes
   and the message is still read once);
2. each receiving agent that finds an earlier file of the message's size opens it without
   truncating it, hashes each whole piece it is interested in and keeps (marks held) those
   whose hash equals the coordinator's; the rest is received as usual;
3. the agents report what they kept with ``ready``; before ``start`` the coordinator cuts the
   kept bytes out of every transfer to their host (``trim_transfers``), so only the rest
   moves. A relay that kept bytes forwards them from its file as if it had received them.

Every kept piece is checked against the message as it is now, so a changed source file keeps
nothing that differs, and every host still checks the whole-message digest before it
reports success.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from ..intervals import IntervalSet
from .data import BLOCK, combine_piece_hashes, digest_pieces, piece_hash
from .protocol import Msg

if TYPE_CHECKING:
    from ..plan import Plan

__all__ = ["send_trims", "message_piece_hashes", "digest_from_pieces", "verify_pieces", "trim_transfers", "interest"]


def message_piece_hashes(read: Callable[[int, memoryview], None], size: int) -> list[int]:
    """The hash of every ``BLOCK``-sized piece of the message (the last may be shorter);
    ``read(offset, view)`` fills ``view`` with the message bytes at ``offset``."""
    buf = memoryview(bytearray(min(BLOCK, size)))
    out = []
    for a in range(0, size, BLOCK):
        n = min(BLOCK, size - a)
        read(a, buf[:n])
        out.append(piece_hash(buf[:n]))
    return out


def digest_from_pieces(hashes: Sequence[int], size: int, ranges: Iterable[tuple[int, int]]) -> str | None:
    """The whole-message digest of ``ranges`` from the message's piece hashes, when its
    digest pieces are whole message pieces (a broadcast's); None otherwise."""
    out = []
    for a, b in digest_pieces(ranges):
        if a % BLOCK or b != min(a + BLOCK, size):
            return None
        out.append(hashes[a // BLOCK])
    return combine_piece_hashes(out)


def interest(ranges: Iterable[tuple[int, int]], size: int) -> list[tuple[int, int]]:
    """The whole message pieces (start, end) that overlap ``ranges`` (offset, length)."""
    pieces: set[int] = set()
    for off, length in ranges:
        if length > 0:
            pieces.update(range(off // BLOCK, (off + length - 1) // BLOCK + 1))
    return [(j * BLOCK, min((j + 1) * BLOCK, size)) for j in sorted(pieces)]


def verify_pieces(fd: int, pieces: Iterable[tuple[int, int]], expected: Sequence[int]) -> list[tuple[int, int]]:
    """The pieces of the file ``fd`` whose bytes hash to the message's (``expected``, one
    hash per ``BLOCK`` piece), read through a bounded buffer."""
    buf = memoryview(bytearray(BLOCK))
    kept = []
    for a, b in pieces:
        got = os.preadv(fd, [buf[: b - a]], a)
        if got == b - a and piece_hash(buf[: b - a]) == expected[a // BLOCK]:
            kept.append((a, b))
    return kept


def trim_transfers(transfers: Sequence[dict], kept: dict[str, IntervalSet]) -> dict[int, list[list[int]]]:
    """The new ranges of every transfer whose destination kept some of its bytes:
    ``{index: [[offset, length], ...]}`` (possibly empty: nothing left to move).
    ``transfers`` are ``{"index", "dst", "ranges"}`` records."""
    out: dict[int, list[list[int]]] = {}
    for t in transfers:
        have = kept.get(t["dst"])
        if not have or not have.total:
            continue
        rest = [[s, e - s] for off, length in t["ranges"] for s, e in have.missing(off, off + length)]
        if rest != [list(r) for r in t["ranges"]]:
            out[int(t["index"])] = rest
    return out


def send_trims(plan: Plan, conns, kept: dict[str, IntervalSet]) -> None:
    """Before the start: tell every sender the new ranges of its transfers whose receivers
    kept bytes (``trim``)."""
    if not kept:
        return
    records = [{"index": i, "dst": t.dst, "ranges": t.ranges} for i, t in enumerate(plan.transfers)]
    trimmed = trim_transfers(records, kept)
    by_src: dict[str, dict] = {}
    for i, ranges in trimmed.items():
        by_src.setdefault(plan.transfers[i].src, {})[str(i)] = ranges
    for h, changes in by_src.items():
        conns[h].send_json({"type": Msg.TRIM, "ranges": changes})
