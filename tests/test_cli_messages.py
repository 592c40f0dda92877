"""Edges of the command line that used to end in a traceback, a raw figure or a leftover:
each is now one clear line, in the units the other commands print, with nothing left behind."""

from __future__ import annotations

import glob
import json
import os
import tempfile

import pytest

from topocast.cli.main import main
from topocast.testbed.state import TestbedState


def _cli(capsys, *argv) -> tuple[int, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_a_directory_as_the_message_is_bad_input(tmp_path, capsys):
    folder = tmp_path / "folder"
    folder.mkdir()
    code, text = _cli(capsys, "run", "builtin:hetero-2switch", "-a", "flat", "-s", "s", "--file", str(folder))
    assert code == 2 and "Traceback" not in text
    assert f"{folder}: the message must be a regular file" in text
    plan = tmp_path / "plan.json"
    assert main(["plan", "builtin:hetero-2switch", "-a", "flat", "-s", "s", "--size", "4KiB", "-o", str(plan)]) == 0
    capsys.readouterr()
    code, text = _cli(capsys, "run", str(plan), "--file", str(folder))
    assert code == 2 and "Traceback" not in text
    assert f"{folder}: the message must be a regular file" in text


def test_a_device_or_a_pipe_as_the_message_says_what_it_is(tmp_path, capsys):
    pipe = tmp_path / "fifo"
    os.mkfifo(pipe)
    for path, kind in (("/dev/null", "a character device"), (str(pipe), "a pipe")):
        code, text = _cli(capsys, "run", "builtin:hetero-2switch", "-a", "flat", "--file", path)
        assert code == 2 and "Traceback" not in text
        assert f"{path}: the message must be a regular file, not {kind}" in text, text


def test_a_chunk_of_zero_bytes_is_refused_not_replaced_by_the_default(capsys):
    code, text = _cli(capsys, "run", "builtin:hetero-2switch", "-a", "flat", "--size", "4KiB", "--chunk-size", "0")
    assert code == 2 and "--chunk-size: must be at least one byte" in text, text


@pytest.mark.parametrize("field", ["collective", "size_bytes", "initial", "wanted", "transfers"])
def test_a_plan_without_a_field_names_it_and_the_file(tmp_path, capsys, field):
    plan = tmp_path / "plan.json"
    assert main(["plan", "builtin:hetero-2switch", "-a", "flat", "-s", "s", "--size", "4KiB", "-o", str(plan)]) == 0
    data = json.loads(plan.read_text())
    del data[field]
    plan.write_text(json.dumps(data))
    capsys.readouterr()
    code, text = _cli(capsys, "run", str(plan))
    assert code == 2
    assert f"{plan}: {field}: missing field {field}" in text, text
    assert "KeyError" not in text


def _fake_testbed(name: str, rate: str = "10000000000bit") -> None:
    TestbedState(
        name=name,
        prefix="198.18.0",
        topology_spec="builtin:hetero-2switch",
        host_ns={"s": f"{name}-absent-s"},
        host_addr={"s": "198.18.0.1"},
        links=[{"a": "s", "b": "swA", "ab": {"rate": rate}, "ba": {"rate": "8000000bit"}}],
        complete=True,
    ).save()


@pytest.fixture
def state_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TOPOCAST_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


def test_testbed_status_prints_rates_in_bit_per_second_units(state_dir, capsys):
    _fake_testbed("one")
    code, text = _cli(capsys, "testbed", "status", "--testbed", "one")
    assert code == 0
    assert "10 Gbit/s / 8 Mbit/s" in text and "10000000000bit" not in text, text


@pytest.mark.skipif(os.geteuid() != 0, reason="testbed down needs root")
def test_testbed_down_takes_the_option_its_advice_names(state_dir, capsys):
    _fake_testbed("one")
    _fake_testbed("two")
    code, text = _cli(capsys, "testbed", "down")
    assert code == 2 and "choose one with --testbed" in text
    assert main(["testbed", "down", "--testbed", "one"]) == 0
    assert sorted(p.name for p in state_dir.iterdir()) == ["two.json"]
    code, text = _cli(capsys, "testbed", "down", "two", "--testbed", "one")
    assert code == 2 and "two testbed names" in text
    assert main(["testbed", "down", "two"]) == 0  # the name as an argument still works
    assert list(state_dir.iterdir()) == []


def _control_dirs() -> set[str]:
    return set(glob.glob(os.path.join(tempfile.gettempdir(), "topocast-ctl-*")))


@pytest.mark.skipif(os.geteuid() != 0, reason="the testbed launcher needs root")
def test_a_testbed_run_refused_before_the_start_leaves_no_control_directory(state_dir, tmp_path, capsys):
    _fake_testbed("one")
    plan = tmp_path / "plan.json"
    assert main(["plan", "builtin:two-clusters", "-a", "flat", "--size", "4KiB", "-o", str(plan)]) == 0
    before = _control_dirs()
    code, text = _cli(capsys, "run", str(plan), "--launcher", "testbed")
    assert code == 2, text
    assert _control_dirs() - before == set()


@pytest.mark.parametrize("extra", [[], ["--min", "1KB", "--max", "20MB", "--throughput"]])
def test_sweep_headers_read_one_way(capsys, monkeypatch, extra):
    """Binary sizes (KiB, MiB, GiB) in every header, rates in Mbit/s: never a mix of kB, KiB
    and MB in one table."""
    import re

    monkeypatch.setenv("COLUMNS", "80")
    code, text = _cli(capsys, "sweep", "builtin:two-clusters", "-a", "flat", *extra)
    assert code == 0
    headers = [line for line in text.splitlines() if line.startswith("┃ planner")]
    units = {u for line in headers for u in re.findall(r"\d ([A-Za-z]+) ", line)}
    assert units and units <= {"B", "KiB", "MiB", "GiB"}, units
    if "--throughput" in extra:
        assert "Mbit/s" in text and "MB/s" not in text


def test_run_takes_source_and_destinations_as_plan_does(capsys):
    """Without -s the source is the first host; --destinations limits who receives."""
    code, text = _cli(capsys, "run", "builtin:hetero-2switch", "-a", "flat", "--size", "64KiB", "--json")
    assert code == 0, text
    data = json.loads(text[text.index("{") :])
    assert data["source"] == "s" and set(data["measured"]["per_host"]) == {"a1", "a2", "a3", "b1", "b2", "b3", "b4"}
    argv = ["run", "builtin:hetero-2switch", "-a", "flat", "--size", "64KiB", "--destinations", "a1,b4", "--json"]
    code, text = _cli(capsys, *argv)
    assert code == 0, text
    assert set(json.loads(text[text.index("{") :])["measured"]["per_host"]) == {"a1", "b4"}


def test_run_of_a_plan_file_refuses_the_options_of_a_topology(tmp_path, capsys):
    plan = tmp_path / "plan.json"
    assert main(["plan", "builtin:hetero-2switch", "-a", "flat", "--size", "4KiB", "-o", str(plan)]) == 0
    capsys.readouterr()
    code, text = _cli(capsys, "run", str(plan), "--destinations", "a1")
    assert code == 2 and "--destinations goes with a topology" in text


@pytest.mark.parametrize(
    "argv, expected",
    [
        (
            ["simulate", "builtin:hetero-2switch", "-a", "stable", "--chunk-size=-1"],
            "--chunk-size: size: cannot be negative",
        ),
        (["compare", "builtin:hetero-2switch", "--time-limit=-1s"], "--time-limit: time: cannot be negative"),
        (["run", "builtin:hetero-2switch", "-a", "flat", "--timeout", "nan"], "--timeout: time: cannot read 'nan'"),
        (["run", "builtin:hetero-2switch", "-a", "flat", "--probe", "--rtt-threshold", "nan"], "--rtt-threshold"),
        (
            ["simulate", "builtin:hetero-2switch", "-a", "stable", "--default-bandwidth", "1Gbps"],
            "--default-bandwidth applies to GraphML (Topology Zoo) files only",
        ),
    ],
)
def test_an_option_that_would_be_ignored_or_mean_nothing_is_refused(capsys, argv, expected):
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own refusal
        code = exc.code
    text = "".join(capsys.readouterr())
    assert code == 2 and expected in text, text


def test_a_broadcast_to_no_one_is_refused_not_reported_as_nan(tmp_path, capsys):
    code, text = _cli(capsys, "compare", "builtin:hetero-2switch", "--destinations", "s", "--size", "1MB")
    assert code == 2 and "no destination besides the source 's'" in text and "nan" not in text, text
    lone = tmp_path / "one.yaml"
    lone.write_text("hosts: [a]\nswitches: [s]\nlinks:\n- {a: a, b: s, bandwidth: 1Gbps}\n")
    code, text = _cli(capsys, "simulate", str(lone), "-a", "stable", "--size", "1MB", "--json")
    assert code == 2 and "no destination besides the source 'a'" in text and "Traceback" not in text, text
    plan = tmp_path / "plan.json"
    assert main(["plan", "builtin:hetero-2switch", "-a", "stable", "--size", "1MB", "-o", str(plan)]) == 0
    data = json.loads(plan.read_text())
    data["wanted"] = {}
    plan.write_text(json.dumps(data))
    capsys.readouterr()
    code, text = _cli(capsys, "simulate", "builtin:hetero-2switch", "--plan", str(plan), "--json")
    assert code == 2 and "no host wants any byte" in text and "Traceback" not in text, text


@pytest.mark.parametrize(
    "field, value, expected",
    [
        ("ranges", [[0, 10**20]], "transfers[0]: ranges: expected [offset, length] pairs"),
        ("ranges", "abc", "transfers[0]: ranges: expected a list of [offset, length] pairs"),
        ("upstream", 10**20, "transfers[0]: upstream: expected the index of a transfer"),
        ("after", [1e300], "transfers[0]: after: expected the index of a transfer"),
    ],
)
def test_a_plan_file_with_numbers_out_of_range_names_the_field(tmp_path, capsys, field, value, expected):
    plan = tmp_path / "plan.json"
    assert main(["plan", "builtin:hetero-2switch", "-a", "flat", "--size", "1MB", "-o", str(plan)]) == 0
    data = json.loads(plan.read_text())
    data["transfers"][0][field] = value
    plan.write_text(json.dumps(data))
    capsys.readouterr()
    code, text = _cli(capsys, "simulate", "builtin:hetero-2switch", "--plan", str(plan))
    assert code == 2 and expected in text and "Traceback" not in text, text


def test_an_allreduce_over_one_host_is_refused_not_reported_as_inf(tmp_path, capsys):
    lone = tmp_path / "one.yaml"
    lone.write_text("hosts: [a]\nswitches: []\nlinks: []\n")
    code, text = _cli(capsys, "plan", str(lone), "--collective", "allreduce", "-a", "ring", "--size", "1MB")
    assert code == 2 and "topology 'one': an allreduce needs two hosts or more" in text, text
    code, text = _cli(
        capsys, "plan", "builtin:hetero-2switch", "--collective", "allreduce", "-a", "ring", "--destinations", "a1,a1"
    )
    assert code == 2 and "--destinations: an allreduce needs two hosts or more" in text, text
    plan = tmp_path / "plan.json"
    assert main(["plan", "builtin:hetero-2switch", "--collective", "allreduce", "-a", "ring", "-o", str(plan)]) == 0
    data = json.loads(plan.read_text())
    data.update(transfers=[], initial={"a1": data["initial"]["a1"]}, wanted={"a1": data["wanted"]["a1"]})
    plan.write_text(json.dumps(data))
    capsys.readouterr()
    code, text = _cli(capsys, "simulate", "builtin:hetero-2switch", "--plan", str(plan), "--json")
    assert code == 2 and "wanted: an allreduce needs two hosts or more" in text and "inf" not in text, text
