"""Unit parsing at the edges: bits vs bytes, decimal vs binary, errors name the field."""

import math

import pytest

from topocast.errors import InputError
from topocast.units import (
    format_bandwidth,
    format_mbit,
    format_size,
    parse_bandwidth,
    parse_simgrid_bandwidth,
    parse_simgrid_time,
    parse_size,
    parse_time,
    prefix_factor,
)


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


@pytest.mark.parametrize(
    "text, expected",
    [
        ("125000000", 125e6),  # bare: bytes/s, as SimGrid reads it
        ("1Bps", 1.0),
        ("125MBps", 125e6),
        ("8.158MBps", 8158000.0),  # exact in decimal, not 8.158 * 1e6 in floats
        ("1kBps", 1e3),
        ("1KBps", 1e3),
        ("1KiBps", 1024.0),
        ("2MiBps", 2.0 * 2**20),
        ("1EBps", 1e18),
        ("1Gbps", 125e6),
        ("100Mbps", 12.5e6),
        ("8bps", 1.0),
        (" 2.25GBps ", 2.25e9),
    ],
)
def test_parse_simgrid_bandwidth(text, expected):
    assert parse_simgrid_bandwidth(text) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("", 0.0),
        ("3", 3.0),
        ("24us", 24e-6),
        ("17.8us", 17.8e-6),
        ("10ms", 10e-3),
        ("5ns", 5e-9),
        ("7ps", 7e-12),
        ("2m", 120.0),  # SimGrid: minutes
        ("1h", 3600.0),
        ("1d", 86400.0),
        ("1w", 604800.0),
    ],
)
def test_parse_simgrid_time(text, expected):
    assert parse_simgrid_time(text) == expected


@pytest.mark.parametrize("bad", ["1GB/s", "1kiBps", "1Mbit", "fast", "1MB"])
def test_simgrid_bandwidth_refuses_other_spellings(bad):
    with pytest.raises(InputError, match="link1: ") as err:
        parse_simgrid_bandwidth(bad, field="link1")
    assert "Bps" in str(err.value) or "expected" in str(err.value)


@pytest.mark.parametrize("bad", ["1min", "1sec", "2 fortnights", "1S"])
def test_simgrid_time_refuses_other_spellings(bad):
    with pytest.raises(InputError, match="cannot read latency"):
        parse_simgrid_time(bad, field="latency")


def test_one_prefix_table_for_every_reader():
    assert prefix_factor("k") == prefix_factor("K") == 1e3
    assert prefix_factor("Mi") == 2.0**20 and prefix_factor("E") == 1e18
    assert prefix_factor("ki") is None and prefix_factor("m") is None  # m is never mega here
    assert parse_bandwidth("1EBps") == parse_simgrid_bandwidth("1EBps") == 1e18


def test_printed_rates_read_in_mbit_per_second():
    assert format_mbit(125e6) == "1000.0" and format_mbit(None) == "-" and format_mbit(math.inf) == "-"
    assert format_size(64 * 2**20) == "64 MiB" and format_size(10**9) == "1 GB"
    assert format_size(10**9, binary=True) == "953.7 MiB"
