"""``topocast redistribute plan|predict|decide``."""

import json

import pytest

from topocast.cli.main import main


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_predict_fig2_json(capsys):
    code, out, _ = run(
        capsys, "redistribute", "predict", "--pattern", "fig2", "--nic", "10MB/s", "--no-simulate", "--json"
    )
    assert code == 0
    d = json.loads(out)
    by = {p["approach"]: p for p in d["predictions"]}
    assert by["brute_force"]["model"] == pytest.approx(2.5)
    assert by["ggp"]["model"] == pytest.approx(2.0) and by["oggp"]["model"] == pytest.approx(2.0)
    assert d["platform"]["bounds"]["eta"] == pytest.approx(2.0)


def test_decide_fig2(capsys):
    code, out, _ = run(capsys, "redistribute", "decide", "--pattern", "fig2", "--nic", "10MB/s", "--json")
    d = json.loads(out)
    assert code == 0 and d["schedule"] is True and d["gain"] == pytest.approx(0.2)
    code, out, _ = run(capsys, "redistribute", "decide", "--pattern", "fig2", "--nic", "10MB/s", "--beta", "1s")
    assert code == 0 and "do not schedule" in out  # two set-ups of 1 s eat the 0.5 s gain


def test_plan_table_output_and_plot(capsys, tmp_path):
    plan_file = tmp_path / "p.json"
    png = tmp_path / "g.png"
    code, out, _ = run(
        capsys,
        "redistribute",
        "plan",
        "--pattern",
        "random",
        "--messages",
        "12",
        "--beta",
        "50ms",
        "-a",
        "oggp",
        "-o",
        str(plan_file),
        "--plot",
        str(png),
    )
    assert code == 0 and "steps" in out
    data = json.loads(plan_file.read_text())
    assert data["collective"] == "redistribute" and data["planner"] == "oggp"
    assert png.stat().st_size > 1000


def test_matrix_file_and_errors(capsys, tmp_path):
    m = tmp_path / "m.csv"
    m.write_text("10MB,0\n0,20MB\n")
    code, out, _ = run(capsys, "redistribute", "plan", "--matrix", str(m), "--k", "1", "--json")
    assert code == 0
    assert json.loads(out)["plan"]["notes"]["steps"] == 2
    code, _, err = run(capsys, "redistribute", "plan", "--matrix", str(tmp_path / "none.csv"))
    assert code == 2 and "cannot read" in err and "Traceback" not in err
    code, _, err = run(capsys, "redistribute", "predict", "--matrix", str(m), "--pattern", "fig2")
    assert code == 2 and "either --matrix or --pattern" in err


def test_saved_plan_and_topology_simulate(capsys, tmp_path):
    plan_file, topo_file = tmp_path / "p.json", tmp_path / "t.yaml"
    code, _, _ = run(
        capsys,
        "redistribute",
        "plan",
        "--pattern",
        "fig2",
        "--nic",
        "10MB/s",
        "-o",
        str(plan_file),
        "--save-topology",
        str(topo_file),
    )
    assert code == 0
    from topocast.plan import Plan
    from topocast.sim import simulate
    from topocast.topology import load_topology

    res = simulate(Plan.load(plan_file), load_topology(str(topo_file)))
    assert res.makespan == pytest.approx(2.0)
