"""Message generation (a block holder generates only its block) and the CPU verdict (niced background work excluded)."""

import random

import pytest

from topocast.runtime.data import generate, generate_range


@pytest.mark.parametrize("size", [1, 7, 8, 9, 1000, 100_003])
def test_generate_range_matches_whole_message(size):
    full = bytes(generate(5, size))
    rnd = random.Random(size)
    cases = [(0, size), (0, 0), (size, 0), (size - 1, 1)]
    cases += [(o, rnd.randrange(0, size - o + 1)) for o in (rnd.randrange(0, size) for _ in range(50))]
    for off, length in cases:
        assert generate_range(5, off, length) == full[off : off + length], (off, length)


def test_generate_range_other_seed_differs():
    assert generate_range(1, 100, 64) != generate_range(2, 100, 64)


def test_generate_range_rejects_negative():
    with pytest.raises(ValueError):
        generate_range(1, -1, 4)


# --------------------------------------------------------------- CPU verdict
from topocast.runtime.cpuload import StealWatch, busy_share, cpu_verdict, niced_share, parse_stat, steal_share  # noqa: E402


def test_niced_background_work_is_not_a_cpu_bound_verdict():
    # two cores fully busy for 1 s: 190 jiffies nice (background `nice -n 19` jobs), 10 system
    a = parse_stat("cpu  1000 5000 300 9000 10 0 5 0 0 0")
    b = parse_stat("cpu  1000 5190 310 9000 10 0 5 0 0 0")
    assert busy_share(a, b) == pytest.approx(0.05) and niced_share(a, b) == pytest.approx(0.95)
    assert cpu_verdict({"a0": 0.05}, 1.0, busy_share(a, b), niced_share(a, b)) == ""
    # the same time at nice 0: the verdict says the CPU may have set the pace
    c = parse_stat("cpu  1190 5000 310 9000 10 0 5 0 0 0")
    assert busy_share(a, c) == pytest.approx(1.0) and niced_share(a, c) == 0
    assert "busy" in cpu_verdict({"a0": 0.05}, 1.0, busy_share(a, c), niced_share(a, c))


def test_guest_time_not_counted_twice():
    a = parse_stat("cpu  100 0 0 100 0 0 0 0 0 0")
    b = parse_stat("cpu  200 0 0 100 0 0 0 0 100 0")  # 100 jiffies of guest, already in user
    assert busy_share(a, b) == pytest.approx(1.0)


def test_hypervisor_steal_is_measured_and_counted_as_busy():
    a = parse_stat("cpu  100 0 0 100 0 0 0 0 0 0")
    b = parse_stat("cpu  150 0 0 120 0 0 0 30 0 0")  # 30 of 100 jiffies stolen
    assert steal_share(a, b) == pytest.approx(0.3) and busy_share(a, b) == pytest.approx(0.8)
    assert steal_share(a, parse_stat("cpu  150 0 0 150")) == 0  # old kernels: no steal column


def test_steal_watch_finds_the_worst_second():
    # /proc/stat as read at t = 0, 0.25, ... 3 s: 100 jiffies per read, steal 50 of them
    # from t = 1.5 to 2.5 s only
    reads = []
    steal = 0
    for k in range(13):
        t = 0.25 * k
        if 1.5 < t <= 2.5:
            steal += 50
        reads.append(f"cpu  {100 * k - steal} 0 0 0 0 0 0 {steal} 0 0")
    it = iter(reads)
    watch = StealWatch(t0=0.0, read=lambda: parse_stat(next(it)))
    for k in range(13):
        watch.tick(0.25 * k)
        watch.tick(0.25 * k + 0.1)  # too soon: no read
    frac, at = watch.peak
    assert frac == pytest.approx(0.5) and at == pytest.approx(2.5)


def test_an_agent_using_a_core_is_reported():
    assert "agent a0 used 95% of a core" in cpu_verdict({"a0": 0.95, "b0": 0.1}, 1.0, 0.5, 0.0)
