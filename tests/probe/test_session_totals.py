"""A round of transfers of which only totals are read ends when the totals settle
(``probe.session.TotalWatch``), while each transfer's share of a shared link wavers."""

from __future__ import annotations

from topocast.probe.session import TotalWatch

SETTINGS = {"min_window": 0.1, "tolerance": 0.03, "min_bytes": 50_000}


def _settle_time(watch: TotalWatch, shares: dict) -> float:
    """Receivers report every 10 ms the bytes of a link of 1 MB/s split by ``shares(t)``."""
    counted = dict.fromkeys(shares, 0.0)
    for k in range(1, 200):
        t = k * 0.01
        for mid, share in shares.items():
            counted[mid] += 0.01 * 1e6 * share(t)
            watch.report(mid, t, counted[mid], t)
        if watch.done:
            return t
    return float("inf")


def _wavering(t: float) -> float:
    return 0.3 if int(t / 0.05) % 2 else 0.7


def test_a_total_settles_while_the_shares_waver():
    shares = {1: _wavering, 2: lambda t: 1 - _wavering(t)}
    assert 0.1 <= _settle_time(TotalWatch([1, 2], SETTINGS), shares) < 0.2


def test_one_wavering_share_alone_does_not_settle_in_as_long():
    assert _settle_time(TotalWatch([1], SETTINGS), {1: _wavering}) > 0.3


def test_a_total_waits_for_every_transfer_and_for_min_bytes():
    shares = {1: lambda t: 0.5, 2: lambda t: 0.5}
    assert _settle_time(TotalWatch([1, 2, 3], SETTINGS), shares) == float("inf")  # 3 never reports
    assert 0.2 <= _settle_time(TotalWatch([1, 2], {**SETTINGS, "min_bytes": 200_000}), shares) < 0.25
