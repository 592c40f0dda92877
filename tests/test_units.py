"""Unit parsing at the edges: bits vs bytes, decimal vs binary, errors name the field."""

import pytest

from topocast.errors import InputError
from topocast.units import format_bandwidth, parse_bandwidth, parse_size, parse_time


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1Gbps", 125e6),
        ("100Mbps", 12.5e6),
        ("10Kbps", 1250.0),
        ("125MB/s", 125e6),
        ("1GB/s", 1e9),
        ("1GiB/s", 2.0**30),
        ("41.279125MBps", 41.279125e6),
        ("1.25E8", 1.25e8),
        (1000, 1000.0),
        ("2.5 Gbps", 312.5e6),
    ],
)
def test_parse_bandwidth(text, expected):
    assert parse_bandwidth(text) == pytest.approx(expected, rel=1e-15)


@pytest.mark.parametrize(
    "text, expected",
    [("1GiB", 2**30), ("64MB", 64_000_000), ("512KiB", 512 * 1024), ("100B", 100), ("7", 7), (4096, 4096)],
)
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text, expected", [("50us", 50e-6), ("2ms", 2e-3), ("0.1s", 0.1), ("3", 3.0), ("1ns", 1e-9)])
def test_parse_time(text, expected):
    assert parse_time(text) == pytest.approx(expected, rel=1e-15)


@pytest.mark.parametrize("bad", ["1Gbpx", "fast", "10 furlongs", "", "1e999Gbps", True])
def test_bad_bandwidth_names_the_field(bad):
    with pytest.raises(InputError) as err:
        parse_bandwidth(bad, field="links[2].bandwidth")
    assert "links[2].bandwidth" in str(err.value)


def test_bad_units_for_size_and_time():
    with pytest.raises(InputError, match="unknown size unit"):
        parse_size("3 parsecs", field="size")
    with pytest.raises(InputError, match="unknown time unit"):
        parse_time("3 fortnights", field="latency")


def test_format_bandwidth_in_bits():
    assert format_bandwidth(125e6) == "1 Gbit/s"
