"""``topocast sweep``: table, JSON and plot; errors as one line."""

import json

from topocast.cli.main import main


def test_sweep_json_and_plot(tmp_path, capsys):
    out = tmp_path / "sweep.png"
    rc = main(
        [
            "sweep",
            "builtin:grid-long-fast",
            "--algorithms",
            "far_first,gridmpi",
            "--min",
            "1KiB",
            "--max",
            "1MiB",
            "--step",
            "32",
            "--plot",
            str(out),
            "--json",
        ]
    )
    assert rc == 0
    data = json.loads(capsys.readouterr().out)
    assert data["sizes"] == [1024, 32768, 1048576]
    rows = {r["algorithm"]: r for r in data["results"]}
    assert len(rows["gridmpi"]["times"]) == 3
    assert rows["gridmpi"]["times"][-1] < rows["far_first"]["times"][-1]
    assert out.stat().st_size > 1000


def test_sweep_allreduce_table_and_options(capsys):
    rc = main(
        [
            "sweep",
            "builtin:grid-long-fast",
            "--collective",
            "allreduce",
            "--algorithms",
            "gridmpi,ring",
            "--max",
            "100KB",
            "--step",
            "100",
            "--option",
            "connections=1",
            "--throughput",
        ]
    )
    assert rc == 0
    text = capsys.readouterr().out
    assert "gridmpi" in text and "ring" in text


def test_sweep_skips_planners_that_fail(capsys):
    rc = main(
        [
            "sweep",
            "builtin:uniform-2switch",
            "--algorithms",
            "gridmpi,binomial",
            "--max",
            "1KB",
            "--json",
            "--option",
            "clusters=nosuchhost",
        ]
    )
    assert rc == 0
    rows = {r["algorithm"]: r for r in json.loads(capsys.readouterr().out)["results"]}
    assert rows["gridmpi"]["times"] is None and "no cluster" in rows["gridmpi"]["error"]


def test_sweep_bad_input_is_one_line(capsys):
    assert main(["sweep", "builtin:grid-long-fast", "--algorithms", "binomial", "--min", "1MB", "--max", "1KB"]) == 2
    assert "--min" in capsys.readouterr().err
