"""Resume: a re-run with the same --dest-dir keeps the verified pieces an interrupted run left
and moves only the rest (runtime.resume)."""

import hashlib
import os
import subprocess
import sys
import textwrap
import time

from topocast.intervals import IntervalSet
from topocast.runtime import make_launcher, perform
from topocast.runtime.data import BLOCK, file_digest
from topocast.runtime.resume import digest_from_pieces, interest, message_piece_hashes, trim_transfers

from .helpers import chain_plan

MiB = 1 << 20
HOSTS = "abcd"

# runs perform() on a slow (rate-capped) chain and kills its own process, the coordinator,
# once the receivers hold half of what they want in all
INTERRUPTED = textwrap.dedent(
    """
    import os, signal, sys
    sys.path.insert(0, {src!r})
    from topocast.runtime import make_launcher, perform
    sys.path.insert(0, {tests!r})
    from helpers import chain_plan

    size = {size}
    def progress(held, seconds):
        if sum(held.values()) >= 0.5 * size * len(held):
            os.kill(os.getpid(), signal.SIGKILL)
    perform(chain_plan(size, rate_cap={cap}), launcher=make_launcher("local"), file={file!r},
            dest_dir={dest!r}, on_progress=progress)
    """
)


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_piece_hashes_give_the_same_digest_and_trim_cuts_kept_bytes(tmp_path):
    size = 3 * BLOCK + 12345
    src = tmp_path / "m.bin"
    src.write_bytes(os.urandom(size))
    with open(src, "rb") as fh:
        hashes = message_piece_hashes(lambda off, view: os.preadv(fh.fileno(), [view], off), size)
    assert len(hashes) == 4
    assert digest_from_pieces(hashes, size, [(0, size)]) == file_digest(src, [(0, size)])
    assert digest_from_pieces(hashes, size, [(10, size - 10)]) is None  # not whole pieces
    assert interest([(BLOCK - 1, 2)], size) == [(0, BLOCK), (BLOCK, 2 * BLOCK)]
    kept = {"b": IntervalSet([(0, BLOCK), (2 * BLOCK, BLOCK)])}
    records = [{"index": 0, "dst": "b", "ranges": [(0, size)]}, {"index": 1, "dst": "c", "ranges": [(0, size)]}]
    assert trim_transfers(records, kept) == {0: [[BLOCK, BLOCK], [3 * BLOCK, size - 3 * BLOCK]]}


def test_interrupted_run_resumes_and_moves_only_the_rest(tmp_path):
    size = 24 * MiB
    src = tmp_path / "msg.bin"
    src.write_bytes(os.urandom(size))
    dest = tmp_path / "out"
    script = INTERRUPTED.format(
        src=os.path.abspath("src"),
        tests=os.path.dirname(__file__),
        size=size,
        cap=12 * MiB,
        file=str(src),
        dest=str(dest),
    )
    proc = subprocess.run([sys.executable, "-c", script], timeout=120)
    assert proc.returncode == -9  # killed itself mid-way
    time.sleep(1.0)  # the orphaned agents see their control connection close and exit
    parts = [dest / h / "msg.bin.part" for h in HOSTS]
    assert any(p.exists() for p in parts), "an interrupted run keeps its .part files"

    out = perform(chain_plan(size), launcher=make_launcher("local"), file=str(src), dest_dir=str(dest))
    assert out.failed == {}
    want = size * len(HOSTS)
    kept = sum(out.kept.values())
    moved = sum(out.received.values())
    assert kept >= 0.3 * want  # the receivers held about half when it was killed
    # only the rest moves: a piece in flight when the run was killed is moved again whole
    assert moved <= want - kept + len(HOSTS) * 2 * BLOCK
    for h in HOSTS:
        assert _sha(dest / h / "msg.bin") == _sha(src)
        assert not (dest / h / "msg.bin.part").exists()


def test_a_changed_source_keeps_nothing_that_differs(tmp_path):
    size = 4 * MiB
    src = tmp_path / "msg.bin"
    src.write_bytes(os.urandom(size))
    dest = tmp_path / "out"
    out = perform(chain_plan(size), launcher=make_launcher("local"), file=str(src), dest_dir=str(dest))
    assert out.failed == {} and out.kept == {}
    data = bytearray(src.read_bytes())
    data[BLOCK + 7] ^= 0xFF  # one byte of the second piece differs now
    src.write_bytes(bytes(data))
    out = perform(chain_plan(size), launcher=make_launcher("local"), file=str(src), dest_dir=str(dest))
    assert out.failed == {}
    assert out.kept == {h: size - BLOCK for h in HOSTS}
    assert all(out.received[h] == BLOCK for h in HOSTS)
    for h in HOSTS:
        assert (dest / h / "msg.bin").read_bytes() == bytes(data)
    out = perform(chain_plan(size), launcher=make_launcher("local"), file=str(src), dest_dir=str(dest), resume=False)
    assert out.kept == {} and all(out.received[h] == size for h in HOSTS)
