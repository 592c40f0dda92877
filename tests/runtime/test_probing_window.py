"""The probe's rate window on the receiving side (``runtime/probing.py``): bytes are dated
when they reach the host, not when a late receiver thread reads them; and the sending side
leaves few bytes queued when a transfer stops."""

from __future__ import annotations

import pytest

from topocast.runtime.probing import RateWatch, window_rate

RATE = 1000.0  # bytes/s reaching the receiver, steadily
FRAME = 10


def _receiver(stall: tuple[float, float] | None, with_queue: bool) -> RateWatch:
    """A receiver reading a frame as soon as it arrives (every 10 ms), except during
    ``stall``: then the frames queue in the socket and are read in a burst when it ends."""
    watch = RateWatch(None, 0.1, 0.05)
    arrivals = [k * FRAME / RATE for k in range(1, 41)]
    waiting: list[float] = []
    for t in arrivals:
        if stall and stall[0] <= t < stall[1]:
            waiting.append(t)
            continue
        if waiting:  # the burst at the end of the stall, then the frame of now
            for k in range(len(waiting)):
                queued = (len(waiting) - k) * FRAME  # the rest of the burst and the frame of now
                watch.add(stall[1] + k * 1e-6, FRAME, queued if with_queue else 0)
            waiting = []
        watch.add(t, FRAME)
    return watch


@pytest.mark.parametrize("stall", [None, (0.04, 0.10)])
def test_a_stall_across_the_window_start_does_not_inflate_the_rate(stall):
    watch = _receiver(stall, with_queue=True)
    marks = list(zip(watch.times, watch.counts))
    assert window_rate(marks, (0.05, 0.35)) == pytest.approx(RATE, rel=1e-9)
    assert watch.total == 40 * FRAME  # what was read and checked


def test_without_the_queue_the_stall_would_inflate_it():
    """What the queue corrects: the bytes that queued during the stall, dated when read,
    fall inside the window."""
    watch = _receiver((0.04, 0.10), with_queue=False)
    marks = list(zip(watch.times, watch.counts))
    assert window_rate(marks, (0.05, 0.35)) > 1.02 * RATE


def test_a_slow_transfer_settles_only_once_its_window_holds_min_bytes():
    """A steady 1000 B/s stream settles after min_window when min_bytes is small, and only
    once the window holds min_bytes otherwise (short windows of a slow link are noisy)."""

    def settle_time(min_bytes: int) -> float:
        watch = RateWatch(0.0, 0.1, 0.05, min_bytes)
        for k in range(1, 2001):
            t = k * FRAME / RATE
            watch.add(t, FRAME)
            if watch.settled(t):
                return t
        return float("inf")

    assert settle_time(0) < 0.5
    assert 2.0 <= settle_time(2000) < 2.5


def _settle_time(watch: RateWatch, rate_at) -> float:
    """When ``watch`` settles on a stream of 10-byte frames whose rate at t is ``rate_at(t)``."""
    t = 0.0
    for _ in range(20000):
        t += FRAME / rate_at(t)
        watch.add(t, FRAME)
        if watch.settled(t):
            return t
    return float("inf")


def test_a_transfer_clearly_below_its_bound_settles_without_min_bytes():
    """A transfer whose running rate stays under ``below`` settles once its window is
    min_window long, though the window holds far fewer than min_bytes and its rate wavers by
    20 % (a share of a contended link); above the bound, the usual rule holds."""
    wavering = lambda t: RATE * (1.2 if int(t / 0.03) % 2 else 0.8)  # noqa: E731
    assert 0.1 <= _settle_time(RateWatch(0.0, 0.1, 0.05, 10**9, below=2 * RATE), wavering) < 0.2
    assert _settle_time(RateWatch(0.0, 0.1, 0.05, 10**9, below=RATE / 2), wavering) == float("inf")
    assert _settle_time(RateWatch(0.0, 0.1, 0.05, 10**9), wavering) == float("inf")


def test_a_slow_transfer_with_seldom_frames_settles_below_its_bound():
    """Frames 60 ms apart (a slow share of a link, large frames): fewer than three estimates
    within any half window, yet the last three, all under the bound, settle it."""
    watch = RateWatch(0.0, 0.1, 0.05, 10**9, below=2 * RATE)
    t, settled = 0.0, float("inf")
    while t < 1.0 and settled == float("inf"):
        t += 0.06
        watch.add(t, int(0.06 * RATE))
        settled = t if watch.settled(t) else settled
    assert settled < 0.35


def test_a_bulk_sender_keeps_few_bytes_unsent():
    """A transfer's sender limits what it has written but not yet sent (TCP_NOTSENT_LOWAT):
    what it leaves queued when it stops must cross the link before the round can end."""
    import socket

    from topocast.runtime.probing import MIN_UNSENT, UNSENT_BYTES, _limit_unsent
    from topocast.runtime.protocol import Conn

    with socket.create_server(("127.0.0.1", 0)) as server:
        client = socket.create_connection(server.getsockname())
        try:
            for limit in (UNSENT_BYTES, MIN_UNSENT):
                _limit_unsent(Conn(client), limit)
                assert client.getsockopt(socket.IPPROTO_TCP, socket.TCP_NOTSENT_LOWAT) == limit
        finally:
            client.close()
